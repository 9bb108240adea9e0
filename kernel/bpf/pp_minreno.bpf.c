// SPDX-License-Identifier: GPL-2.0
/*
 * pp_minreno: the yardstick of `pathpool kernel bench`, a minimal BPF Reno. Its cong_avoid is
 * Linux 6.18 tcp_reno_cong_avoid reduced to its arithmetic (slow start, then
 * tcp_cong_avoid_ai's snd_cwnd_cnt credit by acked segments; kernel/include/pp_minreno.h,
 * shared with the bench's probes), with none of pathpool's
 * machinery: no map lookup, no private state, no fixed point. The per-call cost of a pp_*
 * callback is reported as a ratio to this one, measured in the same run.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "pp_minreno.h"

char _license[] SEC("license") = "GPL";

SEC("struct_ops/mr_cong_avoid")
void BPF_PROG(mr_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	pp_minreno_cong_avoid((struct tcp_sock *)sk, acked);
}

PP_MINRENO_SSTHRESH_UNDO()

SEC(".struct_ops")
struct tcp_congestion_ops pp_minreno = {
	.cong_avoid = (void *)mr_cong_avoid,
	.ssthresh = (void *)mr_ssthresh,
	.undo_cwnd = (void *)mr_undo_cwnd,
	.name = "pp_minreno",
};

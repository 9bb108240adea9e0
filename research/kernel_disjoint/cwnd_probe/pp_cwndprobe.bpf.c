// SPDX-License-Identifier: GPL-2.0
/*
 * Measurement probe (not shipped; built by research/kernel_disjoint/kernel_disjoint_probe.py --cwnd).
 *
 * Per sending socket: how many of the ACKs that advance snd_una in state Open find the socket
 * NOT cwnd-limited in the sense of tcp_is_cwnd_limited() (include/net/tcp.h, Linux 6.18), i.e.
 * ACKs on which the kernel's Reno (tcp_reno_cong_avoid, net/ipv4/tcp_cong.c) grows nothing,
 * and the acknowledged bytes those ACKs carried (the growth lost). Split by whether the
 * socket's write queue held unsent data (empty: nobody gave the socket data; for an MPTCP
 * subflow, the msk-level scheduler).
 *
 * This kernel refuses fentry programs (EPERM even for an empty one), so the hook is the
 * tcp_probe tracepoint, which tcp_rcv_established() fires for every incoming segment before
 * tcp_ack(). What tcp_is_cwnd_limited() reads (is_cwnd_limited, max_packets_out, cwnd,
 * ssthresh) changes only in tcp_write_xmit()/tcp_cwnd_validate() and in loss handling, neither
 * of which runs between that tracepoint and cong_avoid in the same tcp_ack() of an ACK in
 * state Open, so the test here is the one cong_avoid makes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>

char _license[] SEC("license") = "GPL";


struct sock_stats {
	__u64 sk;
	__u16 sport, dport;
	__u32 mptcp;
	__u32 saddr, pad;
	__u64 calls, ss_calls, not_limited, not_limited_ss, not_limited_qempty, not_limited_qfull;
	__u64 acked, acked_not_limited, cwnd_sum, inflight_sum, qempty_calls;
	__u64 mss, srtt_sum, recoveries, losses, last_state;
	__u64 state_acks[5], state_acked[5];
	__u64 total_retrans, reordering, dsack_dups, reord_seen;
	__u64 last_ack_ns, close_acks, stretch_acks;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct sock_stats);
} stats SEC(".maps");

/* Only sockets of the test bed's server port range are counted (set by the loader). */
const volatile __u16 port_lo = 0, port_hi = 65535;

static struct sock_stats *get(struct tcp_sock *tp)
{
	struct sock *sk = &tp->inet_conn.icsk_inet.sk;
	__u64 key = (__u64)sk;
	__u16 dport = bpf_ntohs(sk->__sk_common.skc_dport);
	struct sock_stats *s;

	if (dport < port_lo || dport > port_hi)
		return 0;
	s = bpf_map_lookup_elem(&stats, &key);
	if (s)
		return s;
	struct sock_stats init = {};
	init.sk = key;
	init.sport = sk->__sk_common.skc_num;
	init.dport = dport;
	init.mptcp = tp->is_mptcp;
	init.saddr = sk->__sk_common.skc_rcv_saddr;
	bpf_map_update_elem(&stats, &key, &init, BPF_NOEXIST);
	return bpf_map_lookup_elem(&stats, &key);
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(on_probe, struct sock *sk, struct sk_buff *skb)
{
	/* The tracepoint's sk is typed struct sock: bpf_skc_to_tcp_sock gives the verifier a tcp_sock. */
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	struct sock_stats *s;
	struct tcphdr th;
	__u32 cwnd, inflight, ack, una, acked;
	int ss, limited, qempty;
	__u32 state;
	__u64 now;

	if (!tp || tp->inet_conn.icsk_inet.sk.__sk_common.skc_state != 1 /* TCP_ESTABLISHED */)
		return 0;
	if (bpf_probe_read_kernel(&th, sizeof(th), skb->head + skb->transport_header))
		return 0;
	if (!th.ack)
		return 0;
	ack = bpf_ntohl(th.ack_seq);
	una = tp->snd_una;
	acked = ack - una;
	if ((int)acked <= 0)
		return 0;
	s = get(tp);
	if (!s)
		return 0;
	/* Every ACK that advances snd_una, by the congestion state it meets; entries into
	 * Recovery (3) and Loss (4) counted from the state the previous such ACK met. */
	state = tp->inet_conn.icsk_ca_state;
	if (state < 5) {
		__sync_fetch_and_add(&s->state_acks[state], 1);
		__sync_fetch_and_add(&s->state_acked[state], acked);
	}
	if (state == 3 && s->last_state != 3)
		__sync_fetch_and_add(&s->recoveries, 1);
	/* Last values seen: retransmissions, reordering degree, DSACKs, reordering events. */
	s->total_retrans = tp->total_retrans;
	s->reordering = tp->reordering;
	s->dsack_dups = tp->dsack_dups;
	s->reord_seen = tp->reord_seen;
	if (state == 4 && s->last_state != 4)
		__sync_fetch_and_add(&s->losses, 1);
	s->last_state = state;
	/* ACK compression: ACKs that advance snd_una within 100 us of the previous one (each
	 * releases new data at once, so they make bursts); stretch ACKs: more than 2 segments. */
	now = bpf_ktime_get_ns();
	if (s->last_ack_ns && now - s->last_ack_ns < 100000)
		__sync_fetch_and_add(&s->close_acks, 1);
	s->last_ack_ns = now;
	if (acked > 2 * tp->mss_cache)
		__sync_fetch_and_add(&s->stretch_acks, 1);
	if (state != 0 /* TCP_CA_Open */)
		return 0;
	__sync_fetch_and_add(&s->srtt_sum, tp->srtt_us >> 3);
	s->mss = tp->mss_cache;
	cwnd = tp->snd_cwnd;
	ss = cwnd < tp->snd_ssthresh;
	/* tcp_is_cwnd_limited(), Linux 6.18 include/net/tcp.h */
	limited = tp->is_cwnd_limited || (ss && cwnd < 2 * tp->max_packets_out);
	qempty = tp->inet_conn.icsk_inet.sk.sk_write_queue.qlen == 0;
	inflight = tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
	__sync_fetch_and_add(&s->calls, 1);
	__sync_fetch_and_add(&s->acked, acked);
	__sync_fetch_and_add(&s->cwnd_sum, cwnd);
	__sync_fetch_and_add(&s->inflight_sum, inflight);
	if (qempty)
		__sync_fetch_and_add(&s->qempty_calls, 1);
	if (ss)
		__sync_fetch_and_add(&s->ss_calls, 1);
	if (!limited) {
		__sync_fetch_and_add(&s->not_limited, 1);
		__sync_fetch_and_add(&s->acked_not_limited, acked);
		if (ss)
			__sync_fetch_and_add(&s->not_limited_ss, 1);
		if (qempty)
			__sync_fetch_and_add(&s->not_limited_qempty, 1);
		else
			__sync_fetch_and_add(&s->not_limited_qfull, 1);
	}
	return 0;
}

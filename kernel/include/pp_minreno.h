/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pp_minreno.h: the arithmetic of the bench's yardstick, shared by pp_minreno.bpf.c and the
 * bench-only probes (pp_probe.bpf.c), so that both run the very same code.
 *
 * Linux 6.18 tcp_reno_cong_avoid reduced to its arithmetic (slow start, then
 * tcp_cong_avoid_ai's snd_cwnd_cnt credit by acked segments); tcp_reno_ssthresh;
 * tcp_reno_undo_cwnd. Include after vmlinux.h.
 */
#ifndef PP_MINRENO_H
#define PP_MINRENO_H

static __always_inline void pp_minreno_cong_avoid(struct tcp_sock *tp, __u32 acked)
{
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		tp->snd_cwnd = tp->snd_cwnd + acked < tp->snd_ssthresh ? tp->snd_cwnd + acked : tp->snd_ssthresh;
		return;
	}
	tp->snd_cwnd_cnt += acked;
	if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
		tp->snd_cwnd_cnt -= tp->snd_cwnd;
		tp->snd_cwnd++;
	}
}

static __always_inline __u32 pp_minreno_ssthresh(struct tcp_sock *tp)
{
	return tp->snd_cwnd >> 1 > 2 ? tp->snd_cwnd >> 1 : 2;
}

static __always_inline __u32 pp_minreno_undo_cwnd(struct tcp_sock *tp)
{
	return tp->snd_cwnd > tp->prior_cwnd ? tp->snd_cwnd : tp->prior_cwnd;
}

/* The yardstick's ssthresh and undo_cwnd programs (pp_minreno and every probe register them). */
#define PP_MINRENO_SSTHRESH_UNDO()                                      \
	SEC("struct_ops/mr_ssthresh")                                   \
	__u32 BPF_PROG(mr_ssthresh, struct sock *sk)                    \
	{                                                               \
		return pp_minreno_ssthresh((struct tcp_sock *)sk);      \
	}                                                               \
	SEC("struct_ops/mr_undo_cwnd")                                  \
	__u32 BPF_PROG(mr_undo_cwnd, struct sock *sk)                   \
	{                                                               \
		return pp_minreno_undo_cwnd((struct tcp_sock *)sk);     \
	}

#endif /* PP_MINRENO_H */

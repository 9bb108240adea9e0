// SPDX-License-Identifier: GPL-2.0
/*
 * pp_rsfdb: RSF-DB, the delay-based resource-sharing-fair increase (Pokhrel & Williamson 2020).
 *
 *   per segment acknowledged on r:  w_r += (1/w_r) min{1, (d - q_r)/q_r}
 *   per loss on r:                  w_r  = max(w_r/2, 2)
 *
 * d is the delay target (tunable rsf_d_us, `--d-ms`), q_r the path's queueing delay. Every rule
 * is the subflow's own: no connection state. The glue: pp_common.bpf.h, pp_ops.bpf.h; the
 * arithmetic (pp_rsfdb_inc): pp_cc_math.h.
 */
#define PP_COUPLED 0
#include "pp_common.bpf.h"

/*
 * q_r (queueing + service delay to the sink, no propagation): the latest RTT sample minus the
 * path's minimum RTT. This attributes all of the queueing on the round trip to the forward
 * path, which is exact when the return path carries only ACKs and its queue stays empty (the
 * test bed, and the usual bulk-download case). TCP timestamps cannot give more here: their
 * clock is 1 ms and, with the default random per-connection offset, not comparable across hosts.
 */
static __always_inline __u64 pp_queue_delay_us(struct sock *sk, struct pp_ca *ca)
{
	struct tcp_sock *tp = pp_tp(sk);
	__u32 min_rtt = tp->rtt_min.s[0].v;
	__u32 rtt = ca->last_rtt_us ? ca->last_rtt_us : tp->srtt_us >> 3;

	if (!min_rtt || min_rtt == ~0U || rtt <= min_rtt)
		return 0;
	return rtt - min_rtt;
}

static __always_inline __s64 pp_algo_inc(struct sock *sk, struct pp_ca *ca,
					 struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);

	return pp_rsfdb_inc(w, pp_rsf_d_us, pp_queue_delay_us(sk, ca));
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	return pp_reno_ssthresh(pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac));
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_rsfdb, "pp_rsfdb");

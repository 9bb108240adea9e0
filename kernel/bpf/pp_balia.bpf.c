// SPDX-License-Identifier: GPL-2.0
/*
 * pp_balia: BALIA, the Balanced Linked Adaptation (Walid et al. 2014; Peng, Walid, Hwang & Low
 * 2016, eq. 1-2).
 *
 *   x_k = w_k/rtt_k,  a_r = max_k x_k / x_r
 *   per segment acknowledged on r:  w_r += x_r/(rtt_r (sum_k x_k)^2) (1 + a_r)/2 (4 + a_r)/5
 *   per loss on r:                  w_r -= (w_r/2) min(a_r, 3/2)
 *
 * With the tunable balia_quantised (`--balia-quantised`) the loss response uses the integer
 * alpha of the out-of-tree MPTCP v0.95 kernel. Reads the siblings' windows and RTTs. The
 * callbacks: pp_common.bpf.h and pp_ops.bpf.h; the arithmetic (pp_balia_list_inc,
 * pp_balia_ssthresh): pp_cc_math.h.
 */
#define PP_COUPLED 1
#define PP_SLOT_LOOP _Pragma("nounroll")
#include "pp_common.bpf.h"

static __always_inline __s64 pp_algo_inc(struct sock *sk, struct pp_ca *ca,
					 struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);

	/* Alone, or no sibling in the mask: Reno (pp_common.bpf.h, "Uncoupled"). */
	if (!st || ca->slot >= PP_MAX_SF)
		return pp_reno_inc(w);
	if (!pp_has_sibling(st->mask, (int)ca->slot))
		return pp_reno_inc(pp_own_window(sk, ca));
	return pp_rate_slots_inc(sk, ca, st, 0);
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);
	struct pp_vset vs;

	/* The own window published first, so the siblings' rates include this one's. */
	if (st && ca->slot < PP_MAX_SF) {
		pp_publish(sk, ca, st);
		pp_views(st, vs.v, ca->slot);
		return pp_g_balia_ssthresh(&vs, ca->slot, pp_balia_quantised != 0);
	}
	return pp_reno_ssthresh(w);
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_balia, "pp_balia");

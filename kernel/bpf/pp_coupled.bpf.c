// SPDX-License-Identifier: GPL-2.0
/*
 * pp_coupled: the fully coupled increase (Kelly & Voice 2005), in the standard form of Wischik
 * et al. 2011.
 *
 *   per segment acknowledged on r:  w_r += 1/w_total
 *   per loss on r:                  w_r  = max(w_r - w_total/2, 1) with siblings,
 *                                          max(w_r/2, 2) alone
 *
 * Reads the siblings' windows only. The glue: pp_common.bpf.h, pp_ops.bpf.h; the
 * arithmetic (pp_a_over_total, pp_coupled_ssthresh): pp_cc_math.h.
 */
#define PP_COUPLED 1
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
	/* 1 / w_total needs the windows only: no views. */
	return pp_a_over_total(pp_slot_window_total(st, ca->slot, pp_own_window(sk, ca)),
			       1ULL << PP_INC_SHIFT);
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);
	struct pp_vset vs;

	/* The own window published first, so the siblings' sum sees this one's. */
	if (st && ca->slot < PP_MAX_SF) {
		pp_publish(sk, ca, st);
		pp_views(st, vs.v, ca->slot);
		return pp_g_coupled_ssthresh(&vs, ca->slot);
	}
	return pp_reno_ssthresh(w);
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_coupled, "pp_coupled");

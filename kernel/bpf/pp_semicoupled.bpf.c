// SPDX-License-Identifier: GPL-2.0
/*
 * pp_semicoupled: the semicoupled increase of Wischik et al. 2011.
 *
 *   per segment acknowledged on r:  w_r += a/w_total   (a/w_r on a plain TCP socket)
 *   per loss on r:                  w_r  = max(w_r/2, 2)
 *
 * a = 1 by default (tunable semicoupled_a_q32, `--semicoupled-a`). Reads the siblings' windows
 * only. The glue: pp_common.bpf.h, pp_ops.bpf.h; the arithmetic (pp_a_over_total,
 * pp_ewtcp_inc): pp_cc_math.h.
 */
#define PP_COUPLED 1
#include "pp_common.bpf.h"

static __always_inline __s64 pp_algo_inc(struct sock *sk, struct pp_ca *ca,
					 struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);

	/* Alone, or no sibling in the mask: a/w (pp_common.bpf.h, "Uncoupled"). */
	if (!st || ca->slot >= PP_MAX_SF)
		return pp_ewtcp_inc(w, pp_semicoupled_a_q32);
	if (!pp_has_sibling(st->mask, (int)ca->slot))
		return pp_ewtcp_inc(pp_own_window(sk, ca), pp_semicoupled_a_q32);
	/* a / w_total needs the windows only: no views. */
	return pp_a_over_total(pp_slot_window_total(st, ca->slot, pp_own_window(sk, ca)),
			       pp_semicoupled_a_q32);
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	return pp_reno_ssthresh(pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac));
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_semicoupled, "pp_semicoupled");

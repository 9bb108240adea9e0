// SPDX-License-Identifier: GPL-2.0
/*
 * pp_max: the Max increase of the standard forms compared by Wischik et al. 2011 and Peng et
 * al. 2016: LIA's ratio on every ACK, without LIA's cap and without stored alpha.
 *
 *   per segment acknowledged on r:  w_r += max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2
 *   per loss on r:                  w_r  = max(w_r/2, 2)
 *
 * Reads the siblings' windows and RTTs. The glue: pp_common.bpf.h, pp_ops.bpf.h; the
 * arithmetic (pp_rate_list_lia_ratio): pp_cc_math.h.
 */
#define PP_COUPLED 1
#define PP_SLOT_LOOP _Pragma("nounroll")
/* Max computes LIA's ratio on every ACK: its per-path term inline saves a BPF-to-BPF call and
 * return per path and ACK (LIA recomputes rarely and keeps the smaller global function). */
#define PP_LIA_TERM static __always_inline
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
	return pp_rate_slots_inc(sk, ca, st, 1);
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	return pp_reno_ssthresh(pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac));
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_max, "pp_max");

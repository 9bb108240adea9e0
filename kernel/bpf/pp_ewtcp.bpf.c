// SPDX-License-Identifier: GPL-2.0
/*
 * pp_ewtcp: EWTCP, equally weighted TCP on every subflow (Honda et al. 2009; the standard form
 * of Wischik et al. 2011).
 *
 *   per segment acknowledged on r:  w_r += a/w_r,  a = 1/n^2 by default
 *   per loss on r:                  w_r  = max(w_r/2, 2)
 *
 * n is the number of subflows the connection couples now; a can be set instead (tunable
 * ewtcp_a_q32, `--ewtcp-a`). Reads only the connection's subflow mask. The glue:
 * pp_common.bpf.h, pp_ops.bpf.h; the arithmetic (pp_ewtcp_inc, pp_ewtcp_default_a_q32):
 * pp_cc_math.h.
 */
#define PP_COUPLED 1
#include "pp_common.bpf.h"

static __always_inline __s64 pp_algo_inc(struct sock *sk, struct pp_ca *ca,
					 struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);
	/* n = the subflows coupled now, this one included; 1 on a plain TCP socket or without a
	 * slot, where EWTCP is Reno. Only the header's mask is read. */
	__u32 n = 1;

	if (st && ca->slot < PP_MAX_SF)
		n = pp_mask_count(st->mask | (1U << (ca->slot & (PP_MAX_SF - 1))));
	return pp_ewtcp_inc(w, pp_ewtcp_a_q32 ? pp_ewtcp_a_q32 : pp_ewtcp_default_a_q32(n));
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	return pp_reno_ssthresh(pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac));
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_ewtcp, "pp_ewtcp");

// SPDX-License-Identifier: GPL-2.0
/*
 * pp_reno: Reno (Jacobson 1988; RFC 5681) on every subflow, uncoupled: the baseline.
 *
 *   per segment acknowledged on r:  w_r += 1/w_r
 *   per loss on r:                  w_r  = max(w_r/2, 2)
 *
 * Keeps no connection state. The glue: pp_common.bpf.h, pp_ops.bpf.h; the arithmetic: pp_cc_math.h.
 */
#define PP_COUPLED 0
#include "pp_common.bpf.h"

static __always_inline __s64 pp_algo_inc(struct sock *sk, struct pp_ca *ca,
					 struct pp_conn_state *st)
{
	return pp_reno_inc(pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac));
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	return pp_reno_ssthresh(pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac));
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_reno, "pp_reno");

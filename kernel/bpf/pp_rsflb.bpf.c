// SPDX-License-Identifier: GPL-2.0
/*
 * pp_rsflb: RSF-LB, the loss-based resource-sharing-fair increase (Pokhrel & Williamson 2020).
 *
 *   per segment acknowledged on r:  w_r += (1/w_r) min{1, (mu - L_r)/L_r}
 *   per loss on r:                  w_r  = max(w_r/2, 2)
 *
 * mu is the loss target in packets per second (tunable rsf_mu_q16, `--mu-pps`), L_r = lambda_r
 * l_r the path's loss rate: its sending rate w_r/srtt_r times its loss probability l_r. Every
 * rule is the subflow's own: no connection state. The glue: pp_common.bpf.h, pp_ops.bpf.h; the
 * arithmetic (pp_rsflb_inc, pp_loss_est_*): pp_cc_math.h.
 */
#define PP_COUPLED 0
#define PP_HOOK_SAMPLE
#include "pp_common.bpf.h"

/* l_r estimated as pathpool-cc does: an EWMA over ~loss_window packets (`--loss-window`) of the
 * transport's delivered/lost counters, updated on every ACK and loss event. */
static __always_inline void pp_algo_sample(struct sock *sk, struct pp_ca *ca)
{
	pp_loss_est_update(&ca->lest, pp_tp(sk)->delivered, pp_tp(sk)->lost, pp_rsf_lb_keep_q32);
}

/* L_r in packets per second (q24). */
static __always_inline __u64 pp_loss_rate_q24(struct sock *sk, struct pp_ca *ca, __u64 w)
{
	return pp_rsflb_loss_rate_q24(w, pp_tp(sk)->srtt_us >> 3, pp_loss_est_q32(&ca->lest));
}

static __always_inline __s64 pp_algo_inc(struct sock *sk, struct pp_ca *ca,
					 struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);

	return pp_rsflb_inc(w, pp_rsf_mu_q16 << 8, pp_loss_rate_q24(sk, ca, w));
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	return pp_reno_ssthresh(pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac));
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_rsflb, "pp_rsflb");

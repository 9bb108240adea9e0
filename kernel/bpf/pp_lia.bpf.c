// SPDX-License-Identifier: GPL-2.0
/*
 * pp_lia: LIA, the Linked Increases Algorithm (RFC 6356: Raiciu, Handley & Wischik 2011).
 *
 *   per segment acknowledged on r:  w_r += min(alpha/w_total, 1/w_r)
 *   alpha = w_total max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2
 *   per loss on r:                  w_r  = max(w_r/2, 2)
 *
 * alpha is not recomputed on every ACK: as the out-of-tree MPTCP v0.95 kernel (mptcp_coupled)
 * and pathpool-cc's Lia do, the connection keeps the ratio alpha/w_total (st->lia) and refreshes
 * it after a slow-start step, when a CA step raises the integer window, on the first CA ACK
 * after any congestion-state change, and at a retransmission timeout with the window it found.
 * Reads the siblings' windows and RTTs. The glue: pp_common.bpf.h, pp_ops.bpf.h; the arithmetic
 * (pp_lia_ratio, pp_lia_ca_inc, pp_lia_ss_ack, pp_lia_rto): pp_cc_math.h.
 */
#define PP_COUPLED 1
#define PP_HOOK_SET_STATE
#define PP_HOOK_CWND_EVENT
#define PP_HOOK_CWND_GROWN
#include "pp_common.bpf.h"

static __always_inline __s64 pp_algo_inc(struct sock *sk, struct pp_ca *ca,
					 struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);
	struct pp_vset vs;

	/* Alone (plain TCP, no slot): Reno. */
	if (!st || ca->slot >= PP_MAX_SF)
		return pp_reno_inc(w);
	if (!st->lia.forced) {
		/* pp_lia_ca_inc without a forced recomputation needs only the stored ratio and
		 * whether a sibling takes part (pp_count_participants(...) > 1: a bit of another
		 * slot in the mask), all in the header's cache line: the slots are not read (the
		 * per-ACK common case). */
		w = pp_own_window(sk, ca);
		return pp_has_sibling(st->mask, (int)ca->slot) ?
			pp_lia_inc(st->lia.ratio_q32, w) : pp_reno_inc(w);
	}
	pp_views(st, vs.v, ca->slot);
	/* The own slot from the socket itself: the slot is written once, after the step. */
	pp_own_view(sk, ca, &vs.v[ca->slot & (PP_MAX_SF - 1)]);
	return pp_lia_ca_inc(&st->lia, &vs, ca->slot);
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	return pp_reno_ssthresh(pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac));
}

/* v0.95 recomputes alpha whenever the window grows. */
static __always_inline void pp_algo_cwnd_grown(struct pp_ca *ca, struct pp_conn_state *st)
{
	struct pp_vset vs;

	if (!st || ca->slot >= PP_MAX_SF)
		return;
	pp_views(st, vs.v, ca->slot);
	pp_lia_ss_ack(&st->lia, &vs, ca->slot);
}

/* v0.95: every congestion-state change forces a recomputation on the next CA ACK. */
static __always_inline void pp_algo_set_state(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st, __u8 new_state)
{
	if (st && new_state != ca->state)
		pp_lia_state_change(&st->lia);
}

/*
 * CA_EVENT_LOSS: tcp_enter_loss raises it after ssthresh() and before it cuts snd_cwnd to
 * in-flight + 1, so alpha is recomputed here with the pre-timeout window, as v0.95 and
 * pathpool-cc's Lia::on_rto do (set_state(Loss) comes only after the cut).
 */
static __always_inline void pp_algo_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct pp_ca *ca = pp_ca(sk);
	struct pp_conn_state *st = pp_state(ca);
	struct tcp_sock *tp = pp_tp(sk);
	struct pp_vset vs;
	__u32 k = ca->slot;

	if (ev != CA_EVENT_LOSS || !st || k >= PP_MAX_SF)
		return;
	pp_publish(sk, ca, st);
	/* The window the timeout found, even if the subflow was in recovery. */
	st->s[k].w = pp_window_q16(tp->snd_cwnd, ca->frac);
	pp_views(st, vs.v, ca->slot);
	pp_lia_rto(&st->lia, &vs, k);
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_lia, "pp_lia");

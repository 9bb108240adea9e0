// SPDX-License-Identifier: GPL-2.0
/*
 * pp_olia: OLIA, the Opportunistic Linked-Increases Algorithm (Khalili et al. 2013).
 *
 *   per segment acknowledged on r:  w_r += (w_r/rtt_r^2)/(sum_p w_p/rtt_p)^2 + alpha_r/w_r
 *   per loss on r:                  w_r  = max(w_r/2, 2)
 *
 * alpha_r moves window from the paths with the largest windows to the best paths (largest
 * l_r^2/rtt_r, l_r the bytes acknowledged between the last two losses, or since the last one if
 * more): +1/(|P| |B\M|) on a best path without the largest window, -1/(|P| |M|) on a path with
 * the largest window, 0 otherwise (|B\M| = 0: alpha_r = 0). l_r comes from the marks kept as
 * the out-of-tree MPTCP v0.95 kernel (mptcp_olia) does: each ACK moves the last-ACK mark, entry
 * into recovery or loss advances the two loss marks (pp_ops.bpf.h's set_state, for
 * every control). The subflows
 * publish l_r with their window and RTT. The glue: pp_common.bpf.h, pp_ops.bpf.h; the arithmetic
 * (pp_olia_begin, pp_olia_sib, pp_olia_end, pp_olia_marks_*): pp_cc_math.h.
 */
#define PP_COUPLED 1
#define PP_SHARES_LR 1
#define PP_HOOK_ACKED
#define PP_SLOT_LOOP _Pragma("nounroll")
#include "pp_common.bpf.h"

/* loss3 follows every ACK cong_avoid sees (v0.95), cwnd-limited or not. */
static __always_inline void pp_algo_acked(struct sock *sk, struct pp_ca *ca)
{
	pp_olia_marks_ack(&ca->marks, pp_tp(sk)->bytes_acked);
}

/*
 * OLIA's increment for the subflow in slot ca->slot, pass 1 inline in cong_avoid, reading the
 * slots directly (pass 2 and the finish: pp_g_olia_end): pp_olia_inc (pp_cc_math.h) on
 * pp_views' copy with pp_own_view's own slot, bit for bit, through the same pp_olia_begin /
 * pp_olia_sib / pp_olia_end. Pass 1 copies each sibling taking part (masked, taken, active: what pp_views reads) into a compact list, one
 * load per field, and pass 2 runs over that list, so both passes see one snapshot even while
 * a sibling on another CPU publishes. (Each sibling field is one aligned 64- or 32-bit load,
 * never torn; a sibling's w, rtt and l_r may come from two of its publishes, as before.)
 * The list is compact (its length a small constant to the verifier) rather than indexed by
 * slot with zeroes for the others: a zero written on some paths and a loaded value on others
 * made the verifier tell 2^8 combinations apart.
 */
/*
 * Pass 2 and the finish as a global function, the one BPF-to-BPF call of an OLIA ACK (was
 * three: the increment and one scan per counted path). Inline as well, the callback still
 * exceeded the verifier's budget (1000001 instructions processed, 23693 states: the finish's
 * branches walked once per distinct state the two passes leave), so the verifier checks this
 * part once with unknown counts. BPF allows 5 arguments: r's own numbers travel as a struct.
 */
struct pp_olia_own {
	__u64 w, lr, t;
	__u32 rtt;
};

__noinline __s64 pp_g_olia_end(struct pp_olia_acc *a, struct pp_olia_sibs *s,
			       struct pp_olia_own *o)
{
	if (!a || !s || !o)
		return 0;
	return pp_olia_end(a, s, o->w, o->rtt, o->lr, o->t);
}

static __always_inline __s64 pp_olia_slots_inc(struct sock *sk, struct pp_ca *ca,
						struct pp_conn_state *st)
{
	__u32 i = ca->slot & (PP_MAX_SF - 1), mask = st->mask & ~(1U << i), rtt;
	__u64 w = pp_own_window(sk, ca), lr = pp_olia_marks_l(&ca->marks), t;
	struct pp_olia_sibs s;
	struct pp_olia_acc a;
	int k;

	rtt = pp_tp(sk)->srtt_us >> 3;
	if (!rtt)
		return pp_reno_inc(w);   /* no RTT on this path yet: Reno */
	t = pp_rate_t(w, rtt);
	pp_olia_begin(&a, &s, w, rtt, lr, t);
#pragma nounroll
	for (k = 0; k < PP_MAX_SF; k++)
		if ((mask & (1U << k)) && st->s[k].sk && st->s[k].active)
			pp_olia_sib(&a, &s, st->s[k].w, st->s[k].rtt_us, st->s[k].lr);
	{
		struct pp_olia_own o = { .w = w, .lr = lr, .t = t, .rtt = rtt };

		return pp_g_olia_end(&a, &s, &o);
	}
}

static __always_inline __s64 pp_algo_inc(struct sock *sk, struct pp_ca *ca,
					 struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);

	/* Alone, or no sibling in the mask: Reno (pp_common.bpf.h, "uncoupled"). */
	if (!st || ca->slot >= PP_MAX_SF)
		return pp_reno_inc(w);
	if (!pp_has_sibling(st->mask, (int)ca->slot))
		return pp_reno_inc(pp_own_window(sk, ca));
	return pp_olia_slots_inc(sk, ca, st);
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	return pp_reno_ssthresh(pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac));
}

#include "pp_ops.bpf.h"

PP_DEFINE_OPS(pp_olia, "pp_olia");

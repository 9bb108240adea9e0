/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * pp_cc_math.h: the window arithmetic of pathpool's coupled congestion controls, in plain C.
 *
 * The same file is compiled into every BPF object (kernel/bpf/pp_*.bpf.c) and into the host test
 * (kernel/test/host_test.c), which checks it against vectors produced by the Rust reference
 * (crates/pathpool-cc, via crates/pathpool-cc/examples/kernel_vectors.rs). So the kernel and the
 * simulator run the same formulas; only the number format differs.
 *
 * No floating point (BPF has none), no kernel headers, no signed division (clang 14 emits none
 * for BPF), no 128-bit arithmetic. Every function is a pure function of its arguments.
 *
 * Fixed-point formats (documented because the error bound depends on them):
 *   - windows:     unsigned, segments * 2^16   (PP_W_SHIFT);  valid range [1, 2^20] segments
 *   - increments:  signed,   segments * 2^32   (PP_INC_SHIFT) added to a window per ACK
 *   - ratios:      unsigned, value    * 2^24   (PP_R_SHIFT)   e.g. rtt_min / rtt_k in (0, 1]
 *   - RTTs/delays: microseconds, u32, clamped to [1, 2^24] us (about 16.8 s)
 *   - rates of events (RSF-LB's lambda*l, mu): packets per second * 2^24 (mu tunable: 2^16)
 * Domain limits: at most PP_MAX_SF subflows, windows up to 2^20 segments, RTTs up to 2^24 us
 * (clamped); alpha-like ratios are clamped (PP_ALPHA_MAX_Q32, PP_BALIA_ALPHA_MAX_Q16) so that
 * intermediate products stay below 2^64. (The host test checks random states inside the
 * domain; an exhaustive overflow sweep at its corners is not written yet.)
 *
 * Error bound (stated and tested in host_test.c): for inputs inside the domain, every per-ACK
 * increment differs from the exact real-number formula by at most
 *       |err| <= 1e-5 |exact| + 2^-24 segments                       (reno, lia, rsf-db)
 *       |err| <= 1e-5 |exact| + 2^-24 + |exact| * 2^-15 / b_r        (olia, balia)
 *       |err| <= 1e-5 |exact| + 2^-24 + (mu/L + 1) 2^-16 / w^2       (rsf-lb: the q16 window
 *                                                 enters lambda = w/srtt, amplified by mu/L)
 * where b_r = w_r * (rtt_min / rtt_r)^2 (segments): b_r is kept in q16, so a path whose RTT
 * is much longer than the shortest one loses relative precision (b_r = 1 segment: 3e-5). A decrease (new
 * ssthresh) differs by at most 1e-5 |exact| + 2^-15 segments. The other error sources are the
 * truncating divisions of the q24 ratios (relative 2^-24 each) and the q16 input window.
 */
#ifndef PP_CC_MATH_H
#define PP_CC_MATH_H

#ifdef __bpf__
#define PP_INLINE static __always_inline
/* Unrolled loops give the verifier constant indexes, so it can prune paths. */
#define PP_UNROLL _Pragma("unroll")
/* A global BPF function: verified once on its own, which keeps the callers' state space small. */
#define PP_SUBPROG __attribute__((noinline))
#else
#define PP_SUBPROG static inline
#define PP_INLINE static inline
#define PP_UNROLL
#endif

typedef unsigned long long pp_u64;
typedef long long pp_s64;
typedef unsigned int pp_u32;

/* Subflows coupled per connection. 4 keeps the BPF verifier within its budget (each slot may be
 * active or not, and the verifier explores the combinations); further subflows run Reno. */
#define PP_MAX_SF 4
#define PP_W_SHIFT 16
#define PP_W_ONE (1ULL << PP_W_SHIFT)
#define PP_INC_SHIFT 32
#define PP_INC_ONE (1LL << PP_INC_SHIFT)
#define PP_R_SHIFT 24
#define PP_R_ONE (1ULL << PP_R_SHIFT)
#define PP_W_MAX (1ULL << (20 + PP_W_SHIFT))
#define PP_RTT_MAX_US (1U << 24)
/* Largest alpha kept (LIA) / largest rate ratio used (BALIA): beyond these the min with 1/w
 * (LIA) or the 1-segment cap (all) binds anyway, so the clamp only protects the arithmetic. */
#define PP_ALPHA_MAX_Q32 ((1ULL << 15) << 32)
#define PP_BALIA_ALPHA_MAX_Q16 (1ULL << 31)

/* Linux floors (tcp_reno_ssthresh, snd_cwnd >= 1). */
#define PP_MIN_SSTHRESH_W (2ULL << PP_W_SHIFT)
#define PP_MIN_CWND_W (1ULL << PP_W_SHIFT)

/* One subflow as the formulas see it (a snapshot; siblings' values may be slightly stale). */
struct pp_sf_view {
	pp_u64 w;          /* cwnd, q16 segments (ssthresh instead for OLIA while in recovery) */
	pp_u32 rtt_us;     /* smoothed RTT; 0 = no sample yet (left out of rate sums) */
	pp_u32 active;     /* 0 = slot unused / subflow closed */
	pp_u64 lr;         /* OLIA: max(l1r, l2r) in bytes (bytes between losses) */
};

PP_INLINE pp_u32 pp_clamp_rtt(pp_u32 rtt_us)
{
	if (rtt_us < 1)
		return 1;
	if (rtt_us > PP_RTT_MAX_US)
		return PP_RTT_MAX_US;
	return rtt_us;
}

PP_INLINE pp_u64 pp_clamp_w(pp_u64 w)
{
	if (w < PP_MIN_CWND_W)
		return PP_MIN_CWND_W;
	if (w > PP_W_MAX)
		return PP_W_MAX;
	return w;
}

/* Negate-aware helpers: BPF (clang 14, cpu v1-v3) has no signed division. */
PP_INLINE pp_s64 pp_neg_if(pp_u64 mag, int neg)
{
	return neg ? -(pp_s64)mag : (pp_s64)mag;
}

/* ---------------------------------------------------------------- Reno ---------------------- */

/* RFC 5681 eq. 3 in segments: w += 1/w per ACK. Returns 1/w in q32. */
PP_INLINE pp_s64 pp_reno_inc(pp_u64 w)
{
	w = pp_clamp_w(w);
	return (pp_s64)((1ULL << (PP_INC_SHIFT + PP_W_SHIFT)) / w);
}

/* Linux tcp_reno_ssthresh on a fractional window: max(w/2, 2). q16 in, q16 out. */
PP_INLINE pp_u64 pp_reno_ssthresh(pp_u64 w)
{
	pp_u64 h = w >> 1;
	return h < PP_MIN_SSTHRESH_W ? PP_MIN_SSTHRESH_W : h;
}

/* ------------------------------------------------ shared rate normalisation ---------------- */

/*
 * Rates x_k = w_k / rtt_k would need a time unit; every coupled formula below is homogeneous of
 * degree 0 in time once written per ACK, so we scale all RTTs by the smallest one:
 *   r_k = rtt_min / rtt_k  (q24, in (0,1]),
 *   t_k = w_k * r_k        (q16 segments; = x_k * rtt_min),
 *   b_k = t_k * r_k        (q16 segments; = (w_k / rtt_k^2) * rtt_min^2).
 * Then  max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2 = max_k b_k / (sum_k t_k)^2  exactly.
 */
struct pp_norm {
	pp_u32 r[PP_MAX_SF];   /* q24 */
	pp_u64 t[PP_MAX_SF];   /* q16; b_k = t_k r_k is recomputed (pp_norm_b) to save stack */
	pp_u64 sum_t;   /* q16 */
	pp_u64 sum_w;   /* q16, every participating subflow (RTT known or not) */
	pp_u64 max_b;   /* q16 */
	pp_u64 max_t;   /* q16 */
	int n;          /* participating subflows with an RTT sample */
	int n_part;     /* participating subflows */
};

/* A subflow takes part in the sums if it is active or is the one the event belongs to. */
PP_INLINE int pp_participates(const struct pp_sf_view *v, int k, int i)
{
	return k == i || v[k].active;
}

PP_INLINE void pp_normalise(const struct pp_sf_view *v, int nsf, int i, struct pp_norm *o)
{
	pp_u32 rtt_min = PP_RTT_MAX_US;
	int k;

	o->sum_t = 0;
	o->sum_w = 0;
	o->max_b = 0;
	o->max_t = 0;
	o->n = 0;
	o->n_part = 0;
	PP_UNROLL
	for (k = 0; k < PP_MAX_SF; k++) {
		if (k >= nsf)
			break;
		if (!pp_participates(v, k, i))
			continue;
		o->n_part++;
		o->sum_w += pp_clamp_w(v[k].w);
		if (v[k].rtt_us && pp_clamp_rtt(v[k].rtt_us) < rtt_min)
			rtt_min = pp_clamp_rtt(v[k].rtt_us);
	}
	PP_UNROLL
	for (k = 0; k < PP_MAX_SF; k++) {
		pp_u64 w, r, t, b;

		o->r[k] = 0;
		o->t[k] = 0;
		if (k >= nsf)
			continue;
		if (!pp_participates(v, k, i) || !v[k].rtt_us)
			continue;
		w = pp_clamp_w(v[k].w);
		r = ((pp_u64)rtt_min << PP_R_SHIFT) / pp_clamp_rtt(v[k].rtt_us);
		t = (w * r) >> PP_R_SHIFT;
		b = (t * r) >> PP_R_SHIFT;
		o->r[k] = (pp_u32)r;
		o->t[k] = t;
		o->sum_t += t;
		if (b > o->max_b)
			o->max_b = b;
		if (t > o->max_t)
			o->max_t = t;
		o->n++;
	}
}

PP_INLINE pp_u64 pp_norm_b(const struct pp_norm *o, int k)
{
	return (o->t[k] * o->r[k]) >> PP_R_SHIFT;
}

PP_INLINE int pp_bitlen(pp_u64 x)
{
	int n = 0;

	if (x >> 32) { n += 32; x >>= 32; }
	if (x >> 16) { n += 16; x >>= 16; }
	if (x >> 8) { n += 8; x >>= 8; }
	if (x >> 4) { n += 4; x >>= 4; }
	if (x >> 2) { n += 2; x >>= 2; }
	if (x >> 1) { n += 1; x >>= 1; }
	return n + (int)x;
}

/* num / S^2 as a q32 increment, for num <= S (q16 both); 1 segment at most. The first
 * division keeps as many bits as fit in 63 (up to 48), so a slow path's small num keeps its
 * relative precision. */
PP_SUBPROG pp_u64 pp_over_s2(pp_u64 num, pp_u64 s)
{
	pp_u64 r;
	int a;

	if (!s || !num)
		return 0;
	if (num > s)
		num = s;
	a = 62 - pp_bitlen(num);
	if (a > 48)
		a = 48;
	if (a < 0)
		a = 0;
	r = (num << a) / s;           /* num/s * 2^a, <= 2^a */
	r = (r << (48 - a)) / s;      /* num/s^2 * 2^32 in the q16 units */
	return r > (pp_u64)PP_INC_ONE ? (pp_u64)PP_INC_ONE : r;
}

/* ----------------------------------------------------------------- LIA ---------------------- */

/*
 * RFC 6356 Section 3:  alpha = w_total * max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2.
 * Returned in q32 (alpha * 2^32), clamped to PP_ALPHA_MAX_Q32. Subflows without an RTT sample
 * are left out of the max and the rate sum but count in w_total (pathpool-cc does the same).
 * No RTT at all: alpha = 1 (the increment is then Reno's 1/w_i through the min).
 */
PP_INLINE pp_u64 pp_lia_alpha(const struct pp_sf_view *v, int nsf, int i)
{
	struct pp_norm o;
	pp_u64 ratio, tot_over_s, a;

	pp_normalise(v, nsf, i, &o);
	if (!o.n || !o.sum_t)
		return 1ULL << 32;
	/* max_b / S as q24 (<= 1), then * (w_total / S) (q24, >= 1), then / 2^16 -> q32. */
	ratio = (o.max_b << PP_R_SHIFT) / o.sum_t;
	tot_over_s = (o.sum_w << PP_R_SHIFT) / o.sum_t;
	if (tot_over_s > (1ULL << (PP_R_SHIFT + 14)))
		return PP_ALPHA_MAX_Q32;
	a = (ratio * tot_over_s) >> (2 * PP_R_SHIFT - 32);
	return a > PP_ALPHA_MAX_Q32 ? PP_ALPHA_MAX_Q32 : a;
}

/*
 * What the connection keeps (v0.95 mptcp_coupled.c, and pathpool-cc's Lia): alpha / w_total at
 * the last recomputation = max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2, as a q32 increment.
 * No RTT sample anywhere: "infinite" (1 segment), so the min below gives Reno's 1/w_i.
 */
PP_INLINE pp_u64 pp_lia_ratio(const struct pp_sf_view *v, int nsf, int i)
{
	struct pp_norm o;

	pp_normalise(v, nsf, i, &o);
	if (!o.n || !o.sum_t)
		return (pp_u64)PP_INC_ONE;
	return pp_over_s2(o.max_b, o.sum_t);
}

/* RFC 6356: per ACK on subflow i, w_i += min(alpha / w_total, 1 / w_i). q32. */
PP_INLINE pp_s64 pp_lia_inc(pp_u64 ratio_q32, pp_u64 w_i)
{
	pp_u64 reno = (pp_u64)pp_reno_inc(w_i);

	return (pp_s64)(ratio_q32 < reno ? ratio_q32 : reno);
}

/* ----------------------------------------------------------------- OLIA --------------------- */

/*
 * Khalili et al., "MPTCP is not Pareto-optimal", IEEE/ACM ToN 21(5) 2013, eq. (4)-(5):
 *   per ACK on path r:  w_r += (w_r/rtt_r^2) / (sum_p w_p/rtt_p)^2  +  alpha_r / w_r
 *   alpha_r =  1/(n |B\M|)   if r in B\M,
 *             -1/(n |M|)     if r in M and B\M is not empty,
 *              0             otherwise,
 * M = paths with the largest window (the view's w holds ssthresh for a path in recovery),
 * B = paths maximising l_r / rtt_r^2 (l_r = max(l1r, l2r), bytes), n = number of paths.
 */
/* l_k / rtt_k^2 scaled by rtt_min^2 (l capped at 2^30 bytes so the products stay < 2^63). */
PP_SUBPROG pp_u64 pp_olia_score_lr(pp_u64 l, pp_u64 r)
{
	if (l > (1ULL << 30))
		l = 1ULL << 30;
	r &= 0xffffffffULL;
	return (((l * r) >> 8) * r) >> PP_R_SHIFT;
}

PP_INLINE pp_u64 pp_olia_score(const struct pp_sf_view *v, const struct pp_norm *o, int k)
{
	return pp_olia_score_lr(v[k].lr, o->r[k]);
}

PP_INLINE pp_s64 pp_olia_inc(const struct pp_sf_view *v, int nsf, int i)
{
	struct pp_norm o;
	pp_u64 w_max = 0, best = 0, first, a_mag, w_i, score_i;
	pp_u64 n = 0, n_m = 0, n_bm = 0;
	int k, i_in_m, i_in_bm;

	if (!v[i].rtt_us)
		return pp_reno_inc(v[i].w);   /* no RTT on this path yet: Reno */
	pp_normalise(v, nsf, i, &o);
	PP_UNROLL
	for (k = 0; k < PP_MAX_SF; k++) {
		pp_u64 w, sc;

		if (k >= nsf)
			break;
		if (!pp_participates(v, k, i))
			continue;
		n++;
		/* M compares whole segments, as v0.95 does with snd_cwnd (and pathpool-cc). */
		w = pp_clamp_w(v[k].w) >> PP_W_SHIFT;
		w_max = w > w_max ? w : w_max;
		sc = v[k].rtt_us ? pp_olia_score(v, &o, k) : 0;
		best = sc > best ? sc : best;
	}
	/* Counts only (no per-path bitmasks): fewer distinct constants for the BPF verifier. */
	PP_UNROLL
	for (k = 0; k < PP_MAX_SF; k++) {
		int m;

		if (k >= nsf)
			break;
		if (!pp_participates(v, k, i))
			continue;
		m = (pp_clamp_w(v[k].w) >> PP_W_SHIFT) == w_max;
		n_m += m;
		n_bm += !m && v[k].rtt_us && pp_olia_score(v, &o, k) == best;
	}
	w_i = pp_clamp_w(v[i].w);
	score_i = pp_olia_score(v, &o, i);
	i_in_m = (w_i >> PP_W_SHIFT) == w_max;
	i_in_bm = !i_in_m && score_i == best;
	first = pp_over_s2(pp_norm_b(&o, i), o.sum_t);
	if (!n)
		n = 1;
	if (i_in_bm && n_bm) {
		a_mag = (1ULL << (PP_INC_SHIFT + PP_W_SHIFT)) / (n * n_bm) / w_i;
		return (pp_s64)(first + a_mag);
	}
	if (i_in_m && n_bm && n_m) {
		a_mag = (1ULL << (PP_INC_SHIFT + PP_W_SHIFT)) / (n * n_m) / w_i;
		return (pp_s64)first - (pp_s64)a_mag;
	}
	return (pp_s64)first;
}

/* ----------------------------------------------------------------- BALIA -------------------- */

/*
 * Peng, Walid, Hwang, Low (seed 004 eq. 1-2; seed 002 slide "Balia"), x_k = w_k / rtt_k:
 *   alpha_r = max_k x_k / x_r
 *   per ACK on r:  w_r += x_r / (rtt_r (sum_k x_k)^2) * (1 + alpha_r)/2 * (4 + alpha_r)/5
 *   per loss on r: w_r -= w_r/2 * min(alpha_r, 3/2)
 * In normalised form x_r/(rtt_r (sum x)^2) = b_r / S^2 and alpha_r = max_t / t_r.
 */
PP_INLINE pp_u64 pp_balia_alpha_q16(const struct pp_norm *o, int i)
{
	pp_u64 a;

	if (!o->t[i])
		return PP_BALIA_ALPHA_MAX_Q16;
	a = (o->max_t << 16) / o->t[i];
	return a > PP_BALIA_ALPHA_MAX_Q16 ? PP_BALIA_ALPHA_MAX_Q16 : a;
}

PP_INLINE pp_s64 pp_balia_inc(const struct pp_sf_view *v, int nsf, int i)
{
	struct pp_norm o;
	pp_u64 base, alpha, f;

	if (!v[i].rtt_us)
		return pp_reno_inc(v[i].w);
	pp_normalise(v, nsf, i, &o);
	base = pp_over_s2(pp_norm_b(&o, i), o.sum_t);
	alpha = pp_balia_alpha_q16(&o, i);
	/* (1+a)(4+a)/10 in q16; a <= 2^15 keeps the product below 2^63. */
	f = ((PP_W_ONE + alpha) * (4 * PP_W_ONE + alpha) / 10) >> 16;
	/* base <= 2^32 and f can be large; divide first when the product would overflow. */
	if (f > (1ULL << 31))
		base = (base >> 16) * f;
	else
		base = (base * f) >> 16;
	return (pp_s64)(base > (pp_u64)PP_INC_ONE ? (pp_u64)PP_INC_ONE : base);
}

/*
 * BALIA's decrease as a new ssthresh (q16):
 *   continuous (paper):   w - w/2 * min(alpha, 3/2), floored at 1 segment with several
 *                         subflows and at 2 (Linux) on one (pathpool-cc's choice);
 *   quantised (v0.95 kernel mptcp_balia.c): alpha truncated to an integer, so the decrease is
 *   w/2 (alpha < 2) or 3w/4 (alpha >= 2), and the floor is 1 segment.
 */
PP_INLINE pp_u64 pp_balia_ssthresh(const struct pp_sf_view *v, int nsf, int i, int quantised)
{
	struct pp_norm o;
	pp_u64 w = pp_clamp_w(v[i].w), alpha, m, dec, res, floor;

	pp_normalise(v, nsf, i, &o);
	/* alpha in q24 here (only min(alpha, 3/2) matters, so no overflow). */
	if (!v[i].rtt_us)
		alpha = PP_R_ONE;
	else if (!o.t[i] || o.max_t >= 2 * o.t[i])
		alpha = 2 * PP_R_ONE;
	else
		alpha = (o.max_t << PP_R_SHIFT) / o.t[i];
	if (quantised)
		alpha = alpha & ~(PP_R_ONE - 1);
	m = alpha < (3 * PP_R_ONE / 2) ? alpha : (3 * PP_R_ONE / 2);
	dec = ((w >> 1) * m) >> PP_R_SHIFT;
	res = w > dec ? w - dec : 0;
	/* pathpool-cc's floor: 1 segment when the connection has more than one subflow (as the
	 * v0.95 code lets it fall), Linux's 2 on a single path (so BALIA is Reno there). */
	floor = (quantised || o.n_part > 1) ? PP_MIN_CWND_W : PP_MIN_SSTHRESH_W;
	return res < floor ? floor : res;
}

/* ----------------------------------------------------------------- RSF ---------------------- */

/*
 * Pokhrel & Williamson (seed 001) eq. (1), RSF-DB:  w_i += (1/w_i) * min{1, (d - q_i)/q_i}
 * and eq. (2), RSF-LB:  w_i += (1/w_i) * min{1, (mu - L_i)/L_i}, L_i = lambda_i l_i (pkt/s).
 * Both factors lie in (-1, 1] for d, mu > 0; q = 0 or L = 0 gives the factor 1 (the limit).
 * The factor is computed in q32 and applied with 24 bits, so its error is below 2^-24.
 */
PP_INLINE pp_s64 pp_rsf_factor_q32(pp_u64 target, pp_u64 measured)
{
	pp_u64 mag;

	if (!measured || target >= 2 * measured)
		return PP_INC_ONE;
	/* target and measured stay below 2^31 (us up to 2^24; pkt/s q16 up to 2^31). */
	if (target >= measured) {
		mag = ((target - measured) << 32) / measured;
		return (pp_s64)(mag > (pp_u64)PP_INC_ONE ? (pp_u64)PP_INC_ONE : mag);
	}
	mag = ((measured - target) << 32) / measured;
	return -(pp_s64)mag;
}

/* inc * factor, factor in q32 with |factor| <= 1. */
PP_INLINE pp_s64 pp_scale_inc(pp_s64 inc, pp_s64 factor_q32)
{
	int neg = (inc < 0) != (factor_q32 < 0);
	pp_u64 a = inc < 0 ? (pp_u64)(-inc) : (pp_u64)inc;
	pp_u64 f = factor_q32 < 0 ? (pp_u64)(-factor_q32) : (pp_u64)factor_q32;

	return pp_neg_if((a * (f >> 8)) >> 24, neg);
}

/* q_us: forward queueing + service delay (see kernel/bpf/pp_common.bpf.h for how it is
 * measured), d_us: target. */
PP_INLINE pp_s64 pp_rsfdb_inc(pp_u64 w, pp_u64 d_us, pp_u64 q_us)
{
	return pp_scale_inc(pp_reno_inc(w), pp_rsf_factor_q32(d_us > (1ULL << 30) ? (1ULL << 30) : d_us, q_us > (1ULL << 30) ? (1ULL << 30) : q_us));
}

/*
 * RSF-LB's loss probability l_i, as pathpool-cc's RsfLb estimates it (crates/pathpool-cc/src/
 * algos/rsf.rs, LossEstimate): a bias-corrected EWMA of the per-packet loss indicator with gain
 * g = 1/loss_window per packet. When the transport's counters say n more packets were resolved
 * (delivered + lost increments), k of them lost, with keep = (1-g)^n:
 *     S  <- keep S  + (k/n)(1 - keep)
 *     Wt <- keep Wt + (1 - keep)
 *     l   = S / Wt
 * S and Wt are kept in q48 (values in [0, 1]); (1-g) is the tunable keep1 in q32, raised to n by
 * squaring (n < 2^20 per update; larger gaps are clamped, where (1-g)^n is 0 anyway for
 * loss_window <= 10^5). Error: each step truncates S and Wt by at most 2^-48 + (1-g)^n 2^-32
 * relative, so l is within ~1e-7 relative of the real-valued estimate (host_test checks the
 * RSF-LB sequences against pathpool-cc).
 */
struct pp_loss_est {
	pp_u32 seen_delivered;
	pp_u32 seen_lost;
	pp_u64 s_q48;
	pp_u64 wt_q48;
};

#define PP_Q48_ONE (1ULL << 48)

/* a * b >> 32 for a < 2^52, b <= 2^32, without overflow. */
PP_INLINE pp_u64 pp_mul_q32(pp_u64 a, pp_u64 b)
{
	return (a >> 32) * b + (((a & 0xffffffffULL) * b) >> 32);
}

/* base^n in q32, base <= 2^32 (q32), n < 2^20. */
PP_INLINE pp_u64 pp_pow_q32(pp_u64 base, pp_u32 n)
{
	pp_u64 r = 1ULL << 32;
	int k;

	if (n >= (1U << 20))
		n = (1U << 20) - 1;
	PP_UNROLL
	for (k = 0; k < 20; k++) {
		if (n & (1U << k))
			r = pp_mul_q32(r, base);
		base = pp_mul_q32(base, base);
	}
	return r;
}

/* Start counting from the transport's current counters (pathpool-cc starts from 0 at the
 * connection's start, which is where the kernel's counters are too). */
PP_INLINE void pp_loss_est_init(struct pp_loss_est *e, pp_u32 delivered, pp_u32 lost)
{
	e->seen_delivered = delivered;
	e->seen_lost = lost;
	e->s_q48 = 0;
	e->wt_q48 = 0;
}

PP_INLINE void pp_loss_est_update(struct pp_loss_est *e, pp_u32 delivered, pp_u32 lost,
				  pp_u64 keep1_q32)
{
	/* Counters only grow (u32 differences also survive a wrap). */
	pp_u32 d = delivered - e->seen_delivered, k = lost - e->seen_lost;
	pp_u64 n = (pp_u64)d + k, keep, one_minus;

	e->seen_delivered = delivered;
	e->seen_lost = lost;
	if (!n)
		return;
	keep = pp_pow_q32(keep1_q32, n > 0xfffff ? 0xfffff : (pp_u32)n) << 16;   /* q48 */
	one_minus = PP_Q48_ONE - keep;
	e->s_q48 = pp_mul_q32(e->s_q48, keep >> 16) + one_minus / n * k;
	e->wt_q48 = pp_mul_q32(e->wt_q48, keep >> 16) + one_minus;
}

/* l = S / Wt in q32 (0 before any packet). */
PP_INLINE pp_u64 pp_loss_est_q32(const struct pp_loss_est *e)
{
	pp_u64 den = e->wt_q48 >> 17;

	if (!den || !e->s_q48)
		return 0;
	if (e->s_q48 >= e->wt_q48)
		return 1ULL << 32;
	return (e->s_q48 << 15) / den;
}

/* lambda_i l_i = (w / srtt) * l in packets/s q24, w in q16 segments, srtt in us. (q24, not
 * the q16 of the other rates: the factor (mu - L)/L near L = mu needs L to ~1e-7.) */
PP_INLINE pp_u64 pp_rsflb_loss_rate_q24(pp_u64 w, pp_u32 srtt_us, pp_u64 l_q32)
{
	pp_u64 num, rtt, q, rate;

	if (!srtt_us || !l_q32)
		return 0;
	rtt = pp_clamp_rtt(srtt_us);
	num = pp_clamp_w(w) * 1000000ULL;            /* < 2^56 */
	q = num / rtt;                               /* packets/s q16 */
	if (q >= (1ULL << 54))
		q = (1ULL << 54) - 1;
	rate = (q << 8) + ((num - q * rtt) << 8) / rtt;   /* q24, < 2^62 */
	return pp_mul_q32(rate, l_q32);
}

/* min{1, (target - measured)/measured} in q32 for any target, measured < 2^63: both are shifted
 * right until measured fits in 31 bits, so the quotient keeps ~30 bits whatever their size. */
PP_INLINE pp_s64 pp_rsf_factor_wide_q32(pp_u64 target, pp_u64 measured)
{
	int b;

	if (!measured || target >= 2 * measured)
		return PP_INC_ONE;
	b = pp_bitlen(measured) - 31;
	if (b > 0) {
		target >>= b;
		measured >>= b;
	}
	return pp_rsf_factor_q32(target, measured);
}

/* RSF-LB (seed 001 eq. 2): w += (1/w) min{1, (mu - L)/L}; mu, L in packets per second q24. */
PP_INLINE pp_s64 pp_rsflb_inc(pp_u64 w, pp_u64 mu_q24, pp_u64 l_q24)
{
	return pp_scale_inc(pp_reno_inc(w), pp_rsf_factor_wide_q32(mu_q24, l_q24));
}

/* ------------------------------------------------ applying an increment to a window ------- */

/*
 * The kernel keeps snd_cwnd as an integer; the fractional part lives in a q32 accumulator
 * frac in [0, 2^32). Adding inc (q32, signed) moves whole segments into cwnd and keeps the
 * remainder, so cwnd + frac/2^32 follows the real-valued window of pathpool-cc exactly up to
 * the increment's own rounding. cwnd never goes below 1.
 */
PP_INLINE void pp_apply_inc(pp_u32 *cwnd, pp_u64 *frac, pp_s64 inc)
{
	pp_u64 f = *frac;
	pp_u32 c = *cwnd;

	if (inc >= 0) {
		f += (pp_u64)inc;
		c += (pp_u32)(f >> 32);
		f &= 0xffffffffULL;
	} else {
		pp_u64 d = (pp_u64)(-inc);
		pp_u64 whole = d >> 32, part = d & 0xffffffffULL;

		if (part > f) {
			f += (1ULL << 32);
			whole++;
		}
		f -= part;
		if (whole >= c) {
			c = 1;
			f = 0;
		} else {
			c -= (pp_u32)whole;
		}
	}
	*cwnd = c;
	*frac = f;
}

/* Window q16 from the kernel's integer cwnd and the q32 fraction. */
PP_INLINE pp_u64 pp_window_q16(pp_u32 cwnd, pp_u64 frac)
{
	return ((pp_u64)cwnd << 16) | ((frac >> 16) & 0xffffULL);
}

#endif /* PP_CC_MATH_H */

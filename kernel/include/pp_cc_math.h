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
 *   - rates:       w * 2^25 / rtt_us, an arbitrary unit: only shares x_k / X enter (q32)
 *   - RTTs/delays: microseconds, u32, clamped to [1, 2^24] us (about 16.8 s)
 *   - rates of events (RSF-LB's lambda*l, mu): packets per second * 2^24 (mu tunable: 2^16)
 * Domain: at most PP_MAX_SF subflows, windows [1, 2^20] segments, RTTs [1, 2^24] us (inputs
 * outside are clamped into it). No intermediate exceeds 2^64 for any input (128-bit products
 * are formed from 64-bit halves where needed); kernel/test/fuzz_test.c drives every function
 * here, and the window glue at the end, with random and extreme inputs under UBSan against
 * long double / 128-bit references.
 *
 * Error bound (tested in host_test.c on pathpool-cc's vectors and in fuzz_test.c on random
 * states with RTT ratios up to 2^10): every per-ACK increment differs from the exact
 * real-number formula by at most
 *       |err| <= 1e-5 |exact| + 2^-24 segments                       (reno, lia, olia, balia,
 *                                                                      rsf-db)
 *       |err| <= 1e-5 |exact| + 2^-24 + (mu/L + 1) 2^-16 / w^2       (rsf-lb: the q16 window
 *                                                 enters lambda = w/srtt, amplified by mu/L)
 * A decrease (new ssthresh) differs by at most 1e-5 |exact| + 2^-15 segments. Error sources:
 * the q16 input window, the rate truncation (< 2^-17 relative, see pp_normalise) and the
 * share divisions (2^-28 relative).
 */
#ifndef PP_CC_MATH_H
#define PP_CC_MATH_H

#ifdef __bpf__
#define PP_INLINE static __always_inline
/* Unrolled loops give the verifier constant indexes, so it can prune paths. */
#define PP_UNROLL _Pragma("unroll")
/*
 * The loops over the slots (pp_normalise, and the per-ACK lists of OLIA, BALIA and Max). Kept
 * loops where the verifier accepts them (OLIA, BALIA, Max: one copy of the body instead of
 * eight; in the paced bench a callback runs a few hundred times a second per connection, so
 * its code is fetched cold on nearly every call); unrolled for LIA, whose ratio function with
 * its loops as loops exceeded the verifier's 1M-instruction budget.
 */
#ifndef PP_SLOT_LOOP
#define PP_SLOT_LOOP PP_UNROLL
#endif
/* A global BPF function: verified once on its own, which keeps the callers' state space small
 * (an includer that calls none, pp_probe.bpf.c, makes them static so that none is emitted). */
#ifndef PP_SUBPROG
#define PP_SUBPROG __attribute__((noinline))
#endif
/* pp_lia_term's kind: a global function unless the object says otherwise (pp_max.bpf.c). */
#ifndef PP_LIA_TERM
#define PP_LIA_TERM PP_SUBPROG
#endif
#else
#define PP_SUBPROG static inline
#define PP_LIA_TERM static inline
#define PP_INLINE static inline
#define PP_UNROLL
#define PP_SLOT_LOOP
#endif

typedef unsigned long long pp_u64;
typedef long long pp_s64;
typedef unsigned int pp_u32;

/* Subflows coupled per connection: 8, Linux MPTCP's own maximum (`ip mptcp limits`); further
 * subflows run Reno. A power of two (slot indexes are masked for the verifier). */
#define PP_MAX_SF 8
#define PP_W_SHIFT 16
#define PP_W_ONE (1ULL << PP_W_SHIFT)
#define PP_INC_SHIFT 32
#define PP_INC_ONE (1LL << PP_INC_SHIFT)
#define PP_R_SHIFT 24
#define PP_R_ONE (1ULL << PP_R_SHIFT)
#define PP_W_MAX (1ULL << (20 + PP_W_SHIFT))
#define PP_RTT_MAX_US (1U << 24)

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

/* All slots of a connection, as the BPF global functions take them. */
struct pp_vset {
	struct pp_sf_view v[PP_MAX_SF];
};

/*
 * x < y for any two u64, as 0 or 1, without a branch (Hacker's Delight 2-12: the borrow out of
 * x - y). The clamps below are built from it: as branches, each clamp of a loaded value gave the
 * verifier three paths, two of them ending in a constant; a later comparison of such constants
 * is decided, which made it keep the paths apart, and with a clamp per slot and pass the paths
 * of OLIA's inline increment multiplied past its 1M-instruction budget.
 */
PP_INLINE pp_u64 pp_below(pp_u64 x, pp_u64 y)
{
	return ((~x & y) | ((~x | y) & (x - y))) >> 63;
}

/* lt ? y : x for lt in {0, 1}, without a branch. */
PP_INLINE pp_u64 pp_pick(pp_u64 x, pp_u64 y, pp_u64 lt)
{
	return x ^ ((x ^ y) & ((pp_u64)0 - lt));
}

/* min(max(x, lo), hi) for lo <= hi, without a branch. */
PP_INLINE pp_u64 pp_clamp_u64(pp_u64 x, pp_u64 lo, pp_u64 hi)
{
	x = pp_pick(x, lo, pp_below(x, lo));
	return pp_pick(x, hi, pp_below(hi, x));
}

PP_INLINE pp_u32 pp_clamp_rtt(pp_u32 rtt_us)
{
	return (pp_u32)pp_clamp_u64(rtt_us, 1, PP_RTT_MAX_US);
}

PP_INLINE pp_u64 pp_clamp_w(pp_u64 w)
{
	return pp_clamp_u64(w, PP_MIN_CWND_W, PP_W_MAX);
}

/* Negate-aware arithmetic: BPF (clang 14, cpu v1-v3) has no signed division. */
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

/* a * b as a 128-bit (hi, lo) pair: BPF has no 128-bit arithmetic. */
PP_INLINE void pp_mul_64x64(pp_u64 a, pp_u64 b, pp_u64 *hi, pp_u64 *lo)
{
	pp_u64 a0 = a & 0xffffffffULL, a1 = a >> 32, b0 = b & 0xffffffffULL, b1 = b >> 32;
	pp_u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	pp_u64 mid = (p00 >> 32) + (p01 & 0xffffffffULL) + (p10 & 0xffffffffULL);

	*lo = (mid << 32) | (p00 & 0xffffffffULL);
	*hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* ------------------------------------------------ shared rate normalisation ---------------- */

/*
 * Every coupled formula below depends on the rates x_k = w_k / rtt_k only through the shares
 * x_k / X (X = sum of the rates) and on w_r itself:
 *   LIA   max_k(w_k/rtt_k^2) / X^2          = max_k (x_k/X)^2 / w_k
 *   OLIA  (w_r/rtt_r^2) / X^2               = (x_r/X)^2 / w_r
 *   BALIA x_r/(rtt_r X^2) (1+a)(4+a)/10     = ((x_r+x_max)/X) ((4x_r+x_max)/X) / (10 w_r)
 * (a = x_max/x_r), so no time unit and no RTT ratio enters. t_k = w_k * 2^25 / rtt_k (w in q16,
 * rtt in us) is x_k in an arbitrary unit: < 2^61 each, their sum < 2^63; its truncation is at
 * most 2^-17 relative (w = 1 segment, rtt = 2^24 us) and far less in practice. The shares are
 * quotients of such numbers, computed by pp_frac_q32 to 2^-29 relative.
 */
#define PP_T_SHIFT 25

struct pp_norm {
	pp_u64 t[PP_MAX_SF];   /* rate, arbitrary unit; 0 = no RTT sample / not taking part */
	pp_u64 sum_t;
	pp_u64 sum_w;   /* q16, every participating subflow (RTT known or not) */
	pp_u64 max_t;
	int n;          /* participating subflows with an RTT sample */
	int n_part;     /* participating subflows */
};

/* A path's rate t_k = w_k 2^25 / rtt_k (0 without an RTT sample). */
PP_INLINE pp_u64 pp_rate_t(pp_u64 w, pp_u32 rtt_us)
{
	return rtt_us ? (pp_clamp_w(w) << PP_T_SHIFT) / pp_clamp_rtt(rtt_us) : 0;
}

/* A subflow takes part in the sums if it is active or is the one the event belongs to. */
PP_INLINE int pp_participates(const struct pp_sf_view *v, int k, int i)
{
	return k == i || v[k].active;
}

PP_INLINE void pp_normalise(const struct pp_sf_view *v, int nsf, int i, struct pp_norm *o)
{
	int k;

	o->sum_t = 0;
	o->sum_w = 0;
	o->max_t = 0;
	o->n = 0;
	o->n_part = 0;
	PP_SLOT_LOOP
	for (k = 0; k < PP_MAX_SF; k++) {
		pp_u64 t;

		o->t[k] = 0;
		if (k >= nsf)
			continue;
		if (!pp_participates(v, k, i))
			continue;
		o->n_part++;
		o->sum_w += pp_clamp_w(v[k].w);
		if (!v[k].rtt_us)
			continue;
		t = pp_rate_t(v[k].w, v[k].rtt_us);
		o->t[k] = t;
		o->sum_t += t;
		if (t > o->max_t)
			o->max_t = t;
		o->n++;
	}
}

/* 1 if x != 0, else 0, for x < 2^63, without a branch (BPF has no set-on-condition). */
PP_INLINE pp_u64 pp_nonzero(pp_u64 x)
{
	return (x + 0x7fffffffffffffffULL) >> 63;
}

/*
 * Bits needed for x (0 for 0). Without branches: each step's shift is 0 or its width,
 * computed arithmetically, so the verifier follows one path instead of 2^6 paths that each
 * end in a different constant (which it could not prune, and which multiplied every path
 * through OLIA's inline increment past its 1M-instruction budget).
 */
PP_INLINE int pp_bitlen(pp_u64 x)
{
	pp_u64 n = 0, s;

	s = pp_nonzero(x >> 32) << 5; n += s; x >>= s;
	s = pp_nonzero(x >> 16) << 4; n += s; x >>= s;
	s = pp_nonzero(x >> 8) << 3; n += s; x >>= s;
	s = pp_nonzero(x >> 4) << 2; n += s; x >>= s;
	s = pp_nonzero(x >> 2) << 1; n += s; x >>= s;
	s = pp_nonzero(x >> 1); n += s; x >>= s;
	return (int)(n + x);
}

/* a / b in q32 for a <= 7 b (b > 0): both are shifted right until b < 2^29 (relative error
 * < 2^-28), so a * 2^32 stays below 2^64. */
PP_INLINE pp_u64 pp_frac_q32(pp_u64 a, pp_u64 b)
{
	int sh;

	if (!b)
		return 0;
	sh = pp_bitlen(b) - 29;
	if (sh > 0) {
		a >>= sh;
		b >>= sh;
	}
	if (a > 7 * b)
		a = 7 * b;
	return (a << 32) / b;
}

/* (u/2^32) (v/2^32) / (den * w) as a q32 increment, w in q16 segments, u, v < 2^35 (shares up
 * to 7), capped at 1 segment. The 128-bit product keeps every bit of small shares. */
PP_INLINE pp_u64 pp_share2_over_w(pp_u64 u, pp_u64 v, pp_u64 den, pp_u64 w)
{
	pp_u64 hi, lo, m, r;

	pp_mul_64x64(u, v, &hi, &lo);
	m = (hi << 32) | (lo >> 32);          /* u v / 2^32: q32, < 2^38 */
	r = (m << 16) / (den * pp_clamp_w(w)); /* q32 / (den w) with w's 2^16 */
	return r > (pp_u64)PP_INC_ONE ? (pp_u64)PP_INC_ONE : r;
}

/* ----------------------------------------------------------------- LIA ---------------------- */

/*
 * What the connection keeps (v0.95 mptcp_coupled.c, and pathpool-cc's Lia): alpha / w_total at
 * the last recomputation = max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2 = max_k (x_k/X)^2 / w_k,
 * as a q32 increment (RFC 6356 Section 3). Subflows without an RTT sample are left out.
 * No RTT sample anywhere: "infinite" (1 segment), so the min below gives Reno's 1/w_i.
 */
/*
 * One path's (x_k/X)^2 / w_k, as a global BPF function taking only numbers: the unrolled loop
 * below then holds a call instead of eight copies of the share arithmetic (LIA's ratio
 * function shrinks from 710 to 341 instructions plus this one of 89, fetched cold on every
 * recomputation; as a plain loop the verifier refused it).
 */
PP_LIA_TERM pp_u64 pp_lia_term(pp_u64 t, pp_u64 sum_t, pp_u64 w)
{
	pp_u64 u = pp_frac_q32(t, sum_t);

	return pp_share2_over_w(u, u, 1, w);
}

PP_INLINE pp_u64 pp_lia_ratio(const struct pp_sf_view *v, int nsf, int i)
{
	struct pp_norm o;
	pp_u64 best = 0;
	int k;

	pp_normalise(v, nsf, i, &o);
	if (!o.n || !o.sum_t)
		return (pp_u64)PP_INC_ONE;
	PP_UNROLL
	for (k = 0; k < PP_MAX_SF; k++) {
		pp_u64 c;

		if (!o.t[k])
			continue;
		c = pp_lia_term(o.t[k], o.sum_t, v[k].w);
		best = c > best ? c : best;
	}
	return best;
}

/*
 * The same ratio over a list of paths (only those with an RTT sample are kept), the event's
 * own path first: what the BPF side builds straight from the connection's slots for Max on
 * every ACK (pp_rate_slots_inc in pp_common.bpf.h), so it copies no views and calls no global
 * function. Equal to pp_lia_ratio on the views the list was made from (fuzz_test checks it).
 */
struct pp_rate_list {
	pp_u64 w[PP_MAX_SF];
	pp_u64 t[PP_MAX_SF];
	pp_u64 sum_t;
	pp_u32 n;
};

PP_INLINE void pp_rate_list_init(struct pp_rate_list *l)
{
	l->sum_t = 0;
	l->n = 0;
}

PP_INLINE void pp_rate_list_add(struct pp_rate_list *l, pp_u64 w, pp_u32 rtt_us)
{
	pp_u32 q = l->n & (PP_MAX_SF - 1);

	if (!rtt_us)
		return;
	l->w[q] = w;
	l->t[q] = pp_rate_t(w, rtt_us);
	l->sum_t += l->t[q];
	l->n++;
}

PP_INLINE pp_u64 pp_rate_list_lia_ratio(const struct pp_rate_list *l)
{
	pp_u64 best = 0, c;
	pp_u32 q;

	if (!l->sum_t)
		return (pp_u64)PP_INC_ONE;
	PP_SLOT_LOOP
	for (q = 0; q < PP_MAX_SF; q++) {
		if (q >= l->n)
			break;
		c = pp_lia_term(l->t[q], l->sum_t, l->w[q]);
		best = c > best ? c : best;
	}
	return best;
}

/* RFC 6356 alpha = w_total * ratio (q32, for inspection; w_total over the subflows with an
 * RTT sample as pathpool-cc's Lia::alpha). */
PP_INLINE pp_u64 pp_lia_alpha(const struct pp_sf_view *v, int nsf, int i)
{
	pp_u64 ratio = pp_lia_ratio(v, nsf, i), tot = 0;
	int k;

	for (k = 0; k < nsf && k < PP_MAX_SF; k++)
		if (pp_participates(v, k, i) && v[k].rtt_us)
			tot += pp_clamp_w(v[k].w);
	return tot ? (ratio >> 8) * (tot >> 8) : 1ULL << 32;
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
/*
 * B compares l_k / rtt_k^2 across paths. It is done exactly, by cross-multiplication in 128-bit
 * integers (l_a rtt_b^2 vs l_b rtt_a^2, l < 2^64 bytes, rtt < 2^32 us), as pathpool-cc and v0.95
 * do. (An earlier version scaled l by (rtt_min/rtt)^2 in q24: ((l r) >> 8) r overflowed u64 as
 * soon as l > 2^24 bytes on the shortest path, i.e. 16 MB between two losses, and B was wrong.)
 */
/*
 * Sign of l_a / rtt_a^2 - l_b / rtt_b^2 (-1, 0, 1), exact. Inline (it was a global BPF function:
 * up to five calls per OLIA ACK, each a call and a return through the return thunk). The
 * 128-bit products are needed only when one could exceed 64 bits: with both l < 2^24 bytes and
 * both rtt^2 < 2^40 (rtt < 1.04 s), or both l < 2^32 and both rtt^2 < 2^32 (rtt < 65.5 ms), each
 * product is below 2^64 and a plain 64-bit compare is the same comparison (fuzz_test checks it
 * against 128-bit integers, the fast path included).
 */
/* The 128-bit comparison: a global BPF function (rarely reached, so its code stays out of the
 * per-ACK path: OLIA compares up to 2n + 1 times per ACK, each inline). */
PP_SUBPROG int pp_olia_cmp_wide(pp_u64 la, pp_u32 rtta, pp_u64 lb, pp_u32 rttb)
{
	pp_u64 ah, al, bh, bl, ra2 = (pp_u64)rtta * rtta, rb2 = (pp_u64)rttb * rttb;

	pp_mul_64x64(la, rb2, &ah, &al);
	pp_mul_64x64(lb, ra2, &bh, &bl);
	if (ah != bh)
		return ah > bh ? 1 : -1;
	if (al != bl)
		return al > bl ? 1 : -1;
	return 0;
}

PP_INLINE int pp_olia_cmp(pp_u64 la, pp_u32 rtta, pp_u64 lb, pp_u32 rttb)
{
	pp_u64 al, bl, ra2 = (pp_u64)rtta * rtta, rb2 = (pp_u64)rttb * rttb;
	pp_u64 l_or = la | lb, r_or = ra2 | rb2;

	if ((!(l_or >> 24) && !(r_or >> 40)) || (!(l_or >> 32) && !(r_or >> 32))) {
		al = la * rb2;
		bl = lb * ra2;
		return al > bl ? 1 : (al < bl ? -1 : 0);
	}
	return pp_olia_cmp_wide(la, rtta, lb, rttb);
}

/* A path OLIA counts: taking part and with an RTT sample (kernel mptcp_olia_sk_can_send). */
PP_INLINE int pp_olia_counted(const struct pp_sf_view *v, int k, int i)
{
	return pp_participates(v, k, i) && v[k].rtt_us;
}

/*
 * OLIA's increment in two passes over the paths taking part, written so that the BPF side can
 * run them inline in cong_avoid, straight over the connection's slots (kernel/bpf/
 * pp_olia_slots_inc in pp_olia.bpf.c), and the host over views (pp_olia_inc below), with the
 * same functions (pp_olia_begin / pp_olia_sib / pp_olia_end):
 *   pass 1 (r first, then each sibling taking part): n, the rate sum S, the largest
 *          whole-segment window w_max and the largest l/rtt^2 (as one (l, rtt) pair) over the
 *          counted paths (pp_olia_see);
 *   pass 2 (every counted path): |M| and |B\M| against those maxima (pp_olia_count);
 *   pp_olia_finish: (x_r/S)^2 / w_r plus alpha_r / w_r.
 * Only counts leave the passes, no sets: a bitmask of slots built from the slot number is a
 * constant to the verifier, and the masks' combinations of constants over 8 slots made it
 * walk more than its 1M-instruction budget (the earlier one-pass code ran its scan as a
 * global function, one BPF-to-BPF call per path plus one for the increment). r's own
 * membership is recomputed from its own numbers in pp_olia_finish.
 */
struct pp_olia_acc {
	pp_u64 sum_t;     /* S: sum of the counted paths' rates */
	pp_u64 w_max;     /* largest whole-segment window among the counted paths */
	pp_u64 best_l;    /* l_r / rtt_r^2 maximum: its l ... */
	pp_u32 best_rtt;  /* ... and its rtt */
	pp_u32 n_part;    /* paths taking part, RTT sample or not (OLIA's n) */
	pp_u32 n_m;       /* pass 2: |M| */
	pp_u32 n_bm;      /* pass 2: |B\M| */
};

/* M compares whole segments, as v0.95 does with snd_cwnd (and pathpool-cc). */
PP_INLINE pp_u64 pp_olia_segs(pp_u64 w)
{
	return pp_clamp_w(w) >> PP_W_SHIFT;
}

/* Pass 1, one more counted path (taking part, rtt_us != 0). */
PP_INLINE void pp_olia_see(struct pp_olia_acc *a, pp_u64 w, pp_u32 rtt_us, pp_u64 lr, pp_u64 t)
{
	pp_u64 segs = pp_olia_segs(w);

	a->sum_t += t;
	if (segs > a->w_max)
		a->w_max = segs;
	if (pp_olia_cmp(lr, rtt_us, a->best_l, a->best_rtt) > 0) {
		a->best_l = lr;
		a->best_rtt = rtt_us;
	}
}

/* Pass 2, one counted path, against pass 1's maxima. */
PP_INLINE void pp_olia_count(struct pp_olia_acc *a, pp_u64 w, pp_u32 rtt_us, pp_u64 lr)
{
	if (pp_olia_segs(w) == a->w_max)
		a->n_m++;
	else if (pp_olia_cmp(lr, rtt_us, a->best_l, a->best_rtt) == 0)
		a->n_bm++;
}

/*
 * The increment of path r (counted: rtt_us != 0, t = its rate) after both passes, r included in
 * them. (x_r/S)^2 / w_r = (t_r/S)^2 / w_r (pp_share2_over_w), and alpha_r / w_r with one
 * division: floor(floor(x / a) / b) = floor(x / (a b)) for positive integers, and
 * n |set| w_r <= 8 * 8 * 2^36 fits (fuzz_test checks it against the two divisions).
 */
PP_INLINE pp_s64 pp_olia_finish(const struct pp_olia_acc *a, pp_u64 w, pp_u32 rtt_us, pp_u64 lr,
				pp_u64 t)
{
	/* n >= 1: r itself was seen. The counts enter only as numbers, never in a branch: to
	 * the verifier they are constants that differ between paths, and a branch on them would
	 * make it keep every combination apart. */
	pp_u64 w_r = pp_clamp_w(w), n = a->n_part, u, first;

	u = pp_frac_q32(t, a->sum_t);
	first = a->sum_t ? pp_share2_over_w(u, u, 1, w_r) : 0;
	if (pp_olia_segs(w) == a->w_max)   /* r in M (n_m >= 1); alpha_r < 0 only if B\M != {} */
		return (pp_s64)first -
		       (pp_s64)(((1ULL << (PP_INC_SHIFT + PP_W_SHIFT)) / (n * a->n_m * w_r)) *
				pp_nonzero(a->n_bm));
	if (pp_olia_cmp(lr, rtt_us, a->best_l, a->best_rtt) == 0)   /* r in B\M: n_bm >= 1 */
		return (pp_s64)(first + (1ULL << (PP_INC_SHIFT + PP_W_SHIFT)) / (n * a->n_bm * w_r));
	return (pp_s64)first;
}

/*
 * r's counted siblings (taking part, with an RTT sample), copied in slot order by pass 1
 * (pp_olia_sib), so that pass 2 and the finish see the same numbers even while a sibling
 * publishes on another CPU.
 */
struct pp_olia_sibs {
	pp_u64 w[PP_MAX_SF];
	pp_u64 lr[PP_MAX_SF];
	pp_u32 rtt[PP_MAX_SF];
	pp_u32 n;
};

/* Start with r itself (counted: rtt_us != 0, t its rate): the first maxima are r's. */
PP_INLINE void pp_olia_begin(struct pp_olia_acc *a, struct pp_olia_sibs *s, pp_u64 w,
			     pp_u32 rtt_us, pp_u64 lr, pp_u64 t)
{
	a->sum_t = t;
	a->w_max = pp_olia_segs(w);
	a->best_l = lr;
	a->best_rtt = rtt_us;
	a->n_part = 1;
	a->n_m = 0;
	a->n_bm = 0;
	s->n = 0;
}

/* Pass 1 on one sibling taking part: counted in n; with an RTT sample, copied and seen. */
PP_INLINE void pp_olia_sib(struct pp_olia_acc *a, struct pp_olia_sibs *s, pp_u64 w,
			   pp_u32 rtt_us, pp_u64 lr)
{
	pp_u32 q = s->n & (PP_MAX_SF - 1);

	a->n_part++;
	if (!rtt_us)
		return;
	s->w[q] = w;
	s->rtt[q] = rtt_us;
	s->lr[q] = lr;
	s->n++;
	pp_olia_see(a, w, rtt_us, lr, pp_rate_t(w, rtt_us));
}

/* Pass 2 over r and the copied siblings, then r's increment. */
PP_INLINE pp_s64 pp_olia_end(struct pp_olia_acc *a, const struct pp_olia_sibs *s, pp_u64 w,
			     pp_u32 rtt_us, pp_u64 lr, pp_u64 t)
{
	pp_u32 q;

	pp_olia_count(a, w, rtt_us, lr);
	PP_SLOT_LOOP
	for (q = 0; q < PP_MAX_SF; q++) {
		if (q >= s->n)
			break;
		pp_olia_count(a, s->w[q], s->rtt[q], s->lr[q]);
	}
	return pp_olia_finish(a, w, rtt_us, lr, t);
}

/* v holds PP_MAX_SF views (the first nsf in use). The BPF side runs the same begin / sib /
 * end straight over the connection's slots (pp_olia_slots_inc in pp_olia.bpf.c). */
PP_INLINE pp_s64 pp_olia_inc(const struct pp_sf_view *v, int nsf, int i)
{
	struct pp_olia_acc a;
	struct pp_olia_sibs s;
	pp_u64 t_i;
	int k;

	if (!v[i].rtt_us)
		return pp_reno_inc(v[i].w);   /* no RTT on this path yet: Reno */
	t_i = pp_rate_t(v[i].w, v[i].rtt_us);
	pp_olia_begin(&a, &s, v[i].w, v[i].rtt_us, v[i].lr, t_i);
	for (k = 0; k < nsf && k < PP_MAX_SF; k++)
		if (k != i && v[k].active)
			pp_olia_sib(&a, &s, v[k].w, v[k].rtt_us, v[k].lr);
	return pp_olia_end(&a, &s, v[i].w, v[i].rtt_us, v[i].lr, t_i);
}

/*
 * OLIA's inter-loss marks of one path (v0.95 mptcp_loss1..3, pathpool-cc's Marks): byte
 * positions in the path's acknowledged data. loss3 follows every ACK the algorithm sees (slow
 * start included); on entry to recovery or loss the marks advance (only if bytes were acked
 * since the last mark); l_r = max(loss2 - loss1, loss3 - loss2).
 */
struct pp_olia_marks {
	pp_u64 loss1;
	pp_u64 loss2;
	pp_u64 loss3;
};

PP_INLINE void pp_olia_marks_init(struct pp_olia_marks *m, pp_u64 pos)
{
	m->loss1 = pos;
	m->loss2 = pos;
	m->loss3 = pos;
}

PP_INLINE void pp_olia_marks_ack(struct pp_olia_marks *m, pp_u64 pos)
{
	if (pos > m->loss3)
		m->loss3 = pos;
}

PP_INLINE void pp_olia_marks_loss(struct pp_olia_marks *m)
{
	if (m->loss3 != m->loss2) {
		m->loss1 = m->loss2;
		m->loss2 = m->loss3;
	}
}

PP_INLINE pp_u64 pp_olia_marks_l(const struct pp_olia_marks *m)
{
	pp_u64 l1 = m->loss2 - m->loss1, l2 = m->loss3 - m->loss2;

	return l1 > l2 ? l1 : l2;
}

/* ----------------------------------------------------------------- BALIA -------------------- */

/*
 * Peng, Walid, Hwang & Low 2016, eq. (1)-(2); Walid et al. 2014, slide "Balia"; x_k = w_k / rtt_k:
 *   alpha_r = max_k x_k / x_r
 *   per ACK on r:  w_r += x_r / (rtt_r (sum_k x_k)^2) * (1 + alpha_r)/2 * (4 + alpha_r)/5
 *   per loss on r: w_r -= w_r/2 * min(alpha_r, 3/2)
 * In normalised form x_r/(rtt_r (sum x)^2) = b_r / S^2 and alpha_r = max_t / t_r.
 */
PP_INLINE pp_s64 pp_balia_inc(const struct pp_sf_view *v, int nsf, int i)
{
	struct pp_norm o;
	pp_u64 u, w;

	if (!v[i].rtt_us)
		return pp_reno_inc(v[i].w);
	pp_normalise(v, nsf, i, &o);
	if (!o.sum_t)
		return pp_reno_inc(v[i].w);
	/* ((x_r + x_max)/X) ((4 x_r + x_max)/X) / (10 w_r): shares <= 2 and <= 5. */
	u = pp_frac_q32(o.t[i] + o.max_t, o.sum_t);
	w = pp_frac_q32(4 * o.t[i] + o.max_t, o.sum_t);
	return (pp_s64)pp_share2_over_w(u, w, 10, v[i].w);
}

/*
 * The same increment from a pp_rate_list whose first entry is r itself (with an RTT sample),
 * the others the paths taking part: pp_balia_inc on the views the list was made from, bit for
 * bit (fuzz_test fuzz_masked_views); the BPF side builds the list straight from the slots.
 */
PP_INLINE pp_s64 pp_balia_list_inc(const struct pp_rate_list *l)
{
	pp_u64 max_t = 0, u, w;
	pp_u32 q;

	PP_SLOT_LOOP
	for (q = 0; q < PP_MAX_SF; q++) {
		if (q >= l->n)
			break;
		max_t = l->t[q] > max_t ? l->t[q] : max_t;
	}
	u = pp_frac_q32(l->t[0] + max_t, l->sum_t);
	w = pp_frac_q32(4 * l->t[0] + max_t, l->sum_t);
	return (pp_s64)pp_share2_over_w(u, w, 10, l->w[0]);
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
		alpha = pp_frac_q32(o.max_t, o.t[i]) >> (32 - PP_R_SHIFT);
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

/* ------------------------------------- EWTCP, Coupled, Semicoupled, Max (NSDI 2011) ------- */

/*
 * The four earlier designs Peng et al. 2016 model in Section II-B, in the standard forms of
 * Wischik, Raiciu, Greenhalgh & Handley, "Design, implementation and evaluation of congestion
 * control for multipath TCP", NSDI 2011, Section 2, as
 * crates/pathpool-cc/src/algos/nsdi2011.rs implements them. Per segment acknowledged on r
 * (w_total = sum of the windows of the subflows taking part, pp_participates):
 *   EWTCP        w_r += a / w_r           loss: ssthresh = max(w_r/2, 2)      a = 1/n^2 default
 *   Coupled      w_r += 1 / w_total       loss: ssthresh = max(w_r - w_total/2, floor)
 *   Semicoupled  w_r += a / w_total       loss: ssthresh = max(w_r/2, 2)      a = 1 default
 *   Max          w_r += max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2   (RFC 6356 Section 3
 *                without the min(., 1/w_r) cap; Reno's 1/w_r if r has no RTT sample)
 *                                         loss: ssthresh = max(w_r/2, 2)
 * Coupled's floor is 1 segment when >1 subflow takes part (Peng et al. 2016, Section V: "the
 * minimum ssthresh is set to 1 instead of 2 when more than 1 path is available"), Linux's 2 on
 * a single path. The weights a are q32; the kernel accepts a in [1e-4, 2] (PP_A_MIN_Q32 ..
 * PP_A_MAX_Q32): below 1e-4 the q32 rounding of a alone would exceed the 1e-5 relative bound,
 * above 2 one step could exceed the glue's cap of 2 segments per segment acknowledged
 * (PP_INC_CAP). Error: a/w and a/w_total are one division of a 2^48-scaled numerator, exact to
 * 2^-32 segments; Max is LIA's ratio (same bound as LIA).
 */
#define PP_A_MIN_Q32 429497ULL              /* ceil(1e-4 * 2^32) */
#define PP_A_MAX_Q32 (2ULL << PP_INC_SHIFT) /* 2 */

PP_INLINE pp_u64 pp_clamp_a(pp_u64 a_q32)
{
	return pp_clamp_u64(a_q32, PP_A_MIN_Q32, PP_A_MAX_Q32);
}

/* EWTCP's default weight 1/n^2 (q32), n = subflows of the connection (at least 1). */
PP_INLINE pp_u64 pp_ewtcp_default_a_q32(pp_u32 n)
{
	if (n < 1)
		n = 1;
	if (n > PP_MAX_SF)
		n = PP_MAX_SF;
	return (1ULL << PP_INC_SHIFT) / ((pp_u64)n * n);
}

/* Bits set in a slot mask (at most PP_MAX_SF = 8 bits): the subflows a connection couples. */
PP_INLINE pp_u32 pp_mask_count(pp_u32 mask)
{
	pp_u32 m = mask & ((1U << PP_MAX_SF) - 1);

	m = m - ((m >> 1) & 0x55U);
	m = (m & 0x33U) + ((m >> 2) & 0x33U);
	return (m + (m >> 4)) & 0x0fU;
}

/* EWTCP: a / w_r (q32), w_r in q16. (a << 16) < 2^50, so one division is exact to 2^-32. */
PP_INLINE pp_s64 pp_ewtcp_inc(pp_u64 w, pp_u64 a_q32)
{
	return (pp_s64)((pp_clamp_a(a_q32) << PP_W_SHIFT) / pp_clamp_w(w));
}

/* w_total (q16): the windows of the subflows taking part in an event on i (< 2^40). */
PP_INLINE pp_u64 pp_window_total(const struct pp_sf_view *v, int nsf, int i)
{
	pp_u64 tot = 0;
	int k;

	PP_UNROLL
	for (k = 0; k < PP_MAX_SF; k++)
		if (k < nsf && pp_participates(v, k, i))
			tot += pp_clamp_w(v[k].w);
	return tot;
}

/* a / w_total (q32) for a w_total (q16) already summed (the BPF side sums the windows straight
 * from the connection's slots, kernel/bpf/pp_common.bpf.h pp_slot_window_total). */
PP_INLINE pp_s64 pp_a_over_total(pp_u64 tot, pp_u64 a_q32)
{
	if (tot < PP_W_ONE)
		tot = PP_W_ONE;
	return (pp_s64)((pp_clamp_a(a_q32) << PP_W_SHIFT) / tot);
}

/* Coupled (a = 1) and Semicoupled: a / w_total (q32). */
PP_INLINE pp_s64 pp_total_inc(const struct pp_sf_view *v, int nsf, int i, pp_u64 a_q32)
{
	return pp_a_over_total(pp_window_total(v, nsf, i), a_q32);
}

/* Coupled's loss response as a new ssthresh (q16): max(w_r - w_total/2, floor), floor 1
 * segment with more than one subflow taking part, 2 on a single path (pathpool-cc
 * coupled_loss). */
PP_INLINE pp_u64 pp_coupled_ssthresh(const struct pp_sf_view *v, int nsf, int i)
{
	pp_u64 half = pp_window_total(v, nsf, i) >> 1, w = pp_clamp_w(v[i].w), res, floor;
	int k, n = 0;

	PP_UNROLL
	for (k = 0; k < PP_MAX_SF; k++)
		if (k < nsf && pp_participates(v, k, i))
			n++;
	res = w > half ? w - half : 0;
	floor = n > 1 ? PP_MIN_CWND_W : PP_MIN_SSTHRESH_W;
	return res < floor ? floor : res;
}

/* ----------------------------------------------------------------- RSF ---------------------- */

/*
 * Pokhrel & Williamson 2020, eq. (1), RSF-DB:  w_i += (1/w_i) * min{1, (d - q_i)/q_i}
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

/* q_us: forward queueing + service delay (see kernel/bpf/pp_rsfdb.bpf.c for how it is
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

/* base^n in q32, base <= 2^32 (q32), n < 2^20. The loop stops after n's highest set bit: the
 * iterations left would only square base, so r is the same (an ACK resolves a packet or two:
 * one or two steps instead of twenty, on every RSF-LB ACK). */
PP_INLINE pp_u64 pp_pow_q32(pp_u64 base, pp_u32 n)
{
	pp_u64 r = 1ULL << 32;
	int k;

	if (n >= (1U << 20))
		n = (1U << 20) - 1;
	for (k = 0; k < 20 && (n >> k); k++) {
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
	/* k = 0 (no packet lost: almost every ACK) adds exactly 0; the division is skipped. */
	e->s_q48 = pp_mul_q32(e->s_q48, keep >> 16) + (k ? one_minus / n * k : 0);
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
	/* num 2^8 < 2^64, so one division gives floor(num 2^8 / rtt) = 2^8 q + floor(2^8 r / rtt)
	 * (num = q rtt + r), the two-division form below, whenever q stays under its cap. */
	if (rtt >= 4 || num < (rtt << 54))   /* q < 2^54 (num < 2^56; rtt << 54 fits for rtt < 4) */
		return pp_mul_q32((num << 8) / rtt, l_q32);
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

/* RSF-LB (Pokhrel & Williamson 2020, eq. 2): w += (1/w) min{1, (mu - L)/L}; mu, L pkt/s q24. */
PP_INLINE pp_s64 pp_rsflb_inc(pp_u64 w, pp_u64 mu_q24, pp_u64 l_q24)
{
	return pp_scale_inc(pp_reno_inc(w), pp_rsf_factor_wide_q32(mu_q24, l_q24));
}

/* ------------------------------------------------ the window glue (kernel side) ----------- */

/*
 * Everything the BPF callbacks write into the kernel's tcp_sock goes through these functions,
 * so the host tests (kernel/test/host_test.c, kernel/test/fuzz_test.c) check exactly what the
 * kernel gets. Invariants, for any input (racy sibling snapshots included):
 *   - snd_cwnd written is in [1, pp_cwnd_bound(clamp)], pp_cwnd_bound = min(snd_cwnd_clamp,
 *     2^20 segments) (the kernel's own clamp is ~0U unless the user sets one, so it alone
 *     bounds nothing); ssthresh returned is in [1, that bound];
 *   - one congestion-avoidance ACK of credit n moves cwnd by at most n * PP_INC_CAP upwards;
 *   - a slow-start ACK moves cwnd by at most `acked`, never past ssthresh.
 */

/* Largest window the glue writes: the domain of the arithmetic above (2^20 segments). */
#define PP_CWND_MAX_SEGS (1U << 20)
/* Largest increment of one ACK: OLIA's b_r/S^2 <= 1/w plus alpha_r/w <= 1/(2w) (n >= 2 when
 * alpha_r > 0) is at most 1.5/w; every other algorithm's is at most 1/w. Never binds for an
 * increment computed from a window >= 1 segment; it protects the accumulator. */
#define PP_INC_CAP ((pp_s64)2 << PP_INC_SHIFT)

PP_INLINE pp_u32 pp_cwnd_bound(pp_u32 clamp)
{
	pp_u32 b = clamp < PP_CWND_MAX_SEGS ? clamp : PP_CWND_MAX_SEGS;

	return b ? b : 1;
}

/*
 * The kernel keeps snd_cwnd as an integer; the fractional part lives in a q32 accumulator
 * frac in [0, 2^32). Adding inc (q32, signed) moves whole segments into cwnd and keeps the
 * remainder, so cwnd + frac/2^32 follows the real-valued window of pathpool-cc exactly up to
 * the increment's own rounding. cwnd never goes below 1 (then the fraction is 0, as
 * pathpool-cc's max(w + inc, 1)). Exact for any cwnd >= 1, frac < 2^32, |inc| < 2^63.
 */
PP_INLINE void pp_apply_inc(pp_u32 *cwnd, pp_u64 *frac, pp_s64 inc)
{
	pp_u64 f = *frac & 0xffffffffULL;
	pp_u32 c = *cwnd ? *cwnd : 1;

	if (inc >= 0) {
		pp_u64 whole;

		f += (pp_u64)inc;       /* < 2^32 + 2^63: no wrap */
		whole = f >> 32;
		f &= 0xffffffffULL;
		/* Saturate instead of wrapping the u32 (the caller clamps to its bound). */
		if (whole > 0xffffffffULL - c)
			c = 0xffffffffU;
		else
			c += (pp_u32)whole;
	} else {
		pp_u64 d = (pp_u64)0 - (pp_u64)inc;   /* |inc|, also for INT64_MIN */
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

/* Largest credit (segments) one ACK applies: the window domain, 2^20 segments. */
#define PP_CREDIT_MAX (1U << 20)

/*
 * One congestion-avoidance ACK worth `n` per-segment steps: cwnd + frac/2^32 += n * inc (inc
 * capped at PP_INC_CAP; a decrease beyond 2^30 segments saturates, which floors at 1 segment
 * exactly as the exact product would), the result within [1, pp_cwnd_bound(clamp)] (the
 * fraction is dropped at the bound). n = acked segments (byte counting, Linux 6.18
 * tcp_cong_avoid_ai(tp, w, acked): all n steps against the window before the ACK, the
 * remainder below one segment kept in frac as snd_cwnd_cnt keeps it) or 1 (v0.95 per-ACK
 * counting); n is capped at PP_CREDIT_MAX, n = 0 changes nothing.
 */
PP_INLINE void pp_cwnd_step(pp_u32 *cwnd, pp_u64 *frac, pp_s64 inc, pp_u32 n, pp_u32 clamp)
{
	pp_u32 bound = pp_cwnd_bound(clamp), c = *cwnd;
	pp_u64 f = *frac;

	if (!n)
		return;
	if (n > PP_CREDIT_MAX)
		n = PP_CREDIT_MAX;
	if (inc > PP_INC_CAP)
		inc = PP_INC_CAP;
	if (inc >= 0) {
		inc *= (pp_s64)n;                     /* <= 2^33 * 2^20 */
	} else {
		pp_u64 mag = (pp_u64)0 - (pp_u64)inc; /* |inc|, also for INT64_MIN */

		if (mag > (1ULL << 62) / n)
			inc = -(1LL << 62);
		else
			inc = -(pp_s64)(mag * n);
	}
	if (c > bound) {
		c = bound;
		f = 0;
	}
	pp_apply_inc(&c, &f, inc);
	if (c > bound) {
		c = bound;
		f = 0;
	}
	*cwnd = c;
	*frac = f;
}

/*
 * The congestion-avoidance credit of an ACK of `acked` segments (crates/pathpool-cc Counting,
 * ca_credit): per segment, the slow-start leftover included, as Linux 6.18 tcp_reno_cong_avoid
 * (`acked = tcp_slow_start(tp, acked); if (!acked) return;`); or, with per_ack (v0.95
 * mptcp_ccc_cong_avoid), one step for an ACK that found the subflow in congestion avoidance
 * and none for a slow-start ACK. grown = segments slow start added on this ACK.
 */
PP_INLINE pp_u32 pp_ca_credit(pp_u32 acked, int was_slow_start, pp_u32 grown, int per_ack)
{
	if (per_ack)
		return was_slow_start ? 0 : 1;
	if (!was_slow_start)
		return acked;
	return acked > grown ? acked - grown : 0;
}

/* Linux tcp_slow_start: min(cwnd + acked, ssthresh), in [1, bound]; 64-bit sum, no wrap. */
PP_INLINE pp_u32 pp_slow_start_cwnd(pp_u32 cwnd, pp_u32 ssthresh, pp_u32 acked, pp_u32 clamp)
{
	pp_u64 c = (pp_u64)cwnd + acked;
	pp_u32 bound = pp_cwnd_bound(clamp);

	if (c > ssthresh)
		c = ssthresh;
	if (c > bound)
		c = bound;
	return c ? (pp_u32)c : 1;
}

/* A q16 ssthresh as the kernel's integer (fraction dropped), in [1, bound]. */
PP_INLINE pp_u32 pp_ssthresh_segs(pp_u64 ssthresh_q16, pp_u32 clamp)
{
	pp_u64 s = ssthresh_q16 >> PP_W_SHIFT;
	pp_u32 bound = pp_cwnd_bound(clamp);

	if (s > bound)
		s = bound;
	return s ? (pp_u32)s : 1;
}

/* tcp_reno_undo_cwnd (max(cwnd, prior_cwnd)), in [1, bound]. */
PP_INLINE pp_u32 pp_undo_cwnd_segs(pp_u32 cwnd, pp_u32 prior_cwnd, pp_u32 clamp)
{
	pp_u32 c = cwnd > prior_cwnd ? cwnd : prior_cwnd, bound = pp_cwnd_bound(clamp);

	if (c > bound)
		c = bound;
	return c ? c : 1;
}

/*
 * Repair of a kernel fault (python/pathpool/kernel/README.md, "A subflow's ssthresh of
 * ~2^31"): on Linux 6.18 with these struct_ops, a few recovery entries left a stale kernel
 * stack word (~2^31) in snd_ssthresh instead of what the ssthresh op returns, which is always
 * in [1, pp_cwnd_bound(clamp)]; PRR then set cwnd to ~2^30. set_state runs right after the
 * kernel stores ssthresh (tcp_enter_recovery / tcp_enter_loss / tcp_enter_cwr, then
 * tcp_set_ca_state), so it can put back the value the op computed (`ours`, 0 if the op never
 * ran: then Reno's max(prior_cwnd / 2, 2)). Returns the value to write, or 0 when snd_ssthresh
 * is one the op or the kernel can legitimately hold: within the bound, or
 * TCP_INFINITE_SSTHRESH (no loss yet). Changes no algorithm: no op of ours returns more.
 */
#define PP_INFINITE_SSTHRESH 0x7fffffffU

PP_INLINE pp_u32 pp_ssthresh_repair(pp_u32 snd_ssthresh, pp_u32 ours, pp_u32 prior_cwnd, pp_u32 clamp)
{
	pp_u32 bound = pp_cwnd_bound(clamp);

	if (snd_ssthresh <= bound || snd_ssthresh == PP_INFINITE_SSTHRESH)
		return 0;
	if (!ours)
		ours = prior_cwnd >> 1 > 2 ? prior_cwnd >> 1 : 2;
	return ours < bound ? ours : bound;
}

/*
 * The same fault through undo_cwnd: this VM's log holds `WARNING ... tcp_undo_cwnd_reduction`
 * (tcp_snd_cwnd_set's check of a negative window) with RAX = 0xffffffff81104110, i.e. the
 * undo_cwnd call returned the stale word, not pp_undo_cwnd's value (at most the bound). A window
 * above the bound is one no op of ours writes and the kernel does not make from ours: put back
 * what pp_undo_cwnd would have returned without the lost window, max(prior_cwnd, 1) within the
 * bound. Returns the value to write, or 0 when snd_cwnd is within the bound.
 */
PP_INLINE pp_u32 pp_cwnd_repair(pp_u32 snd_cwnd, pp_u32 prior_cwnd, pp_u32 clamp)
{
	if (snd_cwnd <= pp_cwnd_bound(clamp))
		return 0;
	return pp_undo_cwnd_segs(1, prior_cwnd, clamp);
}

/*
 * Linux tcp_is_cwnd_limited: the window may grow only while it limits the sender (or, in slow
 * start, while it is below twice the most packets in flight of the last window). Every Linux
 * cong_avoid (tcp_reno_cong_avoid, cubic, v0.95's coupled ones) returns early otherwise; the
 * kernel calls cong_avoid on every ACK regardless. pathpool-cc leaves this test to the
 * transport (crates/pathpool-cc/src/controller.rs, Controller::on_ack), and here we are the
 * transport's side.
 */
PP_INLINE int pp_cwnd_limited(pp_u32 cwnd, pp_u32 ssthresh, int is_cwnd_limited,
			      pp_u32 max_packets_out)
{
	if (is_cwnd_limited)
		return 1;
	if (cwnd < ssthresh)
		return (pp_u64)cwnd < 2 * (pp_u64)max_packets_out;
	return 0;
}

/* Window q16 from the kernel's integer cwnd and the q32 fraction. */
PP_INLINE pp_u64 pp_window_q16(pp_u32 cwnd, pp_u64 frac)
{
	return ((pp_u64)cwnd << 16) | ((frac >> 16) & 0xffffULL);
}

/* ------------------------------------------------ LIA's connection state (v0.95) ---------- */


/* LIA's ratio of a view set; the BPF objects route it through a global function (verifier). */
#ifndef PP_LIA_RATIO_OF
#define PP_LIA_RATIO_OF(vs, i) pp_lia_ratio((vs)->v, PP_MAX_SF, (i))
#endif

/*
 * What LIA keeps per connection (pathpool-cc's Lia, v0.95 mptcp_coupled.c): the stored
 * alpha / w_total (q32) and the forced-recompute flag, raised by every congestion-state change
 * (loss event, RTO, recovery exit) and consumed by the next congestion-avoidance ACK.
 */
struct pp_lia_state {
	pp_u64 ratio_q32;
	pp_u32 forced;
	pp_u32 recomputations;
};

/* The BPF side starts every new life of a connection entry from this (pp_life_reset,
 * kernel/bpf/pp_ops.bpf.h). */
PP_INLINE void pp_lia_init(struct pp_lia_state *s)
{
	s->ratio_q32 = (pp_u64)PP_INC_ONE;   /* "infinite": the min gives Reno's 1/w */
	s->forced = 1;
	s->recomputations = 0;
}

PP_INLINE void pp_lia_recompute(struct pp_lia_state *s, struct pp_vset *vs, int i)
{
	s->ratio_q32 = PP_LIA_RATIO_OF(vs, i);
	s->recomputations++;
}

/* Subflows taking part in an event on i (v0.95 cnt_established). */
PP_INLINE int pp_count_participants(const struct pp_sf_view *v, int i)
{
	int k, n = 0;

	PP_UNROLL
	for (k = 0; k < PP_MAX_SF; k++)
		n += pp_participates(v, k, i);
	return n;
}

/*
 * The same question from a connection's bitmask of active slots (bit k = slot k taken and
 * active, kept by the BPF side at init and release): pp_count_participants(v, i) > 1 exactly
 * when another slot's bit is set (kernel/test/fuzz_test.c checks the equivalence). One load
 * from the connection header instead of reading eight slots on every LIA ACK.
 */
PP_INLINE pp_u32 pp_active_mask(const struct pp_sf_view *v)
{
	pp_u32 m = 0;
	int k;

	PP_UNROLL
	for (k = 0; k < PP_MAX_SF; k++)
		m |= (v[k].active ? 1U : 0U) << k;
	return m;
}

PP_INLINE int pp_has_sibling(pp_u32 mask, int i)
{
	return (mask & ~(1U << (i & (PP_MAX_SF - 1)))) != 0;
}

/*
 * The increment of a congestion-avoidance ACK on i (vs->v[i].w = the window before it): first
 * the forced recomputation, then min(alpha/w_total, 1/w_i), or Reno's 1/w_i for a lone subflow.
 * After applying it, call pp_lia_after_step.
 */
PP_INLINE pp_s64 pp_lia_ca_inc(struct pp_lia_state *s, struct pp_vset *vs, int i)
{
	pp_u64 w = vs->v[i].w;

	if (s->forced) {
		pp_lia_recompute(s, vs, i);
		s->forced = 0;
	}
	if (pp_count_participants(vs->v, i) > 1)
		return pp_lia_inc(s->ratio_q32, w);
	return pp_reno_inc(w);
}

/* After a CA step that raised the integer window (vs->v[i].w = the new window): recompute. */
PP_INLINE void pp_lia_after_step(struct pp_lia_state *s, struct pp_vset *vs, int i, int grew)
{
	if (grew)
		pp_lia_recompute(s, vs, i);
}

/* A slow-start ACK (vs->v[i].w = the window after the growth): recompute (v0.95). */
PP_INLINE void pp_lia_ss_ack(struct pp_lia_state *s, struct pp_vset *vs, int i)
{
	pp_lia_recompute(s, vs, i);
}

/* An RTO (vs->v[i].w = the pre-timeout window, as CA_EVENT_LOSS sees it): recompute, force. */
PP_INLINE void pp_lia_rto(struct pp_lia_state *s, struct pp_vset *vs, int i)
{
	pp_lia_recompute(s, vs, i);
	s->forced = 1;
}

/* Any other congestion-state change (loss event, recovery exit). */
PP_INLINE void pp_lia_state_change(struct pp_lia_state *s)
{
	s->forced = 1;
}

/*
 * Max (NSDI 2011 Section 2; RFC 6356 Section 3's increase without the min(., 1/w_r) cap):
 * w_r += max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2 per segment, i.e. LIA's ratio, computed on
 * every ACK (pathpool-cc's Max keeps no state); Reno's 1/w_r while r has no RTT sample.
 */
PP_INLINE pp_s64 pp_max_inc(struct pp_vset *vs, int i)
{
	if (i < 0 || i >= PP_MAX_SF || !vs->v[i].rtt_us)
		return pp_reno_inc(vs->v[i & (PP_MAX_SF - 1)].w);
	return (pp_s64)PP_LIA_RATIO_OF(vs, i);
}

#endif /* PP_CC_MATH_H */

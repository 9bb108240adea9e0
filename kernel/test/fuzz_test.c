// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * fuzz_test: property test of kernel/include/pp_cc_math.h with random and extreme inputs,
 * including inputs no sane kernel state produces (racy sibling snapshots read as 0 or stale,
 * windows of 2^40 segments, RTTs of 0 or 2^32-1 us, negative increments larger than the
 * window, fractions next to 2^32, alpha cached from another window total).
 *
 *   fuzz_test [iterations]     exit 0 = every property held; prints a summary
 *
 * Built with -fsanitize=undefined -fno-sanitize-recover=all (kernel/Makefile), so any signed
 * overflow, shift out of range or division by zero aborts the run. Properties:
 *   1. the window glue (pp_cwnd_step, pp_apply_inc, pp_slow_start_cwnd, pp_ssthresh_segs,
 *      pp_undo_cwnd_segs) equals a 128-bit reference exactly, never wraps, writes a window in
 *      [1, min(clamp, 2^20)], moves it up by at most PP_INC_CAP per CA ACK and by at most
 *      `acked` (never past ssthresh) per slow-start ACK; pp_ssthresh_repair leaves every
 *      value the kernel or our op can hold and puts any other back into [1, bound];
 *   2. every algorithm's increment is finite and bounded for any view: reno, lia, balia,
 *      rsf-db, rsf-lb in [0, 1] segment (rsf: [-1, 1]), olia in [-1, 1.5] segments; ewtcp and
 *      semicoupled in [0, 2] for any weight (semicoupled <= ewtcp's a/w_r), coupled in
 *      [0, 1/w_r], max in [0, 1], coupled's ssthresh in [1, max(w_r, 2)];
 *   3. inside the stated domain (windows [1, 2^20] segments, RTT ratio <= 2^10) the increments
 *      equal a long double evaluation of the paper's formula within the bound of pp_cc_math.h;
 *   4. OLIA's comparison of l/rtt^2 is exact (128-bit reference), also for l near 2^64.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_cc_math.h"

typedef unsigned __int128 u128;
typedef __int128 s128;

static unsigned long long rng_state = 0x9E3779B97F4A7C15ULL;
static long failures, checks;
static double worst[10];
static double ratio_cap = 1024.0;   /* largest RTT ratio of the accuracy domain */

static pp_u64 rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static double unif(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

/* A value that is often at an edge: 0, 1, max, max-1, a power of two +-1, or random. */
static pp_u64 edgy(pp_u64 max)
{
	switch (rnd() % 8) {
	case 0: return 0;
	case 1: return 1;
	case 2: return max;
	case 3: return max - 1;
	case 4: {
		int b = (int)(rnd() % 64);
		pp_u64 p = 1ULL << b;
		p += (rnd() % 3) - 1;
		return p > max ? max : p;
	}
	default:
		return max == ~0ULL ? rnd() : rnd() % (max + 1);
	}
}

#define FAIL(...) do { failures++; if (failures <= 25) { fprintf(stderr, "FAIL "); \
	fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)

/* ------------------------------------------------------------------ 1. window glue -------- */

static pp_u32 ref_bound(pp_u32 clamp)
{
	pp_u32 b = clamp < PP_CWND_MAX_SEGS ? clamp : PP_CWND_MAX_SEGS;
	return b ? b : 1;
}

static void fuzz_glue(long iters)
{
	for (long it = 0; it < iters; it++) {
		pp_u32 cwnd = (pp_u32)edgy(0xffffffffULL), clamp = (pp_u32)edgy(0xffffffffULL);
		pp_u64 frac = edgy(0xffffffffULL), fr;
		pp_s64 inc;
		pp_u32 n = (pp_u32)edgy(0xffffffffULL), n_eff;
		pp_u32 c, bound = ref_bound(clamp), c0;
		s128 x;
		pp_u64 f0;

		if (rnd() % 4 == 0)
			clamp = 0xffffffffU;   /* the kernel's default snd_cwnd_clamp */
		bound = ref_bound(clamp);
		switch (rnd() % 4) {
		case 0: inc = (pp_s64)rnd(); break;                           /* anything */
		case 1: inc = (pp_s64)(rnd() % (3ULL << 32)) - (1LL << 32) * 2; break; /* [-2, 1) */
		case 2: inc = (pp_s64)((pp_u64)0 - ((pp_u64)cwnd << 32) - rnd() % 3); break; /* ~ -cwnd */
		default: inc = (rnd() & 1) ? (pp_s64)0x7fffffffffffffffLL : (pp_s64)(1ULL << 63);
		}
		/* Reference: 128-bit window in 2^-32 units. */
		c0 = cwnd ? cwnd : 1;
		f0 = frac & 0xffffffffULL;
		if (c0 > bound) {
			c0 = bound;
			f0 = 0;
		}
		if (rnd() % 2)
			n = 1 + (pp_u32)(rnd() % 64);   /* the usual delayed/stretch ACK sizes */
		n_eff = n > PP_CREDIT_MAX ? PP_CREDIT_MAX : n;
		x = ((s128)c0 << 32) + f0 + (s128)(inc > PP_INC_CAP ? PP_INC_CAP : inc) * n_eff;
		if (!n) {
			/* No credit: nothing moves, not even an out-of-bound window. */
			c = cwnd;
			fr = frac;
			pp_cwnd_step(&c, &fr, inc, 0, clamp);
			checks++;
			if (c != cwnd || fr != frac)
				FAIL("cwnd_step with n = 0 moved %u %llu", cwnd, frac);
			n = 1;
			n_eff = 1;
			x = ((s128)c0 << 32) + f0 + (inc > PP_INC_CAP ? PP_INC_CAP : inc);
		}
		if (x < ((s128)1 << 32))
			x = (s128)1 << 32;
		if ((x >> 32) > bound)
			x = (s128)bound << 32;
		c = cwnd;
		fr = frac;
		pp_cwnd_step(&c, &fr, inc, n, clamp);
		checks++;
		if ((s128)c != (x >> 32) || fr != (pp_u64)(x & 0xffffffff))
			FAIL("cwnd_step cwnd %u frac %llu inc %lld n %u clamp %u: got %u + %llu, want %lld + %llu",
			     cwnd, frac, (long long)inc, n, clamp, c, fr, (long long)(x >> 32),
			     (unsigned long long)(x & 0xffffffff));
		if (c < 1 || c > bound || fr >= (1ULL << 32) || (pp_u64)c > (pp_u64)c0 + 2ULL * n_eff)
			FAIL("cwnd_step out of range: %u (old %u bound %u n %u)", c, cwnd, bound, n);

		/* The credit: per segment (slow-start leftover included) or one per CA ACK. */
		{
			pp_u32 acked = (pp_u32)edgy(0xffffffffULL), grown = (pp_u32)edgy(0xffffffffULL);
			int ss = (int)(rnd() & 1);
			pp_u32 want = ss ? (acked > grown ? acked - grown : 0) : acked;

			checks += 2;
			if (pp_ca_credit(acked, ss, grown, 0) != want)
				FAIL("ca_credit bytes acked %u ss %d grown %u", acked, ss, grown);
			if (pp_ca_credit(acked, ss, grown, 1) != (pp_u32)!ss)
				FAIL("ca_credit acks ss %d", ss);
		}

		/* pp_apply_inc alone: exact for any cwnd >= 1, frac < 2^32, inc (saturating at 2^32-1). */
		{
			pp_u32 a = c0;
			pp_u64 af = f0;
			s128 y = ((s128)c0 << 32) + f0 + inc;

			if (y < ((s128)1 << 32))
				y = (s128)1 << 32;
			pp_apply_inc(&a, &af, inc);
			checks++;
			if ((y >> 32) <= 0xffffffff) {
				if ((s128)a != (y >> 32) || af != (pp_u64)(y & 0xffffffff))
					FAIL("apply_inc %u %llu %lld: got %u %llu", c0, f0, (long long)inc, a, af);
			} else if (a != 0xffffffffU) {
				FAIL("apply_inc %u %llu %lld wrapped to %u", c0, f0, (long long)inc, a);
			}
		}

		/* Slow start, ssthresh and undo. */
		{
			pp_u32 ssth = (pp_u32)edgy(0xffffffffULL), acked = (pp_u32)edgy(0xffffffffULL);
			pp_u32 prior = (pp_u32)edgy(0xffffffffULL);
			pp_u64 ss = edgy(~0ULL);
			u128 want = (u128)cwnd + acked;
			pp_u32 got = pp_slow_start_cwnd(cwnd, ssth, acked, clamp);

			if (want > ssth)
				want = ssth;
			if (want > bound)
				want = bound;
			if (!want)
				want = 1;
			checks += 3;
			if (got != (pp_u32)want)
				FAIL("slow_start %u+%u ssth %u clamp %u: got %u", cwnd, acked, ssth, clamp, got);
			if (got > (pp_u64)(cwnd ? cwnd : 1) + acked && got > 1)
				FAIL("slow_start grew by more than acked");
			want = ss >> 16;
			if (want > bound)
				want = bound;
			if (!want)
				want = 1;
			if (pp_ssthresh_segs(ss, clamp) != (pp_u32)want)
				FAIL("ssthresh_segs %llu clamp %u", ss, clamp);
			want = cwnd > prior ? cwnd : prior;
			if (want > bound)
				want = bound;
			if (!want)
				want = 1;
			if (pp_undo_cwnd_segs(cwnd, prior, clamp) != (pp_u32)want)
				FAIL("undo %u %u clamp %u", cwnd, prior, clamp);
		}
	}
}

/*
 * pp_ssthresh_repair: the cached fault (s2 OLIA seed 10: snd_ssthresh 0x81104110 at a recovery
 * entry from cwnd 2, the op having returned 2) is put back to 2; the op never ran -> Reno of
 * prior_cwnd; legitimate values (within the bound, TCP_INFINITE_SSTHRESH) are left alone; and
 * on random input the result is 0 exactly when nothing needs repair, else within [1, bound].
 */
static void fuzz_ssthresh_repair(long iters)
{
	checks += 6;
	if (pp_ssthresh_repair(0x81104110U, 2, 2, 0xffffffffU) != 2)
		FAIL("repair of the cached fault");
	if (pp_ssthresh_repair(0x81104110U, 0, 40, 0xffffffffU) != 20)
		FAIL("repair without an op value: Reno of prior_cwnd");
	if (pp_ssthresh_repair(0x81104110U, 0, 3, 0xffffffffU) != 2)
		FAIL("repair without an op value: at least 2");
	if (pp_ssthresh_repair(0x7fffffffU, 5, 10, 0xffffffffU) != 0)
		FAIL("TCP_INFINITE_SSTHRESH repaired");
	if (pp_ssthresh_repair(1U << 20, 5, 10, 0xffffffffU) != 0)
		FAIL("ssthresh at the bound repaired");
	if (pp_ssthresh_repair((1U << 20) + 1, 5, 10, 0xffffffffU) != 5)
		FAIL("ssthresh just above the bound not repaired");
	/* The window through undo_cwnd (dmesg: RAX 0xffffffff81104110): back to prior_cwnd. */
	checks += 4;
	if (pp_cwnd_repair(0x81104110U, 37, 0xffffffffU) != 37)
		FAIL("cwnd repair of the fault");
	if (pp_cwnd_repair(0x81104110U, 0, 0xffffffffU) != 1)
		FAIL("cwnd repair without a prior window");
	if (pp_cwnd_repair(1U << 20, 37, 0xffffffffU) != 0 || pp_cwnd_repair(10, 37, 0xffffffffU) != 0)
		FAIL("legitimate window repaired");
	if (pp_cwnd_repair(50, 37, 20) != 20)
		FAIL("cwnd repair beyond the clamp");
	for (long it = 0; it < iters; it++) {
		pp_u32 ss = (pp_u32)edgy(0xffffffffULL), ours = (pp_u32)edgy(0xffffffffULL);
		pp_u32 prior = (pp_u32)edgy(0xffffffffULL), clamp = (pp_u32)edgy(0xffffffffULL);
		pp_u32 bound = ref_bound(clamp), got = pp_ssthresh_repair(ss, ours, prior, clamp);
		int needed = ss > bound && ss != 0x7fffffffU;

		pp_u32 cgot = pp_cwnd_repair(ss, prior, clamp);

		checks += 2;
		if (!(ss > bound) != !cgot || (cgot && cgot != (prior > bound ? bound : (prior ? prior : 1))))
			FAIL("cwnd repair cwnd %u prior %u clamp %u: got %u", ss, prior, clamp, cgot);
		if (!needed != !got || (got && (got < 1 || got > bound)) ||
		    (got && ours && got != (ours < bound ? ours : bound)))
			FAIL("repair ss %u ours %u prior %u clamp %u: got %u", ss, ours, prior, clamp, got);
	}
}

/* ---------------------------------------------------- 2./3. algorithms on random views ---- */

/* A random connection; `sane` keeps it inside the stated domain, else anything goes. */
static int random_views(struct pp_sf_view *v, int *pi, int sane)
{
	int n = 1 + (int)(rnd() % PP_MAX_SF), i = (int)(rnd() % n);
	pp_u32 base = 1 + (pp_u32)(rnd() % 1000000);   /* 1 us .. 1 s */

	memset(v, 0, sizeof(*v) * PP_MAX_SF);
	for (int k = 0; k < n; k++) {
		if (sane) {
			v[k].w = PP_W_ONE + rnd() % (PP_W_MAX - PP_W_ONE + 1);
			if (rnd() % 3 == 0)
				v[k].w = PP_W_ONE + rnd() % (200ULL << 16);
			v[k].rtt_us = (pp_u32)(base * exp2(unif() * 10.0 * ((rnd() & 1) ? 1 : -1)));
			if (v[k].rtt_us < 1)
				v[k].rtt_us = 1;
			if (v[k].rtt_us > PP_RTT_MAX_US)
				v[k].rtt_us = PP_RTT_MAX_US;
			v[k].active = 1;
			v[k].lr = rnd() % (1ULL << 40);
		} else {
			v[k].w = edgy(~0ULL);
			v[k].rtt_us = (pp_u32)edgy(0xffffffffULL);
			v[k].active = (pp_u32)(rnd() % 3 != 0);   /* racy: sibling gone/not yet there */
			v[k].lr = edgy(~0ULL);
		}
	}
	if (sane) {
		/* Keep the RTT ratio within 2^10 (the accuracy domain). */
		pp_u32 lo = ~0U, hi = 0;
		for (int k = 0; k < n; k++) {
			lo = v[k].rtt_us < lo ? v[k].rtt_us : lo;
			hi = v[k].rtt_us > hi ? v[k].rtt_us : hi;
		}
		if ((double)hi / lo > ratio_cap)
			for (int k = 0; k < n; k++)
				if (v[k].rtt_us > lo * ratio_cap)
					v[k].rtt_us = (pp_u32)(lo * ratio_cap);
	}
	*pi = i;
	return n;
}

/* Long double references (the formulas of pp_cc_math.h's comments). */
static long double ld_w(const struct pp_sf_view *v, int k)
{
	return (long double)pp_clamp_w(v[k].w) / 65536.0L;
}

static long double ld_t(const struct pp_sf_view *v, int k)
{
	return (long double)pp_clamp_rtt(v[k].rtt_us);
}

static long double ref_lia_ratio(const struct pp_sf_view *v, int n, int i)
{
	long double best = 0, sum = 0;
	int any = 0;

	for (int k = 0; k < n; k++) {
		if (!pp_participates(v, k, i) || !v[k].rtt_us)
			continue;
		any = 1;
		if (ld_w(v, k) / (ld_t(v, k) * ld_t(v, k)) > best)
			best = ld_w(v, k) / (ld_t(v, k) * ld_t(v, k));
		sum += ld_w(v, k) / ld_t(v, k);
	}
	return any ? fminl(best / (sum * sum), 1.0L) : 1.0L;
}

/* b_r = w_r (rtt_min/rtt_r)^2 and S^2 normalised likewise: the OLIA/BALIA first term. */
static long double ref_first(const struct pp_sf_view *v, int n, int i, long double *b_i)
{
	long double sum = 0, tmin = 1e30L;

	for (int k = 0; k < n; k++)
		if (pp_participates(v, k, i) && v[k].rtt_us && ld_t(v, k) < tmin)
			tmin = ld_t(v, k);
	for (int k = 0; k < n; k++)
		if (pp_participates(v, k, i) && v[k].rtt_us)
			sum += ld_w(v, k) / ld_t(v, k);
	*b_i = ld_w(v, i) * (tmin / ld_t(v, i)) * (tmin / ld_t(v, i));
	return (ld_w(v, i) / (ld_t(v, i) * ld_t(v, i))) / (sum * sum);
}

static long double ref_olia(const struct pp_sf_view *v, int n, int i, long double *b_i)
{
	long double first = ref_first(v, n, i, b_i), best = -1;
	pp_u64 w_max = 0;
	int np = 0, nm = 0, nbm = 0, in_m, in_b;

	for (int k = 0; k < n; k++) {
		if (!pp_participates(v, k, i))
			continue;
		np++;
		if (!v[k].rtt_us)
			continue;
		if ((pp_clamp_w(v[k].w) >> 16) > w_max)
			w_max = pp_clamp_w(v[k].w) >> 16;
	}
	/* Best l/rtt^2 compared exactly in 128 bits (the reference for pp_olia_cmp is below). */
	for (int k = 0; k < n; k++)
		if (pp_olia_counted(v, k, i)) {
			long double s = (long double)v[k].lr / ((long double)v[k].rtt_us * v[k].rtt_us);
			if (s > best)
				best = s;
		}
	for (int k = 0; k < n; k++) {
		long double s;

		if (!pp_olia_counted(v, k, i))
			continue;
		s = (long double)v[k].lr / ((long double)v[k].rtt_us * v[k].rtt_us);
		if ((pp_clamp_w(v[k].w) >> 16) == w_max)
			nm++;
		else if (s == best)
			nbm++;
	}
	in_m = (pp_clamp_w(v[i].w) >> 16) == w_max;
	in_b = !in_m && (long double)v[i].lr / ((long double)v[i].rtt_us * v[i].rtt_us) == best;
	if (in_b && nbm)
		return first + 1.0L / (np * nbm) / ld_w(v, i);
	if (in_m && nbm && nm)
		return first - 1.0L / (np * nm) / ld_w(v, i);
	return first;
}

static long double ref_balia(const struct pp_sf_view *v, int n, int i, long double *b_i)
{
	long double first = ref_first(v, n, i, b_i), xmax = 0, xi = ld_w(v, i) / ld_t(v, i), a;

	for (int k = 0; k < n; k++)
		if (pp_participates(v, k, i) && v[k].rtt_us && ld_w(v, k) / ld_t(v, k) > xmax)
			xmax = ld_w(v, k) / ld_t(v, k);
	a = xmax / xi;
	return fminl(first * (1 + a) / 2 * (4 + a) / 5, 1.0L);
}

/* Sum of the windows taking part (Coupled, Semicoupled). */
static long double ref_total(const struct pp_sf_view *v, int n, int i)
{
	long double tot = 0;

	for (int k = 0; k < n; k++)
		if (pp_participates(v, k, i))
			tot += ld_w(v, k);
	return tot;
}

static void accuracy(int idx, const char *what, long double got, long double want, long double tol)
{
	long double err = fabsl(got - want);

	checks++;
	if (err > tol)
		FAIL("%s: got %.12Lg want %.12Lg (err %.3Lg > tol %.3Lg)", what, got, want, err, tol);
	if (want != 0 && err / fabsl(want) > worst[idx] && err > 1.0L / (1 << 24))
		worst[idx] = (double)(err / fabsl(want));
}

static void fuzz_algorithms(long iters)
{
	struct pp_sf_view v[PP_MAX_SF];
	const long double q32 = 4294967296.0L;

	for (long it = 0; it < iters; it++) {
		int i, sane = (int)(rnd() % 2), n = random_views(v, &i, sane);
		pp_s64 reno = pp_reno_inc(v[i].w), lia, olia, balia, rdb, rlb;
		pp_u64 ratio = pp_lia_ratio(v, n, i), cached = edgy(~0ULL), bss;

		/* 2. bounds, for any view. */
		lia = pp_lia_inc(ratio, v[i].w);
		olia = pp_olia_inc(v, n, i);
		balia = pp_balia_inc(v, n, i);
		rdb = pp_rsfdb_inc(v[i].w, edgy(~0ULL), edgy(~0ULL));
		rlb = pp_rsflb_inc(v[i].w, edgy(~0ULL), edgy(~0ULL));
		bss = pp_balia_ssthresh(v, n, i, (int)(rnd() & 1));
		checks += 8;
		if (reno <= 0 || reno > PP_INC_ONE)
			FAIL("reno inc %lld out of (0, 1]", (long long)reno);
		if (ratio > (pp_u64)PP_INC_ONE)
			FAIL("lia ratio %llu > 1", ratio);
		if (lia < 0 || lia > reno)
			FAIL("lia inc %lld outside [0, 1/w]", (long long)lia);
		/* alpha cached from another total (racy or stale): still at most 1/w. */
		if (pp_lia_inc(cached, v[i].w) > reno || pp_lia_inc(cached, v[i].w) < 0)
			FAIL("lia inc with cached ratio %llu exceeds 1/w", cached);
		if (olia < -PP_INC_ONE || olia > PP_INC_ONE + PP_INC_ONE / 2)
			FAIL("olia inc %lld outside [-1, 1.5]", (long long)olia);
		if (balia < 0 || balia > PP_INC_ONE)
			FAIL("balia inc %lld outside [0, 1]", (long long)balia);
		if (rdb < -PP_INC_ONE || rdb > PP_INC_ONE || rlb < -PP_INC_ONE || rlb > PP_INC_ONE)
			FAIL("rsf inc %lld / %lld outside [-1, 1]", (long long)rdb, (long long)rlb);
		if (bss < PP_MIN_CWND_W || bss > pp_clamp_w(v[i].w) + PP_W_ONE)
			FAIL("balia ssthresh %llu outside [1, w]", bss);
		/* EWTCP, Coupled, Semicoupled, Max: bounded for any view and any weight. */
		{
			pp_u64 a = (rnd() & 1) ? edgy(~0ULL) : PP_A_MIN_Q32 + rnd() % (PP_A_MAX_Q32 - PP_A_MIN_Q32 + 1);
			pp_s64 ew = pp_ewtcp_inc(v[i].w, a), sc = pp_total_inc(v, n, i, a);
			pp_s64 cp = pp_total_inc(v, n, i, 1ULL << 32);
			pp_u64 css = pp_coupled_ssthresh(v, n, i);
			struct pp_vset vs;

			memcpy(vs.v, v, sizeof(vs.v));
			checks += 5;
			if (ew < 0 || ew > PP_INC_CAP)
				FAIL("ewtcp inc %lld outside [0, 2]", (long long)ew);
			if (sc < 0 || sc > PP_INC_CAP || sc > ew)
				FAIL("semicoupled inc %lld outside [0, a/w_r] (a/w_r %lld)", (long long)sc, (long long)ew);
			if (cp < 0 || cp > reno)
				FAIL("coupled inc %lld outside [0, 1/w_r]", (long long)cp);
			if (css < PP_MIN_CWND_W || css > (pp_clamp_w(v[i].w) > PP_MIN_SSTHRESH_W ?
							   pp_clamp_w(v[i].w) : PP_MIN_SSTHRESH_W))
				FAIL("coupled ssthresh %llu outside [1, max(w, 2)]", css);
			if (pp_max_inc(&vs, i) < 0 || pp_max_inc(&vs, i) > PP_INC_ONE)
				FAIL("max inc %lld outside [0, 1]", (long long)pp_max_inc(&vs, i));
		}
		/* The BPF side's LIA fast path asks the mask instead of counting the slots. */
		checks++;
		if (pp_has_sibling(pp_active_mask(v), i) != (pp_count_participants(v, i) > 1))
			FAIL("lia: mask 0x%x says sibling %d, count %d (i %d)", pp_active_mask(v),
			     pp_has_sibling(pp_active_mask(v), i), pp_count_participants(v, i), i);

		if (!sane)
			continue;
		/* 3. accuracy inside the domain. */
		{
			long double w = ld_w(v, i), b_i, want, tolr = 1e-5L, abs_inc = 1.0L / (1 << 24);
			char what[64];

			accuracy(0, "reno", reno / q32, 1.0L / w, tolr / w + abs_inc);
			want = fminl(ref_lia_ratio(v, n, i), 1.0L / w);
			accuracy(1, "lia", lia / q32, want, tolr * want + abs_inc);
			want = ref_olia(v, n, i, &b_i);
			snprintf(what, sizeof(what), "olia n=%d i=%d", n, i);
			accuracy(2, what, olia / q32, want,
				 tolr * fabsl(want) + abs_inc + fabsl(want) / 32768.0L / b_i);
			want = ref_balia(v, n, i, &b_i);
			accuracy(3, "balia", balia / q32, want,
				 tolr * want + abs_inc + want / 32768.0L / b_i);
		}
		/* The four earlier designs inside the domain (a in [1e-4, 2]). */
		{
			long double w = ld_w(v, i), tot = ref_total(v, n, i), want, aa;
			pp_u64 a = PP_A_MIN_Q32 + rnd() % (PP_A_MAX_Q32 - PP_A_MIN_Q32 + 1);
			int np = pp_count_participants(v, i);
			struct pp_vset vs;

			aa = (long double)a / q32;
			accuracy(5, "ewtcp", pp_ewtcp_inc(v[i].w, a) / q32, aa / w,
				 1e-5L * aa / w + 1.0L / (1 << 24));
			accuracy(6, "semicoupled", pp_total_inc(v, n, i, a) / q32, aa / tot,
				 1e-5L * aa / tot + 1.0L / (1 << 24));
			want = fmaxl(w - tot / 2, np > 1 ? 1.0L : 2.0L);
			accuracy(7, "coupled ssthresh", pp_coupled_ssthresh(v, n, i) / 65536.0L, want,
				 1e-5L * want + 1.0L / 32768);
			memcpy(vs.v, v, sizeof(vs.v));
			want = ref_lia_ratio(v, n, i);
			accuracy(8, "max", pp_max_inc(&vs, i) / q32, want, 1e-5L * want + 1.0L / (1 << 24));
			/* The default weight 1/n^2 from the slot mask, as the BPF side takes it. */
			checks++;
			if (pp_mask_count(pp_active_mask(v) | (1U << i)) != (pp_u32)np)
				FAIL("ewtcp: mask count %u, participants %d", pp_mask_count(pp_active_mask(v) | (1U << i)), np);
			want = 1.0L / ((long double)np * np);
			accuracy(5, "ewtcp default a", pp_ewtcp_default_a_q32((pp_u32)np) / q32, want, 1.0L / q32);
		}
		/* RSF-DB inside its domain: d, q in [0, 10 s] us. */
		{
			pp_u64 d = 1 + rnd() % 10000000, q = rnd() % 10000000;
			long double w = ld_w(v, i), f = q ? fminl(1.0L, ((long double)d - q) / q) : 1.0L;
			long double want = f / w;

			accuracy(4, "rsf-db", pp_rsfdb_inc(v[i].w, d, q) / q32, want,
				 1e-5L * fabsl(want) + 1.0L / (1 << 24));
		}
	}
}

/* ---------------------------------------------------------------- 4. OLIA comparison ------ */

static void fuzz_olia_cmp(long iters)
{
	for (long it = 0; it < iters; it++) {
		pp_u64 la = edgy(~0ULL), lb = edgy(~0ULL);
		pp_u32 ra = (pp_u32)edgy(0xffffffffULL), rb = (pp_u32)edgy(0xffffffffULL);
		u128 x, y;
		pp_u64 hi, lo;
		int want, got;

		if (rnd() % 3 == 0) {   /* the 64-bit fast path's domains, and just beyond them */
			int wide = (int)(rnd() % 2);

			la = rnd() % ((wide ? 1ULL << 32 : 1ULL << 24) + 2);
			lb = rnd() % ((wide ? 1ULL << 32 : 1ULL << 24) + 2);
			ra = (pp_u32)(rnd() % ((wide ? 1U << 16 : 1U << 20) + 2));
			rb = (pp_u32)(rnd() % ((wide ? 1U << 16 : 1U << 20) + 2));
			if (rnd() % 2) {   /* products near 2^64: the fast path's edge */
				la = (wide ? 1ULL << 32 : 1ULL << 24) - 3 + rnd() % (wide ? 1ULL << 32 : 1ULL << 24);
				rb = (wide ? 1U << 16 : 1U << 20) - (pp_u32)(rnd() % 64);
			}
		}
		if (rnd() % 4 == 0) {   /* ties: same ratio scaled */
			pp_u64 m = 1 + rnd() % 1000;
			ra = 1 + (pp_u32)(rnd() % 60000);
			la = rnd() % (1ULL << 40);
			rb = ra * (pp_u32)m;
			lb = la * m * m;
		}
		/* l * rtt^2 < 2^64 * 2^64: u128 is exact. */
		x = (u128)la * ((u128)rb * rb);
		y = (u128)lb * ((u128)ra * ra);
		if ((((u128)rb * rb) >> 64) == 0 && (((u128)ra * ra) >> 64) == 0) {
			want = x > y ? 1 : (x < y ? -1 : 0);
			got = pp_olia_cmp(la, ra, lb, rb);
			checks++;
			if (got != want)
				FAIL("olia_cmp %llu/%u^2 vs %llu/%u^2: got %d want %d", la, ra, lb, rb, got, want);
		}
		pp_mul_64x64(la, lb, &hi, &lo);
		x = (u128)la * lb;
		checks++;
		if (hi != (pp_u64)(x >> 64) || lo != (pp_u64)x)
			FAIL("mul_64x64 %llu * %llu", la, lb);
	}
}

/* pp_rsflb_loss_rate_q24 as it was before its one-division form: two divisions always. */
static pp_u64 loss_rate_two_divisions(pp_u64 w, pp_u32 srtt_us, pp_u64 l_q32)
{
	pp_u64 num, rtt, q, rate;

	if (!srtt_us || !l_q32)
		return 0;
	rtt = pp_clamp_rtt(srtt_us);
	num = pp_clamp_w(w) * 1000000ULL;
	q = num / rtt;
	if (q >= (1ULL << 54))
		q = (1ULL << 54) - 1;
	rate = (q << 8) + ((num - q * rtt) << 8) / rtt;
	return pp_mul_q32(rate, l_q32);
}

static void fuzz_loss_rate(long iters)
{
	for (long it = 0; it < iters; it++) {
		pp_u64 w = edgy(PP_W_MAX + 5), l = edgy(1ULL << 32);
		pp_u32 rtt = (pp_u32)(rnd() % 8 == 0 ? rnd() % 6 : edgy(PP_RTT_MAX_US + 5));

		checks++;
		if (pp_rsflb_loss_rate_q24(w, rtt, l) != loss_rate_two_divisions(w, rtt, l))
			FAIL("rsflb_loss_rate(%llu, %u, %llu): %llu, two divisions %llu", w, rtt, l,
			     pp_rsflb_loss_rate_q24(w, rtt, l), loss_rate_two_divisions(w, rtt, l));
	}
}

/* OLIA's increment as it was computed before the one-pass scan: a pass for w_max, n and the
 * best l/rtt^2, then a pass counting M and B \ M, then i's membership (128-bit compares). */
static int olia_cmp_128(pp_u64 la, pp_u32 rtta, pp_u64 lb, pp_u32 rttb)
{
	u128 x = (u128)la * ((u128)rttb * rttb), y = (u128)lb * ((u128)rtta * rtta);

	return x > y ? 1 : (x < y ? -1 : 0);
}

static pp_s64 olia_inc_two_pass(const struct pp_sf_view *v, int nsf, int i)
{
	struct pp_norm o;
	pp_u64 w_max = 0, best_l = 0, n = 0, n_m = 0, n_bm = 0, first, w_i;
	pp_u32 best_rtt = 1;
	int any = 0, in_m, in_bm;

	if (!v[i].rtt_us)
		return pp_reno_inc(v[i].w);
	pp_normalise(v, nsf, i, &o);
	for (int k = 0; k < nsf; k++) {
		if (!pp_participates(v, k, i))
			continue;
		n++;
		if (!v[k].rtt_us)
			continue;
		if ((pp_clamp_w(v[k].w) >> 16) > w_max)
			w_max = pp_clamp_w(v[k].w) >> 16;
		if (!any || olia_cmp_128(v[k].lr, v[k].rtt_us, best_l, best_rtt) >= 0) {
			best_l = v[k].lr;
			best_rtt = v[k].rtt_us;
		}
		any = 1;
	}
	for (int k = 0; k < nsf; k++) {
		int m;

		if (!pp_olia_counted(v, k, i))
			continue;
		m = (pp_clamp_w(v[k].w) >> 16) == w_max;
		n_m += m;
		n_bm += !m && olia_cmp_128(v[k].lr, v[k].rtt_us, best_l, best_rtt) == 0;
	}
	w_i = pp_clamp_w(v[i].w);
	in_m = (w_i >> 16) == w_max;
	in_bm = !in_m && olia_cmp_128(v[i].lr, v[i].rtt_us, best_l, best_rtt) == 0;
	first = o.sum_t ? pp_share2_over_w(pp_frac_q32(o.t[i], o.sum_t),
					    pp_frac_q32(o.t[i], o.sum_t), 1, w_i) : 0;
	if (!n)
		n = 1;
	if (in_bm && n_bm)
		return (pp_s64)(first + (1ULL << 48) / (n * n_bm) / w_i);
	if (in_m && n_bm && n_m)
		return (pp_s64)first - (pp_s64)((1ULL << 48) / (n * n_m) / w_i);
	return (pp_s64)first;
}

/*
 * The BPF side copies only the slots in the connection's mask (and the own one) and zeroes the
 * rest (pp_views, kernel/bpf/pp_common.bpf.h). That is the same connection to every formula
 * exactly when nothing reads a slot that takes no part: garbage there must change nothing.
 */
static void fuzz_masked_views(long iters)
{
	struct pp_sf_view v[PP_MAX_SF], z[PP_MAX_SF];

	for (long it = 0; it < iters; it++) {
		int i, n = random_views(v, &i, (int)(rnd() % 2)), q = (int)(rnd() & 1);

		for (int k = 0; k < PP_MAX_SF; k++) {
			if (k >= n) {   /* slots past the connection's: anything, inactive */
				v[k].w = edgy(~0ULL);
				v[k].rtt_us = (pp_u32)edgy(0xffffffffULL);
				v[k].lr = edgy(~0ULL);
				v[k].active = 0;
			}
			z[k] = v[k];
			if (k != i && !v[k].active) {
				z[k].w = 0;
				z[k].rtt_us = 0;
				z[k].lr = 0;
			}
		}
		checks += 8;
		{
			struct pp_vset vv, zz;

			memcpy(vv.v, v, sizeof(vv.v));
			memcpy(zz.v, z, sizeof(zz.v));
			if (pp_max_inc(&vv, i) != pp_max_inc(&zz, i))
				FAIL("max reads a slot that takes no part");
		}
		if (pp_total_inc(v, PP_MAX_SF, i, 1ULL << 32) != pp_total_inc(z, PP_MAX_SF, i, 1ULL << 32))
			FAIL("coupled reads a slot that takes no part");
		if (pp_coupled_ssthresh(v, PP_MAX_SF, i) != pp_coupled_ssthresh(z, PP_MAX_SF, i))
			FAIL("coupled ssthresh reads a slot that takes no part");
		if (pp_lia_ratio(v, PP_MAX_SF, i) != pp_lia_ratio(z, PP_MAX_SF, i))
			FAIL("lia ratio reads a slot that takes no part");
		{
			/* Max's list from the slots (own path first, then the others taking part in
			 * slot order, as pp_max_slots_inc builds it): LIA's ratio, bit for bit. */
			struct pp_rate_list l;

			pp_rate_list_init(&l);
			pp_rate_list_add(&l, v[i].w, v[i].rtt_us);
			for (int k = 0; k < PP_MAX_SF; k++)
				if (k != i && v[k].active)
					pp_rate_list_add(&l, v[k].w, v[k].rtt_us);
			checks++;
			if (pp_rate_list_lia_ratio(&l) != pp_lia_ratio(v, PP_MAX_SF, i))
				FAIL("lia ratio of the list %llu, of the views %llu",
				     pp_rate_list_lia_ratio(&l), pp_lia_ratio(v, PP_MAX_SF, i));
			/* BALIA's list (r first, with an RTT sample): pp_balia_inc, bit for bit. */
			checks++;
			if (v[i].rtt_us && pp_balia_list_inc(&l) != pp_balia_inc(v, PP_MAX_SF, i))
				FAIL("balia inc of the list %lld, of the views %lld",
				     (long long)pp_balia_list_inc(&l),
				     (long long)pp_balia_inc(v, PP_MAX_SF, i));
		}
		if (pp_olia_inc(v, PP_MAX_SF, i) != pp_olia_inc(z, PP_MAX_SF, i))
			FAIL("olia reads a slot that takes no part");
		if (pp_balia_inc(v, PP_MAX_SF, i) != pp_balia_inc(z, PP_MAX_SF, i))
			FAIL("balia reads a slot that takes no part");
		if (pp_balia_ssthresh(v, PP_MAX_SF, i, q) != pp_balia_ssthresh(z, PP_MAX_SF, i, q))
			FAIL("balia ssthresh reads a slot that takes no part");
		if (pp_count_participants(v, i) != pp_count_participants(z, i))
			FAIL("participants read a slot that takes no part");
	}
}

/*
 * A connection where only subflow i takes part (the BPF side sees no sibling's bit in the
 * mask and skips the formula, each kernel/bpf/pp_<algo>.bpf.c's pp_algo_inc): each formula must give
 * Reno's 1/w_i (Semicoupled a/w_i) of the own view, exactly for OLIA, Coupled, Semicoupled and
 * Max, within BALIA's share rounding (2^-26 relative) for BALIA. The other slots hold garbage
 * and are inactive, as the formulas see siblings that left.
 */
static void fuzz_alone(long iters)
{
	struct pp_sf_view v[PP_MAX_SF];

	for (long it = 0; it < iters; it++) {
		int i = (int)(rnd() % PP_MAX_SF);
		pp_u64 a = rnd() % 2 ? rnd() % (3ULL << 32) : 1ULL << 32;
		struct pp_vset vs;
		pp_s64 reno, b;

		for (int k = 0; k < PP_MAX_SF; k++) {
			v[k].w = edgy(~0ULL);
			v[k].rtt_us = (pp_u32)edgy(0xffffffffULL);
			v[k].lr = edgy(~0ULL);
			v[k].active = 0;
		}
		if (rnd() % 2)
			v[i].w = PP_W_ONE + rnd() % (PP_W_MAX - PP_W_ONE + 1);
		if (rnd() % 8 == 0)
			v[i].rtt_us = 0;
		v[i].active = (pp_u32)(rnd() % 2);   /* the own view counts either way */
		memcpy(vs.v, v, sizeof(vs.v));
		reno = pp_reno_inc(v[i].w);
		checks += 5;
		if (pp_olia_inc(v, PP_MAX_SF, i) != reno)
			FAIL("olia alone %lld, reno %lld", (long long)pp_olia_inc(v, PP_MAX_SF, i),
			     (long long)reno);
		if (pp_total_inc(v, PP_MAX_SF, i, 1ULL << 32) != reno)
			FAIL("coupled alone is not reno");
		if (pp_total_inc(v, PP_MAX_SF, i, a) != pp_ewtcp_inc(v[i].w, a))
			FAIL("semicoupled alone is not a/w");
		if (pp_max_inc(&vs, i) != reno)
			FAIL("max alone %lld, reno %lld", (long long)pp_max_inc(&vs, i), (long long)reno);
		b = pp_balia_inc(v, PP_MAX_SF, i);
		if (b < 0 || (pp_u64)llabs(b - reno) > ((pp_u64)reno >> 26) + 1)
			FAIL("balia alone %lld, reno %lld (w %llu rtt %u)", (long long)b, (long long)reno,
			     v[i].w, v[i].rtt_us);
	}
}

/* OLIA's alpha term as two divisions (before pp_olia_inc made it one): the same quotient. */
static void fuzz_olia_alpha_division(long iters)
{
	for (long it = 0; it < iters; it++) {
		pp_u64 n = 1 + rnd() % PP_MAX_SF, m = 1 + rnd() % PP_MAX_SF;
		pp_u64 w = pp_clamp_w(rnd() % 2 ? edgy(~0ULL) : PP_W_ONE + rnd() % (1ULL << 24));
		pp_u64 x = 1ULL << (PP_INC_SHIFT + PP_W_SHIFT);

		checks++;
		if (x / (n * m) / w != x / (n * m * w))
			FAIL("olia alpha: %llu / (%llu %llu) / %llu", x, n, m, w);
	}
}

/* Connections made of few distinct windows and l/rtt^2 values, so that M and B have ties. */
static void fuzz_olia_sets(long iters)
{
	static const pp_u32 rtts[3] = { 10000, 20000, 40000 };
	struct pp_sf_view v[PP_MAX_SF];

	for (long it = 0; it < iters; it++) {
		int n = 1 + (int)(rnd() % PP_MAX_SF), i = (int)(rnd() % n);
		pp_u64 base = 1 + rnd() % 100000;
		pp_s64 got, want;

		memset(v, 0, sizeof(v));
		for (int k = 0; k < n; k++) {
			pp_u32 r = (pp_u32)(rnd() % 3);

			v[k].w = ((2 + rnd() % 3) << 16) + rnd() % 65536;
			v[k].rtt_us = rnd() % 10 ? rtts[r] : 0;
			v[k].lr = base * (1ULL << (2 * r)) * (1 + rnd() % 2) + (rnd() % 8 == 0);
			v[k].active = rnd() % 6 != 0;
			if (rnd() % 16 == 0) {   /* anything, the 128-bit compare included */
				v[k].w = edgy(~0ULL);
				v[k].lr = edgy(~0ULL);
				v[k].rtt_us = (pp_u32)edgy(0xffffffffULL);
			}
		}
		got = pp_olia_inc(v, n, i);
		want = olia_inc_two_pass(v, n, i);
		checks++;
		if (got != want)
			FAIL("olia one pass %lld, two passes %lld (n %d, i %d)", (long long)got,
			     (long long)want, n, i);
	}
}

/* pp_bitlen (now without branches) against a plain count, over every bit length and its
 * edges; pp_nonzero on the same values; pp_below and the clamps against plain comparisons. */
static void fuzz_bitlen(long iters)
{
	for (long it = 0; it < iters; it++) {
		int b = (int)(rnd() % 65), want = 0;
		pp_u64 x = b ? (1ULL << (b - 1)) : 0, y;

		if (b > 1 && rnd() % 2)
			x |= rnd() & (x - 1);
		if (b && rnd() % 4 == 0)
			x |= x - 1;   /* all ones below the top bit */
		for (y = x; y; y >>= 1)
			want++;
		checks++;
		if (pp_bitlen(x) != want)
			FAIL("bitlen(%llu) = %d, want %d", x, pp_bitlen(x), want);
		if (!(x >> 63)) {
			checks++;
			if (pp_nonzero(x) != (x != 0))
				FAIL("nonzero(%llu) = %llu", x, pp_nonzero(x));
		}
		/* The clamps (now without branches) against the plain comparisons, at any values. */
		{
			pp_u64 a = edgy(~0ULL), lo = edgy(~0ULL), hi = edgy(~0ULL), t, c;

			if (rnd() % 2)
				a = rnd() % 2 ? lo + rnd() % 3 - 1 : hi + rnd() % 3 - 1;
			if (lo > hi) {
				t = lo;
				lo = hi;
				hi = t;
			}
			c = a < lo ? lo : (a > hi ? hi : a);
			checks += 3;
			if (pp_below(a, lo) != (a < lo) || pp_below(hi, a) != (hi < a))
				FAIL("below(%llu, %llu / %llu)", a, lo, hi);
			if (pp_clamp_u64(a, lo, hi) != c)
				FAIL("clamp(%llu, %llu, %llu) = %llu, want %llu", a, lo, hi,
				     pp_clamp_u64(a, lo, hi), c);
			if (pp_clamp_rtt((pp_u32)a) != ((pp_u32)a < 1 ? 1 :
			    ((pp_u32)a > PP_RTT_MAX_US ? PP_RTT_MAX_US : (pp_u32)a)))
				FAIL("clamp_rtt(%u)", (pp_u32)a);
		}
	}
}

/* pp_pow_q32 as it was before its loop stopped at n's highest bit: all twenty squarings. */
static pp_u64 pow_q32_all_steps(pp_u64 base, pp_u32 n)
{
	pp_u64 r = 1ULL << 32;

	if (n >= (1U << 20))
		n = (1U << 20) - 1;
	for (int k = 0; k < 20; k++) {
		if (n & (1U << k))
			r = pp_mul_q32(r, base);
		base = pp_mul_q32(base, base);
	}
	return r;
}

static void fuzz_pow(long iters)
{
	for (long it = 0; it < iters; it++) {
		pp_u64 base = rnd() % 2 ? edgy(1ULL << 32) % ((1ULL << 32) + 1) : (1ULL << 32) - rnd() % 100000;
		pp_u32 n = rnd() % 3 ? (pp_u32)(rnd() % 64) : (pp_u32)edgy(~0ULL);

		checks++;
		if (pp_pow_q32(base, n) != pow_q32_all_steps(base, n))
			FAIL("pow_q32(%llu, %u): %llu, all steps %llu", base, n, pp_pow_q32(base, n),
			     pow_q32_all_steps(base, n));
	}
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 1000000;

	if (argc > 2)
		ratio_cap = atof(argv[2]);

	fuzz_glue(iters);
	fuzz_ssthresh_repair(iters / 4);
	fuzz_algorithms(iters / 2);
	fuzz_olia_cmp(iters);
	fuzz_pow(iters / 4);
	fuzz_loss_rate(iters / 4);
	fuzz_olia_sets(iters / 4);
	fuzz_masked_views(iters / 4);
	fuzz_alone(iters / 4);
	fuzz_olia_alpha_division(iters / 4);
	fuzz_bitlen(iters / 4);
	printf("fuzz_test: %ld checks, %ld failures\n", checks, failures);
	printf("worst relative error inside the domain (beyond 2^-24): reno %.2g lia %.2g olia %.2g "
	       "balia %.2g rsf-db %.2g ewtcp %.2g semicoupled %.2g coupled-ssthresh %.2g max %.2g\n",
	       worst[0], worst[1], worst[2], worst[3], worst[4], worst[5], worst[6], worst[7],
	       worst[8]);
	return failures ? 1 : 0;
}

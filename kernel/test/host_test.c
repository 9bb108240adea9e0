// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * host_test: checks kernel/include/pp_cc_math.h (the arithmetic every BPF object runs) against
 * the vectors that crates/pathpool-cc/examples/kernel_vectors.rs produced from the Rust
 * reference controllers (kernel/test/vectors.json).
 *
 *   host_test [vectors.json]      exit 0 = every vector within the bound; prints a summary
 *
 * Bound (stated in pp_cc_math.h): per-ACK increment |err| <= 1e-5 |exact| + 2^-24 segments,
 * plus |exact| * 2^-15 / b_r for olia and balia; new ssthresh after a loss
 * |err| <= 1e-5 |exact| + 2^-15 segments. Also checks the increment
 * accumulator (pp_apply_inc) against exact integer arithmetic.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pp_cc_math.h"

#define REL_TOL 1e-5
#define ABS_TOL_INC (1.0 / (1 << 24))
#define ABS_TOL_SSTH (1.0 / (1 << 15))

static int failures, checked;
/* The rate-dependent term of the bound (olia, balia): |exact| * 2^-15 / b_r. */
static double extra_tol;
static double worst_rel[10];

static int algo_index(const char *a)
{
	static const char *names[] = { "reno", "lia", "olia", "balia", "rsf-db", "rsf-lb", "ewtcp",
				       "coupled", "semicoupled", "max", NULL };

	for (int i = 0; names[i]; i++)
		if (!strcmp(a, names[i]))
			return i;
	return -1;
}

static void check(const char *what, int idx, double got, double exact, double abs_tol)
{
	double err = fabs(got - exact), rel = exact != 0 ? err / fabs(exact) : err;

	abs_tol += extra_tol;
	checked++;
	if (rel > worst_rel[idx] && err > abs_tol)
		worst_rel[idx] = rel;
	if (err > REL_TOL * fabs(exact) + abs_tol || isnan(got)) {
		failures++;
		if (failures <= 20)
			fprintf(stderr, "FAIL %s: got %.12g want %.12g (err %.3g)\n", what, got, exact, err);
	}
}

static void test_apply_inc(void)
{
	/* Random walk of increments against exact integer arithmetic in 2^-32 units. */
	unsigned long long x = 88172645463325252ULL;
	pp_u32 cwnd = 10;
	pp_u64 frac = 0;
	long double exact = 10.0L;

	for (int k = 0; k < 100000; k++) {
		pp_s64 inc;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		inc = (pp_s64)(x % (3ULL << 31)) - (pp_s64)(1ULL << 31);  /* [-0.5, 1) segments */
		pp_apply_inc(&cwnd, &frac, inc);
		exact += (long double)inc / 4294967296.0L;
		if (exact < 1.0L)
			exact = 1.0L;   /* the floor pp_apply_inc applies (cwnd 1, fraction 0) */
		checked++;
		if (fabsl((long double)cwnd + (long double)frac / 4294967296.0L - exact) > 1e-9L) {
			failures++;
			fprintf(stderr, "FAIL apply_inc step %d: %u + %llu/2^32 vs %.12Lf\n", k, cwnd,
				frac, exact);
			return;
		}
	}
}

/*
 * An RSF-LB sequence: the estimator (pp_loss_est) is carried from step to step exactly as the
 * BPF object carries it in its socket's private area; each step's window comes from the vector.
 * Returns the number of steps checked.
 */
static int run_rsflb_sequence(json_t *v, size_t n)
{
	double mu = json_number_value(json_object_get(v, "mu"));
	double window = json_number_value(json_object_get(v, "loss_window"));
	pp_u64 keep1 = (pp_u64)((1.0 - 1.0 / window) * 4294967296.0 + 0.5);
	pp_u64 mu_q24 = (pp_u64)(mu * 65536.0) << 8;   /* the loader's q16 tunable, as the BPF side */
	struct pp_loss_est e;
	json_t *steps = json_object_get(v, "steps"), *st;
	size_t k;
	char what[96];

	pp_loss_est_init(&e, 0, 0);
	extra_tol = 0;
	json_array_foreach(steps, k, st) {
		const char *ev = json_string_value(json_object_get(st, "ev"));
		pp_u32 delivered = (pp_u32)json_integer_value(json_object_get(st, "delivered"));
		pp_u32 lost = (pp_u32)json_integer_value(json_object_get(st, "lost"));
		pp_u32 rtt_us = (pp_u32)json_integer_value(json_object_get(st, "rtt_us"));
		double w0 = json_real_value(json_object_get(st, "w_before"));
		pp_u64 w = (pp_u64)llround(w0 * 65536.0);

		snprintf(what, sizeof(what), "rsf-lb sequence %zu step %zu (%s)", n, k, ev ? ev : "?");
		pp_loss_est_update(&e, delivered, lost, keep1);
		if (ev && !strcmp(ev, "loss")) {
			double want = json_real_value(json_object_get(st, "ssthresh_after"));

			extra_tol = 0;
			check(what, 5, (double)pp_reno_ssthresh(w) / 65536.0, want, ABS_TOL_SSTH);
		} else {
			double want = json_real_value(json_object_get(st, "w_after")) - w0;
			pp_u64 l = pp_rsflb_loss_rate_q24(w, rtt_us, pp_loss_est_q32(&e));
			double L = (double)l / 16777216.0, wd = (double)w / 65536.0;

			/* The window enters as q16 (pp_window_q16), and the factor amplifies a relative
			 * error of lambda by mu/L: |d inc| <= (mu/L + 1) 2^-16 / w^2. */
			extra_tol = L > 0 ? (mu / L + 1.0) / 65536.0 / (wd * wd) : 0;

			check(what, 5, (double)pp_rsflb_inc(w, mu_q24, l) / 4294967296.0, want, ABS_TOL_INC);
		}
	}
	return (int)k;
}


/* ------------------------------------------ EWTCP, Coupled, Semicoupled, Max (idx 6-9) --- */

#define IDX_EWTCP 6
#define IDX_COUPLED 7
#define IDX_SEMICOUPLED 8
#define IDX_MAX 9

/* A weight as the loader writes it (pp_loader.c: a * 2^32 rounded). */
static pp_u64 weight_q32(double a)
{
	return (pp_u64)(a * 4294967296.0 + 0.5);
}

/*
 * One congestion-avoidance increment of the four, as the BPF objects compute it. EWTCP's
 * default weight 1/n^2 (the vector's a equals it) is taken the BPF way, from the count of the
 * connection's slot mask; a written one from the loader's rounding.
 */
static pp_s64 nsdi_inc(int idx, struct pp_vset *vs, int nsf, int i, double a)
{
	switch (idx) {
	case IDX_EWTCP:
		if (fabs(a - 1.0 / ((double)nsf * nsf)) < 1e-15)
			return pp_ewtcp_inc(vs->v[i].w,
					    pp_ewtcp_default_a_q32(pp_mask_count(pp_active_mask(vs->v))));
		return pp_ewtcp_inc(vs->v[i].w, weight_q32(a));
	case IDX_COUPLED:
		return pp_total_inc(vs->v, nsf, i, 1ULL << 32);
	case IDX_SEMICOUPLED:
		return pp_total_inc(vs->v, nsf, i, weight_q32(a));
	default:
		return pp_max_inc(vs, i);
	}
}

static pp_u64 nsdi_ssthresh(int idx, const struct pp_sf_view *v, int nsf, int i)
{
	return idx == IDX_COUPLED ? pp_coupled_ssthresh(v, nsf, i) : pp_reno_ssthresh(v[i].w);
}

/* ---------------------------------------------------- coupled event sequences (stateful) -- */

static double jnum(json_t *o, const char *k)
{
	json_t *x = json_object_get(o, k);

	return json_is_integer(x) ? (double)json_integer_value(x) : json_real_value(x);
}

/* The window a subflow shows its siblings: ssthresh while in recovery (pathpool-cc's
 * crt_cwnd for OLIA; for LIA/BALIA the transport's cwnd, which equals it in recovery). */
static void seq_views(json_t *sfs, struct pp_vset *vs, int olia)
{
	json_t *sf;
	size_t k;

	memset(vs, 0, sizeof(*vs));
	json_array_foreach(sfs, k, sf) {
		double w = jnum(sf, "cwnd"), ss = jnum(sf, "ssthresh");

		if (k >= PP_MAX_SF)
			break;
		if (olia && jnum(sf, "rec") != 0 && ss >= 0)
			w = ss;
		vs->v[k].w = (pp_u64)llround(w * 65536.0);
		vs->v[k].rtt_us = (pp_u32)jnum(sf, "rtt_us");
		vs->v[k].active = 1;
	}
}

/*
 * Replays one LIA/OLIA/BALIA sequence. Every step's windows come from the vector; the hidden
 * state is carried here exactly as the BPF objects carry it (pp_common.bpf.h): LIA's
 * pp_lia_state on the connection, OLIA's pp_olia_marks per subflow and the l_r each subflow
 * last published. Returns the number of steps.
 */
static int run_coupled_sequence(json_t *v, size_t n, int idx)
{
	int quantised = !strcmp(json_string_value(json_object_get(v, "variant")), "kernel");
	const char *counting = json_string_value(json_object_get(v, "counting"));
	int per_ack = !counting || !strcmp(counting, "acks");
	double a = jnum(v, "a");
	json_t *steps = json_object_get(v, "steps"), *st;
	struct pp_lia_state lia;
	struct pp_olia_marks marks[PP_MAX_SF];
	pp_u64 published_l[PP_MAX_SF] = { 0 };
	size_t k;
	char what[128];

	pp_lia_init(&lia);
	for (int q = 0; q < PP_MAX_SF; q++)
		pp_olia_marks_init(&marks[q], 0);
	json_array_foreach(steps, k, st) {
		const char *ev = json_string_value(json_object_get(st, "ev"));
		int i = (int)jnum(st, "i"), nsf = (int)json_array_size(json_object_get(st, "sf"));
		json_t *sf_i = json_array_get(json_object_get(st, "sf"), i);
		double w0 = jnum(sf_i, "cwnd"), ss0 = jnum(sf_i, "ssthresh");
		double w_after = jnum(st, "cwnd_after"), ss_after = jnum(st, "ssthresh_after");
		struct pp_vset vs;
		int ss_ack = !strcmp(ev, "ack") && (ss0 < 0 || w0 < ss0);

		snprintf(what, sizeof(what), "%s sequence %zu step %zu (%s on %d)",
			 idx == 1 ? "lia" : idx == 2 ? "olia" : idx == 3 ? (quantised ? "balia-kernel" :
			 "balia") : json_string_value(json_object_get(v, "algo")), n, k, ev, i);
		seq_views(json_object_get(st, "sf"), &vs, idx == 2);
		/* An ACK carries this step's RTT sample (the transport updates srtt first). */
		if (!strcmp(ev, "ack"))
			vs.v[i].rtt_us = (pp_u32)jnum(st, "rtt_us");
		for (int q = 0; q < nsf && q < PP_MAX_SF; q++)
			vs.v[q].lr = published_l[q];
		extra_tol = 0;
		if (!strcmp(ev, "ack")) {
			if (idx == 2) {
				pp_olia_marks_ack(&marks[i], (pp_u64)jnum(st, "pos"));
				vs.v[i].lr = published_l[i] = pp_olia_marks_l(&marks[i]);
			}
			pp_u32 segs = (pp_u32)jnum(st, "segs"), credit;
			double wb = w0;

			if (ss_ack) {
				/* Linux slow start (pathpool-cc's on the real-valued window); LIA
				 * recomputes with the grown window; the leftover is the CA credit. */
				double room = ss0 < 0 ? 1e300 : ss0 - w0, grow = room < segs ? room : segs;

				wb = w0 + grow;
				vs.v[i].w = (pp_u64)llround(wb * 65536.0);
				if (idx == 1)
					pp_lia_ss_ack(&lia, &vs, i);
				credit = pp_ca_credit(segs, 1, (pp_u32)ceil(grow), per_ack);
			} else {
				credit = pp_ca_credit(segs, 0, 0, per_ack);
			}
			if (credit) {
				pp_s64 inc;

				if (idx == 1)
					inc = pp_lia_ca_inc(&lia, &vs, i);
				else if (idx == 2)
					inc = pp_olia_inc(vs.v, PP_MAX_SF, i);
				else if (idx == 3)
					inc = pp_balia_inc(vs.v, PP_MAX_SF, i);
				else
					inc = nsdi_inc(idx, &vs, PP_MAX_SF, i, a);
				/* n steps of one increment: n times its error bound. */
				extra_tol = (credit - 1) * ABS_TOL_INC;
				check(what, idx, (double)credit * (double)inc / 4294967296.0, w_after - wb,
				      ABS_TOL_INC);
				extra_tol = 0;
				if (idx == 1) {
					vs.v[i].w = (pp_u64)llround(w_after * 65536.0);
					pp_lia_after_step(&lia, &vs, i, floor(w_after) > floor(wb));
				}
			} else {
				checked++;
				if (fabs(w_after - wb) > 1e-9) {
					failures++;
					if (failures <= 20)
						fprintf(stderr, "FAIL %s: no CA credit, but pathpool-cc moved %g -> %g\n",
							what, wb, w_after);
				}
			}
		} else if (!strcmp(ev, "loss") || !strcmp(ev, "rto")) {
			pp_u64 got;

			if (idx == 2) {
				pp_olia_marks_loss(&marks[i]);
				published_l[i] = pp_olia_marks_l(&marks[i]);
			}
			if (idx == 1 && !strcmp(ev, "rto"))
				pp_lia_rto(&lia, &vs, i);   /* the pre-timeout window (CA_EVENT_LOSS) */
			else if (idx == 1)
				pp_lia_state_change(&lia);
			got = idx == 3 ? pp_balia_ssthresh(vs.v, PP_MAX_SF, i, quantised)
			    : idx >= IDX_EWTCP ? nsdi_ssthresh(idx, vs.v, PP_MAX_SF, i)
					       : pp_reno_ssthresh(vs.v[i].w);
			check(what, idx, (double)got / 65536.0, ss_after, ABS_TOL_SSTH);
		} else if (!strcmp(ev, "exit")) {
			if (idx == 1)
				pp_lia_state_change(&lia);
		} /* rec_ack: bytes acknowledged in recovery, no call (cong_avoid is not called) */
		if (idx == 1) {
			double want = jnum(st, "ratio"), got = (double)lia.ratio_q32 / 4294967296.0;

			if (want < 0)
				want = 1.0;   /* none yet: "infinite", capped at 1 segment like the C */
			check(what, idx, got, want, ABS_TOL_INC);
			checked++;
			if ((double)lia.recomputations != jnum(st, "recomp")) {
				failures++;
				if (failures <= 20)
					fprintf(stderr, "FAIL %s: %u alpha recomputations, pathpool-cc %g\n",
						what, lia.recomputations, jnum(st, "recomp"));
			}
		}
		if (idx == 2) {
			json_t *ls = json_object_get(st, "l");

			for (int q = 0; q < nsf; q++) {
				checked++;
				if ((double)published_l[q] != json_number_value(json_array_get(ls, q))) {
					failures++;
					if (failures <= 20)
						fprintf(stderr, "FAIL %s: l[%d] = %llu, pathpool-cc %g\n", what, q,
							published_l[q], json_number_value(json_array_get(ls, q)));
				}
			}
		}
	}
	return (int)k;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "kernel/test/vectors.json";
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr), *vecs, *v;
	size_t n;
	int per_algo[10] = { 0 }, seq_steps[10] = { 0 };

	if (!root) {
		fprintf(stderr, "%s:%d: %s\n", path, jerr.line, jerr.text);
		return 2;
	}
	vecs = json_object_get(root, "vectors");
	json_array_foreach(vecs, n, v) {
		const char *algo = json_string_value(json_object_get(v, "algo"));
		const char *event = json_string_value(json_object_get(v, "event"));
		int i = (int)json_integer_value(json_object_get(v, "i"));
		json_t *sfs = json_object_get(v, "subflows"), *sf;
		struct pp_sf_view view[PP_MAX_SF];
		int idx = algo ? algo_index(algo) : -1, nsf = 0;
		double w0 = json_real_value(json_object_get(v, "w_before"));
		size_t k;
		char what[96];

		if (idx < 0 || !event) {
			fprintf(stderr, "%s: vector %zu: unknown algo\n", path, n);
			return 2;
		}
		if (!strcmp(event, "seq")) {
			if (idx == 5)
				per_algo[idx] += run_rsflb_sequence(v, n);
			else if ((idx >= 1 && idx <= 3) || idx >= IDX_EWTCP)
				seq_steps[idx] += run_coupled_sequence(v, n, idx);
			else {
				fprintf(stderr, "%s: vector %zu: no sequence replay for %s\n", path, n, algo);
				return 2;
			}
			continue;
		}
		memset(view, 0, sizeof(view));
		json_array_foreach(sfs, k, sf) {
			if (k >= PP_MAX_SF)
				break;
			view[k].w = (pp_u64)llround(json_real_value(json_object_get(sf, "cwnd")) * 65536.0);
			view[k].rtt_us = (pp_u32)json_integer_value(json_object_get(sf, "rtt_us"));
			view[k].active = 1;
			/* OLIA: the ACK's own bytes are in l2r before the step (the kernel's
			 * bytes_acked is updated before cong_avoid; pathpool-cc counts them
			 * first too); every other path of a fresh connection has l_r = 0. */
			if ((int)k == i && idx == 2)
				view[k].lr = (pp_u64)json_integer_value(json_object_get(root, "mss"));
			nsf++;
		}
		snprintf(what, sizeof(what), "%s %s vector %zu", algo, event, n);
		per_algo[idx]++;
		if (!strcmp(event, "loss")) {
			double want = json_real_value(json_object_get(v, "ssthresh_after"));
			pp_u64 got = idx == 3 ? pp_balia_ssthresh(view, nsf, i, 0)
				     : idx >= IDX_EWTCP ? nsdi_ssthresh(idx, view, nsf, i)
							: pp_reno_ssthresh(view[i].w);
			check(what, idx, (double)got / 65536.0, want, ABS_TOL_SSTH);
			continue;
		}
		{
			double want = json_real_value(json_object_get(v, "w_after")) - w0;
			pp_s64 inc = 0;

			switch (idx) {
			case 0: inc = pp_reno_inc(view[i].w); break;
			case 1: inc = pp_lia_inc(pp_lia_ratio(view, nsf, i), view[i].w); break;
			case 2: inc = pp_olia_inc(view, nsf, i); break;
			case 3: inc = pp_balia_inc(view, nsf, i); break;
			case IDX_EWTCP: case IDX_COUPLED: case IDX_SEMICOUPLED: case IDX_MAX: {
				struct pp_vset vs;

				memcpy(vs.v, view, sizeof(view));
				inc = nsdi_inc(idx, &vs, nsf, i, jnum(v, "a"));
				break;
			}
			case 4:
				inc = pp_rsfdb_inc(view[i].w,
						   (pp_u64)json_integer_value(json_object_get(v, "d_us")),
						   (pp_u64)json_integer_value(json_object_get(v, "q_us")));
				break;
			}
			extra_tol = 0;
			if (idx == 2 || idx == 3) {
				double rmin = 1e30, tr;

				for (int q = 0; q < nsf; q++)
					if (view[q].rtt_us < rmin)
						rmin = view[q].rtt_us;
				tr = (double)view[i].w / 65536.0 * (rmin / view[i].rtt_us) *
				     (rmin / view[i].rtt_us);
				extra_tol = fabs(want) * (1.0 / 32768.0) / tr;
			}
			check(what, idx, (double)inc / 4294967296.0, want, ABS_TOL_INC);
		}
	}
	test_apply_inc();
	printf("host_test: %d checks, %d failures (reno %d, lia %d, olia %d, balia %d, rsf-db %d, "
	       "rsf-lb %d, ewtcp %d, coupled %d, semicoupled %d, max %d vectors; sequence steps: "
	       "lia %d, olia %d, balia %d, ewtcp %d, coupled %d, semicoupled %d, max %d)\n",
	       checked, failures, per_algo[0], per_algo[1], per_algo[2], per_algo[3], per_algo[4],
	       per_algo[5], per_algo[6], per_algo[7], per_algo[8], per_algo[9], seq_steps[1],
	       seq_steps[2], seq_steps[3], seq_steps[6], seq_steps[7], seq_steps[8], seq_steps[9]);
	printf("worst relative error beyond the absolute floor: reno %.2g lia %.2g olia %.2g "
	       "balia %.2g rsf-db %.2g rsf-lb %.2g ewtcp %.2g coupled %.2g semicoupled %.2g "
	       "max %.2g\n", worst_rel[0], worst_rel[1], worst_rel[2], worst_rel[3], worst_rel[4],
	       worst_rel[5], worst_rel[6], worst_rel[7], worst_rel[8], worst_rel[9]);
	json_decref(root);
	return failures ? 1 : 0;
}

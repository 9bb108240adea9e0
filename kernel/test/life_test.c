// SPDX-License-Identifier: GPL-2.0
/*
 * life_test: the connection entry's lifetime (kernel/include/pp_conn_life.h, the code
 * pp_ops.bpf.h runs in pp_init/pp_release) driven by threads on the host.
 *
 *   life_test [stress_seconds] [stress-only]   exit 0 = no invariant broken; prints a summary
 *
 * Built twice (kernel/Makefile): life_test with pp_conn_life.h, life_test_v0 with life_v0.h,
 * the algorithm before the fix, which must fail (the checks are shown to catch the race).
 *
 * A subflow is what pp_init/pp_release do: get a reference to its connection's entry, take a
 * slot (CAS 0 -> its id), later check the slot is still its own, clear it and put the reference.
 * A claim resets the slots, as pp_ops.bpf.h's pp_life_reset does. Checks:
 *   - a subflow joins only an entry owned by its own connection, and no entry ever holds
 *     subflows of two connections (bookkeeping beside the entries);
 *   - a subflow's slot is never reset under it (a claim of an entry still in use);
 *   - whenever all threads are quiescent: every entry's reference count equals the subflows
 *     holding it, and an entry is free (v0: owner 0) exactly when none does; after the last
 *     subflow left, every entry is free and pp_conn_ids is empty.
 * Two parts: scripted interleavings (one thread paused at a race point while the main thread
 * runs the other side: each interleaving of claim / join / release in the header's comment),
 * then a random stress with delays injected at every race point.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long __u64;
typedef unsigned int __u32;
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define PP_LIFE_N 4
#define PP_SF 4
#define KEYS 6

static void race_point(int n);
#define PP_RACE_POINT(n) race_point(n)

struct pp_life;
static struct pp_life *pp_life_at(__u32 idx);
static int pp_life_ids_get(__u64 key, __u64 *hint);
static int pp_life_ids_add(__u64 key, __u64 hint);
static void pp_life_ids_del(__u64 key);
static void pp_life_reset(__u32 idx);
static __u32 pp_life_scan(__u64 key);

#ifdef LIFE_V0
#include "../test/life_v0.h"
#define VERSION "v0 (before the fix)"
#else
#include "pp_conn_life.h"
#define VERSION "pp_conn_life.h"
#endif

/* ---- the maps ---------------------------------------------------------------------------- */

struct entry {
	struct pp_life life;
	__u64 slot[PP_SF];
};
static struct entry pool[PP_LIFE_N];

/* pp_conn_ids: a hash map is atomic per operation; a mutex gives the same. */
static pthread_mutex_t ids_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { __u64 key, val; int used; } ids[64];

static struct pp_life *pp_life_at(__u32 idx)
{
	return idx < PP_LIFE_N ? &pool[idx].life : NULL;
}

static int pp_life_ids_get(__u64 key, __u64 *hint)
{
	int r = -1;

	pthread_mutex_lock(&ids_mu);
	for (int i = 0; i < 64; i++)
		if (ids[i].used && ids[i].key == key) {
			*hint = ids[i].val;
			r = 0;
		}
	pthread_mutex_unlock(&ids_mu);
	return r;
}

static int pp_life_ids_add(__u64 key, __u64 hint)
{
	int r = -1, free_i = -1;

	pthread_mutex_lock(&ids_mu);
	for (int i = 0; i < 64; i++) {
		if (ids[i].used && ids[i].key == key)
			goto out;   /* BPF_NOEXIST: -EEXIST */
		if (!ids[i].used && free_i < 0)
			free_i = i;
	}
	if (free_i >= 0) {
		ids[free_i].key = key;
		ids[free_i].val = hint;
		ids[free_i].used = 1;
		r = 0;
	}
out:
	pthread_mutex_unlock(&ids_mu);
	return r;
}

static void pp_life_ids_del(__u64 key)
{
	pthread_mutex_lock(&ids_mu);
	for (int i = 0; i < 64; i++)
		if (ids[i].used && ids[i].key == key)
			ids[i].used = 0;
	pthread_mutex_unlock(&ids_mu);
}

static int ids_count(void)
{
	int n = 0;

	for (int i = 0; i < 64; i++)
		n += ids[i].used;
	return n;
}

static void pp_life_reset(__u32 idx)
{
	for (int k = 0; k < PP_SF; k++)
		pool[idx].slot[k] = 0;
}

static __u32 pp_life_scan(__u64 key)
{
	__u32 start = pp_life_start(key);

	for (__u32 n = 0; n < PP_LIFE_N; n++) {
		__u32 idx = (start + n) & (PP_LIFE_N - 1);

		if (pp_life_try_claim(idx, key))
			return idx;
	}
	return PP_LIFE_N;
}

/* ---- checks -------------------------------------------------------------------------------- */

static long failures, checks;

#define CHECK(cond, ...) do {                                            \
		__sync_fetch_and_add(&checks, 1);                        \
		if (!(cond)) {                                           \
			if (__sync_fetch_and_add(&failures, 1) < 10) {   \
				fprintf(stderr, "FAIL: " __VA_ARGS__);   \
				fputc('\n', stderr);                     \
			}                                                \
		}                                                        \
	} while (0)

/* Beside the entries: which connection's subflows hold each, and how many. */
static pthread_mutex_t book_mu = PTHREAD_MUTEX_INITIALIZER;
static __u64 book_key[PP_LIFE_N];
static long book_n[PP_LIFE_N];

static __u64 refs_of(__u32 idx)
{
#ifdef PP_LIFE_V0
	return pool[idx].life.word;
#else
	return pool[idx].life.word & PP_LIFE_REFS;
#endif
}

static int is_free(__u32 idx)
{
#ifdef PP_LIFE_V0
	return pool[idx].life.owner == 0;
#else
	return refs_of(idx) == 0;
#endif
}

struct sf {
	__u64 key, id;
	__u32 idx, slot;   /* idx PP_LIFE_N: uncoupled */
};

static long uncoupled;

/* pp_init */
static void sf_init(struct sf *s, __u64 key, __u64 id)
{
	s->key = key;
	s->id = id;
	s->slot = PP_SF;
	s->idx = pp_life_get(key);
	if (s->idx >= PP_LIFE_N) {
		__sync_fetch_and_add(&uncoupled, 1);
		return;
	}
	CHECK(pool[s->idx].life.owner == key, "subflow %llu of connection %llu joined entry %u owned by %llu",
	      id, key, s->idx, pool[s->idx].life.owner);
	pthread_mutex_lock(&book_mu);
	CHECK(book_n[s->idx] == 0 || book_key[s->idx] == key,
	      "entry %u held by connections %llu and %llu at once", s->idx, book_key[s->idx], key);
	book_key[s->idx] = key;
	book_n[s->idx]++;
	pthread_mutex_unlock(&book_mu);
	for (__u32 k = 0; k < PP_SF; k++)
		if (__sync_val_compare_and_swap(&pool[s->idx].slot[k], 0, id) == 0) {
			s->slot = k;
			return;
		}
	/* No slot: pp_init drops its reference and runs uncoupled. */
	pthread_mutex_lock(&book_mu);
	book_n[s->idx]--;
	pthread_mutex_unlock(&book_mu);
	pp_life_put(s->idx, key);
	s->idx = PP_LIFE_N;
	__sync_fetch_and_add(&uncoupled, 1);
}

/* pp_release */
static void sf_release(struct sf *s)
{
	if (s->idx >= PP_LIFE_N)
		return;
	CHECK(pool[s->idx].slot[s->slot] == s->id,
	      "subflow %llu's slot %u of entry %u was reset under it (now %llu)", s->id, s->slot,
	      s->idx, pool[s->idx].slot[s->slot]);
	__sync_val_compare_and_swap(&pool[s->idx].slot[s->slot], s->id, 0);
	pthread_mutex_lock(&book_mu);
	book_n[s->idx]--;
	pthread_mutex_unlock(&book_mu);
	pp_life_put(s->idx, s->key);
	s->idx = PP_LIFE_N;
}

/* With no operation under way: references equal the holders, free exactly when none. */
static void check_quiescent(const char *when)
{
	for (__u32 i = 0; i < PP_LIFE_N; i++) {
		CHECK(refs_of(i) == (__u64)book_n[i], "%s: entry %u has %llu references for %ld subflows",
		      when, i, refs_of(i), book_n[i]);
		CHECK(is_free(i) == (book_n[i] == 0), "%s: entry %u is %s with %ld subflows", when, i,
		      is_free(i) ? "free" : "taken", book_n[i]);
	}
}

static void check_empty(const char *when)
{
	check_quiescent(when);
	CHECK(ids_count() == 0, "%s: pp_conn_ids holds %d hints after every subflow left", when,
	      ids_count());
}

/* ---- race points: a scripted pause, or random delays in the stress --------------------------- */

static __thread int pause_at;           /* the race point this thread stops at once (0: none) */
static __thread unsigned long long rng; /* the stress's per-thread generator (0: no delays) */
static sem_t reached, resume;

static unsigned long long rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static void race_point(int n)
{
	if (pause_at && pause_at == n) {
		pause_at = 0;
		sem_post(&reached);
		sem_wait(&resume);
	}
	if (rng) {
		unsigned long long r = rnd() % 16;

		if (r < 4)
			sched_yield();
		else if (r == 4)
			usleep(1 + rnd() % 50);
		else if (r < 8)
			for (volatile int i = rnd() % 2000; i > 0; i--)
				;
	}
}

/* ---- scripted interleavings ------------------------------------------------------------------ */

struct paused {
	pthread_t th;
	int point;
	int release;     /* 0: run sf_init, 1: run sf_release */
	struct sf *s;
	__u64 key, id;
};

static void *paused_main(void *arg)
{
	struct paused *p = arg;

	pause_at = p->point;
	if (p->release)
		sf_release(p->s);
	else
		sf_init(p->s, p->key, p->id);
	if (pause_at)            /* never reached its point (the other version has none there) */
		sem_post(&reached);
	return NULL;
}

/* Start the operation on a thread; return once it is paused at its point (or done). */
static void start_paused(struct paused *p)
{
	pthread_create(&p->th, NULL, paused_main, p);
	sem_wait(&reached);
}

static void finish_paused(struct paused *p)
{
	sem_post(&resume);
	pthread_join(p->th, NULL);
}

static void reset_all(void)
{
	memset(pool, 0, sizeof(pool));
	memset(ids, 0, sizeof(ids));
	memset(book_n, 0, sizeof(book_n));
	/* Consume a resume left over by a thread that never paused. */
	while (sem_trywait(&resume) == 0)
		;
}

#define K 0x1000
#define K2 0x2000
#define K3 0x3000

/* A connection key near base whose scan for a free entry starts at idx. */
static __u64 key_at(__u64 base, __u32 idx)
{
	__u64 key = base;

	while (pp_life_start(key) != idx)
		key += 0x40;
	return key;
}

/* A joiner of K reads K's hint, then K's last subflow leaves, then K2 claims an entry. */
static void script_join_vs_last_release(void)
{
	struct sf a, b, c;
	struct paused p = { .point = 5, .s = &a, .key = K, .id = 2 };
	__u32 x;

	reset_all();
	sf_init(&b, K, 1);
	start_paused(&p);          /* A: hint of K read, not yet joined */
	x = b.idx;
	sf_release(&b);            /* K's last subflow: the entry is freed */
	finish_paused(&p);         /* A joins (v0: revives the freed entry) */
	sf_init(&c, key_at(K2, x), 3);   /* K2 claims from x on: must not share A's entry */
	check_quiescent("join vs last release");
	sf_release(&a);
	sf_release(&c);
	check_empty("join vs last release, all left");
}

/* ABA: between A's hint read and its join, K's entry is freed and claimed again by K2. */
static void script_aba(void)
{
	struct sf a, b, c;
	struct paused p = { .point = 5, .s = &a, .key = K, .id = 2 };

	__u32 x;

	reset_all();
	sf_init(&b, K, 1);
	x = b.idx;
	start_paused(&p);
	sf_release(&b);
	sf_init(&c, key_at(K2, x), 3);   /* claims K's old entry x */
	CHECK(c.idx == x, "ABA: K2 claimed entry %u, not K's old entry %u", c.idx, x);
	finish_paused(&p);
	check_quiescent("ABA");
	CHECK(a.idx == PP_LIFE_N || a.idx != c.idx, "ABA: K's joiner landed in K2's entry %u", c.idx);
	sf_release(&a);
	sf_release(&c);
	check_empty("ABA, all left");
}

/* Inside the join: the word read, then the last release, then the CAS. */
static void script_cas_vs_last_release(void)
{
	struct sf a, b;
	struct paused p = { .point = 4, .s = &a, .key = K, .id = 2 };

	reset_all();
	sf_init(&b, K, 1);
	start_paused(&p);
	sf_release(&b);
	finish_paused(&p);
	check_quiescent("CAS vs last release");
	sf_release(&a);
	check_empty("CAS vs last release, all left");
}

/* Two first subflows of K: A has claimed an entry but not published its hint when B does. */
static void script_two_first_subflows(void)
{
	struct sf a, b;
	struct paused p = { .point = 6, .s = &a, .key = K, .id = 2 };

	reset_all();
	start_paused(&p);
	sf_init(&b, K, 1);
	finish_paused(&p);
	check_quiescent("two first subflows");
	CHECK(a.idx == b.idx && a.idx < PP_LIFE_N, "two first subflows: entries %u and %u", a.idx, b.idx);
	sf_release(&b);
	sf_release(&a);
	check_empty("two first subflows, all left");
}

/* A join while the last release is between its decrement and its hint delete. */
static void script_join_in_delete_window(void)
{
	struct sf a, b, c;
	struct paused p = { .point = 3, .release = 1, .s = &b };
	__u32 b_idx;

	reset_all();
	sf_init(&b, K, 1);
	b_idx = b.idx;
	start_paused(&p);          /* B: references 1 -> 0, hint not yet deleted */
	sf_init(&a, K, 2);         /* A: must not revive the entry (it may run uncoupled) */
	finish_paused(&p);
	sf_init(&c, key_at(K2, b_idx), 3);
	check_quiescent("join in the delete window");
	sf_release(&a);
	sf_release(&c);
	check_empty("join in the delete window, all left");
}

/* A full array: a new connection runs uncoupled, and everything is freed after. */
static void script_full(void)
{
	struct sf s[PP_LIFE_N + 1];
	long before = uncoupled;

	reset_all();
	for (int i = 0; i <= PP_LIFE_N; i++)
		sf_init(&s[i], K + 0x100 * i, 1 + i);
	CHECK(s[PP_LIFE_N].idx == PP_LIFE_N && uncoupled == before + 1,
	      "full array: connection %d coupled (entry %u)", PP_LIFE_N, s[PP_LIFE_N].idx);
	check_quiescent("full array");
	for (int i = 0; i <= PP_LIFE_N; i++)
		sf_release(&s[i]);
	check_empty("full array, all left");
}

/* ---- random stress ------------------------------------------------------------------------- */

#define THREADS 4
static volatile int stop;
static int finish; /* stop as thread 0 read it at the last quiescent point: one answer for all */
static pthread_barrier_t bar;
static long ops;

static void *stress_main(void *arg)
{
	long t = (long)arg;
	struct sf held[2];
	int n = 0;
	__u64 id = (__u64)t << 40;

	rng = 0x9E3779B97F4A7C15ULL * (t + 1);
	for (int epoch = 0;; epoch++) {
		for (int i = 0; i < 200; i++) {
			if (n < 2 && (n == 0 || rnd() % 2)) {
				sf_init(&held[n], 0x1000 * (1 + rnd() % KEYS), ++id);
				n++;
			} else {
				int j = rnd() % n;

				sf_release(&held[j]);
				held[j] = held[--n];
			}
			__sync_fetch_and_add(&ops, 1);
		}
		/* Quiescent point: all threads stopped between operations. */
		pthread_barrier_wait(&bar);
		if (t == 0) {
			check_quiescent("stress");
			/* Each thread reading stop itself could see it change between their reads:
			 * one leaves, the others wait at the next barrier for ever. */
			finish = stop;
		}
		pthread_barrier_wait(&bar);
		if (finish)
			break;
	}
	while (n)
		sf_release(&held[--n]);
	return NULL;
}

static void stress(double seconds)
{
	pthread_t th[THREADS];
	struct timespec t0, t1;

	reset_all();
	pthread_barrier_init(&bar, NULL, THREADS);
	for (long t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, stress_main, (void *)t);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		usleep(20000);
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while ((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9 < seconds &&
		 failures == 0);
	stop = 1;
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	check_empty("stress, all left");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;

	sem_init(&reached, 0, 0);
	sem_init(&resume, 0, 0);
	if (!(argc > 2 && !strcmp(argv[2], "stress-only"))) {
		static const struct { const char *name; void (*run)(void); } scripts[] = {
			{ "join vs last release", script_join_vs_last_release },
			{ "ABA", script_aba },
			{ "CAS vs last release", script_cas_vs_last_release },
			{ "two first subflows", script_two_first_subflows },
			{ "join in the delete window", script_join_in_delete_window },
			{ "full array", script_full },
		};
		int broken = 0;

		for (unsigned i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
			long f = failures;

			scripts[i].run();
			if (failures > f) {
				printf("interleaving \"%s\": %ld failures\n", scripts[i].name, failures - f);
				broken++;
			}
		}
		printf("%d of %u scripted interleavings failed\n", broken,
		       (unsigned)(sizeof(scripts) / sizeof(scripts[0])));
	}
	long scripted = failures;
	stress(seconds);
	printf("life_test %s: %ld checks, %ld failures (%ld in the scripted interleavings), "
	       "%ld stress operations, %ld uncoupled subflows\n",
	       VERSION, checks, failures, scripted, ops, uncoupled);
	return failures ? 1 : 0;
}

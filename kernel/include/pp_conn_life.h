/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pp_conn_life.h: the lifetime of a connection's entry in pp_conns (claim, join, release),
 * lock-free, shared by the BPF controls (pp_common.bpf.h) and the host stress test
 * (kernel/test/life_test.c), so that the code tested on the host is the code the kernel runs.
 *
 * The includer defines, before including this file:
 *   PP_LIFE_N                          number of entries (a power of two)
 *   struct pp_life *pp_life_at(__u32 idx)           the entry's lifetime word (0 if out of range)
 *   int  pp_life_ids_get(__u64 key, __u64 *hint)    pp_conn_ids lookup: 0 and *hint if found
 *   int  pp_life_ids_add(__u64 key, __u64 hint)     insert if absent (BPF_NOEXIST): 0 if inserted
 *   void pp_life_ids_del(__u64 key)                 delete
 *   void pp_life_reset(__u32 idx)                   reset the entry's contents for a new life
 *   __u32 pp_life_scan(__u64 key)                   try pp_life_try_claim(idx, key) from
 *                                                   pp_life_start(key) on; the claimed index, or
 *                                                   PP_LIFE_N if none was free
 *   PP_RACE_POINT(n)                                (optional) the host test's delay injection
 *
 * The entry's state is one 64-bit word: generation (high 32 bits) | references (low 32 bits).
 * The entry is free while its references are 0. pp_conn_ids maps a connection (its mptcp_sock
 * pointer) to a hint, generation << 32 | index. Every operation that changes an entry's life
 * is one atomic instruction on that word (__sync_* are fully ordered: BPF_FETCH atomics, lock-
 * prefixed on the x86 JIT):
 *
 *   claim    CAS (g, 0) -> (g+1, 1) on a free entry: the claimer holds the first reference of
 *            the new generation; then it resets the contents, writes owner, and publishes the
 *            hint (g+1, idx) in pp_conn_ids (BPF_NOEXIST). Losing the insert (a sibling's first
 *            subflow published first), it drops its reference (g+1, 1) -> (g+1, 0) and joins.
 *   join     read the hint; CAS (g, r) -> (g, r+1) only while the generation is still g and
 *            r > 0 ("increment if not zero", with the generation as ABA guard), then check owner.
 *   release  fetch_add -1; whoever takes the references from 1 to 0 deletes the connection's
 *            hint; the entry is free from that instant (the word, not owner, says so).
 *
 * Why each interleaving on two CPUs is safe (A, B subflows; K, K2 connections):
 *  - join(K) vs the last release(K): either A's CAS lands first (r > 0: B's release is no longer
 *    the last, A's own release will be), or B's decrement lands first (r = 0: A's CAS fails, it
 *    cannot revive a freed entry). That was the bug: refs 0 -> 1 after the free.
 *  - join(K) vs release(K) then claim(K2) of the same entry (ABA): K2's claim moved the
 *    generation to g+1, so A's CAS, which expects g, fails even though r > 0 again.
 *  - join(K) with a hint read from a hash element deleted and reused for another key (a
 *    preallocated BPF hash recycles elements without waiting for RCU readers): the hint names a
 *    live generation of K2; A's CAS succeeds, the owner check fails, A drops its reference
 *    (pp_life_put, which frees K2's entry if K2 left meanwhile: owner is stable while A holds
 *    a reference) and retries.
 *  - two first subflows of K: both miss the hint and claim two entries; pp_conn_ids' BPF_NOEXIST
 *    lets one publish; the other, still the only holder of its unpublished generation (no hint
 *    names it, so no one else can have joined it), frees it with one decrement and joins.
 *  - join(K) between the last release's decrement and its hint delete: the hint names a freed
 *    generation (r = 0), A's CAS fails; a claim then fails to publish (the stale hint is still
 *    there). A retries the whole lookup PP_LIFE_ROUNDS times; after that it gives up and runs
 *    uncoupled Reno, as when the array is full. Nothing is leaked: the window is the few
 *    instructions between the decrement and the delete.
 *  - claim(K2) vs claim(K3) of one free entry: one CAS wins; the other moves to the next entry.
 *  - reset vs a subflow still using the entry: a claim needs r = 0, i.e. every holder of the
 *    previous generation has released (its slot cleared before its decrement), and no one can
 *    join the new generation before its hint is published, after the reset.
 * Every hint is deleted exactly once, by the unique 1 -> 0 decrement of a published generation,
 * and until then no other hint for K can be inserted (BPF_NOEXIST), so the delete never removes
 * a newer hint. The per-ACK path does not touch the word.
 */
#ifndef PP_CONN_LIFE_H
#define PP_CONN_LIFE_H

#ifndef PP_RACE_POINT
#define PP_RACE_POINT(n) do { } while (0)
#endif

/* Lookup-and-join rounds before a subflow gives up coupling (see above: the hint-delete
 * window); CAS attempts per join against concurrent joins/releases of the same connection. */
#define PP_LIFE_ROUNDS 4
#define PP_LIFE_CAS_TRIES 16
#define PP_LIFE_REFS 0xffffffffULL

#include "pp_life.h"

#define PP_LIFE_HINT(gen, idx) (((__u64)(gen) << 32) | (idx))

/* Where the scan for a free entry starts: where the pointer hashes to, so it usually ends at
 * once. */
static __always_inline __u32 pp_life_start(__u64 key)
{
	return (__u32)((key >> 6) * 0x9E3779B97F4A7C15ULL >> 52) & (PP_LIFE_N - 1);
}

/* Claim entry idx for connection key if it is free: its new generation, with the claimer's
 * reference. 1 if claimed. */
static __always_inline int pp_life_try_claim(__u32 idx, __u64 key)
{
	struct pp_life *l = pp_life_at(idx);
	__u64 w;

	if (!l)
		return 0;
	w = *(volatile __u64 *)&l->word;
	if (w & PP_LIFE_REFS)
		return 0;
	PP_RACE_POINT(1);
	if (__sync_val_compare_and_swap(&l->word, w, ((w >> 32) + 1) << 32 | 1) != w)
		return 0;
	l->owner = key;   /* before the hint exists: every joiner sees it */
	return 1;
}

/*
 * Drop one reference to entry idx held for connection key; the last one frees the entry and
 * deletes key's hint. key must be the entry's owner (read while the reference is held).
 */
static __always_inline void pp_life_put(__u32 idx, __u64 key)
{
	struct pp_life *l = pp_life_at(idx);

	if (!l)
		return;
	PP_RACE_POINT(2);
	if ((__sync_fetch_and_add(&l->word, -1ULL) & PP_LIFE_REFS) == 1) {
		PP_RACE_POINT(3);
		pp_life_ids_del(key);
	}
}

/* Join the generation the hint names: 1 with a reference to an entry owned by key. */
static __always_inline int pp_life_join(__u64 key, __u64 hint)
{
	__u32 idx = (__u32)hint & (PP_LIFE_N - 1);
	__u32 gen = (__u32)(hint >> 32);
	struct pp_life *l = pp_life_at(idx);
	__u64 w;
	int i;

	if (!l)
		return 0;
	for (i = 0; i < PP_LIFE_CAS_TRIES; i++) {
		w = *(volatile __u64 *)&l->word;
		if ((__u32)(w >> 32) != gen || !(w & PP_LIFE_REFS))
			return 0;   /* freed (and maybe claimed again) since the hint was read */
		PP_RACE_POINT(4);
		if (__sync_val_compare_and_swap(&l->word, w, w + 1) == w)
			break;
	}
	if (i == PP_LIFE_CAS_TRIES)
		return 0;
	if (*(volatile __u64 *)&l->owner != key) {
		/* A recycled hash element's hint: someone else's entry. */
		pp_life_put(idx, *(volatile __u64 *)&l->owner);
		return 0;
	}
	return 1;
}

/*
 * The index of connection key's entry, with one reference taken for the caller (to be dropped
 * with pp_life_put); PP_LIFE_N if none (array full, or the hint-delete window outlasted
 * PP_LIFE_ROUNDS rounds): the caller then runs uncoupled.
 */
static __always_inline __u32 pp_life_get(__u64 key)
{
	__u64 hint;
	__u32 idx;
	int round;

	for (round = 0; round < PP_LIFE_ROUNDS; round++) {
		if (pp_life_ids_get(key, &hint) == 0) {
			PP_RACE_POINT(5);
			if (pp_life_join(key, hint))
				return (__u32)hint & (PP_LIFE_N - 1);
			continue;
		}
		idx = pp_life_scan(key);
		if (idx >= PP_LIFE_N)
			return PP_LIFE_N;
		pp_life_reset(idx);
		{
			struct pp_life *l = pp_life_at(idx);

			if (!l)
				return PP_LIFE_N;
			PP_RACE_POINT(6);
			if (pp_life_ids_add(key, PP_LIFE_HINT(l->word >> 32, idx)) == 0)
				return idx;
			/* A sibling published first: our generation is unpublished, we are its only
			 * holder, so one decrement frees it (no hint to delete). */
			__sync_fetch_and_add(&l->word, -1ULL);
		}
	}
	return PP_LIFE_N;
}

#endif /* PP_CONN_LIFE_H */

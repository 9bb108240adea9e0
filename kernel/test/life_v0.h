/* SPDX-License-Identifier: GPL-2.0 */
/*
 * life_v0.h: the entry lifetime as pp_common.bpf.h had it before kernel/include/pp_conn_life.h
 * (pp_conn_index, pp_init's refs++, pp_conn_put; commit 79f63bf), behind the same interface,
 * with the same race points. Kept only so that life_test can show that its checks catch a join
 * that reads the hint before the last release (life_test_v0 must fail). Not used by BPF code.
 *
 * Here word is the reference count alone and owner (0 = free) marks the entry taken.
 */
#ifndef PP_LIFE_V0_H
#define PP_LIFE_V0_H

#ifndef PP_RACE_POINT
#define PP_RACE_POINT(n) do { } while (0)
#endif

#define PP_LIFE_V0 1

struct pp_life {
	__u64 word;      /* references */
	__u64 owner;     /* 0 = entry free */
};

static __always_inline __u32 pp_life_start(__u64 key)
{
	return (__u32)((key >> 6) * 0x9E3779B97F4A7C15ULL >> 52) & (PP_LIFE_N - 1);
}

static __always_inline int pp_life_try_claim(__u32 idx, __u64 key)
{
	struct pp_life *l = pp_life_at(idx);

	PP_RACE_POINT(1);
	return l && __sync_val_compare_and_swap(&l->owner, 0, key) == 0;
}

static __always_inline void pp_life_put(__u32 idx, __u64 key)
{
	struct pp_life *l = pp_life_at(idx);

	PP_RACE_POINT(2);
	if (__sync_fetch_and_add(&l->word, -1ULL) == 1) {
		PP_RACE_POINT(3);
		pp_life_ids_del(key);
		l->owner = 0;
	}
}

/* pp_conn_index followed by pp_init's __sync_fetch_and_add(&st->refs, 1). */
static __always_inline __u32 pp_life_get(__u64 key)
{
	__u64 hint;
	__u32 idx;
	struct pp_life *l;

	if (pp_life_ids_get(key, &hint) == 0) {
		idx = (__u32)hint;
	} else {
		idx = pp_life_scan(key);
		if (idx >= PP_LIFE_N)
			return PP_LIFE_N;
		pp_life_reset(idx);
		pp_life_at(idx)->word = 0;
		PP_RACE_POINT(6);
		if (pp_life_ids_add(key, idx)) {
			pp_life_at(idx)->owner = 0;
			if (pp_life_ids_get(key, &hint))
				return PP_LIFE_N;
			idx = (__u32)hint;
		}
	}
	PP_RACE_POINT(5);
	l = pp_life_at(idx);
	__sync_fetch_and_add(&l->word, 1);
	return idx;
}

#endif /* PP_LIFE_V0_H */

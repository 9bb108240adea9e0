/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pp_common.bpf.h: the tcp_congestion_ops callbacks shared by every pathpool algorithm.
 *
 * Each pp_<algo>.bpf.c defines PP_ALGO (one of PP_ALGO_*) and PP_NAME, then includes this file,
 * which provides the callbacks and the struct_ops map. The arithmetic lives in pp_cc_math.h.
 *
 * Coupling. A subflow finds its MPTCP connection through its ULP context:
 *   inet_csk(sk)->icsk_ulp_data  --bpf_rdonly_cast-->  struct mptcp_subflow_context  ->conn
 * (bpf_skc_to_mptcp_sock() is refused for struct_ops programs on 6.x and
 * bpf_mptcp_sock_from_subflow() is not callable from them). The first subflow of a connection
 * claims an entry of the array pp_conns (pp_life_get, lock-free, pp_conn_life.h; the hash map
 * pp_conn_ids maps the connection pointer to it for later subflows) that holds one slot per
 * subflow (window, RTT, OLIA's inter-loss bytes). A subflow claims a slot with a
 * compare-and-swap at init and frees it at release; the last one out frees the entry. A subflow writes only its own slot and reads its siblings' slots as plain
 * loads: on other CPUs those values may be a few ACKs old. The coupled formulas are rates
 * averaged over RTTs, so a stale sibling window only shifts one increment by a fraction of a
 * 1/w step; nothing requires a consistent snapshot.
 *
 * Model followed (crates/pathpool-cc/src/algos/common.rs): Linux slow start capped at ssthresh;
 * in congestion avoidance one increment step per acknowledged segment, all against the window
 * before the ACK, the slow-start leftover included (pathpool-cc Counting::Bytes, Linux 6.18
 * tcp_reno_cong_avoid / tcp_cong_avoid_ai), or with the tunable counting_acks one step per ACK
 * whatever its size and nothing carried out of slow start (Counting::Acks, v0.95);
 * ssthresh = max(w/2, 2) unless the algorithm says otherwise.
 * The real-valued window of the model is snd_cwnd + frac/2^32, frac kept in the private area.
 *
 * Plain TCP sockets (no MPTCP ULP) run Reno with the same counting.
 */
#ifndef PP_COMMON_BPF_H
#define PP_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* LIA's ratio runs as a global BPF function (defined below; see pp_g_lia_ratio). */
struct pp_vset;
__u64 pp_g_lia_ratio(struct pp_vset *s, int i);
#define PP_LIA_RATIO_OF(vs, i) pp_g_lia_ratio((vs), (i))

#define PP_ALGO_RENO 0
#define PP_ALGO_LIA 1
#define PP_ALGO_OLIA 2
#define PP_ALGO_BALIA 3
#define PP_ALGO_RSFDB 4
#define PP_ALGO_RSFLB 5
#define PP_ALGO_EWTCP 6
#define PP_ALGO_COUPLED 7
#define PP_ALGO_SEMICOUPLED 8
#define PP_ALGO_MAX 9

#ifndef PP_ALGO
#error "define PP_ALGO before including pp_common.bpf.h"
#endif

#if PP_ALGO == PP_ALGO_OLIA || PP_ALGO == PP_ALGO_BALIA || PP_ALGO == PP_ALGO_MAX
#define PP_SLOT_LOOP _Pragma("nounroll")
#endif
#include "pp_cc_math.h"
#include "pp_tunables.h"
#include "pp_conn_state.h"

#define PP_LIFE_N PP_MAX_CONNS
struct pp_life;
static __always_inline struct pp_life *pp_life_at(__u32 idx);
static __always_inline int pp_life_ids_get(__u64 key, __u64 *hint);
static __always_inline int pp_life_ids_add(__u64 key, __u64 hint);
static __always_inline void pp_life_ids_del(__u64 key);
static __always_inline void pp_life_reset(__u32 idx);
static __always_inline __u32 pp_life_scan(__u64 key);
#include "pp_conn_life.h"

/* LIA, OLIA, BALIA, Coupled, Semicoupled and Max read their siblings; EWTCP counts them (its
 * default a = 1/n^2). The others (Reno, RSF-DB, RSF-LB: every rule is the subflow's own) keep
 * no connection state: no map lookup, no slot writes per ACK. */
#define PP_COUPLED (PP_ALGO == PP_ALGO_LIA || PP_ALGO == PP_ALGO_OLIA || \
		    PP_ALGO == PP_ALGO_BALIA || PP_ALGO == PP_ALGO_EWTCP || \
		    PP_ALGO == PP_ALGO_COUPLED || PP_ALGO == PP_ALGO_SEMICOUPLED || \
		    PP_ALGO == PP_ALGO_MAX)

char _license[] SEC("license") = "GPL";

/* libbpf 1.1 has no bpf_core_cast(); declare the kfunc ourselves. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

/* Tunables, written by the loader before load (kernel/loader/pp_loader.c --set NAME=VALUE). */
volatile struct pp_tunables pp_tun = PP_TUNABLES_DEFAULT;
#define pp_rsf_d_us (pp_tun.rsf_d_us)
#define pp_rsf_mu_q16 (pp_tun.rsf_mu_q16)
#define pp_balia_quantised (pp_tun.balia_quantised)
#define pp_rsf_lb_keep_q32 (pp_tun.rsf_lb_keep_q32)
#define pp_counting_acks (pp_tun.counting_acks)
#define pp_ewtcp_a_q32 (pp_tun.ewtcp_a_q32)
#define pp_semicoupled_a_q32 (pp_tun.semicoupled_a_q32)

#define TCP_CA_Open_ 0
#define TCP_CA_CWR_ 2
#define TCP_CA_Recovery_ 3
#define TCP_CA_Loss_ 4

/*
 * Connection state by index: an array lookup is inlined by the verifier (a bounds check and an
 * add), where a hash lookup hashes the key and walks a bucket on every ACK. The subflow keeps
 * the index in its private area; the hash map pp_conn_ids (connection -> index) is used only
 * when a subflow joins or leaves.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, PP_MAX_CONNS);
	__type(key, __u32);
	__type(value, struct pp_conn_state);
} pp_conns SEC(".maps");

/* Connection -> hint (generation << 32 | index, pp_conn_life.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PP_MAX_CONNS);
	__type(key, __u64);
	__type(value, __u64);
} pp_conn_ids SEC(".maps");

/* Private per-socket state, inside icsk_ca_priv (104 bytes). */
struct pp_ca {
	__u64 conn;      /* mptcp_sock pointer, 0 for plain TCP */
	__u64 frac;      /* q32 fractional window */
	struct pp_olia_marks marks; /* OLIA: bytes_acked at the last two losses and last ACK */
	__u32 slot;
	__u32 state;     /* last TCP_CA_* seen in set_state */
	__u32 last_rtt_us;
	__u32 idx;       /* index of the connection's entry in pp_conns (valid while conn != 0) */
	struct pp_loss_est lest; /* RSF-LB's loss-probability estimate */
	__u32 ss_last;   /* what pp_ssthresh last returned (0: never), for pp_ssthresh_repair */
};

_Static_assert(sizeof(struct pp_ca) <= 104, "pp_ca must fit in icsk_ca_priv");
_Static_assert((PP_MAX_SF & (PP_MAX_SF - 1)) == 0, "slot masks need a power of two");


static __always_inline struct inet_connection_sock *pp_csk(struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct tcp_sock *pp_tp(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct pp_ca *pp_ca(struct sock *sk)
{
	return (struct pp_ca *)pp_csk(sk)->icsk_ca_priv;
}

static __always_inline __u64 pp_conn_of(struct sock *sk)
{
	struct tcp_sock *tp = pp_tp(sk);
	struct mptcp_subflow_context *sf;
	void *ulp;

	if (!tp->is_mptcp)
		return 0;
	ulp = pp_csk(sk)->icsk_ulp_data;
	if (!ulp)
		return 0;
	sf = bpf_rdonly_cast(ulp, bpf_core_type_id_kernel(struct mptcp_subflow_context));
	if (!sf)
		return 0;
	return (__u64)sf->conn;
}

static __always_inline struct pp_conn_state *pp_state(struct pp_ca *ca)
{
	__u32 idx = ca->idx;

	if (!PP_COUPLED || !ca->conn)
		return 0;
	return bpf_map_lookup_elem(&pp_conns, &idx);
}

static __always_inline __u64 pp_own_window(struct sock *sk, struct pp_ca *ca)
{
	struct tcp_sock *tp = pp_tp(sk);

	/* OLIA (and the model's M set) uses ssthresh for a path in recovery. */
	if (ca->state == TCP_CA_Recovery_ || ca->state == TCP_CA_Loss_)
		if (tp->snd_ssthresh < tp->snd_cwnd)
			return (__u64)tp->snd_ssthresh << 16;
	return pp_window_q16(tp->snd_cwnd, ca->frac);
}

/* Publish this subflow's numbers in its slot. */
static __always_inline void pp_publish(struct sock *sk, struct pp_ca *ca, struct pp_conn_state *st)
{
	struct tcp_sock *tp = pp_tp(sk);
	__u32 k = ca->slot;

	if (!st || k >= PP_MAX_SF)
		return;
	st->s[k].w = pp_own_window(sk, ca);
	st->s[k].rtt_us = tp->srtt_us >> 3;
	if (PP_ALGO == PP_ALGO_OLIA)   /* only OLIA reads l_r */
		st->s[k].lr = pp_olia_marks_l(&ca->marks);
	st->s[k].active = 1;
}

/* This subflow's own view, as pp_publish would write it (fresher than its slot). */
static __always_inline void pp_own_view(struct sock *sk, struct pp_ca *ca, struct pp_sf_view *v)
{
	v->w = pp_own_window(sk, ca);
	v->rtt_us = pp_tp(sk)->srtt_us >> 3;
	v->lr = PP_ALGO == PP_ALGO_OLIA ? pp_olia_marks_l(&ca->marks) : 0;
	v->active = 1;
}

/*
 * Copy the connection's slots into a view array: only the slots whose bit is in the header's
 * mask (taken and active) and the subflow's own slot i are read; the others become inactive
 * views (zero), which is what the formulas made of them anyway (pp_participates: k == i or
 * active). A slot is a cache line of its own, so with 2 subflows an ACK reads 3 lines (header,
 * own slot, sibling) instead of 8; at the bench's few hundred ACKs per second per connection
 * every line is a cache miss. A slot whose bit is set but whose release is under way on another
 * CPU is read as before (sk ? active : 0).
 */
static __always_inline void pp_views(struct pp_conn_state *st, struct pp_sf_view *v, __u32 i)
{
	__u32 mask = st->mask | (1U << (i & (PP_MAX_SF - 1)));
	int k;

	/* A loop, not 8 unrolled copies: less code to fetch cold on every call (the verifier
	 * walks the 8 iterations; here nothing it tracks differs between them). */
#pragma nounroll
	for (k = 0; k < PP_MAX_SF; k++) {
		if (mask & (1U << k)) {
			v[k].w = st->s[k].w;
			v[k].rtt_us = st->s[k].rtt_us;
			v[k].active = st->s[k].sk ? st->s[k].active : 0;
			v[k].lr = PP_ALGO == PP_ALGO_OLIA ? st->s[k].lr : 0;
		} else {
			v[k].w = 0;
			v[k].rtt_us = 0;
			v[k].active = 0;
			v[k].lr = 0;
		}
	}
}

/*
 * The coupled formulas that need it run as global BPF functions: the verifier checks each once
 * with unknown arguments instead of once per path through every caller, which otherwise
 * exceeds its one-million-instruction budget (8 subflows x several data-dependent branches per
 * loop): LIA's ratio (recomputed rarely), the loss responses of BALIA and Coupled, and OLIA's
 * pass 2 and finish (pp_g_olia_end). The per-ACK increments of BALIA, Max, Coupled and
 * Semicoupled and OLIA's pass 1 are inline in cong_avoid (pp_rate_slots_inc,
 * pp_slot_window_total, pp_olia_slots_inc): a BPF-to-BPF call and its
 * return through the return thunk cost more on a warm path than the code they save, and what
 * made the verifier refuse them inline (branches ending in constants that later branches
 * decide: slot bitmasks, pp_bitlen, the clamps) is written without branches in pp_cc_math.h.
 */
__noinline __u64 pp_g_lia_ratio(struct pp_vset *s, int i)
{
	if (!s || i < 0 || i >= PP_MAX_SF)
		return (__u64)PP_INC_ONE;
	return pp_lia_ratio(s->v, PP_MAX_SF, i);
}

__noinline __u64 pp_g_coupled_ssthresh(struct pp_vset *s, int i)
{
	if (!s || i < 0 || i >= PP_MAX_SF)
		return PP_MIN_SSTHRESH_W;
	return pp_coupled_ssthresh(s->v, PP_MAX_SF, i);
}

__noinline __u64 pp_g_balia_ssthresh(struct pp_vset *s, int i, int quantised)
{
	if (!s || i < 0 || i >= PP_MAX_SF)
		return PP_MIN_SSTHRESH_W;
	return pp_balia_ssthresh(s->v, PP_MAX_SF, i, quantised);
}

/*
 * w_total of an event on slot i straight from the slots, the own window given: what
 * pp_window_total returns on pp_views' copy with pp_own_view's own slot (the own clamped
 * window plus every other slot in the mask that is taken and active), without copying eight
 * views to the stack on every Coupled or Semicoupled ACK.
 */
static __always_inline __u64 pp_slot_window_total(struct pp_conn_state *st, __u32 i, __u64 own_w)
{
	__u32 mask = st->mask & ~(1U << (i & (PP_MAX_SF - 1)));
	__u64 tot = pp_clamp_w(own_w);
	int k;

#pragma nounroll
	for (k = 0; k < PP_MAX_SF; k++)
		if ((mask & (1U << k)) && st->s[k].sk && st->s[k].active)
			tot += pp_clamp_w(st->s[k].w);
	return tot;
}

#if PP_ALGO == PP_ALGO_OLIA
/*
 * OLIA's increment for the subflow in slot ca->slot, pass 1 inline in cong_avoid, reading the
 * slots directly (pass 2 and the finish: pp_g_olia_end): pp_olia_inc (pp_cc_math.h) on pp_views' copy with pp_own_view's own slot, bit for
 * bit, through the same pp_olia_begin / pp_olia_sib / pp_olia_end. Pass 1 copies each
 * sibling taking part (masked, taken, active: what pp_views reads) into a compact list, one
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
#endif

#if PP_ALGO == PP_ALGO_MAX || PP_ALGO == PP_ALGO_BALIA
/*
 * Max's and BALIA's increments inline in cong_avoid straight from the slots: pp_max_inc and
 * pp_balia_inc on pp_views' copy with pp_own_view's own slot, bit for bit
 * (pp_rate_list_lia_ratio = pp_lia_ratio and pp_balia_list_inc = pp_balia_inc on the same
 * paths: fuzz_test fuzz_masked_views), without the view copy (and for Max the global ratio
 * function). Each sibling field is one load; a sibling's w and rtt may come from two of its
 * publishes, as with pp_views.
 */
static __always_inline __s64 pp_rate_slots_inc(struct sock *sk, struct pp_ca *ca,
					       struct pp_conn_state *st)
{
	__u32 i = ca->slot & (PP_MAX_SF - 1), mask = st->mask & ~(1U << i), rtt;
	__u64 w = pp_own_window(sk, ca);
	struct pp_rate_list l;
	int k;

	rtt = pp_tp(sk)->srtt_us >> 3;
	if (!rtt)
		return pp_reno_inc(w);
	pp_rate_list_init(&l);
	pp_rate_list_add(&l, w, rtt);
#pragma nounroll
	for (k = 0; k < PP_MAX_SF; k++)
		if ((mask & (1U << k)) && st->s[k].sk && st->s[k].active)
			pp_rate_list_add(&l, st->s[k].w, st->s[k].rtt_us);
#if PP_ALGO == PP_ALGO_MAX
	return (__s64)pp_rate_list_lia_ratio(&l);
#else
	return pp_balia_list_inc(&l);
#endif
}
#endif

static __always_inline void pp_lia_recalc(struct pp_ca *ca, struct pp_conn_state *st)
{
	struct pp_vset vs;

	if (!st || ca->slot >= PP_MAX_SF)
		return;
	pp_views(st, vs.v, ca->slot);
	pp_lia_ss_ack(&st->lia, &vs, ca->slot);
}

static __always_inline void pp_rsflb_observe(struct sock *sk, struct pp_ca *ca)
{
#if PP_ALGO == PP_ALGO_RSFLB
	pp_loss_est_update(&ca->lest, pp_tp(sk)->delivered, pp_tp(sk)->lost, pp_rsf_lb_keep_q32);
#endif
}

/* pp_conn_life.h's map accessors. */
static __always_inline struct pp_life *pp_life_at(__u32 idx)
{
	struct pp_conn_state *st = bpf_map_lookup_elem(&pp_conns, &idx);

	return st ? &st->life : 0;
}

static __always_inline int pp_life_ids_get(__u64 key, __u64 *hint)
{
	__u64 *v = bpf_map_lookup_elem(&pp_conn_ids, &key);

	if (!v)
		return -1;
	*hint = *(volatile __u64 *)v;   /* one load: the element may be recycled (pp_conn_life.h) */
	return 0;
}

static __always_inline int pp_life_ids_add(__u64 key, __u64 hint)
{
	return bpf_map_update_elem(&pp_conn_ids, &key, &hint, BPF_NOEXIST) ? -1 : 0;
}

static __always_inline void pp_life_ids_del(__u64 key)
{
	bpf_map_delete_elem(&pp_conn_ids, &key);
}

/* A new life of entry idx: state as pp_lia_init leaves it, every slot free. Runs while only the
 * claimer holds the entry (pp_conn_life.h). */
static __always_inline void pp_life_reset(__u32 idx)
{
	struct pp_conn_state *st = bpf_map_lookup_elem(&pp_conns, &idx);
	int k;

	if (!st)
		return;
	for (k = 0; k < PP_MAX_SF; k++) {
		st->s[k].sk = 0;
		st->s[k].w = 0;
		st->s[k].rtt_us = 0;
		st->s[k].active = 0;
		st->s[k].lr = 0;
	}
	pp_lia_init(&st->lia);
	st->mask = 0;
}

struct pp_claim_ctx {
	__u64 key;
	__u32 start;
	__u32 idx;
};

static long pp_claim_one(__u32 n, void *data)
{
	struct pp_claim_ctx *c = data;
	__u32 idx = (c->start + n) & (PP_MAX_CONNS - 1);

	if (!pp_life_try_claim(idx, c->key))
		return 0;
	c->idx = idx;
	return 1;
}

/* Claim a free entry, scanning from where the pointer hashes to; PP_MAX_CONNS if all taken. */
static __always_inline __u32 pp_life_scan(__u64 key)
{
	struct pp_claim_ctx c = { .key = key, .start = pp_life_start(key), .idx = PP_MAX_CONNS };

	bpf_loop(PP_MAX_CONNS, pp_claim_one, &c, 0);
	return c.idx;
}

/*
 * The entry's lifetime (claim, join, release) is pp_conn_life.h's, reasoned through there and
 * tested on the host with threads (kernel/test/life_test.c). An entry lives exactly as long as
 * the CC state of its subflows. The kernel calls release once for each init (Linux 6.x
 * tcp_cleanup_congestion_control, from tcp_v4_destroy_sock and tcp_reinit_congestion_control;
 * tcp_disconnect calls ->release and clears icsk_ca_priv, the path MPTCP takes for msk->first
 * in __mptcp_close_ssk). A subflow that the application has closed but that is still in its FIN
 * exchange (an orphan) keeps its slot until the socket is destroyed, which can take minutes
 * (tcp_orphan_retries, MPTCP's close timeout) if the peer is gone.
 */
SEC("struct_ops/pp_init")
void BPF_PROG(pp_init, struct sock *sk)
{
	struct pp_ca *ca = pp_ca(sk);
	struct pp_conn_state *st;
	__u64 key;
	__u32 idx;
	int k;

	ca->frac = 0;
	pp_olia_marks_init(&ca->marks, pp_tp(sk)->bytes_acked);
	ca->slot = PP_MAX_SF;
	ca->state = TCP_CA_Open_;
	ca->last_rtt_us = 0;
	ca->ss_last = 0;
	ca->conn = 0;
	ca->idx = 0;
	pp_loss_est_init(&ca->lest, pp_tp(sk)->delivered, pp_tp(sk)->lost);
	if (!PP_COUPLED)
		return;
	/* The connection pointer as a plain number (the verifier refuses arithmetic and map
	 * writes with the untrusted pointer itself): stored, then read back. */
	ca->conn = pp_conn_of(sk);
	key = *(volatile __u64 *)&ca->conn;
	ca->conn = 0;
	if (!key)
		return;
	idx = pp_life_get(key);   /* with a reference for this subflow */
	if (idx >= PP_MAX_CONNS)
		return;   /* no free entry: this subflow runs uncoupled Reno */
	st = bpf_map_lookup_elem(&pp_conns, &idx);
	if (!st)
		return;
	for (k = 0; k < PP_MAX_SF; k++) {
		if (__sync_val_compare_and_swap(&st->s[k].sk, 0, (__u64)sk) == 0) {
			ca->slot = k;
			ca->conn = key;
			ca->idx = idx;
			pp_publish(sk, ca, st);
			__sync_fetch_and_or(&st->mask, 1U << k);
			return;
		}
	}
	/* More than PP_MAX_SF subflows: this one runs uncoupled Reno. */
	pp_life_put(idx, key);
}

SEC("struct_ops/pp_release")
void BPF_PROG(pp_release, struct sock *sk)
{
	struct pp_ca *ca = pp_ca(sk);
	struct pp_conn_state *st = pp_state(ca);
	__u64 key = ca->conn;
	__u32 k = ca->slot;

	if (!st || k >= PP_MAX_SF)
		return;
	__sync_fetch_and_and(&st->mask, ~(1U << k));
	st->s[k].active = 0;
	st->s[k].w = 0;
	st->s[k].sk = 0;
	ca->conn = 0;
	pp_life_put(ca->idx, key);
}

static __always_inline __u64 pp_algo_ssthresh(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);
#if PP_ALGO == PP_ALGO_BALIA
	struct pp_vset vs;

	if (st && ca->slot < PP_MAX_SF) {
		pp_publish(sk, ca, st);
		pp_views(st, vs.v, ca->slot);
		return pp_g_balia_ssthresh(&vs, ca->slot, pp_balia_quantised != 0);
	}
#elif PP_ALGO == PP_ALGO_COUPLED
	struct pp_vset vs;

	/* As BALIA: the own window published first, so the siblings' sum sees this one's. */
	if (st && ca->slot < PP_MAX_SF) {
		pp_publish(sk, ca, st);
		pp_views(st, vs.v, ca->slot);
		return pp_g_coupled_ssthresh(&vs, ca->slot);
	}
#endif
	return pp_reno_ssthresh(w);
}

SEC("struct_ops/pp_ssthresh")
__u32 BPF_PROG(pp_ssthresh, struct sock *sk)
{
	struct pp_ca *ca = pp_ca(sk);
	struct pp_conn_state *st = pp_state(ca);
	__u64 s;

	pp_rsflb_observe(sk, ca);
	s = pp_algo_ssthresh(sk, ca, st);

	/* The kernel keeps whole segments; the model's fraction of ssthresh is dropped here. */
	ca->frac = 0;
	ca->ss_last = pp_ssthresh_segs(s, pp_tp(sk)->snd_cwnd_clamp);
#ifdef PP_DEBUG_SSTHRESH
	bpf_printk("pp_ss %llx r=%u cwnd=%u", (__u64)sk, ca->ss_last, pp_tp(sk)->snd_cwnd);
#endif
	return ca->ss_last;
}

/* Kernel faults repaired (pp_ssthresh_repair, pp_cwnd_repair), over every socket of this object;
 * nonzero means the fault happened (`bpftool map dump` of the object's .bss). */
__u64 pp_ssthresh_repairs;

/* A window above the bound left by the fault (undo_cwnd's stale return): put back before the
 * kernel sends with it. Called in set_state (tcp_try_undo_recovery / tcp_try_undo_loss end in
 * tcp_set_ca_state(Open)) and on every cong_avoid (the undo paths without a state change). */
static __always_inline void pp_repair_cwnd(struct tcp_sock *tp)
{
	__u32 fix = pp_cwnd_repair(tp->snd_cwnd, tp->prior_cwnd, tp->snd_cwnd_clamp);

	if (fix) {
		tp->snd_cwnd = fix;
		__sync_fetch_and_add(&pp_ssthresh_repairs, 1);
	}
}

/* An ssthresh the fault left at a CWR/Recovery/Loss entry: our op's value put back before PRR's
 * first step uses it (set_state follows the kernel's store of ssthresh). */
static __always_inline void pp_repair_ssthresh(struct tcp_sock *tp, struct pp_ca *ca)
{
	__u32 fix = pp_ssthresh_repair(tp->snd_ssthresh, ca->ss_last, tp->prior_cwnd,
				       tp->snd_cwnd_clamp);

	if (fix) {
		tp->snd_ssthresh = fix;
		__sync_fetch_and_add(&pp_ssthresh_repairs, 1);
	}
}

SEC("struct_ops/pp_set_state")
void BPF_PROG(pp_set_state, struct sock *sk, __u8 new_state)
{
	struct pp_ca *ca = pp_ca(sk);
	struct pp_conn_state *st = pp_state(ca);

#ifdef PP_DEBUG_SSTHRESH
	/* Debug build (make -C kernel PP_DEBUG=1; python/pathpool/kernel/README.md): a value no
	 * ssthresh op of ours can return (at most 2^20), logged with its socket. */
	if (pp_tp(sk)->snd_ssthresh > PP_CWND_MAX_SEGS &&
	    pp_tp(sk)->snd_ssthresh != PP_INFINITE_SSTHRESH)
		bpf_printk("pp_huge %llx ss=%u new=%u", (__u64)sk, pp_tp(sk)->snd_ssthresh,
			   new_state);
	if (new_state != ca->state)
		bpf_printk("pp_st %llx %u->%u", (__u64)sk, ca->state, new_state);
#endif
	pp_repair_cwnd(pp_tp(sk));
	if (new_state == TCP_CA_CWR_ || new_state == TCP_CA_Recovery_ || new_state == TCP_CA_Loss_)
		pp_repair_ssthresh(pp_tp(sk), ca);
	if ((new_state == TCP_CA_Recovery_ || new_state == TCP_CA_Loss_) &&
	    ca->state != TCP_CA_Recovery_ && ca->state != TCP_CA_Loss_) {
		/* OLIA's loss marks advance on entry to recovery/loss (v0.95 mptcp_olia), to the
		 * position of the last ACK cong_avoid saw, if it moved since the last mark. */
		pp_olia_marks_loss(&ca->marks);
	}
#if PP_ALGO == PP_ALGO_LIA
	/* v0.95: every congestion-state change forces a recomputation on the next CA ACK. */
	if (st && new_state != ca->state)
		pp_lia_state_change(&st->lia);
#endif
	ca->state = new_state;
	if (new_state == TCP_CA_Loss_)
		ca->frac = 0;
	pp_publish(sk, ca, st);
}

/*
 * CA_EVENT_LOSS: tcp_enter_loss raises it after ssthresh() and before it cuts snd_cwnd to
 * in-flight + 1, so LIA recomputes alpha here with the pre-timeout window, as v0.95 and
 * pathpool-cc's Lia::on_rto do (set_state(Loss) comes only after the cut).
 */
SEC("struct_ops/pp_cwnd_event")
void BPF_PROG(pp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
#if PP_ALGO == PP_ALGO_LIA
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
#endif
}

SEC("struct_ops/pp_pkts_acked")
void BPF_PROG(pp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	if (sample->rtt_us > 0)
		pp_ca(sk)->last_rtt_us = (__u32)sample->rtt_us;
}

/*
 * RSF-DB's q_i (Pokhrel & Williamson 2020: queueing + service delay to the sink, no propagation):
 * the latest RTT sample minus the path's minimum RTT. This attributes all of the queueing on
 * the round trip to the forward path, which is exact when the return path carries only ACKs
 * and its queue stays empty (the test bed, and the usual bulk-download case). TCP timestamps
 * cannot give more here: their clock is 1 ms and, with the default random per-connection
 * offset, not comparable across hosts.
 */
static __always_inline __u64 pp_queue_delay_us(struct sock *sk, struct pp_ca *ca)
{
	struct tcp_sock *tp = pp_tp(sk);
	__u32 min_rtt = tp->rtt_min.s[0].v;
	__u32 rtt = ca->last_rtt_us ? ca->last_rtt_us : tp->srtt_us >> 3;

	if (!min_rtt || min_rtt == ~0U || rtt <= min_rtt)
		return 0;
	return rtt - min_rtt;
}

/*
 * RSF-LB's lambda_i * l_i in packets per second (q16): the sending rate w/srtt times the loss
 * probability estimated as pathpool-cc does (pp_loss_est: EWMA over ~loss_window packets of
 * the transport's delivered/lost counters), updated on every ACK and loss event.
 */
static __always_inline __u64 pp_loss_rate_q24(struct sock *sk, struct pp_ca *ca, __u64 w)
{
	return pp_rsflb_loss_rate_q24(w, pp_tp(sk)->srtt_us >> 3, pp_loss_est_q32(&ca->lest));
}

static __always_inline __s64 pp_algo_inc(struct sock *sk, struct pp_ca *ca, struct pp_conn_state *st)
{
	__u64 w = pp_window_q16(pp_tp(sk)->snd_cwnd, ca->frac);
#if PP_ALGO == PP_ALGO_RSFDB
	return pp_rsfdb_inc(w, pp_rsf_d_us, pp_queue_delay_us(sk, ca));
#elif PP_ALGO == PP_ALGO_RSFLB
	return pp_rsflb_inc(w, pp_rsf_mu_q16 << 8, pp_loss_rate_q24(sk, ca, w));
#elif PP_ALGO == PP_ALGO_RENO
	return pp_reno_inc(w);
#elif PP_ALGO == PP_ALGO_EWTCP
	/* a as loaded, or 1/n^2 with n = the subflows coupled now (this one included; 1 on a
	 * plain TCP socket or without a slot, where EWTCP is Reno). Only the header's mask is
	 * read. */
	__u32 n = 1;

	if (st && ca->slot < PP_MAX_SF)
		n = pp_mask_count(st->mask | (1U << (ca->slot & (PP_MAX_SF - 1))));
	return pp_ewtcp_inc(w, pp_ewtcp_a_q32 ? pp_ewtcp_a_q32 : pp_ewtcp_default_a_q32(n));
#else
#if PP_ALGO == PP_ALGO_LIA
	struct pp_vset vs;
#endif

	/* Alone (plain TCP, no slot): one subflow, where Coupled and Max are Reno's 1/w and
	 * Semicoupled is a/w (pathpool-cc with n = 1). */
	if (!st || ca->slot >= PP_MAX_SF)
		return PP_ALGO == PP_ALGO_SEMICOUPLED ? pp_ewtcp_inc(w, pp_semicoupled_a_q32)
						      : pp_reno_inc(w);
#if PP_ALGO != PP_ALGO_LIA
	/* No sibling in the mask: the subflow is the connection's only participant, where every
	 * formula here is Reno's 1/w (Semicoupled's a/w) of the own window, as pp_own_view gives
	 * it: skip the views and the formula. Bit for bit what the formula returns for OLIA,
	 * Coupled, Semicoupled and Max, and BALIA's exact value (its formula rounds the shares
	 * (x_r + x_max)/X = 2 and (4 x_r + x_max)/X = 5 to within 2^-28): kernel/test/fuzz_test.c
	 * fuzz_alone. (LIA goes on below: a forced recomputation must still happen.) */
	if (!pp_has_sibling(st->mask, (int)ca->slot)) {
		w = pp_own_window(sk, ca);
		return PP_ALGO == PP_ALGO_SEMICOUPLED ? pp_ewtcp_inc(w, pp_semicoupled_a_q32)
						      : pp_reno_inc(w);
	}
#endif
#if PP_ALGO == PP_ALGO_OLIA
	return pp_olia_slots_inc(sk, ca, st);
#elif PP_ALGO == PP_ALGO_MAX || PP_ALGO == PP_ALGO_BALIA
	return pp_rate_slots_inc(sk, ca, st);
#elif PP_ALGO == PP_ALGO_COUPLED || PP_ALGO == PP_ALGO_SEMICOUPLED
	/* a / w_total needs the windows only: no views. */
	return pp_a_over_total(pp_slot_window_total(st, ca->slot, pp_own_window(sk, ca)),
			       PP_ALGO == PP_ALGO_COUPLED ? 1ULL << PP_INC_SHIFT
							  : pp_semicoupled_a_q32);
#else
#if PP_ALGO == PP_ALGO_LIA
	if (!st->lia.forced) {
		/* pp_lia_ca_inc without a forced recomputation needs only the stored ratio and
		 * whether a sibling takes part (pp_count_participants(...) > 1: a bit of another
		 * slot in the mask), all in the header's cache line: the slots are not read (the
		 * per-ACK common case). */
		w = pp_own_window(sk, ca);
		return pp_has_sibling(st->mask, (int)ca->slot) ?
			pp_lia_inc(st->lia.ratio_q32, w) : pp_reno_inc(w);
	}
#endif
	pp_views(st, vs.v, ca->slot);
	/* The own slot from the socket itself: the slot is written once, after the step. */
	pp_own_view(sk, ca, &vs.v[ca->slot & (PP_MAX_SF - 1)]);
	return pp_lia_ca_inc(&st->lia, &vs, ca->slot);
#endif /* OLIA / Max, BALIA / Coupled, Semicoupled / LIA */
#endif
}

SEC("struct_ops/pp_cong_avoid")
void BPF_PROG(pp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = pp_tp(sk);
	struct pp_ca *ca = pp_ca(sk);
	struct pp_conn_state *st = pp_state(ca);
	__u32 cwnd, credit;
	__s64 inc;

	if (!acked)
		return;
	pp_repair_cwnd(tp);
	pp_rsflb_observe(sk, ca);
	/* OLIA's loss3 follows every ACK cong_avoid sees (v0.95), cwnd-limited or not (only OLIA
	 * reads the marks). */
	if (PP_ALGO == PP_ALGO_OLIA)
		pp_olia_marks_ack(&ca->marks, tp->bytes_acked);
	/* Linux's cong_avoid grows nothing unless cwnd limits the sender (tcp_is_cwnd_limited). */
	if (!pp_cwnd_limited(tp->snd_cwnd, tp->snd_ssthresh, tp->is_cwnd_limited,
			     tp->max_packets_out)) {
		pp_publish(sk, ca, st);
		return;
	}
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		/* Linux tcp_slow_start; the leftover goes on into CA unless counting per ACK. */
		__u32 before_ss = tp->snd_cwnd;

		cwnd = pp_slow_start_cwnd(before_ss, tp->snd_ssthresh, acked, tp->snd_cwnd_clamp);
		tp->snd_cwnd = cwnd;
		ca->frac = 0;
		pp_publish(sk, ca, st);
#if PP_ALGO == PP_ALGO_LIA
		pp_lia_recalc(ca, st);
#endif
		credit = pp_ca_credit(acked, 1, cwnd > before_ss ? cwnd - before_ss : 0,
				      pp_counting_acks != 0);
		if (!credit)
			return;
	} else {
		credit = pp_ca_credit(acked, 0, 0, pp_counting_acks != 0);
	}
	inc = pp_algo_inc(sk, ca, st);
	cwnd = tp->snd_cwnd;
	{
		__u64 frac = ca->frac;
		__u32 before = cwnd;

		pp_cwnd_step(&cwnd, &frac, inc, credit, tp->snd_cwnd_clamp);
		ca->frac = frac;
		tp->snd_cwnd = cwnd;
		pp_publish(sk, ca, st);
#if PP_ALGO == PP_ALGO_LIA
		/* v0.95 recomputes alpha whenever the integer window grows. */
		if (cwnd > before)
			pp_lia_recalc(ca, st);
#else
		(void)before;
#endif
	}
}

SEC("struct_ops/pp_undo_cwnd")
__u32 BPF_PROG(pp_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = pp_tp(sk);

	/* tcp_reno_undo_cwnd, within [1, bound] */
	return pp_undo_cwnd_segs(tp->snd_cwnd, tp->prior_cwnd, tp->snd_cwnd_clamp);
}

#define PP_DEFINE_OPS(var, namestr)                              \
	SEC(".struct_ops")                                       \
	struct tcp_congestion_ops var = {                        \
		.init = (void *)pp_init,                         \
		.release = (void *)pp_release,                   \
		.ssthresh = (void *)pp_ssthresh,                 \
		.cong_avoid = (void *)pp_cong_avoid,             \
		.set_state = (void *)pp_set_state,               \
		.cwnd_event = (void *)pp_cwnd_event,             \
		.pkts_acked = (void *)pp_pkts_acked,             \
		.undo_cwnd = (void *)pp_undo_cwnd,               \
		.name = namestr,                                 \
	}

#endif /* PP_COMMON_BPF_H */

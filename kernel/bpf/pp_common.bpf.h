/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pp_common.bpf.h: the tcp_congestion_ops callbacks shared by every pathpool algorithm.
 *
 * The shared glue, as Linux's tcp_cong.c is for its controls: connection state, the private
 * area, coupling (publishing and reading the subflows' slots) and the global functions the
 * verifier checks once; pp_ops.bpf.h holds the callbacks (slow start, window steps, kernel-fault
 * repairs) and the struct_ops map. Each pp_<algo>.bpf.c holds one algorithm's own policy (its
 * per-ACK increase, its ssthresh and the events it reacts to) as the hooks pp_ops.bpf.h lists,
 * and says which shared state it reads (PP_COUPLED, PP_SHARES_LR): it includes this file,
 * defines its hooks, includes pp_ops.bpf.h and names its ops (PP_DEFINE_OPS). The fixed-point
 * arithmetic of every formula lives in pp_cc_math.h.
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

/* PP_COUPLED: 1 for an algorithm that reads its siblings (or, as EWTCP, counts them); 0 keeps
 * no connection state: no map lookup, no slot writes per ACK. */
#ifndef PP_COUPLED
#error "define PP_COUPLED before including pp_common.bpf.h"
#endif
/* PP_SHARES_LR: 1 if the subflows publish l_r (OLIA's inter-loss bytes) to each other. */
#ifndef PP_SHARES_LR
#define PP_SHARES_LR 0
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
	if (PP_SHARES_LR)
		st->s[k].lr = pp_olia_marks_l(&ca->marks);
	st->s[k].active = 1;
}

/* This subflow's own view, as pp_publish would write it (fresher than its slot). */
static __always_inline void pp_own_view(struct sock *sk, struct pp_ca *ca, struct pp_sf_view *v)
{
	v->w = pp_own_window(sk, ca);
	v->rtt_us = pp_tp(sk)->srtt_us >> 3;
	v->lr = PP_SHARES_LR ? pp_olia_marks_l(&ca->marks) : 0;
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
			v[k].lr = PP_SHARES_LR ? st->s[k].lr : 0;
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
 * pass 2 and finish (pp_g_olia_end, pp_olia.bpf.c). The per-ACK increments of BALIA, Max,
 * Coupled and Semicoupled and OLIA's pass 1 are inline in cong_avoid (pp_rate_slots_inc,
 * pp_slot_window_total, pp_olia_slots_inc): a BPF-to-BPF call and its return through the return thunk cost more on a warm path than the code they save, and what
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

/*
 * Max's and BALIA's increments inline in cong_avoid straight from the slots: pp_max_inc and
 * pp_balia_inc on pp_views' copy with pp_own_view's own slot, bit for bit
 * (pp_rate_list_lia_ratio = pp_lia_ratio and pp_balia_list_inc = pp_balia_inc on the same
 * paths: fuzz_test fuzz_masked_views), without the view copy (and for Max the global ratio
 * function). Each sibling field is one load; a sibling's w and rtt may come from two of its
 * publishes, as with pp_views.
 */
static __always_inline __s64 pp_rate_slots_inc(struct sock *sk, struct pp_ca *ca,
					       struct pp_conn_state *st, int max)
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
	return max ? (__s64)pp_rate_list_lia_ratio(&l) : pp_balia_list_inc(&l);
}

/*
 * Uncoupled: a subflow alone (plain TCP, no slot) uses its single-path form on its window; one
 * with a slot but no sibling in the mask (the connection's only participant) uses it on the own
 * window as pp_own_view gives it, skipping the views and the formula. There every coupled
 * formula is Reno's 1/w (Semicoupled's a/w) bit for bit for OLIA, Coupled, Semicoupled and Max,
 * and BALIA's exact value (its formula rounds the shares (x_r + x_max)/X = 2 and
 * (4 x_r + x_max)/X = 5 to within 2^-28): kernel/test/fuzz_test.c fuzz_alone. (LIA checks the
 * mask later: a forced recomputation must still happen.)
 */

#endif /* PP_COMMON_BPF_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pp_ops.bpf.h: the tcp_congestion_ops callbacks and struct_ops map shared by every pathpool
 * algorithm, with the connection entry's lifetime; each pp_<algo>.bpf.c includes it after
 * pp_common.bpf.h and its hooks, then names its ops with PP_DEFINE_OPS.
 */
#ifndef PP_OPS_BPF_H
#define PP_OPS_BPF_H

#ifndef PP_COMMON_BPF_H
#error "include pp_common.bpf.h and define the algorithm's hooks before pp_ops.bpf.h"
#endif

/*
 * Hooks: one algorithm's own policy, defined by its pp_<algo>.bpf.c after pp_common.bpf.h and
 * before including this file (all static __always_inline: each object compiles to the code one
 * switch per algorithm gave).
 *   pp_algo_inc        the congestion-avoidance increment per acknowledged segment, q32 of a
 *                      segment, against the window before the ACK (required)
 *   pp_algo_ssthresh   the window after a loss, q16 segments (required)
 * Optional, empty unless the file defines PP_HOOK_<NAME> and the hook:
 *   pp_algo_sample     every ACK and loss: the subflow's own measurements (PP_HOOK_SAMPLE)
 *   pp_algo_acked      every ACK cong_avoid sees, cwnd-limited or not (PP_HOOK_ACKED)
 *   pp_algo_set_state  a congestion-state change, before the state is stored (PP_HOOK_SET_STATE)
 *   pp_algo_cwnd_event tcp_ca_event, e.g. CA_EVENT_LOSS (PP_HOOK_CWND_EVENT)
 *   pp_algo_cwnd_grown after a slow-start step, and after a CA step that raised the integer
 *                      window (PP_HOOK_CWND_GROWN)
 */
#ifndef PP_HOOK_SAMPLE
static __always_inline void pp_algo_sample(struct sock *sk, struct pp_ca *ca) {}
#endif
#ifndef PP_HOOK_ACKED
static __always_inline void pp_algo_acked(struct sock *sk, struct pp_ca *ca) {}
#endif
#ifndef PP_HOOK_SET_STATE
static __always_inline void pp_algo_set_state(struct sock *sk, struct pp_ca *ca,
					      struct pp_conn_state *st, __u8 new_state) {}
#endif
#ifndef PP_HOOK_CWND_EVENT
static __always_inline void pp_algo_cwnd_event(struct sock *sk, enum tcp_ca_event ev) {}
#endif
#ifndef PP_HOOK_CWND_GROWN
static __always_inline void pp_algo_cwnd_grown(struct pp_ca *ca, struct pp_conn_state *st) {}
#endif

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

SEC("struct_ops/pp_ssthresh")
__u32 BPF_PROG(pp_ssthresh, struct sock *sk)
{
	struct pp_ca *ca = pp_ca(sk);
	struct pp_conn_state *st = pp_state(ca);
	__u64 s;

	pp_algo_sample(sk, ca);
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
	pp_algo_set_state(sk, ca, st, new_state);
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
	pp_algo_cwnd_event(sk, ev);
}

SEC("struct_ops/pp_pkts_acked")
void BPF_PROG(pp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	if (sample->rtt_us > 0)
		pp_ca(sk)->last_rtt_us = (__u32)sample->rtt_us;
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
	pp_algo_sample(sk, ca);
	pp_algo_acked(sk, ca);
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
		pp_algo_cwnd_grown(ca, st);
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
		if (cwnd > before)
			pp_algo_cwnd_grown(ca, st);
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

#endif /* PP_OPS_BPF_H */

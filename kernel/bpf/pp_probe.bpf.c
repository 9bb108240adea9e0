// SPDX-License-Identifier: GPL-2.0
/*
 * pp_probe: bench-only variants of the yardstick pp_minreno (`pathpool kernel bench --probes`),
 * never shipped as algorithms. Each runs pp_minreno's cong_avoid arithmetic exactly (so the
 * windows, and with them the ACK rate, behave as the yardstick's) plus ONE kind of the extra
 * work a coupled pp_* cong_avoid does per ACK, so that the cold (paced) per-call cost can be
 * split into its parts by measurement:
 *
 *   PQ_SOCK   the socket fields pp_cong_avoid reads besides minreno's (icsk_ca_priv,
 *             is_cwnd_limited, max_packets_out, srtt_us, snd_cwnd_clamp) and the
 *             tcp_is_cwnd_limited test;
 *   PQ_LINES  PQ_SOCK plus pp_lia's per-ACK data: the pp_conns-like array lookup, a read of
 *             the connection header's line (mask, forced flag, ratio) and a write of the own
 *             slot's line (window, RTT, active), pp_publish's stores;
 *   PQ_HDR    PQ_SOCK plus the lookup and the header read only (no slot write);
 *   PQ_SLOT   PQ_SOCK plus the lookup and the own-slot write only (no header read);
 *   PQ_HDR with PQ_N=16: the same read from a map of 16 entries (9 KiB, kmalloc'd in the
 *             kernel's direct map, 2 MiB / 1 GiB pages) instead of 4096 (2.3 MiB, vmalloc'd,
 *             4 KiB pages as pp_conns): separates the page walk from the cache miss;
 *   PQ_PAD=N  minreno plus N straight-line BPF ALU instructions (four independent chains, so
 *             that warm they execute in about N/4 cycles), i.e. code size alone.
 *
 * Every result ends in a private field (pq_ca.sink), so neither clang nor the verifier nor the
 * JIT can drop the work. Built as build/pq_sock.bpf.o, pq_lines.bpf.o, pq_hdr.bpf.o, pq_slot.bpf.o,
 * pq_padN.bpf.o
 * (kernel/Makefile, target probes). The struct_ops variable carries the name: the loader
 * reports programs under it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "pp_minreno.h"
/* For PP_MAX_SF and struct pp_lia_state only: none of its global functions into the probes. */
#define PP_SUBPROG static __always_inline
#include "pp_cc_math.h"
#include "pp_conn_state.h"   /* pp_conns' entry layout, so the probes touch its lines */

char _license[] SEC("license") = "GPL";

#define PQ_STR_(x) #x
#define PQ_STR(x) PQ_STR_(x)

#ifndef PQ_N
#define PQ_N PP_MAX_CONNS
#endif

#ifndef PQ_NAME
#error "define PQ_NAME (the registered name)"
#endif

struct pq_ca {
	__u64 conn;
	__u64 frac;
	__u64 sink;
	__u32 slot;
	__u32 idx;
	__u32 state;
};

#if defined(PQ_LINES) || defined(PQ_HDR) || defined(PQ_SLOT)
#define PQ_MAP 1
#endif

#if defined(PQ_MAP)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
#if PQ_N == PP_MAX_CONNS
	__uint(map_flags, BPF_F_MMAPABLE);   /* as pp_conns: vmalloc'd, page aligned */
#endif
	__uint(max_entries, PQ_N);
	__type(key, __u32);
	__type(value, struct pp_conn_state);
} pq_conns SEC(".maps");
#endif

__u32 pq_next;

SEC("struct_ops/mr_init")
void BPF_PROG(mr_init, struct sock *sk)
{
	struct pq_ca *ca = (struct pq_ca *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
	__u32 n = __sync_fetch_and_add(&pq_next, 1);

	/* Consecutive subflows (a connection's, nearly always) share an entry, slots 0 and 1. */
	ca->conn = 1;
	ca->frac = 0;
	ca->sink = 0;
	ca->slot = n & 1;
	ca->idx = (n >> 1) & (PQ_N - 1);
	ca->state = 0;
}

SEC("struct_ops/mr_cong_avoid")
void BPF_PROG(mr_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct pq_ca *ca = (struct pq_ca *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
	__u64 sink = acked;

#if defined(PQ_SOCK) || defined(PQ_MAP)
	/* pp_cong_avoid's reads of the socket, its tcp_is_cwnd_limited test among them. */
	if (!tp->is_cwnd_limited && !(tp->snd_cwnd < tp->snd_ssthresh &&
				      tp->snd_cwnd < 2 * tp->max_packets_out))
		sink += 1;
	sink += (tp->srtt_us >> 3) + tp->snd_cwnd_clamp + ca->frac + ca->state;
#endif
#if defined(PQ_MAP)
	if (ca->conn) {
		__u32 idx = ca->idx;
		struct pp_conn_state *st = bpf_map_lookup_elem(&pq_conns, &idx);
		__u32 k __attribute__((unused)) = ca->slot & (PP_MAX_SF - 1);

		if (st) {
			/* pp_lia's per-ACK reads of the header, then pp_publish's stores. */
#if !defined(PQ_SLOT)
			sink += st->mask + st->lia.forced + st->lia.ratio_q32;
#endif
#if !defined(PQ_HDR)
			st->s[k].w = (__u64)tp->snd_cwnd << 16;
			st->s[k].rtt_us = tp->srtt_us >> 3;
			st->s[k].active = 1;
#endif
		}
	}
#endif
#if defined(PQ_PAD)
	{
		__u64 a = sink, b = sink + 1, c = sink + 2, d = sink + 3;

		/* PQ_PAD instructions in four independent chains (so mostly fetch, not latency). */
		asm volatile(".rept " PQ_STR(PQ_PAD) " / 4\n"
			     "%[a] += 0x1234567\n"
			     "%[b] ^= 0x2345678\n"
			     "%[c] += 0x3456789\n"
			     "%[d] ^= 0x456789a\n"
			     ".endr\n"
			     : [a] "+r"(a), [b] "+r"(b), [c] "+r"(c), [d] "+r"(d));
		sink = a + b + c + d;
	}
#endif
	ca->sink = sink;

	pp_minreno_cong_avoid(tp, acked);   /* the yardstick's cong_avoid, unchanged */
}

PP_MINRENO_SSTHRESH_UNDO()

SEC(".struct_ops")
struct tcp_congestion_ops PQ_NAME = {
	.init = (void *)mr_init,
	.cong_avoid = (void *)mr_cong_avoid,
	.ssthresh = (void *)mr_ssthresh,
	.undo_cwnd = (void *)mr_undo_cwnd,
	.name = PQ_STR(PQ_NAME),
};

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pp_conn_state.h: the layout of a connection's entry in the array pp_conns, shared by the
 * controls (pp_common.bpf.h) and the bench probes (pp_probe.bpf.c), so that a probe's loads and
 * stores land on the very lines and offsets pp_lia's do. Needs __u32/__u64 and pp_cc_math.h
 * (PP_MAX_SF, struct pp_lia_state) included first.
 */
#ifndef PP_CONN_STATE_H
#define PP_CONN_STATE_H

#include "pp_life.h"

/* Entries of pp_conns: connections that can be coupled at once (more run uncoupled Reno). */
#define PP_MAX_CONNS 4096

/*
 * One cache line per slot: each subflow writes its own slot on every ACK, and subflows run on
 * different CPUs; sharing a line would make every ACK a cache-line transfer. The array below is
 * BPF_F_MMAPABLE, so its values start on a page and, with a size that is a multiple of 64, every
 * slot and the header really sit on lines of their own (a hash map's value follows the element's
 * header at an 8-byte alignment only: there neighbouring slots shared lines).
 */
struct pp_slot {
	__u64 sk;        /* owner socket pointer; 0 = free */
	__u64 w;         /* q16 window (ssthresh while in recovery) */
	__u32 rtt_us;    /* srtt */
	__u32 active;
	__u64 lr;        /* OLIA l_r, bytes */
} __attribute__((aligned(64)));

struct pp_conn_state {
	struct pp_slot s[PP_MAX_SF];
	/* The header, read on every ACK (LIA) and written only at init/release and LIA's
	 * recomputations. */
	struct pp_life life;     /* generation | references, owner (pp_conn_life.h) */
	struct pp_lia_state lia; /* LIA: alpha / w_total at the last recomputation, forced flag */
	__u32 mask;      /* bit k: slot k taken and active (pp_participates' "active") */
} __attribute__((aligned(64)));

#endif /* PP_CONN_STATE_H */

/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Tunables of the pathpool BPF congestion controls: the only variable in each object's .data
 * section, so the loader can set it before load by layout (kernel/loader/pp_loader.c). */
#ifndef PP_TUNABLES_H
#define PP_TUNABLES_H

struct pp_tunables {
	unsigned long long rsf_d_us;        /* RSF-DB target delay d, microseconds */
	unsigned long long rsf_mu_q16;      /* RSF-LB target loss rate mu, packets/s * 2^16 */
	unsigned long long balia_quantised; /* 1 = v0.95 kernel's integer alpha */
	unsigned long long rsf_lb_keep_q32; /* RSF-LB: (1 - 1/loss_window) * 2^32 */
	unsigned long long counting_acks;   /* 1 = v0.95 one CA step per ACK; 0 = per segment */
	unsigned long long ewtcp_a_q32;     /* EWTCP's weight a * 2^32; 0 = 1/n^2, n = subflows */
	unsigned long long semicoupled_a_q32; /* Semicoupled's weight a * 2^32 */
};

/* Defaults: d = 100 ms and mu = 4 packets/s (Pokhrel & Williamson 2020, Section 4); loss_window
 * 1000 packets, pathpool-cc's rsf-lb default: (1 - 1/1000) * 2^32 rounded; byte counting
 * (pathpool-cc's Counting::Bytes); EWTCP's a = 1/n^2 with n the subflows the connection
 * couples when the ACK arrives (pathpool-cc: n = the flow's configured subflows), Semicoupled's
 * a = 1 (both pathpool-cc's defaults; the loader accepts a in [1e-4, 2], pp_cc_math.h
 * PP_A_MIN_Q32). */
#define PP_TUNABLES_DEFAULT { 100000ULL, 4ULL << 16, 0ULL, 4290672329ULL, 0ULL, 0ULL, 1ULL << 32 }

#endif

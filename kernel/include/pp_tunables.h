/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Tunables of the pathpool BPF congestion controls: the only variable in each object's .data
 * section, so the loader can set it before load by layout (kernel/loader/pp_loader.c). */
#ifndef PP_TUNABLES_H
#define PP_TUNABLES_H

struct pp_tunables {
	unsigned long long rsf_d_us;        /* RSF-DB target delay d, microseconds */
	unsigned long long rsf_mu_q16;      /* RSF-LB target loss rate mu, packets/s * 2^16 */
	unsigned long long balia_quantised; /* 1 = v0.95 kernel's integer alpha */
};

/* Defaults: d = 100 ms and mu = 4 packets/s, the values of seed 001 Section 4. */
#define PP_TUNABLES_DEFAULT { 100000ULL, 4ULL << 16, 0ULL }

#endif

// SPDX-License-Identifier: GPL-2.0
/* pp_max: see pp_common.bpf.h for the callbacks and pp_cc_math.h for the arithmetic. */
#define PP_ALGO PP_ALGO_MAX
/* Max computes LIA's ratio on every ACK: its per-path term inline saves a BPF-to-BPF call and
 * return per path and ACK (LIA recomputes rarely and keeps the smaller global function). */
#define PP_LIA_TERM static __always_inline
#include "pp_common.bpf.h"

PP_DEFINE_OPS(pp_max, "pp_max");

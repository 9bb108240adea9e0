// SPDX-License-Identifier: GPL-2.0
/* pp_balia: see pp_common.bpf.h for the callbacks and pp_cc_math.h for the arithmetic. */
#define PP_ALGO PP_ALGO_BALIA
#include "pp_common.bpf.h"

PP_DEFINE_OPS(pp_balia, "pp_balia");

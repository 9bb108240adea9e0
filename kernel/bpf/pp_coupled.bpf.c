// SPDX-License-Identifier: GPL-2.0
/* pp_coupled: see pp_common.bpf.h for the callbacks and pp_cc_math.h for the arithmetic. */
#define PP_ALGO PP_ALGO_COUPLED
#include "pp_common.bpf.h"

PP_DEFINE_OPS(pp_coupled, "pp_coupled");

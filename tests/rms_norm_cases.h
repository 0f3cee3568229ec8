/* Shared by the RMSNorm suites: inputs, the reference, the variant lists. */
#ifndef UBG_TEST_RMS_NORM_CASES_H
#define UBG_TEST_RMS_NORM_CASES_H

#include "test_util.h"

/* Tolerances no looser than Liger-Kernel's test_rms_norm.py (f32: 1e-4 /
 * 1e-6, bf16: 2e-1 / 2e-2). Liger has no f16 case; f16 has 3 more mantissa
 * bits than bf16, so it gets tighter bounds than bf16 on both. */
static const double tol_atol[3] = {1e-4, 1e-2, 2e-1};
static const double tol_rtol[3] = {1e-6, 1e-2, 2e-2};

static inline tc_variants tc_load_variants(const char *pass, int dtype) {
  return tc_kernel_variants("rms_norm", pass, dtype);
}

#endif

/* The test-only tune_probe kernel (tests/specs): y = 2 x.
 *   args: x, y, n */
#include "ref.h"

static void tune_probe_fwd_ref(const ref_slot *a, int dt, double *const *outs) {
  (void)dt;
  const float *x = a[0].p;
  for (int64_t i = 0; i < a[2].i; i++) outs[1][i] = 2.0 * (double)x[i];
}

REF_REGISTER(tune_probe, fwd, tune_probe_fwd_ref)

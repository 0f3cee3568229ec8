/* The test-only tune_probe kernel (tests/specs): y = 2 x.
 *   args: x, y, n */
#include "ubgen_ref.h"

UBGEN_REF(tune_probe, fwd) {
  (void)dt;
  const float *x = a[0].p;
  for (int64_t i = 0; i < a[2].i; i++) outs[1][i] = 2.0 * (double)x[i];
}

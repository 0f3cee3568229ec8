/* Squared ReLU in double precision (Liger's LigerReLUSquaredFunction).
 *   fwd args: x, y, rows, cols
 *   bwd args: dy, x, dx, rows, cols
 * y = max(x, 0)^2, dx = 2 dy max(x, 0); NaN stays NaN. */
#include "ubgen_ref.h"

static double relu(double x) { return x < 0 ? 0 : x; }

UBGEN_REF(relu_squared, fwd) {
  const int64_t n = a[2].i * a[3].i;
  for (int64_t i = 0; i < n; i++) {
    const double r = relu(ref_load(a[0].p, i, dt));
    outs[1][i] = r * r;
  }
}

UBGEN_REF(relu_squared, bwd) {
  const int64_t n = a[3].i * a[4].i;
  for (int64_t i = 0; i < n; i++) outs[2][i] = 2 * ref_load(a[0].p, i, dt) * relu(ref_load(a[1].p, i, dt));
}

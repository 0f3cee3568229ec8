/* Softmax over the last dimension in double precision (Liger's
 * LigerSoftmaxFunction), with libm's exp.
 *   fwd args: x, y, rows, cols
 *   bwd args: dy, y, dx, rows, cols
 * y = exp(x - max) / sum exp(x - max) per row; dx = y (dy - sum(dy y)),
 * from the y it is given (as the kernel). */
#include "ubgen_ref.h"

UBGEN_REF(softmax, fwd) {
  const int64_t rows = a[2].i, D = a[3].i;
  for (int64_t r = 0; r < rows; r++) {
    double m = -INFINITY, s = 0;
    for (int64_t d = 0; d < D; d++) {
      const double v = ref_load(a[0].p, r * D + d, dt);
      m = v > m || v != v ? v : m;
    }
    const double shift = m == -INFINITY ? 0 : m;
    for (int64_t d = 0; d < D; d++) s += exp(ref_load(a[0].p, r * D + d, dt) - shift);
    for (int64_t d = 0; d < D; d++) outs[1][r * D + d] = exp(ref_load(a[0].p, r * D + d, dt) - shift) / s;
  }
}

UBGEN_REF(softmax, bwd) {
  const int64_t rows = a[3].i, D = a[4].i;
  for (int64_t r = 0; r < rows; r++) {
    double s = 0;
    for (int64_t d = 0; d < D; d++) s += ref_load(a[0].p, r * D + d, dt) * ref_load(a[1].p, r * D + d, dt);
    for (int64_t d = 0; d < D; d++)
      outs[2][r * D + d] = ref_load(a[1].p, r * D + d, dt) * (ref_load(a[0].p, r * D + d, dt) - s);
  }
}

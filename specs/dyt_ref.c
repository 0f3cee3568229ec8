/* DyT in double precision (Liger's LigerDyTFunction), with libm's tanh.
 *   fwd args: x, alpha, gamma, beta, y, rows, cols
 *   bwd args: dy, x, alpha, gamma, dx, dalpha, dgamma, dbeta, rows, cols
 * Forward: y = gamma tanh(alpha x) + beta (beta optional).
 * Backward, t = tanh(alpha x), s = 1 - t^2:
 *   dx = dy gamma alpha s,  dalpha = sum dy gamma x s,
 *   dgamma = sum_rows dy t,  dbeta = sum_rows dy */
#include "ubgen_ref.h"

UBGEN_REF(dyt, fwd) {
  const void *x = a[0].p, *gamma = a[2].p, *beta = a[3].p;
  const double alpha = ref_load(a[1].p, 0, dt);
  const int64_t rows = a[5].i, D = a[6].i;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t d = 0; d < D; d++)
      outs[4][r * D + d] = ref_load(gamma, d, dt) * tanh(alpha * ref_load(x, r * D + d, dt)) +
                           (beta ? ref_load(beta, d, dt) : 0.0);
}

UBGEN_REF(dyt, bwd) {
  const void *dy = a[0].p, *x = a[1].p, *gamma = a[3].p;
  const double alpha = ref_load(a[2].p, 0, dt);
  const int64_t rows = a[8].i, D = a[9].i;
  double *dx = outs[4], *dalpha = outs[5], *dgamma = outs[6], *dbeta = outs[7];
  double da = 0;
  for (int64_t d = 0; d < D; d++) {
    dgamma[d] = 0;
    if (dbeta) dbeta[d] = 0;
  }
  for (int64_t r = 0; r < rows; r++)
    for (int64_t d = 0; d < D; d++) {
      const double xv = ref_load(x, r * D + d, dt), g = ref_load(dy, r * D + d, dt), t = tanh(alpha * xv);
      const double gs = g * ref_load(gamma, d, dt) * (1 - t * t);
      dx[r * D + d] = gs * alpha;
      da += gs * xv;
      dgamma[d] += g * t;
      if (dbeta) dbeta[d] += g;
    }
  dalpha[0] = da;
}

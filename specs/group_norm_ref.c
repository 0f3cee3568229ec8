/* GroupNorm in double precision (Liger's LigerGroupNormFunction).
 *   fwd args: x, w, b, y, mean, rstd, batch, channels, groups, cols, eps
 *   bwd args: dy, x, w, mean, rstd, dx, dw, db, batch, channels, groups, cols
 * x [batch, groups, cols]: row r = (r / groups, group g = r % groups), its
 * element j in channel c = g (channels / groups) + j / spatial, spatial =
 * cols / (channels / groups).
 * Forward: mean = sum x / cols, var = sum (x - mean)^2 / cols (biased, two
 * passes), rstd = 1 / sqrt(var + eps), y = (x - mean) rstd w[c] + b[c].
 * Backward, from the mean and rstd it is given (as the kernel):
 *   x_hat = (x - mean) rstd, g = w[c] dy, c1 = sum(x_hat g) / cols, c2 = sum(g) / cols
 *   dx = (g - (x_hat c1 + c2)) rstd,  dw[c] = sum dy x_hat,  db[c] = sum dy
 *   (dw and db summed over the batch and the channel's spatial elements) */
#include "ubgen_ref.h"

UBGEN_REF(group_norm, fwd) {
  const void *x = a[0].p, *w = a[1].p, *b = a[2].p;
  const int64_t rows = a[6].i * a[8].i, groups = a[8].i, cg = a[7].i / groups, D = a[9].i, spatial = D / cg;
  const double eps = (float)a[10].f; /* the kernel gets a float */
  for (int64_t r = 0; r < rows; r++) {
    double mean, rstd;
    ref_mean_rstd(x, r * D, D, dt, eps, &mean, &rstd);
    outs[4][r] = mean;
    outs[5][r] = rstd;
    for (int64_t j = 0; j < D; j++) {
      const int64_t c = r % groups * cg + j / spatial;
      outs[3][r * D + j] = (ref_load(x, r * D + j, dt) - mean) * rstd * ref_load(w, c, dt) + ref_load(b, c, dt);
    }
  }
}

UBGEN_REF(group_norm, bwd) {
  const void *dy = a[0].p, *x = a[1].p, *w = a[2].p;
  const float *mean = a[3].p, *rstd = a[4].p;
  const int64_t rows = a[8].i * a[10].i, C = a[9].i, groups = a[10].i, cg = C / groups, D = a[11].i, spatial = D / cg;
  double *dx = outs[5], *dw = outs[6], *db = outs[7];
  for (int64_t c = 0; c < C; c++) dw[c] = db[c] = 0;
  for (int64_t r = 0; r < rows; r++) {
    double c1 = 0, c2 = 0;
    for (int64_t j = 0; j < D; j++) {
      const int64_t c = r % groups * cg + j / spatial;
      const double xh = (ref_load(x, r * D + j, dt) - mean[r]) * rstd[r], g = ref_load(w, c, dt) * ref_load(dy, r * D + j, dt);
      c1 += xh * g;
      c2 += g;
    }
    c1 /= (double)D, c2 /= (double)D;
    for (int64_t j = 0; j < D; j++) {
      const int64_t c = r % groups * cg + j / spatial;
      const double xh = (ref_load(x, r * D + j, dt) - mean[r]) * rstd[r], g0 = ref_load(dy, r * D + j, dt);
      dx[r * D + j] = (ref_load(w, c, dt) * g0 - (xh * c1 + c2)) * rstd[r];
      dw[c] += g0 * xh;
      db[c] += g0;
    }
  }
}

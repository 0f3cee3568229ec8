/* Total variation distance in double precision (Liger's
 * LigerTVDLossFunction).
 *   fwd args: p, q, shift_labels, loss, rows, cols, ignore_index, reduction
 *   bwd args: dloss, p, q, shift_labels, dp, rows, cols, ignore_index, reduction
 * reduction: 0 mean, 1 sum, 2 none, 3 batchmean. Rows whose label is
 * ignore_index are left out: 0 in the loss (none) and the gradient, and
 * not counted by mean and batchmean, whose factor is 0 when no row is
 * kept. dp = dloss 0.5 sign(p - q) times the factor, sign(0) = 0. */
#include "ubgen_ref.h"

static int kept(const int64_t *labels, int64_t r, int64_t ignore_index) {
  return !labels || labels[r] != ignore_index;
}

/* the factor of a sum of 0.5 |p - q| */
static double scale(const int64_t *labels, int64_t rows, int64_t cols, int64_t ignore_index, int64_t reduction) {
  int64_t n = 0;
  if (reduction == 1 || reduction == 2) return 1;
  for (int64_t r = 0; r < rows; r++) n += kept(labels, r, ignore_index);
  if (n == 0) return 0;
  return reduction == 0 ? 1.0 / ((double)n * (double)cols) : 1.0 / (double)n;
}

UBGEN_REF(tvd, fwd) {
  const int64_t *labels = a[2].p;
  const int64_t rows = a[4].i, D = a[5].i, ign = a[6].i, red = a[7].i;
  double *loss = outs[3], total = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t d = 0; d < D; d++) {
      const double diff = ref_load(a[0].p, r * D + d, dt) - ref_load(a[1].p, r * D + d, dt);
      const double t = kept(labels, r, ign) ? 0.5 * fabs(diff) : 0;
      if (red == 2) loss[r * D + d] = t;
      total += t;
    }
  if (red != 2) loss[0] = total * scale(labels, rows, D, ign, red);
}

UBGEN_REF(tvd, bwd) {
  const int64_t *labels = a[3].p;
  const int64_t rows = a[5].i, D = a[6].i, ign = a[7].i, red = a[8].i;
  const double s = scale(labels, rows, D, ign, red);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t d = 0; d < D; d++) {
      const double diff = ref_load(a[1].p, r * D + d, dt) - ref_load(a[2].p, r * D + d, dt);
      const double g = ref_load(a[0].p, red == 2 ? r * D + d : 0, REF_F32);
      outs[4][r * D + d] = kept(labels, r, ign) ? 0.5 * g * s * (diff > 0 ? 1 : diff < 0 ? -1 : 0) : 0;
    }
}

/* KL divergence in double precision (Liger's LigerKLDivLossFunction), with
 * libm's log and exp.
 *   fwd args: y_pred, y_true, loss, rows, cols, reduction, log_target, eps
 *   bwd args: y_true, grad_output, dy_pred, rows, cols, reduction, log_target
 * l = y_true (log max(y_true, eps) - y_pred), or e^y_true (y_true - y_pred)
 * with log_target; reduction 2 (none): loss = l, else loss = sum l / div,
 * div = 1 (sum, 1), rows cols (mean, 0), rows (batchmean, 3). Backward:
 * dy_pred = -(y_true or e^y_true) grad_output, / div for a reduction. */
#include "ubgen_ref.h"

static double kl_div_ref_divisor(int64_t reduction, int64_t rows, int64_t cols) {
  return reduction == 0 ? (double)rows * (double)cols : reduction == 3 ? (double)rows : 1.0;
}

UBGEN_REF(kl_div, fwd) {
  const void *y_pred = a[0].p, *y_true = a[1].p;
  const int64_t rows = a[3].i, D = a[4].i, reduction = a[5].i, log_target = a[6].i;
  const double eps = (float)a[7].f; /* the kernel takes eps as a float */
  double *loss = outs[2], s = 0;
  for (int64_t i = 0; i < rows * D; i++) {
    const double p = ref_load(y_pred, i, dt), t = ref_load(y_true, i, dt);
    const double l = log_target ? exp(t) * (t - p) : t * (log(t > eps ? t : eps) - p);
    if (reduction == 2) loss[i] = l;
    else s += l;
  }
  if (reduction != 2) loss[0] = s / kl_div_ref_divisor(reduction, rows, D);
}

UBGEN_REF(kl_div, bwd) {
  const void *y_true = a[0].p;
  const float *g = a[1].p;
  const int64_t rows = a[3].i, D = a[4].i, reduction = a[5].i, log_target = a[6].i;
  const double div = kl_div_ref_divisor(reduction, rows, D);
  for (int64_t i = 0; i < rows * D; i++) {
    const double t = ref_load(y_true, i, dt), q = log_target ? exp(t) : t;
    outs[2][i] = reduction == 2 ? -q * g[i] : -q * g[0] / div;
  }
}

/* The whole FLCE op in double precision, for tests/test_flce.c: the
 * per-row formulas of specs/flce_ref.c (its ce_row), run over every row with
 * the mean's denominators and the upstream gradient as ubg_flce applies them. */
#include "../../specs/flce_ref.c"

#include "flce_ref.h"
#include "ref.h"

void flce_ref_full(int dt, int64_t bt, int64_t hidden, int64_t vocab, const void *x, const void *weight,
                   const int64_t *target, const ubg_flce_opts *o, double *loss, double *z_loss, int64_t *argmax,
                   double *dx, double *dweight, double *dbias) {
  ubg_flce_opts dflt;
  if (!o) {
    ubg_flce_opts dd = {-100, 0.0f, 0.0f, 0.0f, UBG_REDUCE_MEAN, NULL, NULL, NULL, 0, UBG_F32};
    dflt = dd;
    o = &dflt;
  }
  const int64_t H = hidden, V = vocab;
  /* weight NULL stands for the identity (hidden == vocab): the logits are x
   * itself and dx is their gradient, the cross entropy on given logits,
   * without a vocab x vocab matrix */
  double *X = load_all(x, bt * H, dt), *W = load_all(weight, V * H, dt);
  double *cw = load_all(o->ce_weight, V, REF_F32), *b = load_all(o->bias, V, dt);
  double *l = malloc((size_t)V * sizeof *l), *z = malloc((size_t)V * sizeof *z);
  const bool mean = o->reduction == UBG_REDUCE_MEAN, none = o->reduction == UBG_REDUCE_NONE;
  const bool want_grad = dx || dweight || dbias;

  int64_t n_valid = 0;
  double sw = 0, wsum = 0;
  for (int64_t r = 0; r < bt; r++)
    if (target[r] != o->ignore_index) n_valid++, sw += cw ? cw[target[r]] : 1.0;
  for (int64_t v = 0; v < V && cw; v++) wsum += cw[v];
  const ce_params p = {.vocab = V,
                       .ignore_index = o->ignore_index,
                       .ls = o->label_smoothing,
                       .s = o->lse_square_scale,
                       .cap = o->softcap,
                       .scale_n = mean ? 1.0 / (double)(n_valid > 1 ? n_valid : 1) : 1.0,
                       .scale_w = mean && cw ? 1.0 / sw : 1.0,
                       .wsum = wsum,
                       .w = cw,
                       .token_scaling = o->token_scaling != 0};

  if (!none) {
    loss[0] = 0;
    if (z_loss) z_loss[0] = 0;
  }
  if (dx)
    for (int64_t i = 0; i < bt * H; i++) dx[i] = 0;
  if (dweight)
    for (int64_t i = 0; i < V * H; i++) dweight[i] = 0;
  if (dbias)
    for (int64_t v = 0; v < V; v++) dbias[v] = 0;

  for (int64_t r = 0; r < bt; r++) {
    const double *xr = X + r * H;
    for (int64_t v = 0; v < V; v++) {
      double acc = b ? b[v] : 0;
      if (W)
        for (int64_t h = 0; h < H; h++) acc += xr[h] * W[v * H + h];
      else
        acc += xr[v];
      l[v] = acc;
    }
    double lr, zr;
    int64_t ar;
    const double up = !o->grad_output ? 1.0 : none ? o->grad_output[r] : o->grad_output[0];
    ce_row(&p, l, target[r], z, &lr, &zr, &ar, want_grad ? l : NULL, up);
    if (none) {
      loss[r] = lr;
      if (z_loss) z_loss[r] = zr;
    } else {
      loss[0] += lr;
      if (z_loss) z_loss[0] += zr;
    }
    if (argmax) argmax[r] = ar;
    /* an ignored row's gradient is 0 (ce_row wrote zeros) and still goes
     * through the products, as in torch and Liger (and the per-pass
     * references below): 0 * NaN or 0 * Inf in the row's x or in the
     * weight gives NaN in dweight or in the row's dx */
    if (!want_grad) continue;
    for (int64_t v = 0; v < V; v++) {
      const double g = l[v];
      if (dx && W)
        for (int64_t h = 0; h < H; h++) dx[r * H + h] += g * W[v * H + h];
      else if (dx)
        dx[r * H + v] += g;
      if (dweight)
        for (int64_t h = 0; h < H; h++) dweight[v * H + h] += g * xr[h];
      if (dbias) dbias[v] += g;
    }
  }
  free(X), free(W), free(cw), free(b), free(l), free(z);
}

REF_REGISTER(flce, logits, flce_logits_ref)
REF_REGISTER(flce, ce, flce_ce_ref)
REF_REGISTER(flce, dx, flce_dx_ref)
REF_REGISTER(flce, dw, flce_dw_ref)

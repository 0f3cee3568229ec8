/* Fused linear cross entropy in double precision (docs/semantics.md "What
 * each kernel computes"; the per-row formulas below are those of the FLCE
 * semantics note, written from the loss and differentiated by hand).
 *
 * Per row r with target y (rows with y == ignore_index: loss 0, z-loss 0,
 * argmax -1, gradient 0):
 *   l_v = sum_h x[r,h] W[v,h] (+ b_v);  z_v = cap tanh(l_v / cap), or l_v
 *   m = max z (argmax: its first index);  lse = m + log sum_v exp(z_v - m)
 *   eps = ls / V;  w_v the class weights (all 1 without them)
 *   smooth = eps sum_v w_v (lse - z_v)     (= eps (lse W_sum - sum w z))
 *   raw = (1 - ls) w_y (lse - z_y) + smooth
 *   loss_r = raw (weights ? scale_w : scale_n) + s lse^2 scale_n
 *   z_loss_r = s lse^2 scale_n
 *   with token scaling both times p_y = exp(z_y - lse), a constant
 *   scale_n = MEAN ? 1 / max(n_valid, 1) : 1
 *   scale_w = MEAN && weights ? 1 / sum_valid w_y : 1   (any sign; 1/0 = +Inf)
 * Its gradient wrt z_v, p_v = exp(z_v - lse):
 *   d raw / d z_v = (1 - ls) w_y (p_v - [v = y]) + eps (W_sum p_v - w_v)
 *   d (s lse^2) / d z_v = 2 s lse p_v
 * and wrt l_v under a softcap, times 1 - tanh(l_v / cap)^2; the row's
 * gradient times its upstream gradient g_r (grad_output: one value for MEAN
 * and SUM, one per row for NONE) and p_y under token scaling. Then
 * dx = dl W, dW = dl^T x, dbias = column sums of dl.
 *
 * Per-pass references (specs/flce.json, slot i = args[i]):
 *   logits: x, weight, bias, logits, bt, hidden, vocab
 *   ce:     logits, target, ce_weight, loss, z_loss, argmax, bt, hidden, vocab,
 *           ignore_index, grad, scale_n, scale_w, weight_sum, label_smoothing,
 *           lse_square_scale, softcap, row_scale, grad_scale, token_scaling
 *           (scale_n, scale_w and W_sum = weight_sum come from the arguments,
 *           as the kernel gets them; float arguments are f32 in the kernel)
 *   dx:     dlogits, weight, dx, bt, hidden, vocab
 *   dw:     dlogits, x, dw_acc, dbias_acc, bt, hidden, vocab, dw_sum, dbias_sum
 *           (the sums start from dw_acc or dw_sum, dbias_acc or dbias_sum) */

#include "ubgen_ref.h"

typedef struct {
  int64_t vocab, ignore_index;
  double ls, s, cap, scale_n, scale_w, wsum;
  const double *w; /* class weights [vocab], or NULL */
  bool token_scaling;
} ce_params;

/* One row: l[vocab] the logits before the softcap, y the target; z is
 * scratch [vocab]. Writes the row's loss, z-loss and argmax, and when g is
 * not NULL g[v] = up * d loss_r / d l_v (g may be l), up the row's upstream
 * gradient. */
static void ce_row(const ce_params *p, const double *l, int64_t y, double *z, double *loss, double *zl, int64_t *am,
                   double *g, double up) {
  const int64_t V = p->vocab;
  if (y == p->ignore_index) {
    *loss = 0, *zl = 0, *am = -1;
    if (g)
      for (int64_t v = 0; v < V; v++) g[v] = 0;
    return;
  }
  double m = -INFINITY;
  int64_t arg = 0;
  for (int64_t v = 0; v < V; v++) {
    z[v] = p->cap > 0 ? p->cap * tanh(l[v] / p->cap) : l[v];
    if (z[v] > m) m = z[v], arg = v;
  }
  double d = 0;
  for (int64_t v = 0; v < V; v++) d += exp(z[v] - m);
  const double lse = m + log(d), eps = p->ls / (double)V, w_y = p->w ? p->w[y] : 1.0;
  double wz = 0; /* sum_v w_v z_v */
  for (int64_t v = 0; v < V; v++) wz += (p->w ? p->w[v] : 1.0) * z[v];
  const double wsum = p->w ? p->wsum : (double)V;
  /* no smoothing term without smoothing: eps = 0 times an infinite sum (a
   * logit at -Inf, a masked token) would make it NaN */
  const double smooth = p->ls > 0 ? eps * (lse * wsum - wz) : 0.0;
  const double raw = (1 - p->ls) * w_y * (lse - z[y]) + smooth;
  const double p_y = p->token_scaling ? exp(z[y] - lse) : 1.0;
  *zl = p->s * lse * lse * p->scale_n;
  *loss = (raw * (p->w ? p->scale_w : p->scale_n) + *zl) * p_y;
  *zl *= p_y;
  *am = arg;
  if (!g) return;
  const double scale = p->w ? p->scale_w : p->scale_n;
  for (int64_t v = 0; v < V; v++) {
    const double pv = exp(z[v] - lse), wv = p->w ? p->w[v] : 1.0;
    const double smooth_v = p->ls > 0 ? eps * (wsum * pv - wv) : 0.0;
    double gv = ((1 - p->ls) * w_y * (pv - (v == y ? 1.0 : 0.0)) + smooth_v) * scale +
                2 * p->s * lse * pv * p->scale_n;
    if (p->cap > 0) {
      const double t = tanh(l[v] / p->cap);
      gv *= 1 - t * t;
    }
    g[v] = gv * up * p_y;
  }
}

static double *load_all(const void *p, int64_t n, int dt) {
  if (!p) return NULL;
  double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
  for (int64_t i = 0; i < n; i++) d[i] = ref_load(p, i, dt);
  return d;
}

/* ---- per-pass references */

UBGEN_REF(flce, logits) {
  const void *x = a[0].p, *w = a[1].p, *bias = a[2].p;
  double *logits = outs[3];
  const int64_t bt = a[4].i, H = a[5].i, V = a[6].i;
  double *W = load_all(w, V * H, dt), *xr = malloc((size_t)H * sizeof *xr);
  for (int64_t r = 0; r < bt; r++) {
    for (int64_t h = 0; h < H; h++) xr[h] = ref_load(x, r * H + h, dt);
    for (int64_t v = 0; v < V; v++) {
      double acc = bias ? ref_load(bias, v, dt) : 0;
      for (int64_t h = 0; h < H; h++) acc += xr[h] * W[v * H + h];
      logits[r * V + v] = acc;
    }
  }
  free(W), free(xr);
}

UBGEN_REF(flce, ce) {
  const float *logits = a[0].p;
  const int64_t *target = a[1].p;
  const int64_t bt = a[6].i, V = a[8].i;
  const bool grad = a[10].i != 0;
  double *cw = load_all(a[2].p, V, REF_F32);
  const ce_params p = {.vocab = V,
                       .ignore_index = a[9].i,
                       .ls = (float)a[14].f,
                       .s = (float)a[15].f,
                       .cap = (float)a[16].f,
                       .scale_n = (float)a[11].f,
                       .scale_w = (float)a[12].f,
                       .wsum = (float)a[13].f,
                       .w = cw,
                       .token_scaling = a[19].i != 0};
  double *l = malloc((size_t)V * sizeof *l), *z = malloc((size_t)V * sizeof *z);
  for (int64_t r = 0; r < bt; r++) {
    for (int64_t v = 0; v < V; v++) l[v] = logits[r * V + v];
    double lr, zr;
    int64_t ar;
    const double up = (double)(float)a[18].f * (a[17].p ? ((const float *)a[17].p)[r] : 1.0);
    ce_row(&p, l, target[r], z, &lr, &zr, &ar, grad ? l : NULL, up);
    /* grad: the row's gradient (0 on an ignored row); else the logits as they were */
    for (int64_t v = 0; v < V; v++) outs[0][r * V + v] = l[v];
    outs[3][r] = lr;
    if (outs[4]) outs[4][r] = zr;
    if (outs[5]) outs[5][r] = (double)ar;
  }
  free(cw), free(l), free(z);
}

UBGEN_REF(flce, dx) {
  const float *dl = a[0].p;
  const int64_t bt = a[3].i, H = a[4].i, V = a[5].i;
  double *W = load_all(a[1].p, V * H, dt), *dx = outs[2];
  for (int64_t r = 0; r < bt; r++)
    for (int64_t h = 0; h < H; h++) {
      double acc = 0;
      for (int64_t v = 0; v < V; v++) acc += (double)dl[r * V + v] * W[v * H + h];
      dx[r * H + h] = acc;
    }
  free(W);
}

UBGEN_REF(flce, dw) {
  const float *dl = a[0].p;
  const int64_t bt = a[4].i, H = a[5].i, V = a[6].i;
  /* the sums so far: f32 (dw_acc, dbias_acc) or in the dtype (dw_sum, dbias_sum) */
  double *w0 = a[2].p ? load_all(a[2].p, V * H, REF_F32) : load_all(a[7].p, V * H, dt);
  double *b0 = a[3].p ? load_all(a[3].p, V, REF_F32) : load_all(a[8].p, V, dt);
  double *dw = a[2].p ? outs[2] : outs[7], *db = a[3].p ? outs[3] : outs[8];
  double *X = load_all(a[1].p, bt * H, dt);
  if (dw)
    for (int64_t v = 0; v < V; v++)
      for (int64_t h = 0; h < H; h++) {
        double acc = w0[v * H + h];
        for (int64_t r = 0; r < bt; r++) acc += (double)dl[r * V + v] * X[r * H + h];
        dw[v * H + h] = acc;
      }
  if (db)
    for (int64_t v = 0; v < V; v++) {
      double acc = b0[v];
      for (int64_t r = 0; r < bt; r++) acc += dl[r * V + v];
      db[v] = acc;
    }
  free(X), free(w0), free(b0);
}

/* Fused linear generalized JSD in double precision (Liger's
 * LigerFusedLinearJSDFunction), pass by pass, with libm's exp and log.
 *
 *   logits: x, weight, bias, logits, bt, hidden, vocab
 *             logits = x weight^T (+ bias)
 *   rows:   s_logits, t_logits, shift_labels, kept, row_loss, dlogits, dlog_q, bt, hidden, vocab, off,
 *           beta, temperature, ignore_index
 *             log q = log_softmax(z_s / T), log p = log_softmax(z_t / T) per row; per element
 *             q = e^log q, p = e^log p, m = beta p + (1 - beta) q:
 *               beta in (0, 1): l = beta p (log p - log m) + (1 - beta) q (log q - log m),
 *                               dl/dlog q = (1 - beta) q (log q - log m)
 *               beta = 0:       l = p (log p - log q),  dl/dlog q = -p
 *               beta = 1:       l = q (log q - log p),  dl/dlog q = q (log q - log p) + q
 *             (a term whose probability is 0 being 0); row_loss[off + r] = sum l,
 *             dlog_q = g = dl/dlog q / kept, dlogits = (g - q sum g) / T;
 *             a row whose label is ignore_index: loss 0, gradients 0
 *   count:  shift_labels, kept, row_loss, loss, bt, hidden, vocab, ignore_index
 *             kept = the rows not ignored; loss = sum row_loss / kept (0 when none is kept)
 *   dx:     dlogits, weight, dx, bt, hidden, vocab            dx = dlogits weight
 *   dw:     dlogits, x, dw_acc, dbias_acc, bt, hidden, vocab, dw_sum, dbias_sum
 *             dw = (dw_acc or dw_sum) + dlogits^T x, dbias = (dbias_acc or dbias_sum) + column sums */
#include "ubgen_ref.h"

static double *load_all(const void *p, int64_t n, int dt) {
  if (!p) return NULL;
  double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
  for (int64_t i = 0; i < n; i++) d[i] = ref_load(p, i, dt);
  return d;
}

UBGEN_REF(fused_linear_jsd, logits) {
  const int64_t bt = a[4].i, H = a[5].i, V = a[6].i;
  double *X = load_all(a[0].p, bt * H, dt), *W = load_all(a[1].p, V * H, dt), *bias = load_all(a[2].p, V, dt);
  for (int64_t r = 0; r < bt; r++)
    for (int64_t v = 0; v < V; v++) {
      double acc = bias ? bias[v] : 0;
      for (int64_t h = 0; h < H; h++) acc += X[r * H + h] * W[v * H + h];
      outs[3][r * V + v] = acc;
    }
  free(X), free(W), free(bias);
}

/* row[v] := log_softmax(row / T)[v] */
static void log_softmax(double *row, int64_t V, double T) {
  double m = -INFINITY, s = 0;
  for (int64_t v = 0; v < V; v++) m = row[v] / T > m ? row[v] / T : m;
  for (int64_t v = 0; v < V; v++) s += exp(row[v] / T - m);
  for (int64_t v = 0; v < V; v++) row[v] = row[v] / T - m - log(s);
}

UBGEN_REF(fused_linear_jsd, rows) {
  const float *zs = a[0].p, *zt = a[1].p, *row_loss = a[4].p;
  const int64_t *labels = a[2].p, kept = ((const int64_t *)a[3].p)[0];
  const int64_t bt = a[7].i, V = a[9].i, off = a[10].i, ignore = a[13].i;
  const double beta = (double)(float)a[11].f, T = (double)(float)a[12].f; /* the kernel's f32 floats */
  double *dlogits = outs[5], *dlog_q = outs[6];
  const double scale = kept > 0 ? 1.0 / (double)kept : 0;
  double *lq = malloc((size_t)(V ? V : 1) * sizeof *lq), *lp = malloc((size_t)(V ? V : 1) * sizeof *lp);
  for (int64_t i = 0; i < off; i++) outs[4][i] = row_loss[i];
  for (int64_t r = 0; r < bt; r++) {
    const float *s = zs + r * V, *t = zt + r * V;
    double *ds = dlogits ? dlogits + r * V : NULL, *g = dlog_q ? dlog_q + r * V : NULL;
    outs[4][off + r] = 0;
    if (labels && labels[r] == ignore) {
      for (int64_t v = 0; ds && v < V; v++) ds[v] = g[v] = 0;
      continue;
    }
    for (int64_t v = 0; v < V; v++) lq[v] = s[v], lp[v] = t[v];
    log_softmax(lq, V, T);
    log_softmax(lp, V, T);
    double loss = 0, g_sum = 0;
    for (int64_t v = 0; v < V; v++) {
      double gv;
      loss += ref_jsd_term(lq[v], lp[v], beta, &gv);
      if (g) g[v] = gv * scale, g_sum += gv * scale;
    }
    outs[4][off + r] = loss;
    for (int64_t v = 0; ds && v < V; v++) ds[v] = (g[v] - exp(lq[v]) * g_sum) / T;
  }
  free(lq), free(lp);
}

UBGEN_REF(fused_linear_jsd, count) {
  const int64_t *labels = a[0].p;
  const float *row_loss = a[2].p;
  const int64_t bt = a[4].i, ignore = a[7].i;
  int64_t kept = 0;
  double sum = 0;
  for (int64_t r = 0; r < bt; r++) kept += !labels || labels[r] != ignore;
  for (int64_t r = 0; row_loss && r < bt; r++) sum += row_loss[r];
  outs[1][0] = (double)kept;
  if (outs[3]) outs[3][0] = kept > 0 ? sum / (double)kept : 0;
}

UBGEN_REF(fused_linear_jsd, dx) {
  const float *dl = a[0].p;
  const int64_t bt = a[3].i, H = a[4].i, V = a[5].i;
  double *W = load_all(a[1].p, V * H, dt);
  for (int64_t r = 0; r < bt; r++)
    for (int64_t h = 0; h < H; h++) {
      double acc = 0;
      for (int64_t v = 0; v < V; v++) acc += (double)dl[r * V + v] * W[v * H + h];
      outs[2][r * H + h] = acc;
    }
  free(W);
}

UBGEN_REF(fused_linear_jsd, dw) {
  const float *dl = a[0].p;
  const int64_t bt = a[4].i, H = a[5].i, V = a[6].i;
  /* the sums so far: f32 (dw_acc, dbias_acc) or in the dtype (dw_sum, dbias_sum) */
  double *w0 = a[2].p ? load_all(a[2].p, V * H, REF_F32) : load_all(a[7].p, V * H, dt);
  double *b0 = a[3].p ? load_all(a[3].p, V, REF_F32) : load_all(a[8].p, V, dt);
  double *dw = a[2].p ? outs[2] : outs[7], *db = a[3].p ? outs[3] : outs[8];
  double *X = load_all(a[1].p, bt * H, dt);
  for (int64_t v = 0; dw && v < V; v++)
    for (int64_t h = 0; h < H; h++) {
      double acc = w0[v * H + h];
      for (int64_t r = 0; r < bt; r++) acc += (double)dl[r * V + v] * X[r * H + h];
      dw[v * H + h] = acc;
    }
  for (int64_t v = 0; db && v < V; v++) {
    double acc = b0[v];
    for (int64_t r = 0; r < bt; r++) acc += dl[r * V + v];
    db[v] = acc;
  }
  free(X), free(w0), free(b0);
}

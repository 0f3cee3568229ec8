/* Generalized Jensen-Shannon divergence in double precision (Liger's
 * LigerJSDFunction), with libm's exp and log.
 *   fwd args: log_q, log_p, shift_labels, loss, dlog_q, rows, cols, beta, ignore_index
 * Per element, q = e^log_q, p = e^log_p, m = beta p + (1 - beta) q:
 *   beta in (0, 1): l = beta p (log p - log m) + (1 - beta) q (log q - log m),
 *                   dl/dlog_q = (1 - beta) q (log q - log m)
 *   beta = 0:       l = p (log p - log q),  dl/dlog_q = -p
 *   beta = 1:       l = q (log q - log p),  dl/dlog_q = q (log q - log p) + q
 * a term whose probability is 0 being 0. Rows whose label is ignore_index
 * are left out (gradient 0); loss = the sum of l over the kept rows / their
 * count (0 when none is kept), dlog_q = dloss/dlog_q. */
#include "ubgen_ref.h"

UBGEN_REF(jsd, fwd) {
  const int64_t *labels = a[2].p;
  const int64_t rows = a[5].i, D = a[6].i, ignore = a[8].i;
  const double beta = (double)(float)a[7].f; /* the kernel's f32 beta */
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; r++) kept += !labels || labels[r] != ignore;
  const double scale = kept ? 1.0 / (double)kept : 0;
  double sum = 0;
  for (int64_t r = 0; r < rows; r++) {
    const int keep = !labels || labels[r] != ignore;
    for (int64_t d = 0; d < D; d++) {
      double g = 0;
      if (keep) sum += ref_jsd_term(ref_load(a[0].p, r * D + d, dt), ref_load(a[1].p, r * D + d, dt), beta, &g);
      if (outs[4]) outs[4][r * D + d] = g * scale;
    }
  }
  outs[3][0] = sum * scale;
}

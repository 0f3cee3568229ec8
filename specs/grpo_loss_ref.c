/* The vocabulary sweeps of the GRPO loss in double precision (Liger's
 * _selective_log_softmax_kernel and the sweeps of _grpo_loss_fwd/bwd
 * kernels), with libm's exp and log.
 *   fwd args: logits, ids, logp, lse, batch, seq, vocab, temperature
 *   bwd args: logits, ids, lse, dlogp, dlogits, batch, seq, vocab, temperature
 * logits [batch, seq + 1, vocab]; per token (b, l < seq), x its row:
 * lse = log sum exp(x / t), logp = x[ids] / t - lse; backward, from the
 * lse it is given (as the kernel): dlogits = dlogp / t ([v = ids] -
 * exp(x / t - lse)), and 0 at position seq and where dlogp is 0. */
#include "ubgen_ref.h"

UBGEN_REF(grpo_loss, fwd) {
  const int64_t *ids = a[1].p;
  const int64_t batch = a[4].i, seq = a[5].i, V = a[6].i;
  const double t = (float)a[7].f; /* the kernel takes t as a float */
  for (int64_t b = 0; b < batch; b++)
    for (int64_t l = 0; l < seq; l++) {
      const int64_t base = (b * (seq + 1) + l) * V, tok = b * seq + l;
      double m = -INFINITY, s = 0;
      for (int64_t v = 0; v < V; v++) {
        const double x = ref_load(a[0].p, base + v, dt) / t;
        m = x > m || x != x ? x : m;
      }
      const double shift = m == -INFINITY ? 0 : m;
      for (int64_t v = 0; v < V; v++) s += exp(ref_load(a[0].p, base + v, dt) / t - shift);
      outs[3][tok] = shift + log(s);
      outs[2][tok] = ref_load(a[0].p, base + ids[tok], dt) / t - outs[3][tok];
    }
}

UBGEN_REF(grpo_loss, bwd) {
  const int64_t *ids = a[1].p;
  const float *lse = a[2].p, *dlogp = a[3].p;
  const int64_t batch = a[5].i, seq = a[6].i, V = a[7].i;
  const double t = (float)a[8].f;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t l = 0; l <= seq; l++) {
      const int64_t base = (b * (seq + 1) + l) * V, tok = b * seq + l;
      const double c = l < seq ? dlogp[tok] / t : 0;
      for (int64_t v = 0; v < V; v++)
        outs[4][base + v] =
            c == 0 ? 0 : c * ((v == ids[tok] ? 1.0 : 0.0) - exp(ref_load(a[0].p, base + v, dt) / t - lse[tok]));
    }
}

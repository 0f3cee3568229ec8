/* GEGLU's activation in double precision (Liger's LigerGELUMulFunction),
 * GELU's tanh approximation gelu(x) = x (1 + tanh(z)) / 2,
 * z = sqrt(2/pi) (x + 0.044715 x^3).
 *   fwd args: a, b, c, rows, cols
 *   bwd args: dc, a, b, da, db, rows, cols
 * The roundings the semantics name: gelu to the dtype before the product
 * with b (forward) or dc (backward), and dc b before the derivative. */
#include "ubgen_ref.h"

static const double K = 0.7978845608028654, C = 0.044715;

UBGEN_REF(geglu, fwd) {
  const int64_t n = a[3].i * a[4].i;
  for (int64_t i = 0; i < n; i++) {
    const double x = ref_load(a[0].p, i, dt), t = tanh(K * (x + C * x * x * x));
    outs[2][i] = ref_round(0.5 * x * (1 + t), dt) * ref_load(a[1].p, i, dt);
  }
}

UBGEN_REF(geglu, bwd) {
  const int64_t n = a[5].i * a[6].i;
  for (int64_t i = 0; i < n; i++) {
    const double dc = ref_load(a[0].p, i, dt), x = ref_load(a[1].p, i, dt), b = ref_load(a[2].p, i, dt);
    const double t = tanh(K * (x + C * x * x * x));
    const double dgelu = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * C * x * x);
    outs[3][i] = ref_round(dc * b, dt) * dgelu;
    outs[4][i] = dc * ref_round(0.5 * x * (1 + t), dt);
  }
}

/* SwiGLU's activation in double precision (Liger's LigerSiLUMulFunction).
 *   fwd args: a, b, c, rows, cols, gate_multiplier, down_multiplier
 *   bwd args: dc, a, b, da, db, rows, cols, gate_multiplier, down_multiplier
 * The roundings the semantics name: silu to the dtype before the product
 * with b, and, when down_multiplier != 1, the product before it (forward)
 * and dc times it (backward), as torch multiplies those in the dtype. */
#include "ubgen_ref.h"

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

UBGEN_REF(swiglu, fwd) {
  const int64_t n = a[3].i * a[4].i;
  const double gm = (float)a[5].f, dm = (float)a[6].f; /* the kernel gets floats */
  for (int64_t i = 0; i < n; i++) {
    const double x = ref_load(a[0].p, i, dt) * gm;
    const double c = ref_round(x * sigmoid(x), dt) * ref_load(a[1].p, i, dt);
    outs[2][i] = dm == 1.0 ? c : ref_round(c, dt) * dm;
  }
}

UBGEN_REF(swiglu, bwd) {
  const int64_t n = a[5].i * a[6].i;
  const double gm = (float)a[7].f, dm = (float)a[8].f;
  for (int64_t i = 0; i < n; i++) {
    const double dc = ref_load(a[0].p, i, dt), g = dm == 1.0 ? dc : ref_round(dc * dm, dt);
    const double x = ref_load(a[1].p, i, dt) * gm, s = sigmoid(x), silu = x * s;
    outs[3][i] = g * (silu * (1 - s) + s) * ref_load(a[2].p, i, dt) * gm;
    outs[4][i] = g * silu;
  }
}

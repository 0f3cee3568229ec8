/* Rotary position embedding in double precision (transformers'
 * apply_rotary_pos_emb, rotate-half), q and k token-major.
 *   fwd args: q, k, cos, sin, q_out, k_out, bt, seq, cos_rows, hq, hk, d
 *   bwd args: dq_out, dk_out, cos, sin, dq, dk, bt, seq, cos_rows, hq, hk, d
 *   mrope_fwd, mrope_bwd: the same, then sec_t, sec_h, head_major; cos and
 *   sin [3, cos_rows, d], pair j's from stream 0 below sec_t, 1 below sec_t
 *   + sec_h, 2 from there (Qwen2-VL's M-RoPE); with head_major the inputs
 *   q and k are [bt / seq, heads, seq, d]
 * forward: [x1, x2] -> [x1 c_a - x2 s_a, x2 c_b + x1 s_b]; backward, its
 * transpose: [g1, g2] -> [g1 c_a + g2 s_b, g2 c_b - g1 s_a]. */
#include "ubgen_ref.h"

static void rotate(const ref_slot *a, int dt, double *const *outs, int bwd, int mrope) {
  const int64_t bt = a[6].i, seq = a[7].i, cos_rows = a[8].i, d = a[11].i, half = d / 2;
  const int64_t b1 = mrope ? a[12].i : half, b2 = mrope ? a[12].i + a[13].i : half;
  const int head_major = mrope && a[14].i;
  const int64_t heads[2] = {a[9].i, a[10].i};
  for (int64_t i = 0; i < bt; i++) {
    for (int t = 0; t < 2; t++)
      for (int64_t h = 0; h < heads[t]; h++)
        for (int64_t j = 0; j < half; j++) {
          const int64_t stream = j < b1 ? 0 : j < b2 ? 1 : 2;
          const int64_t at = (stream * cos_rows + (cos_rows == bt ? i : i % seq)) * d;
          const int64_t x = (i * heads[t] + h) * d + j;
          const int64_t in = head_major ? ((i / seq * heads[t] + h) * seq + i % seq) * d + j : x;
          const double x1 = ref_load(a[t].p, in, dt), x2 = ref_load(a[t].p, in + half, dt);
          const double ca = ref_load(a[2].p, at + j, dt), cb = ref_load(a[2].p, at + half + j, dt);
          const double sa = ref_load(a[3].p, at + j, dt), sb = ref_load(a[3].p, at + half + j, dt);
          outs[4 + t][x] = bwd ? x1 * ca + x2 * sb : x1 * ca - x2 * sa;
          outs[4 + t][x + half] = bwd ? x2 * cb - x1 * sa : x2 * cb + x1 * sb;
        }
  }
}

UBGEN_REF(rope, fwd) { rotate(a, dt, outs, 0, 0); }

UBGEN_REF(rope, bwd) { rotate(a, dt, outs, 1, 0); }

UBGEN_REF(rope, mrope_fwd) { rotate(a, dt, outs, 0, 1); }

UBGEN_REF(rope, mrope_bwd) { rotate(a, dt, outs, 1, 1); }

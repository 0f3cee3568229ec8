/* Llama 4's rotary position embedding in double precision (transformers'
 * apply_rotary_emb: interleaved pairs times complex frequencies), q and k
 * token-major.
 *   fwd args: q, k, freqs, q_out, k_out, bt, seq, freq_rows, hq, hk, d
 *   bwd args: dq_out, dk_out, freqs, dq, dk, bt, seq, freq_rows, hq, hk, d
 * freqs (f32) holds (f_re, f_im) pairs; forward: (x_re + i x_im)(f_re +
 * i f_im); backward, by the conjugate: (g_re + i g_im)(f_re - i f_im). */
#include "ubgen_ref.h"

static void rotate(const ref_slot *a, int dt, double *const *outs, int bwd) {
  const int64_t bt = a[5].i, seq = a[6].i, freq_rows = a[7].i, d = a[10].i;
  const int64_t heads[2] = {a[8].i, a[9].i};
  for (int64_t i = 0; i < bt; i++) {
    const int64_t at = (freq_rows == bt ? i : i % seq) * d;
    for (int t = 0; t < 2; t++)
      for (int64_t h = 0; h < heads[t]; h++)
        for (int64_t j = 0; j < d / 2; j++) {
          const int64_t x = (i * heads[t] + h) * d + 2 * j;
          const double re = ref_load(a[t].p, x, dt), im = ref_load(a[t].p, x + 1, dt);
          const double f_re = ref_load(a[2].p, at + 2 * j, REF_F32);
          const double f_im = (bwd ? -1 : 1) * ref_load(a[2].p, at + 2 * j + 1, REF_F32);
          outs[3 + t][x] = re * f_re - im * f_im;
          outs[3 + t][x + 1] = re * f_im + im * f_re;
        }
  }
}

UBGEN_REF(llama4_rope, fwd) { rotate(a, dt, outs, 0); }

UBGEN_REF(llama4_rope, bwd) { rotate(a, dt, outs, 1); }

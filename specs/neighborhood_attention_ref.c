/* Fused 1-D neighborhood attention in double precision (Liger's
 * LigerFusedNeighborhoodAttentionFunction), with libm's exp and log.
 *   fwd args: q, k, v, out, lse, batch_heads, seq_len, head_dim, kernel_size, dilation, scale
 *   bwd args: dout, q, k, v, out, lse, dq, dk, dv, batch_heads, seq_len, head_dim, kernel_size,
 *             dilation, scale
 * Query i sees keys j = i + u dilation, |u| <= kernel_size / 2, 0 <= j < seq_len:
 * s_ij = scale q_i . k_j, p_ij = softmax_j(s_ij), out_i = sum_j p_ij v_j,
 * lse_i = log sum_j e^s_ij. The backward takes p_ij = e^(s_ij - lse_i) and
 * D_i = dout_i . out_i from the out and lse it is given (as the kernel):
 * ds_ij = p_ij (dout_i . v_j - D_i), dq_i = scale sum_j ds_ij k_j,
 * dk_j = scale sum_i ds_ij q_i, dv_j = sum_i p_ij dout_i. */
#include "ubgen_ref.h"

/* a[i] . b[j] over head_dim D, both read as double */
static double na_dot(const void *a, int64_t i, const void *b, int64_t j, int64_t D, int dt) {
  double s = 0;
  for (int64_t d = 0; d < D; d++) s += ref_load(a, i * D + d, dt) * ref_load(b, j * D + d, dt);
  return s;
}

UBGEN_REF(neighborhood_attention, fwd) {
  const void *q = a[0].p, *k = a[1].p, *v = a[2].p;
  const int64_t BH = a[5].i, N = a[6].i, D = a[7].i, half = a[8].i / 2, dil = a[9].i;
  const double scale = (float)a[10].f;
  for (int64_t h = 0; h < BH; h++)
    for (int64_t i = 0; i < N; i++) {
      const int64_t r = h * N + i;
      double m = -INFINITY, l = 0;
      for (int64_t u = -half; u <= half; u++) {
        const int64_t j = i + u * dil;
        if (j < 0 || j >= N) continue;
        const double s = scale * na_dot(q, r, k, h * N + j, D, dt);
        m = s > m ? s : m;
      }
      for (int64_t d = 0; d < D; d++) outs[3][r * D + d] = 0;
      for (int64_t u = -half; u <= half; u++) {
        const int64_t j = i + u * dil;
        if (j < 0 || j >= N) continue;
        const double p = exp(scale * na_dot(q, r, k, h * N + j, D, dt) - m);
        l += p;
        for (int64_t d = 0; d < D; d++) outs[3][r * D + d] += p * ref_load(v, (h * N + j) * D + d, dt);
      }
      for (int64_t d = 0; d < D; d++) outs[3][r * D + d] /= l;
      outs[4][r] = m + log(l);
    }
}

UBGEN_REF(neighborhood_attention, bwd) {
  const void *dout = a[0].p, *q = a[1].p, *k = a[2].p, *v = a[3].p, *out = a[4].p;
  const float *lse = a[5].p;
  const int64_t BH = a[9].i, N = a[10].i, D = a[11].i, half = a[12].i / 2, dil = a[13].i;
  const double scale = (float)a[14].f;
  double *dq = outs[6], *dk = outs[7], *dv = outs[8];
  for (int64_t n = 0; n < BH * N * D; n++) dq[n] = dk[n] = dv[n] = 0;
  for (int64_t h = 0; h < BH; h++)
    for (int64_t i = 0; i < N; i++) {
      const int64_t r = h * N + i;
      const double dsum = na_dot(dout, r, out, r, D, dt);
      for (int64_t u = -half; u <= half; u++) {
        const int64_t j = i + u * dil, c = h * N + j;
        if (j < 0 || j >= N) continue;
        const double p = exp(scale * na_dot(q, r, k, c, D, dt) - lse[r]);
        const double ds = p * (na_dot(dout, r, v, c, D, dt) - dsum);
        for (int64_t d = 0; d < D; d++) {
          dq[r * D + d] += scale * ds * ref_load(k, c * D + d, dt);
          dk[c * D + d] += scale * ds * ref_load(q, r * D + d, dt);
          dv[c * D + d] += p * ref_load(dout, r * D + d, dt);
        }
      }
    }
}

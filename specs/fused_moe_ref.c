/* A mixture of experts' expert layers with SwiGLU in double precision
 * (Liger's LigerFusedMoEFunction), pass by pass, with libm's exp.
 *
 *   route:   top_k_index, offsets, order, pos, tokens, hidden, inter, experts, top_k
 *              the slots s = t top_k + k sorted by expert, stably: order[r] = s, pos[s] = r,
 *              expert e's rows [offsets[e], offsets[e + 1])
 *   mm:      a_tok, a_rows, w, offsets, order, c, tokens, hidden, inter, experts, top_k, n, kdim, w_t, c_scatter
 *              row r of expert e: A_r = a_tok[order[r] / top_k] or a_rows[r];
 *              C_r = A_r W_e^T (w_t 1, W_e [n, kdim]) or A_r W_e (w_t 0, W_e [kdim, n]),
 *              at row r, or at row order[r] with c_scatter
 *   dw:      a_rows, b_tok, offsets, order, dw, tokens, hidden, inter, experts, top_k, m, n, c_t
 *              dw_e = dw_e + sum over e's rows r of a_rows[r]^T b_tok[order[r] / top_k], [m, n]
 *              (c_t 0) or its transpose [n, m] (c_t 1)
 *   act:     h, order, act, tokens, hidden, inter, top_k
 *              act[r] = silu(g) u, g = h[order[r], :inter], u = h[order[r], inter:]
 *   act_bwd: h, order, top_k_weights, dact, act_w, dh, dweights, tokens, hidden, inter, top_k
 *              s = order[r], w = top_k_weights[s], a = silu(g) u; dweights[s] = dact[r] . a,
 *              act_w[r] = w a; with d = w dact[r] and sg = sigmoid(g):
 *              dh[r] = [d (silu(g) (1 - sg) + sg) u, d silu(g)]
 *   combine: y, pos, top_k_weights, out, tokens, hidden, inter, top_k
 *              out[t] = sum over k of w[t, k] y[pos[t top_k + k]] (w = 1 without weights) */
#include "ubgen_ref.h"

UBGEN_REF(fused_moe, route) {
  const int32_t *idx = a[0].p;
  const int64_t n = a[4].i * a[8].i, E = a[7].i;
  int64_t *next = malloc((size_t)(E + 1) * sizeof *next);
  for (int64_t e = 0; e <= E; e++) next[e] = 0;
  for (int64_t s = 0; s < n; s++) next[idx[s] + 1]++;
  for (int64_t e = 0; e < E; e++) next[e + 1] += next[e];
  for (int64_t e = 0; e <= E; e++) outs[1][e] = (double)next[e];
  for (int64_t s = 0; s < n; s++) {
    const int64_t r = next[idx[s]]++;
    outs[2][r] = (double)s;
    outs[3][s] = (double)r;
  }
  free(next);
}

/* expert e of row r */
static int64_t expert_of(const int64_t *offsets, int64_t E, int64_t r) {
  int64_t e = 0;
  while (e < E - 1 && r >= offsets[e + 1]) e++;
  return e;
}

UBGEN_REF(fused_moe, mm) {
  const int64_t *offsets = a[3].p, *order = a[4].p;
  const int64_t rows = a[6].i * a[10].i, E = a[9].i, K = a[10].i, N = a[11].i, Kd = a[12].i, wt = a[13].i;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t e = expert_of(offsets, E, r), dst = a[14].i ? order[r] : r;
    for (int64_t j = 0; j < N; j++) {
      double acc = 0;
      for (int64_t k = 0; k < Kd; k++) {
        const double x = a[0].p ? ref_load(a[0].p, order[r] / K * Kd + k, dt) : ref_load(a[1].p, r * Kd + k, REF_F32);
        acc += x * ref_load(a[2].p, e * N * Kd + (wt ? j * Kd + k : k * N + j), dt);
      }
      outs[5][dst * N + j] = acc;
    }
  }
}

UBGEN_REF(fused_moe, dw) {
  const int64_t *offsets = a[2].p, *order = a[3].p;
  const int64_t E = a[8].i, K = a[9].i, M = a[10].i, N = a[11].i, ct = a[12].i;
  for (int64_t e = 0; e < E; e++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        const int64_t at = e * M * N + (ct ? j * M + i : i * N + j);
        double acc = ref_load(a[4].p, at, dt);
        for (int64_t r = offsets[e]; r < offsets[e + 1]; r++)
          acc += ref_load(a[0].p, r * M + i, REF_F32) * ref_load(a[1].p, order[r] / K * N + j, dt);
        outs[4][at] = acc;
      }
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

UBGEN_REF(fused_moe, act) {
  const int64_t *order = a[1].p;
  const int64_t rows = a[3].i * a[6].i, I = a[5].i;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < I; j++) {
      const double g = ref_load(a[0].p, order[r] * 2 * I + j, REF_F32);
      const double u = ref_load(a[0].p, order[r] * 2 * I + I + j, REF_F32);
      outs[2][r * I + j] = g * sigmoid(g) * u;
    }
}

UBGEN_REF(fused_moe, act_bwd) {
  const int64_t *order = a[1].p;
  const int64_t rows = a[7].i * a[10].i, I = a[9].i;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t s = order[r];
    const double w = ref_load(a[2].p, s, dt);
    double dot = 0;
    for (int64_t j = 0; j < I; j++) {
      const double g = ref_load(a[0].p, s * 2 * I + j, REF_F32), u = ref_load(a[0].p, s * 2 * I + I + j, REF_F32);
      const double da = ref_load(a[3].p, r * I + j, REF_F32), sg = sigmoid(g), silu = g * sg, d = w * da;
      dot += da * silu * u;
      outs[4][r * I + j] = w * silu * u;
      outs[5][r * 2 * I + j] = d * (silu * (1 - sg) + sg) * u;
      outs[5][r * 2 * I + I + j] = d * silu;
    }
    if (outs[6]) outs[6][s] = dot;
  }
}

UBGEN_REF(fused_moe, combine) {
  const int64_t *pos = a[1].p;
  const int64_t T = a[4].i, H = a[5].i, K = a[7].i;
  for (int64_t t = 0; t < T; t++)
    for (int64_t j = 0; j < H; j++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc += (a[2].p ? ref_load(a[2].p, t * K + k, dt) : 1.0) * ref_load(a[0].p, pos[t * K + k] * H + j, REF_F32);
      outs[3][t * H + j] = acc;
    }
}

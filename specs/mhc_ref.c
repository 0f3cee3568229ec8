/* mHC in double precision (Liger's LigerMHCCoeffsFunction,
 * LigerMHCPreFunction, LigerMHCPostResFunction).
 *   coeffs_fwd args: x, phi, b, alpha, h_pre, h_post, h_res, mix, invr, rows, hc, c, tmax,
 *                    rms_eps, pre_eps, sinkhorn_eps, post_mult
 *   coeffs_bwd args: dh_pre, dh_post, dh_res, x, phi, b, alpha, mix, invr, dx, dphi, db, dalpha,
 *                    rows, hc, c, tmax, sinkhorn_eps, post_mult
 *   pre_fwd: x, h_pre, out, rows, hc, c      pre_bwd: dout, x, h_pre, dx, dh_pre, rows, hc, c
 *   post_res_fwd: x, f_out, h_post, h_res, out, rows, hc, c
 *   post_res_bwd: dout, x, f_out, h_post, h_res, dx, df_out, dh_post, dh_res, rows, hc, c
 * x [rows, hc, c] (K = hc c a row), phi [K, M], M = hc hc + 2 hc; every
 * tensor but x, f_out, dout and their gradients is f32. Sinkhorn's backward
 * here keeps every step's matrices (the kernel recomputes them). */
#include "ubgen_ref.h"

static double ref_sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }

/* Sinkhorn-Knopp of lg [hc, hc]: p the row softmax; hist[0] = p + eps
 * after the first column step, hist[2t - 1] after step t's row step and
 * hist[2t] after its column step (t = 1 .. tmax - 1); rs[t], cs[t] the
 * sums each step divided by (cs[0]: the first column step's) */
static void ref_sinkhorn(const double *lg, int64_t hc, int64_t tmax, double eps, double *p, double *hist, double *rs,
                         double *cs) {
  const int64_t S = hc * hc;
  for (int64_t i = 0; i < hc; i++) {
    double mx = lg[i * hc], s = 0;
    for (int64_t j = 1; j < hc; j++) mx = lg[i * hc + j] > mx ? lg[i * hc + j] : mx;
    for (int64_t j = 0; j < hc; j++) s += exp(lg[i * hc + j] - mx);
    for (int64_t j = 0; j < hc; j++) p[i * hc + j] = exp(lg[i * hc + j] - mx) / s;
  }
  for (int64_t t = 0; t < tmax; t++) {
    double *out = hist + 2 * t * S;
    const double *in = t ? hist + (2 * t - 2) * S : p;
    if (t) { /* row step into hist[2t - 1] */
      double *mid = hist + (2 * t - 1) * S;
      for (int64_t i = 0; i < hc; i++) {
        double s = 0;
        for (int64_t j = 0; j < hc; j++) s += in[i * hc + j];
        rs[t * hc + i] = s;
        for (int64_t j = 0; j < hc; j++) mid[i * hc + j] = in[i * hc + j] / (s + eps);
      }
      in = mid;
    }
    for (int64_t j = 0; j < hc; j++) {
      double s = 0;
      for (int64_t i = 0; i < hc; i++) s += in[i * hc + j] + (t ? 0 : eps);
      cs[t * hc + j] = s;
      for (int64_t i = 0; i < hc; i++) out[i * hc + j] = (in[i * hc + j] + (t ? 0 : eps)) / (s + eps);
    }
  }
}

UBGEN_REF(mhc, coeffs_fwd) {
  const void *x = a[0].p;
  const float *phi = a[1].p, *b = a[2].p, *alpha = a[3].p;
  const int64_t rows = a[9].i, hc = a[10].i, c = a[11].i, tmax = a[12].i, K = hc * c, M = hc * hc + 2 * hc;
  const double rms_eps = a[13].f, pre_eps = a[14].f, sk_eps = a[15].f, post_mult = a[16].f;
  double *lg = malloc(sizeof(double) * hc * hc * (2 * tmax + 2)), *p = lg + hc * hc, *hist = p + hc * hc;
  double *rs = malloc(sizeof(double) * hc * tmax * 2), *cs = rs + hc * tmax;
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0;
    for (int64_t k = 0; k < K; k++) ss += ref_load(x, r * K + k, dt) * ref_load(x, r * K + k, dt);
    const double ir = 1.0 / sqrt(ss / (double)K + rms_eps);
    double *mix = outs[7] + r * M;
    outs[8][r] = ir;
    for (int64_t m = 0; m < M; m++) {
      double s = 0;
      for (int64_t k = 0; k < K; k++) s += ref_load(x, r * K + k, dt) * phi[k * M + m];
      mix[m] = s * ir;
    }
    for (int64_t j = 0; j < hc; j++) {
      outs[4][r * hc + j] = ref_sigmoid(mix[j] * alpha[0] + b[j]) + pre_eps;
      outs[5][r * hc + j] = ref_sigmoid(mix[hc + j] * alpha[1] + b[hc + j]) * post_mult;
    }
    for (int64_t k = 0; k < hc * hc; k++) lg[k] = mix[2 * hc + k] * alpha[2] + b[2 * hc + k];
    ref_sinkhorn(lg, hc, tmax, sk_eps, p, hist, rs, cs);
    for (int64_t k = 0; k < hc * hc; k++) outs[6][r * hc * hc + k] = hist[(2 * tmax - 2) * hc * hc + k];
  }
  free(lg), free(rs);
}

UBGEN_REF(mhc, coeffs_bwd) {
  const float *dh_pre = a[0].p, *dh_post = a[1].p, *dh_res = a[2].p, *phi = a[4].p, *b = a[5].p, *alpha = a[6].p;
  const float *mixf = a[7].p, *invr = a[8].p;
  const void *x = a[3].p;
  const int64_t rows = a[13].i, hc = a[14].i, c = a[15].i, tmax = a[16].i, K = hc * c, M = hc * hc + 2 * hc;
  const int64_t S = hc * hc;
  const double sk_eps = a[17].f, post_mult = a[18].f;
  double *dx = outs[9], *dphi = outs[10], *db = outs[11], *dalpha = outs[12];
  double *lg = malloc(sizeof(double) * S * (2 * tmax + 3)), *p = lg + S, *g = p + S, *hist = g + S;
  double *rs = malloc(sizeof(double) * hc * tmax * 2), *cs = rs + hc * tmax, *dl = malloc(sizeof(double) * M);
  for (int64_t k = 0; k < K * M; k++) dphi[k] = 0;
  for (int64_t m = 0; m < M; m++) db[m] = 0;
  dalpha[0] = dalpha[1] = dalpha[2] = 0;
  for (int64_t r = 0; r < rows; r++) {
    const float *mix = mixf + r * M;
    const double ir = invr[r];
    for (int64_t j = 0; j < hc; j++) {
      const double sp = ref_sigmoid(mix[j] * (double)alpha[0] + b[j]);
      const double sq = ref_sigmoid(mix[hc + j] * (double)alpha[1] + b[hc + j]);
      dl[j] = dh_pre ? dh_pre[r * hc + j] * sp * (1 - sp) : 0;
      dl[hc + j] = dh_post ? dh_post[r * hc + j] * post_mult * sq * (1 - sq) : 0;
    }
    for (int64_t k = 0; k < S; k++) {
      lg[k] = mix[2 * hc + k] * (double)alpha[2] + b[2 * hc + k];
      g[k] = dh_res ? dh_res[r * S + k] : 0;
    }
    ref_sinkhorn(lg, hc, tmax, sk_eps, p, hist, rs, cs);
    for (int64_t t = tmax - 1; t >= 0; t--) {
      const double *out = hist + 2 * t * S, *in = t ? hist + (2 * t - 1) * S : 0;
      for (int64_t j = 0; j < hc; j++) { /* column step: out = in / (cs + eps) */
        double dot = 0;
        for (int64_t i = 0; i < hc; i++) dot += g[i * hc + j] * out[i * hc + j];
        for (int64_t i = 0; i < hc; i++) g[i * hc + j] = (g[i * hc + j] - dot) / (cs[t * hc + j] + sk_eps);
      }
      if (t)
        for (int64_t i = 0; i < hc; i++) { /* row step: in = prev / (rs + eps) */
          double dot = 0;
          for (int64_t j = 0; j < hc; j++) dot += g[i * hc + j] * in[i * hc + j];
          for (int64_t j = 0; j < hc; j++) g[i * hc + j] = (g[i * hc + j] - dot) / (rs[t * hc + i] + sk_eps);
        }
    }
    for (int64_t i = 0; i < hc; i++) { /* row softmax */
      double dot = 0;
      for (int64_t j = 0; j < hc; j++) dot += g[i * hc + j] * p[i * hc + j];
      for (int64_t j = 0; j < hc; j++) dl[2 * hc + i * hc + j] = p[i * hc + j] * (g[i * hc + j] - dot);
    }
    double gsum = 0;
    for (int64_t m = 0; m < M; m++) {
      const double am = alpha[m < hc ? 0 : m < 2 * hc ? 1 : 2];
      db[m] += dl[m];
      dalpha[m < hc ? 0 : m < 2 * hc ? 1 : 2] += dl[m] * mix[m];
      gsum += dl[m] * am * mix[m];
    }
    const double xcoef = -(gsum / ir) * ir * ir * ir / (double)K;
    for (int64_t k = 0; k < K; k++) {
      const double xv = ref_load(x, r * K + k, dt);
      double s = 0;
      for (int64_t m = 0; m < M; m++) {
        const double gz = dl[m] * alpha[m < hc ? 0 : m < 2 * hc ? 1 : 2] * ir;
        s += gz * phi[k * M + m];
        dphi[k * M + m] += xv * gz;
      }
      dx[r * K + k] = s + xcoef * xv;
    }
  }
  free(lg), free(rs), free(dl);
}

UBGEN_REF(mhc, pre_fwd) {
  const void *x = a[0].p;
  const float *h = a[1].p;
  const int64_t rows = a[3].i, hc = a[4].i, c = a[5].i;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t d = 0; d < c; d++) {
      double s = 0;
      for (int64_t i = 0; i < hc; i++) s += h[r * hc + i] * ref_load(x, (r * hc + i) * c + d, dt);
      outs[2][r * c + d] = s;
    }
}

UBGEN_REF(mhc, pre_bwd) {
  const void *dout = a[0].p, *x = a[1].p;
  const float *h = a[2].p;
  const int64_t rows = a[5].i, hc = a[6].i, c = a[7].i;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < hc; i++) {
      double s = 0;
      for (int64_t d = 0; d < c; d++) {
        const double g = ref_load(dout, r * c + d, dt);
        outs[3][(r * hc + i) * c + d] = h[r * hc + i] * g;
        s += g * ref_load(x, (r * hc + i) * c + d, dt);
      }
      outs[4][r * hc + i] = s;
    }
}

UBGEN_REF(mhc, post_res_fwd) {
  const void *x = a[0].p, *f = a[1].p;
  const float *hp = a[2].p, *hr = a[3].p;
  const int64_t rows = a[5].i, hc = a[6].i, c = a[7].i;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t o = 0; o < hc; o++)
      for (int64_t d = 0; d < c; d++) {
        double s = hp[r * hc + o] * ref_load(f, r * c + d, dt);
        for (int64_t i = 0; i < hc; i++) s += hr[(r * hc + o) * hc + i] * ref_load(x, (r * hc + i) * c + d, dt);
        outs[4][(r * hc + o) * c + d] = s;
      }
}

UBGEN_REF(mhc, post_res_bwd) {
  const void *dout = a[0].p, *x = a[1].p, *f = a[2].p;
  const float *hp = a[3].p, *hr = a[4].p;
  const int64_t rows = a[9].i, hc = a[10].i, c = a[11].i;
  double *dx = outs[5], *df = outs[6], *dhp = outs[7], *dhr = outs[8];
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t d = 0; d < c; d++) {
      double s = 0;
      for (int64_t o = 0; o < hc; o++) s += hp[r * hc + o] * ref_load(dout, (r * hc + o) * c + d, dt);
      df[r * c + d] = s;
      for (int64_t i = 0; i < hc; i++) {
        double t = 0;
        for (int64_t o = 0; o < hc; o++)
          t += hr[(r * hc + o) * hc + i] * ref_load(dout, (r * hc + o) * c + d, dt);
        dx[(r * hc + i) * c + d] = t;
      }
    }
    for (int64_t o = 0; o < hc; o++) {
      double s = 0;
      for (int64_t d = 0; d < c; d++) s += ref_load(dout, (r * hc + o) * c + d, dt) * ref_load(f, r * c + d, dt);
      dhp[r * hc + o] = s;
      for (int64_t i = 0; i < hc; i++) {
        double t = 0;
        for (int64_t d = 0; d < c; d++)
          t += ref_load(dout, (r * hc + o) * c + d, dt) * ref_load(x, (r * hc + i) * c + d, dt);
        dhr[(r * hc + o) * hc + i] = t;
      }
    }
  }
}

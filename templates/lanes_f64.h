{{! Sums of every element of a call in double, for the gradients of a scalar
    parameter, where f32 lanes would be too far off: DyT's dalpha,
    PolyNorm's dw and db, GroupNorm's dw and db. Pasted into their backward
    templates. }}
/* the sum of 64 double lanes (element d of a row in lane d % 64, as
 * UBG_LANES4), in a fixed order */
UBG_INLINE double fold64(const double *acc) {
  double a[16], s = 0.0;
  int l;
  for (l = 0; l < 16; l++) a[l] = (acc[l] + acc[l + 16]) + (acc[l + 32] + acc[l + 48]);
  for (l = 0; l < 16; l++) s += a[l];
  return s;
}

/* a double kept in an f32 workspace as two floats, its value and the rest */
UBG_INLINE void pair_put(float *p, double v) {
  p[0] = (float)v;
  p[1] = (float)(v - (double)p[0]);
}
UBG_INLINE double pair_get(const float *p) { return (double)p[0] + (double)p[1]; }

#ifndef __TINYC__
/* 8 doubles as one gcc vector (one AVX-512 register) */
typedef double ubg_f64x8 __attribute__((vector_size(64)));

/* acc[0] += lanes 0-7 of x, acc[1] += lanes 8-15, widened to double
 * (exact): 16 f32 lanes added to their double lanes at once */
UBG_INLINE void add16_f64(ubg_f64x8 *acc, ubg_f32x16 x) {
#ifdef UBG_V16 /* one vcvtps2pd of 8 lanes each: gcc converts 4 lanes at a time */
  const __m512 v = (__m512)x;
  acc[0] += (ubg_f64x8)_mm512_cvtps_pd(_mm512_castps512_ps256(v));
  acc[1] += (ubg_f64x8)_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
#else
  int l;
  for (l = 0; l < 8; l++) {
    acc[0][l] += (double)x[l];
    acc[1][l] += (double)x[l + 8];
  }
#endif
}
#endif

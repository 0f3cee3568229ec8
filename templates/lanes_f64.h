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
/* s[l] += x[l] widened to double (exact), for the 16 lanes of x at once */
UBG_INLINE void add16_f64(double *s, ubg_f32x16 x) {
#ifdef UBG_V16 /* one vcvtps2pd of 8 lanes each: gcc converts 4 lanes at a time */
  const __m512 v = (__m512)x;
  _mm512_storeu_pd(s, _mm512_add_pd(_mm512_loadu_pd(s), _mm512_cvtps_pd(_mm512_castps512_ps256(v))));
  _mm512_storeu_pd(s + 8, _mm512_add_pd(_mm512_loadu_pd(s + 8),
                                        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))));
#else
  int l;
  for (l = 0; l < 16; l++) s[l] += (double)x[l];
#endif
}
#endif

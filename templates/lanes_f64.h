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
  typedef float f32x8 __attribute__((vector_size(32)));
  const f32x8 lo = __builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7);
  const f32x8 hi = __builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15);
#ifdef UBG_V16 /* one vcvtps2pd of 8 lanes each: gcc converts 4 lanes at a time */
  acc[0] += (ubg_f64x8)_mm512_cvtps_pd((__m256)lo);
  acc[1] += (ubg_f64x8)_mm512_cvtps_pd((__m256)hi);
#else
  acc[0] += __builtin_convertvector(lo, ubg_f64x8);
  acc[1] += __builtin_convertvector(hi, ubg_f64x8);
#endif
}
#endif

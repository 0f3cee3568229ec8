{{! KL divergence's natural logarithm, pasted into kl_div_fwd.c.tmpl. }}
/* log(x) with + - * and bit operations only, so gcc vectorizes a loop of
 * it and tcc gives the same bits (libm's logf is a call per element).
 * Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + f) for
 * f = m - 1 as f - f^2/2 + f^3 P(f), and e ln 2 added in two parts (the
 * first with 9 bits, as ubg_exp's): within 0.94 ulp of log over every
 * 7th positive float, a subnormal x scaled by 2^23 first. 0 gives -Inf, +Inf gives
 * +Inf, a negative x or NaN gives NaN. */
#define KL_LOG_SQRT_HALF 0.707106781186547524f
#define KL_LOG_MIN_NORMAL 1.17549435e-38f
#define KL_LOG_P8 7.0376836292e-2f
#define KL_LOG_P7 -1.1514610310e-1f
#define KL_LOG_P6 1.1676998740e-1f
#define KL_LOG_P5 -1.2420140846e-1f
#define KL_LOG_P4 1.4249322787e-1f
#define KL_LOG_P3 -1.6668057665e-1f
#define KL_LOG_P2 2.0000714765e-1f
#define KL_LOG_P1 -2.4999993993e-1f
#define KL_LOG_P0 3.3333331174e-1f

UBG_INLINE float kl_log(float x) {
  const int sub = x < KL_LOG_MIN_NORMAL;
  const ubg_u32 u = ubg_f32_bits(sub ? x * 8388608.0f : x); /* 2^23 */
  /* m in [1/2, 1) and e with x = m 2^e */
  float m = ubg_bits_f32((u & 0x007fffffu) | 0x3f000000u);
  float e = (float)((int)((u >> 23) & 0xffu) - 126 - (sub ? 23 : 0));
  const int low = m < KL_LOG_SQRT_HALF;
  e = low ? e - 1.0f : e;
  const float f = low ? (m + m) - 1.0f : m - 1.0f; /* exact: Sterbenz */
  const float z = f * f;
  float p = KL_LOG_P8;
  p = p * f + KL_LOG_P7;
  p = p * f + KL_LOG_P6;
  p = p * f + KL_LOG_P5;
  p = p * f + KL_LOG_P4;
  p = p * f + KL_LOG_P3;
  p = p * f + KL_LOG_P2;
  p = p * f + KL_LOG_P1;
  p = p * f + KL_LOG_P0;
  float y = p * f * z;
  y = y + e * UBG_EXP_LN2_LO;
  y = y - 0.5f * z;
  float r = f + y;
  r = r + e * UBG_EXP_LN2_HI;
  r = x == 0.0f ? -1.0f / 0.0f : r;
  r = x == 1.0f / 0.0f ? x : r;
  return x < 0.0f || x != x ? 0.0f / 0.0f : r;
}

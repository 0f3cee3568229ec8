{{! The natural logarithm as kernels vectorize it: pasted by the templates
    that take logs (kl_div_fwd.c.tmpl, jsd_row.h, grpo_loss_fwd.c.tmpl). Needs the
    prelude (its ln 2 in two parts, ubg_f32_bits). }}
/* log(x 2^k) for a normal x > 0 with + - * fmaf and bit operations, so gcc
 * vectorizes a loop of it and tcc gives its bits (libm's logf is a call
 * per element). Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)),
 * log(1 + f) for f = m - 1 as f - f^2/2 + f^3 P(f), and (e + k) ln 2
 * added in the two parts of the prelude's exponential. */
UBG_INLINE float ubg_log_scaled(float x, float k) {
  const ubg_u32 u = ubg_f32_bits(x);
  float m = ubg_bits_f32((u & 0x007fffffu) | 0x3f000000u); /* x = m 2^e, m in [0.5, 1) */
  const int low = m < 0.70710678f;
  float e = (float)((int)((u >> 23) & 0xffu) - 126) + k;
  e = low ? e - 1.0f : e; /* a select of floats: an int taken from the comparison stops gcc's vectorizer */
  const float f = low ? m + m - 1.0f : m - 1.0f; /* exact (Sterbenz), in [-0.293, 0.414] */
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = fmaf(p, f, -1.1514610310e-1f);
  p = fmaf(p, f, 1.1676998740e-1f);
  p = fmaf(p, f, -1.2420140846e-1f);
  p = fmaf(p, f, 1.4249322787e-1f);
  p = fmaf(p, f, -1.6668057665e-1f);
  p = fmaf(p, f, 2.0000714765e-1f);
  p = fmaf(p, f, -2.4999993993e-1f);
  p = fmaf(p, f, 3.3333331174e-1f);
  float y = p * f * z;
  y = fmaf(e, UBG_EXP_LN2_LO, y);
  y = fmaf(-0.5f, z, y);
  return fmaf(e, UBG_EXP_LN2_HI, f + y);
}

/* log x for a normal x > 0, within 0.83 ulp of the exact log over every
 * normal float. Nothing else is handled: a select on x would stop gcc's
 * vectorizer where the caller knows x is normal (jsd_row.h). */
UBG_INLINE float ubg_log_normal(float x) { return ubg_log_scaled(x, 0.0f); }

/* log x for any x: a subnormal scaled by 2^23 first; 0 gives -Inf, +Inf
 * gives +Inf, a negative x or NaN gives NaN (a user's input, KL
 * divergence's y_true). */
UBG_INLINE float ubg_log(float x) {
  const int sub = x < 1.17549435e-38f; /* the least normal float */
  float r = ubg_log_scaled(sub ? x * 8388608.0f : x, sub ? -23.0f : 0.0f); /* 2^23 */
  r = x == 0.0f ? -1.0f / 0.0f : r;
  r = x == 1.0f / 0.0f ? x : r;
  return x < 0.0f || x != x ? 0.0f / 0.0f : r;
}

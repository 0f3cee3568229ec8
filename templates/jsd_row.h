{{! The generalized JSD of one row, tile by tile: pasted into jsd_fwd.c.tmpl
    (and meant for a fused linear JSD's rows of log-softmaxed logits, which
    need the same per-row step: log q, log p, beta -> the row's loss and its
    gradient over log q). Needs the prelude, lanes_f64.h for fold64 and
    log_f32.h. }}
/* e^x through the prelude's ubg_exp_fma_in_range (a third of ubg_exp's
 * operations): 0 below x = -87 (a probability under 1.7e-38, nothing in a
 * row's sum), Inf above 88 (no log-probability is), NaN stays NaN */
UBG_INLINE float jsd_exp(float x) {
  float t = x > -87.0f ? x : -87.0f; /* NaN becomes -87: its own select below */
  t = t < 88.0f ? t : 88.0f;
  const float e = ubg_exp_fma_in_range(t);
  return x != x ? x : x < -87.0f ? 0.0f : x > 88.0f ? 1.0f / 0.0f : e;
}

/* beta = 0 and 1 are Liger's forward and reverse KL, not the limits of the
 * mixture (which are 0): each its own loop */
enum { JSD_MIXED, JSD_FORWARD_KL, JSD_REVERSE_KL };

/* One element, x = log q, y = log p: its loss term, and *g its gradient
 * over x. A term whose probability is 0 is 0 (p log p -> 0), so a log-
 * probability of -Inf (a masked token) adds nothing rather than NaN, and
 * log m is used only where it is weighed by a probability of e^-87 or
 * more.
 *   mixed:      beta p (y - log m) + (1 - beta) q (x - log m),  m = beta p + (1 - beta) q
 *               g = (1 - beta) q (x - log m)
 *   forward KL: p (y - x),  g = -p
 *   reverse KL: q (x - y),  g = q (x - y) + q */
UBG_INLINE float jsd_term(int kind, float x, float y, float beta, float omb, float *g) {
  const float q = jsd_exp(x), p = jsd_exp(y);
  if (kind == JSD_FORWARD_KL) {
    *g = -p;
    return p == 0.0f ? 0.0f : p * (y - x);
  }
  if (kind == JSD_REVERSE_KL) {
    const float t = q == 0.0f ? 0.0f : q * (x - y);
    *g = q == 0.0f ? 0.0f : t + q;
    return t;
  }
  const float log_m = ubg_log_normal(beta * p + omb * q);
  const float tq = q == 0.0f ? 0.0f : omb * q * (x - log_m);
  *g = tq;
  return (p == 0.0f ? 0.0f : beta * p * (y - log_m)) + tq;
}

/* over n elements of a row, element j in lane j % 64 (UBG_LANES4; the
 * tile starts at a multiple of 64): q_t[j] = scale g, and lanes[l] += the
 * loss terms in double, which pass through p_t (a select's result summed
 * into a double at once keeps gcc from vectorizing the loop) */
UBG_INLINE void jsd_lanes(int kind, double *UBG_RESTRICT lanes, float *UBG_RESTRICT q_t, float *UBG_RESTRICT p_t,
                          ubg_i64 n, float beta, float scale) {
  const float omb = 1.0f - beta;
  ubg_i64 j;
  int l;
  float g;
  for (j = 0; j < n; j++) {
    p_t[j] = jsd_term(kind, q_t[j], p_t[j], beta, omb, &g);
    q_t[j] = g * scale;
  }
  for (j = 0; j + UBG_LANES4 <= n; j += UBG_LANES4)
    for (l = 0; l < UBG_LANES4; l++) lanes[l] += (double)p_t[j + l];
  for (l = 0; j + l < n; l++) lanes[l] += (double)p_t[j + l];
}

/* A tile of a row: q_t = log q, p_t = log p (f32) in; lanes[l] += the
 * loss terms, q_t = scale x the gradient over log q, p_t = the terms out.
 * A row's loss is fold64(lanes) after its tiles. */
UBG_INLINE void jsd_tile(double *UBG_RESTRICT lanes, float *UBG_RESTRICT q_t, float *UBG_RESTRICT p_t, ubg_i64 n,
                         float beta, float scale) {
  if (beta == 0.0f) jsd_lanes(JSD_FORWARD_KL, lanes, q_t, p_t, n, beta, scale);
  else if (beta == 1.0f) jsd_lanes(JSD_REVERSE_KL, lanes, q_t, p_t, n, beta, scale);
  else jsd_lanes(JSD_MIXED, lanes, q_t, p_t, n, beta, scale);
}

{{! A row's maximum through the prelude's 64 lanes, pasted into softmax_fwd.c.tmpl,
    sparsemax_fwd.c.tmpl and grpo_loss_fwd.c.tmpl (after LD's definition). }}
/* t[j] = x[base + j] as f32, and acc[l] = max(acc[l], t[j]) for j = l, l
 * + 64, ... < n (NaN wins), in one sweep */
UBG_INLINE void load_lanes_max(float *UBG_RESTRICT t, float *UBG_RESTRICT acc, const void *x, ubg_i64 base, ubg_i64 n) {
  ubg_i64 j = 0;
  int l;
  for (; j + UBG_LANES4 <= n; j += UBG_LANES4)
    for (l = 0; l < UBG_LANES4; l++) {
      const float v = t[j + l] = LD(x, base + j + l);
      acc[l] = v > acc[l] || v != v ? v : acc[l];
    }
  for (l = 0; j + l < n; l++) {
    const float v = t[j + l] = LD(x, base + j + l);
    acc[l] = v > acc[l] || v != v ? v : acc[l];
  }
}

/* the 64 lanes' maximum, in a fixed order */
UBG_INLINE float fold_max(const float *acc) {
  float m = acc[0];
  int l;
  for (l = 1; l < UBG_LANES4; l++) m = acc[l] > m || acc[l] != acc[l] ? acc[l] : m;
  return m;
}

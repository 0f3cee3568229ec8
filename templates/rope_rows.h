/* RoPE's rows of one token, shared by the rope and M-RoPE passes.
 *
 * rope_tables: cos and sin of the pairs [j0, j0 + m) into UB, c_a and c_b
 * from the row's two halves; pair j's row is at + s * apart in cos and
 * sin, s its section's position stream: 0 below b1, 1 below b2, 2 from b2
 * on (Qwen2-VL's mrope_section [t, h, w] over each half; a plain RoPE has
 * b1 = b2 = half). Forward s1 = s_a, s2 = s_b; transposed (the backward's)
 * s1 = -s_b, s2 = -s_a: negation is exact. */
static void rope_tables(const {{T}} *cos, const {{T}} *sin, ubg_i64 at, ubg_i64 apart, ubg_i64 b1, ubg_i64 b2,
                        ubg_i64 half, ubg_i64 j0, ubg_i64 m, int transposed, float *c_a, float *c_b, float *s1,
                        float *s2) {
  const ubg_i64 lo[3] = {0, b1, b2}, hi[3] = {b1, b2, half};
  ubg_i64 s, j;
  for (s = 0; s < 3; s++) {
    const ubg_i64 from = ubg_max(lo[s], j0), to = ubg_min(hi[s], j0 + m), row = at + s * apart;
    if (transposed)
      for (j = from; j < to; j++) {
        c_a[j - j0] = ubg_ld_{{dtype}}(cos, row + j), c_b[j - j0] = ubg_ld_{{dtype}}(cos, row + half + j);
        s1[j - j0] = -ubg_ld_{{dtype}}(sin, row + half + j), s2[j - j0] = -ubg_ld_{{dtype}}(sin, row + j);
      }
    else
      for (j = from; j < to; j++) {
        c_a[j - j0] = ubg_ld_{{dtype}}(cos, row + j), c_b[j - j0] = ubg_ld_{{dtype}}(cos, row + half + j);
        s1[j - j0] = ubg_ld_{{dtype}}(sin, row + j), s2[j - j0] = ubg_ld_{{dtype}}(sin, row + half + j);
      }
  }
}

/* y[at, at + n) = src[0, n) in {{dtype}} (store_f32); bf16 with 16-lane
 * vectors goes 32 lanes, a whole 64-byte line, at a time, so a streaming
 * store leaves its write-combining buffer full, not in halves (up to a
 * chunk holding an f32 subnormal: store_f32 does the rest) */
UBG_INLINE void rope_store({{T}} *y, ubg_i64 at, const float *UBG_RESTRICT src, ubg_i64 n, int stream) {
  ubg_i64 k = 0;
{{#is_bf16}}
#if defined(UBG_V16) && !defined(__TINYC__)
  for (; k + 32 <= n; k += 32) {
    unsigned sub = 0;
    const ubg_i16x32 h = ubg_v_to_bf16x32(ubg_v_ld(src + k), ubg_v_ld(src + k + 16), &sub);
    if (sub) break;
    ubg_v_st_x32(y, at + k, h, stream);
  }
#endif
{{/is_bf16}}
  store_f32(y, at + k, src + k, n - k, stream);
}

/* rope_rotate: for each head's row x = [x1, x2] ([d/2] each), pairs [j0, j0 + m):
 *   y1 = x1 c_a - x2 s1,  y2 = x2 c_b + x1 s2
 * head h's row of x at x0 + h * x_head, of y at y0 + h * d (x_head = d:
 * token-major; seq * d: x head-major, [B, heads, T, d]). y may be x where
 * the layouts agree: a chunk of both halves is in UB before any of it is
 * written back; stream: y bypasses the caches (the stage ends with
 * UBG_SFENCE). */
static void rope_rotate(const {{T}} *x, {{T}} *y, ubg_i64 x0, ubg_i64 x_head, ubg_i64 y0, ubg_i64 heads, ubg_i64 d,
                        ubg_i64 j0, ubg_i64 m, const float *UBG_RESTRICT c_a, const float *UBG_RESTRICT c_b,
                        const float *UBG_RESTRICT s1, const float *UBG_RESTRICT s2, float *UBG_RESTRICT x1,
                        float *UBG_RESTRICT x2, int stream) {
  const ubg_i64 half = d / 2;
  ubg_i64 h, j;
  for (h = 0; h < heads; h++) {
    const ubg_i64 in = x0 + h * x_head + j0, at = y0 + h * d + j0;
    load_f32(x1, x, in, m);
    load_f32(x2, x, in + half, m);
    for (j = 0; j < m; j++) {
      const float a = x1[j], b = x2[j];
      x1[j] = a * c_a[j] - b * s1[j], x2[j] = b * c_b[j] + a * s2[j];
    }
    rope_store(y, at, x1, m, stream);
    rope_store(y, at + half, x2, m, stream);
  }
}

/* RoPE's rotation of the rows of one token, shared by rope_fwd and
 * rope_bwd (which load s1 and s2 differently):
 *   for each head's row x = [x1, x2] ([d/2] each), pairs [j0, j0 + m):
 *   y1 = x1 c_a - x2 s1,  y2 = x2 c_b + x1 s2
 * x and y are [heads, d] from row0 on (y may be x: a chunk of both halves
 * is in UB before any of it is written back). */
static void rope_rotate(const {{T}} *x, {{T}} *y, ubg_i64 row0, ubg_i64 heads, ubg_i64 d, ubg_i64 j0, ubg_i64 m,
                        const float *c_a, const float *c_b, const float *s1, const float *s2, float *x1, float *x2) {
  const ubg_i64 half = d / 2;
  ubg_i64 h, j;
  for (h = 0; h < heads; h++) {
    const ubg_i64 at = (row0 + h) * d + j0;
    for (j = 0; j < m; j++) x1[j] = ubg_ld_{{dtype}}(x, at + j), x2[j] = ubg_ld_{{dtype}}(x, at + half + j);
    for (j = 0; j < m; j++) {
      ubg_st_{{dtype}}(y, at + j, x1[j] * c_a[j] - x2[j] * s1[j]);
      ubg_st_{{dtype}}(y, at + half + j, x2[j] * c_b[j] + x1[j] * s2[j]);
    }
  }
}

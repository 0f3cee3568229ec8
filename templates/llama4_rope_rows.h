/* Llama 4's rotation of the rows of one token, shared by llama4_rope_fwd
 * and llama4_rope_bwd (which load f_im with opposite signs):
 *   for each head's row x = d/2 interleaved pairs (x_re, x_im), pairs
 *   [j0, j0 + m): (x_re + i x_im)(f_re + i f_im), i.e.
 *   y_re = x_re f_re - x_im f_im,  y_im = x_re f_im + x_im f_re
 * x and y are [heads, d] from row0 on (y may be x: a chunk of pairs is in
 * UB before any of it is written back). */
static void llama4_rope_rotate(const {{T}} *x, {{T}} *y, ubg_i64 row0, ubg_i64 heads, ubg_i64 d, ubg_i64 j0,
                               ubg_i64 m, const float *f_re, const float *f_im, float *x_re, float *x_im) {
  ubg_i64 h, j;
  for (h = 0; h < heads; h++) {
    const ubg_i64 at = (row0 + h) * d + 2 * j0;
    for (j = 0; j < m; j++) x_re[j] = ubg_ld_{{dtype}}(x, at + 2 * j), x_im[j] = ubg_ld_{{dtype}}(x, at + 2 * j + 1);
    for (j = 0; j < m; j++) {
      ubg_st_{{dtype}}(y, at + 2 * j, x_re[j] * f_re[j] - x_im[j] * f_im[j]);
      ubg_st_{{dtype}}(y, at + 2 * j + 1, x_re[j] * f_im[j] + x_im[j] * f_re[j]);
    }
  }
}

/* Llama 4's rotation of the rows of one token, shared by llama4_rope_fwd
 * and llama4_rope_bwd.
 *
 * llama4_rope_freqs: the token's frequencies of pairs [j0, j0 + m), read
 * at element at of freqs, as tile_ops.h's mul_pairs takes them: fr[0, 2m)
 * = (f_re, f_re) and fi = (-f_im, f_im) per pair, or (f_im, -f_im) for
 * the conjugate (the backward's; negation is exact). */
static void llama4_rope_freqs(const float *freqs, ubg_i64 at, ubg_i64 m, int conj, float *UBG_RESTRICT fr,
                              float *UBG_RESTRICT fi) {
  ubg_i64 j;
  for (j = 0; j < m; j++) {
    const float re = freqs[at + 2 * j], im = conj ? -freqs[at + 2 * j + 1] : freqs[at + 2 * j + 1];
    fr[2 * j] = re, fr[2 * j + 1] = re;
    fi[2 * j] = -im, fi[2 * j + 1] = im;
  }
}

/* for each head's row x = d/2 interleaved pairs (x_re, x_im), pairs
 * [j0, j0 + m) times the frequencies in fr and fi:
 *   y_re = x_re f_re - x_im f_im,  y_im = x_im f_re + x_re f_im
 * x and y are [heads, d] from row0 on (y may be x); stream: y bypasses the
 * caches (the stage ends with UBG_SFENCE) */
static void llama4_rope_rotate(const {{T}} *x, {{T}} *y, ubg_i64 row0, ubg_i64 heads, ubg_i64 d, ubg_i64 j0,
                               ubg_i64 m, const float *UBG_RESTRICT fr, const float *UBG_RESTRICT fi, int stream) {
  ubg_i64 h;
  for (h = 0; h < heads; h++) mul_pairs(y, x, (row0 + h) * d + 2 * j0, fr, fi, 2 * m, stream);
}

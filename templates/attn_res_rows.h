{{! The rows of v of one token in UB, in the storage dtype, and the work
    over them: lane sums of several rows side by side (each lane of a row
    is one chain of dependent additions in d order, ubg_lanes_dot's; going
    through ROWS rows in the inner loop keeps that many chains in flight),
    and the alpha-weighted sum. Rows are copied as they are (half the bytes
    of f32 for f16/bf16) and converted in registers where used. The
    including template defines LD, ST, RND, DT, ESIZE; tcc gets the same
    operations as vector calls over staged chunks. }}
enum { ROWS = 4 }; /* rows at a time in load_sumsq_rows and score_rows */

/* rows + i * stride = the row src[base + i * plane, + n) as it is, and
 * lanes[i] += x * x over it, for i < nrows (a constant: registers); the
 * rows at next + i * plane (next >= 0: the program's next token) are
 * requested from memory meanwhile */
UBG_INLINE void load_sumsq_rows(void *rows, ubg_i64 stride, const void *src, ubg_i64 base, ubg_i64 plane, int nrows,
                                ubg_i64 n, float *UBG_RESTRICT lanes, ubg_i64 next) {
  ubg_u8 *dst = (ubg_u8 *)rows;
  const ubg_u8 *s8 = (const ubg_u8 *)src;
  int i;
#ifdef __TINYC__
  float buf[UBG_VCHUNK];
  ubg_i64 c;
  (void)next;
  for (i = 0; i < nrows; i++) {
    ubg_copy(dst + i * stride * ESIZE, s8 + (base + i * plane) * ESIZE, n * ESIZE, 0);
    for (c = 0; c < n; c += UBG_VCHUNK) {
      const ubg_i64 m = ubg_min(UBG_VCHUNK, n - c);
      ubg_vop_load(buf, src, base + i * plane + c, m, DT);
      ubg_vop_lanes_dot(lanes + i * UBG_LANES, buf, buf, m); /* c is a multiple of the lanes */
    }
  }
#else
  ubg_vf acc[ROWS];
  ubg_i64 c, j = 0;
  int l;
  for (i = 0; i < nrows; i++) acc[i] = ubg_vf_ld(lanes + i * UBG_LANES);
  for (c = 0; c < n; c += UBG_PF_CHUNK) {
    const ubg_i64 end = ubg_min(n, c + UBG_PF_CHUNK);
    if (next >= 0)
      for (i = 0; i < nrows; i++) ubg_prefetch(s8 + (next + i * plane + c) * ESIZE, (end - c) * ESIZE);
    for (j = c; j + 16 <= end; j += 16)
      for (i = 0; i < nrows; i++) {
        const ubg_i64 at = base + i * plane + j;
        const ubg_vf x = ld16(src, at);
        __builtin_memcpy(dst + (i * stride + j) * ESIZE, s8 + at * ESIZE, 16 * ESIZE);
        acc[i] += x * x;
      }
  }
  for (i = 0; i < nrows; i++) ubg_vf_st(lanes + i * UBG_LANES, acc[i]);
  for (i = 0; i < nrows; i++)
    for (l = 0; j + l < n; l++) {
      const ubg_i64 at = base + i * plane + j + l;
      const float x = LD(src, at);
      __builtin_memcpy(dst + (i * stride + j + l) * ESIZE, s8 + at * ESIZE, ESIZE);
      lanes[i * UBG_LANES + l] += x * x;
    }
#endif
}

/* lanes[i] += rnd(row_i * r[i]) * wqn over the lanes, for i < nrows */
UBG_INLINE void score_rows(float *UBG_RESTRICT lanes, const void *rows, ubg_i64 stride, int nrows,
                           const float *UBG_RESTRICT r, const float *UBG_RESTRICT wqn, ubg_i64 n) {
  int i;
#ifdef __TINYC__
  float buf[UBG_VCHUNK];
  ubg_i64 c;
  for (i = 0; i < nrows; i++)
    for (c = 0; c < n; c += UBG_VCHUNK) {
      const ubg_i64 m = ubg_min(UBG_VCHUNK, n - c);
      ubg_vop_load(buf, rows, i * stride + c, m, DT);
      ubg_vop_muls(buf, buf, r[i], m);
      ubg_vop_rnd(buf, buf, m, DT);
      ubg_vop_lanes_dot(lanes + i * UBG_LANES, buf, wqn + c, m);
    }
#else
  ubg_vf acc[ROWS], start[ROWS];
  ubg_i64 j = 0, k;
  int l;
  unsigned sub = 0;
  for (i = 0; i < nrows; i++) start[i] = acc[i] = ubg_vf_ld(lanes + i * UBG_LANES);
  for (; j + 16 <= n; j += 16) {
    const ubg_vf q = ubg_vf_ld(wqn + j);
    for (i = 0; i < nrows; i++) acc[i] += rnd16(ld16(rows, i * stride + j) * r[i], &sub) * q;
  }
  for (i = 0; i < nrows; i++) ubg_vf_st(lanes + i * UBG_LANES, acc[i]);
  if (__builtin_expect(sub != 0, 0)) /* an f32 subnormal product somewhere: the scalar code from the start */
    for (i = 0; i < nrows; i++) {
      ubg_vf_st(lanes + i * UBG_LANES, start[i]);
      for (k = 0; k < j; k += UBG_LANES)
        for (l = 0; l < UBG_LANES; l++) lanes[i * UBG_LANES + l] += RND(LD(rows, i * stride + k + l) * r[i]) * wqn[k + l];
    }
  for (i = 0; i < nrows; i++)
    for (l = 0; j + l < n; l++) lanes[i * UBG_LANES + l] += RND(LD(rows, i * stride + j + l) * r[i]) * wqn[j + l];
#endif
}

/* out[base, + n) = rnd(0 + a[0] row_0 + a[1] row_1 + ...), the sum in
 * block order; h[0, n) += a * row for the tiled code (h from zero gives
 * the same chain) */
#ifdef __TINYC__
static void out_rows(void *out, ubg_i64 base, const void *rows, ubg_i64 stride, const float *a, ubg_i64 nb, ubg_i64 n,
                     int stream) {
  float h[UBG_VCHUNK], t[UBG_VCHUNK];
  ubg_i64 c, i;
  for (c = 0; c < n; c += UBG_VCHUNK) {
    const ubg_i64 m = ubg_min(UBG_VCHUNK, n - c);
    ubg_vop_load(h, rows, c, m, DT);
    ubg_vop_muls(h, h, a[0], m);
    ubg_vop_adds(h, h, 0.0f, m);
    for (i = 1; i < nb; i++) {
      ubg_vop_load(t, rows, i * stride + c, m, DT);
      ubg_vop_axpby(h, a[i], t, 1.0f, h, m);
    }
    ubg_vop_store(out, base + c, h, m, DT, stream);
  }
}
static void axpy_row(float *h, float a, const void *row, ubg_i64 n) {
  float t[UBG_VCHUNK];
  ubg_i64 c;
  for (c = 0; c < n; c += UBG_VCHUNK) {
    const ubg_i64 m = ubg_min(UBG_VCHUNK, n - c);
    ubg_vop_load(t, row, c, m, DT);
    ubg_vop_axpby(h + c, a, t, 1.0f, h + c, m);
  }
}
#else
static void out_rows(void *out, ubg_i64 base, const void *rows, ubg_i64 stride, const float *a, ubg_i64 nb, ubg_i64 n,
                     int stream) {
  ubg_i64 d = 0, i;
  int u;
  /* four chunks at once: each output is a chain of dependent additions
   * over the blocks, four chains keep the adder busy */
  for (; d + 64 <= n; d += 64) {
    ubg_vf h[4];
    for (u = 0; u < 4; u++) h[u] = 0.0f + a[0] * ld16(rows, d + 16 * u);
    for (i = 1; i < nb; i++)
      for (u = 0; u < 4; u++) h[u] += a[i] * ld16(rows, i * stride + d + 16 * u);
    for (u = 0; u < 4; u++) store16(out, base + d + 16 * u, h[u], stream);
  }
  for (; d + 16 <= n; d += 16) {
    ubg_vf h = 0.0f + a[0] * ld16(rows, d);
    for (i = 1; i < nb; i++) h += a[i] * ld16(rows, i * stride + d);
    store16(out, base + d, h, stream);
  }
  for (; d < n; d++) {
    float x = 0.0f + a[0] * LD(rows, d);
    for (i = 1; i < nb; i++) x += a[i] * LD(rows, i * stride + d);
    ST(out, base + d, x);
  }
}
UBG_INLINE void axpy_row(float *UBG_RESTRICT h, float a, const void *row, ubg_i64 n) {
  ubg_i64 d;
  for (d = 0; d < n; d++) h[d] += a * LD(row, d);
}
#endif

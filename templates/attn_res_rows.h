{{! The rows of v of one token in UB, in the storage dtype, and the work
    over them: lane sums of several rows side by side (each lane of a row
    is one chain of dependent additions in d order, ubg_lanes_dot's; going
    through ROWS rows in the inner loop keeps that many chains in flight),
    and the alpha-weighted sum. Rows are copied as they are (half the bytes
    of f32 for f16/bf16) and converted in registers where used. The
    including template defines LD, ST, RND, DT, ESIZE; tcc gets the same
    operations as vector calls over staged chunks. Every multiply-add here
    is one fused operation (fmaf; gcc's vector FMA gives its bits): the
    kernels were bound by the vector units' operation count, not by the
    latency of the chains (A/B: forward 1.05-1.08x alone). }}
enum { ROWS = 4 }; /* rows at a time in load_dot_rows and score_rows */
/* a non-tiled variant's rows of v in UB lie a line further apart than
 * BLOCK_D: at 8 KiB apart (4096 bf16) every row's chunk d, and the line of
 * out or dv written from them, fall in one L1 set, more lines than its 8
 * ways (A/B, time padded / not: forward 0.88-0.93, backward 0.69-0.82) */
enum { ROW_STRIDE = BLOCK_D + 64 / ESIZE };

#ifndef __TINYC__
/* Paired rows (bf16 under UBG_V16, in the non-tiled variants, whose rows
 * start at column 0; a tiled one copies its tiles as they are): UB keeps
 * each 32-column chunk c of a row as 16 32-bit words, word l holding
 * column c + l in its low half and c + 16 + l in its high half. The chunk's two 16-lane vectors, in column order, are then a
 * shift and a mask of one load; a row as it is needs a widening shuffle
 * per 16 columns, and the shuffle unit was what limited the sums (one
 * permutation per chunk when the row comes in, none after). Columns from
 * n & ~31 on are kept as they are. The sums and their bits are unchanged:
 * lane l still adds column c + l, then c + 16 + l. */
#ifdef UBG_V16
enum { PAIRED = DT == 2 && {{^tiled}}1{{/tiled}}{{#tiled}}0{{/tiled}} };
#else
enum { PAIRED = 0 };
#endif
typedef int ubg_pair_i32x16 __attribute__((vector_size(64)));
typedef short ubg_pair_i16x32 __attribute__((vector_size(64)));
typedef unsigned short ubg_pair_u16x32 __attribute__((vector_size(64)));
/* 32 16-bit columns in order, paired */
UBG_INLINE ubg_pair_i32x16 pair_words(ubg_pair_i16x32 h) {
  const ubg_pair_i16x32 order = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return (ubg_pair_i32x16)__builtin_shuffle(h, order);
}
/* the 32 16-bit columns at p, paired */
UBG_INLINE ubg_pair_i32x16 pair32(const void *p) {
  ubg_pair_i16x32 h;
  __builtin_memcpy(&h, p, 64);
  return pair_words(h);
}
/* the paired chunk at element i of rows (i a multiple of 32) */
UBG_INLINE ubg_pair_i32x16 ld_pair(const void *rows, ubg_i64 i) {
  ubg_pair_i32x16 w;
  __builtin_memcpy(&w, (const ubg_u16 *)rows + i, 64);
  return w;
}
/* its first and second 16 columns as f32 (bf16 is the high half of f32) */
UBG_INLINE ubg_f32x16 pair_lo(ubg_pair_i32x16 w) { return (ubg_f32x16)(w << 16); }
UBG_INLINE ubg_f32x16 pair_hi(ubg_pair_i32x16 w) { return (ubg_f32x16)(w & (int)0xffff0000u); }
#ifdef UBG_V16
/* rnd(lo * r) and rnd(hi * r) (bf16 products, as rnd16_scaled gives them)
 * by one conversion of both and a re-pairing: a third of the vector
 * operations of rnd16_scaled's integer rounding, which was most of the
 * score's work (A/B: forward 1.03x on top of the FMAs). vcvtne2ps2bf16
 * flushes an f32 subnormal to zero, so the caller takes this only for a
 * row whose products are all normal or zero (products_normal). */
UBG_INLINE void rnd_pair_scaled(ubg_f32x16 lo, ubg_f32x16 hi, float r, ubg_f32x16 *rlo, ubg_f32x16 *rhi) {
  const ubg_pair_i32x16 w = pair_words((ubg_pair_i16x32)__builtin_ia32_cvtne2ps2bf16_v32hi(hi * r, lo * r));
  *rlo = pair_lo(w);
  *rhi = pair_hi(w);
}
/* least = min(least, |x| - 1) on each 16-bit lane of a paired chunk's
 * bf16 bits: a zero wraps to 0xffff, so the minimum, plus one, is the
 * least nonzero magnitude (0x10000: none) */
UBG_INLINE ubg_pair_u16x32 least_nonzero(ubg_pair_u16x32 least, ubg_pair_i32x16 w) {
  const ubg_pair_u16x32 m1 = (ubg_pair_u16x32)(w & 0x7fff7fff) - 1;
  return (ubg_pair_u16x32)__builtin_ia32_pminuw512_mask((ubg_pair_i16x32)least, (ubg_pair_i16x32)m1,
                                                        (ubg_pair_i16x32)least, 0xffffffffu);
}
#endif
/* Whether every product of r and a nonzero element of a row is normal,
 * least1 being the row's least nonzero |x| (bf16 bits) less one: rounding
 * is monotonic, so |fl(x r)| >= fl(least r) >= 2^-126. Then the
 * conversion's flush never applies, under any MXCSR mode (the elements
 * and products are normal; a subnormal least under DAZ reads as zero here
 * and fails the test). The per-row proof replaced a vfpclassps test of
 * every product (A/B in cache: forward 0.91x). */
UBG_INLINE int products_normal(unsigned least1, float r) {
  return least1 == 0xffff || ubg_bf16_to_f32((ubg_u16)(least1 + 1)) * r >= 0x1p-126f;
}
#endif

/* rows + i * stride = the row src[base + i * plane, + n) (paired if
 * PAIRED), for i < nrows (a constant: the accumulators live in
 * registers), and over the lanes la[i] = fma(pa, x, la[i]) (pa NULL:
 * x * x, the sum of squares) and, with pb, lb[i] = fma(pb, x, lb[i]). The rows at next + i * plane
 * (next >= 0: the program's next token) are requested from memory
 * meanwhile. With least (PAIRED), least[i] = the least nonzero |x| of the
 * paired columns of row i less one, as products_normal takes it. */
UBG_INLINE void load_dot_rows(void *rows, ubg_i64 stride, const void *src, ubg_i64 base, ubg_i64 plane, int nrows,
                              ubg_i64 n, const float *UBG_RESTRICT pa, float *UBG_RESTRICT la,
                              const float *UBG_RESTRICT pb, float *UBG_RESTRICT lb, ubg_i64 next, unsigned *least) {
  ubg_u8 *dst = (ubg_u8 *)rows;
  const ubg_u8 *s8 = (const ubg_u8 *)src;
  int i;
#ifdef __TINYC__
  float buf[UBG_VCHUNK];
  ubg_i64 c;
  (void)next, (void)least;
  for (i = 0; i < nrows; i++) {
    ubg_copy(dst + i * stride * ESIZE, s8 + (base + i * plane) * ESIZE, n * ESIZE, 0);
    for (c = 0; c < n; c += UBG_VCHUNK) { /* c is a multiple of the lanes */
      const ubg_i64 m = ubg_min(UBG_VCHUNK, n - c);
      ubg_vop_load(buf, src, base + i * plane + c, m, DT);
      ubg_vop_lanes_fma(la + i * UBG_LANES, pa ? pa + c : buf, buf, m);
      if (pb) ubg_vop_lanes_fma(lb + i * UBG_LANES, pb + c, buf, m);
    }
  }
#else
  ubg_f32x16 a[ROWS], b[ROWS];
#ifdef UBG_V16
  ubg_pair_u16x32 lnz[ROWS];
#endif
  ubg_i64 c, j = 0;
  int l;
  for (i = 0; i < nrows; i++) {
    a[i] = ubg_v_ld(la + i * UBG_LANES);
    if (pb) b[i] = ubg_v_ld(lb + i * UBG_LANES);
#ifdef UBG_V16
    lnz[i] = (ubg_pair_u16x32){0} - 1;
#endif
  }
  for (c = 0; c < n; c += UBG_PF_CHUNK) {
    const ubg_i64 end = ubg_min(n, c + UBG_PF_CHUNK);
    if (next >= 0) /* into the L2: the L1 holds this token's rows (A/B: backward 1.1x) */
      for (i = 0; i < nrows; i++) ubg_prefetch_l2(s8 + (next + i * plane + c) * ESIZE, (end - c) * ESIZE);
    j = c;
    if (PAIRED)
      for (; j + 32 <= end; j += 32)
        for (i = 0; i < nrows; i++) {
          const ubg_pair_i32x16 w = pair32(s8 + (base + i * plane + j) * ESIZE);
          const ubg_f32x16 x0 = pair_lo(w), x1 = pair_hi(w);
          __builtin_memcpy(dst + (i * stride + j) * ESIZE, &w, 64);
#ifdef UBG_V16
          if (least) lnz[i] = least_nonzero(lnz[i], w);
#endif
          a[i] = ubg_v_fma(pa ? ubg_v_ld(pa + j) : x0, x0, a[i]);
          a[i] = ubg_v_fma(pa ? ubg_v_ld(pa + j + 16) : x1, x1, a[i]);
          if (pb) {
            b[i] = ubg_v_fma(ubg_v_ld(pb + j), x0, b[i]);
            b[i] = ubg_v_fma(ubg_v_ld(pb + j + 16), x1, b[i]);
          }
        }
    for (; j + 16 <= end; j += 16)
      for (i = 0; i < nrows; i++) {
        const ubg_i64 at = base + i * plane + j;
        const ubg_f32x16 x = ld16(src, at);
        __builtin_memcpy(dst + (i * stride + j) * ESIZE, s8 + at * ESIZE, 16 * ESIZE);
        a[i] = ubg_v_fma(pa ? ubg_v_ld(pa + j) : x, x, a[i]);
        if (pb) b[i] = ubg_v_fma(ubg_v_ld(pb + j), x, b[i]);
      }
  }
  for (i = 0; i < nrows; i++) {
    ubg_v_st(la + i * UBG_LANES, a[i]);
    if (pb) ubg_v_st(lb + i * UBG_LANES, b[i]);
#ifdef UBG_V16
    if (least)
      for (least[i] = 0xffff, l = 0; l < 32; l++) least[i] = lnz[i][l] < least[i] ? lnz[i][l] : least[i];
#endif
  }
  for (i = 0; i < nrows; i++)
    for (l = 0; j + l < n; l++) {
      const ubg_i64 at = base + i * plane + j + l;
      const float x = LD(src, at);
      __builtin_memcpy(dst + (i * stride + j + l) * ESIZE, s8 + at * ESIZE, ESIZE);
      la[i * UBG_LANES + l] = fmaf(pa ? pa[j + l] : x, x, la[i * UBG_LANES + l]);
      if (pb) lb[i * UBG_LANES + l] = fmaf(pb[j + l], x, lb[i * UBG_LANES + l]);
    }
#endif
}

/* lanes[i] = fma(rnd(row_i * r[i]), wqn, lanes[i]) over the lanes, for i < nrows; the
 * rows at src[next + i * plane] (next >= 0: the same rows of the program's
 * next token) are requested from memory meanwhile, a line at a time: this
 * is the arithmetic-heavy phase, so the memory system works while it runs.
 * least: load_dot_rows's, for PAIRED rows. */
UBG_INLINE void score_rows(float *UBG_RESTRICT lanes, const void *rows, ubg_i64 stride, int nrows,
                           const float *UBG_RESTRICT r, const float *UBG_RESTRICT wqn, ubg_i64 n, const void *src,
                           ubg_i64 next, ubg_i64 plane, const unsigned *least) {
  int i;
#ifdef __TINYC__
  float buf[UBG_VCHUNK];
  ubg_i64 c;
  (void)src, (void)next, (void)plane, (void)least;
  for (i = 0; i < nrows; i++)
    for (c = 0; c < n; c += UBG_VCHUNK) {
      const ubg_i64 m = ubg_min(UBG_VCHUNK, n - c);
      ubg_vop_load(buf, rows, i * stride + c, m, DT);
      ubg_vop_muls(buf, buf, r[i], m);
      ubg_vop_rnd(buf, buf, m, DT);
      ubg_vop_lanes_fma(lanes + i * UBG_LANES, buf, wqn + c, m);
    }
#else
  ubg_f32x16 acc[ROWS];
  ubg_i64 j = 0;
  int l;
#ifdef UBG_V16
  int exact[ROWS]; /* the row has a subnormal product: rnd16_scaled */
  for (i = 0; i < nrows; i++) exact[i] = PAIRED && !products_normal(least[i], r[i]);
#endif
  for (i = 0; i < nrows; i++) acc[i] = ubg_v_ld(lanes + i * UBG_LANES);
  if (PAIRED)
    for (; j + 32 <= n; j += 32) { /* 64 bytes: one line of each next row */
      const ubg_f32x16 q0 = ubg_v_ld(wqn + j), q1 = ubg_v_ld(wqn + j + 16);
      if (next >= 0)
        for (i = 0; i < nrows; i++) UBG_PREFETCH_L2((const ubg_u8 *)src + (next + i * plane + j) * ESIZE);
      for (i = 0; i < nrows; i++) {
        const ubg_pair_i32x16 w = ld_pair(rows, i * stride + j);
        ubg_f32x16 y0, y1;
#ifdef UBG_V16
        if (__builtin_expect(!exact[i], 1))
          rnd_pair_scaled(pair_lo(w), pair_hi(w), r[i], &y0, &y1);
        else
#endif
        {
          y0 = rnd16_scaled(pair_lo(w), r[i]);
          y1 = rnd16_scaled(pair_hi(w), r[i]);
        }
        acc[i] = ubg_v_fma(y0, q0, acc[i]);
        acc[i] = ubg_v_fma(y1, q1, acc[i]);
      }
    }
  for (; j + 16 <= n; j += 16) {
    const ubg_f32x16 q = ubg_v_ld(wqn + j);
    if (next >= 0 && ((j * ESIZE) & 63) == 0)
      for (i = 0; i < nrows; i++) UBG_PREFETCH_L2((const ubg_u8 *)src + (next + i * plane + j) * ESIZE);
    for (i = 0; i < nrows; i++) acc[i] = ubg_v_fma(rnd16_scaled(ld16(rows, i * stride + j), r[i]), q, acc[i]);
  }
  for (i = 0; i < nrows; i++) ubg_v_st(lanes + i * UBG_LANES, acc[i]);
  for (i = 0; i < nrows; i++)
    for (l = 0; j + l < n; l++)
      lanes[i * UBG_LANES + l] = fmaf(RND(LD(rows, i * stride + j + l) * r[i]), wqn[j + l], lanes[i * UBG_LANES + l]);
#endif
}

/* out[base, + n) = rnd(h), h = fma(a[i], row_i, h) for i = 0, 1, ... from
 * h = 0 (the first step is 0 + a[0] row_0); h[0, n) = fma(a, row, h) for
 * the tiled code (h from zero gives the same chain) */
#ifdef __TINYC__
static void out_rows(void *out, ubg_i64 base, const void *rows, ubg_i64 stride, const float *a, ubg_i64 nb, ubg_i64 n,
                     int stream) {
  float h[UBG_VCHUNK], t[UBG_VCHUNK];
  ubg_i64 c, i;
  for (c = 0; c < n; c += UBG_VCHUNK) {
    const ubg_i64 m = ubg_min(UBG_VCHUNK, n - c);
    ubg_vop_fill(h, 0.0f, m);
    for (i = 0; i < nb; i++) {
      ubg_vop_load(t, rows, i * stride + c, m, DT);
      ubg_vop_fmas(h, t, a[i], h, m);
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
    ubg_vop_fmas(h + c, t, a, h + c, m);
  }
}
#else
/* out[at, + 32 * npairs) from the paired chunks at column d (npairs 1 or 2,
 * a constant where inlined: h stays in registers) */
UBG_INLINE void out_pairs(void *out, ubg_i64 at, const void *rows, ubg_i64 stride, ubg_i64 d, const float *a, ubg_i64 nb,
                          int npairs, int stream) {
  ubg_f32x16 h[4];
  ubg_i64 i;
  int u;
  for (u = 0; u < 4; u++) h[u] = (ubg_f32x16){0};
  for (i = 0; i < nb; i++)
    for (u = 0; u < npairs; u++) {
      const ubg_pair_i32x16 w = ld_pair(rows, i * stride + d + 32 * u);
      h[2 * u] = ubg_v_fma(ubg_v_splat(a[i]), pair_lo(w), h[2 * u]);
      h[2 * u + 1] = ubg_v_fma(ubg_v_splat(a[i]), pair_hi(w), h[2 * u + 1]);
    }
  for (u = 0; u < npairs; u++) store32(out, at + 32 * u, h[2 * u], h[2 * u + 1], stream);
}
static void out_rows(void *out, ubg_i64 base, const void *rows, ubg_i64 stride, const float *a, ubg_i64 nb, ubg_i64 n,
                     int stream) {
  ubg_i64 d = 0, i;
  int u;
  /* four chunks at once: each output is a chain of dependent FMAs over
   * the blocks, four chains keep the unit busy */
  if (PAIRED) {
    for (; d + 64 <= n; d += 64)
      out_pairs(out, base + d, rows, stride, d, a, nb, 2, stream);
    if (d + 32 <= n) {
      out_pairs(out, base + d, rows, stride, d, a, nb, 1, stream);
      d += 32;
    }
  }
  for (; d + 64 <= n; d += 64) {
    ubg_f32x16 h[4];
    for (u = 0; u < 4; u++) h[u] = (ubg_f32x16){0};
    for (i = 0; i < nb; i++)
      for (u = 0; u < 4; u++) h[u] = ubg_v_fma(ubg_v_splat(a[i]), ld16(rows, i * stride + d + 16 * u), h[u]);
    store32(out, base + d, h[0], h[1], stream);
    store32(out, base + d + 32, h[2], h[3], stream);
  }
  for (; d + 16 <= n; d += 16) {
    ubg_f32x16 h = {0};
    for (i = 0; i < nb; i++) h = ubg_v_fma(ubg_v_splat(a[i]), ld16(rows, i * stride + d), h);
    store16(out, base + d, h, stream);
  }
  for (; d < n; d++) {
    float x = 0.0f;
    for (i = 0; i < nb; i++) x = fmaf(a[i], LD(rows, i * stride + d), x);
    ST(out, base + d, x);
  }
}
UBG_INLINE void axpy_row(float *UBG_RESTRICT h, float a, const void *row, ubg_i64 n) {
  ubg_i64 d;
  for (d = 0; d < n; d++) h[d] = fmaf(a, LD(row, d), h[d]);
}
#endif

#ifndef __TINYC__
/* fma(nc, x, fma(a, dh, rds * wqn)) on 16 lanes: dv before its rounding */
UBG_INLINE ubg_f32x16 dv_step(float a, float rds, float nc, ubg_f32x16 dh, ubg_f32x16 wqn, ubg_f32x16 x) {
  return ubg_v_fma(ubg_v_splat(nc), x, ubg_v_fma(ubg_v_splat(a), dh, rds * wqn));
}
#endif

/* The backward's elementwise step for one block over n columns of a row x
 * (storage dtype), f32 inside (nc = -c, negated once per block):
 *   dv  = rnd(fma(nc, x, fma(a, dh, rds * wqn)))   at dv[at, + n)
 *   S   = fma(x, rds, S)                           (dw's sum, weights left out) */
UBG_INLINE void dv_row(void *dv, ubg_i64 at, const void *x, const float *UBG_RESTRICT dh, const float *UBG_RESTRICT wqn,
                       float a, float rds, float nc, float *UBG_RESTRICT S, ubg_i64 n, int stream) {
#ifdef __TINYC__
  float xs[UBG_VCHUNK], t1[UBG_VCHUNK];
  ubg_i64 o;
  for (o = 0; o < n; o += UBG_VCHUNK) {
    const ubg_i64 k = ubg_min(UBG_VCHUNK, n - o);
    ubg_vop_load(xs, x, o, k, DT);
    ubg_vop_muls(t1, wqn + o, rds, k);    /* rds * wqn */
    ubg_vop_fmas(t1, dh + o, a, t1, k);   /* fma(a, dh, ...) */
    ubg_vop_fmas(t1, xs, nc, t1, k);      /* fma(nc, x, ...) */
    ubg_vop_store(dv, at + o, t1, k, DT, stream);
    ubg_vop_fmas(S + o, xs, rds, S + o, k); /* S = fma(x, rds, S) */
  }
#else
  ubg_i64 d = 0;
  for (; d + 16 <= n; d += 16) {
    const ubg_f32x16 xv = ld16(x, d);
    store16(dv, at + d, dv_step(a, rds, nc, ubg_v_ld(dh + d), ubg_v_ld(wqn + d), xv), stream);
    ubg_v_st(S + d, ubg_v_fma(xv, ubg_v_splat(rds), ubg_v_ld(S + d)));
  }
  for (; d < n; d++) {
    const float xv = LD(x, d);
    ST(dv, at + d, fmaf(nc, xv, fmaf(a, dh[d], rds * wqn[d])));
    S[d] = fmaf(xv, rds, S[d]);
  }
#endif
}

#ifndef __TINYC__
/* dv_row for every block of a token (dv not streamed: measured, the
 * backward runs 8-20% faster with ordinary stores, which the caches absorb
 * while the rows of v stream in), 32 or 16 columns at a time with S in
 * registers across the blocks (the same operations, block order) */
static void dv_rows(void *dv, ubg_i64 at, ubg_i64 plane, const void *rows, ubg_i64 stride, const float *UBG_RESTRICT dh,
                    const float *UBG_RESTRICT wqn, const float *a, const float *rds, const float *nc, ubg_i64 nb,
                    float *UBG_RESTRICT S, ubg_i64 n) {
  ubg_i64 d = 0, i;
  int u;
  if (PAIRED)
    for (; d + 32 <= n; d += 32) { /* a paired chunk: two 16-column halves */
      ubg_f32x16 h[2], qw[2], sum[2];
      for (u = 0; u < 2; u++) {
        h[u] = ubg_v_ld(dh + d + 16 * u), qw[u] = ubg_v_ld(wqn + d + 16 * u), sum[u] = ubg_v_ld(S + d + 16 * u);
      }
      for (i = 0; i < nb; i++) {
        const ubg_pair_i32x16 p = ld_pair(rows, i * stride + d);
        ubg_f32x16 y[2];
#pragma GCC unroll 2
        for (u = 0; u < 2; u++) { /* unrolled, or h, qw, ... live in memory */
          const ubg_f32x16 xv = u ? pair_hi(p) : pair_lo(p);
          y[u] = dv_step(a[i], rds[i], nc[i], h[u], qw[u], xv);
          sum[u] = ubg_v_fma(xv, ubg_v_splat(rds[i]), sum[u]);
        }
        store32(dv, at + i * plane + d, y[0], y[1], 0);
      }
      for (u = 0; u < 2; u++) ubg_v_st(S + d + 16 * u, sum[u]);
    }
  for (; d + 16 <= n; d += 16) {
    const ubg_f32x16 h = ubg_v_ld(dh + d), qw = ubg_v_ld(wqn + d);
    ubg_f32x16 sum = ubg_v_ld(S + d);
    for (i = 0; i < nb; i++) {
      const ubg_f32x16 xv = ld16(rows, i * stride + d);
      store16(dv, at + i * plane + d, dv_step(a[i], rds[i], nc[i], h, qw, xv), 0);
      sum = ubg_v_fma(xv, ubg_v_splat(rds[i]), sum);
    }
    ubg_v_st(S + d, sum);
  }
  if (d < n)
    for (i = 0; i < nb; i++)
      dv_row(dv, at + i * plane + d, (const ubg_u8 *)rows + (i * stride + d) * ESIZE, dh + d, wqn + d, a[i], rds[i], nc[i],
             S + d, n - d, 0);
}
#endif

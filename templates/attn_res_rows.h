{{! The rows of v of one token, in the storage dtype (half the bytes of
    f32 for f16/bf16, converted in registers where used; read in place,
    or paired in UB where STAGED), and the work over them that both passes
    share: lane sums of several rows side by side (each lane of a row is
    one chain of dependent additions in d order, ubg_lanes_dot's; going
    through ROWS rows in the inner loop keeps that many chains in flight),
    and the backward's dv. The forward's scores and weighted sum are in
    attn_res_fwd_rows.h. The including template defines LD, ST, RND, DT,
    ESIZE; tcc gets the same operations as vector calls over staged
    chunks. Every multiply-add here is one fused operation (fmaf; gcc's
    vector FMA gives its bits): the kernels were bound by the vector
    units' operation count, not by the latency of the chains. }}
enum { ROWS = 4 }; /* rows at a time in the lane sums */
/* the rows a non-tiled variant stages in UB lie a line further apart than
 * BLOCK_D: at 8 KiB apart (4096 bf16) every row's chunk d, and the line of
 * dv written from them, fall in one L1 set, more lines than its 8 ways */
enum { ROW_STRIDE = BLOCK_D + 64 / ESIZE };

#ifndef __TINYC__
/* Paired rows (the backward's, bf16 under UBG_V16, in the non-tiled
 * variants, whose rows start at column 0; a tiled one copies its tiles as
 * they are; the forward keeps its rows as they come): UB keeps
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
/* 32 16-bit columns in order, paired */
UBG_INLINE ubg_pair_i32x16 pair_words(ubg_pair_i16x32 h) {
  const ubg_index_x32 interleave = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                    8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return (ubg_pair_i32x16)ubg_v_permute_words(h, interleave);
}
/* the 32 16-bit columns at p, paired */
UBG_INLINE ubg_pair_i32x16 pair32(const void *p) {
  ubg_pair_i16x32 h;
  memcpy(&h, p, 64);
  return pair_words(h);
}
/* the 32 16-bit elements at element i of rows, as 16 words (a paired
 * chunk, or a chunk as it is) */
UBG_INLINE ubg_pair_i32x16 ld_pair(const void *rows, ubg_i64 i) {
  ubg_pair_i32x16 w;
  memcpy(&w, (const ubg_u16 *)rows + i, 64);
  return w;
}
/* its first and second 16 columns as f32 (bf16 is the high half of f32) */
UBG_INLINE ubg_f32x16 pair_lo(ubg_pair_i32x16 w) { return (ubg_f32x16)(w << 16); }
UBG_INLINE ubg_f32x16 pair_hi(ubg_pair_i32x16 w) { return (ubg_f32x16)(w & (int)0xffff0000u); }
#endif
/* whether the backward copies its rows into UB: only to pair them; rows
 * as they are are read in place (staging them only costs time) */
#ifdef __TINYC__
enum { STAGED = 0 };
#else
enum { STAGED = PAIRED };
#endif

/* rows + i * stride = the row src[base + i * plane, + n), paired, if
 * STAGED (else rows is unused), for i < nrows (a constant: the
 * accumulators live in registers), and over the lanes la[i] = fma(pa, x, la[i]) (pa NULL:
 * x * x, the sum of squares) and, with pb, lb[i] = fma(pb, x, lb[i]). The rows at next + i * plane
 * (next >= 0: the program's next token) are requested from memory
 * meanwhile. */
UBG_INLINE void load_dot_rows(void *rows, ubg_i64 stride, const void *src, ubg_i64 base, ubg_i64 plane, int nrows,
                              ubg_i64 n, const float *UBG_RESTRICT pa, float *UBG_RESTRICT la,
                              const float *UBG_RESTRICT pb, float *UBG_RESTRICT lb, ubg_i64 next) {
  ubg_u8 *dst = (ubg_u8 *)rows;
  const ubg_u8 *s8 = (const ubg_u8 *)src;
  int i;
#ifdef __TINYC__
  float buf[UBG_VCHUNK];
  ubg_i64 c;
  (void)next;
  for (i = 0; i < nrows; i++) {
    if (STAGED) ubg_copy(dst + i * stride * ESIZE, s8 + (base + i * plane) * ESIZE, n * ESIZE, 0);
    for (c = 0; c < n; c += UBG_VCHUNK) { /* c is a multiple of the lanes */
      const ubg_i64 m = ubg_min(UBG_VCHUNK, n - c);
      ubg_vop_load(buf, src, base + i * plane + c, m, DT);
      ubg_vop_lanes_fma(la + i * UBG_LANES, pa ? pa + c : buf, buf, m);
      if (pb) ubg_vop_lanes_fma(lb + i * UBG_LANES, pb + c, buf, m);
    }
  }
#else
  ubg_f32x16 a[ROWS], b[ROWS];
  ubg_i64 c, j = 0;
  int l;
  for (i = 0; i < nrows; i++) {
    a[i] = ubg_v_ld(la + i * UBG_LANES);
    if (pb) b[i] = ubg_v_ld(lb + i * UBG_LANES);
  }
  for (c = 0; c < n; c += UBG_PF_CHUNK) {
    const ubg_i64 end = ubg_min(n, c + UBG_PF_CHUNK);
    if (next >= 0) /* into the L2: the L1 holds this token's rows */
      for (i = 0; i < nrows; i++) ubg_prefetch_l2(s8 + (next + i * plane + c) * ESIZE, (end - c) * ESIZE);
    j = c;
    if (PAIRED)
      for (; j + 32 <= end; j += 32)
        for (i = 0; i < nrows; i++) {
          const ubg_pair_i32x16 w = pair32(s8 + (base + i * plane + j) * ESIZE);
          const ubg_f32x16 x0 = pair_lo(w), x1 = pair_hi(w);
          memcpy(dst + (i * stride + j) * ESIZE, &w, 64);
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
        if (STAGED) memcpy(dst + (i * stride + j) * ESIZE, s8 + at * ESIZE, 16 * ESIZE);
        a[i] = ubg_v_fma(pa ? ubg_v_ld(pa + j) : x, x, a[i]);
        if (pb) b[i] = ubg_v_fma(ubg_v_ld(pb + j), x, b[i]);
      }
  }
  for (i = 0; i < nrows; i++) {
    ubg_v_st(la + i * UBG_LANES, a[i]);
    if (pb) ubg_v_st(lb + i * UBG_LANES, b[i]);
  }
  for (i = 0; i < nrows; i++)
    for (l = 0; j + l < n; l++) {
      const ubg_i64 at = base + i * plane + j + l;
      const float x = LD(src, at);
      if (STAGED) memcpy(dst + (i * stride + j + l) * ESIZE, s8 + at * ESIZE, ESIZE);
      la[i * UBG_LANES + l] = fmaf(pa ? pa[j + l] : x, x, la[i * UBG_LANES + l]);
      if (pb) lb[i * UBG_LANES + l] = fmaf(pb[j + l], x, lb[i * UBG_LANES + l]);
    }
#endif
}

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

/* dv_row for every block of a token, 32 or 16 columns at a time with S in
 * registers across the blocks (the same operations, block order); under
 * tcc, dv_row block by block. dv is streamed where the spec's rule says
 * (stream: dv at least 8 MiB): an ordinary store first reads the line it
 * fills, a third more DRAM traffic for a token. */
static void dv_rows(void *dv, ubg_i64 at, ubg_i64 plane, const void *rows, ubg_i64 stride, const float *UBG_RESTRICT dh,
                    const float *UBG_RESTRICT wqn, const float *a, const float *rds, const float *nc, ubg_i64 nb,
                    float *UBG_RESTRICT S, ubg_i64 n, int stream) {
  ubg_i64 d = 0, i;
#ifdef __TINYC__
  for (i = 0; i < nb; i++)
    dv_row(dv, at + i * plane, (const ubg_u8 *)rows + i * stride * ESIZE, dh, wqn, a[i], rds[i], nc[i], S, n, stream);
  (void)d;
#else
  int u;
  if (ESIZE == 2) /* 32 columns: a row's line of dv written at once (a streamed line leaves its buffer whole) */
    for (; d + 32 <= n; d += 32) {
      ubg_f32x16 h[2], qw[2], sum[2];
      for (u = 0; u < 2; u++) {
        h[u] = ubg_v_ld(dh + d + 16 * u), qw[u] = ubg_v_ld(wqn + d + 16 * u), sum[u] = ubg_v_ld(S + d + 16 * u);
      }
      for (i = 0; i < nb; i++) {
        ubg_f32x16 x[2], y[2];
        if (PAIRED) { /* a paired chunk: its two 16-column halves */
          const ubg_pair_i32x16 p = ld_pair(rows, i * stride + d);
          x[0] = pair_lo(p), x[1] = pair_hi(p);
        } else {
          x[0] = ld16(rows, i * stride + d), x[1] = ld16(rows, i * stride + d + 16);
        }
#pragma GCC unroll 2
        for (u = 0; u < 2; u++) { /* unrolled, or h, qw, ... live in memory */
          y[u] = dv_step(a[i], rds[i], nc[i], h[u], qw[u], x[u]);
          sum[u] = ubg_v_fma(x[u], ubg_v_splat(rds[i]), sum[u]);
        }
        store32(dv, at + i * plane + d, y[0], y[1], stream);
      }
      for (u = 0; u < 2; u++) ubg_v_st(S + d + 16 * u, sum[u]);
    }
  for (; d + 16 <= n; d += 16) {
    const ubg_f32x16 h = ubg_v_ld(dh + d), qw = ubg_v_ld(wqn + d);
    ubg_f32x16 sum = ubg_v_ld(S + d);
    for (i = 0; i < nb; i++) {
      const ubg_f32x16 xv = ld16(rows, i * stride + d);
      store16(dv, at + i * plane + d, dv_step(a[i], rds[i], nc[i], h, qw, xv), stream);
      sum = ubg_v_fma(xv, ubg_v_splat(rds[i]), sum);
    }
    ubg_v_st(S + d, sum);
  }
  if (d < n)
    for (i = 0; i < nb; i++)
      dv_row(dv, at + i * plane + d, (const ubg_u8 *)rows + (i * stride + d) * ESIZE, dh + d, wqn + d, a[i], rds[i], nc[i],
             S + d, n - d, stream);
#endif
}

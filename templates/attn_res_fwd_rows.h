{{! The AttnRes forward's work over the rows of a token: the sums of
    squares while the rows come in, the scores, the alpha-weighted sum.
    Included by attn_res_fwd.c.tmpl after attn_res_rows.h.

    bf16 rows are kept as they come (no pairing shuffle), and their two
    lane sums take the columns of each 32-column chunk in the order the
    vector code meets them, in every variant and backend (docs/design.md: a
    fixed lane per column, whatever the block sizes). A 64-byte load of
    bf16 gives, as f32, the even columns (a shift) and the odd ones (a
    mask); vdpbf16ps of a chunk with itself adds, in lane k, the square of
    column 2k + 1 and then that of 2k; the scores' conversion
    vcvtne2ps2bf16 of the even and odd products returns columns 4m,
    4m + 1 (shift) and 4m + 2, 4m + 3 (mask). So, with d' = d mod 32:
      sum of squares: lane ss_lane(d')    = d' / 2            (2k + 1, then 2k)
      score:          lane score_lane(d') = d' / 4 + 8 (d' & 1)   (4m, then 4m + 2)
    each lane adding its columns in that order, chunk after chunk. A
    chunk lying wholly in the columns at hand and starting at a multiple
    of 32 goes through the vectors (tcc: permuted into that order, then
    ubg_vop_lanes_fma); any other column alone, to its lane, in the same
    order (a pair's odd column first: tiles start at multiples of 16, so a
    pair never straddles two), the same chain, so the same bits. w_query * w_norm is kept permuted the same
    way in whole chunks (load_wqn), which saves the two permutations per
    row chunk that pairing would cost. f32 and f16 keep lane d % 16
    (load_dot_rows). }}
enum { NAT = DT == 2 }; /* bf16: the lane maps above */

/* the lane of column d (global) in the sum of squares and in the score */
UBG_INLINE int ss_lane(ubg_i64 d) { return (int)(d & 31) >> 1; }
UBG_INLINE int score_lane(ubg_i64 d) { return ((int)(d & 31) >> 2) + 8 * (int)(d & 1); }
/* the column of position k of a whole chunk in the vectors' order */
UBG_INLINE int ss_column(int k) { return 2 * (k & 15) + 1 - (k >> 4); }
UBG_INLINE int score_column(int k) { return 4 * (k & 7) + (k >> 3); }
/* whether columns [d, d + 32) of [c0, c0 + n) (d relative) are a whole
 * chunk: only where c0 is a multiple of 32 (a tile of BLOCK_D = 16 has
 * none), the vector code's rule, which load_wqn's layout must follow */
UBG_INLINE int whole_chunk(ubg_i64 c0, ubg_i64 d, ubg_i64 n) { return ((c0 | d) & 31) == 0 && d + 32 <= n; }

#ifndef __TINYC__
#ifdef UBG_V16
/* least = min(least, |x| - 1) on each 16-bit lane of a chunk's bf16 bits:
 * a zero wraps to 0xffff, so the minimum, plus one, is the least nonzero
 * magnitude (0x10000: none) */
UBG_INLINE ubg_u16x32 least_nonzero(ubg_u16x32 least, ubg_pair_i32x16 w) {
  const ubg_u16x32 m1 = (ubg_u16x32)(w & 0x7fff7fff) - 1;
  return ubg_v_min_u16x32(least, m1);
}
#endif
/* Whether every product of r and a nonzero element of a row is normal,
 * least1 being the row's least nonzero |x| (bf16 bits) less one: rounding
 * is monotonic, so |fl(x r)| >= fl(least r) >= 2^-126. Then
 * vcvtne2ps2bf16, which flushes an f32 subnormal to zero, rounds every
 * product exactly, under any MXCSR mode (the elements and products are
 * normal; a subnormal least under DAZ reads as zero here and fails the
 * test). A proof per row is cheaper than a vfpclassps test of every
 * product. */
UBG_INLINE int products_normal(unsigned least1, float r) {
  return least1 == 0xffff || ubg_bf16_to_f32((ubg_u16)(least1 + 1)) * r >= 0x1p-126f;
}
/* Whether vdpbf16ps, adding a chunk's squares to lanes a0, gives the bits
 * of ss_chunk. It reads subnormal inputs (bf16 and f32) as zero and
 * flushes subnormal results, whatever MXCSR says, and otherwise adds a
 * lane's two products, exact for bf16, as ss_chunk does: odd column
 * first, each addition rounded to nearest even (Intel's definition;
 * checked against fmaf on this Zen 4, 20 million random cases, and 32
 * million with Inf and NaN, payloads included). With every nonzero |x| >=
 * 2^-63 (least1, the least less one, >= 0x1fff) a product is 0 or >=
 * 2^-126, and with a0 free of subnormals no step meets one, so MXCSR
 * cannot matter either. */
#ifdef UBG_V16
UBG_INLINE int ss_dot_exact(unsigned least1, ubg_f32x16 a0) {
  return least1 >= 0x1fff && ubg_v_subnormal_lanes(a0) == 0;
}
#endif
/* a + the squares of a bf16 chunk's 32 columns: lane k adds column 2k + 1,
 * then 2k, one fused multiply-add each */
UBG_INLINE ubg_f32x16 ss_chunk(ubg_f32x16 a, ubg_pair_i32x16 w) {
  const ubg_f32x16 even = pair_lo(w), odd = pair_hi(w);
  return ubg_v_fma(even, even, ubg_v_fma(odd, odd, a));
}
#endif

/* wqs[0, n) = w_query * w_norm over columns [c0, c0 + n) in f32, whole
 * chunks in score order (score_column), the rest in column order */
static void load_wqn(float *UBG_RESTRICT wqs, const void *wq, const void *wn, ubg_i64 c0, ubg_i64 n) {
  float chunk[32];
  ubg_i64 d;
  int k;
#ifdef __TINYC__
  float t[UBG_VCHUNK];
  for (d = 0; d < n; d += UBG_VCHUNK) {
    const ubg_i64 m = ubg_min(UBG_VCHUNK, n - d);
    ubg_vop_load(wqs + d, wq, c0 + d, m, DT);
    ubg_vop_load(t, wn, c0 + d, m, DT);
    ubg_vop_mul(wqs + d, wqs + d, t, m);
  }
#else
  for (d = 0; d < n; d++) wqs[d] = LD(wq, c0 + d) * LD(wn, c0 + d);
#endif
  if (NAT)
    for (d = 0; d < n; d++)
      if (whole_chunk(c0, d, n)) {
        for (k = 0; k < 32; k++) chunk[k] = wqs[d + score_column(k)];
        for (k = 0; k < 32; k++) wqs[d + k] = chunk[k];
        d += 31;
      }
}

#ifdef __TINYC__
/* lanes over columns [d0, d0 + m) of x (column order), the products
 * x * x (score 0) or x * wqs (score 1) added to their lanes */
static void nat_lanes_fma(float *lanes, const float *x, const float *wqs, ubg_i64 m, ubg_i64 c0, ubg_i64 d0, ubg_i64 n,
                          int score) {
  float px[32];
  ubg_i64 k;
  int q;
  for (k = 0; k < m; k++)
    if (whole_chunk(c0, d0 + k, n) && k + 32 <= m) {
      for (q = 0; q < 32; q++) px[q] = x[k + (score ? score_column(q) : ss_column(q))];
      ubg_vop_lanes_fma(lanes, px, score ? wqs + k : px, 32);
      k += 31;
    } else { /* a pair's odd column first in the sum of squares */
      const ubg_i64 q = score || (k ^ 1) >= m ? k : k ^ 1;
      const int l = score ? score_lane(c0 + d0 + q) : ss_lane(c0 + d0 + q);
      lanes[l] = fmaf(x[q], score ? wqs[q] : x[q], lanes[l]);
    }
}
#endif

/* la[i] += the squares of the row src[base + i * plane, + n) (columns
 * [c0, c0 + n) of it) over the lanes, for i < nrows; the rows at next +
 * i * plane are requested meanwhile (next >= 0). The rows stay where they
 * are: the forward reads them in place (attn_res_fwd.c.tmpl says why).
 * bf16 under UBG_V16: least[i] = min(least[i], the least nonzero |x| of
 * its whole chunks less one), for products_normal, and the squares of
 * whole chunks by vdpbf16ps (one instruction for two widenings and two
 * FMAs), redone by ss_chunk for a row where
 * ss_dot_exact fails. gcc without UBG_V16 (AVX2, or valgrind's build)
 * runs ss_chunk on gcc vectors. */
UBG_INLINE void load_ss_rows(const void *src, ubg_i64 base, ubg_i64 plane, int nrows, ubg_i64 n, ubg_i64 c0,
                             float *UBG_RESTRICT la, ubg_i64 next, unsigned *least) {
  const ubg_u8 *s8 = (const ubg_u8 *)src;
  ubg_i64 j = 0;
  int i;
  if (!NAT) {
    load_dot_rows(0, 0, src, base, plane, nrows, n, 0, la, 0, 0, next);
    return;
  }
#ifdef __TINYC__
  {
    float buf[UBG_VCHUNK];
    (void)least, (void)next;
    (void)s8;
    for (i = 0; i < nrows; i++) {
      for (j = 0; j < n; j += UBG_VCHUNK) { /* a multiple of 32: whole chunks stay whole */
        const ubg_i64 m = ubg_min(UBG_VCHUNK, n - j);
        ubg_vop_load(buf, src, base + i * plane + j, m, DT);
        nat_lanes_fma(la + i * UBG_LANES, buf, 0, m, c0, j, n, 0);
      }
    }
  }
#else
  (void)least; /* UBG_V16's alone */
  if ((c0 & 31) == 0) {
    const ubg_i64 whole = n & ~(ubg_i64)31;
    ubg_f32x16 a[ROWS];
    ubg_i64 c;
#ifdef UBG_V16
    ubg_f32x16 a0[ROWS];
    ubg_u16x32 lnz[ROWS];
    int l;
    for (i = 0; i < nrows; i++) lnz[i] = (ubg_u16x32){0} - 1;
#endif
    for (i = 0; i < nrows; i++) a[i] = ubg_v_ld(la + i * UBG_LANES);
#ifdef UBG_V16
    for (i = 0; i < nrows; i++) a0[i] = a[i];
#endif
    for (c = 0; c < whole; c += UBG_PF_CHUNK) {
      const ubg_i64 end = ubg_min(whole, c + UBG_PF_CHUNK);
      if (next >= 0)
        for (i = 0; i < nrows; i++) ubg_prefetch_l2(s8 + (next + i * plane + c) * ESIZE, (end - c) * ESIZE);
      for (j = c; j < end; j += 32)
        for (i = 0; i < nrows; i++) {
          const ubg_pair_i32x16 w = ld_pair(src, base + i * plane + j);
#ifdef UBG_V16
          lnz[i] = least_nonzero(lnz[i], w);
          a[i] = ubg_v_dot_bf16_pairs(a[i], w, w);
#else
          a[i] = ss_chunk(a[i], w);
#endif
        }
    }
#ifdef UBG_V16
    for (i = 0; i < nrows; i++) {
      unsigned m = 0xffff;
      for (l = 0; l < 32; l++) m = lnz[i][l] < m ? lnz[i][l] : m;
      least[i] = m < least[i] ? m : least[i];
      if (!ss_dot_exact(m, a0[i]))
        for (a[i] = a0[i], j = 0; j < whole; j += 32) a[i] = ss_chunk(a[i], ld_pair(src, base + i * plane + j));
    }
#endif
    for (i = 0; i < nrows; i++) ubg_v_st(la + i * UBG_LANES, a[i]);
    j = whole;
  }
  for (i = 0; i < nrows; i++) { /* the columns outside whole chunks, alone, a pair's odd one first (j is even) */
    ubg_i64 d;
    for (d = j; d < n; d++) {
      const ubg_i64 q = (d ^ 1) < n ? d ^ 1 : d, at = base + i * plane + q;
      const float x = LD(src, at);
      float *lane = la + i * UBG_LANES + ss_lane(c0 + q);
      *lane = fmaf(x, x, *lane);
    }
  }
#endif
}

#ifndef __TINYC__
/* a chunk's products in score order (ya, yb: the columns 4m, 4m + 1 and
 * 4m + 2, 4m + 3) from those of its even and odd columns */
UBG_INLINE void score_order(ubg_f32x16 even, ubg_f32x16 odd, ubg_f32x16 *ya, ubg_f32x16 *yb) {
  *ya = ubg_v_permute2(even, odd, (ubg_index_x16){0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30});
  *yb = ubg_v_permute2(even, odd, (ubg_index_x16){1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31});
}
#endif

/* lanes[i] = fma(rnd(row_i * r[i]), wqn, lanes[i]) over the lanes, for i <
 * nrows, the rows holding columns [c0, c0 + n) and wqs as load_wqn left it;
 * the rows at src[next + i * plane] (next >= 0: the same rows of the
 * program's next token) are requested from memory meanwhile, a line at a
 * time: this is the arithmetic-heavy phase, so the memory system works
 * while it runs. least: load_ss_rows's (bf16). */
UBG_INLINE void score_rows(float *UBG_RESTRICT lanes, const void *rows, ubg_i64 stride, int nrows,
                           const float *UBG_RESTRICT r, const float *UBG_RESTRICT wqs, ubg_i64 n, ubg_i64 c0,
                           const void *src, ubg_i64 next, ubg_i64 plane, const unsigned *least) {
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
      if (NAT)
        nat_lanes_fma(lanes + i * UBG_LANES, buf, wqs + c, m, c0, c, n, 1);
      else
        ubg_vop_lanes_fma(lanes + i * UBG_LANES, buf, wqs + c, m);
    }
#else
  ubg_f32x16 acc[ROWS];
  ubg_i64 j = 0;
  int l;
  for (i = 0; i < nrows; i++) acc[i] = ubg_v_ld(lanes + i * UBG_LANES);
  if (NAT && (c0 & 31) == 0) {
#ifdef UBG_V16
    int exact[ROWS]; /* row i may have a subnormal product: the exact rounding */
    for (i = 0; i < nrows; i++) exact[i] = !products_normal(least[i], r[i]);
#endif
    for (; j + 32 <= n; j += 32) { /* 64 bytes: one line of each next row */
      const ubg_f32x16 qa = ubg_v_ld(wqs + j), qb = ubg_v_ld(wqs + j + 16);
      if (next >= 0)
        for (i = 0; i < nrows; i++) UBG_PREFETCH_L2((const ubg_u8 *)src + (next + i * plane + j) * ESIZE);
      for (i = 0; i < nrows; i++) {
        const ubg_pair_i32x16 w = ld_pair(rows, i * stride + j);
        ubg_f32x16 ya, yb;
#ifdef UBG_V16
        if (!exact[i]) {
          const ubg_f32x16 rv = ubg_v_splat(r[i]);
          const ubg_pair_i32x16 y = ubg_v_pack_bf16_pairs(pair_hi(w) * rv, pair_lo(w) * rv);
          ya = pair_lo(y), yb = pair_hi(y);
        } else
#endif
        {
          score_order(rnd16_scaled(pair_lo(w), r[i]), rnd16_scaled(pair_hi(w), r[i]), &ya, &yb);
        }
        acc[i] = ubg_v_fma(ya, qa, acc[i]);
        acc[i] = ubg_v_fma(yb, qb, acc[i]);
      }
    }
  }
  if (!NAT)
    for (; j + 16 <= n; j += 16) {
      const ubg_f32x16 q = ubg_v_ld(wqs + j);
      if (next >= 0 && ((j * ESIZE) & 63) == 0)
        for (i = 0; i < nrows; i++) UBG_PREFETCH_L2((const ubg_u8 *)src + (next + i * plane + j) * ESIZE);
      for (i = 0; i < nrows; i++) acc[i] = ubg_v_fma(rnd16_scaled(ld16(rows, i * stride + j), r[i]), q, acc[i]);
    }
  (void)least;
  for (i = 0; i < nrows; i++) ubg_v_st(lanes + i * UBG_LANES, acc[i]);
  for (i = 0; i < nrows; i++)
    for (l = 0; j + l < n; l++) {
      float *lane = lanes + i * UBG_LANES + (NAT ? score_lane(c0 + j + l) : l);
      *lane = fmaf(RND(LD(rows, i * stride + j + l) * r[i]), wqs[j + l], *lane);
    }
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
/* 32 columns stored at element i of dst from the f32 sums of their even
 * (e) and odd (o) columns, as out_chunks keeps them: store32 in column
 * order. bf16: both converted at once (words [even | odd]) and put in
 * column order by one word permute (pair_words) instead of two permutes
 * of the f32 sums; store32's exact path where the
 * conversion flushed a subnormal. */
UBG_INLINE void store32_interleaved(void *dst, ubg_i64 i, ubg_f32x16 e, ubg_f32x16 o, int stream) {
  store32(dst, i, ubg_v_permute2(e, o, (ubg_index_x16){0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23}),
          ubg_v_permute2(e, o, (ubg_index_x16){8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31}), stream);
}
UBG_COLD void store32_interleaved_exact(void *dst, ubg_i64 i, ubg_f32x16 e, ubg_f32x16 o, int stream) {
  store32_interleaved(dst, i, e, o, stream);
}
UBG_INLINE void store32_even_odd(void *dst, ubg_i64 i, ubg_f32x16 e, ubg_f32x16 o, int stream) {
{{#is_bf16}}
#ifdef UBG_V16
  {
    unsigned sub = 0;
    const ubg_i16x32 y = ubg_v_to_bf16x32(e, o, &sub);
    if (sub != 0) {
      store32_interleaved_exact(dst, i, e, o, stream);
      return;
    }
    ubg_v_st_x32(dst, i, (ubg_i16x32)pair_words((ubg_pair_i16x32)y), stream);
    return;
  }
#endif
{{/is_bf16}}
  store32_interleaved(dst, i, e, o, stream);
}
/* out[at, + 32 * nchunks) from the bf16 chunks at column d (nchunks 1 or
 * 2, a constant where inlined: h stays in registers); the sums run over
 * even and odd columns */
UBG_INLINE void out_chunks(void *out, ubg_i64 at, const void *rows, ubg_i64 stride, ubg_i64 d, const float *a, ubg_i64 nb,
                           int nchunks, int stream) {
  ubg_f32x16 h[4];
  ubg_i64 i;
  int u;
  for (u = 0; u < 4; u++) h[u] = (ubg_f32x16){0};
  for (i = 0; i < nb; i++)
    for (u = 0; u < nchunks; u++) {
      const ubg_pair_i32x16 w = ld_pair(rows, i * stride + d + 32 * u);
      h[2 * u] = ubg_v_fma(ubg_v_splat(a[i]), pair_lo(w), h[2 * u]);
      h[2 * u + 1] = ubg_v_fma(ubg_v_splat(a[i]), pair_hi(w), h[2 * u + 1]);
    }
  for (u = 0; u < nchunks; u++) store32_even_odd(out, at + 32 * u, h[2 * u], h[2 * u + 1], stream);
}
static void out_rows(void *out, ubg_i64 base, const void *rows, ubg_i64 stride, const float *a, ubg_i64 nb, ubg_i64 n,
                     int stream) {
  ubg_i64 d = 0, i;
  int u;
  /* four 16-column sums at once: each output is a chain of dependent
   * FMAs over the blocks, four chains keep the unit busy */
  if (NAT) {
    for (; d + 64 <= n; d += 64)
      out_chunks(out, base + d, rows, stride, d, a, nb, 2, stream);
    if (d + 32 <= n) {
      out_chunks(out, base + d, rows, stride, d, a, nb, 1, stream);
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

{{! RMSNorm backward's row operations, one body per backend: gcc's vector
    loops, tcc's calls of the library's vector operations (tile_calls.h),
    the scalar loop for any other compiler; every body gives the same bits.
    The including template defines RND, LD, ST, DT, ES, the CAST_ modes and
    the M_ modes. }}
UBG_INLINE float m_of(float dy, float wt, int m_mode) {
  return m_mode == M_DY ? dy : m_mode == M_MUL ? dy * wt : RND(dy * wt);
}

/* Pass 1 over a row (or a tile of it; j counts from a multiple of 16):
 *   x_t[j] = x (when x_t), m_t[j] = m (when m_t), acc[l] += m * x over the
 *   lanes, dw_acc[j] += dy * xn (when dw_acc)
 * rstd is an input of the backward pass, so dw needs no second pass. */
UBG_INLINE void pass1(float *UBG_RESTRICT x_t, float *UBG_RESTRICT m_t, const void *dy, const void *x, ubg_i64 base,
                      const float *UBG_RESTRICT wt, float *UBG_RESTRICT dw_acc, float r, ubg_i64 n,
                      float *UBG_RESTRICT acc, int m_mode, int round_xn) {
  ubg_i64 j = 0;
  int l;
{{^is_f32}}
#ifdef UBG_V16
  /* 16 lanes at a time, the same bits (prelude.h); everything is computed
   * before anything is stored, so a chunk holding an f32 subnormal is left
   * to the scalar loops below */
  {
    ubg_f32x16 a = ubg_v_ld(acc);
    for (; j + 16 <= n; j += 16) {
      unsigned sub = 0;
      ubg_f32x16 g = ubg_v_ld_{{dtype}}(dy, base + j), xv = ubg_v_ld_{{dtype}}(x, base + j), m = g, xn = xv * r;
      if (m_mode != M_DY) m = g * ubg_v_ld(wt + j);
      if (m_mode == M_MUL_RND) m = ubg_v_rnd_{{dtype}}(m, &sub);
      if (dw_acc && round_xn) xn = ubg_v_rnd_{{dtype}}(xn, &sub);
      if (sub != 0) break;
      if (x_t) ubg_v_st(x_t + j, xv);
      if (m_t) ubg_v_st(m_t + j, m);
      if (dw_acc) ubg_v_st(dw_acc + j, ubg_v_ld(dw_acc + j) + g * xn);
      a += m * xv;
    }
    ubg_v_st(acc, a);
  }
#endif
{{/is_f32}}
  for (; j < n; j += UBG_LANES) {
    const int lanes = (int)ubg_min(UBG_LANES, n - j);
    for (l = 0; l < lanes; l++) {
      const float g = LD(dy, base + j + l), xv = LD(x, base + j + l);
      const float m = m_of(g, m_mode ? wt[j + l] : 0.0f, m_mode);
      if (x_t) x_t[j + l] = xv;
      if (m_t) m_t[j + l] = m;
      if (dw_acc) dw_acc[j + l] += g * (round_xn ? RND(xv * r) : xv * r);
      acc[l] += m * xv;
    }
  }
}

#ifndef __TINYC__
/* pass 2's m on the 16 lanes at d: m_t's, or formed again as m_of forms
 * it, short of M_MUL_RND's rounding (the caller's, where the dtype has one) */
UBG_INLINE ubg_f32x16 m16(const float *UBG_RESTRICT m_t, const float *UBG_RESTRICT dy_t, const float *UBG_RESTRICT wt,
                          ubg_i64 d, int m_mode) {
  if (m_t) return ubg_v_ld(m_t + d);
  return m_mode == M_DY ? ubg_v_ld(dy_t + d) : ubg_v_ld(dy_t + d) * ubg_v_ld(wt + d);
}
#endif

/* Pass 2: dx[base, base + n) = r * m + corr * x, m from m_t, or formed
 * again from dy_t and wt (tiled variants keep no m across tiles); x from
 * x_t, or (x_t NULL) from global memory again, where pass 1 left it in
 * cache: whole-row variants keep no x tile, so their UB (m, w, dw) stays
 * within the CPU's L1 */
UBG_INLINE void pass2(void *dx, int stream, const void *x_g, ubg_i64 base, const float *UBG_RESTRICT x_t,
                      const float *UBG_RESTRICT m_t,
                      const float *UBG_RESTRICT dy_t, const float *UBG_RESTRICT wt, float r, float corr, ubg_i64 n,
                      int m_mode) {
  ubg_i64 d = 0;
{{^is_f32}}
#ifdef UBG_V16
  for (; d + 16 <= n; d += 16) {
    unsigned sub = 0;
    ubg_f32x16 m = m16(m_t, dy_t, wt, d, m_mode);
    if (!m_t && m_mode == M_MUL_RND) m = ubg_v_rnd_{{dtype}}(m, &sub);
    ubg_f32x16 xv = x_t ? ubg_v_ld(x_t + d) : ubg_v_ld_{{dtype}}(x_g, base + d);
    ubg_i16x16 h = ubg_v_to_{{dtype}}(r * m + corr * xv, &sub);
    if (sub != 0) break;
    if (stream) ubg_v_stream_{{dtype}}(dx, base + d, h);
    else ubg_v_st_{{dtype}}(dx, base + d, h);
  }
#endif
{{/is_f32}}
{{#is_f32}}
#ifndef __TINYC__
  if (stream) /* f32: whole lines streamed, the scalar loop's operations */
    for (; d + 16 <= n; d += 16) {
      const ubg_f32x16 m = m16(m_t, dy_t, wt, d, m_mode); /* M_MUL_RND's rounding: none in f32 */
      const ubg_f32x16 xv = x_t ? ubg_v_ld(x_t + d) : ubg_v_ld((const float *)x_g + base + d);
      if (!ubg_v_stream_f32((float *)dx + base + d, r * m + corr * xv)) break;
    }
#endif
{{/is_f32}}
  (void)stream; /* only the vector paths stream */
  for (; d < n; d++) {
    const float m = m_t ? m_t[d] : m_of(dy_t[d], m_mode ? wt[d] : 0.0f, m_mode);
    ST(dx, base + d, r * m + corr * (x_t ? x_t[d] : LD(x_g, base + d)));
  }
}

/* pass2 over a row piece by piece; before each piece, the same piece of
 * the row at element offset next (the program's next row; < 0: none) is
 * requested: dy and x to read (not dx to write, which helps the forward
 * pass but made this one slower). */
UBG_INLINE void pass2_row(void *dx, int stream, const void *dy_g, const void *x_g, ubg_i64 base, ubg_i64 next,
                          const float *UBG_RESTRICT x_t, const float *UBG_RESTRICT m_t, const float *UBG_RESTRICT dy_t,
                          const float *UBG_RESTRICT wt, float r, float corr, ubg_i64 n, int m_mode) {
  ubg_i64 c0;
  for (c0 = 0; c0 < n; c0 += UBG_PF_CHUNK) {
    const ubg_i64 k = ubg_min(UBG_PF_CHUNK, n - c0);
    const float *mc = m_t ? m_t + c0 : 0, *dyc = dy_t ? dy_t + c0 : 0, *wc = m_mode == M_DY ? wt : wt + c0;
    const float *xc = x_t ? x_t + c0 : 0;
    if (next >= 0) {
      ubg_prefetch((const ubg_u8 *)dy_g + (next + c0) * ES, k * ES);
      ubg_prefetch((const ubg_u8 *)x_g + (next + c0) * ES, k * ES);
    }
    if (m_mode == M_DY) pass2(dx, stream, x_g, base + c0, xc, mc, dyc, wc, r, corr, k, M_DY);
    else if (m_mode == M_MUL) pass2(dx, stream, x_g, base + c0, xc, mc, dyc, wc, r, corr, k, M_MUL);
    else pass2(dx, stream, x_g, base + c0, xc, mc, dyc, wc, r, corr, k, M_MUL_RND);
  }
}

/* pass1 with the mode as a constant, so each case is its own loop */
UBG_INLINE void pass1_mode(float *x_t, float *m_t, const void *dy, const void *x, ubg_i64 base, const float *wt,
                           float *dw_acc, float r, ubg_i64 n, float *acc, int m_mode) {
  if (m_mode == M_DY) pass1(x_t, m_t, dy, x, base, wt, dw_acc, r, n, acc, M_DY, 0);
  else if (m_mode == M_MUL) pass1(x_t, m_t, dy, x, base, wt, dw_acc, r, n, acc, M_MUL, 0);
  else pass1(x_t, m_t, dy, x, base, wt, dw_acc, r, n, acc, M_MUL_RND, 1);
}

#ifdef __TINYC__
/* tcc: pass1 and pass2 as vector operations (tcc inlines nothing; prelude.h),
 * UBG_VCHUNK elements at a time, staged in the stack like a vector
 * register file; the same steps as the scalar loops, in the same order */
static void m_chunk(float *m, const float *g, const float *wt, ubg_i64 k, int m_mode) {
  if (m_mode == M_DY) {
    ubg_vop_copy(m, g, k);
    return;
  }
  ubg_vop_mul(m, g, wt, k);
  if (m_mode == M_MUL_RND) ubg_vop_rnd(m, m, k, DT);
}

static void vpass1(float *x_t, float *m_t, const void *dy, const void *x, ubg_i64 base, const float *wt,
                   float *dw_acc, float r, ubg_i64 n, float *acc, int m_mode, int round_xn) {
  float g[UBG_VCHUNK], xb[UBG_VCHUNK], mb[UBG_VCHUNK], xn[UBG_VCHUNK];
  ubg_i64 c0;
  for (c0 = 0; c0 < n; c0 += UBG_VCHUNK) {
    const ubg_i64 k = ubg_min(UBG_VCHUNK, n - c0);
    float *xv = x_t ? x_t + c0 : xb, *m = m_t ? m_t + c0 : mb;
    ubg_vop_load(g, dy, base + c0, k, DT);
    ubg_vop_load(xv, x, base + c0, k, DT);
    m_chunk(m, g, m_mode == M_DY ? wt : wt + c0, k, m_mode);
    ubg_vop_lanes_dot(acc, m, xv, k); /* c0 is a multiple of 16: the lanes line up */
    if (dw_acc) {
      ubg_vop_muls(xn, xv, r, k);
      if (round_xn) ubg_vop_rnd(xn, xn, k, DT);
      ubg_vop_mac(dw_acc + c0, g, xn, k);
    }
  }
}

/* dx from m_t and x (global memory), or from dy_t and x_t (tiles) */
static void vpass2(void *dx, int stream, const void *x, ubg_i64 base, const float *x_t, const float *m_t,
                   const float *dy_t, const float *wt, float r, float corr, ubg_i64 n, int m_mode) {
  float xb[UBG_VCHUNK], mb[UBG_VCHUNK], t[UBG_VCHUNK];
  ubg_i64 c0;
  for (c0 = 0; c0 < n; c0 += UBG_VCHUNK) {
    const ubg_i64 k = ubg_min(UBG_VCHUNK, n - c0);
    const float *xv = x_t ? x_t + c0 : xb, *m = m_t ? m_t + c0 : mb;
    if (!x_t) ubg_vop_load(xb, x, base + c0, k, DT);
    if (!m_t) m_chunk(mb, dy_t + c0, m_mode == M_DY ? wt : wt + c0, k, m_mode);
    ubg_vop_axpby(t, r, m, corr, xv, k);
    ubg_vop_store(dx, base + c0, t, k, DT, stream);
  }
}
#endif

/* dw[c0, c0 + n) = rnd(the sum over groups g of dw_part[g][c0, c0 + n)),
 * in group order, summed in tile (n floats of UB) */
UBG_INLINE void dw_reduce_tile(void *dw, ubg_i64 c0, float *UBG_RESTRICT tile, const float *dw_part, ubg_i64 groups,
                               ubg_i64 cols, ubg_i64 n) {
  ubg_i64 g;
#ifdef __TINYC__
  ubg_vop_fill(tile, 0.0f, n);
  for (g = 0; g < groups; g++) ubg_vop_add(tile, tile, dw_part + g * cols + c0, n);
  ubg_vop_store(dw, c0, tile, n, DT, 0);
#else
  ubg_i64 d;
  for (d = 0; d < n; d++) tile[d] = 0.0f;
  for (g = 0; g < groups; g++) {
    const float *part = dw_part + g * cols + c0;
    for (d = 0; d < n; d++) tile[d] += part[d];
  }
  for (d = 0; d < n; d++) ST(dw, c0 + d, tile[d]);
#endif
}

/* dst[0, n) = src[0, n) */
UBG_INLINE void copy_f32(float *UBG_RESTRICT dst, const float *UBG_RESTRICT src, ubg_i64 n) {
#ifdef __TINYC__
  ubg_vop_copy(dst, src, n);
#else
  ubg_i64 d;
  for (d = 0; d < n; d++) dst[d] = src[d];
#endif
}

/* pass 1 over a row piece: x_t, m_t, acc and dw_acc as pass1 forms them;
 * round_xn: xn is rounded (llama, none) */
UBG_INLINE void row_pass1(float *x_t, float *m_t, const void *dy, const void *x, ubg_i64 base, const float *wt,
                          float *dw_acc, float r, ubg_i64 n, float *acc, int m_mode, int round_xn) {
#ifdef __TINYC__
  vpass1(x_t, m_t, dy, x, base, wt, dw_acc, r, n, acc, m_mode, round_xn);
#else
  (void)round_xn; /* pass1_mode knows it from m_mode: rounding with the weight's rounding */
  pass1_mode(x_t, m_t, dy, x, base, wt, dw_acc, r, n, acc, m_mode);
#endif
}

/* pass 2 over a row piece: dx[base, base + n) = r * m + corr * x; next: the
 * element offset of the row to request ahead (< 0: none; gcc's only) */
UBG_INLINE void row_pass2(void *dx, int stream, const void *dy, const void *x, ubg_i64 base, ubg_i64 next,
                          const float *x_t, const float *m_t, const float *dy_t, const float *wt, float r, float corr,
                          ubg_i64 n, int m_mode) {
#ifdef __TINYC__
  (void)dy, (void)next;
  vpass2(dx, stream, x, base, x_t, m_t, dy_t, wt, r, corr, n, m_mode);
#else
  pass2_row(dx, stream, dy, x, base, next, x_t, m_t, dy_t, wt, r, corr, n, m_mode);
#endif
}

{{! RMSNorm forward's row operations, one body per backend: gcc's vector
    loops, tcc's calls of the library's vector operations (tile_calls.h),
    the scalar loop for any other compiler; every body gives the same bits.
    The including template defines RND, LD, ST, DT and the CAST_ modes. }}
/* y[base, base + n) from the f32 tile xr; round_t: round x * rstd first;
 * stream: y bypasses the caches where the vector path stores it */
UBG_INLINE void norm_store(void *y, ubg_i64 base, const float *UBG_RESTRICT xr, const float *UBG_RESTRICT wt,
                           float r, ubg_i64 n, int round_t, int stream) {
  ubg_i64 d = 0;
{{^is_f32}}
#ifdef UBG_V16
  /* 16 lanes at a time, the same bits (prelude.h); a chunk with an f32
   * subnormal in it is left to the scalar loop below, d stays on it */
  for (; d + 16 <= n; d += 16) {
    unsigned sub = 0;
    ubg_f32x16 v = ubg_v_ld(xr + d) * r;
    if (wt) {
      if (round_t) v = ubg_v_rnd_{{dtype}}(v, &sub);
      v = v * ubg_v_ld(wt + d);
    }
    ubg_i16x16 h = ubg_v_to_{{dtype}}(v, &sub);
    if (sub != 0) break;
    if (stream) ubg_v_stream_{{dtype}}(y, base + d, h);
    else ubg_v_st_{{dtype}}(y, base + d, h);
  }
#endif
{{/is_f32}}
{{#is_f32}}
#ifndef __TINYC__
  /* f32 needs no conversion: whole lines streamed, the same products */
  if (stream)
    for (; d + 16 <= n; d += 16) {
      ubg_f32x16 v = ubg_v_ld(xr + d) * r;
      if (wt) v = v * ubg_v_ld(wt + d);
      if (!ubg_v_stream_f32((float *)y + base + d, v)) break;
    }
#endif
{{/is_f32}}
  (void)stream; /* only the vector paths stream */
  if (!wt) {
    for (; d < n; d++) ST(y, base + d, xr[d] * r);
  } else if (round_t) {
    for (; d < n; d++) ST(y, base + d, RND(xr[d] * r) * wt[d]);
  } else {
    for (; d < n; d++) ST(y, base + d, (xr[d] * r) * wt[d]);
  }
}

#ifdef __TINYC__
/* tcc: the same steps as norm_store, as vector operations over the tile
 * (tcc inlines nothing; prelude.h): xr is overwritten */
static void vnorm(void *y, ubg_i64 base, float *xr, const float *wt, float r, ubg_i64 n, int round_t, int stream) {
  ubg_vop_muls(xr, xr, r, n);
  if (wt) {
    if (round_t) ubg_vop_rnd(xr, xr, n, DT);
    ubg_vop_mul(xr, xr, wt, n);
  }
  ubg_vop_store(y, base, xr, n, DT, stream);
}
#endif

/* norm_store over a row piece by piece; before each piece, the same piece
 * of the row at element offset next (this program's next row; < 0: none) is
 * requested, x to read and y to write. Under tcc, vnorm's vector operations
 * over the whole piece, which overwrite xr. */
UBG_INLINE void norm_row(void *y, const void *x, ubg_i64 base, ubg_i64 next, const float *UBG_RESTRICT xr,
                         const float *UBG_RESTRICT wt, float r, ubg_i64 n, int round_t, int stream) {
#ifdef __TINYC__
  (void)x, (void)next;
  vnorm(y, base, (float *)xr, wt, r, n, round_t, stream); /* xr is the caller's tile, free after this */
#else
  ubg_i64 c0;
  for (c0 = 0; c0 < n; c0 += UBG_PF_CHUNK) {
    const ubg_i64 k = ubg_min(UBG_PF_CHUNK, n - c0);
    if (next >= 0) {
      ubg_prefetch((const ubg_u8 *)x + (next + c0) * {{dtype_bytes}}, k * {{dtype_bytes}});
      if (!stream) ubg_prefetch_w((ubg_u8 *)y + (next + c0) * {{dtype_bytes}}, k * {{dtype_bytes}});
    }
    if (round_t) norm_store(y, base + c0, xr + c0, wt ? wt + c0 : 0, r, k, 1, stream);
    else norm_store(y, base + c0, xr + c0, wt ? wt + c0 : 0, r, k, 0, stream);
  }
#endif
}


{{! The UB-tiled GEMM shared by the FLCE passes (logits, dx, dw).

    A grid item computes one BLOCK_M x BLOCK_N tile of C. For each k block of
    BLOCK_K it copies the A and B tiles into UB as f32, in the layouts the
    register kernel reads (packing), then runs the register kernel over
    MR x NR panels of the C tile, which also sits in UB.

      a_pack : [BLOCK_M / MR][kc][MR] f32   row i of the A tile, column k at
                                            a_pack[(i / MR) * kc * MR + k * MR + i % MR]
      b_pack : [BLOCK_N / NR][kc][NR] f32   likewise, column j of the B tile
      c_tile : [BLOCK_M][BLOCK_N] f32        row-major, padded to MR x NR panels

    Determinism: every element of C is c = fma(a_k, b_k, c) for k = 0, 1, ...
    in order, from the value the pass starts it with. Nothing in that chain
    depends on BLOCK_M, BLOCK_N, BLOCK_K or the thread count, so every
    variant gives the same bits; fma is correctly rounded, so gcc's vector
    FMA and tcc's call of fmaf() agree too.

    The including template defines BLOCK_M, BLOCK_N, BLOCK_K and LD (its
    dtype's load) before this partial. }}
enum { MR = 8, NR = 32 };

#if defined(__GNUC__) && !defined(__TINYC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
/* v[0..15] := its transpose. Stage d swaps bit d of the row index with bit
 * d of the column index; the four stages together transpose. Each stage's
 * lanes, a's numbered 0-15 and b's 16-31 (ubg_v_permute2's indices): */
#define GEMM_LO8 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define GEMM_HI8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define GEMM_LO4 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define GEMM_HI4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define GEMM_LO2 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define GEMM_HI2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define GEMM_LO1 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define GEMM_HI1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
#define GEMM_STAGE(d, lo, hi)                                                                        \
  for (q = 0; q < 16; q++)                                                                           \
    if (!(q & d)) {                                                                                  \
      ubg_f32x16 a = v[q], b = v[q + d];                                                             \
      v[q] = ubg_v_permute2(a, b, (ubg_index_x16){lo});                                              \
      v[q + d] = ubg_v_permute2(a, b, (ubg_index_x16){hi});                                          \
    }
UBG_INLINE void gemm_transpose16(ubg_f32x16 *v) {
  int q;
  GEMM_STAGE(8, GEMM_LO8, GEMM_HI8)
  GEMM_STAGE(4, GEMM_LO4, GEMM_HI4)
  GEMM_STAGE(2, GEMM_LO2, GEMM_HI2)
  GEMM_STAGE(1, GEMM_LO1, GEMM_HI1)
}
#pragma GCC diagnostic pop
/* rows r.. in groups of 16, k in runs of 16: load, transpose, store each
 * k's 16 values as two halves of 8 rows (R is 8 or a multiple of 16) */
#define GEMM_PACK_T16(R, LOAD)                                                                       \
  for (; r + 16 <= cc; r += 16) {                                                                    \
    for (k = 0; k + 16 <= kc; k += 16) {                                                             \
      float t[16][16];                                                                               \
      ubg_f32x16 v[16];                                                                              \
      int q, l;                                                                                      \
      for (q = 0; q < 16; q++) {                                                                     \
        for (l = 0; l < 16; l++) t[q][l] = LOAD(src, (c0 + r + q) * ld + k0 + k + l);               \
        UBG_PREFETCH(&src[(c0 + r + q) * ld + k0 + k + kc]); /* this row's next k block */          \
      }                                                                                              \
      for (q = 0; q < 16; q++) v[q] = ubg_v_ld(t[q]);                                                \
      gemm_transpose16(v);                                                                           \
      for (q = 0; q < 16; q++) {                                                                     \
        memcpy(&GEMM_AT(dst, R, kc, r, k + q), &v[q], 32);                                           \
        memcpy(&GEMM_AT(dst, R, kc, r + 8, k + q), (const float *)&v[q] + 8, 32);                    \
      }                                                                                              \
    }                                                                                                \
    for (; k < kc; k++)                                                                              \
      for (j = r; j < r + 16; j++) GEMM_AT(dst, R, kc, j, k) = LOAD(src, (c0 + j) * ld + k0 + k);    \
  }
#else
#define GEMM_PACK_T16(R, LOAD)
#endif

/* Packing: rows [c0, c0 + cc) x columns [k0, k0 + kc) of an operand into
 * panels of R rows (row r at dst[(r / R) * kc * R + k * R + r % R]), rows
 * cc.. of the last panel zero, so the register kernel has no edge cases.
 * Two source layouts:
 *   KCONTIG 1: src[(c0 + r) * ld + k0 + k], k contiguous: a transpose,
 *              done 16 x 16 at a time in registers by gcc
 *   KCONTIG 0: src[(k0 + k) * ld + c0 + r], r contiguous: runs of R
 * and two source types: the storage dtype (LD) or f32. Each row piece read
 * asks for the same piece of the next k block, which the next pack reads
 * after a whole tile of arithmetic: the operands stream from DRAM. */
#define GEMM_AT(dst, R, kc, r, k) (dst)[((r) / (R)) * (kc) * (R) + (k) * (R) + (r) % (R)]
#define GEMM_PACK(name, R, SRC_T, LOAD, KCONTIG)                                                     \
  static void name(float *UBG_RESTRICT dst, const SRC_T *UBG_RESTRICT src, ubg_i64 ld, ubg_i64 k0,   \
                   ubg_i64 kc, ubg_i64 c0, ubg_i64 cc) {                                            \
    ubg_i64 r = 0, k, j;                                                                             \
    if (KCONTIG) {                                                                                   \
      GEMM_PACK_T16(R, LOAD)                                                                         \
      for (; r < cc; r++)                                                                            \
        for (k = 0; k < kc; k++) GEMM_AT(dst, R, kc, r, k) = LOAD(src, (c0 + r) * ld + k0 + k);      \
    } else {                                                                                         \
      for (; r + R <= cc; r += R)                                                                    \
        for (k = 0; k < kc; k++) {                                                                   \
          for (j = 0; j < R; j++) dst[r * kc + k * R + j] = LOAD(src, (k0 + k) * ld + c0 + r + j);   \
          for (j = 0; j < R; j += 16) UBG_PREFETCH(&src[(k0 + k + kc) * ld + c0 + r + j]);           \
        }                                                                                            \
      for (k = 0; k < kc && r < cc; k++)                                                             \
        for (j = r; j < cc; j++) GEMM_AT(dst, R, kc, j, k) = LOAD(src, (k0 + k) * ld + c0 + j);       \
      r = cc;                                                                                        \
    }                                                                                                \
    for (; r % R; r++)                                                                               \
      for (k = 0; k < kc; k++) GEMM_AT(dst, R, kc, r, k) = 0.0f;                                     \
  }
#define GEMM_LD_F32(p, i) ((p)[i])

/* C panel (MR x NR at c, row stride BLOCK_N) += A panel x B panel over kc */
#if defined(__GNUC__) && !defined(__TINYC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
static void gemm_panel(const float *UBG_RESTRICT a, const float *UBG_RESTRICT b, float *UBG_RESTRICT c, ubg_i64 kc) {
  ubg_f32x16 c0[MR], c1[MR];
  ubg_i64 k;
  int r;
  for (r = 0; r < MR; r++) {
    c0[r] = ubg_v_ld(c + r * BLOCK_N);
    c1[r] = ubg_v_ld(c + r * BLOCK_N + 16);
  }
  for (k = 0; k < kc; k++) {
    ubg_f32x16 b0 = ubg_v_ld(b + k * NR), b1 = ubg_v_ld(b + k * NR + 16);
    for (r = 0; r < MR; r++) {
      ubg_f32x16 av = (ubg_f32x16){0} + a[k * MR + r];
      c0[r] = ubg_v_fma(av, b0, c0[r]);
      c1[r] = ubg_v_fma(av, b1, c1[r]);
    }
  }
  for (r = 0; r < MR; r++) {
    ubg_v_st(c + r * BLOCK_N, c0[r]);
    ubg_v_st(c + r * BLOCK_N + 16, c1[r]);
  }
}
#pragma GCC diagnostic pop
#else
/* tcc: the plain loop, the same fma chain per element */
static void gemm_panel(const float *a, const float *b, float *c, ubg_i64 kc) {
  ubg_i64 k;
  int r, j;
  for (r = 0; r < MR; r++)
    for (j = 0; j < NR; j++) {
      float acc = c[r * BLOCK_N + j];
      for (k = 0; k < kc; k++) acc = fmaf(a[k * MR + r], b[k * NR + j], acc);
      c[r * BLOCK_N + j] = acc;
    }
}
#endif

/* the C tile (mc x nc used) += packed A x packed B over kc */
static void gemm_tile(const float *a_pack, const float *b_pack, float *c_tile, ubg_i64 mc, ubg_i64 nc, ubg_i64 kc) {
  ubg_i64 pi, pj;
  for (pj = 0; pj * NR < nc; pj++)
    for (pi = 0; pi * MR < mc; pi++)
      gemm_panel(a_pack + pi * kc * MR, b_pack + pj * kc * NR, c_tile + pi * MR * BLOCK_N + pj * NR, kc);
}

/* zero the padded rows and columns of the C tile's panels, so the register
 * kernel computes on finite numbers there (they are never stored) */
static void gemm_zero_pad(float *c_tile, ubg_i64 mc, ubg_i64 nc) {
  ubg_i64 i, j, mr = ubg_cdiv(mc, MR) * MR, nr = ubg_cdiv(nc, NR) * NR;
  for (i = 0; i < mr; i++)
    for (j = i < mc ? nc : 0; j < nr; j++) c_tile[i * BLOCK_N + j] = 0.0f;
}

/* The AMX GEMM (gemm_amx.h).
 *
 * Tiles: C is computed 32 x 32 at a time in four 16 x 16 f32 tiles (0-3)
 * from two A tiles (4, 5: 16 rows x 32 k of bf16) and two B tiles (6, 7:
 * 16 k pairs x 16 columns x 2 bf16, the "VNNI" layout the instruction
 * reads). The operands are packed first, zero-padded to whole tiles so the
 * tile loop has no edges:
 *   ap : [MT][KT] tiles of 16 x 32 bf16, A(m, k) at row m % 16, column k % 32
 *        (MT even: the last 32-row block has its second tile)
 *   bp : one 32-column block of B over all of k, per thread:
 *        [KT][2] tiles, B(k, n) at row (k % 32) / 2, column n % 16, half k % 2
 * A is packed once per call (shared), B once per 32 columns; every 32 x 32
 * block of C then runs over all of k with its four tiles held.
 *
 * Only rt_amx_available() runs on every CPU; everything else runs after it
 * said yes, and is compiled for AMX and AVX-512 function by function
 * (AMX_FN), so the library's own flags stay what they are. */
#include "gemm_amx.h"

#include <immintrin.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define AMX_FN __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))

enum { TM = 16, TK = 32, TILE_BYTES = 1024 };

/* ---- may this process use the tiles? */

static bool amx_ok;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_probe(void) {
  unsigned a, b, c, d;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
  if (a < 7) return;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
  const bool bf16 = d >> 22 & 1, tile = d >> 24 & 1;
  if (!bf16 || !tile) return;
  /* Linux hands out the tile state only on request (ARCH_REQ_XCOMP_PERM
   * for XFEATURE_XTILEDATA); a kernel without it refuses */
  amx_ok = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}

bool rt_amx_available(void) {
  pthread_once(&amx_once, amx_probe);
  return amx_ok;
}

/* ---- packing */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* 32 f32 (n of them valid, the rest zero) as 32 bf16, to nearest even */
AMX_FN static __m512i f32x32_to_bf16(const float *p, int64_t n) {
  const __mmask16 lo = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
  const __mmask16 hi = n >= 32 ? 0xffff : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1);
  const __m512 l = _mm512_maskz_loadu_ps(lo, p), h = _mm512_maskz_loadu_ps(hi, p + 16);
  return (__m512i)_mm512_cvtne2ps_pbh(h, l);
}

/* the n valid of 32 bf16 at p, the rest zero */
AMX_FN static __m512i bf16x32(const uint16_t *p, int64_t n) {
  const __mmask32 m = n >= 32 ? 0xffffffffu : (__mmask32)((1u << n) - 1);
  return _mm512_maskz_loadu_epi16(m, p);
}

/* rows r[0..15] (each 16 32-bit lanes) := their transpose. Stage d swaps
 * bit d of the row index with bit d of the lane index; the four stages
 * together transpose. In a pair of rows q, q + d (bit d of q clear) lane l
 * becomes, for row q, l & d ? r[q + d][l - d] : r[q][l], and for row q + d,
 * l & d ? r[q + d][l] : r[q][l + d]. */
AMX_FN static void transpose16(__m512i r[16]) {
  for (int d = 8; d >= 1; d /= 2) {
    int lo[16], hi[16];
    for (int l = 0; l < 16; l++) {
      lo[l] = l & d ? 16 + l - d : l;
      hi[l] = l & d ? 16 + l : l + d;
    }
    const __m512i ilo = _mm512_loadu_si512(lo), ihi = _mm512_loadu_si512(hi);
    for (int q = 0; q < 16; q++)
      if (!(q & d)) {
        const __m512i a = r[q], b = r[q + d];
        r[q] = _mm512_permutex2var_epi32(a, ilo, b);
        r[q + d] = _mm512_permutex2var_epi32(a, ihi, b);
      }
  }
}

/* A tile (mt, kt) of ap: 16 rows of 32 bf16 */
AMX_FN static void pack_a_tile(const rt_amx_gemm_args *g, uint16_t *tile, int64_t mt, int64_t kt) {
  const int64_t m0 = mt * TM, k0 = kt * TK, kn = g->k - k0 < TK ? g->k - k0 : TK;
  if (g->a_kcontig) {
    for (int64_t r = 0; r < TM; r++) {
      __m512i v = _mm512_setzero_si512();
      if (m0 + r < g->m) {
        const int64_t at = (m0 + r) * g->lda + k0;
        v = g->a_f32 ? f32x32_to_bf16((const float *)g->a + at, kn) : bf16x32((const uint16_t *)g->a + at, kn);
      }
      _mm512_storeu_si512(tile + r * TK, v);
    }
    return;
  }
  /* A(m, k) at a[k * lda + m]: 32 rows of k, 16 m each, transposed in two
   * 16 x 16 halves; then each m's 32 values rounded to bf16 together */
  /* the rows of this tile that exist: none in the pad tile of an odd count */
  const int64_t mn = g->m - m0 < 0 ? 0 : g->m - m0 < TM ? g->m - m0 : TM;
  const __mmask16 mm = mn >= 16 ? 0xffff : (__mmask16)((1u << mn) - 1);
  __m512i h[2][16];
  for (int half = 0; half < 2; half++)
    for (int q = 0; q < 16; q++) {
      const int64_t k = k0 + half * 16 + q;
      if (k >= g->k) {
        h[half][q] = _mm512_setzero_si512();
      } else if (g->a_f32) {
        h[half][q] = (__m512i)_mm512_maskz_loadu_ps(mm, (const float *)g->a + k * g->lda + m0);
      } else { /* bf16: widened to f32, exact */
        const __m256i w = _mm256_maskz_loadu_epi16(mm, (const uint16_t *)g->a + k * g->lda + m0);
        h[half][q] = _mm512_slli_epi32(_mm512_cvtepu16_epi32(w), 16);
      }
    }
  transpose16(h[0]);
  transpose16(h[1]);
  for (int r = 0; r < TM; r++)
    _mm512_storeu_si512(tile + r * TK, (__m512i)_mm512_cvtne2ps_pbh((__m512)h[1][r], (__m512)h[0][r]));
}

/* B tiles (kt, 0..1) of the block at column n0: 16 k pairs x 16 columns */
AMX_FN static void pack_b_tiles(const rt_amx_gemm_args *g, uint16_t *tiles, int64_t n0, int64_t kt) {
  const int64_t k0 = kt * TK, kn = g->k - k0 < TK ? g->k - k0 : TK;
  for (int j = 0; j < 2; j++) {
    uint16_t *tile = tiles + j * (TILE_BYTES / 2);
    const int64_t c0 = n0 + j * 16, nn = g->n - c0 < 16 ? (g->n - c0 < 0 ? 0 : g->n - c0) : 16;
    if (g->b_kcontig) { /* B(k, n) = b[n * ldb + k]: column n's 16 pairs, transposed */
      __m512i r[16];
      for (int q = 0; q < 16; q++)
        r[q] = q < nn ? bf16x32(g->b + (c0 + q) * g->ldb + k0, kn) : _mm512_setzero_si512();
      transpose16(r);
      for (int p = 0; p < 16; p++) _mm512_storeu_si512(tile + p * TK, r[p]);
    } else { /* B(k, n) = b[k * ldb + n]: rows k and k + 1 interleaved */
      const __mmask16 mn = nn >= 16 ? 0xffff : (__mmask16)((1u << nn) - 1);
      for (int p = 0; p < 16; p++) {
        const int64_t k = k0 + 2 * p;
        __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
        if (k < g->k) lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mn, g->b + k * g->ldb + c0));
        if (k + 1 < g->k) hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mn, g->b + (k + 1) * g->ldb + c0));
        _mm512_storeu_si512(tile + p * TK, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
      }
    }
  }
}

/* ---- the tile loop */

typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} __attribute__((packed)) tile_config;

AMX_FN static void tiles_on(void) {
  tile_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
}

/* bf16 C(m0.., n0..) := rnd(C + stage) for the block's mn x nn elements
 * (vcvtneps2bf16: to nearest even, as ubg_f32_to_bf16 but for subnormal
 * sums, which it flushes like the tiles) */
AMX_FN static void add_block_bf16(const rt_amx_gemm_args *g, const float *stage, int64_t m0, int64_t n0, int64_t mn,
                                  int64_t nn) {
  for (int64_t i = 0; i < mn; i++)
    for (int64_t h = 0; h < nn; h += 16) {
      const int64_t cn = nn - h < 16 ? nn - h : 16;
      const __mmask16 m = cn >= 16 ? 0xffff : (__mmask16)((1u << cn) - 1);
      uint16_t *c = g->c_bf16 + (m0 + i) * g->ldc + n0 + h;
      const __m512 old = (__m512)_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, c)), 16);
      const __m512 sum = _mm512_add_ps(old, _mm512_loadu_ps(stage + i * 32 + h));
      _mm256_mask_storeu_epi16(c, m, (__m256i)_mm512_cvtneps_pbh(sum));
    }
}

/* C rows m0.. x columns n0.. (a 32 x 32 block) over all of k */
AMX_FN static void block(const rt_amx_gemm_args *g, const uint16_t *ap, const uint16_t *bp, int64_t kt_n, int64_t m0,
                         int64_t n0) {
  const bool whole = !g->c_bf16 && m0 + 32 <= g->m && n0 + 32 <= g->n;
  float stage[32 * 32];
  float *c = whole ? g->c + m0 * g->ldc + n0 : stage;
  const int64_t ldc = whole ? g->ldc : 32, mn = g->m - m0 < 32 ? g->m - m0 : 32, nn = g->n - n0 < 32 ? g->n - n0 : 32;
  if (!whole && g->accumulate && !g->c_bf16) {
    memset(stage, 0, sizeof stage);
    for (int64_t i = 0; i < mn; i++) memcpy(stage + i * 32, g->c + (m0 + i) * g->ldc + n0, (size_t)nn * 4);
  }
  const size_t s = (size_t)ldc * 4;
  if (g->accumulate && !g->c_bf16) {
    _tile_loadd(0, c, s);
    _tile_loadd(1, c + 16, s);
    _tile_loadd(2, c + 16 * ldc, s);
    _tile_loadd(3, c + 16 * ldc + 16, s);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const uint16_t *a0 = ap + (m0 / TM) * kt_n * (TILE_BYTES / 2), *a1 = a0 + kt_n * (TILE_BYTES / 2);
  for (int64_t kt = 0; kt < kt_n; kt++) {
    const uint16_t *b = bp + kt * TILE_BYTES;
    _tile_loadd(4, a0 + kt * (TILE_BYTES / 2), 64);
    _tile_loadd(5, a1 + kt * (TILE_BYTES / 2), 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, b + TILE_BYTES / 2, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, s);
  _tile_stored(1, c + 16, s);
  _tile_stored(2, c + 16 * ldc, s);
  _tile_stored(3, c + 16 * ldc + 16, s);
  if (g->c_bf16) add_block_bf16(g, stage, m0, n0, mn, nn);
  else if (!whole)
    for (int64_t i = 0; i < mn; i++) memcpy(g->c + (m0 + i) * g->ldc + n0, stage + i * 32, (size_t)nn * 4);
}

typedef struct {
  const rt_amx_gemm_args *g;
  uint16_t *ap;
  int64_t mt_n, kt_n, nb_n;
} amx_job;

/* one thread's share: its A tiles, then its 32-column blocks */
AMX_FN static void worker(const amx_job *j, uint16_t *bp, int id, int nthreads) {
  tiles_on();
  for (int64_t t = id; t < j->mt_n * j->kt_n; t += nthreads)
    pack_a_tile(j->g, j->ap + t * (TILE_BYTES / 2), t / j->kt_n, t % j->kt_n);
#pragma omp barrier
  for (int64_t nb = id; nb < j->nb_n; nb += nthreads) {
    for (int64_t kt = 0; kt < j->kt_n; kt++) pack_b_tiles(j->g, bp + kt * TILE_BYTES, nb * 32, kt);
    for (int64_t m0 = 0; m0 < j->g->m; m0 += 32) block(j->g, j->ap, bp, j->kt_n, m0, nb * 32);
  }
  _tile_release();
}

/* the packed A, then one B block per thread */
static void layout(const rt_amx_gemm_args *g, int threads, amx_job *j, size_t *a_bytes, size_t *b_bytes) {
  j->g = g;
  j->mt_n = cdiv(g->m > 0 ? g->m : 0, 32) * 2;
  j->kt_n = cdiv(g->k > 0 ? g->k : 0, TK);
  j->nb_n = cdiv(g->n > 0 ? g->n : 0, 32);
  *a_bytes = (size_t)(j->mt_n * j->kt_n) * TILE_BYTES;
  *b_bytes = (size_t)j->kt_n * 2 * TILE_BYTES * (size_t)(threads < 1 ? 1 : threads);
}

/* A large packed A would cost as much memory as the operand itself (for
 * ubg_flce, half its chunk of logits), so the GEMM runs in slices whose
 * packed A stays within A_CAP: pieces of m (each packs B again: K x N x 2
 * bytes more) or of k (C goes to memory and back between them, in f32,
 * which loses nothing: M x N x 8 bytes more), whichever moves fewer bytes.
 * Same bits either way. A bf16 C is rounded once, after all of k: only
 * pieces of m for it, of at least one pair of m tiles. */
enum { A_CAP = 2 << 20 };
static void slices(const rt_amx_gemm_args *g, int64_t *ms, int64_t *ks) {
  const int64_t mt = cdiv(g->m > 0 ? g->m : 0, 32) * 2, kt = cdiv(g->k > 0 ? g->k : 0, TK), cap = A_CAP / TILE_BYTES;
  int64_t kts = kt, mts = mt;
  if (mt * kt > cap) {
    /* by m: pairs of m tiles over all of k, if a pair fits */
    const int64_t m_mts = kt * 2 <= cap ? (cap / kt) & ~(int64_t)1 : 0;
    const double m_cost = m_mts ? (double)(cdiv(mt, m_mts) - 1) * (double)g->k * (double)g->n * 2 : 1e300;
    /* by k: all of m over pieces of k, if all of m fits one tile wide */
    const int64_t k_kts = mt <= cap ? cap / mt : 0;
    const double k_cost = k_kts ? (double)(cdiv(kt, k_kts) - 1) * (double)g->m * (double)g->n * 8 : 1e300;
    if (g->c_bf16) {
      mts = m_mts ? m_mts : 2;
    } else if (m_mts && m_cost <= k_cost) {
      mts = m_mts;
    } else if (k_kts) {
      kts = k_kts;
    } else { /* both huge: one tile of k, as many m as fit */
      kts = 1;
      mts = cap & ~(int64_t)1;
    }
  }
  *ms = mts * TM, *ks = kts * TK;
}

static rt_amx_gemm_args slice_args(const rt_amx_gemm_args *g, int64_t m0, int64_t k0, int64_t ms, int64_t ks) {
  rt_amx_gemm_args s = *g;
  const size_t es = g->a_f32 ? 4 : 2;
  s.m = g->m - m0 < ms ? g->m - m0 : ms;
  s.k = g->k - k0 < ks ? g->k - k0 : ks;
  s.a = (const char *)g->a + (size_t)(g->a_kcontig ? m0 * g->lda + k0 : k0 * g->lda + m0) * es;
  s.b = g->b + (g->b_kcontig ? k0 : k0 * g->ldb);
  s.c = g->c ? g->c + m0 * g->ldc : NULL;
  s.c_bf16 = g->c_bf16 ? g->c_bf16 + m0 * g->ldc : NULL;
  s.accumulate = g->accumulate || k0 > 0;
  return s;
}

size_t rt_amx_gemm_scratch(const rt_amx_gemm_args *g, int threads) {
  int64_t ms, ks;
  slices(g, &ms, &ks);
  const rt_amx_gemm_args s = slice_args(g, 0, 0, ms, ks);
  amx_job j;
  size_t a, b;
  layout(&s, threads, &j, &a, &b);
  return a + b;
}

static void run(const rt_amx_gemm_args *g, int nt, void *scratch) {
  amx_job j;
  size_t a_bytes, b_bytes;
  layout(g, nt, &j, &a_bytes, &b_bytes);
  j.ap = scratch;
  uint16_t *bp = (uint16_t *)((char *)scratch + a_bytes);
  const size_t per_thread = b_bytes / (size_t)nt / 2;
#pragma omp parallel num_threads(nt)
  {
    int id = 0, n = 1;
#ifdef _OPENMP
    id = omp_get_thread_num(), n = omp_get_num_threads();
#endif
    worker(&j, bp + (size_t)id * per_thread, id, n);
  }
}

void rt_amx_gemm(const rt_amx_gemm_args *g, int threads, void *scratch) {
  if (g->m <= 0 || g->n <= 0) return;
  const int nt = threads < 1 ? 1 : threads;
  int64_t ms, ks;
  slices(g, &ms, &ks);
  for (int64_t m0 = 0; m0 < g->m; m0 += ms)
    for (int64_t k0 = 0; k0 < g->k || k0 == 0; k0 += ks) {
      const rt_amx_gemm_args s = slice_args(g, m0, k0, ms, ks);
      run(&s, nt, scratch);
    }
}

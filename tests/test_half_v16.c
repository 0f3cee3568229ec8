/* The prelude's 16-lane conversions (UBG_V16: AVX-512 with BF16) against its
 * scalar ones, which test_half checks against the reference: the kernels
 * take the vector path where it exists, tcc and the scalar tails take the
 * other, and both must give the same bits.
 *
 * Built with -march=$(MARCH) (mk/tests.mk), like the kernels; on a CPU
 * without AVX512-BF16 there is no vector path and the test says so.
 *
 *   f16 -> f32: all 65536 patterns;
 *   f32 -> f16 and bf16, rnd: every f32 whose bits are a multiple of 4099 and
 *   every f16 tie with its neighbours, 16 lanes at a time;
 *   the integer bf16 rounding of products: the same f32s, and every bf16
 *   value times ten factors;
 * each with MXCSR as it comes and with FTZ and DAZ set (a framework may set
 * them; the scalar code ignores them, so must the vector code). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <xmmintrin.h>

#include "prelude.h"

#ifdef UBG_V16

static float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static long logged; /* mismatches logged so far: the first 8 */
#define LOG_MISMATCH(...) (logged++ < 8 ? cr_log_error(__VA_ARGS__) : (void)0)

/* mismatches of one 16-lane chunk x[0..16) in every conversion; *sub_seen
 * counts bf16 chunks the vector path hands back (an f32 subnormal in it) */
static long check_chunk(const float *x, long *sub_seen) {
  long bad = 0;
  ubg_f32x16 v;
  memcpy(&v, x, 64);
  unsigned sub16 = 0, subb = 0;
  ubg_i16x16 h16 = ubg_v_to_f16(v, &sub16), hb = ubg_v_to_bf16(v, &subb);
  ubg_f32x16 r16 = ubg_v_rnd_f16(v, &sub16), rb = ubg_v_rnd_bf16(v, &subb);
  uint16_t g16[16], gb[16];
  float gr16[16], grb[16];
  memcpy(g16, &h16, 32);
  memcpy(gb, &hb, 32);
  memcpy(gr16, &r16, 64);
  memcpy(grb, &rb, 64);
  if (sub16) bad++, cr_log_error("the f16 conversion flagged an f32 subnormal (it never needs to)");
  for (int l = 0; l < 16; l++) {
    uint16_t w16 = ubg_f32_to_f16(x[l]), wb = ubg_f32_to_bf16(x[l]);
    if (g16[l] != w16 || bits_of(gr16[l]) != bits_of(ubg_rnd_f16(x[l]))) {
      bad++, LOG_MISMATCH("f32 0x%08x -> f16: vector 0x%04x, scalar 0x%04x", bits_of(x[l]), g16[l], w16);
    }
    if (!subb && (gb[l] != wb || bits_of(grb[l]) != bits_of(ubg_rnd_bf16(x[l])))) {
      bad++, LOG_MISMATCH("f32 0x%08x -> bf16: vector 0x%04x, scalar 0x%04x", bits_of(x[l]), gb[l], wb);
    }
  }
  *sub_seen += subb != 0;
  return bad;
}

static long sweep_encode(long *chunks, long *sub_seen) {
  long bad = 0;
  float x[16];
  int n = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    x[n++] = f32_of((uint32_t)u);
    if (n == 16) bad += check_chunk(x, sub_seen), n = 0, ++*chunks;
  }
  /* f16 ties (the midpoint above each finite f16) and one f32 ulp either side */
  for (uint32_t h = 0; h < 0x7c00; h++) {
    float t = ubg_f16_to_f32((ubg_u16)h), up = ubg_f16_to_f32((ubg_u16)(h + 1));
    float mid = t + (up - t) / 2; /* exact: the halving of an f16 ulp is an f32 */
    if (h == 0x7bff) mid = 65520.0f;
    float c[3] = {mid, nextafterf(mid, 1e30f), nextafterf(mid, 0.0f)};
    for (int k = 0; k < 3; k++) {
      x[n++] = (h & 1) ? -c[k] : c[k];
      if (n == 16) bad += check_chunk(x, sub_seen), n = 0, ++*chunks;
    }
  }
  return bad;
}

/* ubg_v_rnd_bf16_product: the scalar bits for every f32 but NaNs that are
 * signalling or have low 16 bits set (the sweep's), and for every product
 * of a bf16 value (all 65536) and a float factor, NaN products included:
 * the products the AttnRes scores round */
static long sweep_product(long *checked) {
  static const float factors[] = {1.0f, 0x1p-6f, 0.0027076504f, 3.0f, 1000.0f, 0x1p-140f, 0x1p100f, -0.3f, INFINITY, NAN};
  long bad = 0;
  float x[16];
  int n = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    const uint32_t a = (uint32_t)u & 0x7fffffffu;
    if (a > 0x7f800000u && (!(a & 0x00400000u) || (a & 0xffffu))) continue; /* outside its promise */
    x[n++] = f32_of((uint32_t)u);
    if (n < 16) continue;
    n = 0;
    ubg_f32x16 v;
    memcpy(&v, x, 64);
    const ubg_f32x16 r = ubg_v_rnd_bf16_product(v);
    for (int l = 0; l < 16; l++, ++*checked)
      if (bits_of(r[l]) != bits_of(ubg_rnd_bf16(x[l])))
        bad++, LOG_MISMATCH("rnd_bf16_product(0x%08x) = 0x%08x, scalar 0x%08x", bits_of(x[l]), bits_of(r[l]),
                            bits_of(ubg_rnd_bf16(x[l])));
  }
  for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++)
    for (uint32_t i = 0; i < 65536; i += 16) {
      uint16_t h[16];
      for (int l = 0; l < 16; l++) h[l] = (uint16_t)(i + l);
      const ubg_f32x16 p = ubg_v_ld_bf16(h, 0) * factors[f], r = ubg_v_rnd_bf16_product(p);
      for (int l = 0; l < 16; l++, ++*checked)
        if (bits_of(r[l]) != bits_of(ubg_rnd_bf16(p[l])))
          bad++, LOG_MISMATCH("rnd_bf16_product(bf16 0x%04x * %g = 0x%08x) = 0x%08x, scalar 0x%08x", h[l],
                              (double)factors[f], bits_of(p[l]), bits_of(r[l]), bits_of(ubg_rnd_bf16(p[l])));
    }
  return bad;
}

static long sweep_decode(void) {
  long bad = 0;
  for (uint32_t i = 0; i < 65536; i += 16) {
    uint16_t h[16];
    float g16[16], gb[16];
    for (int l = 0; l < 16; l++) h[l] = (uint16_t)(i + l);
    ubg_f32x16 v16 = ubg_v_ld_f16(h, 0), vb = ubg_v_ld_bf16(h, 0);
    memcpy(g16, &v16, 64);
    memcpy(gb, &vb, 64);
    for (int l = 0; l < 16; l++) {
      if (bits_of(g16[l]) != bits_of(ubg_f16_to_f32(h[l])))
        bad++, LOG_MISMATCH("f16 0x%04x -> vector 0x%08x, scalar 0x%08x", h[l], bits_of(g16[l]),
                            bits_of(ubg_f16_to_f32(h[l])));
      if (bits_of(gb[l]) != bits_of(ubg_bf16_to_f32(h[l])))
        bad++, LOG_MISMATCH("bf16 0x%04x -> vector 0x%08x, scalar 0x%08x", h[l], bits_of(gb[l]),
                            bits_of(ubg_bf16_to_f32(h[l])));
    }
  }
  return bad;
}

static void run_all(const char *mode) {
  long chunks = 0, sub_seen = 0, products = 0;
  long bad = sweep_decode() + sweep_encode(&chunks, &sub_seen) + sweep_product(&products);
  cr_assert_gt(products, 1000000, "%s: %ld products checked", mode, products);
  cr_assert_eq(bad, 0, "%s: %ld mismatches between the vector and scalar conversions", mode, bad);
  cr_assert_gt(chunks, 65000, "%s: the sweep ran %ld chunks", mode, chunks);
  /* the bf16 hand-back path was exercised: the sweep holds f32 subnormals */
  cr_assert_gt(sub_seen, 0, "%s", mode);
}

Test(half_v16, vector_conversions_give_the_scalar_bits) { run_all("MXCSR as it comes"); }

Test(half_v16, vector_conversions_ignore_ftz_and_daz) {
  unsigned int saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u); /* FTZ (bit 15) and DAZ (bit 6) */
  long chunks = 0, sub_seen = 0, products = 0;
  long bad = sweep_decode() + sweep_encode(&chunks, &sub_seen) + sweep_product(&products);
  _mm_setcsr(saved);
  cr_assert_eq(bad, 0, "FTZ|DAZ: %ld mismatches between the vector and scalar conversions", bad);
  cr_assert_gt(chunks, 65000);
}

#else

Test(half_v16, vector_conversions_give_the_scalar_bits) {
  cr_skip_test("this CPU (-march=native) has no AVX512-BF16: the kernels have no 16-lane conversions to check");
}

#endif

/* Storage conversions of templates/prelude.h (f16, bf16 <-> f32, rnd) against
 * the independent double-precision reference of tests/ref (frexp/ldexp).
 *
 * Sweeps run millions of comparisons, so failures are counted and the first
 * few logged, and each test ends with one assertion on the count: a passing
 * Criterion assertion per element would cost more than the conversions. */
#include <criterion/criterion.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif

#include "prelude.h"
#include "ref/ref.h"

/* ---- helpers -------------------------------------------------------------- */

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

typedef struct {
  const char *what;
  long fails;
} tally;

#define MAX_LOGGED 12

static void fail_at(tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_at(tally *t, const char *fmt, ...) {
  if (t->fails++ < MAX_LOGGED) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cr_log_error("%s: %s", t->what, msg);
  }
}

static void tally_done(const tally *t) {
  cr_assert_eq(t->fails, 0, "%s: %ld mismatches (first ones logged above)", t->what, t->fails);
}

static int is_f16_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0; }
static int is_bf16_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x007fu) != 0; }

/* One f32 -> f16 conversion against ref_round; also ubg_rnd_f16. */
static void check_to_f16(tally *t, float x) {
  uint32_t xb = bits_of(x);
  uint16_t g = ubg_f32_to_f16(x);
  float rnd = ubg_rnd_f16(x);
  if (isnan(x)) {
    if (!is_f16_nan(g)) fail_at(t, "f32 0x%08x (NaN) -> f16 0x%04x is not NaN", xb, g);
    else if ((g >> 15) != (xb >> 31)) fail_at(t, "f32 0x%08x (NaN) -> f16 0x%04x lost the sign", xb, g);
    else if (!(g & 0x0200u)) fail_at(t, "f32 0x%08x (NaN) -> f16 0x%04x: quiet bit not set", xb, g);
    if (!isnan(rnd)) fail_at(t, "ubg_rnd_f16(NaN 0x%08x) = %a is not NaN", xb, (double)rnd);
    return;
  }
  double want = ref_round((double)x, REF_F16);
  double got = ref_load(&g, 0, REF_F16);
  if (isnan(got) || got != want || !!signbit(got) != !!signbit(want))
    fail_at(t, "f32 0x%08x (%a) -> f16 0x%04x = %a, want %a", xb, (double)x, g, got, want);
  if ((double)rnd != want || !!signbit(rnd) != !!signbit(want))
    fail_at(t, "ubg_rnd_f16(0x%08x = %a) = %a, want %a", xb, (double)x, (double)rnd, want);
}

/* One f32 -> bf16 conversion against ref_round; also ubg_rnd_bf16. */
static void check_to_bf16(tally *t, float x) {
  uint32_t xb = bits_of(x);
  uint16_t g = ubg_f32_to_bf16(x);
  float rnd = ubg_rnd_bf16(x);
  if (isnan(x)) {
    if (!is_bf16_nan(g)) fail_at(t, "f32 0x%08x (NaN) -> bf16 0x%04x is not NaN", xb, g);
    else if ((g >> 15) != (xb >> 31)) fail_at(t, "f32 0x%08x (NaN) -> bf16 0x%04x lost the sign", xb, g);
    else if (!(g & 0x0040u)) fail_at(t, "f32 0x%08x (NaN) -> bf16 0x%04x: quiet bit not set", xb, g);
    if (!isnan(rnd)) fail_at(t, "ubg_rnd_bf16(NaN 0x%08x) = %a is not NaN", xb, (double)rnd);
    return;
  }
  double want = ref_round((double)x, REF_BF16);
  double got = ref_load(&g, 0, REF_BF16);
  if (isnan(got) || got != want || !!signbit(got) != !!signbit(want))
    fail_at(t, "f32 0x%08x (%a) -> bf16 0x%04x = %a, want %a", xb, (double)x, g, got, want);
  if ((double)rnd != want || !!signbit(rnd) != !!signbit(want))
    fail_at(t, "ubg_rnd_bf16(0x%08x = %a) = %a, want %a", xb, (double)x, (double)rnd, want);
}

static void check_both(tally *t16, tally *tb, float x) {
  check_to_f16(t16, x);
  check_to_bf16(tb, x);
  check_to_f16(t16, -x);
  check_to_bf16(tb, -x);
}

/* ---- (a) decoding every bit pattern ---------------------------------------- */

Test(half_decode, every_f16_pattern_matches_reference) {
  tally t = {"f16 -> f32", 0};
  long nans = 0, infs = 0, subs = 0;
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    float f = ubg_f16_to_f32(h);
    double want = ref_load(&h, 0, REF_F16);
    int neg = h >> 15;
    if (is_f16_nan(h)) {
      nans++;
      if (!isnan(f)) fail_at(&t, "0x%04x (NaN) -> %a is not NaN", h, (double)f);
      else if (!!signbit(f) != neg) fail_at(&t, "0x%04x (NaN) -> NaN lost the sign", h);
      else if (!(bits_of(f) & 0x00400000u)) fail_at(&t, "0x%04x (NaN) -> 0x%08x is not quiet", h, bits_of(f));
      continue;
    }
    if (isinf(want)) infs++;
    if ((h & 0x7c00u) == 0 && (h & 0x03ffu)) subs++;
    if ((double)f != want || !!signbit(f) != neg)
      fail_at(&t, "0x%04x -> %a, want %a", h, (double)f, want);
  }
  tally_done(&t);
  cr_assert_eq(nans, 2 * 1023, "the sweep saw %ld NaN patterns", nans);
  cr_assert_eq(infs, 2);
  cr_assert_eq(subs, 2 * 1023);
  /* a few fixed points, independent of the reference */
  cr_assert_eq(ubg_f16_to_f32(0x3c00), 1.0f);
  cr_assert_eq(ubg_f16_to_f32(0xc000), -2.0f);
  cr_assert_eq(ubg_f16_to_f32(0x7bff), 65504.0f);
  cr_assert_eq(ubg_f16_to_f32(0x0001), 0x1p-24f);
  cr_assert_eq(ubg_f16_to_f32(0x03ff), 0x3ffp-24f);
  cr_assert_eq(ubg_f16_to_f32(0x0400), 0x1p-14f);
  cr_assert_eq(bits_of(ubg_f16_to_f32(0x8000)), 0x80000000u);
  cr_assert_eq(bits_of(ubg_f16_to_f32(0x7c00)), 0x7f800000u);
  cr_assert_eq(bits_of(ubg_f16_to_f32(0xfc00)), 0xff800000u);
}

Test(half_decode, every_bf16_pattern_matches_reference) {
  tally t = {"bf16 -> f32", 0};
  long nans = 0;
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    float f = ubg_bf16_to_f32(h);
    double want = ref_load(&h, 0, REF_BF16);
    int neg = h >> 15;
    if (is_bf16_nan(h)) {
      nans++;
      if (!isnan(f)) fail_at(&t, "0x%04x (NaN) -> %a is not NaN", h, (double)f);
      else if (!!signbit(f) != neg) fail_at(&t, "0x%04x (NaN) -> NaN lost the sign", h);
      continue;
    }
    if ((double)f != want || !!signbit(f) != neg) fail_at(&t, "0x%04x -> %a, want %a", h, (double)f, want);
  }
  tally_done(&t);
  cr_assert_eq(nans, 2 * 127);
  cr_assert_eq(ubg_bf16_to_f32(0x3f80), 1.0f);
  cr_assert_eq(ubg_bf16_to_f32(0xc040), -3.0f);
  cr_assert_eq(bits_of(ubg_bf16_to_f32(0x7f7f)), 0x7f7f0000u);
  cr_assert_eq(bits_of(ubg_bf16_to_f32(0x0001)), 0x00010000u); /* subnormal kept */
  cr_assert_eq(bits_of(ubg_bf16_to_f32(0xff80)), 0xff800000u);
}

/* ---- (b) round trips ------------------------------------------------------- */

Test(half_roundtrip, f16_f32_f16_is_identity) {
  tally t = {"f16 -> f32 -> f16", 0};
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    uint16_t back = ubg_f32_to_f16(ubg_f16_to_f32(h));
    if (is_f16_nan(h)) {
      if (!is_f16_nan(back) || (back >> 15) != (h >> 15)) fail_at(&t, "NaN 0x%04x came back as 0x%04x", h, back);
    } else if (back != h) {
      fail_at(&t, "0x%04x came back as 0x%04x", h, back);
    }
  }
  tally_done(&t);
}

Test(half_roundtrip, bf16_f32_bf16_is_identity) {
  tally t = {"bf16 -> f32 -> bf16", 0};
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    uint16_t back = ubg_f32_to_bf16(ubg_bf16_to_f32(h));
    if (is_bf16_nan(h)) {
      if (!is_bf16_nan(back) || (back >> 15) != (h >> 15)) fail_at(&t, "NaN 0x%04x came back as 0x%04x", h, back);
    } else if (back != h) {
      fail_at(&t, "0x%04x came back as 0x%04x", h, back);
    }
  }
  tally_done(&t);
}

/* ---- (c) f32 -> f16 / bf16 against ref_round -------------------------------- */

/* every f32 whose bit pattern is a multiple of the prime 4099: ~1.05M values
 * spread over all exponents, both signs, NaNs and Infs included */
Test(half_encode, prime_stride_sweep_of_all_f32) {
  tally t16 = {"f32 -> f16 (stride)", 0}, tb = {"f32 -> bf16 (stride)", 0};
  long n = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    float x = f32_of((uint32_t)u);
    check_to_f16(&t16, x);
    check_to_bf16(&tb, x);
    n++;
  }
  tally_done(&t16);
  tally_done(&tb);
  cr_assert_gt(n, 1000000);
}

/* ulp of the f16 value with bit pattern h (0 <= h < 0x7c00) */
static double f16_ulp(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  return ldexp(1.0, (e ? e : 1) - 25);
}

/* the exact midpoint between every finite f16 and its successor (for 65504 the
 * overflow threshold 65520), and the f32 values one ulp either side */
Test(half_encode, f16_ties_and_neighbours) {
  tally t = {"f32 -> f16 (ties)", 0};
  long ties_down = 0, ties_up = 0;
  for (uint16_t h = 0; h < 0x7c00; h++) {
    double v = ref_load(&h, 0, REF_F16);
    double mid = v + f16_ulp(h) / 2;
    float x = (float)mid;
    cr_assert_eq((double)x, mid, "midpoint above 0x%04x is not an f32", h);
    float xs[3] = {x, nextafterf(x, INFINITY), nextafterf(x, 0.0f)};
    for (int k = 0; k < 3; k++) {
      check_to_f16(&t, xs[k]);
      check_to_f16(&t, -xs[k]);
    }
    /* the tie itself goes to the even neighbour, independent of ref_round */
    uint16_t g = ubg_f32_to_f16(x);
    uint16_t even = (h & 1) ? (uint16_t)(h + 1) : h;
    if (g != even) fail_at(&t, "tie above 0x%04x -> 0x%04x, want even 0x%04x", h, g, even);
    if (ubg_f32_to_f16(-x) != (uint16_t)(even | 0x8000u))
      fail_at(&t, "tie below -0x%04x -> 0x%04x", h, ubg_f32_to_f16(-x));
    if (ubg_f32_to_f16(xs[1]) != (uint16_t)(h + 1)) fail_at(&t, "just above tie of 0x%04x did not round up", h);
    if (ubg_f32_to_f16(xs[2]) != h) fail_at(&t, "just below tie of 0x%04x did not round down", h);
    if (g == h) ties_down++;
    else ties_up++;
  }
  tally_done(&t);
  cr_assert_eq(ties_down, 0x7c00 / 2);
  cr_assert_eq(ties_up, 0x7c00 / 2);
}

/* for bf16 the tie above pattern h is the f32 with bits (h << 16) | 0x8000 */
Test(half_encode, bf16_ties_and_neighbours) {
  tally t = {"f32 -> bf16 (ties)", 0};
  for (uint32_t h = 0; h < 0x7f80; h++) {
    uint32_t tie = (h << 16) | 0x8000u;
    uint32_t us[3] = {tie, tie + 1, tie - 1};
    for (int k = 0; k < 3; k++) {
      check_to_bf16(&t, f32_of(us[k]));
      check_to_bf16(&t, f32_of(us[k] | 0x80000000u));
    }
    uint16_t even = (uint16_t)((h & 1) ? h + 1 : h);
    uint16_t g = ubg_f32_to_bf16(f32_of(tie));
    if (g != even) fail_at(&t, "tie above 0x%04x -> 0x%04x, want 0x%04x", h, g, even);
    if (ubg_f32_to_bf16(f32_of(tie + 1)) != h + 1) fail_at(&t, "just above tie of 0x%04x did not round up", h);
    if (ubg_f32_to_bf16(f32_of(tie - 1)) != h) fail_at(&t, "just below tie of 0x%04x did not round down", h);
  }
  tally_done(&t);
}

/* every f32 in the f16 subnormal range and across its boundary with the
 * normals, [2^-26, 2^-13], at a stride of 127 ulps (the ties are in the tests above) */
Test(half_encode, f16_subnormal_range_dense) {
  tally t16 = {"f32 -> f16 (subnormal range)", 0}, tb = {"f32 -> bf16 (subnormal range)", 0};
  uint32_t lo = bits_of(0x1p-26f), hi = bits_of(0x1p-13f);
  for (uint32_t u = lo; u <= hi; u += 127) check_both(&t16, &tb, f32_of(u));
  tally_done(&t16);
  tally_done(&tb);
}

/* f32 subnormals: signed zero in f16, kept (rounded) in bf16 */
Test(half_encode, f32_subnormals) {
  tally t16 = {"f32 subnormal -> f16", 0}, tb = {"f32 subnormal -> bf16", 0};
  long kept = 0;
  for (uint32_t u = 1; u < 0x00800000u; u += 97) {
    for (int neg = 0; neg < 2; neg++) {
      uint32_t s = neg ? 0x80000000u : 0;
      float x = f32_of(u | s);
      uint16_t g = ubg_f32_to_f16(x), b = ubg_f32_to_bf16(x);
      if (g != (s >> 16)) fail_at(&t16, "0x%08x -> 0x%04x, want signed zero", u | s, g);
      if ((b & 0x8000u) != (s >> 16)) fail_at(&tb, "0x%08x -> 0x%04x lost the sign", u | s, b);
      if (u > 0x8000u && !(b & 0x7fffu)) fail_at(&tb, "0x%08x -> 0x%04x flushed to zero", u | s, b);
      kept += (b & 0x7fffu) != 0;
      check_to_f16(&t16, x);
      check_to_bf16(&tb, x);
    }
  }
  tally_done(&t16);
  tally_done(&tb);
  cr_assert_gt(kept, 170000);
}

typedef struct {
  uint32_t in;
  uint16_t f16, bf16;
} fixed_case;

/* concrete expected encodings, independent of the reference */
static const fixed_case fixed[] = {
    {0x00000000u, 0x0000, 0x0000},              /* +0 */
    {0x80000000u, 0x8000, 0x8000},              /* -0 */
    {0x3f800000u, 0x3c00, 0x3f80},              /* 1 */
    {0xc0000000u, 0xc000, 0xc000},              /* -2 */
    {0x7f800000u, 0x7c00, 0x7f80},              /* +Inf */
    {0xff800000u, 0xfc00, 0xff80},              /* -Inf */
    {0x38800000u, 0x0400, 0x3880},              /* 2^-14: smallest normal f16 */
    {0x387fc000u, 0x03ff, 0x3880},              /* 1023 * 2^-24: largest subnormal f16 */
    {0x387fe000u, 0x0400, 0x3880},              /* tie largest subnormal / 2^-14 -> even (0x400) */
    {0x387fdfffu, 0x03ff, 0x3880},              /* just below that tie */
    {0x33800000u, 0x0001, 0x3380},              /* 2^-24: smallest subnormal f16 */
    {0x33000000u, 0x0000, 0x3300},              /* 2^-25: tie 0 / 2^-24 -> 0 (even) */
    {0x33000001u, 0x0001, 0x3300},              /* just above 2^-25 */
    {0x32ffffffu, 0x0000, 0x3300},              /* just below 2^-25 */
    {0xb3000001u, 0x8001, 0xb300},              /* -(just above 2^-25) */
    {0xb2ffffffu, 0x8000, 0xb300},              /* -(just below 2^-25) -> -0 */
    {0x33c00000u, 0x0002, 0x33c0},              /* 1.5 * 2^-24: tie 1 / 2 -> 2 */
    {0x34200000u, 0x0002, 0x3420},              /* 2.5 * 2^-24: tie 2 / 3 -> 2 */
    {0x477fe000u, 0x7bff, 0x4780},              /* 65504: f16 max */
    {0x477fefffu, 0x7bff, 0x4780},              /* 65519.996: still max */
    {0x477ff000u, 0x7c00, 0x4780},              /* 65520: tie max / 2^16 -> Inf */
    {0x47800000u, 0x7c00, 0x4780},              /* 65536 */
    {0xc77ff000u, 0xfc00, 0xc780},              /* -65520 -> -Inf */
    {0x501502f9u, 0x7c00, 0x5015},              /* 1e10 */
    {0x7f7fffffu, 0x7c00, 0x7f80},              /* FLT_MAX: rounds up past bf16 max */
    {0x7f7f0000u, 0x7c00, 0x7f7f},              /* bf16 max */
    {0x7f7f7fffu, 0x7c00, 0x7f7f},              /* just below the bf16 round-up threshold */
    {0x7f7f8000u, 0x7c00, 0x7f80},              /* bf16 threshold: tie max / 2^128 -> Inf */
    {0xff7f8000u, 0xfc00, 0xff80},              /* its negative */
    {0x00800000u, 0x0000, 0x0080},              /* FLT_MIN */
    {0x00000001u, 0x0000, 0x0000},              /* FLT_TRUE_MIN: tie-free, rounds to 0 */
    {0x80000001u, 0x8000, 0x8000},              /* -FLT_TRUE_MIN -> -0 */
    {0x00008000u, 0x0000, 0x0000},              /* f32 subnormal, bf16 tie 0 / 1 -> 0 */
    {0x00008001u, 0x0000, 0x0001},              /* f32 subnormal kept in bf16 */
    {0x00018000u, 0x0000, 0x0002},              /* bf16 tie 1 / 2 -> 2 */
    {0x00400000u, 0x0000, 0x0040},              /* f32 subnormal 2^-127 */
    {0x807fffffu, 0x8000, 0x8080},              /* -largest f32 subnormal -> -FLT_MIN in bf16 */
    {0x3f808000u, 0x3c04, 0x3f80},              /* 1 + 2^-8: bf16 tie -> even (1) */
    {0x3f818000u, 0x3c0c, 0x3f82},              /* 1 + 3 * 2^-8: bf16 tie -> even (up) */
    {0x3f801000u, 0x3c00, 0x3f80},              /* 1 + 2^-11: f16 tie -> even (1) */
    {0x3f803000u, 0x3c02, 0x3f80},              /* 1 + 3 * 2^-11: f16 tie -> even (up) */
};

Test(half_encode, fixed_edge_cases) {
  tally t16 = {"f32 -> f16 (edges)", 0}, tb = {"f32 -> bf16 (edges)", 0};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    float x = f32_of(fixed[i].in);
    uint16_t g16 = ubg_f32_to_f16(x), gb = ubg_f32_to_bf16(x);
    if (g16 != fixed[i].f16) fail_at(&t16, "f32 0x%08x (%a) -> 0x%04x, want 0x%04x", fixed[i].in, (double)x, g16, fixed[i].f16);
    if (gb != fixed[i].bf16) fail_at(&tb, "f32 0x%08x (%a) -> 0x%04x, want 0x%04x", fixed[i].in, (double)x, gb, fixed[i].bf16);
    check_to_f16(&t16, x);
    check_to_bf16(&tb, x);
  }
  /* rnd of the edges, as values */
  cr_assert_eq(ubg_rnd_f16(65519.99f), 65504.0f);
  cr_assert(isinf(ubg_rnd_f16(65520.0f)) && ubg_rnd_f16(65520.0f) > 0);
  cr_assert_eq(ubg_rnd_f16(0x1p-25f), 0.0f);
  cr_assert_eq(ubg_rnd_f16(0x1.000002p-25f), 0x1p-24f);
  cr_assert_eq(ubg_rnd_bf16(0x1p-149f), 0.0f);
  cr_assert_eq(bits_of(ubg_rnd_bf16(f32_of(0x00008001u))), 0x00010000u);
  cr_assert_eq(bits_of(ubg_rnd_f32(f32_of(0x00000001u))), 0x00000001u);
  cr_assert_eq(bits_of(ubg_rnd_f32(-0.0f)), 0x80000000u);
  tally_done(&t16);
  tally_done(&tb);
}

Test(half_encode, nan_payloads_stay_nan_with_sign) {
  static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fa00000u,
                                  0xffa00000u, 0x7f812345u, 0xff812345u, 0x7fffffffu, 0xffffffffu,
                                  0x7f802000u, 0x7fbfffffu, 0x7f801fffu, 0x7fc0ffffu, 0x80000000u | 0x7f800100u};
  tally t16 = {"f32 NaN -> f16", 0}, tb = {"f32 NaN -> bf16", 0};
  for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
    float x = f32_of(nans[i]);
    cr_assert(isnan(x));
    check_to_f16(&t16, x);
    check_to_bf16(&tb, x);
  }
  tally_done(&t16);
  tally_done(&tb);
  /* payload bits that fit are kept (quiet bit set), so NaN -> f16 -> f32 stays NaN */
  cr_assert_eq(ubg_f32_to_f16(f32_of(0x7fc00000u)), 0x7e00);
  cr_assert_eq(ubg_f32_to_f16(f32_of(0xffc00000u)), 0xfe00);
  cr_assert_eq(ubg_f32_to_bf16(f32_of(0x7fc00000u)), 0x7fc0);
  cr_assert_eq(ubg_f32_to_bf16(f32_of(0xffc00000u)), 0xffc0);
  cr_assert(isnan(ubg_f16_to_f32(ubg_f32_to_f16(f32_of(0x7f800001u)))));
  cr_assert(isnan(ubg_bf16_to_f32(ubg_f32_to_bf16(f32_of(0x7f800001u)))));
}

/* ---- typed loads and stores -------------------------------------------------- */

Test(half_memory, loads_and_stores_use_the_conversions) {
  float src[6] = {1.0f, -0.0f, 65520.0f, 0x1p-25f, 0x1.000002p-25f, 3.14159265f};
  ubg_u16 h[6], b[6];
  float f[6];
  for (int i = 0; i < 6; i++) {
    ubg_st_f16(h, i, src[i]);
    ubg_st_bf16(b, i, src[i]);
    ubg_st_f32(f, i, src[i]);
  }
  static const ubg_u16 want_h[6] = {0x3c00, 0x8000, 0x7c00, 0x0000, 0x0001, 0x4248};
  static const ubg_u16 want_b[6] = {0x3f80, 0x8000, 0x4780, 0x3300, 0x3300, 0x4049};
  for (int i = 0; i < 6; i++) {
    cr_expect_eq(h[i], want_h[i], "st_f16[%d] = 0x%04x, want 0x%04x", i, h[i], want_h[i]);
    cr_expect_eq(b[i], want_b[i], "st_bf16[%d] = 0x%04x, want 0x%04x", i, b[i], want_b[i]);
    cr_expect_eq(bits_of(ubg_ld_f16(h, i)), bits_of(ubg_f16_to_f32(want_h[i])));
    cr_expect_eq(bits_of(ubg_ld_bf16(b, i)), bits_of(ubg_bf16_to_f32(want_b[i])));
    cr_expect_eq(bits_of(ubg_ld_f32(f, i)), bits_of(src[i]));
  }
}

/* ---- independence from the FPU's rounding mode and FTZ/DAZ ------------------ */

#define NSAMPLE 40000

typedef struct {
  float x[NSAMPLE];
  uint16_t want16[NSAMPLE], wantb[NSAMPLE];
  uint32_t want_dec16[NSAMPLE], want_decb[NSAMPLE];
  uint16_t got16[NSAMPLE], gotb[NSAMPLE];
  uint32_t got_dec16[NSAMPLE], got_decb[NSAMPLE];
} mode_sample;

static mode_sample S;

/* samples: f16 ties and their neighbours, bf16 ties, f32 subnormals, a stride */
static void build_sample(void) {
  int n = 0;
  for (uint16_t h = 0; h < 0x7c00 && n + 3 <= NSAMPLE / 2; h += 3) {
    double v = ref_load(&h, 0, REF_F16);
    float x = (float)(v + f16_ulp(h) / 2);
    S.x[n++] = (h & 4) ? -x : x;
    S.x[n++] = nextafterf(x, INFINITY);
    S.x[n++] = nextafterf(x, 0.0f);
  }
  for (uint32_t h = 0; h < 0x7f80 && n + 2 <= 3 * NSAMPLE / 4; h += 5) {
    S.x[n++] = f32_of((h << 16) | 0x8000u);
    S.x[n++] = f32_of(((h << 16) | 0x8000u) ^ 0x80000000u);
  }
  for (uint32_t k = 1; n < NSAMPLE; k++) S.x[n++] = f32_of(k * 2654435761u); /* Knuth's multiplicative hash */
  /* the expected results, in round-to-nearest, from the reference */
  for (int i = 0; i < NSAMPLE; i++) {
    float x = S.x[i];
    if (isnan(x)) {
      S.want16[i] = 0xffff; /* marks NaN: compared as "is NaN with sign" */
      S.wantb[i] = 0xffff;
    } else {
      ref_store(&S.want16[i], 0, REF_F16, (double)x);
      ref_store(&S.wantb[i], 0, REF_BF16, (double)x);
    }
    uint16_t h = (uint16_t)bits_of(x), b = (uint16_t)(bits_of(x) >> 16);
    float d16 = (float)ref_load(&h, 0, REF_F16), db = (float)ref_load(&b, 0, REF_BF16);
    S.want_dec16[i] = bits_of(d16);
    S.want_decb[i] = bits_of(db);
  }
}

static void run_sample(void) {
  for (int i = 0; i < NSAMPLE; i++) {
    volatile float x = S.x[i];
    uint32_t u = bits_of(x);
    S.got16[i] = ubg_f32_to_f16(x);
    S.gotb[i] = ubg_f32_to_bf16(x);
    S.got_dec16[i] = bits_of(ubg_f16_to_f32((ubg_u16)u));
    S.got_decb[i] = bits_of(ubg_bf16_to_f32((ubg_u16)(u >> 16)));
  }
}

static void compare_sample(tally *t, const char *mode) {
  for (int i = 0; i < NSAMPLE; i++) {
    uint32_t xb = bits_of(S.x[i]);
    uint16_t h = (uint16_t)xb, b = (uint16_t)(xb >> 16);
    if (isnan(S.x[i])) {
      if (!is_f16_nan(S.got16[i]) || !is_bf16_nan(S.gotb[i]))
        fail_at(t, "%s: NaN 0x%08x -> f16 0x%04x bf16 0x%04x", mode, xb, S.got16[i], S.gotb[i]);
    } else {
      if (S.got16[i] != S.want16[i])
        fail_at(t, "%s: f32 0x%08x -> f16 0x%04x, want 0x%04x", mode, xb, S.got16[i], S.want16[i]);
      if (S.gotb[i] != S.wantb[i])
        fail_at(t, "%s: f32 0x%08x -> bf16 0x%04x, want 0x%04x", mode, xb, S.gotb[i], S.wantb[i]);
    }
    /* decoding: NaN patterns compare as NaN, the rest bit for bit */
    if (is_f16_nan(h) ? !isnan(f32_of(S.got_dec16[i])) : S.got_dec16[i] != S.want_dec16[i])
      fail_at(t, "%s: f16 0x%04x -> 0x%08x, want 0x%08x", mode, h, S.got_dec16[i], S.want_dec16[i]);
    if (is_bf16_nan(b) ? !isnan(f32_of(S.got_decb[i])) : S.got_decb[i] != S.want_decb[i])
      fail_at(t, "%s: bf16 0x%04x -> 0x%08x, want 0x%08x", mode, b, S.got_decb[i], S.want_decb[i]);
  }
}

Test(half_fpenv, rounding_does_not_follow_the_fpu_rounding_mode) {
  cr_assert_eq(fegetround(), FE_TONEAREST);
  build_sample();
  tally t = {"FPU rounding mode", 0};
  static const struct {
    int mode;
    const char *name;
  } modes[] = {{FE_TONEAREST, "FE_TONEAREST"}, {FE_UPWARD, "FE_UPWARD"}, {FE_TOWARDZERO, "FE_TOWARDZERO"},
               {FE_DOWNWARD, "FE_DOWNWARD"}};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    cr_assert_eq(fesetround(modes[m].mode), 0, "fesetround(%s) failed", modes[m].name);
    run_sample();
    int now = fegetround();
    fesetround(FE_TONEAREST); /* restore before any assertion or reference call */
    cr_assert_eq(now, modes[m].mode, "the rounding mode did not stick");
    compare_sample(&t, modes[m].name);
  }
  cr_assert_eq(fegetround(), FE_TONEAREST);
  tally_done(&t);
}

#ifdef HAVE_MXCSR
Test(half_fpenv, conversions_ignore_ftz_and_daz) {
  build_sample();
  tally t = {"FTZ/DAZ", 0};
  unsigned int saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u); /* FTZ (bit 15) and DAZ (bit 6) */
  run_sample();
  _mm_setcsr(saved);
  compare_sample(&t, "FTZ|DAZ");
  tally_done(&t);
  /* the sample really held f32 subnormals that bf16 keeps */
  int kept = 0;
  for (int i = 0; i < NSAMPLE; i++)
    if (fpclassify(S.x[i]) == FP_SUBNORMAL && (S.gotb[i] & 0x7fffu)) kept++;
  cr_assert_gt(kept, 0);
}
#endif

/* Attention residuals against the double-precision reference: every
 * feasible variant (forced with ubg_set_variant) at Liger-Kernel's test
 * shapes (N, B, T, D) = (4,2,64,4096), (8,2,64,4096), (4,2,64,8192),
 * (3,5,37,123), plus N = 1, D = 1, T = 1 and more blocks than Liger's
 * largest MAX_BLOCKS; all dtypes; every variant gives the same bits as every
 * other; 1 and 2 threads give the same bits; bad arguments are refused with
 * outputs untouched. Edge data (subnormal products and squares, Inf and
 * NaN, MXCSR modes) gives the same bits on AOT, gcc and tcc.
 *
 * Inputs as Liger's test_attn_res.py: v ~ N(0, 1), w_query ~ 0.02 N(0, 1);
 * w_norm = 1 + 0.1 N(0, 1) (Liger uses ones, which would hide a w_norm
 * bug). The backward gets alpha and rstd from the reference forward, and
 * dout ~ N(0, 1). Tolerances are Liger's: forward (out, and alpha, rstd)
 * f32 1e-4/1e-5, f16 1e-2/1e-3, bf16 1e-1/1e-2; backward (dv, and dw_query,
 * dw_norm, which Liger does not check) f32 1e-3/1e-4, f16 5e-2/5e-3, bf16
 * 2e-1/2e-2. */
#include <criterion/criterion.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#include <stdio.h>

#include "test_util.h"

static const double fwd_atol[3] = {1e-4, 1e-2, 1e-1}, fwd_rtol[3] = {1e-5, 1e-3, 1e-2};
static const double bwd_atol[3] = {1e-3, 5e-2, 2e-1}, bwd_rtol[3] = {1e-4, 5e-3, 2e-2};

typedef struct {
  int64_t nb, tokens, dim;
} ar_shape;


/* a variant applies when it holds nblocks scores and, non-tiled, the row */
static int applies(const ug_variant *v, const ar_shape *s) { return tc_applies(v, s->dim) && v->pt.axis[1] >= s->nb; }

static void expect_close(const char *what, const void *got, int dt, const double *want, int64_t n, double atol,
                         double rtol, const char *variant, const char *where) {
  tc_assert_close(got, dt, want, n, atol, rtol, "%s %s (atol %g, rtol %g): %s", variant, where, atol, rtol, what);
}

typedef struct {
  void *v, *wq, *wn, *dout;
  double *out, *alpha, *rstd; /* reference forward */
  float *alpha_f, *rstd_f;    /* the same, as the f32 tensors the backward takes */
} inputs;

/* the reference forward of in's tensors, and its alpha and rstd as f32 */
static void add_reference(inputs *in_, int dt, const ar_shape *s);

static inputs make_inputs(int dt, const ar_shape *s) {
  inputs in;
  uint64_t seed = (uint64_t)(s->nb * 1009 + s->tokens * 31 + s->dim);
  in.v = tc_tensor(dt, s->nb * s->tokens * s->dim, 0, 1, seed);
  in.wq = tc_tensor(dt, s->dim, 0, 0.02, seed + 1);
  in.wn = tc_tensor(dt, s->dim, 1, 0.1, seed + 2);
  in.dout = tc_tensor(dt, s->tokens * s->dim, 0, 1, seed + 3);
  add_reference(&in, dt, s);
  return in;
}

static void add_reference(inputs *in_, int dt, const ar_shape *s) {
  inputs in = *in_;
  const int64_t nt = s->tokens * s->nb;
  in.out = malloc((size_t)(s->tokens * s->dim + 1) * sizeof(double));
  in.alpha = malloc((size_t)(nt + 1) * sizeof(double));
  in.rstd = malloc((size_t)(nt + 1) * sizeof(double));
  ref_slot a[10] = {{.p = in.v}, {.p = in.wq}, {.p = in.wn}, {.p = NULL}, {.p = NULL}, {.p = NULL},
                    {.i = s->nb}, {.i = s->tokens}, {.i = s->dim}, {.f = 1e-6}};
  double *outs[10] = {0};
  outs[3] = in.out, outs[4] = in.alpha, outs[5] = in.rstd;
  ref_find("attn_res", "fwd")->fn(a, dt, outs);
  in.alpha_f = malloc((size_t)(nt + 1) * 4);
  in.rstd_f = malloc((size_t)(nt + 1) * 4);
  for (int64_t i = 0; i < nt; i++) in.alpha_f[i] = (float)in.alpha[i], in.rstd_f[i] = (float)in.rstd[i];
  *in_ = in;
}

static void free_inputs(inputs *in) {
  free(in->v), free(in->wq), free(in->wn), free(in->dout), free(in->out), free(in->alpha), free(in->rstd);
  free(in->alpha_f), free(in->rstd_f);
}

/* every variant that applies to s on backend, the results within the
 * tolerances of in's reference and bitwise equal to those of *first (set
 * by the first variant run: NULL on entry, or the bits of a sweep before) */
typedef struct {
  char name[400]; /* "": none yet */
  void *t[3];     /* out, alpha, rstd; or dv, dw_query, dw_norm */
} first_result;

/* a sweep's first result, if fr has none yet: its name and where, and its
 * three tensors (fr owns them now; the caller's pointers are NULLed) */
static void keep_first(first_result *fr, const char *first, const char *where, void **t0, void **t1, void **t2) {
  if (fr->name[0]) return;
  snprintf(fr->name, sizeof fr->name, "%.200s on %.127s", first, where);
  fr->t[0] = *t0, fr->t[1] = *t1, fr->t[2] = *t2, *t0 = *t1 = *t2 = NULL;
}

static void sweep_fwd_on(int dt, const ar_shape *s, const inputs *in_, ubg_backend backend, first_result *fr) {
  const int64_t nb = s->nb, t = s->tokens, d = s->dim, nt = nb * t;
  const size_t es = ref_dtype_bytes(dt), ob = (size_t)(t * d) * es + 1, ab = (size_t)nt * 4 + 1;
  char where[128];
  snprintf(where, sizeof where, "N=%lld tokens=%lld D=%lld %s %s", (long long)nb, (long long)t, (long long)d,
           ug_dtype_name(dt), backend == UBG_BACKEND_TCC ? "tcc" : "aot");
  const inputs in = *in_;
  void *out = malloc(ob), *out1 = malloc(ob), *out2 = malloc(ob);
  float *alpha = malloc(ab), *rstd = malloc(ab), *alpha1 = malloc(ab), *rstd1 = malloc(ab), *alpha2 = malloc(ab),
        *rstd2 = malloc(ab);
  ubg_ctx *one = tc_ctx(backend, 1), *two = tc_ctx(backend, 2);
  tc_variants vs = tc_kernel_variants("attn_res", "fwd", dt);
  const char *first = fr->name[0] ? fr->name : NULL;
  if (first) memcpy(out1, fr->t[0], ob), memcpy(alpha1, fr->t[1], ab), memcpy(rstd1, fr->t[2], ab);
  int ran = 0;
  for (int i = 0; i < vs.n; i++) {
    const ug_variant *var = &vs.v[i];
    if (!applies(var, s)) continue;
    cr_assert_eq(ubg_set_variant(one, "attn_res", "fwd", var->name), UBG_OK, "%s", ubg_ctx_error(one));
    memset(out, 0xff, ob), memset(alpha, 0xff, ab), memset(rstd, 0xff, ab);
    cr_assert_eq(ubg_attn_res_fwd(one, dt, nb, t, d, in.v, in.wq, in.wn, 1e-6f, out, alpha, rstd), UBG_OK, "%s %s: %s",
                 var->name, where, ubg_ctx_error(one));
    bool same = first && !memcmp(out, out1, ob - 1) && !memcmp(alpha, alpha1, ab - 1) && !memcmp(rstd, rstd1, ab - 1);
    if (!same) {
      expect_close("out", out, dt, in.out, t * d, fwd_atol[dt], fwd_rtol[dt], var->name, where);
      expect_close("alpha", alpha, REF_F32, in.alpha, nt, fwd_atol[dt], fwd_rtol[dt], var->name, where);
      expect_close("rstd", rstd, REF_F32, in.rstd, nt, fwd_atol[dt], fwd_rtol[dt], var->name, where);
      cr_assert(!first, "%s %s: within tolerance but not bitwise equal to %s", var->name, where, first);
      first = var->name;
      memcpy(out1, out, ob), memcpy(alpha1, alpha, ab), memcpy(rstd1, rstd, ab);
    }
    if (ran++ % 3 == 0 && t > 1) {
      cr_assert_eq(ubg_set_variant(two, "attn_res", "fwd", var->name), UBG_OK);
      memset(out2, 0, ob);
      cr_assert_eq(ubg_attn_res_fwd(two, dt, nb, t, d, in.v, in.wq, in.wn, 1e-6f, out2, alpha2, rstd2), UBG_OK);
      cr_assert(!memcmp(out, out2, ob - 1) && !memcmp(alpha, alpha2, ab - 1) && !memcmp(rstd, rstd2, ab - 1),
                "%s %s: 2 threads differ", var->name, where);
    }
  }
  cr_assert(ran > 0, "no variant applies to %s", where);
  keep_first(fr, first, where, &out1, (void **)&alpha1, (void **)&rstd1);
  tc_free_variants(&vs);
  ubg_ctx_destroy(one), ubg_ctx_destroy(two);
  free(out), free(out1), free(out2), free(alpha), free(rstd), free(alpha1), free(rstd1), free(alpha2), free(rstd2);
}

static void free_first(first_result *fr) { free(fr->t[0]), free(fr->t[1]), free(fr->t[2]); }

static void sweep_bwd_on(int dt, const ar_shape *s, const inputs *in_, ubg_backend backend, first_result *fr) {
  const int64_t nb = s->nb, t = s->tokens, d = s->dim, nv = nb * t * d;
  const size_t es = ref_dtype_bytes(dt), vb = (size_t)nv * es + 1, wb = (size_t)d * es;
  char where[128];
  snprintf(where, sizeof where, "N=%lld tokens=%lld D=%lld %s %s", (long long)nb, (long long)t, (long long)d,
           ug_dtype_name(dt), backend == UBG_BACKEND_TCC ? "tcc" : "aot");
  const inputs in = *in_;
  double *ref_dv = malloc((size_t)(nv + 1) * sizeof(double)), *ref_dwq = malloc((size_t)d * sizeof(double)),
         *ref_dwn = malloc((size_t)d * sizeof(double));
  ref_slot a[12] = {{.p = in.dout}, {.p = in.v},    {.p = in.wq},   {.p = in.wn},    {.p = in.alpha_f}, {.p = in.rstd_f},
                    {.p = NULL},    {.p = NULL},    {.p = NULL},    {.i = nb},       {.i = t},          {.i = d}};
  double *outs[12] = {0};
  outs[6] = ref_dv, outs[7] = ref_dwq, outs[8] = ref_dwn;
  ref_find("attn_res", "bwd")->fn(a, dt, outs);
  void *dv = malloc(vb), *dv1 = malloc(vb), *dv2 = malloc(vb);
  void *dwq = malloc(wb), *dwn = malloc(wb), *dwq1 = malloc(wb), *dwn1 = malloc(wb), *dwq2 = malloc(wb),
       *dwn2 = malloc(wb);
  ubg_ctx *one = tc_ctx(backend, 1), *two = tc_ctx(backend, 2);
  tc_variants vs = tc_kernel_variants("attn_res", "bwd", dt);
  const char *first = fr->name[0] ? fr->name : NULL;
  if (first) memcpy(dv1, fr->t[0], vb), memcpy(dwq1, fr->t[1], wb), memcpy(dwn1, fr->t[2], wb);
  int ran = 0;
  for (int i = 0; i < vs.n; i++) {
    const ug_variant *var = &vs.v[i];
    if (!applies(var, s)) continue;
    cr_assert_eq(ubg_set_variant(one, "attn_res", "bwd", var->name), UBG_OK, "%s", ubg_ctx_error(one));
    memset(dv, 0xff, vb), memset(dwq, 0xff, wb), memset(dwn, 0xff, wb);
    cr_assert_eq(ubg_attn_res_bwd(one, dt, nb, t, d, in.dout, in.v, in.wq, in.wn, in.alpha_f, in.rstd_f, dv, dwq, dwn),
                 UBG_OK, "%s %s: %s", var->name, where, ubg_ctx_error(one));
    bool same = first && !memcmp(dv, dv1, vb - 1) && !memcmp(dwq, dwq1, wb) && !memcmp(dwn, dwn1, wb);
    if (!same) {
      expect_close("dv", dv, dt, ref_dv, nv, bwd_atol[dt], bwd_rtol[dt], var->name, where);
      expect_close("dw_query", dwq, dt, ref_dwq, d, bwd_atol[dt], bwd_rtol[dt], var->name, where);
      expect_close("dw_norm", dwn, dt, ref_dwn, d, bwd_atol[dt], bwd_rtol[dt], var->name, where);
      cr_assert(!first, "%s %s: within tolerance but not bitwise equal to %s", var->name, where, first);
      first = var->name;
      memcpy(dv1, dv, vb), memcpy(dwq1, dwq, wb), memcpy(dwn1, dwn, wb);
    }
    if (ran++ % 3 == 0 && t > 1) {
      cr_assert_eq(ubg_set_variant(two, "attn_res", "bwd", var->name), UBG_OK);
      memset(dv2, 0, vb);
      cr_assert_eq(
          ubg_attn_res_bwd(two, dt, nb, t, d, in.dout, in.v, in.wq, in.wn, in.alpha_f, in.rstd_f, dv2, dwq2, dwn2),
          UBG_OK);
      cr_assert(!memcmp(dv, dv2, vb - 1) && !memcmp(dwq, dwq2, wb) && !memcmp(dwn, dwn2, wb),
                "%s %s: 2 threads differ", var->name, where);
    }
  }
  cr_assert(ran > 0, "no variant applies to %s", where);
  keep_first(fr, first, where, &dv1, &dwq1, &dwn1);
  tc_free_variants(&vs);
  ubg_ctx_destroy(one), ubg_ctx_destroy(two);
  free(ref_dv), free(ref_dwq), free(ref_dwn), free(dv), free(dv1), free(dv2);
  free(dwq), free(dwn), free(dwq1), free(dwn1), free(dwq2), free(dwn2);
}

/* a pass's sweep on random inputs, the built-in backend */
typedef void sweep_on_fn(int dt, const ar_shape *s, const inputs *in, ubg_backend backend, first_result *fr);
static void sweep(sweep_on_fn *on, int dt, const ar_shape *s) {
  inputs in = make_inputs(dt, s);
  first_result fr = {0};
  on(dt, s, &in, UBG_BACKEND_AUTO, &fr);
  free_first(&fr);
  free_inputs(&in);
}

#define SHAPE_TESTS(name, N, TOK, D)                                                      \
  Test(attn_res_fwd, name, .timeout = 300 * TC_TIME_SCALE) {                                              \
    const ar_shape s = {N, TOK, D};                                                       \
    tc_skip_if_large((int64_t)(N) * (TOK) * (D), #name);                                  \
    for (int dt = 0; dt < 3; dt++) sweep(sweep_fwd_on, dt, &s);                           \
  }                                                                                       \
  Test(attn_res_bwd, name, .timeout = 300 * TC_TIME_SCALE) {                                              \
    const ar_shape s = {N, TOK, D};                                                       \
    tc_skip_if_large((int64_t)(N) * (TOK) * (D), #name);                                  \
    for (int dt = 0; dt < 3; dt++) sweep(sweep_bwd_on, dt, &s);                           \
  }

/* tokens = B x T */
SHAPE_TESTS(n4_b2_t64_d4096, 4, 128, 4096)
SHAPE_TESTS(n8_b2_t64_d4096, 8, 128, 4096)
SHAPE_TESTS(n4_b2_t64_d8192, 4, 128, 8192)
SHAPE_TESTS(n3_b5_t37_d123, 3, 185, 123)
SHAPE_TESTS(n1_b2_t9_d64, 1, 18, 64)
SHAPE_TESTS(n5_b3_t7_d1, 5, 21, 1)
SHAPE_TESTS(n6_b1_t1_d300, 6, 1, 300)
SHAPE_TESTS(n40_b1_t5_d96, 40, 5, 96)
SHAPE_TESTS(n2_b1_t0_d16, 2, 0, 16)

/* ---- products rnd(v * rstd) in the f32 subnormal range ------------------
 * One large element per row (4096 at column 0, so rstd <= 2^-6) and
 * the rest tiny: bf16 subnormals and the smallest normals, whose products
 * with rstd are f32 subnormals that rnd() must round to bf16 subnormals,
 * not flush (the AVX512-BF16 conversion flushes them; the kernels' integer
 * rounding must not). w_query is 2^120 on the tiny columns and 2^-20 on
 * column 0, so those products dominate the scores, and a flushed one moves
 * alpha by about 1e-2 relative. Every forward variant on AOT and then on
 * tcc (whose scalar rounding is the definition) gives the same bits, within
 * the tolerances of the reference. */
static void *bits_tensor(int dt, int64_t n, uint16_t (*bits)(int64_t, uint64_t *), uint64_t seed) {
  void *p = malloc((size_t)n * ref_dtype_bytes(dt) + 1);
  for (int64_t i = 0; i < n; i++) {
    const uint16_t b = bits(i, &seed);
    const uint32_t f = (uint32_t)b << 16; /* the f32 of bf16 bits */
    if (dt == UBG_F32) memcpy((float *)p + i, &f, 4);
    else ((uint16_t *)p)[i] = b;
  }
  return p;
}
static uint64_t next_rand(uint64_t *x) { return *x = *x * 6364136223846793005ull + 1442695040888963407ull, *x >> 33; }
static int64_t spiky_dim;
/* v: 4096 (+-) at column 0; at column 5 +-1.9921875 * 2^-121, whose
 * product with rstd = 2^-6 is the f32 subnormal 0x007f8000, which rounds
 * (a tie, to even) up to 2^-126, a normal number (one column only: the
 * reference's rstd in double is a hair below 2^-6 and rounds it down, an
 * error of 2^-13 in the score); else a random sign, exponent field 0..3,
 * mantissa */
static uint16_t spiky_v(int64_t i, uint64_t *x) {
  const uint64_t r = next_rand(x);
  if (i % spiky_dim == 0) return (uint16_t)(((r & 1) << 15) | 0x4580); /* +-4096 */
  if (i % spiky_dim == 5) return (uint16_t)(((r & 1) << 15) | 0x037f);
  const uint16_t e = (uint16_t)((r >> 1) % 4), m = (uint16_t)((r >> 3) % 127 + 1);
  return (uint16_t)(((r & 1) << 15) | (e << 7) | m);
}
static uint16_t spiky_wq(int64_t i, uint64_t *x) {
  return i % spiky_dim == 0 ? 0x3580 /* 2^-20 */ : (uint16_t)(0x7b80 | next_rand(x) % 128); /* 2^120 (1 + m/128) */
}
static uint16_t one_bits(int64_t i, uint64_t *x) { return (void)i, (void)x, 0x3f80; }

Test(attn_res_edge, subnormal_products_are_rounded_not_flushed, .timeout = 120 * TC_TIME_SCALE) {
  const int64_t dims[2] = {4096, 123}; /* 123: the paired chunks, a 16-column chunk and scalar columns */
  for (int dt = UBG_F32; dt <= UBG_BF16; dt += UBG_BF16 - UBG_F32)
    for (int k = 0; k < 2; k++) {
      const ar_shape s = {3, 5, dims[k]};
      spiky_dim = s.dim;
      inputs in;
      in.v = bits_tensor(dt, s.nb * s.tokens * s.dim, spiky_v, 7);
      in.wq = bits_tensor(dt, s.dim, spiky_wq, 8);
      in.wn = bits_tensor(dt, s.dim, one_bits, 9);
      in.dout = NULL; /* forward only: the backward's f32 cancellations are 2^120 times larger here */
      add_reference(&in, dt, &s);
      /* rstd <= 2^-6: every tiny element's product is an f32 subnormal */
      cr_assert(in.rstd_f[0] <= 0x1p-6f, "rstd %.9g: the inputs are not as intended", in.rstd_f[0]);
      first_result f = {0};
      sweep_fwd_on(dt, &s, &in, UBG_BACKEND_AOT, &f);
      sweep_fwd_on(dt, &s, &in, UBG_BACKEND_TCC, &f);
      free_first(&f);
      free_inputs(&in);
    }
}

#if defined(__x86_64__) || defined(__i386__)
/* whether n elements of dtype dt (es bytes) at a and b have the same
 * bits, any NaN counting as any other (docs/semantics.md: NaN positions
 * are promised, not payloads, which follow the compiler's operand order
 * where two NaNs meet) */
static bool same_or_both_nan(const void *a, const void *b, int64_t n, int dt) {
  const size_t es = ref_dtype_bytes(dt);
  for (int64_t i = 0; i < n; i++) {
    uint32_t x = 0, y = 0;
    memcpy(&x, (const char *)a + i * es, es), memcpy(&y, (const char *)b + i * es, es);
    const uint32_t e = es == 4 ? 0x7f800000u : dt == UBG_F16 ? 0x7c00u : 0x7f80u, m = es == 4 ? 0x7fffffu : dt == UBG_F16 ? 0x3ffu : 0x7fu;
    if (x != y && !((x & e) == e && (x & m) && (y & e) == e && (y & m))) return false;
  }
  return true;
}

/* every forward variant that applies on AOT, the automatic choice on the
 * gcc JIT (which compiles each variant apart) and every variant on tcc,
 * one thread, with MXCSR | mode while they run: the same out, alpha and
 * rstd bits (any_nan: or NaN where the first run has one); the first
 * run's rstd into rstd1 [nblocks * tokens] */
static void same_bits_everywhere(int dt, const ar_shape *s, const void *v, const void *wq, const void *wn, float eps,
                                 unsigned mode, const char *mode_name, bool any_nan, float *rstd1) {
  const int64_t nt = s->nb * s->tokens, no = s->tokens * s->dim;
  const size_t ob = (size_t)no * ref_dtype_bytes(dt);
  void *out = malloc(ob), *out1 = malloc(ob);
  float *alpha = malloc((size_t)nt * 4), *alpha1 = malloc((size_t)nt * 4), *rstd = malloc((size_t)nt * 4);
  const ubg_backend backends[3] = {UBG_BACKEND_AOT, UBG_BACKEND_GCC, UBG_BACKEND_TCC};
  tc_variants vs = tc_kernel_variants("attn_res", "fwd", dt);
  char first[160] = "", differs[400] = "";
  int ran = 0;
  for (int b = 0; b < 3 && !differs[0]; b++) {
    ubg_ctx *one = tc_ctx(backends[b], 1);
    const int gcc = backends[b] == UBG_BACKEND_GCC;
    for (int i = 0; i < (gcc ? 1 : vs.n) && !differs[0]; i++) {
      if (!gcc && !applies(&vs.v[i], s)) continue;
      cr_assert_eq(ubg_set_variant(one, "attn_res", "fwd", gcc ? NULL : vs.v[i].name), UBG_OK, "%s",
                   ubg_ctx_error(one));
      const unsigned saved = _mm_getcsr();
      _mm_setcsr(saved | mode);
      const ubg_status st = ubg_attn_res_fwd(one, dt, s->nb, s->tokens, s->dim, v, wq, wn, eps, out, alpha, rstd);
      _mm_setcsr(saved);
      cr_assert_eq(st, UBG_OK, "%s: %s", ubg_ctx_last_variant(one), ubg_ctx_error(one));
      ran++;
      if (!first[0]) {
        snprintf(first, sizeof first, "%s", ubg_ctx_last_variant(one));
        memcpy(out1, out, ob), memcpy(alpha1, alpha, (size_t)nt * 4), memcpy(rstd1, rstd, (size_t)nt * 4);
      } else if (any_nan ? !same_or_both_nan(out, out1, no, dt) || !same_or_both_nan(alpha, alpha1, nt, UBG_F32) ||
                               !same_or_both_nan(rstd, rstd1, nt, UBG_F32)
                         : memcmp(out, out1, ob) || memcmp(alpha, alpha1, (size_t)nt * 4) ||
                               memcmp(rstd, rstd1, (size_t)nt * 4)) {
        snprintf(differs, sizeof differs, "%s gives other bits than %s (%s, D = %lld, MXCSR %s)",
                 ubg_ctx_last_variant(one), first, ug_dtype_name(dt), (long long)s->dim, mode_name);
      }
    }
    ubg_ctx_destroy(one);
  }
  cr_assert(!differs[0], "%s", differs);
  cr_assert_gt(ran, 2, "%s: only %d runs", ug_dtype_name(dt), ran); /* AOT's variants, gcc, tcc's */
  tc_free_variants(&vs);
  free(out), free(out1), free(alpha), free(alpha1), free(rstd);
}

/* The same inputs with MXCSR as it comes, with DAZ and with FTZ and DAZ,
 * as a framework may set them: the results change (FTZ flushes the tiny
 * products, DAZ reads subnormals as zero), but in each mode every forward
 * variant on AOT, the gcc JIT and tcc gives the same bits. The paired bf16
 * score converts a row's products with a conversion that flushes
 * subnormals only when it has proved none is subnormal; v's 0x037f
 * elements (spiky_v) would otherwise come out 0 instead of 2^-126 (an
 * earlier per-product vfpclassps test was blind to them under DAZ). One
 * thread: the kernels then run on this thread, whose MXCSR is set. */
Test(attn_res_edge, mxcsr_modes_give_the_same_bits_everywhere, .timeout = 120 * TC_TIME_SCALE) {
  const ar_shape s = {3, 5, 4096};
  float *rstd1 = malloc((size_t)(s.nb * s.tokens) * 4);
  spiky_dim = s.dim;
  for (int mode = 0; mode < 3; mode++)
    for (int dt = UBG_F32; dt <= UBG_BF16; dt++) {
      const unsigned modes[3] = {0, 0x0040u, 0x8040u}; /* DAZ is bit 6, FTZ bit 15 */
      const char *mode_names[3] = {"as it comes", "with DAZ", "with FTZ and DAZ"};
      void *v = bits_tensor(dt, s.nb * s.tokens * s.dim, spiky_v, 7), *wq = bits_tensor(dt, s.dim, spiky_wq, 8),
           *wn = bits_tensor(dt, s.dim, one_bits, 9);
      same_bits_everywhere(dt, &s, v, wq, wn, 1e-6f, modes[mode], mode_names[mode], false, rstd1);
      free(v), free(wq), free(wn);
    }
  free(rstd1);
}

/* v: a random sign and, in the first half of a row, |v| in [2^-74,
 * 2^-63), whose squares are f32 subnormals, in the second [2^-63, 2^-62),
 * whose squares are normal (a tiled variant's later tiles then start
 * from subnormal lanes) */
static uint16_t tiny_v(int64_t i, uint64_t *x) {
  const uint64_t r = next_rand(x);
  const uint64_t e = i % spiky_dim < spiky_dim / 2 ? 53 + (r >> 1) % 11 : 64;
  return (uint16_t)(((r & 1) << 15) | (e << 7) | ((r >> 5) & 127));
}
/* v: |v| around 1, but an Inf in column 7 of every third row from the
 * second, a NaN (a random payload, quiet or signalling) in column 40 of
 * every third row from the third */
static uint16_t nonfinite_v(int64_t i, uint64_t *x) {
  const uint64_t r = next_rand(x);
  const int64_t row = i / spiky_dim, col = i % spiky_dim;
  if (row % 3 == 1 && col == 7) return 0x7f80;
  if (row % 3 == 2 && col == 40) return (uint16_t)(((r & 1) << 15) | 0x7f80 | (1 + (r >> 1) % 127));
  return (uint16_t)(((r & 1) << 15) | ((126 + (r >> 1) % 2) << 7) | ((r >> 2) & 127));
}

/* The bf16 forward sums squares with vdpbf16ps, which reads subnormal
 * lanes as zero and flushes subnormal squares, only where a row's least
 * nonzero |v| and its lanes so far prove none is met. Rows of tiny_v and
 * eps = 0 make rstd depend on such squares (without the proof rstd would
 * be Inf, or a tiled variant's lanes would lose their first tiles): every
 * variant and backend gives the same bits, and rstd is within 1e-3 of the
 * double reference. Rows holding an Inf or a NaN (nonfinite_v) give the
 * same values everywhere too, NaN in the same places. D = 123: the whole
 * chunks, then scalar columns. */
Test(attn_res_edge, subnormal_squares_and_nonfinite_rows, .timeout = 120 * TC_TIME_SCALE) {
  const int64_t dims[2] = {4096, 123};
  for (int k = 0; k < 2; k++)
    for (int dt = UBG_F32; dt <= UBG_BF16; dt += UBG_BF16 - UBG_F32) {
      const ar_shape s = {3, 5, dims[k]};
      const int64_t nt = s.nb * s.tokens, nv = nt * s.dim;
      float *rstd1 = malloc((size_t)nt * 4);
      double *ref_out = malloc((size_t)(s.tokens * s.dim) * sizeof(double)), *ref_alpha = malloc((size_t)nt * sizeof(double)),
             *ref_rstd = malloc((size_t)nt * sizeof(double));
      spiky_dim = s.dim;
      void *v = bits_tensor(dt, nv, tiny_v, 11), *w = bits_tensor(dt, s.dim, one_bits, 12);
      same_bits_everywhere(dt, &s, v, w, w, 0.0f, 0, "as it comes; tiny_v, eps = 0", false, rstd1);
      ref_slot a[10] = {{.p = v}, {.p = w}, {.p = w}, {.p = NULL}, {.p = NULL}, {.p = NULL},
                        {.i = s.nb}, {.i = s.tokens}, {.i = s.dim}, {.f = 0.0}};
      double *outs[10] = {0};
      outs[3] = ref_out, outs[4] = ref_alpha, outs[5] = ref_rstd;
      ref_find("attn_res", "fwd")->fn(a, dt, outs);
      for (int64_t i = 0; i < nt; i++)
        cr_assert(fabs(rstd1[i] - ref_rstd[i]) <= 1e-3 * ref_rstd[i], "%s D = %lld: rstd[%lld] %.9g, reference %.9g",
                  ug_dtype_name(dt), (long long)s.dim, (long long)i, rstd1[i], ref_rstd[i]);
      free(v);
      v = bits_tensor(dt, nv, nonfinite_v, 13);
      same_bits_everywhere(dt, &s, v, w, w, 1e-6f, 0, "as it comes; nonfinite_v", true, rstd1);
      free(v), free(w), free(rstd1), free(ref_out), free(ref_alpha), free(ref_rstd);
    }
}
#endif

/* ---- refusals: the message names the argument and values; outputs untouched */

Test(attn_res_refuses, bad_arguments) {
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK);
  float v[2 * 3 * 4], w[4], out[3 * 4], alpha[6], rstd[6], pat[12];
  for (int i = 0; i < 24; i++) v[i] = (float)i / 10;
  for (int i = 0; i < 4; i++) w[i] = 1;
  memset(out, 0x5a, sizeof out), memset(alpha, 0x5a, sizeof alpha), memset(rstd, 0x5a, sizeof rstd);
  memset(pat, 0x5a, sizeof pat);
  struct {
    ubg_status got, want;
    const char *needle;
  } cases[] = {
      {ubg_attn_res_fwd(ctx, UBG_F32, 0, 3, 4, v, w, w, 1e-6f, out, alpha, rstd), UBG_EINVAL, "nblocks = 0"},
      {ubg_attn_res_fwd(ctx, UBG_F32, 257, 3, 4, v, w, w, 1e-6f, out, alpha, rstd), UBG_EINVAL,
       "nblocks = 257 is above its maximum 256"},
      {ubg_attn_res_fwd(ctx, UBG_F32, 2, -3, 4, v, w, w, 1e-6f, out, alpha, rstd), UBG_EINVAL, "tokens = -3"},
      {ubg_attn_res_fwd(ctx, UBG_F32, 2, 3, 0, v, w, w, 1e-6f, out, alpha, rstd), UBG_EINVAL, "dim = 0"},
      {ubg_attn_res_fwd(ctx, UBG_F32, 2, 3, 4, v, NULL, w, 1e-6f, out, alpha, rstd), UBG_EINVAL, "w_query is NULL"},
      {ubg_attn_res_fwd(ctx, UBG_F32, 2, 3, 4, v, w, w, NAN, out, alpha, rstd), UBG_EINVAL, "eps = nan"},
      {ubg_attn_res_fwd(ctx, UBG_F32, 2, 3, 4, v, w, w, 1e-6f, v, alpha, rstd), UBG_EINVAL, "overlap"},
      {ubg_attn_res_fwd(ctx, UBG_F32, 2, INT64_MAX / 4, 4, v, w, w, 1e-6f, out, alpha, rstd), UBG_EINVAL, "overflows"},
      {ubg_attn_res_bwd(ctx, UBG_F32, 2, 3, 4, out, v, w, w, alpha, rstd, v, w, w), UBG_EINVAL, "overlap"},
      {ubg_attn_res_bwd(ctx, UBG_F32, 2, 3, 4, out, v, w, w, NULL, rstd, out, w, w), UBG_EINVAL, "alpha is NULL"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cr_assert_eq(cases[i].got, cases[i].want, "case %zu: %s", i, ubg_status_str(cases[i].got));
    (void)cases[i].needle;
  }
  /* the messages, one at a time (the last error is per call) */
  cr_assert_eq(ubg_attn_res_fwd(ctx, UBG_F32, 257, 3, 4, v, w, w, 1e-6f, out, alpha, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "nblocks = 257 is above its maximum 256"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_attn_res_fwd(ctx, UBG_F32, 2, 3, 4, v, w, w, NAN, out, alpha, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "eps"), "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(out, pat, sizeof out) && !memcmp(alpha, pat, sizeof alpha) && !memcmp(rstd, pat, sizeof rstd),
            "an output was written");
  cr_assert_eq(ubg_attn_res_fwd(NULL, UBG_F32, 2, 3, 4, v, w, w, 1e-6f, out, alpha, rstd), UBG_EINVAL);
  ubg_ctx_destroy(ctx);
}

/* alpha sums to one per token; out is the alpha-weighted sum (a direct
 * property check, besides the reference) */
Test(attn_res_edge, alpha_is_a_distribution) {
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK);
  const ar_shape s = {7, 33, 200};
  inputs in = make_inputs(UBG_F32, &s);
  float *out = malloc(33 * 200 * 4), alpha[7 * 33], rstd[7 * 33];
  cr_assert_eq(ubg_attn_res_fwd(ctx, UBG_F32, 7, 33, 200, in.v, in.wq, in.wn, 1e-6f, out, alpha, rstd), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  for (int t = 0; t < 33; t++) {
    double sum = 0;
    for (int i = 0; i < 7; i++) sum += alpha[t * 7 + i];
    cr_assert(fabs(sum - 1) < 1e-6, "token %d: alpha sums to %.9g", t, sum);
    for (int d = 0; d < 200; d += 37) {
      double h = 0;
      for (int i = 0; i < 7; i++) h += alpha[t * 7 + i] * ((float *)in.v)[(i * 33 + t) * 200 + d];
      cr_assert(fabs(h - out[t * 200 + d]) < 1e-5, "token %d d %d: %g vs %g", t, d, out[t * 200 + d], h);
    }
  }
  free(out);
  free_inputs(&in);
  ubg_ctx_destroy(ctx);
}

/* RMSNorm against the double-precision reference: every feasible variant
 * (forced with ubg_set_variant) over rows {1, 7, 256} x cols {1, 3, 64, 123,
 * 1024, 4097, 8192, 32768}, all dtypes, casting modes, with and without w,
 * dx in place; every variant gives the same bits as every other; 1 and 2
 * threads give the same bits.
 *
 * One Criterion test per (pass, dtype, cols), so failures name their case
 * and the suite spreads over the cores. For each input set the reference is
 * computed once; the first variant is compared with it, and every other
 * variant must then equal the first bit for bit (which implies the same
 * error). A variant that differs is also compared with the reference, so a
 * failure says which of the two properties broke. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "rms_norm_cases.h"

static const int64_t row_counts[] = {1, 7, 256};
static const char *const cast_names[] = {"llama", "gemma", "none"};

typedef struct {
  ubg_ctx *ctx1, *ctx2; /* 1 and 2 threads */
  int dtype;
  int64_t rows, cols;
  int casting;
  int with_w;
  char where[160];
} run_case;

static void open_contexts(run_case *c) {
  c->ctx1 = tc_ctx(UBG_BACKEND_AUTO, 1);
  c->ctx2 = tc_ctx(UBG_BACKEND_AUTO, 2);
}

static void expect_close(const char *what, const void *got, int dtype, const double *want, int64_t n, const run_case *c,
                         const char *variant) {
  tc_assert_close(got, dtype, want, n, tol_atol[c->dtype], tol_rtol[c->dtype], "%s %s (atol %g, rtol %g): %s", variant,
                  c->where, tol_atol[c->dtype], tol_rtol[c->dtype], what);
}

static void fwd_case(run_case *c, const tc_variants *vs) {
  const int dt = c->dtype;
  const int64_t rows = c->rows, cols = c->cols, n = rows * cols;
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es;
  uint64_t seed = (uint64_t)(rows * 1000003 + cols * 31 + c->casting * 7 + c->with_w);
  void *x = tc_tensor(dt, n, 0, 1, seed);
  void *w = c->with_w ? tc_tensor(dt, cols, c->casting == 1 ? 0 : 1, 0.5, seed + 1) : NULL;
  const float eps = 1e-6f, offset = c->casting == 1 ? 1.0f : 0.0f;
  double *ref_y = malloc((size_t)(n ? n : 1) * sizeof(double)), *ref_r = malloc((size_t)rows * sizeof(double));
  ref_slot a[9] = {{.p = x}, {.p = w}, {.p = NULL}, {.p = NULL}, {.i = rows}, {.i = cols}, {.f = eps}, {.f = offset},
                   {.i = c->casting}};
  double *outs[9] = {0};
  outs[2] = ref_y;
  outs[3] = ref_r;
  ref_find("rms_norm", "fwd")->fn(a, dt, outs);

  void *y = malloc(bytes), *y_first = malloc(bytes), *y_two = malloc(bytes);
  float *rstd = malloc((size_t)rows * 4), *rstd_first = malloc((size_t)rows * 4), *rstd_two = malloc((size_t)rows * 4);
  int first = -1;
  for (int i = 0; i < vs->n; i++) {
    const ug_variant *v = &vs->v[i];
    if (!tc_applies(v, cols)) continue;
    cr_assert_eq(ubg_set_variant(c->ctx1, "rms_norm", "fwd", v->name), UBG_OK, "%s", ubg_ctx_error(c->ctx1));
    memset(y, 0xff, bytes);
    ubg_status s = ubg_rms_norm_fwd(c->ctx1, dt, rows, cols, x, w, eps, offset, c->casting, y, rstd);
    cr_assert_eq(s, UBG_OK, "%s %s: %s", v->name, c->where, ubg_ctx_error(c->ctx1));
    char ran[200];
    snprintf(ran, sizeof ran, "%s@aot", v->name);
    cr_assert_str_eq(ubg_ctx_last_variant(c->ctx1), ran);
    bool same = first >= 0 && !memcmp(y, y_first, bytes) && !memcmp(rstd, rstd_first, (size_t)rows * 4);
    if (!same) {
      expect_close("y", y, dt, ref_y, n, c, v->name);
      expect_close("rstd", rstd, REF_F32, ref_r, rows, c, v->name);
      cr_assert(first < 0, "%s %s: within tolerance but not bitwise equal to %s", v->name, c->where,
                vs->v[first].name);
      first = i;
      memcpy(y_first, y, bytes);
      memcpy(rstd_first, rstd, (size_t)rows * 4);
    }
    /* 2 threads: the same bits */
    if (rows > 1 && c->casting == 0) {
      cr_assert_eq(ubg_set_variant(c->ctx2, "rms_norm", "fwd", v->name), UBG_OK);
      memset(y_two, 0, bytes);
      cr_assert_eq(ubg_rms_norm_fwd(c->ctx2, dt, rows, cols, x, w, eps, offset, c->casting, y_two, rstd_two), UBG_OK);
      cr_assert(!memcmp(y_two, y, bytes) && !memcmp(rstd_two, rstd, (size_t)rows * 4),
                "%s %s: 2 threads differ from 1 thread", v->name, c->where);
    }
  }
  cr_assert(first >= 0, "no variant applies to %s", c->where);
  free(x), free(w), free(ref_y), free(ref_r), free(y), free(y_first), free(y_two);
  free(rstd), free(rstd_first), free(rstd_two);
}

static void bwd_case(run_case *c, const tc_variants *vs) {
  const int dt = c->dtype;
  const int64_t rows = c->rows, cols = c->cols, n = rows * cols;
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es, wbytes = (size_t)cols * es;
  uint64_t seed = (uint64_t)(rows * 7919 + cols * 131 + c->casting * 3 + c->with_w);
  void *x = tc_tensor(dt, n, 0, 1, seed);
  void *dy = tc_tensor(dt, n, 0, 1, seed + 2);
  void *w = c->with_w ? tc_tensor(dt, cols, c->casting == 1 ? 0 : 1, 0.5, seed + 1) : NULL;
  const float offset = c->casting == 1 ? 1.0f : 0.0f;
  /* rstd as the forward pass would have produced it */
  float *rstd = malloc((size_t)rows * 4);
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0;
    for (int64_t d = 0; d < cols; d++) ss += pow(ref_load(x, r * cols + d, dt), 2);
    rstd[r] = (float)(1.0 / sqrt(ss / (double)cols + 1e-6));
  }
  double *ref_dx = malloc((size_t)(n ? n : 1) * sizeof(double)), *ref_dw = malloc((size_t)cols * sizeof(double));
  ref_slot a[10] = {{.p = dy},    {.p = x},      {.p = w},          {.p = rstd}, {.p = NULL},
                    {.p = NULL},  {.i = rows},   {.i = cols},       {.f = offset}, {.i = c->casting}};
  double *outs[10] = {0};
  outs[4] = ref_dx;
  outs[5] = w ? ref_dw : NULL;
  ref_find("rms_norm", "bwd")->fn(a, dt, outs);

  void *dx = malloc(bytes), *dx_first = malloc(bytes), *dx_two = malloc(bytes), *inplace = malloc(bytes);
  void *dw = w ? malloc(wbytes) : NULL, *dw_first = malloc(wbytes), *dw_two = malloc(wbytes);
  int first = -1;
  for (int i = 0; i < vs->n; i++) {
    const ug_variant *v = &vs->v[i];
    if (!tc_applies(v, cols)) continue;
    cr_assert_eq(ubg_set_variant(c->ctx1, "rms_norm", "bwd", v->name), UBG_OK, "%s", ubg_ctx_error(c->ctx1));
    memset(dx, 0xff, bytes);
    if (dw) memset(dw, 0xff, wbytes);
    ubg_status s = ubg_rms_norm_bwd(c->ctx1, dt, rows, cols, dy, x, w, rstd, offset, c->casting, dx, dw);
    cr_assert_eq(s, UBG_OK, "%s %s: %s", v->name, c->where, ubg_ctx_error(c->ctx1));
    bool same = first >= 0 && !memcmp(dx, dx_first, bytes) && (!dw || !memcmp(dw, dw_first, wbytes));
    if (!same) {
      expect_close("dx", dx, dt, ref_dx, n, c, v->name);
      if (dw) expect_close("dw", dw, dt, ref_dw, cols, c, v->name);
      cr_assert(first < 0, "%s %s: within tolerance but not bitwise equal to %s", v->name, c->where,
                vs->v[first].name);
      first = i;
      memcpy(dx_first, dx, bytes);
      if (dw) memcpy(dw_first, dw, wbytes);
    }
    /* dx in place of dy: the same bits */
    memcpy(inplace, dy, bytes);
    cr_assert_eq(ubg_rms_norm_bwd(c->ctx1, dt, rows, cols, inplace, x, w, rstd, offset, c->casting, inplace, dw),
                 UBG_OK, "%s", ubg_ctx_error(c->ctx1));
    cr_assert(!memcmp(inplace, dx, bytes), "%s %s: dx in place of dy differs", v->name, c->where);
    if (rows > 1 && c->casting == 0) {
      cr_assert_eq(ubg_set_variant(c->ctx2, "rms_norm", "bwd", v->name), UBG_OK);
      memset(dx_two, 0, bytes);
      if (dw) memset(dw_two, 0, wbytes);
      cr_assert_eq(ubg_rms_norm_bwd(c->ctx2, dt, rows, cols, dy, x, w, rstd, offset, c->casting, dx_two,
                                    dw ? dw_two : NULL),
                   UBG_OK);
      cr_assert(!memcmp(dx_two, dx, bytes) && (!dw || !memcmp(dw_two, dw, wbytes)),
                "%s %s: 2 threads differ from 1 thread", v->name, c->where);
    }
  }
  cr_assert(first >= 0, "no variant applies to %s", c->where);
  free(x), free(dy), free(w), free(rstd), free(ref_dx), free(ref_dw), free(dx), free(dx_first), free(dx_two);
  free(inplace), free(dw), free(dw_first), free(dw_two);
}

static void sweep(const char *pass, int dtype, int64_t cols) {
  tc_variants vs = tc_load_variants(pass, dtype);
  cr_assert(vs.n > 0, "no variants loaded for rms_norm.%s", pass);
  run_case c = {0};
  open_contexts(&c);
  c.dtype = dtype;
  c.cols = cols;
  for (size_t r = 0; r < sizeof row_counts / sizeof row_counts[0]; r++) {
    c.rows = row_counts[r];
    if (c.rows * cols > TC_MAX_ELEMS) { /* a reduced run (make test-valgrind): the fewer rows only */
      cr_log_info("rows=%lld cols=%lld left out: more than %lld elements", (long long)c.rows, (long long)cols,
                  (long long)TC_MAX_ELEMS);
      continue;
    }
    for (c.casting = 0; c.casting < 3; c.casting++) {
      for (c.with_w = 1; c.with_w >= 0; c.with_w--) {
        snprintf(c.where, sizeof c.where, "rows=%lld cols=%lld %s %s w", (long long)c.rows, (long long)cols,
                 cast_names[c.casting], c.with_w ? "with" : "without");
        if (!strcmp(pass, "fwd")) fwd_case(&c, &vs);
        else bwd_case(&c, &vs);
      }
    }
  }
  ubg_ctx_destroy(c.ctx1);
  ubg_ctx_destroy(c.ctx2);
  tc_free_variants(&vs);
}

#define SWEEP(pass, dt, dtype, cols) \
  Test(rms_norm_##pass##_##dt, cols_##cols, .timeout = 300 * TC_TIME_SCALE) { sweep(#pass, dtype, cols); }
#define SWEEP_ALL_COLS(pass, dt, dtype) \
  SWEEP(pass, dt, dtype, 1)             \
  SWEEP(pass, dt, dtype, 3)             \
  SWEEP(pass, dt, dtype, 64)            \
  SWEEP(pass, dt, dtype, 123)           \
  SWEEP(pass, dt, dtype, 1024)          \
  SWEEP(pass, dt, dtype, 4097)          \
  SWEEP(pass, dt, dtype, 8192)          \
  SWEEP(pass, dt, dtype, 32768)

SWEEP_ALL_COLS(fwd, f32, UBG_F32)
SWEEP_ALL_COLS(fwd, f16, UBG_F16)
SWEEP_ALL_COLS(fwd, bf16, UBG_BF16)
SWEEP_ALL_COLS(bwd, f32, UBG_F32)
SWEEP_ALL_COLS(bwd, f16, UBG_F16)
SWEEP_ALL_COLS(bwd, bf16, UBG_BF16)

/* rows = 0 is an empty batch: nothing to normalize, and dw is zero */
Test(rms_norm_edge, zero_rows) {
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK);
  uint16_t w[8], dw[8], dummy[1];
  float rstd[1];
  for (int i = 0; i < 8; i++) w[i] = 0x3f80, dw[i] = 0x1234; /* bf16 1.0, junk */
  cr_assert_eq(ubg_rms_norm_fwd(ctx, UBG_BF16, 0, 8, dummy, w, 1e-6f, 0, UBG_CAST_LLAMA, dummy, rstd), UBG_OK);
  cr_assert_eq(ubg_rms_norm_bwd(ctx, UBG_BF16, 0, 8, dummy, dummy, w, rstd, 0, UBG_CAST_LLAMA, dummy, dw), UBG_OK,
               "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < 8; i++) cr_assert_eq(dw[i], 0, "dw[%d] = 0x%04x, expected +0", i, dw[i]);
  ubg_ctx_destroy(ctx);
}

/* The automatic choice (no forced variant) is right too, at a shape where
 * it must pick a tiled variant. */
Test(rms_norm_edge, default_strategy_tiled) {
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK);
  const int64_t rows = 3, cols = 40000;
  float *x = tc_tensor(REF_F32, rows * cols, 0, 1, 5), *y = malloc(rows * cols * 4), rstd[3];
  cr_assert_eq(ubg_rms_norm_fwd(ctx, UBG_F32, rows, cols, x, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd), UBG_OK);
  const char *v = ubg_ctx_last_variant(ctx);
  cr_assert(strstr(v, "rms_norm_fwd_f32_d") == v && strstr(v, "_t@aot"), "chose %s", v);
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0;
    for (int64_t d = 0; d < cols; d++) ss += (double)x[r * cols + d] * x[r * cols + d];
    double rs = 1 / sqrt(ss / cols + (double)1e-6f);
    cr_assert_float_eq(rstd[r], rs, 1e-6 * rs);
    for (int64_t d = 0; d < cols; d += 997) cr_assert_float_eq(y[r * cols + d], x[r * cols + d] * rs, 1e-5);
  }
  free(x), free(y);
  ubg_ctx_destroy(ctx);
}

/* Outputs of 8 MiB and more are written with streaming stores where the
 * address allows (bf16: 32- or 16-byte aligned chunks; f32: 64-byte
 * aligned lines); the sweep above reaches that size only with tiled
 * variants. Here a whole-row variant at 8.1 MiB (bf16) or 16.2 MiB (f32),
 * its output at three alignments, must match the reference and, bit for
 * bit, a tiled variant's output in a malloc'd buffer. */
static void streaming_stores_case(int dt, const int *shifts) {
  const int64_t rows = 520, cols = 8192, n = rows * cols;
  tc_skip_if_large(2 * n, "520 x 8192"); /* x and y: a reduced run has no streaming stores to test */
  ubg_ctx *ctx;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK);
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es;
  const char *name = ug_dtype_name(dt);
  void *x = tc_tensor(dt, n, 0, 1, 11), *dy = tc_tensor(dt, n, 0, 1, 12), *w = tc_tensor(dt, cols, 1, 0.5, 13);
  void *out = malloc(bytes + 64), *want = malloc(bytes), *dw = malloc(cols * es), *dw_want = malloc(cols * es);
  void *dx_want = malloc(bytes);
  float *rstd = malloc(rows * 4), *rstd_want = malloc(rows * 4);
  double *ref = malloc((size_t)n * sizeof(double)), *ref_r = malloc(rows * sizeof(double));
  ref_slot a[9] = {{.p = x}, {.p = w}, {.p = NULL}, {.p = NULL}, {.i = rows}, {.i = cols}, {.f = 1e-6f}, {.f = 0},
                   {.i = 0}};
  double *outs[9] = {0};
  char variant[64];
  outs[2] = ref, outs[3] = ref_r;
  ref_find("rms_norm", "fwd")->fn(a, dt, outs);
  /* the tiled variant's output (malloc: a 16-byte aligned buffer) is the
   * bitwise reference, once it is within tolerance of the real one */
  snprintf(variant, sizeof variant, "rms_norm_fwd_%s_d1024_m1_t", name);
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "fwd", variant), UBG_OK);
  cr_assert_eq(ubg_rms_norm_fwd(ctx, dt, rows, cols, x, w, 1e-6f, 0, UBG_CAST_LLAMA, want, rstd_want), UBG_OK);
  double werr;
  cr_assert(ref_compare(want, dt, ref, n, tol_atol[dt], tol_rtol[dt], &werr) < 0, "%s: tiled y off the reference",
            name);
  snprintf(variant, sizeof variant, "rms_norm_bwd_%s_d1024_m1_t", name);
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "bwd", variant), UBG_OK);
  cr_assert_eq(ubg_rms_norm_bwd(ctx, dt, rows, cols, dy, x, w, rstd_want, 0, UBG_CAST_LLAMA, dx_want, dw_want), UBG_OK);
  snprintf(variant, sizeof variant, "rms_norm_fwd_%s_d8192_m1_n", name);
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "fwd", variant), UBG_OK);
  snprintf(variant, sizeof variant, "rms_norm_bwd_%s_d8192_m1_n", name);
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "bwd", variant), UBG_OK);
  for (int k = 0; k < 3; k++) {
    void *y = (char *)(((uintptr_t)out + 63) & ~(uintptr_t)63) + shifts[k];
    memset(y, 0xff, bytes);
    cr_assert_eq(ubg_rms_norm_fwd(ctx, dt, rows, cols, x, w, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd), UBG_OK);
    double err;
    int64_t bad = ref_compare(y, dt, ref, n, tol_atol[dt], tol_rtol[dt], &err);
    cr_assert(bad < 0, "%s shift %d: y[%lld] off the reference", name, shifts[k], (long long)bad);
    cr_assert(!memcmp(y, want, bytes), "%s shift %d: streamed y differs from the tiled variant's", name, shifts[k]);
    memset(y, 0xff, bytes);
    cr_assert_eq(ubg_rms_norm_bwd(ctx, dt, rows, cols, dy, x, w, rstd_want, 0, UBG_CAST_LLAMA, y, dw), UBG_OK);
    cr_assert(!memcmp(y, dx_want, bytes), "%s shift %d: streamed dx differs from the tiled variant's", name, shifts[k]);
    cr_assert(!memcmp(dw, dw_want, cols * es), "%s shift %d: dw differs", name, shifts[k]);
  }
  free(x), free(dy), free(w), free(out), free(want), free(dw), free(dw_want), free(rstd), free(rstd_want);
  free(ref), free(ref_r), free(dx_want);
  ubg_ctx_destroy(ctx);
}
Test(rms_norm_edge, streaming_stores_any_alignment, .timeout = 120 * TC_TIME_SCALE) {
  static const int shifts[] = {0, 16, 2}; /* bytes past a 64-byte boundary: 32-, 16- and 2-byte aligned */
  streaming_stores_case(UBG_BF16, shifts);
}
Test(rms_norm_edge, streaming_stores_any_alignment_f32, .timeout = 120 * TC_TIME_SCALE) {
  static const int shifts[] = {0, 16, 4}; /* a whole line, then 16- and 4-byte aligned: no line streamed */
  streaming_stores_case(UBG_F32, shifts);
}

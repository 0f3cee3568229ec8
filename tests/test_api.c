/* The public API's contract (runtime/include/ubgen.h): bad arguments are
 * refused with a status and a message naming the argument and its values,
 * and leave every output untouched; the UB budget is enforced; forced
 * variants, last-variant and error messages per thread; configuration from
 * ubg_config and the environment; the generic ubg_launch; guard mode. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ubgen.h"
#include "test_util.h"

enum { ROWS = 4, COLS = 37 };
#define SENTINEL 0x5a

typedef struct {
  float x[ROWS * COLS], w[COLS], dy[ROWS * COLS];
  float y[ROWS * COLS], rstd[ROWS], dx[ROWS * COLS], dw[COLS];
} buffers;

static ubg_ctx *ctx;
static buffers b;

static void setup_buffers_only(void) {
  for (int i = 0; i < ROWS * COLS; i++) b.x[i] = (float)(i % 11) - 5.0f, b.dy[i] = (float)(i % 5) - 2.0f;
  for (int i = 0; i < COLS; i++) b.w[i] = 1.0f + 0.01f * (float)i;
  for (int i = 0; i < ROWS; i++) b.rstd[i] = 0.5f;
  memset(b.y, SENTINEL, sizeof b.y);
  memset(b.dx, SENTINEL, sizeof b.dx);
  memset(b.dw, SENTINEL, sizeof b.dw);
}

static void setup(void) {
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  setup_buffers_only();
}

static void teardown(void) { ubg_ctx_destroy(ctx); }

static bool untouched(const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i] != SENTINEL) return false;
  return true;
}

/* the call failed with `want`, named `name` in its message, wrote nothing */
static void refused(ubg_status got, ubg_status want, const char *name) {
  const char *msg = ubg_ctx_error(ctx);
  cr_assert_eq(got, want, "status %s, wanted %s (%s)", ubg_status_str(got), ubg_status_str(want), msg);
  cr_assert(strstr(msg, name), "message \"%s\" does not name \"%s\"", msg, name);
  cr_assert(untouched(b.y, sizeof b.y) && untouched(b.dx, sizeof b.dx) && untouched(b.dw, sizeof b.dw),
            "an output was written by a refused call (%s)", msg);
}

static ubg_status fwd(ubg_dtype dt, int64_t rows, int64_t cols, const void *x, const void *w, float eps,
                      ubg_casting cast, void *y, float *rstd) {
  float rstd_out[ROWS];
  memset(rstd_out, SENTINEL, sizeof rstd_out);
  ubg_status s = ubg_rms_norm_fwd(ctx, dt, rows, cols, x, w, eps, 0.0f, cast, y, rstd ? rstd_out : NULL);
  if (s != UBG_OK && rstd) cr_assert(untouched(rstd_out, sizeof rstd_out), "rstd written by a refused call");
  return s;
}

TestSuite(bad_args, .init = setup, .fini = teardown);

Test(bad_args, null_pointers) {
  refused(fwd(UBG_F32, ROWS, COLS, NULL, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "x is NULL");
  refused(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, NULL, b.rstd), UBG_EINVAL, "y is NULL");
  refused(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, NULL), UBG_EINVAL, "rstd is NULL");
  refused(ubg_rms_norm_bwd(ctx, UBG_F32, ROWS, COLS, NULL, b.x, b.w, b.rstd, 0, UBG_CAST_LLAMA, b.dx, b.dw),
          UBG_EINVAL, "dy is NULL");
  refused(ubg_rms_norm_bwd(ctx, UBG_F32, ROWS, COLS, b.dy, b.x, b.w, NULL, 0, UBG_CAST_LLAMA, b.dx, b.dw),
          UBG_EINVAL, "rstd is NULL");
  refused(ubg_rms_norm_bwd(ctx, UBG_F32, ROWS, COLS, b.dy, b.x, b.w, b.rstd, 0, UBG_CAST_LLAMA, NULL, b.dw),
          UBG_EINVAL, "dx is NULL");
  cr_assert_eq(ubg_rms_norm_fwd(NULL, UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, 0, UBG_CAST_LLAMA, b.y, b.rstd),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(NULL), "ctx is NULL"), "%s", ubg_ctx_error(NULL));
}

Test(bad_args, sizes) {
  refused(fwd(UBG_F32, -1, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "rows = -1");
  refused(fwd(UBG_F32, ROWS, 0, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "cols = 0");
  refused(fwd(UBG_F32, ROWS, -5, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "cols = -5");
  /* rows * cols * 4 overflows int64 in several ways */
  refused(fwd(UBG_F32, INT64_MAX, 2, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "overflows");
  refused(fwd(UBG_F32, (int64_t)1 << 40, (int64_t)1 << 40, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL,
          "overflows");
  refused(fwd(UBG_F32, (int64_t)1 << 31, (int64_t)1 << 31, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL,
          "overflows");
  refused(ubg_rms_norm_bwd(ctx, UBG_BF16, 3, INT64_MAX / 2, b.dy, b.x, b.w, b.rstd, 0, UBG_CAST_LLAMA, b.dx, b.dw),
          UBG_EINVAL, "overflows");
}

Test(bad_args, enums_and_floats) {
  refused(fwd((ubg_dtype)3, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "dtype 3");
  refused(fwd((ubg_dtype)-1, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "dtype -1");
  refused(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, (ubg_casting)3, b.y, b.rstd), UBG_EINVAL, "casting 3");
  refused(fwd(UBG_F32, ROWS, COLS, b.x, b.w, NAN, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "eps = nan");
  refused(fwd(UBG_F32, ROWS, COLS, b.x, b.w, INFINITY, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "eps = inf");
}

Test(bad_args, w_and_dw_go_together) {
  refused(ubg_rms_norm_bwd(ctx, UBG_F32, ROWS, COLS, b.dy, b.x, b.w, b.rstd, 0, UBG_CAST_LLAMA, b.dx, NULL),
          UBG_EINVAL, "has_w=1 has_dw=0");
  refused(ubg_rms_norm_bwd(ctx, UBG_F32, ROWS, COLS, b.dy, b.x, NULL, b.rstd, 0, UBG_CAST_LLAMA, b.dx, b.dw),
          UBG_EINVAL, "has_w=0 has_dw=1");
}

Test(bad_args, overlaps) {
  /* y one element into x: refused; y == x exactly is allowed (in place) */
  float xy[ROWS * COLS + 1];
  memcpy(xy, b.x, sizeof b.x);
  refused(fwd(UBG_F32, ROWS, COLS, xy, b.w, 1e-6f, UBG_CAST_LLAMA, xy + 1, b.rstd), UBG_EINVAL, "overlap");
  refused(ubg_rms_norm_bwd(ctx, UBG_F32, ROWS, COLS, b.dy, b.x, b.w, b.rstd, 0, UBG_CAST_LLAMA, b.x, b.dw), UBG_EINVAL,
          "must not overlap");
  refused(ubg_rms_norm_bwd(ctx, UBG_F32, ROWS, COLS, b.dy, b.x, b.w, b.rstd, 0, UBG_CAST_LLAMA, b.dx, b.dx),
          UBG_EINVAL, "overlap");
  cr_assert_eq(fwd(UBG_F32, ROWS, COLS, xy, b.w, 1e-6f, UBG_CAST_LLAMA, xy, b.rstd), UBG_OK, "%s", ubg_ctx_error(ctx));
}

Test(budget, forced_variant_over_budget_names_both_sizes, .init = setup, .fini = teardown) {
  /* d65536 non-tiled f32: x tile 256 KiB + w tile 256 KiB */
  ubg_status s = ubg_set_variant(ctx, "rms_norm", "fwd", "rms_norm_fwd_f32_d65536_m1_n");
  cr_assert_eq(s, UBG_EUB, "%s", ubg_status_str(s));
  const char *msg = ubg_ctx_error(ctx);
  cr_assert(strstr(msg, "524288") && strstr(msg, "176947"), "message: %s", msg);
  /* and the context keeps choosing automatically */
  cr_assert_eq(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_OK);
  tc_assert_aot(ubg_ctx_last_variant(ctx), "rms_norm_fwd_f32_d64_m32_n", "the last call");
}

Test(budget, smaller_budget_changes_choice_and_refusals) {
  ubg_config cfg = {0};
  cfg.ub_bytes = 16384; /* usable 14745 */
  ubg_ctx *small;
  cr_assert_eq(ubg_ctx_create(&cfg, &small), UBG_OK);
  cr_assert_eq(ubg_set_variant(small, "rms_norm", "fwd", "rms_norm_fwd_f32_d4096_m1_n"), UBG_EUB);
  cr_assert(strstr(ubg_ctx_error(small), "32768") && strstr(ubg_ctx_error(small), "14745"), "%s",
            ubg_ctx_error(small));
  static float x[2 * 4096], y[2 * 4096], rstd[2];
  for (int i = 0; i < 2 * 4096; i++) x[i] = 1.0f;
  cr_assert_eq(ubg_rms_norm_fwd(small, UBG_F32, 2, 4096, x, NULL, 0, 0, UBG_CAST_LLAMA, y, rstd), UBG_OK);
  /* 2 x BLOCK_D x 4 bytes <= 14745: the largest tiled BLOCK_D is 1024 */
  tc_assert_aot(ubg_ctx_last_variant(small), "rms_norm_fwd_f32_d1024_m1_t", "the last call");
  cr_assert_float_eq(y[4095], 1.0f, 1e-6);
  ubg_ctx_destroy(small);
}

Test(budget, forced_variant_that_does_not_apply, .init = setup, .fini = teardown) {
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "fwd", "rms_norm_fwd_f32_d16_m1_n"), UBG_OK);
  refused(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL, "BLOCK_D=16 cols=37");
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "fwd", NULL), UBG_OK);
  cr_assert_eq(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_OK);
}

Test(variants, set_variant_errors, .init = setup, .fini = teardown) {
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "fwd", "rms_norm_fwd_f32_d17_m1_n"), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(ctx), "d17"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_set_variant(ctx, "nope", "fwd", NULL), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(ctx), "rms_norm"), "the message lists known kernels: %s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "sideways", NULL), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(ctx), "fwd, bwd"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_set_variant(NULL, "rms_norm", "fwd", NULL), UBG_EINVAL);
  /* a forced variant is per dtype: bf16 calls stay automatic */
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "fwd", "rms_norm_fwd_f32_d1024_m1_t"), UBG_OK);
  cr_assert_eq(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_OK);
  tc_assert_aot(ubg_ctx_last_variant(ctx), "rms_norm_fwd_f32_d1024_m1_t", "the last call");
  uint16_t xb[ROWS * COLS] = {0}, yb[ROWS * COLS];
  cr_assert_eq(fwd(UBG_BF16, ROWS, COLS, xb, NULL, 1e-6f, UBG_CAST_LLAMA, yb, b.rstd), UBG_OK);
  tc_assert_aot(ubg_ctx_last_variant(ctx), "rms_norm_fwd_bf16_d64_m32_n", "the last call");
}

/* UBGEN_VARIANT forces variants of any pass, kernel.pass=variant entries
 * separated by ';', as ubg_set_variant does; ubg_set_variant replaces one
 * later; a bad entry fails the context's creation, named */
Test(variants, forced_from_the_environment) {
  setenv("UBGEN_VARIANT", " rms_norm.fwd=rms_norm_fwd_f32_d1024_m1_t ;; flce.chunk=chunk=8 ", 1);
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  unsetenv("UBGEN_VARIANT");
  setup_buffers_only();
  cr_assert_eq(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_OK);
  tc_assert_aot(ubg_ctx_last_variant(ctx), "rms_norm_fwd_f32_d1024_m1_t", "the last call");
  float y_forced[ROWS * COLS];
  memcpy(y_forced, b.y, sizeof b.y);
  cr_assert_eq(ubg_set_variant(ctx, "rms_norm", "fwd", NULL), UBG_OK);
  cr_assert_eq(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_OK);
  tc_assert_aot(ubg_ctx_last_variant(ctx), "rms_norm_fwd_f32_d64_m32_n", "the last call");
  cr_assert(!memcmp(y_forced, b.y, sizeof b.y), "the forced variant's bits are the default's");
  ubg_ctx_destroy(ctx);
  static const char *const bad[][2] = {
      {"rms_norm.fwd", "UBGEN_VARIANT entry \"rms_norm.fwd\" is not kernel.pass=variant"},
      {"rms_norm=x", "is not kernel.pass=variant"},
      {"rms_norm.fwd=rms_norm_fwd_f32_d17_m1_n", "UBGEN_VARIANT entry rms_norm.fwd=rms_norm_fwd_f32_d17_m1_n: "},
      {"flce.chunk=chunk=0", "UBGEN_VARIANT entry flce.chunk=chunk=0: flce.chunk has no variant"},
      {"nope.fwd=x", "UBGEN_VARIANT entry nope.fwd=x: "},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("UBGEN_VARIANT", bad[i][0], 1);
    ctx = NULL;
    cr_assert_neq(ubg_ctx_create(NULL, &ctx), UBG_OK, "UBGEN_VARIANT=%s", bad[i][0]);
    cr_assert_null(ctx);
    cr_assert(strstr(ubg_ctx_error(NULL), bad[i][1]), "UBGEN_VARIANT=%s: %s", bad[i][0], ubg_ctx_error(NULL));
  }
  unsetenv("UBGEN_VARIANT");
}

/* ubg_prepare gets code ready without running it, says which code serves
 * the variant, and refuses what names nothing */
Test(variants, prepare_finds_the_code_and_refuses_bad_names, .init = setup, .fini = teardown) {
  cr_assert_eq(ubg_prepare(ctx, "rms_norm", "fwd", UBG_F32, "rms_norm_fwd_f32_d1024_m1_t"), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  tc_assert_aot(ubg_ctx_last_variant(ctx), "rms_norm_fwd_f32_d1024_m1_t", "the last call");
  cr_assert_eq(ubg_prepare(ctx, "rms_norm", "bwd", UBG_BF16, NULL), UBG_OK, "every variant: %s", ubg_ctx_error(ctx));
  cr_assert(strstr(ubg_ctx_last_variant(ctx), "rms_norm_bwd_bf16_"), "%s", ubg_ctx_last_variant(ctx));
  cr_assert_eq(ubg_prepare(ctx, "rms_norm", "fwd", UBG_F32, "rms_norm_fwd_f32_d17_m1_n"), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(ctx), "d17"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_prepare(ctx, "rms_norm", "fwd", UBG_BF16, "rms_norm_fwd_f32_d1024_m1_t"), UBG_ENOTFOUND,
               "a variant of another dtype");
  cr_assert_eq(ubg_prepare(ctx, "rms_norm", "fwd", (ubg_dtype)7, NULL), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "7"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_prepare(ctx, "nope", "fwd", UBG_F32, NULL), UBG_ENOTFOUND);
  cr_assert_eq(ubg_prepare(NULL, "rms_norm", "fwd", UBG_F32, NULL), UBG_EINVAL);
}

/* ubg_launch_sized refuses a buffer whose byte size is not its shape's,
 * naming it, the shape and both sizes, before anything is written */
Test(launch, sized_refuses_a_buffer_of_the_wrong_size, .init = setup, .fini = teardown) {
  ubg_arg args[] = {{"x", UBG_ARG_PTR, {.p = b.x}},      {"y", UBG_ARG_PTR, {.p = b.y}},
                    {"rstd", UBG_ARG_PTR, {.p = b.rstd}}, {"rows", UBG_ARG_I64, {.i = ROWS}},
                    {"cols", UBG_ARG_I64, {.i = COLS}}};
  int64_t sizes[] = {sizeof b.x, sizeof b.y - 4, sizeof b.rstd, -7, 0};
  refused(ubg_launch_sized(ctx, "rms_norm", "fwd", UBG_F32, args, 5, sizes), UBG_EINVAL, "y is a buffer of");
  cr_assert(strstr(ubg_ctx_error(ctx), "[rows, cols] = [4, 37] of f32 needs 592"), "%s", ubg_ctx_error(ctx));
  int64_t half[] = {sizeof b.x / 2, sizeof b.y, sizeof b.rstd, 0, 0}; /* a bf16-sized x where f32 is wanted */
  refused(ubg_launch_sized(ctx, "rms_norm", "fwd", UBG_F32, args, 5, half), UBG_EINVAL, "x is a buffer of 296 bytes");
  sizes[1] = sizeof b.y;
  cr_assert_eq(ubg_launch_sized(ctx, "rms_norm", "fwd", UBG_F32, args, 5, sizes), UBG_OK, "%s", ubg_ctx_error(ctx));
  int64_t unknown[] = {-1, -1, -1, -1, -1};
  cr_assert_eq(ubg_launch_sized(ctx, "rms_norm", "fwd", UBG_F32, args, 5, unknown), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_launch_sized(NULL, "rms_norm", "fwd", UBG_F32, args, 5, sizes), UBG_EINVAL);
}

/* ubg_arg_info: every argument of a pass and of a composite op, with the
 * element type of the call's dtype and whether the call writes it */
Test(launch, arg_info_describes_passes_and_composites, .init = setup, .fini = teardown) {
  const char *name, *elem;
  ubg_arg_kind kind;
  int written;
  cr_assert_eq(ubg_arg_info(ctx, "rms_norm", "fwd", UBG_BF16, 0, &name, &kind, &elem, &written), UBG_OK);
  cr_assert(!strcmp(name, "x") && kind == UBG_ARG_PTR && !strcmp(elem, "bf16") && !written);
  int n = 0, outs = 0;
  while (ubg_arg_info(ctx, "rms_norm", "fwd", UBG_BF16, n, &name, &kind, &elem, &written) == UBG_OK) {
    if (!strcmp(name, "rstd")) cr_assert(!strcmp(elem, "f32") && written, "rstd is an f32 output");
    if (!strcmp(name, "rows")) cr_assert(kind == UBG_ARG_I64 && elem == NULL && !written);
    outs += written, n++;
  }
  cr_assert_eq(outs, 2, "y and rstd");
  cr_assert(strstr(ubg_ctx_error(ctx), "no argument number"), "%s", ubg_ctx_error(ctx));
  bool target = false;
  for (int i = 0; ubg_arg_info(ctx, "flce", "chunk", UBG_F16, i, &name, &kind, &elem, &written) == UBG_OK; i++)
    if (!strcmp(name, "target")) target = !strcmp(elem, "i64") && !written;
  cr_assert(target, "flce.chunk's target is an i64 input");
  cr_assert_eq(ubg_arg_info(ctx, "rms_norm", "nope", UBG_F32, 0, &name, &kind, &elem, &written), UBG_ENOTFOUND);
  cr_assert_eq(ubg_arg_info(ctx, "rms_norm", "fwd", (ubg_dtype)7, 0, &name, &kind, &elem, &written), UBG_EINVAL);
  cr_assert_eq(ubg_arg_info(NULL, "rms_norm", "fwd", UBG_F32, 0, &name, &kind, &elem, &written), UBG_EINVAL);
}

typedef struct {
  int64_t cols;
  char variant[160];
  char error[256];
} thread_probe;

static void *probe(void *arg) {
  thread_probe *t = arg;
  static float x[2 * 5000], y[2 * 5000];
  float rstd[2];
  ubg_rms_norm_fwd(ctx, UBG_F32, 2, t->cols, x, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd);
  snprintf(t->variant, sizeof t->variant, "%s", ubg_ctx_last_variant(ctx));
  ubg_rms_norm_fwd(ctx, UBG_F32, -7, t->cols, x, NULL, 1e-6f, 0, UBG_CAST_LLAMA, y, rstd);
  snprintf(t->error, sizeof t->error, "%s", ubg_ctx_error(ctx));
  return NULL;
}

Test(variants, last_variant_and_error_are_per_thread, .init = setup, .fini = teardown) {
  cr_assert_eq(fwd(UBG_F32, ROWS, COLS, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_OK);
  cr_assert_eq(fwd(UBG_F32, ROWS, 0, b.x, b.w, 1e-6f, UBG_CAST_LLAMA, b.y, b.rstd), UBG_EINVAL);
  thread_probe t = {5000, "", ""};
  pthread_t th;
  pthread_create(&th, NULL, probe, &t);
  pthread_join(th, NULL);
  tc_assert_aot(t.variant, "rms_norm_fwd_f32_d8192_m1_n", "the last call");
  cr_assert(strstr(t.error, "rows = -7"), "%s", t.error);
  /* this thread's own are unchanged */
  tc_assert_aot(ubg_ctx_last_variant(ctx), "rms_norm_fwd_f32_d64_m32_n", "the last call");
  cr_assert(strstr(ubg_ctx_error(ctx), "cols = 0"), "%s", ubg_ctx_error(ctx));
  /* a new context starts clean */
  ubg_ctx *other;
  cr_assert_eq(ubg_ctx_create(NULL, &other), UBG_OK);
  cr_assert_str_eq(ubg_ctx_last_variant(other), "");
  cr_assert_str_eq(ubg_ctx_error(other), "");
  ubg_ctx_destroy(other);
}

/* ---- configuration ---------------------------------------------------- */

static void create_fails(const ubg_config *cfg, const char *name) {
  ubg_ctx *c = (ubg_ctx *)1;
  ubg_status s = ubg_ctx_create(cfg, &c);
  cr_assert_eq(s, UBG_EINVAL, "%s", ubg_status_str(s));
  cr_assert_null(c);
  cr_assert(strstr(ubg_ctx_error(NULL), name), "\"%s\" does not name %s", ubg_ctx_error(NULL), name);
}

Test(config, bad_values) {
  ubg_config cfg = {0};
  cfg.threads = -2;
  create_fails(&cfg, "threads = -2");
  cfg.threads = 0;
  cfg.safety_margin = 1.5;
  create_fails(&cfg, "safety_margin = 1.5");
  cfg.safety_margin = 0;
  cfg.ub_bytes = 100;
  create_fails(&cfg, "ub_bytes = 100");
  cfg.ub_bytes = 0;
  cfg.backend = (ubg_backend)9;
  create_fails(&cfg, "backend = 9");
  cr_assert_eq(ubg_ctx_create(NULL, NULL), UBG_EINVAL);
}

Test(config, bad_environment) {
  setenv("UBGEN_THREADS", "many", 1);
  create_fails(NULL, "UBGEN_THREADS");
  unsetenv("UBGEN_THREADS");
  setenv("UBGEN_UB_BYTES", "12 parsecs", 1);
  create_fails(NULL, "UBGEN_UB_BYTES");
  unsetenv("UBGEN_UB_BYTES");
  setenv("UBGEN_BACKEND", "llvm", 1);
  create_fails(NULL, "UBGEN_BACKEND");
  unsetenv("UBGEN_BACKEND");
  setenv("UBGEN_UB_GUARD", "yes", 1);
  create_fails(NULL, "UBGEN_UB_GUARD");
}

Test(config, spec_path_from_the_config_or_the_environment) {
  unsetenv("UBGEN_SPEC_PATH");
  ubg_ctx *c;
  cr_assert_eq(ubg_ctx_create(NULL, &c), UBG_OK, "%s", ubg_ctx_error(NULL));
  cr_assert_eq(ubg_prepare(c, "tune_probe", "fwd", UBG_F32, NULL), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(c), "UBGEN_SPEC_PATH") && strstr(ubg_ctx_error(c), "ubg_config.spec_path"), "%s",
            ubg_ctx_error(c));
  ubg_ctx_destroy(c);
  /* a user's kernel through the config, no environment */
  ubg_config cfg = {0};
  cfg.spec_path = UBGEN_SRC "/tests/specs";
  cr_assert_eq(ubg_ctx_create(&cfg, &c), UBG_OK, "%s", ubg_ctx_error(NULL));
  cr_assert_eq(ubg_prepare(c, "tune_probe", "fwd", UBG_F32, NULL), UBG_OK, "%s", ubg_ctx_error(c));
  ubg_ctx_destroy(c);
  /* the config wins over the environment, and a bad path names its source */
  setenv("UBGEN_SPEC_PATH", UBGEN_SRC "/tests/specs", 1);
  cfg.spec_path = "/nonexistent/ubgen-specs";
  create_fails(&cfg, "ubg_config.spec_path");
  cfg.spec_path = NULL;
  cr_assert_eq(ubg_ctx_create(&cfg, &c), UBG_OK, "%s", ubg_ctx_error(NULL));
  cr_assert_eq(ubg_prepare(c, "tune_probe", "fwd", UBG_F32, NULL), UBG_OK, "%s", ubg_ctx_error(c));
  ubg_ctx_destroy(c);
  setenv("UBGEN_SPEC_PATH", "/nonexistent/ubgen-specs", 1);
  create_fails(NULL, "UBGEN_SPEC_PATH");
  unsetenv("UBGEN_SPEC_PATH");
}

/* the budget as seen in the EUB message of an oversized variant */
static void expect_usable(const char *usable) {
  ubg_ctx *c;
  cr_assert_eq(ubg_ctx_create(NULL, &c), UBG_OK, "%s", ubg_ctx_error(NULL));
  cr_assert_eq(ubg_set_variant(c, "rms_norm", "fwd", "rms_norm_fwd_f32_d65536_m1_n"), UBG_EUB);
  cr_assert(strstr(ubg_ctx_error(c), usable), "wanted %s in: %s", usable, ubg_ctx_error(c));
  ubg_ctx_destroy(c);
}

Test(config, ub_bytes_from_environment) {
  setenv("UBGEN_UB_BYTES", "64KiB", 1);
  expect_usable("allows 58982 "); /* floor(65536 * 0.9) */
  unsetenv("UBGEN_UB_BYTES");
  setenv("ASCEND_UB_CAPACITY_BITS", "2097152", 1); /* 256 KiB */
  expect_usable("allows 235929 ");
  setenv("UBGEN_UB_BYTES", "192KiB", 1); /* ubgen's own variable wins */
  expect_usable("allows 176947 ");
  unsetenv("UBGEN_UB_BYTES");
  setenv("ASCEND_UB_CAPACITY_BITS", "lots", 1); /* ignored, as Liger-Kernel ignores it */
  expect_usable("allows 176947 ");
}

/* ---- the generic entry --------------------------------------------------- */

Test(launch, generic_errors, .init = setup, .fini = teardown) {
  ubg_arg ok[] = {
      {"x", UBG_ARG_PTR, {.p = b.x}},    {"y", UBG_ARG_PTR, {.p = b.y}},   {"rstd", UBG_ARG_PTR, {.p = b.rstd}},
      {"rows", UBG_ARG_I64, {.i = ROWS}}, {"cols", UBG_ARG_I64, {.i = COLS}},
  };
  /* eps, offset and casting have spec defaults; w is optional */
  cr_assert_eq(ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, ok, 5), UBG_OK, "%s", ubg_ctx_error(ctx));
  memset(b.y, SENTINEL, sizeof b.y);
  refused(ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, ok, 4), UBG_EINVAL, "cols is missing");
  ubg_arg unknown[6];
  memcpy(unknown, ok, sizeof ok);
  unknown[5] = (ubg_arg){"epsilon", UBG_ARG_F64, {.f = 1e-5}};
  refused(ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, unknown, 6), UBG_EINVAL, "no argument \"epsilon\"");
  unknown[5] = (ubg_arg){"rows", UBG_ARG_I64, {.i = ROWS}};
  refused(ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, unknown, 6), UBG_EINVAL, "rows is given twice");
  unknown[5] = (ubg_arg){"eps", UBG_ARG_I64, {.i = 1}};
  refused(ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, unknown, 6), UBG_EINVAL, "eps must be a float");
  unknown[5] = (ubg_arg){NULL, UBG_ARG_I64, {.i = 1}};
  refused(ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, unknown, 6), UBG_EINVAL, "args[5].name is NULL");
  unknown[5] = (ubg_arg){"casting", UBG_ARG_I64, {.i = 7}};
  refused(ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, unknown, 6), UBG_EINVAL, "1 (gemma)");
  refused(ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, NULL, 3), UBG_EINVAL, "args is NULL");
  refused(ubg_launch(ctx, "rms_norm", "sideways", UBG_F32, ok, 5), UBG_ENOTFOUND, "no pass");
  refused(ubg_launch(ctx, "no_such_norm", "fwd", UBG_F32, ok, 5), UBG_ENOTFOUND, "no kernel named");
  /* the message names the variable that would add a kernel */
  cr_assert(strstr(ubg_ctx_error(ctx), "UBGEN_SPEC_PATH"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_launch(NULL, "rms_norm", "fwd", UBG_F32, ok, 5), UBG_EINVAL);
}

Test(launch, flce_opts_defaults, .init = setup, .fini = teardown) {
  ubg_flce_opts o;
  ubg_flce_opts_init(&o);
  cr_assert_eq(o.ignore_index, -100);
  cr_assert_eq(o.reduction, UBG_REDUCE_MEAN);
  cr_assert_eq(o.ce_weight, NULL);
  float loss = 0;
  ubg_flce_out out = {.loss = &loss};
  cr_assert_eq(ubg_flce(ctx, UBG_F32, 1, 1, 1, b.x, b.w, NULL, &o, &out), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "target is NULL"), "%s", ubg_ctx_error(ctx));
}

Test(launch, status_strings) {
  cr_assert_str_eq(ubg_status_str(UBG_OK), "UBG_OK");
  cr_assert_str_eq(ubg_status_str(UBG_EUB), "UBG_EUB");
  cr_assert_str_eq(ubg_status_str((ubg_status)99), "UBG_(unknown status)");
}

/* ---- guard mode ---------------------------------------------------------- */

/* guard_probe (tests/specs) writes n floats of UB; its arena is 196608 bytes */
static ubg_status probe_write(int64_t n) {
  ubg_ctx *c;
  cr_assert_eq(ubg_ctx_create(NULL, &c), UBG_OK, "%s", ubg_ctx_error(NULL));
  float out = 0;
  ubg_arg args[] = {{"out", UBG_ARG_PTR, {.p = &out}}, {"n", UBG_ARG_I64, {.i = n}}};
  ubg_status s = ubg_launch(c, "guard_probe", "fwd", UBG_F32, args, 2);
  cr_assert_eq(s, UBG_OK, "%s", ubg_ctx_error(c));
  cr_assert_float_eq(out, (double)n * (double)(n - 1) / 2, 1e-3 * (double)n * (double)n);
  ubg_ctx_destroy(c);
  return s;
}

Test(guard, whole_arena_is_usable) {
  setenv("UBGEN_UB_GUARD", "1", 1);
  probe_write(196608 / 4); /* the last float ends exactly at the guard page */
}

Test(guard, overrun_faults, .signal = SIGSEGV) {
  setenv("UBGEN_UB_GUARD", "1", 1);
  probe_write(196608 / 4 + 1);
}

/* ---- a composite op that is only data (tests/specs/scale_rows.json) ------ */

static ubg_ctx *composite_ctx(void) {
  ubg_config cfg = {0};
  cfg.spec_path = UBGEN_SRC "/tests/specs";
  cfg.tuning_db = "/nonexistent/ubgen-test-no-db";
  cfg.threads = 2;
  ubg_ctx *c;
  cr_assert_eq(ubg_ctx_create(&cfg, &c), UBG_OK, "%s", ubg_ctx_error(NULL));
  return c;
}

static ubg_status scale_rows(ubg_ctx *c, int64_t m, int64_t n, const float *x, float *y, float *z, double a) {
  const ubg_arg args[] = {{"x", UBG_ARG_PTR, {.p = (void *)x}}, {"y", UBG_ARG_PTR, {.p = y}},
                          {"z", UBG_ARG_PTR, {.p = z}},         {"m", UBG_ARG_I64, {.i = m}},
                          {"n", UBG_ARG_I64, {.i = n}},         {"a", UBG_ARG_F64, {.f = a}}};
  return ubg_launch(c, "scale_rows", "rows", UBG_F32, args, 6);
}

/* ubg_launch runs it by name, chunk rows at a time, each chunk step with its
 * rows and offsets, the optional step where its tensor is given */
Test(composite, a_spec_only_op_runs_by_name) {
  ubg_ctx *c = composite_ctx();
  enum { M = 37, N = 10 };
  float x[M * N], y[M * N], z[M * N];
  for (int i = 0; i < M * N; i++) x[i] = (float)(i % 17) - 8.0f, y[i] = z[i] = -1.0f;
  cr_assert_eq(scale_rows(c, M, N, x, y, NULL, 0.5), UBG_OK, "%s", ubg_ctx_error(c));
  for (int i = 0; i < M * N; i++) cr_assert_eq(y[i], 0.5f * x[i], "y[%d] = %g", i, y[i]);
  cr_assert_eq(z[0], -1.0f, "z is not given: untouched");
  /* the spec's default chunk, cdiv(m, 4) = 10 rows: four chunks, the second step skipped */
  cr_assert(strstr(ubg_ctx_last_variant(c), ";-;chunk=10 (spec rule)"), "%s", ubg_ctx_last_variant(c));
  /* forced by name, as any pass's variant; z given */
  cr_assert_eq(ubg_set_variant(c, "scale_rows", "rows", "chunk=3"), UBG_OK, "%s", ubg_ctx_error(c));
  cr_assert_eq(scale_rows(c, M, N, x, y, z, -2.0), UBG_OK, "%s", ubg_ctx_error(c));
  for (int i = 0; i < M * N; i++) cr_assert(y[i] == -2.0f * x[i] && z[i] == 2.0f * x[i], "row %d", i / N);
  cr_assert(strstr(ubg_ctx_last_variant(c), ";chunk=3 (ubg_set_variant)"), "%s", ubg_ctx_last_variant(c));
  cr_assert(!strstr(ubg_ctx_last_variant(c), ";-;"), "%s", ubg_ctx_last_variant(c));
  /* a chunk above the rows is all of them; zero rows run nothing */
  cr_assert_eq(ubg_set_variant(c, "scale_rows", "rows", "chunk=4096"), UBG_OK, "%s", ubg_ctx_error(c));
  cr_assert_eq(scale_rows(c, M, N, x, y, NULL, 1.0), UBG_OK, "%s", ubg_ctx_error(c));
  cr_assert(strstr(ubg_ctx_last_variant(c), "chunk=37"), "%s", ubg_ctx_last_variant(c));
  cr_assert_eq(scale_rows(c, 0, N, x, y, NULL, 1.0), UBG_OK, "%s", ubg_ctx_error(c));
  cr_assert_eq(ubg_set_variant(c, "scale_rows", "rows", "chunk=0"), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(c), "N from 1 to 4096"), "%s", ubg_ctx_error(c));
  ubg_ctx_destroy(c);
}

/* its arguments are checked as a pass's, before anything is written */
Test(composite, a_spec_only_op_checks_its_arguments) {
  ubg_ctx *c = composite_ctx();
  enum { M = 8, N = 4 };
  float x[M * N] = {0}, y[M * N], z[M * N];
  for (int i = 0; i < M * N; i++) y[i] = z[i] = 7.0f;
  const struct {
    int64_t m, n;
    const float *x;
    float *y, *z;
    double a;
    const char *says;
  } bad[] = {{M, N, NULL, y, z, 1.0, "scale_rows.rows: x is NULL"},
             {M, 0, x, y, z, 1.0, "n = 0 is below its minimum 1"},
             {M, N, x, y, z, 9.0, "a = 9 is above its maximum 8"},
             {M, N, x, y, y, 1.0, "overlap"},
             {-1, N, x, y, z, 1.0, "m = -1 is below its minimum 0"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_assert_eq(scale_rows(c, bad[i].m, bad[i].n, bad[i].x, bad[i].y, bad[i].z, bad[i].a), UBG_EINVAL, "case %zu", i);
    cr_assert(strstr(ubg_ctx_error(c), bad[i].says), "case %zu: %s", i, ubg_ctx_error(c));
  }
  for (int i = 0; i < M * N; i++) cr_assert(y[i] == 7.0f && z[i] == 7.0f, "a refused call wrote [%d]", i);
  /* a spec check over the dtype: bf16 rows of odd length */
  uint16_t hx[3 * 5] = {0}, hy[3 * 5];
  const ubg_arg args[] = {{"x", UBG_ARG_PTR, {.p = hx}}, {"y", UBG_ARG_PTR, {.p = hy}}, {"m", UBG_ARG_I64, {.i = 3}},
                          {"n", UBG_ARG_I64, {.i = 5}}};
  cr_assert_eq(ubg_launch(c, "scale_rows", "rows", UBG_BF16, args, 4), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(c), "fails with dtype=2 (bf16) n=5"), "%s", ubg_ctx_error(c));
  ubg_ctx_destroy(c);
}

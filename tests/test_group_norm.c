/* GroupNorm against the double-precision reference (specs/group_norm_ref.c):
 * every feasible variant, forced, over x [batch, groups, cols] from one
 * element to rows longer than any whole-row variant holds, channels of
 * one element and of more than a tile, channel ends inside a tile and a
 * channel across tiles, an empty batch; every dtype, forward (y, mean,
 * rstd) and backward (dx, dw, db from the forward's mean and rstd); every
 * variant and 1 or 2 threads give the same bits; dx over dy gives the same
 * bits; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test_group_norm.py uses atol = rtol = 1e-4
 * (f32, against torch.nn.GroupNorm). Here f32 1e-4 / 1e-5, as LayerNorm's:
 * rows of up to 131,072 elements sum in f32 lanes, where the reference sums
 * in double (dw and db, up to 16 x 4096 terms each, sum in double); f16
 * 1e-2, bf16 2e-2. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t batch, channels, groups, cols;
} gn_case;

/* Liger's shapes ({1, 1, 1, 3}, {1, 32, 32, 4}, {16, 32, 1, 32 x 4096}, {2, 63, 21, 3 x 2163}) and the edges above */
static const gn_case cases[] = {{1, 1, 1, 1},     {1, 1, 1, 3},          {1, 32, 32, 4}, {3, 6, 2, 15},
                                {5, 12, 3, 492},  {2, 63, 21, 6489},     {2, 8, 2, 40000},
                                {16, 32, 1, 131072}, {0, 4, 2, 6}};
static const double tol_atol[3] = {1e-4, 1e-2, 2e-2}, tol_rtol[3] = {1e-5, 1e-2, 2e-2};
static const float EPS = 1e-6f;

static void close_to(const void *got, int dt, const double *want, int64_t n, const char *what, const char *name,
                     const gn_case *c) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, tol_atol[dt], tol_rtol[dt], &err);
  cr_assert(bad < 0, "%s %lldx%lldx%lld (%lld groups) %s: %s[%lld] = %.9g, reference %.9g", name, (long long)c->batch,
            (long long)c->channels, (long long)c->cols, (long long)c->groups, ug_dtype_name(dt), what, (long long)bad,
            ref_load(got, bad, dt), want[bad]);
}

static void sweep(int dt, const gn_case *c) {
  const int64_t B = c->batch, C = c->channels, G = c->groups, D = c->cols, R = B * G, n = R * D;
  tc_skip_if_large(n, "batch x groups x cols");
  const size_t es = ref_dtype_bytes(dt), bytes = (size_t)n * es;
  void *x = tc_tensor(dt, n, 0.5, 2, (uint64_t)(n + 1)), *w = tc_tensor(dt, C, 1, 0.5, 2), *b = tc_tensor(dt, C, 0, 1, 3);
  void *dy = tc_tensor(dt, n, 0, 1, 4);
  /* the reference's forward, and its backward from the kernel's mean and rstd */
  double *y_ref = malloc((size_t)(n + 1) * sizeof(double)), *mean_ref = malloc((size_t)(R + 1) * sizeof(double));
  double *rstd_ref = malloc((size_t)(R + 1) * sizeof(double));
  ref_slot fa[11] = {{.p = x}, {.p = w}, {.p = b}, {0}, {0}, {0}, {.i = B}, {.i = C}, {.i = G}, {.i = D}, {.f = EPS}};
  double *fo[11] = {0};
  fo[3] = y_ref, fo[4] = mean_ref, fo[5] = rstd_ref;
  ref_find("group_norm", "fwd")->fn(fa, dt, fo);
  void *y = malloc(bytes + 1), *y0 = malloc(bytes + 1), *dx = malloc(bytes + 1), *dx0 = malloc(bytes + 1);
  float *mean = malloc((size_t)(R + 1) * 4), *rstd = malloc((size_t)(R + 1) * 4);
  float *mean0 = malloc((size_t)(R + 1) * 4), *rstd0 = malloc((size_t)(R + 1) * 4);
  void *dw = malloc((size_t)C * es), *db = malloc((size_t)C * es), *dw0 = malloc((size_t)C * es), *db0 = malloc((size_t)C * es);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("group_norm", pn, dt);
    int ran = 0;
    for (int v = 0; v < vs.n; v++) {
      if (!tc_applies(&vs.v[v], D)) continue;
      for (int k = 0; k < 2; k++) {
        ubg_ctx *ctx = ctxs[k];
        cr_assert_eq(ubg_set_variant(ctx, "group_norm", pn, vs.v[v].name), UBG_OK, "%s", ubg_ctx_error(ctx));
        ubg_status s;
        if (!pass) {
          memset(y, 0xff, bytes), memset(mean, 0xff, (size_t)R * 4), memset(rstd, 0xff, (size_t)R * 4);
          s = ubg_group_norm_fwd(ctx, dt, B, C, G, D, x, w, b, EPS, y, mean, rstd);
        } else {
          memset(dx, 0xff, bytes), memset(dw, 0xff, (size_t)C * es), memset(db, 0xff, (size_t)C * es);
          s = ubg_group_norm_bwd(ctx, dt, B, C, G, D, dy, x, w, mean0, rstd0, dx, dw, db);
        }
        cr_assert_eq(s, UBG_OK, "%s: %s", vs.v[v].name, ubg_ctx_error(ctx));
        if (ran == 0 && k == 0) {
          if (!pass) {
            close_to(y, dt, y_ref, n, "y", vs.v[v].name, c);
            close_to(mean, 0, mean_ref, R, "mean", vs.v[v].name, c);
            close_to(rstd, 0, rstd_ref, R, "rstd", vs.v[v].name, c);
            memcpy(y0, y, bytes), memcpy(mean0, mean, (size_t)R * 4), memcpy(rstd0, rstd, (size_t)R * 4);
          } else {
            double *dx_ref = malloc((size_t)(n + 1) * sizeof(double));
            double *dw_ref = malloc((size_t)C * sizeof(double)), *db_ref = malloc((size_t)C * sizeof(double));
            ref_slot ba[12] = {{.p = dy}, {.p = x}, {.p = w}, {.p = mean0}, {.p = rstd0}, {0},
                               {0},       {0},      {.i = B}, {.i = C},     {.i = G},      {.i = D}};
            double *bo[12] = {0};
            bo[5] = dx_ref, bo[6] = dw_ref, bo[7] = db_ref;
            ref_find("group_norm", "bwd")->fn(ba, dt, bo);
            close_to(dx, dt, dx_ref, n, "dx", vs.v[v].name, c);
            close_to(dw, dt, dw_ref, C, "dw", vs.v[v].name, c);
            close_to(db, dt, db_ref, C, "db", vs.v[v].name, c);
            free(dx_ref), free(dw_ref), free(db_ref);
            memcpy(dx0, dx, bytes), memcpy(dw0, dw, (size_t)C * es), memcpy(db0, db, (size_t)C * es);
          }
        } else if (!pass) {
          cr_assert(!memcmp(y, y0, bytes) && !memcmp(mean, mean0, (size_t)R * 4) && !memcmp(rstd, rstd0, (size_t)R * 4),
                    "%s (%d threads) %lldx%lldx%lld: forward bits differ", vs.v[v].name, k + 1, (long long)B,
                    (long long)C, (long long)D);
        } else {
          cr_assert(!memcmp(dx, dx0, bytes) && !memcmp(dw, dw0, (size_t)C * es) && !memcmp(db, db0, (size_t)C * es),
                    "%s (%d threads) %lldx%lldx%lld: backward bits differ", vs.v[v].name, k + 1, (long long)B,
                    (long long)C, (long long)D);
        }
      }
      ran++;
    }
    cr_assert_gt(ran, 0, "no %s variant applies to cols = %lld", pn, (long long)D);
    tc_free_variants(&vs);
  }
  /* dx over dy, y over x: the same bits */
  cr_assert_eq(ubg_set_variant(ctxs[1], "group_norm", "fwd", NULL), UBG_OK);
  cr_assert_eq(ubg_set_variant(ctxs[1], "group_norm", "bwd", NULL), UBG_OK);
  memcpy(y, x, bytes);
  cr_assert_eq(ubg_group_norm_fwd(ctxs[1], dt, B, C, G, D, y, w, b, EPS, y, mean, rstd), UBG_OK, "%s",
               ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(y, y0, bytes), "y over x differs");
  memcpy(dx, dy, bytes);
  cr_assert_eq(ubg_group_norm_bwd(ctxs[1], dt, B, C, G, D, dx, x, w, mean0, rstd0, dx, dw, db), UBG_OK, "%s",
               ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(dx, dx0, bytes), "dx over dy differs");
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(x), free(w), free(b), free(dy), free(y_ref), free(mean_ref), free(rstd_ref), free(y), free(y0), free(dx);
  free(dx0), free(mean), free(rstd), free(mean0), free(rstd0), free(dw), free(db), free(dw0), free(db0);
}

Test(group_norm, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

Test(group_norm, refusals_write_nothing) {
  enum { B = 2, C = 4, G = 2, D = 6 };
  float x[B * G * D], w[C], b[C], y[B * G * D], mean[B * G], rstd[B * G], dx[B * G * D], dw[C], db[C];
  for (int i = 0; i < B * G * D; i++) x[i] = (float)i, y[i] = dx[i] = 7;
  for (int i = 0; i < C; i++) w[i] = 1, b[i] = 0, dw[i] = db[i] = 7;
  for (int i = 0; i < B * G; i++) mean[i] = rstd[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, 3, D, x, w, b, 1e-6f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "channels=4") && strstr(ubg_ctx_error(ctx), "groups=3"), "%s",
            ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, G, 5, x, w, b, 1e-6f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols=5"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, G, D, x, NULL, b, 1e-6f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "w is NULL"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, G, D, x, w, b, 1.0f / 0.0f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "eps"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, 0, D, x, w, b, 1e-6f, y, mean, rstd), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "groups = 0"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_group_norm_fwd(ctx, UBG_F32, B, C, G, D, x, w, b, 1e-6f, y, mean, mean), UBG_EINVAL, "rstd over mean");
  cr_assert_eq(ubg_group_norm_bwd(ctx, UBG_F32, B, C, G, D, x, x, w, mean, rstd, dx, dw, w), UBG_EINVAL, "db over w");
  cr_assert_eq(ubg_group_norm_bwd(ctx, UBG_F32, B, 8, G, D, x, x, w, mean, rstd, dx, dw, db), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols=6"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < B * G * D; i++) cr_assert(y[i] == 7 && dx[i] == 7);
  for (int i = 0; i < C; i++) cr_assert(dw[i] == 7 && db[i] == 7 && w[i] == 1);
  cr_assert(mean[0] == 7 && rstd[B * G - 1] == 7);
  ubg_ctx_destroy(ctx);
}

/* Whole ubg_flce calls on a library's GEMMs (oneDNN, AMX tiles) against
 * the double reference, shared by test_flce_onednn.c and test_flce_amx.c:
 * a library sums in its own order and, in 16-bit dtypes, takes the logits'
 * gradient rounded to the dtype, so the check is a tolerance, not the
 * generated GEMMs' bits. */
#ifndef UBG_TEST_FLCE_LIBRARY_H
#define UBG_TEST_FLCE_LIBRARY_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ref/flce_ref.h"
#include "test_util.h"

/* |got - want| <= tol (max |want| + |want|) everywhere */
static void expect_near(const char *what, const void *got, int dt, const double *want, int64_t n, double tol,
                        const char *where) {
  double big = 0;
  for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(want[i]));
  for (int64_t i = 0; i < n; i++) {
    const double g = ref_load(got, i, dt);
    cr_assert(fabs(g - want[i]) <= tol * (big + fabs(want[i])), "%s: %s[%lld] = %.9g, reference %.9g (largest %g)",
              where, what, (long long)i, g, want[i], big);
  }
}

typedef struct {
  int dt;
  int64_t bt, h, v;
  bool options; /* bias, class weights, smoothing, z-loss, softcap */
  ubg_reduction red;
  const char *variant;
} flce_lib_case;

/* one call of k on a context of `threads` threads with k->variant forced,
 * which must run the library GEMMs `lib` ("onednn", "amx"); checked
 * against the reference (f32: the sums' error; f16, bf16: 2% of the
 * largest value, the gradient rounded to the dtype for the GEMMs); its dx
 * and dweight into *dx_out, *dw_out when given */
static void flce_lib_call(const flce_lib_case *k, const char *lib, int threads, void **dx_out, void **dw_out) {
  char where[200];
  snprintf(where, sizeof where, "%s bt=%lld H=%lld V=%lld%s %s, %s, %d threads", ug_dtype_name(k->dt),
           (long long)k->bt, (long long)k->h, (long long)k->v, k->options ? " with options" : "",
           k->red == UBG_REDUCE_NONE ? "none" : "mean", k->variant, threads);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, threads);
  cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", k->variant), UBG_OK, "%s: %s", k->variant, ubg_ctx_error(ctx));
  const int dt = k->dt;
  const int64_t bt = k->bt, h = k->h, v = k->v;
  const size_t es = ref_dtype_bytes(dt);
  void *x = tc_tensor(dt, bt * h, 0, 1, 21), *w = tc_tensor(dt, v * h, 0, 0.25, 22), *bias = tc_tensor(dt, v, 0, 0.5, 23);
  float *cw = tc_tensor(REF_F32, v, 1, 0.2, 24), *go = tc_tensor(REF_F32, bt, 1, 0.5, 25);
  int64_t *target = malloc((size_t)bt * sizeof *target);
  uint64_t s = 26;
  for (int64_t i = 0; i < bt; i++) target[i] = i % 7 == 3 ? -100 : (int64_t)(tc_next(&s) % (uint64_t)v);
  ubg_flce_opts o;
  ubg_flce_opts_init(&o);
  o.reduction = k->red;
  if (k->red == UBG_REDUCE_NONE) o.grad_output = go;
  if (k->options) o.label_smoothing = 0.1f, o.lse_square_scale = 1e-3f, o.softcap = 3.0f, o.bias = bias, o.ce_weight = cw;
  const int64_t nl = k->red == UBG_REDUCE_NONE ? bt : 1;
  float *loss = malloc((size_t)nl * 4);
  void *dx = malloc((size_t)(bt * h) * es), *dw = malloc((size_t)(v * h) * es), *db = malloc((size_t)v * es);
  ubg_flce_out out = {loss, NULL, NULL, dx, dw, k->options ? db : NULL, NULL};
  cr_assert_eq(ubg_flce(ctx, (ubg_dtype)dt, bt, h, v, x, w, target, &o, &out), UBG_OK, "%s: %s", where,
               ubg_ctx_error(ctx));
  char ran[64];
  snprintf(ran, sizeof ran, ";%s;%s;", lib, lib);
  cr_assert(!strncmp(ubg_ctx_last_variant(ctx), lib, strlen(lib)) && strstr(ubg_ctx_last_variant(ctx), ran),
            "%s: ran %s", where, ubg_ctx_last_variant(ctx));
  double *rl = malloc((size_t)nl * sizeof *rl), *rdx = malloc((size_t)(bt * h) * sizeof *rdx),
         *rdw = malloc((size_t)(v * h) * sizeof *rdw), *rdb = malloc((size_t)v * sizeof *rdb);
  flce_ref_full(dt, bt, h, v, x, w, target, &o, rl, NULL, NULL, rdx, rdw, k->options ? rdb : NULL);
  const double tol = dt == REF_F32 ? 1e-5 : 2e-2;
  expect_near("loss", loss, REF_F32, rl, nl, 1e-4, where);
  expect_near("dx", dx, dt, rdx, bt * h, tol, where);
  expect_near("dweight", dw, dt, rdw, v * h, tol, where);
  if (k->options) expect_near("dbias", db, dt, rdb, v, tol, where);
  if (dx_out) *dx_out = dx, *dw_out = dw;
  else free(dx), free(dw);
  free(x), free(w), free(bias), free(cw), free(go), free(target), free(loss), free(db);
  free(rl), free(rdx), free(rdw), free(rdb);
  ubg_ctx_destroy(ctx);
}

#endif

/* The GRPO loss's vocabulary sweeps against the double-precision reference
 * (specs/grpo_loss_ref.c): every feasible variant, forced, over batch x
 * (seq + 1) x vocab from 1 x 2 x 1 to vocabs longer than any BLOCK_D and
 * not a multiple of one, every dtype, forward (logp, lse) and backward
 * (dlogits from the forward's lse, with masked tokens: dlogp 0); every
 * variant and 1 or 2 threads give the same bits; dlogits over logits, the
 * same bits; refusals name the argument and write nothing.
 *
 * Tolerances: logp and lse are f32 for every dtype, from the rounded
 * logits: 1e-5 / 1e-5. dlogits as softmax's gradient: f32 1e-6 / 1e-5,
 * f16 1e-3 / 1e-2, bf16 1e-3 / 2e-2 (Liger's test_grpo_loss.py: bf16 at
 * 5e-2 / 5e-1, tests/python/test_grpo_loss.py). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t batch, seq, vocab;
  float temperature;
} gl_case;

static const gl_case cases[] = {{1, 1, 1, 1.0f},     {2, 3, 7, 0.7f},      {3, 5, 1000, 0.9f}, {2, 4, 4097, 1.0f},
                                {1, 3, 20000, 0.5f}, {2, 8, 16385, 0.9f}, {0, 4, 16, 1.0f}};
static const double tol_atol[3] = {1e-6, 1e-3, 1e-3}, tol_rtol[3] = {1e-5, 1e-2, 2e-2};

static void close_to(const void *got, int dt, const double *want, int64_t n, double atol, double rtol,
                     const char *what, const char *name) {
  double err;
  int64_t bad = ref_compare(got, dt, want, n, atol, rtol, &err);
  cr_assert(bad < 0, "%s %s: %s[%lld] = %.9g, reference %.9g", name, ug_dtype_name(dt), what, (long long)bad,
            ref_load(got, bad, dt), want[bad]);
}

static void sweep(int dt, const gl_case *c) {
  const int64_t B = c->batch, L = c->seq, V = c->vocab, toks = B * L, n = B * (L + 1) * V;
  const float t = c->temperature;
  tc_skip_if_large(n, "batch x (seq + 1) x vocab");
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt), tok_bytes = (size_t)(toks ? toks : 1) * sizeof(float);
  void *x = tc_tensor(dt, n, 0, 3, (uint64_t)(n + 1));
  float *dlogp = tc_tensor(UBG_F32, toks, 0, 1, 2);
  int64_t *ids = malloc((size_t)(toks ? toks : 1) * sizeof(int64_t));
  uint64_t seed = 5;
  for (int64_t i = 0; i < toks; i++) ids[i] = (int64_t)(tc_next(&seed) % (uint64_t)V);
  for (int64_t i = 0; i < toks; i += 3) dlogp[i] = 0.0f; /* masked tokens */
  float *logp = malloc(tok_bytes), *lse = malloc(tok_bytes), *logp0 = malloc(tok_bytes), *lse0 = malloc(tok_bytes);
  void *dx = malloc(bytes), *dx0 = malloc(bytes);
  double *logp_ref = malloc(tok_bytes * 2), *lse_ref = malloc(tok_bytes * 2);
  double *dx_ref = malloc((size_t)(n ? n : 1) * sizeof(double));
  ref_slot fa[8] = {{.p = x}, {.p = ids}, {0}, {0}, {.i = B}, {.i = L}, {.i = V}, {.f = t}};
  double *fo[8] = {NULL, NULL, logp_ref, lse_ref};
  ref_find("grpo_loss", "fwd")->fn(fa, dt, fo);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  for (int pass = 0; pass < 2; pass++) {
    const char *pn = pass ? "bwd" : "fwd";
    tc_variants vs = tc_kernel_variants("grpo_loss", pn, dt);
    int ran = 0;
    for (int v = 0; v < vs.n; v++) {
      if (!tc_applies(&vs.v[v], V)) continue;
      for (int k = 0; k < 2; k++) {
        cr_assert_eq(ubg_set_variant(ctxs[k], "grpo_loss", pn, vs.v[v].name), UBG_OK, "%s", ubg_ctx_error(ctxs[k]));
        memset(pass ? dx : (void *)logp, 0xff, pass ? bytes : tok_bytes);
        memset(lse, 0xff, pass ? 0 : tok_bytes);
        const ubg_status s = pass ? ubg_grpo_loss_bwd(ctxs[k], dt, B, L, V, t, x, ids, lse0, dlogp, dx)
                                  : ubg_grpo_loss_fwd(ctxs[k], dt, B, L, V, t, x, ids, logp, lse);
        cr_assert_eq(s, UBG_OK, "%s: %s", vs.v[v].name, ubg_ctx_error(ctxs[k]));
        if (ran == 0 && k == 0) {
          if (!pass) {
            close_to(logp, UBG_F32, logp_ref, toks, 1e-5, 1e-5, "logp", vs.v[v].name);
            close_to(lse, UBG_F32, lse_ref, toks, 1e-5, 1e-5, "lse", vs.v[v].name);
            memcpy(logp0, logp, tok_bytes), memcpy(lse0, lse, tok_bytes);
            ref_slot ba[9] = {{.p = x},     {.p = ids}, {.p = lse0}, {.p = dlogp}, {0},
                              {.i = B},     {.i = L},   {.i = V},    {.f = t}};
            double *bo[9] = {NULL, NULL, NULL, NULL, dx_ref};
            ref_find("grpo_loss", "bwd")->fn(ba, dt, bo);
          } else {
            close_to(dx, dt, dx_ref, n, tol_atol[dt], tol_rtol[dt], "dlogits", vs.v[v].name);
            for (int64_t i = 0; i < n; i++) /* position seq and masked tokens: exact zeros */
              if (dx_ref[i] == 0.0) cr_assert(ref_load(dx, i, dt) == 0.0, "dlogits[%lld] is not 0", (long long)i);
            memcpy(dx0, dx, bytes);
          }
        } else if (!pass) {
          cr_assert(!memcmp(logp, logp0, tok_bytes) && !memcmp(lse, lse0, tok_bytes),
                    "%s (%d threads): logp or lse bits differ", vs.v[v].name, k + 1);
        } else {
          cr_assert(!memcmp(dx, dx0, bytes), "%s (%d threads): dlogits bits differ", vs.v[v].name, k + 1);
        }
      }
      ran++;
    }
    cr_assert_gt(ran, 0, "no %s variant applies to vocab %lld", pn, (long long)V);
    tc_free_variants(&vs);
  }
  /* dlogits over logits (Liger's inplace): the same bits */
  cr_assert_eq(ubg_set_variant(ctxs[1], "grpo_loss", "bwd", NULL), UBG_OK);
  memcpy(dx, x, bytes);
  cr_assert_eq(ubg_grpo_loss_bwd(ctxs[1], dt, B, L, V, t, dx, ids, lse0, dlogp, dx), UBG_OK, "%s",
               ubg_ctx_error(ctxs[1]));
  cr_assert(!memcmp(dx, dx0, bytes), "dlogits over logits differs");
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free(x), free(dlogp), free(ids), free(logp), free(lse), free(logp0), free(lse0), free(dx), free(dx0);
  free(logp_ref), free(lse_ref), free(dx_ref);
}

Test(grpo_loss, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

Test(grpo_loss, refusals_write_nothing) {
  enum { B = 2, L = 3, V = 8, N = B * (L + 1) * V };
  float x[2 * N], logp[B * L], lse[B * L], dlogp[B * L];
  int64_t ids[B * L] = {0, 1, 2, 3, 4, 5};
  for (int i = 0; i < 2 * N; i++) x[i] = (float)i;
  for (int i = 0; i < B * L; i++) logp[i] = lse[i] = dlogp[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  ids[4] = V;
  cr_assert_eq(ubg_grpo_loss_fwd(ctx, UBG_F32, B, L, V, 1.0f, x, ids, logp, lse), UBG_ERANGE);
  cr_assert(strstr(ubg_ctx_error(ctx), "ids[4] = 8"), "%s", ubg_ctx_error(ctx));
  ids[4] = 4;
  cr_assert_eq(ubg_grpo_loss_fwd(ctx, UBG_F32, B, L, V, 0.0f, x, ids, logp, lse), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "temperature"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_grpo_loss_fwd(ctx, UBG_F32, B, L, 0, 1.0f, x, ids, logp, lse), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "vocab"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_grpo_loss_bwd(ctx, UBG_F32, B, L, V, 1.0f, x, ids, lse, dlogp, x + 3), UBG_EINVAL,
               "dlogits partly over logits");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_grpo_loss_bwd(ctx, UBG_F32, B, L, V, 1.0f, x, ids, NULL, dlogp, x + N), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "lse"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < 2 * N; i++) cr_assert(x[i] == (float)i);
  for (int i = 0; i < B * L; i++) cr_assert(logp[i] == 7 && lse[i] == 7 && dlogp[i] == 7);
  ubg_ctx_destroy(ctx);
}

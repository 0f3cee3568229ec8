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

/* one case: the inputs (logits x: batch x (seq + 1) x vocab; ids, dlogp:
 * batch x seq; the backward's lse: batch x seq, the forward's), the
 * outputs (logp, lse: batch x seq, f32; dx: as x) and their references */
typedef struct {
  int dt;
  int64_t B, L, V;
  float temp;
  void *x, *dx;
  int64_t *ids;
  float *dlogp, *logp, *lse, *lse_in;
  double *logp_ref, *lse_ref, *dx_ref;
  char shape[64];
} gl_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  gl_state *t = state;
  return ubg_grpo_loss_fwd(ctx, t->dt, t->B, t->L, t->V, t->temp, t->x, t->ids, t->logp, t->lse);
}
static ubg_status run_bwd(ubg_ctx *ctx, void *state) {
  gl_state *t = state;
  return ubg_grpo_loss_bwd(ctx, t->dt, t->B, t->L, t->V, t->temp, t->x, t->ids, t->lse_in, t->dlogp, t->dx);
}
static void check_fwd(void *state, const char *variant) {
  gl_state *t = state;
  const int64_t toks = t->B * t->L;
  tc_assert_close(t->logp, UBG_F32, t->logp_ref, toks, 1e-5, 1e-5, "%s %s: logp", variant, t->shape);
  tc_assert_close(t->lse, UBG_F32, t->lse_ref, toks, 1e-5, 1e-5, "%s %s: lse", variant, t->shape);
}
static void check_bwd(void *state, const char *variant) {
  gl_state *t = state;
  const int64_t n = t->B * (t->L + 1) * t->V;
  tc_assert_close(t->dx, t->dt, t->dx_ref, n, tol_atol[t->dt], tol_rtol[t->dt], "%s %s: dlogits", variant, t->shape);
  for (int64_t i = 0; i < n; i++) /* position seq and masked tokens: exact zeros */
    if (t->dx_ref[i] == 0.0) cr_assert(ref_load(t->dx, i, t->dt) == 0.0, "dlogits[%lld] is not 0", (long long)i);
}

static void sweep(int dt, const gl_case *c) {
  const int64_t B = c->batch, L = c->seq, V = c->vocab, toks = B * L, n = B * (L + 1) * V;
  const float temp = c->temperature;
  if (tc_sweep_leaves_out(n)) return;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt), tok_bytes = (size_t)(toks ? toks : 1) * sizeof(float);
  gl_state t = {.dt = dt, .B = B, .L = L, .V = V, .temp = temp};
  snprintf(t.shape, sizeof t.shape, "%lldx%lldx%lld %s", (long long)B, (long long)L, (long long)V, ug_dtype_name(dt));
  t.x = tc_tensor(dt, n, 0, 3, (uint64_t)(n + 1));
  t.dlogp = tc_tensor(UBG_F32, toks, 0, 1, 2);
  t.ids = malloc((size_t)(toks ? toks : 1) * sizeof(int64_t));
  uint64_t seed = 5;
  for (int64_t i = 0; i < toks; i++) t.ids[i] = (int64_t)(tc_next(&seed) % (uint64_t)V);
  for (int64_t i = 0; i < toks; i += 3) t.dlogp[i] = 0.0f; /* masked tokens */
  t.logp = malloc(tok_bytes), t.lse = malloc(tok_bytes), t.lse_in = malloc(tok_bytes), t.dx = malloc(bytes);
  t.logp_ref = malloc(tok_bytes * 2), t.lse_ref = malloc(tok_bytes * 2);
  t.dx_ref = malloc((size_t)(n ? n : 1) * sizeof(double));
  ref_slot fa[8] = {{.p = t.x}, {.p = t.ids}, {0}, {0}, {.i = B}, {.i = L}, {.i = V}, {.f = temp}};
  double *fo[8] = {NULL, NULL, t.logp_ref, t.lse_ref};
  ref_find("grpo_loss", "fwd")->fn(fa, dt, fo);
  const tc_out fwd_outs[2] = {{t.logp, tok_bytes}, {t.lse, tok_bytes}};
  tc_sweep_variants("grpo_loss", "fwd", dt, V, run_fwd, check_fwd, &t, fwd_outs, 2, t.shape);
  /* the backward takes the forward's lse, and its reference that lse */
  memcpy(t.lse_in, t.lse, tok_bytes);
  ref_slot ba[9] = {{.p = t.x}, {.p = t.ids}, {.p = t.lse_in}, {.p = t.dlogp}, {0},
                    {.i = B},   {.i = L},     {.i = V},        {.f = temp}};
  double *bo[9] = {NULL, NULL, NULL, NULL, t.dx_ref};
  ref_find("grpo_loss", "bwd")->fn(ba, dt, bo);
  tc_sweep_variants("grpo_loss", "bwd", dt, V, run_bwd, check_bwd, &t, &(tc_out){t.dx, bytes}, 1, t.shape);
  /* dlogits over logits (Liger's inplace): the same bits as the sweep's */
  void *dx0 = malloc(bytes ? bytes : 1);
  memcpy(dx0, t.dx, bytes);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  memcpy(t.dx, t.x, bytes);
  cr_assert_eq(ubg_grpo_loss_bwd(ctx, dt, B, L, V, temp, t.dx, t.ids, t.lse_in, t.dlogp, t.dx), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dx, dx0, bytes), "dlogits over logits differs");
  ubg_ctx_destroy(ctx);
  free(t.x), free(t.dlogp), free(t.ids), free(t.logp), free(t.lse), free(t.lse_in), free(t.dx), free(dx0);
  free(t.logp_ref), free(t.lse_ref), free(t.dx_ref);
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

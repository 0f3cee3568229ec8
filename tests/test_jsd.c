/* The generalized JSD against the double-precision reference
 * (specs/jsd_ref.c): every feasible variant, forced, over rows x cols from
 * 1 x 1 to rows longer than the widest tile (3 x 20000), every dtype, at
 * beta 0.5, 0 (forward KL), 1 (reverse KL), 0.1 and 0.9, without labels,
 * with some rows ignored and with all of them ignored: the loss and
 * dlog_q; every variant and 1 or 2 threads give the same bits; dlog_q over
 * log_q the same bits; masked (-Inf) log-probabilities, NaN; refusals
 * write nothing.
 *
 * Inputs are log-softmaxed normal(0, 2) rows, as Liger's test's. Tolerances:
 * Liger-Kernel's test_jsd.py uses atol 1e-7 / rtol 1e-6 (f32), 1e-3 / 1e-3
 * (f16), rtol 5e-2 (bf16) against torch in f32. Here the loss (f32 for
 * every dtype) at 1e-7 / 2e-6; dlog_q at f32 1e-9 / 1e-5 (x - log m
 * cancels where q and p agree), f16 1e-7 / 1e-3 (its subnormals),
 * bf16 1e-9 / 8e-3: the storage's rounding. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
  float beta;
  int labels; /* 0: none, 1: every third row ignored, 2: every row ignored */
} jsd_case;

static const jsd_case cases[] = {{1, 1, 0.5f, 0},     {7, 3, 0.0f, 1},      {5, 123, 1.0f, 1},
                                 {40, 1024, 0.1f, 1}, {2, 4097, 0.9f, 0},   {3, 20000, 0.5f, 1},
                                 {64, 4096, 0.5f, 0}, {9, 300, 0.5f, 2},    {33, 513, 0.0f, 0},
                                 {6, 777, 1.0f, 0}};
enum { IGNORE = -100 };
static const double atol_dq[3] = {1e-9, 1e-7, 1e-9}, rtol_dq[3] = {1e-5, 1e-3, 8e-3};

/* rows of log_softmax(normal(0, 2)) in dtype */
static void *log_probs(int dt, int64_t R, int64_t D, uint64_t seed) {
  void *t = malloc((size_t)(R * D + 1) * ref_dtype_bytes(dt));
  double *z = malloc((size_t)D * sizeof(double));
  for (int64_t r = 0; r < R; r++) {
    double m = -INFINITY, s = 0;
    for (int64_t d = 0; d < D; d++) z[d] = 2 * tc_normal(&seed), m = z[d] > m ? z[d] : m;
    for (int64_t d = 0; d < D; d++) s += exp(z[d] - m);
    for (int64_t d = 0; d < D; d++) ref_store(t, r * D + d, dt, z[d] - m - log(s));
  }
  free(z);
  return t;
}

/* one case: the inputs (log_q, log_p: rows x cols; labels: rows or NULL),
 * the outputs (loss: 1; dlog_q: rows x cols) and their references */
typedef struct {
  int dt;
  const jsd_case *c;
  void *lq, *lp, *dq;
  int64_t *labels;
  float loss;
  double loss_ref, *dq_ref;
  char shape[64];
} jsd_state;

static ubg_status run_fwd(ubg_ctx *ctx, void *state) {
  jsd_state *t = state;
  const jsd_case *c = t->c;
  return ubg_jsd_fwd(ctx, t->dt, c->rows, c->cols, t->lq, t->lp, t->labels, c->beta, IGNORE, &t->loss, t->dq);
}
/* the loss within 1e-7 + 2e-6 |reference|, NaN failing */
static void check_fwd(void *state, const char *variant) {
  jsd_state *t = state;
  cr_assert(fabs(t->loss - t->loss_ref) <= 1e-7 + 2e-6 * fabs(t->loss_ref), "%s %s: loss %.9g, reference %.9g",
            variant, t->shape, t->loss, t->loss_ref);
  tc_assert_close(t->dq, t->dt, t->dq_ref, t->c->rows * t->c->cols, atol_dq[t->dt], rtol_dq[t->dt], "%s %s: dlog_q",
                  variant, t->shape);
}

static void sweep(int dt, const jsd_case *c) {
  const int64_t R = c->rows, D = c->cols, n = R * D;
  if (tc_sweep_leaves_out(n)) return;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt);
  jsd_state t = {.dt = dt, .c = c};
  snprintf(t.shape, sizeof t.shape, "%lldx%lld %s beta %g", (long long)R, (long long)D, ug_dtype_name(dt), c->beta);
  t.lq = log_probs(dt, R, D, (uint64_t)n + 1), t.lp = log_probs(dt, R, D, (uint64_t)n + 2);
  if (c->labels) {
    t.labels = malloc((size_t)R * sizeof *t.labels);
    for (int64_t r = 0; r < R; r++) t.labels[r] = c->labels == 2 || r % 3 == 1 ? IGNORE : r % D;
  }
  t.dq = malloc(bytes), t.dq_ref = malloc((size_t)n * sizeof(double));
  ref_slot a[9] = {{.p = t.lq}, {.p = t.lp}, {.p = t.labels}, {0},          {0},
                   {.i = R},     {.i = D},     {.f = c->beta},   {.i = IGNORE}};
  double *outs[9] = {NULL, NULL, NULL, &t.loss_ref, t.dq_ref};
  ref_find("jsd", "fwd")->fn(a, dt, outs);
  const tc_out fwd_outs[2] = {{&t.loss, sizeof t.loss}, {t.dq, bytes}};
  tc_sweep_variants("jsd", "fwd", dt, 0, run_fwd, check_fwd, &t, fwd_outs, 2, t.shape);
  /* without dlog_q the same loss; dlog_q over log_q the same bits (as the sweep's) */
  const float loss0 = t.loss;
  void *dq0 = malloc(bytes);
  memcpy(dq0, t.dq, bytes);
  float loss = -1;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  cr_assert_eq(ubg_jsd_fwd(ctx, dt, R, D, t.lq, t.lp, t.labels, c->beta, IGNORE, &loss, NULL), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(!memcmp(&loss, &loss0, sizeof loss), "the loss without dlog_q differs");
  memcpy(t.dq, t.lq, bytes);
  cr_assert_eq(ubg_jsd_fwd(ctx, dt, R, D, t.dq, t.lp, t.labels, c->beta, IGNORE, &loss, t.dq), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert(!memcmp(t.dq, dq0, bytes) && !memcmp(&loss, &loss0, sizeof loss), "dlog_q over log_q differs");
  if (c->labels == 2) cr_assert(loss0 == 0.0f, "every row ignored: loss %g, not 0", loss0);
  ubg_ctx_destroy(ctx);
  free(t.lq), free(t.lp), free(t.labels), free(t.dq), free(dq0), free(t.dq_ref);
}

Test(jsd, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

/* Elements one by one (a row of them, no labels, scale 1/1) over log_q,
 * log_p in [-110, 6]: the gradient within 1e-6 of the double
 * reference's, measured against (q + p) (1 + |log q| + |log p|), the size
 * of its factors; below e^-87 a probability is 0 and so is its term. */
Test(jsd, elements_against_the_reference) {
  enum { K = 233, N = K * K };
  float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float)), *dq = malloc(N * sizeof(float));
  double loss_ref, *dq_ref = malloc(N * sizeof(double));
  for (int i = 0; i < K; i++)
    for (int j = 0; j < K; j++) x[i * K + j] = -110.0f + 0.5f * (float)i, y[i * K + j] = -110.0f + 0.5f * (float)j;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  const float betas[4] = {0.5f, 0.1f, 0.0f, 1.0f};
  for (int b = 0; b < 4; b++) {
    float loss;
    cr_assert_eq(ubg_jsd_fwd(ctx, UBG_F32, N, 1, x, y, NULL, betas[b], IGNORE, &loss, dq), UBG_OK, "%s",
                 ubg_ctx_error(ctx));
    ref_slot a[9] = {{.p = x}, {.p = y}, {0}, {0}, {0}, {.i = N}, {.i = 1}, {.f = betas[b]}, {.i = IGNORE}};
    double *outs[9] = {NULL, NULL, NULL, &loss_ref, dq_ref};
    ref_find("jsd", "fwd")->fn(a, UBG_F32, outs);
    for (int i = 0; i < N; i++) {
      const double size = (exp(x[i]) + exp(y[i])) * (1 + fabs(x[i]) + fabs(y[i])) / N;
      const double rel = x[i] < -87 || y[i] < -87 ? 1 : 1e-6; /* a probability flushed to 0: the whole term */
      cr_assert(fabs(dq[i] - dq_ref[i]) <= rel * size + 1.4e-45,
                "beta %g, log q %g, log p %g: dlog_q %.9g, reference %.9g", betas[b], x[i], y[i], dq[i], dq_ref[i]);
    }
    cr_assert(fabs(loss - loss_ref) <= 1e-6 * fabs(loss_ref), "beta %g: loss %.9g, reference %.9g", betas[b], loss,
              loss_ref);
  }
  ubg_ctx_destroy(ctx);
  free(x), free(y), free(dq), free(dq_ref);
}

/* A masked token (log-probability -Inf) adds nothing, where torch's and
 * Liger's 0 * -Inf give NaN: finite for beta 0.5 and 1 with q = 0 where
 * p > 0; forward KL (beta 0) is +Inf there, as KL(P || Q) is; NaN stays */
Test(jsd, masked_and_nan) {
  enum { D = 4 };
  const float inf = 1.0f / 0.0f, l2 = -0.69314718f, l4 = -1.38629436f;
  const float lq[D] = {l2, l2, -inf, -inf}, lp[D] = {l4, l4, l2, -inf};
  float dq[D], loss;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  const float betas[3] = {0.5f, 1.0f, 0.0f};
  for (int b = 0; b < 3; b++) {
    double loss_ref, dq_ref[D];
    ref_slot a[9] = {{.p = (void *)lq}, {.p = (void *)lp}, {0}, {0}, {0}, {.i = 1}, {.i = D}, {.f = betas[b]},
                     {.i = IGNORE}};
    double *outs[9] = {NULL, NULL, NULL, &loss_ref, dq_ref};
    ref_find("jsd", "fwd")->fn(a, UBG_F32, outs);
    cr_assert_eq(ubg_jsd_fwd(ctx, UBG_F32, 1, D, lq, lp, NULL, betas[b], IGNORE, &loss, dq), UBG_OK);
    if (betas[b] == 0.0f)
      cr_assert(loss == inf, "forward KL with q = 0 < p: %g, not +Inf", loss);
    else
      cr_assert(isfinite(loss) && fabs(loss - loss_ref) <= 1e-6 * loss_ref, "beta %g: %g, reference %g", betas[b],
                loss, loss_ref);
    for (int d = 0; d < D; d++)
      cr_assert(isfinite(dq[d]) && fabs(dq[d] - dq_ref[d]) <= 1e-6, "beta %g: dlog_q[%d] = %g, reference %g",
                betas[b], d, dq[d], dq_ref[d]);
  }
  const float nq[D] = {l2, 0.0f / 0.0f, l2, -inf};
  cr_assert_eq(ubg_jsd_fwd(ctx, UBG_F32, 1, D, nq, lp, NULL, 0.5f, IGNORE, &loss, dq), UBG_OK);
  cr_assert(loss != loss && dq[1] != dq[1], "a NaN log q: loss %g, dlog_q %g", loss, dq[1]);
  ubg_ctx_destroy(ctx);
}

Test(jsd, refusals_write_nothing) {
  enum { R = 2, D = 64 };
  float lq[R * D], lp[R * D], dq[R * D], loss = 7;
  int64_t labels[R] = {0, IGNORE};
  for (int i = 0; i < R * D; i++) lq[i] = lp[i] = -4.158883f, dq[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_jsd_fwd(ctx, UBG_F32, R, D, lq, lp, labels, 1.5f, IGNORE, &loss, dq), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "beta") && strstr(ubg_ctx_error(ctx), "1.5"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_jsd_fwd(ctx, UBG_F32, R, D, lq, lp, labels, -0.5f, IGNORE, &loss, dq), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "beta"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_jsd_fwd(ctx, UBG_F32, R, D, lq, lp, labels, 0.5f, IGNORE, NULL, dq), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "loss"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_jsd_fwd(ctx, UBG_F32, R, D, lq, NULL, labels, 0.5f, IGNORE, &loss, dq), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "log_p"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_jsd_fwd(ctx, UBG_F32, R, 0, lq, lp, labels, 0.5f, IGNORE, &loss, dq), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_jsd_fwd(ctx, UBG_F32, R, D - 1, lq, lp, labels, 0.5f, IGNORE, &loss, lp + 1), UBG_EINVAL,
               "dlog_q partly over log_p");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert(loss == 7);
  for (int i = 0; i < R * D; i++) cr_assert(dq[i] == 7 && lp[i] == -4.158883f);
  ubg_ctx_destroy(ctx);
}

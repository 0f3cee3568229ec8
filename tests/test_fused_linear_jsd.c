/* Fused linear JSD (ubg_fused_linear_jsd) against the double-precision
 * reference (specs/fused_linear_jsd_ref.c, its passes composed: both
 * logits, the rows' JSD, dx and dW): the loss and the student's dx and
 * dweight, every dtype, shapes from 1 x 1 x 1 x 1 to rows longer than the
 * widest tile (vocab 20000) and calls of several chunks, beta 0.5, 0
 * (forward KL), 1 (reverse KL), 0.1 and 0.9, temperatures 1, 2 and 0.5,
 * without labels, with some rows ignored and with all of them; every
 * variant of the rows pass, the generated GEMMs, 1 or 2 threads and any
 * chunk give the same loss bits, and the same dx and dweight bits at one
 * chunk; oneDNN's GEMMs (the default where linked) within tolerance;
 * refusals write nothing.
 *
 * Tolerances: the loss (f32 for every dtype) 2e-6 relative; dx and dweight
 * at 1e-5 (f32), 4e-3 (f16) and 2e-2 (bf16) of the largest reference value
 * (an f16 or bf16 dlogits is rounded to the dtype before oneDNN's GEMMs,
 * and every output is). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t bt, hidden, teacher_hidden, vocab;
  float beta, temperature;
  int labels; /* 0: none, 1: every third row ignored, 2: every row ignored */
  const char *chunk; /* the chunk variant forced with the generated GEMMs */
} fljsd_case;

static const fljsd_case cases[] = {
    {1, 1, 1, 1, 0.5f, 1.0f, 0, "gemm=generated"},     {7, 5, 9, 300, 0.0f, 1.0f, 1, "gemm=generated"},
    {5, 16, 12, 20000, 0.1f, 2.0f, 1, "chunk=2"},     {33, 40, 24, 1000, 1.0f, 0.5f, 1, "chunk=8"},
    {70, 24, 40, 257, 0.9f, 1.0f, 0, "chunk=16"},     {9, 8, 8, 300, 0.5f, 1.0f, 2, "gemm=generated"},
    {300, 8, 12, 130, 0.5f, 2.0f, 1, "gemm=generated"}};
enum { IGNORE = -100 };
static const double rtol_grad[3] = {1e-5, 4e-3, 2e-2};

typedef struct {
  void *xs, *ws, *xt, *wt;
  int64_t *labels;
} fljsd_in;

static fljsd_in make_inputs(int dt, const fljsd_case *c) {
  const int64_t BT = c->bt, H = c->hidden, Ht = c->teacher_hidden, V = c->vocab;
  const uint64_t seed = (uint64_t)(BT * 131 + V);
  fljsd_in in = {tc_tensor(dt, BT * H, 0, 1, seed), tc_tensor(dt, V * H, 0, 0.3, seed + 1),
                 tc_tensor(dt, BT * Ht, 0, 1, seed + 2), tc_tensor(dt, V * Ht, 0, 0.3, seed + 3), NULL};
  if (c->labels) {
    in.labels = malloc((size_t)BT * sizeof *in.labels);
    for (int64_t r = 0; r < BT; r++) in.labels[r] = c->labels == 2 || r % 3 == 1 ? IGNORE : r % V;
  }
  return in;
}

static void free_inputs(fljsd_in *in) { free(in->xs), free(in->ws), free(in->xt), free(in->wt), free(in->labels); }

/* the op in double through the spec's per-pass references: f32 logits,
 * the rows' JSD and dlogits (rounded to f32, as the kernel keeps them),
 * dx = dlogits W_s, dW = dlogits^T x_s */
static void op_ref(int dt, const fljsd_case *c, const fljsd_in *in, double *loss, double *dx, double *dw) {
  const int64_t BT = c->bt, H = c->hidden, Ht = c->teacher_hidden, V = c->vocab, n = BT * V;
  double *z = malloc((size_t)(n + 1) * sizeof *z), *dz = malloc((size_t)(n + 1) * sizeof *dz),
         *g = malloc((size_t)(n + 1) * sizeof *g), *rl = calloc((size_t)BT + 1, sizeof *rl);
  float *zs = malloc((size_t)(n + 1) * sizeof *zs), *zt = malloc((size_t)(n + 1) * sizeof *zt),
        *row_loss = calloc((size_t)BT + 1, sizeof *row_loss), *acc = calloc((size_t)(V * H), sizeof *acc);
  const struct { const void *x, *w; int64_t h; float *out; } proj[2] = {{in->xs, in->ws, H, zs}, {in->xt, in->wt, Ht, zt}};
  for (int s = 0; s < 2; s++) {
    ref_slot a[7] = {{.p = (void *)proj[s].x}, {.p = (void *)proj[s].w}, {0}, {0}, {.i = BT}, {.i = proj[s].h}, {.i = V}};
    double *outs[7] = {NULL, NULL, NULL, z};
    ref_find("fused_linear_jsd", "logits")->fn(a, dt, outs);
    for (int64_t i = 0; i < n; i++) proj[s].out[i] = (float)z[i];
  }
  int64_t kept = 0;
  for (int64_t r = 0; r < BT; r++) kept += !in->labels || in->labels[r] != IGNORE;
  ref_slot ra[14] = {{.p = zs},    {.p = zt},    {.p = in->labels}, {.p = &kept}, {.p = row_loss},
                     {.p = zs},    {.p = zt},    {.i = BT},         {.i = 1},     {.i = V},
                     {.i = 0},     {.f = c->beta}, {.f = c->temperature}, {.i = IGNORE}};
  double *routs[14] = {NULL, NULL, NULL, NULL, rl, dz, g};
  ref_find("fused_linear_jsd", "rows")->fn(ra, dt, routs);
  double sum = 0;
  for (int64_t r = 0; r < BT; r++) sum += rl[r];
  *loss = kept ? sum / (double)kept : 0;
  for (int64_t i = 0; i < n; i++) zs[i] = (float)dz[i];
  ref_slot xa[6] = {{.p = zs}, {.p = in->ws}, {0}, {.i = BT}, {.i = H}, {.i = V}};
  double *xouts[6] = {NULL, NULL, dx};
  ref_find("fused_linear_jsd", "dx")->fn(xa, dt, xouts);
  ref_slot wa[9] = {{.p = zs}, {.p = in->xs}, {.p = acc}, {0}, {.i = BT}, {.i = H}, {.i = V}, {0}, {0}};
  double *wouts[9] = {NULL, NULL, dw};
  ref_find("fused_linear_jsd", "dw")->fn(wa, dt, wouts);
  free(z), free(dz), free(g), free(rl), free(zs), free(zt), free(row_loss), free(acc);
}

/* got [n] (dtype) within rtol of the largest |ref| */
static void near(const char *what, const char *how, int dt, const void *got, const double *ref, int64_t n) {
  double most = 0;
  for (int64_t i = 0; i < n; i++) most = fabs(ref[i]) > most ? fabs(ref[i]) : most;
  double err;
  const int64_t bad = ref_compare(got, dt, ref, n, rtol_grad[dt] * most + 1e-30, 0, &err);
  cr_assert(bad < 0, "%s %s: [%lld] = %.9g, reference %.9g (largest %.3g)", how, what, (long long)bad,
            ref_load(got, bad, dt), ref[bad], most);
}

/* one case: the inputs, the outputs (loss: 1; dx: bt x hidden; dw: vocab
 * x hidden) and their references */
typedef struct {
  int dt;
  const fljsd_case *c;
  fljsd_in in;
  float loss;
  void *dx, *dw;
  double loss_ref, *dx_ref, *dw_ref;
  char shape[96];
} fljsd_state;

/* the generated GEMMs in one chunk, then the op */
static ubg_status run_rows(ubg_ctx *ctx, void *state) {
  fljsd_state *t = state;
  const fljsd_case *c = t->c;
  const ubg_status st = ubg_set_variant(ctx, "fused_linear_jsd", "chunk", "gemm=generated");
  if (st != UBG_OK) return st;
  return ubg_fused_linear_jsd(ctx, t->dt, c->bt, c->hidden, c->teacher_hidden, c->vocab, t->in.xs, t->in.ws, t->in.xt,
                              t->in.wt, t->in.labels, c->beta, IGNORE, c->temperature, UBG_F32, &t->loss, t->dx, t->dw);
}
/* the loss within 1e-7 + 2e-6 |reference| (NaN failing), dx and dweight near */
static void check_rows(void *state, const char *variant) {
  fljsd_state *t = state;
  const fljsd_case *c = t->c;
  char how[160];
  snprintf(how, sizeof how, "%s (1 thread) %s", variant, t->shape);
  cr_assert(fabs(t->loss - t->loss_ref) <= 1e-7 + 2e-6 * fabs(t->loss_ref), "%s: loss %.9g, reference %.9g", how,
            t->loss, t->loss_ref);
  near("dx", how, t->dt, t->dx, t->dx_ref, c->bt * c->hidden);
  near("dweight", how, t->dt, t->dw, t->dw_ref, c->vocab * c->hidden);
}

static void sweep(int dt, const fljsd_case *c) {
  const int64_t BT = c->bt, H = c->hidden, Ht = c->teacher_hidden, V = c->vocab;
  const size_t es = ref_dtype_bytes(dt), xb = (size_t)(BT * H) * es, wb = (size_t)(V * H) * es;
  fljsd_state t = {.dt = dt, .c = c, .in = make_inputs(dt, c)};
  snprintf(t.shape, sizeof t.shape, "%lldx%lldx%lldx%lld %s", (long long)BT, (long long)H, (long long)Ht,
           (long long)V, ug_dtype_name(dt));
  t.dx_ref = malloc((size_t)(BT * H + 1) * sizeof(double)), t.dw_ref = malloc((size_t)(V * H + 1) * sizeof(double));
  op_ref(dt, c, &t.in, &t.loss_ref, t.dx_ref, t.dw_ref);
  t.dx = malloc(xb + 1), t.dw = malloc(wb + 1);
  /* the generated GEMMs in one chunk, every rows variant, 1 and 2 threads: the same bits */
  const tc_out outs[3] = {{&t.loss, sizeof t.loss}, {t.dx, xb}, {t.dw, wb}};
  tc_sweep_variants("fused_linear_jsd", "rows", dt, 0, run_rows, check_rows, &t, outs, 3, t.shape);
  const float loss0 = t.loss;
  const fljsd_in *in = &t.in;
  char how[160];
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  /* the case's chunks: the same loss bits, dx and dweight near; without gradients the same loss */
  float loss = -1;
  cr_assert_eq(ubg_set_variant(ctx, "fused_linear_jsd", "chunk", c->chunk), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_linear_jsd(ctx, dt, BT, H, Ht, V, in->xs, in->ws, in->xt, in->wt, in->labels, c->beta, IGNORE,
                                    c->temperature, UBG_F32, &loss, t.dx, t.dw),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  snprintf(how, sizeof how, "%s %lldx%lldx%lldx%lld", c->chunk, (long long)BT, (long long)H, (long long)Ht,
           (long long)V);
  cr_assert(!memcmp(&loss, &loss0, sizeof loss), "%s: loss %.9g, one chunk's %.9g", how, loss, loss0);
  near("dx", how, dt, t.dx, t.dx_ref, BT * H);
  near("dweight", how, dt, t.dw, t.dw_ref, V * H);
  cr_assert_eq(ubg_fused_linear_jsd(ctx, dt, BT, H, Ht, V, in->xs, in->ws, in->xt, in->wt, in->labels, c->beta, IGNORE,
                                    c->temperature, UBG_F32, &loss, NULL, NULL),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(&loss, &loss0, sizeof loss), "%s without gradients: loss %.9g, not %.9g", how, loss, loss0);
  /* the default GEMMs (oneDNN's where linked): near the reference */
  cr_assert_eq(ubg_set_variant(ctx, "fused_linear_jsd", "chunk", NULL), UBG_OK);
  cr_assert_eq(ubg_fused_linear_jsd(ctx, dt, BT, H, Ht, V, in->xs, in->ws, in->xt, in->wt, in->labels, c->beta, IGNORE,
                                    c->temperature, UBG_F32, &loss, t.dx, t.dw),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  snprintf(how, sizeof how, "%s %lldx%lldx%lldx%lld", ubg_ctx_last_variant(ctx), (long long)BT, (long long)H,
           (long long)Ht, (long long)V);
  cr_assert(fabs(loss - t.loss_ref) <= 1e-7 + 2e-6 * fabs(t.loss_ref), "%s: loss %.9g, reference %.9g", how, loss,
            t.loss_ref);
  near("dx", how, dt, t.dx, t.dx_ref, BT * H);
  near("dweight", how, dt, t.dw, t.dw_ref, V * H);
  if (c->labels == 2) cr_assert(loss0 == 0.0f, "every row ignored: loss %g, not 0", loss0);
  ubg_ctx_destroy(ctx);
  free_inputs(&t.in);
  free(t.dx_ref), free(t.dw_ref), free(t.dx), free(t.dw);
}

Test(fused_linear_jsd, against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

/* accum_dtype = the call's dtype (Liger's accum_dtype=None): dweight summed
 * in bf16 after every chunk, near the reference at bf16's rounding per chunk */
Test(fused_linear_jsd, weight_summed_in_the_dtype) {
  const fljsd_case c = {64, 16, 8, 200, 0.5f, 1.0f, 1, "chunk=16"};
  fljsd_in in = make_inputs(UBG_BF16, &c);
  double loss_ref, *dx_ref = malloc((size_t)(64 * 16) * sizeof(double)), *dw_ref = malloc((size_t)(200 * 16) * sizeof(double));
  op_ref(UBG_BF16, &c, &in, &loss_ref, dx_ref, dw_ref);
  uint16_t dw[200 * 16];
  float loss;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  cr_assert_eq(ubg_set_variant(ctx, "fused_linear_jsd", "chunk", c.chunk), UBG_OK);
  cr_assert_eq(ubg_fused_linear_jsd(ctx, UBG_BF16, c.bt, c.hidden, c.teacher_hidden, c.vocab, in.xs, in.ws, in.xt,
                                    in.wt, in.labels, c.beta, IGNORE, c.temperature, UBG_BF16, &loss, NULL, dw),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  near("dweight", "accum_dtype bf16, chunk=16", UBG_BF16, dw, dw_ref, 200 * 16);
  ubg_ctx_destroy(ctx);
  free_inputs(&in);
  free(dx_ref), free(dw_ref);
}

Test(fused_linear_jsd, refusals_write_nothing) {
  enum { BT = 2, H = 4, V = 8 };
  float xs[BT * H], ws[V * H], dx[BT * H], dw[V * H], loss = 7;
  int64_t labels[BT] = {0, IGNORE};
  for (int i = 0; i < BT * H; i++) xs[i] = 0.5f, dx[i] = 7;
  for (int i = 0; i < V * H; i++) ws[i] = 0.25f, dw[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
#define CALL(dt, beta, temperature, accum, l) \
  ubg_fused_linear_jsd(ctx, dt, BT, H, H, V, xs, ws, xs, ws, labels, beta, IGNORE, temperature, accum, l, dx, dw)
  cr_assert_eq(CALL(UBG_F32, 1.5f, 1.0f, UBG_F32, &loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "jsd_beta") && strstr(ubg_ctx_error(ctx), "1.5"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(CALL(UBG_F32, 0.5f, 0.0f, UBG_F32, &loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "temperature = 0"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(CALL(UBG_F32, 0.5f, -2.0f, UBG_F32, &loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "temperature = -2"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(CALL(UBG_F32, 0.5f, 1.0f, UBG_BF16, &loss), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "accum_dtype"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(CALL(UBG_F32, 0.5f, 1.0f, UBG_F32, NULL), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "loss"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_linear_jsd(ctx, UBG_F32, BT, H, H, V, xs, ws, xs, NULL, labels, 0.5f, IGNORE, 1.0f, UBG_F32,
                                    &loss, dx, dw),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "teacher_weight"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_linear_jsd(ctx, UBG_F32, BT, H, H, 0, xs, ws, xs, ws, labels, 0.5f, IGNORE, 1.0f, UBG_F32,
                                    &loss, dx, dw),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "vocab"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_linear_jsd(ctx, UBG_F32, BT, H, H, V, xs, ws, xs, ws, labels, 0.5f, IGNORE, 1.0f, UBG_F32,
                                    &loss, dx, ws),
               UBG_EINVAL, "dweight over student_weight");
#undef CALL
  cr_assert(loss == 7);
  for (int i = 0; i < BT * H; i++) cr_assert(dx[i] == 7 && xs[i] == 0.5f);
  for (int i = 0; i < V * H; i++) cr_assert(dw[i] == 7 && ws[i] == 0.25f);
  ubg_ctx_destroy(ctx);
}

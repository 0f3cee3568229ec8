/* A mixture of experts' expert layers (ubg_fused_moe_forward, _backward)
 * against a plain loop over the tokens and their K slots in double: out,
 * and dx, dgate_up_proj, ddown_proj and dtop_k_weights for an upstream
 * gradient dout; every dtype, from 1 token x 1 expert x K = 1 to odd sizes
 * not a multiple of any tile, K = E, experts without tokens and all tokens
 * on one expert, no tokens at all; 1 or 2 threads give the same bits, and
 * so do tcc's JIT of the kernels and a forced chunk of tokens for everything but the weights'
 * gradients in f16 and bf16 (rounded to the dtype once per chunk); an
 * expert index outside [0, E) and the other bad calls write nothing.
 * All of that on the generated GEMMs (gemm=generated); on oneDNN's
 * (gemm=onednn, the default where it runs the dtype) the same cases are
 * near the reference, and one shape and thread count give the same bits
 * from call to call and from context to context.
 *
 * The spec's per-pass references (specs/fused_moe_ref.c), composed as the
 * composites run them, give the loop's values too.
 *
 * Tolerances, of the largest reference value: 1e-5 (f32), 4e-3 (f16) and
 * 2e-2 (bf16): the kernels keep h, act and the GEMMs' sums in f32 and
 * round the outputs to the dtype once. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "../runtime/gemm_onednn.h"
#include "test_util.h"

typedef struct {
  int64_t tokens, hidden, inter, experts, top_k;
  int routing; /* 0: distinct experts per token, 1: every slot on expert 0, 2: only the even experts */
  const char *chunk;
} moe_case;

static const moe_case cases[] = {
    {1, 1, 1, 1, 1, 0, "chunk=1"},   {7, 64, 32, 4, 2, 0, "chunk=3"},  {37, 97, 47, 7, 3, 0, "chunk=16"},
    {20, 40, 24, 8, 8, 0, "chunk=7"}, {16, 33, 17, 9, 2, 2, "chunk=5"}, {13, 16, 8, 3, 2, 1, "chunk=4"},
    {150, 24, 40, 16, 4, 0, "chunk=64"}};
static const double rtol[3] = {1e-5, 4e-3, 2e-2};

typedef struct {
  void *x, *gup, *down, *w, *dout;
  int32_t *idx;
} moe_in;

static moe_in make_inputs(int dt, const moe_case *c) {
  const int64_t T = c->tokens, H = c->hidden, I = c->inter, E = c->experts, K = c->top_k;
  const uint64_t seed = (uint64_t)(T * 131 + H * 7 + E);
  moe_in in = {tc_tensor(dt, T * H, 0, 1, seed), tc_tensor(dt, E * 2 * I * H, 0, 0.3, seed + 1),
               tc_tensor(dt, E * H * I, 0, 0.3, seed + 2), tc_tensor(dt, T * K, 0.5, 0.2, seed + 3),
               tc_tensor(dt, T * H, 0, 1, seed + 4), malloc((size_t)(T * K + 1) * sizeof(int32_t))};
  for (int64_t t = 0; t < T; t++)
    for (int64_t k = 0; k < K; k++)
      in.idx[t * K + k] = c->routing == 1 ? 0
                          : c->routing == 2 ? (int32_t)((2 * (t + k)) % E / 2 * 2)
                                            : (int32_t)((t * 5 + k) % E);
  return in;
}

static void free_inputs(moe_in *in) {
  free(in->x), free(in->gup), free(in->down), free(in->w), free(in->dout), free(in->idx);
}

static double silu(double v) { return v / (1.0 + exp(-v)); }

/* the op in double, token by token and slot by slot:
 *   h = W_gu[e] x[t], a = silu(h_g) h_u, out[t] += w y, y = W_d[e] a
 *   da = W_d[e]^T dout[t], dw = da . a, d = w da, dh = [d (silu'(h_g)) h_u, d silu(h_g)]
 *   ddown[e] += w dout[t] a^T, dgup[e] += dh x[t]^T, dx[t] += W_gu[e]^T dh */
static void op_ref(int dt, const moe_case *c, const moe_in *in, double *out, double *dx, double *dgup, double *ddown,
                   double *dtw) {
  const int64_t T = c->tokens, H = c->hidden, I = c->inter, E = c->experts, K = c->top_k;
  double *h = malloc((size_t)(2 * I) * sizeof *h), *a = malloc((size_t)I * sizeof *a),
         *da = malloc((size_t)I * sizeof *da), *dh = malloc((size_t)(2 * I) * sizeof *dh);
  memset(out, 0, (size_t)(T * H) * sizeof *out), memset(dx, 0, (size_t)(T * H) * sizeof *dx);
  memset(dgup, 0, (size_t)(E * 2 * I * H) * sizeof *dgup), memset(ddown, 0, (size_t)(E * H * I) * sizeof *ddown);
#define X(t, j) ref_load(in->x, (t) * H + (j), dt)
#define GUP(e, i, j) ref_load(in->gup, ((e) * 2 * I + (i)) * H + (j), dt)
#define DOWN(e, j, i) ref_load(in->down, ((e) * H + (j)) * I + (i), dt)
  for (int64_t t = 0; t < T; t++)
    for (int64_t k = 0; k < K; k++) {
      const int64_t e = in->idx[t * K + k];
      const double w = ref_load(in->w, t * K + k, dt);
      for (int64_t i = 0; i < 2 * I; i++) {
        h[i] = 0;
        for (int64_t j = 0; j < H; j++) h[i] += GUP(e, i, j) * X(t, j);
        h[i] = (float)h[i]; /* kept in f32 for the backward */
      }
      for (int64_t i = 0; i < I; i++) a[i] = silu(h[i]) * h[I + i];
      for (int64_t j = 0; j < H; j++) {
        double y = 0;
        for (int64_t i = 0; i < I; i++) y += DOWN(e, j, i) * a[i];
        out[t * H + j] += w * y;
      }
      double dot = 0;
      for (int64_t i = 0; i < I; i++) {
        da[i] = 0;
        for (int64_t j = 0; j < H; j++) da[i] += DOWN(e, j, i) * ref_load(in->dout, t * H + j, dt);
        dot += da[i] * a[i];
        const double d = w * da[i], s = 1.0 / (1.0 + exp(-h[i]));
        dh[i] = d * (silu(h[i]) * (1 - s) + s) * h[I + i];
        dh[I + i] = d * silu(h[i]);
      }
      dtw[t * K + k] = dot;
      for (int64_t j = 0; j < H; j++)
        for (int64_t i = 0; i < I; i++) ddown[(e * H + j) * I + i] += w * ref_load(in->dout, t * H + j, dt) * a[i];
      for (int64_t i = 0; i < 2 * I; i++)
        for (int64_t j = 0; j < H; j++) {
          dgup[(e * 2 * I + i) * H + j] += dh[i] * X(t, j);
          dx[t * H + j] += GUP(e, i, j) * dh[i];
        }
    }
#undef X
#undef GUP
#undef DOWN
  free(h), free(a), free(da), free(dh);
}

/* got [n] (dtype) within rtol of the largest |ref| */
static void near(const char *what, const char *how, int dt, const void *got, const double *ref, int64_t n) {
  double most = 0;
  for (int64_t i = 0; i < n; i++) most = fabs(ref[i]) > most ? fabs(ref[i]) : most;
  double err;
  const int64_t bad = ref_compare(got, dt, ref, n, rtol[dt] * most + 1e-30, 0, &err);
  cr_assert(bad < 0, "%s %s: [%lld] = %.9g, reference %.9g (largest %.3g)", how, what, (long long)bad,
            ref_load(got, bad, dt), ref[bad], most);
}

/* one call's outputs */
typedef struct {
  void *out, *dx, *dgup, *ddown, *dtw;
  float *pre_act;
} moe_out;

static moe_out alloc_out(const moe_case *c, size_t es) {
  const int64_t T = c->tokens, H = c->hidden, I = c->inter, E = c->experts, K = c->top_k;
  moe_out o = {malloc((size_t)(T * H) * es + 1), malloc((size_t)(T * H) * es + 1),
               malloc((size_t)(E * 2 * I * H) * es + 1), malloc((size_t)(E * H * I) * es + 1),
               malloc((size_t)(T * K) * es + 1), malloc((size_t)(T * K * 2 * I) * sizeof(float) + 1)};
  return o;
}

static void free_out(moe_out *o) {
  free(o->out), free(o->dx), free(o->dgup), free(o->ddown), free(o->dtw), free(o->pre_act);
}

/* forces name (a variant of both composites, partial or whole) on ctx */
static void force(ubg_ctx *ctx, const char *name) {
  cr_assert_eq(ubg_set_variant(ctx, "fused_moe", "forward", name), UBG_OK, "%s: %s", name, ubg_ctx_error(ctx));
  cr_assert_eq(ubg_set_variant(ctx, "fused_moe", "backward", name), UBG_OK, "%s: %s", name, ubg_ctx_error(ctx));
}

static void run(ubg_ctx *ctx, int dt, const moe_case *c, const moe_in *in, moe_out *o, const char *how) {
  const int64_t T = c->tokens, H = c->hidden, I = c->inter, E = c->experts, K = c->top_k;
  cr_assert_eq(ubg_fused_moe_forward(ctx, dt, T, H, I, E, K, in->x, in->gup, in->down, in->idx, in->w, o->out,
                                     o->pre_act),
               UBG_OK, "%s: %s", how, ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_moe_backward(ctx, dt, T, H, I, E, K, in->x, in->gup, in->down, in->idx, in->w, o->pre_act,
                                      in->dout, o->dx, o->dgup, o->ddown, o->dtw),
               UBG_OK, "%s: %s", how, ubg_ctx_error(ctx));
}

static void sweep(int dt, const moe_case *c) {
  const int64_t T = c->tokens, H = c->hidden, I = c->inter, E = c->experts, K = c->top_k;
  const size_t es = ref_dtype_bytes(dt), nx = (size_t)(T * H) * es, ngup = (size_t)(E * 2 * I * H) * es,
               ndown = (size_t)(E * H * I) * es, ntw = (size_t)(T * K) * es;
  moe_in in = make_inputs(dt, c);
  double *out_ref = malloc((size_t)(T * H + 1) * sizeof(double));
  double *dx_ref = malloc((size_t)(T * H + 1) * sizeof(double));
  double *dgup_ref = malloc((size_t)(E * 2 * I * H) * sizeof(double)),
         *ddown_ref = malloc((size_t)(E * H * I) * sizeof(double)),
         *dtw_ref = malloc((size_t)(T * K + 1) * sizeof(double));
  op_ref(dt, c, &in, out_ref, dx_ref, dgup_ref, ddown_ref, dtw_ref);
  moe_out o[2] = {alloc_out(c, es), alloc_out(c, es)};
  char how[160];
  snprintf(how, sizeof how, "%s T %lld H %lld I %lld E %lld K %lld", dt == 0 ? "f32" : dt == 1 ? "f16" : "bf16",
           (long long)T, (long long)H, (long long)I, (long long)E, (long long)K);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 1), tc_ctx(UBG_BACKEND_AUTO, 2)};
  force(ctxs[0], "gemm=generated"), force(ctxs[1], "gemm=generated");
  run(ctxs[0], dt, c, &in, &o[0], how);
  near("out", how, dt, o[0].out, out_ref, T * H);
  near("dx", how, dt, o[0].dx, dx_ref, T * H);
  near("dgate_up_proj", how, dt, o[0].dgup, dgup_ref, E * 2 * I * H);
  near("ddown_proj", how, dt, o[0].ddown, ddown_ref, E * H * I);
  near("dtop_k_weights", how, dt, o[0].dtw, dtw_ref, T * K);
  /* 2 threads: the same bits */
  run(ctxs[1], dt, c, &in, &o[1], how);
  cr_assert(!memcmp(o[0].out, o[1].out, nx) && !memcmp(o[0].dx, o[1].dx, nx) && !memcmp(o[0].dgup, o[1].dgup, ngup) &&
                !memcmp(o[0].ddown, o[1].ddown, ndown) && !memcmp(o[0].dtw, o[1].dtw, ntw),
            "%s: 1 and 2 threads give different bits", how);
  /* chunks of tokens: the same bits but for the weights' gradients in f16 and bf16, near */
  force(ctxs[1], c->chunk); /* a whole name: gemm=generated */
  run(ctxs[1], dt, c, &in, &o[1], how);
  cr_assert(!memcmp(o[0].out, o[1].out, nx) && !memcmp(o[0].dx, o[1].dx, nx) && !memcmp(o[0].dtw, o[1].dtw, ntw),
            "%s, %s: out, dx or dtop_k_weights differ from one chunk's", how, c->chunk);
  if (dt == UBG_F32)
    cr_assert(!memcmp(o[0].dgup, o[1].dgup, ngup) && !memcmp(o[0].ddown, o[1].ddown, ndown),
              "%s, %s: the weights' gradients differ from one chunk's", how, c->chunk);
  near("dgate_up_proj", c->chunk, dt, o[1].dgup, dgup_ref, E * 2 * I * H);
  near("ddown_proj", c->chunk, dt, o[1].ddown, ddown_ref, E * H * I);
  /* the backward's gradients one by one: each the same bits alone */
  memset(o[1].dx, 0x55, nx), memset(o[1].dtw, 0x55, ntw);
  cr_assert_eq(ubg_fused_moe_backward(ctxs[0], dt, T, H, I, E, K, in.x, in.gup, in.down, in.idx, in.w, o[0].pre_act,
                                      in.dout, o[1].dx, NULL, NULL, NULL),
               UBG_OK, "%s", ubg_ctx_error(ctxs[0]));
  cr_assert_eq(ubg_fused_moe_backward(ctxs[0], dt, T, H, I, E, K, in.x, in.gup, in.down, in.idx, in.w, o[0].pre_act,
                                      in.dout, NULL, NULL, NULL, o[1].dtw),
               UBG_OK, "%s", ubg_ctx_error(ctxs[0]));
  cr_assert(!memcmp(o[0].dx, o[1].dx, nx) && !memcmp(o[0].dtw, o[1].dtw, ntw), "%s: dx or dtop_k_weights alone differ",
            how);
  /* tcc's JIT of every pass (the GEMMs' plain fmaf loop among them): the same bits */
  ubg_ctx *tcc = tc_ctx(UBG_BACKEND_TCC, 2);
  force(tcc, "gemm=generated");
  run(tcc, dt, c, &in, &o[1], how);
  cr_assert(!memcmp(o[0].out, o[1].out, nx) && !memcmp(o[0].dx, o[1].dx, nx) && !memcmp(o[0].dgup, o[1].dgup, ngup) &&
                !memcmp(o[0].ddown, o[1].ddown, ndown) && !memcmp(o[0].dtw, o[1].dtw, ntw),
            "%s: tcc's kernels give other bits than the built-in ones", how);
  ubg_ctx_destroy(tcc);
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free_out(&o[0]), free_out(&o[1]);
  free_inputs(&in);
  free(out_ref), free(dx_ref), free(dgup_ref), free(ddown_ref), free(dtw_ref);
}

Test(fused_moe, against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

/* oneDNN's GEMMs: near the reference (in bf16 act and dh rounded to bf16
 * for the library, as torch's matmuls take them), whole and in chunks; the
 * same bits from call to call and context to context at one thread count */
static void sweep_onednn(int dt, const moe_case *c) {
  const int64_t T = c->tokens, H = c->hidden, I = c->inter, E = c->experts, K = c->top_k;
  const size_t es = ref_dtype_bytes(dt), nx = (size_t)(T * H) * es, ngup = (size_t)(E * 2 * I * H) * es,
               ndown = (size_t)(E * H * I) * es, ntw = (size_t)(T * K) * es;
  moe_in in = make_inputs(dt, c);
  double *out_ref = malloc((size_t)(T * H + 1) * sizeof(double)), *dx_ref = malloc((size_t)(T * H + 1) * sizeof(double)),
         *dgup_ref = malloc((size_t)(E * 2 * I * H) * sizeof(double)),
         *ddown_ref = malloc((size_t)(E * H * I) * sizeof(double)), *dtw_ref = malloc((size_t)(T * K + 1) * sizeof(double));
  op_ref(dt, c, &in, out_ref, dx_ref, dgup_ref, ddown_ref, dtw_ref);
  moe_out o[2] = {alloc_out(c, es), alloc_out(c, es)};
  char how[160], chunked[64];
  snprintf(how, sizeof how, "gemm=onednn %s T %lld H %lld I %lld E %lld K %lld", ug_dtype_name(dt), (long long)T,
           (long long)H, (long long)I, (long long)E, (long long)K);
  snprintf(chunked, sizeof chunked, "%s,gemm=onednn", c->chunk);
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AUTO, 2), tc_ctx(UBG_BACKEND_AUTO, 2)};
  force(ctxs[0], "gemm=onednn"), force(ctxs[1], "gemm=onednn");
  for (int pass = 0; pass < 2; pass++) {
    run(ctxs[0], dt, c, &in, &o[pass], how);
    cr_assert(strstr(ubg_ctx_last_variant(ctxs[0]), "onednn"), "%s: ran %s", how, ubg_ctx_last_variant(ctxs[0]));
    near("out", how, dt, o[pass].out, out_ref, T * H);
    near("dx", how, dt, o[pass].dx, dx_ref, T * H);
    near("dgate_up_proj", how, dt, o[pass].dgup, dgup_ref, E * 2 * I * H);
    near("ddown_proj", how, dt, o[pass].ddown, ddown_ref, E * H * I);
    near("dtop_k_weights", how, dt, o[pass].dtw, dtw_ref, T * K);
    if (pass == 0) force(ctxs[0], chunked);
  }
  /* the whole call again, on another context: the first call's bits */
  run(ctxs[1], dt, c, &in, &o[1], how);
  cr_assert(!memcmp(o[0].out, o[1].out, nx) && !memcmp(o[0].dx, o[1].dx, nx) && !memcmp(o[0].dgup, o[1].dgup, ngup) &&
                !memcmp(o[0].ddown, o[1].ddown, ndown) && !memcmp(o[0].dtw, o[1].dtw, ntw),
            "%s: another call gives other bits", how);
  ubg_ctx_destroy(ctxs[0]), ubg_ctx_destroy(ctxs[1]);
  free_out(&o[0]), free_out(&o[1]);
  free_inputs(&in);
  free(out_ref), free(dx_ref), free(dgup_ref), free(ddown_ref), free(dtw_ref);
}

Test(fused_moe, on_onednn, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++) {
    ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 0);
    const ubg_status s = ubg_set_variant(ctx, "fused_moe", "forward", "gemm=onednn");
    const bool runs = !rt_dnnl_missing() && rt_dnnl_runs((ubg_dtype)dt);
    if (rt_dnnl_missing())
      cr_assert(s == UBG_ENOTFOUND && strstr(ubg_ctx_error(ctx), "built without oneDNN"), "%s", ubg_ctx_error(ctx));
    ubg_ctx_destroy(ctx);
    if (!runs) continue;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep_onednn(dt, &cases[c]);
  }
}

/* doubles (a reference's output) as floats or int64s, as the kernels keep them */
static float *as_f32(const double *d, int64_t n) {
  float *f = malloc((size_t)(n + 1) * sizeof *f);
  for (int64_t i = 0; i < n; i++) f[i] = (float)d[i];
  return f;
}
static int64_t *as_i64(const double *d, int64_t n) {
  int64_t *v = malloc((size_t)(n + 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (int64_t)d[i];
  return v;
}

/* the spec's per-pass references (specs/fused_moe_ref.c), composed as the
 * composites run the passes, give the plain loop's outputs and gradients */
Test(fused_moe, the_pass_references_compose_to_the_loop) {
  const moe_case c = {37, 97, 47, 7, 3, 2, "chunk=37"};
  const int64_t T = c.tokens, H = c.hidden, I = c.inter, E = c.experts, K = c.top_k, R = T * K;
  moe_in in = make_inputs(UBG_F32, &c);
  double *out = malloc((size_t)(T * H) * sizeof(double)), *dx = malloc((size_t)(T * H) * sizeof(double)),
         *dgup = malloc((size_t)(E * 2 * I * H) * sizeof(double)),
         *ddown = malloc((size_t)(E * H * I) * sizeof(double)),
         *dtw = malloc((size_t)R * sizeof(double));
  op_ref(UBG_F32, &c, &in, out, dx, dgup, ddown, dtw);
  double *d_off = calloc((size_t)E + 1, sizeof(double)), *d_order = calloc((size_t)R, sizeof(double)),
         *d_pos = calloc((size_t)R, sizeof(double)), *t2i = calloc((size_t)(R * 2 * I), sizeof(double)),
         *ti = calloc((size_t)(R * I), sizeof(double)), *th = calloc((size_t)(R * H), sizeof(double)),
         *got = calloc((size_t)(E * 2 * I * H), sizeof(double));
  ref_slot ra[9] = {{.p = in.idx}, {0}, {0}, {0}, {.i = T}, {.i = H}, {.i = I}, {.i = E}, {.i = K}};
  ref_find("fused_moe", "route")->fn(ra, UBG_F32, (double *[9]){NULL, d_off, d_order, d_pos});
  int64_t *off = as_i64(d_off, E + 1), *order = as_i64(d_order, R), *pos = as_i64(d_pos, R);
#define MM(a_tok, a_rows, w, n, kd, w_t, scatter, out)                                                         \
  ref_find("fused_moe", "mm")->fn((ref_slot[15]){{.p = a_tok}, {.p = a_rows}, {.p = w}, {.p = off}, {.p = order}, \
                                                 {0}, {.i = T}, {.i = H}, {.i = I}, {.i = E}, {.i = K}, {.i = n},   \
                                                 {.i = kd}, {.i = w_t}, {.i = scatter}},                         \
                                  UBG_F32, (double *[15]){[5] = out})
#define NEAR(what, got, ref, n) near(what, "pass references", UBG_F32, got, ref, n)
  /* forward: h (slot order), act, y, the weighted sum */
  MM(in.x, NULL, in.gup, 2 * I, H, 1, 1, t2i);
  float *h = as_f32(t2i, R * 2 * I);
  ref_find("fused_moe", "act")->fn((ref_slot[7]){{.p = h}, {.p = order}, {0}, {.i = T}, {.i = H}, {.i = I}, {.i = K}},
                                   UBG_F32, (double *[7]){[2] = ti});
  float *act = as_f32(ti, R * I);
  MM(NULL, act, in.down, H, I, 1, 0, th);
  float *y = as_f32(th, R * H), *f = malloc((size_t)(T * H) * sizeof *f);
  double *o = calloc((size_t)(T * H), sizeof(double));
  ref_slot ca[8] = {{.p = y}, {.p = pos}, {.p = in.w}, {0}, {.i = T}, {.i = H}, {.i = 1}, {.i = K}};
  ref_find("fused_moe", "combine")->fn(ca, UBG_F32, (double *[8]){[3] = o});
  for (int64_t i = 0; i < T * H; i++) f[i] = (float)o[i];
  NEAR("out", f, out, T * H);
  /* backward: da, then act_w, dh and d top_k_weights, the weights' sums, dx */
  MM(in.dout, NULL, in.down, I, H, 0, 0, ti);
  float *da = as_f32(ti, R * I);
  double *aw = calloc((size_t)(R * I), sizeof(double)), *dh = calloc((size_t)(R * 2 * I), sizeof(double));
  ref_find("fused_moe", "act_bwd")
      ->fn((ref_slot[11]){{.p = h}, {.p = order}, {.p = in.w}, {.p = da}, {0}, {0}, {0}, {.i = T}, {.i = H}, {.i = I},
                          {.i = K}},
           UBG_F32, (double *[11]){[4] = aw, [5] = dh, [6] = o});
  for (int64_t i = 0; i < R; i++) f[i] = (float)o[i];
  NEAR("dtop_k_weights", f, dtw, R);
  float *awf = as_f32(aw, R * I), *dhf = as_f32(dh, R * 2 * I), *zero = calloc((size_t)(E * 2 * I * H), sizeof(float));
  const struct { float *a; const void *b; int64_t m, c_t; const double *want; const char *what; } dws[2] = {
      {awf, in.dout, I, 1, ddown, "ddown_proj"}, {dhf, in.x, 2 * I, 0, dgup, "dgate_up_proj"}};
  for (int k = 0; k < 2; k++) {
    ref_slot wa[13] = {{.p = dws[k].a}, {.p = (void *)dws[k].b}, {.p = off}, {.p = order}, {.p = zero}, {.i = T},
                       {.i = H}, {.i = I}, {.i = E}, {.i = K}, {.i = dws[k].m}, {.i = H}, {.i = dws[k].c_t}};
    ref_find("fused_moe", "dw")->fn(wa, UBG_F32, (double *[13]){[4] = got});
    float *g = as_f32(got, E * dws[k].m * H);
    NEAR(dws[k].what, g, dws[k].want, E * dws[k].m * H);
    free(g);
  }
  MM(NULL, dhf, in.gup, H, 2 * I, 0, 0, th);
  float *dxs = as_f32(th, R * H);
  ca[0].p = dxs, ca[2].p = NULL;
  ref_find("fused_moe", "combine")->fn(ca, UBG_F32, (double *[8]){[3] = o});
  for (int64_t i = 0; i < T * H; i++) f[i] = (float)o[i];
  NEAR("dx", f, dx, T * H);
#undef MM
#undef NEAR
  free_inputs(&in);
  free(out), free(dx), free(dgup), free(ddown), free(dtw), free(d_off), free(d_order), free(d_pos), free(t2i), free(ti);
  free(th), free(got), free(off), free(order), free(pos), free(h), free(act), free(y), free(f), free(o), free(da);
  free(aw), free(dh), free(awf), free(dhf), free(zero), free(dxs);
}

/* no tokens: nothing to write but the weights' gradients, all 0 */
Test(fused_moe, no_tokens) {
  enum { H = 4, I = 3, E = 2, K = 2 };
  float x[1], gup[E * 2 * I * H], down[E * H * I], w[1], dgup[E * 2 * I * H], ddown[E * H * I], out[1] = {7};
  int32_t idx[1] = {0};
  for (int i = 0; i < E * 2 * I * H; i++) gup[i] = 1, dgup[i] = 7;
  for (int i = 0; i < E * H * I; i++) down[i] = 1, ddown[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  cr_assert_eq(ubg_fused_moe_forward(ctx, UBG_F32, 0, H, I, E, K, x, gup, down, idx, w, out, NULL), UBG_OK, "%s",
               ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_moe_backward(ctx, UBG_F32, 0, H, I, E, K, x, gup, down, idx, w, x, x, NULL, dgup, ddown, NULL),
               UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(out[0] == 7);
  for (int i = 0; i < E * 2 * I * H; i++) cr_assert(dgup[i] == 0);
  for (int i = 0; i < E * H * I; i++) cr_assert(ddown[i] == 0);
  ubg_ctx_destroy(ctx);
}

Test(fused_moe, refusals_write_nothing) {
  enum { T = 3, H = 4, I = 2, E = 4, K = 2 };
  float x[T * H], gup[E * 2 * I * H], down[E * H * I], w[T * K], out[T * H], pre[T * K * 2 * I], dx[T * H];
  int32_t idx[T * K] = {0, 1, 2, 3, 1, 0};
  for (int i = 0; i < T * H; i++) x[i] = 0.5f, out[i] = 7, dx[i] = 7;
  for (int i = 0; i < E * 2 * I * H; i++) gup[i] = 0.25f;
  for (int i = 0; i < E * H * I; i++) down[i] = 0.25f;
  for (int i = 0; i < T * K; i++) w[i] = 0.5f;
  for (int i = 0; i < T * K * 2 * I; i++) pre[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
#define FWD(t, h, i, e, k) ubg_fused_moe_forward(ctx, UBG_F32, t, h, i, e, k, x, gup, down, idx, w, out, pre)
  idx[3] = 9;
  cr_assert_eq(FWD(T, H, I, E, K), UBG_ERANGE);
  cr_assert(strstr(ubg_ctx_error(ctx), "top_k_index[3] = 9"), "%s", ubg_ctx_error(ctx));
  idx[3] = -1;
  cr_assert_eq(ubg_fused_moe_backward(ctx, UBG_F32, T, H, I, E, K, x, gup, down, idx, w, pre, x, dx, NULL, NULL, NULL),
               UBG_ERANGE);
  cr_assert(strstr(ubg_ctx_error(ctx), "top_k_index[3] = -1"), "%s", ubg_ctx_error(ctx));
  idx[3] = 3;
  cr_assert_eq(FWD(T, 0, I, E, K), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "hidden"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(FWD(T, H, I, 0, K), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "experts"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(FWD(T, H, I, E, 0), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "top_k"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_moe_forward(ctx, UBG_F32, T, H, I, E, K, x, NULL, down, idx, w, out, pre), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "gate_up_proj"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_moe_backward(ctx, UBG_F32, T, H, I, E, K, x, gup, down, idx, w, NULL, x, dx, NULL, NULL, NULL),
               UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "pre_act"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_fused_moe_forward(ctx, UBG_F32, T, H, I, E, K, x, gup, down, idx, w, x, pre), UBG_EINVAL,
               "out over x");
#undef FWD
  for (int i = 0; i < T * H; i++) cr_assert(out[i] == 7 && dx[i] == 7 && x[i] == 0.5f);
  for (int i = 0; i < T * K * 2 * I; i++) cr_assert(pre[i] == 7);
  ubg_ctx_destroy(ctx);
}

/* Fused neighborhood attention against the double-precision reference
 * (specs/neighborhood_attention_ref.c): every feasible variant, forced,
 * over shapes from one row of one element to head_dim 512, windows wider
 * than the sequence, dilations 1 to 3, every dtype; forward (out, lse) and
 * backward (dq, dk, dv from the forward's out and lse); every variant and
 * 1 or 2 threads give the same bits; refusals write nothing.
 *
 * Tolerances: Liger-Kernel's test uses 5e-3 (f32) and 5e-2 (bf16). Here
 * f32 1e-5 / 1e-5 (out) and 1e-4 / 1e-4 (gradients, sums of up to
 * 2 kernel_size products), f16 2e-3 / 1e-2 and 1e-2 / 1e-2, bf16 1e-2 /
 * 2e-2 and 5e-2 / 2e-2; lse (f32 in every dtype) 1e-5 / 1e-5. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t bh, n, d, kernel_size, dilation;
  double scale;
} na_case;

static const na_case cases[] = {{1, 1, 1, 7, 1, 1.0},     {3, 24, 16, 5, 2, 0.25}, {2, 37, 64, 7, 1, 0.125},
                                {1, 50, 100, 9, 3, 0.1},  {2, 5, 33, 13, 1, 0.3},  {4, 64, 128, 7, 2, 0.0884},
                                {1, 17, 512, 3, 1, 0.04}, {2, 30, 24, 6, 1, 0.2}};
static const double fwd_atol[3] = {1e-5, 2e-3, 1e-2}, fwd_rtol[3] = {1e-5, 1e-2, 2e-2};
static const double bwd_atol[3] = {1e-4, 1e-2, 5e-2}, bwd_rtol[3] = {1e-4, 1e-2, 2e-2};

static ubg_status run(ubg_ctx *ctx, int bwd, int dt, const na_case *c, void *const *t) {
  /* t: q k v out lse dout dq dk dv */
  return bwd ? ubg_neighborhood_attention_bwd(ctx, dt, c->bh, c->n, c->d, c->kernel_size, c->dilation,
                                              (float)c->scale, t[5], t[0], t[1], t[2], t[3], t[4], t[6], t[7], t[8])
             : ubg_neighborhood_attention_fwd(ctx, dt, c->bh, c->n, c->d, c->kernel_size, c->dilation,
                                              (float)c->scale, t[0], t[1], t[2], t[3], t[4]);
}

/* one dtype and case: its tensors t (as run takes them; q k v dout are
 * inputs, out lse the forward's outputs, dq dk dv the backward's), the
 * references of the outputs in want (by the same index) */
typedef struct {
  int dt, bwd;
  const na_case *c;
  void *t[9];
  double *want[9];
  char shape[64];
} na_state;

static ubg_status run_pass(ubg_ctx *ctx, void *state) {
  na_state *s = state;
  return run(ctx, s->bwd, s->dt, s->c, s->t);
}
/* each of the pass's outputs (out and lse, or dq dk dv) against its reference */
static void check_pass(void *state, const char *variant) {
  static const char *const names[9] = {"q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"};
  na_state *s = state;
  const int dt = s->dt, bwd = s->bwd, lo = bwd ? 6 : 3, hi = bwd ? 9 : 5;
  const int64_t rows = s->c->bh * s->c->n, n = rows * s->c->d;
  for (int o = lo; o < hi; o++) {
    const int odt = o == 4 ? REF_F32 : dt;
    tc_assert_close(s->t[o], odt, s->want[o], o == 4 ? rows : n, o == 4 ? 1e-5 : bwd ? bwd_atol[dt] : fwd_atol[dt],
                    o == 4 ? 1e-5 : bwd ? bwd_rtol[dt] : fwd_rtol[dt], "%s %s: %s", variant, s->shape, names[o]);
  }
}

static void sweep(int dt, const na_case *c) {
  const int64_t rows = c->bh * c->n, n = rows * c->d;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt), lse_bytes = (size_t)rows * sizeof(float);
  na_state s = {.dt = dt, .c = c};
  void **t = s.t;
  snprintf(s.shape, sizeof s.shape, "%lldx%lldx%lld %s", (long long)c->bh, (long long)c->n, (long long)c->d,
           ug_dtype_name(dt));
  for (int i = 0; i < 3; i++) t[i] = tc_tensor(dt, n, 0, 1, (uint64_t)(n + 3 * i + 1));
  t[5] = tc_tensor(dt, n, 0, 1, 7);
  t[3] = malloc(bytes), t[4] = malloc(lse_bytes);
  for (int i = 6; i < 9; i++) t[i] = malloc(bytes);
  for (int i = 3; i < 9; i++) s.want[i] = malloc((size_t)(i == 4 ? rows : n) * sizeof(double) + 1);
  ref_slot fa[11] = {{.p = t[0]}, {.p = t[1]}, {.p = t[2]}, {0}, {0}, {.i = c->bh}, {.i = c->n}, {.i = c->d},
                     {.i = c->kernel_size}, {.i = c->dilation}, {.f = c->scale}};
  double *fo[5] = {NULL, NULL, NULL, s.want[3], s.want[4]};
  ref_find("neighborhood_attention", "fwd")->fn(fa, dt, fo);
  /* whole rows only (no tiled variants): BLOCK_D >= head_dim */
  const tc_out fwd_outs[2] = {{t[3], bytes}, {t[4], lse_bytes}};
  tc_sweep_variants("neighborhood_attention", "fwd", dt, c->d, run_pass, check_pass, &s, fwd_outs, 2, s.shape);
  /* the backward reads the forward's out and lse, and its reference them, as the kernel takes them */
  ref_slot ba[15] = {{.p = t[5]}, {.p = t[0]}, {.p = t[1]}, {.p = t[2]}, {.p = t[3]},
                     {.p = t[4]}, {0}, {0}, {0}, {.i = c->bh}, {.i = c->n}, {.i = c->d},
                     {.i = c->kernel_size}, {.i = c->dilation}, {.f = c->scale}};
  double *bo[9] = {NULL, NULL, NULL, NULL, NULL, NULL, s.want[6], s.want[7], s.want[8]};
  ref_find("neighborhood_attention", "bwd")->fn(ba, dt, bo);
  s.bwd = 1;
  const tc_out bwd_outs[3] = {{t[6], bytes}, {t[7], bytes}, {t[8], bytes}};
  tc_sweep_variants("neighborhood_attention", "bwd", dt, c->d, run_pass, check_pass, &s, bwd_outs, 3, s.shape);
  for (int i = 0; i < 9; i++) free(t[i]), free(s.want[i]);
}

Test(neighborhood_attention, every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(dt, &cases[c]);
}

Test(neighborhood_attention, refusals_write_nothing) {
  enum { N = 8, D = 16 };
  float q[N * D], out[N * D], lse[N], dq[N * D];
  for (int i = 0; i < N * D; i++) q[i] = (float)i, out[i] = 7, dq[i] = 7;
  for (int i = 0; i < N; i++) lse[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_neighborhood_attention_fwd(ctx, UBG_F32, 1, N, D, 0, 1, 0.25f, q, q, q, out, lse), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "kernel_size = 0"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_neighborhood_attention_fwd(ctx, UBG_F32, 1, N, D, 7, 0, 0.25f, q, q, q, out, lse), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "dilation = 0"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_neighborhood_attention_fwd(ctx, UBG_F32, 1, 1, 1024, 7, 1, 0.25f, q, q, q, out, lse), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "head_dim=1024"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_neighborhood_attention_fwd(ctx, UBG_F32, 1, N, D, 7, 1, 0.25f, q, q, q, out, NULL), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "lse"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_neighborhood_attention_fwd(ctx, UBG_F32, 1, N, D, 7, 1, 0.25f, q, q, q, q, lse), UBG_EINVAL,
               "out over q");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_neighborhood_attention_bwd(ctx, UBG_F32, 1, N, D, 7, 1, 0.25f, q, q, q, q, out, lse, dq, dq, out),
               UBG_EINVAL, "dq and dk one buffer");
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < N * D; i++) cr_assert(q[i] == (float)i && out[i] == 7 && dq[i] == 7);
  for (int i = 0; i < N; i++) cr_assert(lse[i] == 7);
  ubg_ctx_destroy(ctx);
}

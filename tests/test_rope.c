/* RoPE against the double-precision reference (specs/rope_ref.c): every
 * feasible variant, forced, over shapes from one head of d = 2 to rows of
 * d = 2050 (wider than any whole-row variant), grouped heads (hk < hq),
 * cos per position and per token, every dtype, forward and backward;
 * every variant and 1 and 2 threads give the same bits; outputs written
 * over their inputs (as Liger rotates q and k in place) give the same
 * bits; the backward is the forward's transpose (<R x, g> = <x, R^T g>);
 * bad shapes are refused with every output byte untouched.
 *
 * Tolerances: Liger-Kernel's test_rope.py uses atol = rtol = 1e-5 (f32)
 * and 1e-1 / 1e-5 (bf16) against transformers' rotation in the dtype. Here
 * the spec's, against double: f32 1e-6 / 1e-5, f16 1e-3 / 1e-3, bf16 1e-2 /
 * 1e-2 (two products and a sum in f32, one rounding to the dtype). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t batch, seq, hq, hk, d;
  int per_token; /* cos and sin a row per token (cos_rows = bt), else per position */
} rope_case;

static const rope_case cases[] = {
    {1, 1, 1, 1, 2, 0}, {2, 5, 4, 2, 8, 0}, {2, 7, 3, 1, 128, 1}, {1, 3, 2, 2, 2050, 0}, {4, 33, 8, 2, 64, 1},
};
static const double tol_atol[3] = {1e-6, 1e-3, 1e-2}, tol_rtol[3] = {1e-5, 1e-3, 1e-2};

static ubg_status run(ubg_ctx *ctx, int bwd, int dt, const rope_case *c, void *const *t) {
  const int64_t bt = c->batch * c->seq, rows = c->per_token ? bt : c->seq;
  return (bwd ? ubg_rope_bwd : ubg_rope_fwd)(ctx, dt, bt, c->seq, rows, c->hq, c->hk, c->d, t[0], t[1], t[2], t[3],
                                             t[4], t[5]);
}

/* one pass at one dtype and shape: its tensors t (the inputs, then the
 * outputs q and k, as run takes them), their sizes n and the references of
 * the outputs */
typedef struct {
  int bwd, dt;
  const rope_case *c;
  int64_t n[6];
  void *t[6];
  double *want[2];
} rope_state;

static ubg_status run_pass(ubg_ctx *ctx, void *state) {
  rope_state *s = state;
  return run(ctx, s->bwd, s->dt, s->c, s->t);
}
static void check_pass(void *state, const char *variant) {
  rope_state *s = state;
  for (int o = 0; o < 2; o++)
    tc_assert_close(s->t[4 + o], s->dt, s->want[o], s->n[4 + o], tol_atol[s->dt], tol_rtol[s->dt], "%s d=%lld %s",
                    variant, (long long)s->c->d, o ? "k" : "q");
}

/* one pass at one dtype and shape: every variant against the reference and
 * the first variant's bits, 2 threads against 1 */
static void sweep(int bwd, int dt, const rope_case *c) {
  const int64_t bt = c->batch * c->seq, rows = c->per_token ? bt : c->seq;
  const int64_t n[6] = {bt * c->hq * c->d, bt * c->hk * c->d, rows * c->d, rows * c->d, bt * c->hq * c->d,
                        bt * c->hk * c->d};
  const size_t es = ref_dtype_bytes(dt);
  rope_state s = {.bwd = bwd, .dt = dt, .c = c};
  memcpy(s.n, n, sizeof n);
  for (int i = 0; i < 4; i++) s.t[i] = tc_tensor(dt, n[i], 0, 1, (uint64_t)(n[i] * 5 + i + 11 * dt));
  ref_slot a[12] = {{0}};
  double *outs[12] = {0};
  for (int i = 0; i < 4; i++) a[i].p = s.t[i];
  for (int o = 0; o < 2; o++) {
    s.want[o] = outs[4 + o] = malloc((size_t)(n[4 + o] + 1) * sizeof(double));
    s.t[4 + o] = malloc((size_t)n[4 + o] * es + 1);
  }
  a[6].i = bt, a[7].i = c->seq, a[8].i = rows, a[9].i = c->hq, a[10].i = c->hk, a[11].i = c->d;
  const char *pass = bwd ? "bwd" : "fwd";
  ref_find("rope", pass)->fn(a, dt, outs);
  char shape[32];
  snprintf(shape, sizeof shape, "d=%lld %s", (long long)c->d, ug_dtype_name(dt));
  /* BLOCK_D holds half a head: a whole-row variant needs 2 BLOCK_D >= d */
  const tc_out out[2] = {{s.t[4], (size_t)n[4] * es}, {s.t[5], (size_t)n[5] * es}};
  tc_sweep_variants("rope", pass, dt, (c->d + 1) / 2, run_pass, check_pass, &s, out, 2, shape);
  /* over the inputs: the same bits as the sweep's */
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  void *over[6] = {s.t[0], s.t[1], s.t[2], s.t[3], s.t[0], s.t[1]};
  cr_assert_eq(run(ctx, bwd, dt, c, over), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(s.t[0], s.t[4], (size_t)n[0] * es) && !memcmp(s.t[1], s.t[5], (size_t)n[1] * es),
            "rope.%s %s d=%lld: outputs over their inputs differ", pass, ug_dtype_name(dt), (long long)c->d);
  ubg_ctx_destroy(ctx);
  for (int i = 0; i < 6; i++) free(s.t[i]);
  for (int o = 0; o < 2; o++) free(s.want[o]);
}

Test(rope, fwd_every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(0, dt, &cases[c]);
}

Test(rope, bwd_every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(1, dt, &cases[c]);
}

/* <R x, g> = <x, R^T g> in f32, to the rounding of the two sums */
Test(rope, the_backward_is_the_forwards_transpose) {
  const rope_case c = {2, 6, 4, 2, 64, 0};
  const int64_t bt = c.batch * c.seq, nq = bt * c.hq * c.d, nk = bt * c.hk * c.d, nc = c.seq * c.d;
  float *x[2] = {tc_tensor(0, nq, 0, 1, 1), tc_tensor(0, nk, 0, 1, 2)}, *g[2] = {tc_tensor(0, nq, 0, 1, 3),
                                                                                   tc_tensor(0, nk, 0, 1, 4)};
  float *cs = tc_tensor(0, nc, 0, 1, 5), *sn = tc_tensor(0, nc, 0, 1, 6);
  float *rx[2] = {malloc((size_t)nq * 4), malloc((size_t)nk * 4)}, *rg[2] = {malloc((size_t)nq * 4), malloc((size_t)nk * 4)};
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  cr_assert_eq(ubg_rope_fwd(ctx, UBG_F32, bt, c.seq, c.seq, c.hq, c.hk, c.d, x[0], x[1], cs, sn, rx[0], rx[1]), UBG_OK);
  cr_assert_eq(ubg_rope_bwd(ctx, UBG_F32, bt, c.seq, c.seq, c.hq, c.hk, c.d, g[0], g[1], cs, sn, rg[0], rg[1]), UBG_OK);
  const int64_t n[2] = {nq, nk};
  for (int t = 0; t < 2; t++) {
    double lhs = 0, rhs = 0, scale = 0;
    for (int64_t i = 0; i < n[t]; i++)
      lhs += (double)rx[t][i] * g[t][i], rhs += (double)x[t][i] * rg[t][i], scale += fabs((double)x[t][i] * rg[t][i]);
    cr_assert(fabs(lhs - rhs) <= 1e-6 * scale, "%s: <R x, g> = %.9g, <x, R^T g> = %.9g", t ? "k" : "q", lhs, rhs);
  }
  ubg_ctx_destroy(ctx);
  for (int t = 0; t < 2; t++) free(x[t]), free(g[t]), free(rx[t]), free(rg[t]);
  free(cs), free(sn);
}

Test(rope, refusals_write_nothing) {
  enum { BT = 4, H = 2, D = 8 };
  float q[BT * H * D], k[BT * H * D], cs[BT * D], sn[BT * D], qo[BT * H * D], ko[BT * H * D];
  for (int i = 0; i < BT * H * D; i++) q[i] = k[i] = (float)i, qo[i] = ko[i] = 7;
  for (int i = 0; i < BT * D; i++) cs[i] = 1, sn[i] = 0;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  cr_assert_eq(ubg_rope_fwd(ctx, UBG_F32, BT, 2, 2, H, H, 7, q, k, cs, sn, qo, ko), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "d % 2 == 0"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_rope_fwd(ctx, UBG_F32, BT, 3, 3, H, H, D, q, k, cs, sn, qo, ko), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "seq"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_rope_fwd(ctx, UBG_F32, BT, 2, 3, H, H, D, q, k, cs, sn, qo, ko), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cos_rows"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_rope_fwd(ctx, UBG_F32, BT, 2, 2, H, H, D, q, k, cs, sn, qo, q + 1), UBG_EINVAL, "k_out over q");
  for (int i = 0; i < BT * H * D; i++) cr_assert(qo[i] == 7 && ko[i] == 7);
  ubg_ctx_destroy(ctx);
}

/* SwiGLU and GEGLU (the gated activations of an MLP) against the
 * double-precision references (specs/swiglu_ref.c, specs/geglu_ref.c):
 * every feasible variant, forced, over rows x cols from 1 x 1 to shapes
 * above the largest block (2 x 20000) and Liger's benchmark width (64 x
 * 14336), every dtype, SwiGLU with and without its multipliers; every
 * variant gives the same bits as every other and 1 and 2 threads the same
 * bits; the gradients written over their inputs (as Liger writes them over
 * a and b) give the same bits; an output overlapping what it may not is
 * refused with every output byte untouched.
 *
 * Tolerances: Liger-Kernel's test_swiglu.py and test_geglu.py compare whole
 * MLPs (f32 atol 1e0, bf16 1e4); for the activation alone it uses f32
 * 1e-3 / 1e-5 and bf16 1e-1 / 1e-2 (test_swiglu's multiplier test). Here
 * the spec's tighter ones: f32 1e-5 / 1e-5 (the kernel's f32 sigmoid against
 * the reference's double one), f16 and bf16 1e-2 / 1e-2 (an f32 difference
 * of one ulp can move a rounding to the dtype by one of its ulps, 2^-8 for
 * bf16, which the relative tolerance covers). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t rows, cols;
  float gm, dm; /* SwiGLU's multipliers (1, 1 for GEGLU) */
} glu_case;

static const glu_case cases[] = {
    {1, 1, 1, 1}, {3, 123, 1, 1}, {7, 4097, 0.7f, 1.3f}, {2, 20000, 1.5f, 0.5f}, {64, 14336, 1, 1},
};

static const double tol_atol[3] = {1e-5, 1e-2, 1e-2}, tol_rtol[3] = {1e-5, 1e-2, 1e-2};

static ubg_status run(ubg_ctx *ctx, const char *kernel, int bwd, int dt, const glu_case *c, void *const *t) {
  const int swi = !strcmp(kernel, "swiglu");
  if (!bwd)
    return swi ? ubg_swiglu_fwd(ctx, dt, c->rows, c->cols, t[0], t[1], c->gm, c->dm, t[2])
               : ubg_geglu_fwd(ctx, dt, c->rows, c->cols, t[0], t[1], t[2]);
  return swi ? ubg_swiglu_bwd(ctx, dt, c->rows, c->cols, t[0], t[1], t[2], c->gm, c->dm, t[3], t[4])
             : ubg_geglu_bwd(ctx, dt, c->rows, c->cols, t[0], t[1], t[2], t[3], t[4]);
}

/* one pass of a kernel at one dtype and shape: its tensors t (the inputs,
 * then the outputs, each rows x cols) and the references of the outputs */
typedef struct {
  const char *kernel;
  int bwd, dt, nin, nout;
  glu_case c;
  void *t[5];
  double *want[2];
  char shape[48];
} glu_state;

static ubg_status run_pass(ubg_ctx *ctx, void *state) {
  glu_state *s = state;
  return run(ctx, s->kernel, s->bwd, s->dt, &s->c, s->t);
}
static void check_pass(void *state, const char *variant) {
  glu_state *s = state;
  for (int o = 0; o < s->nout; o++)
    tc_assert_close(s->t[s->nin + o], s->dt, s->want[o], s->c.rows * s->c.cols, tol_atol[s->dt], tol_rtol[s->dt],
                    "%s %s output %d", variant, s->shape, o);
}

/* one pass at one dtype and shape: every variant against the reference and
 * against the first variant's bits, and 2 threads against 1 */
static void sweep(const char *kernel, int bwd, int dt, const glu_case *c) {
  const int64_t n = c->rows * c->cols;
  if (tc_sweep_leaves_out(n)) return;
  const int swi = !strcmp(kernel, "swiglu");
  glu_state s = {.kernel = kernel, .bwd = bwd, .dt = dt, .nin = bwd ? 3 : 2, .nout = bwd ? 2 : 1,
                 .c = {c->rows, c->cols, swi ? c->gm : 1, swi ? c->dm : 1}};
  const int nin = s.nin, nout = s.nout;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt);
  snprintf(s.shape, sizeof s.shape, "%lldx%lld %s", (long long)c->rows, (long long)c->cols, ug_dtype_name(dt));
  for (int i = 0; i < nin; i++) s.t[i] = tc_tensor(dt, n, 0, i == nin - 2 ? 4 : 1, (uint64_t)(n * 7 + i + 17 * dt));
  ref_slot a[9] = {{0}};
  double *outs[9] = {0};
  for (int i = 0; i < nin; i++) a[i].p = s.t[i];
  for (int o = 0; o < nout; o++) s.want[o] = outs[nin + o] = malloc((size_t)(n + 1) * sizeof(double));
  a[nin + nout].i = c->rows, a[nin + nout + 1].i = c->cols;
  a[nin + nout + 2].f = s.c.gm, a[nin + nout + 3].f = s.c.dm;
  ref_find(kernel, bwd ? "bwd" : "fwd")->fn(a, dt, outs);
  tc_out out[2];
  for (int o = 0; o < nout; o++) s.t[nin + o] = malloc(bytes + 1), out[o] = (tc_out){s.t[nin + o], bytes};
  tc_sweep_variants(kernel, bwd ? "bwd" : "fwd", dt, 0, run_pass, check_pass, &s, out, nout, s.shape);
  for (int i = 0; i < 5; i++) free(s.t[i]);
  for (int o = 0; o < nout; o++) free(s.want[o]);
}

#define SWEEP_TESTS(kernel, pass, bwd)                                                           \
  Test(kernel, pass##_every_variant_against_the_reference, .timeout = 300 * TC_TIME_SCALE) {     \
    for (int dt = 0; dt < 3; dt++)                                                               \
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) sweep(#kernel, bwd, dt, &cases[c]); \
  }

SWEEP_TESTS(swiglu, fwd, 0)
SWEEP_TESTS(swiglu, bwd, 1)
SWEEP_TESTS(geglu, fwd, 0)
SWEEP_TESTS(geglu, bwd, 1)

/* the gradients over their inputs (da = a, db = b), and c over a: the bits
 * of separate outputs */
static void in_place(const char *kernel, int dt) {
  const glu_case c = {5, 3001, !strcmp(kernel, "swiglu") ? 0.7f : 1, !strcmp(kernel, "swiglu") ? 1.3f : 1};
  const int64_t n = c.rows * c.cols;
  const size_t bytes = (size_t)n * ref_dtype_bytes(dt);
  void *dc = tc_tensor(dt, n, 0, 1, 1), *a = tc_tensor(dt, n, 0, 4, 2), *b = tc_tensor(dt, n, 0, 1, 3);
  void *da = malloc(bytes), *db = malloc(bytes), *cc = malloc(bytes);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  void *sep[5] = {dc, a, b, da, db};
  cr_assert_eq(run(ctx, kernel, 1, dt, &c, sep), UBG_OK, "%s", ubg_ctx_error(ctx));
  void *fwd[3] = {a, b, cc};
  cr_assert_eq(run(ctx, kernel, 0, dt, &c, fwd), UBG_OK, "%s", ubg_ctx_error(ctx));
  void *a2 = malloc(bytes), *b2 = malloc(bytes);
  memcpy(a2, a, bytes), memcpy(b2, b, bytes);
  void *over[5] = {dc, a2, b2, a2, b2};
  cr_assert_eq(run(ctx, kernel, 1, dt, &c, over), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(a2, da, bytes) && !memcmp(b2, db, bytes), "%s %s: gradients over a and b differ",
            kernel, ug_dtype_name(dt));
  memcpy(a2, a, bytes);
  void *fover[3] = {a2, b, a2};
  cr_assert_eq(run(ctx, kernel, 0, dt, &c, fover), UBG_OK, "%s", ubg_ctx_error(ctx));
  cr_assert(!memcmp(a2, cc, bytes), "%s %s: c over a differs", kernel, ug_dtype_name(dt));
  ubg_ctx_destroy(ctx);
  free(dc), free(a), free(b), free(da), free(db), free(cc), free(a2), free(b2);
}

Test(glu, gradients_over_their_inputs_give_the_same_bits) {
  for (int dt = 0; dt < 3; dt++) in_place("swiglu", dt), in_place("geglu", dt);
}

/* da may be a or dc, not b; nothing is written by a refused call */
Test(glu, an_output_over_what_it_may_not_overlap_is_refused) {
  enum { R = 2, C = 100 };
  float dc[R * C], a[R * C], b[R * C], db[R * C];
  for (int i = 0; i < R * C; i++) dc[i] = 1, a[i] = 2, b[i] = 3, db[i] = 7;
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  ubg_status s = ubg_swiglu_bwd(ctx, UBG_F32, R, C, dc, a, b, 1, 1, b, db);
  cr_assert_eq(s, UBG_EINVAL, "%s", ubg_ctx_error(ctx));
  cr_assert(strstr(ubg_ctx_error(ctx), "da") && strstr(ubg_ctx_error(ctx), "b"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < R * C; i++) cr_assert(a[i] == 2 && b[i] == 3 && db[i] == 7 && dc[i] == 1);
  s = ubg_geglu_fwd(ctx, UBG_F32, R, -C, a, b, db);
  cr_assert_eq(s, UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "cols"), "%s", ubg_ctx_error(ctx));
  s = ubg_swiglu_fwd(ctx, UBG_F32, R, C, a, b, 1.0f / 0.0f, 1, db);
  cr_assert_eq(s, UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "gate_multiplier"), "%s", ubg_ctx_error(ctx));
  for (int i = 0; i < R * C; i++) cr_assert(db[i] == 7);
  ubg_ctx_destroy(ctx);
}

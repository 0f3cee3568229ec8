/* ubg_flce with opts->accum_dtype the call's dtype (Liger's accum_dtype =
 * None): dweight and dbias are summed in f16 or bf16 themselves, each
 * chunk's part formed in f32 and added with one rounding, so no
 * vocab x hidden f32 buffer exists. The reference sums each chunk's part in
 * double (the FLCE reference on that chunk's rows) and rounds it into the
 * running sum in the dtype, chunk by chunk, as the option promises. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/composite_plan.h"
#include "../runtime/gemm_onednn.h"
#include "ref/flce_ref.h"
#include "test_util.h"

typedef struct {
  int dt;
  int64_t bt, h, v, chunk;
  ubg_reduction red;
  bool dweight, dbias;
  const char *gemm; /* NULL: the generated passes */
} acase;

typedef struct {
  void *x, *w, *b;
  int64_t *t;
  int64_t counted; /* rows not ignored */
} ainputs;

static ainputs make_inputs(const acase *c) {
  ainputs in;
  in.x = tc_tensor(c->dt, c->bt * c->h, 0, 1, 1);
  in.w = tc_tensor(c->dt, c->v * c->h, 0, 0.5, 2);
  in.b = tc_tensor(c->dt, c->v, 0, 0.5, 3);
  in.t = malloc((size_t)c->bt * 8);
  uint64_t s = 4;
  in.counted = 0;
  for (int64_t i = 0; i < c->bt; i++) {
    in.t[i] = i % 7 == 3 ? -100 : (int64_t)(tc_next(&s) % (uint64_t)c->v);
    in.counted += in.t[i] != -100;
  }
  return in;
}
static void free_inputs(ainputs *in) { free(in->x), free(in->w), free(in->b), free(in->t); }

typedef struct {
  float loss;
  void *dx, *dw, *db;
} aout;

static aout alloc_out(const acase *c) {
  const size_t es = ref_dtype_bytes(c->dt);
  aout o = {0};
  o.dx = malloc((size_t)(c->bt * c->h) * es);
  o.dw = c->dweight ? malloc((size_t)(c->v * c->h) * es) : NULL;
  o.db = c->dbias ? malloc((size_t)c->v * es) : NULL;
  if (o.dw) memset(o.dw, 0x5a, (size_t)(c->v * c->h) * es); /* what a call that fails must leave */
  if (o.db) memset(o.db, 0x5a, (size_t)c->v * es);
  return o;
}
static void free_out(aout *o) { free(o->dx), free(o->dw), free(o->db); }

static ubg_ctx *case_ctx(const acase *c, int threads) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, threads);
  char v[64];
  if (c->gemm) snprintf(v, sizeof v, "chunk=%lld,gemm=%s", (long long)c->chunk, c->gemm);
  else snprintf(v, sizeof v, "chunk=%lld", (long long)c->chunk);
  cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", v), UBG_OK, "%s", ubg_ctx_error(ctx));
  return ctx;
}

static ubg_status run(ubg_ctx *ctx, const acase *c, const ainputs *in, ubg_dtype accum, aout *o) {
  ubg_flce_opts opts;
  ubg_flce_opts_init(&opts);
  opts.reduction = c->red;
  opts.bias = in->b;
  opts.accum_dtype = accum;
  ubg_flce_out out = {.loss = &o->loss, .dx = o->dx, .dweight = o->dw, .dbias = o->db};
  return ubg_flce(ctx, (ubg_dtype)c->dt, c->bt, c->h, c->v, in->x, in->w, in->t, &opts, &out);
}

/* The running sums in the dtype, chunk by chunk (dw [v*h], db [v]); big
 * gets each element's largest partial sum, the scale of its roundings, and
 * exact the sum over all rows in double. */
static void chunked_reference(const acase *c, const ainputs *in, double *dw, double *db, double *big, double *exact) {
  const int64_t n = c->v * c->h;
  double *pw = malloc((size_t)n * sizeof *pw), *pb = malloc((size_t)c->v * sizeof *pb), loss[1];
  memset(dw, 0, (size_t)n * sizeof *dw), memset(db, 0, (size_t)c->v * sizeof *db);
  memset(big, 0, (size_t)(n + c->v) * sizeof *big), memset(exact, 0, (size_t)(n + c->v) * sizeof *exact);
  const size_t es = ref_dtype_bytes(c->dt);
  /* a chunk's part of the reduced loss's gradient: its rows' sum, times
   * 1/rows counted for MEAN */
  const float scale = c->red == UBG_REDUCE_MEAN ? (float)(1.0 / (double)in->counted) : 1.0f;
  for (int64_t off = 0; off < c->bt; off += c->chunk) {
    const int64_t rows = c->bt - off < c->chunk ? c->bt - off : c->chunk;
    ubg_flce_opts o;
    ubg_flce_opts_init(&o);
    o.reduction = UBG_REDUCE_SUM;
    o.bias = in->b;
    o.grad_output = &scale;
    flce_ref_full(c->dt, rows, c->h, c->v, (const char *)in->x + (size_t)(off * c->h) * es, in->w, in->t + off, &o,
                  loss, NULL, NULL, NULL, pw, pb);
    for (int64_t i = 0; i < n + c->v; i++) {
      double *acc = i < n ? &dw[i] : &db[i - n];
      const double part = i < n ? pw[i] : pb[i - n];
      float h; /* room for one element of any dtype */
      ref_store(&h, 0, c->dt, *acc + part);
      *acc = ref_load(&h, 0, c->dt);
      exact[i] += part;
      big[i] = fmax(big[i], fabs(*acc));
    }
  }
  free(pw), free(pb);
}

/* got against the chunked reference: within two units in the last place of
 * each element's largest partial sum, equal to it almost everywhere, and
 * somewhere equal to it where one rounding of the exact sum is not (so the
 * sums really are rounded after every chunk) */
static void expect_chunked(const char *what, const void *got, const acase *c, const double *want, const double *big,
                           const double *exact, int64_t n, bool exact_bits, const char *where) {
  const double ulp = c->dt == REF_BF16 ? 0x1p-7 : 0x1p-10;
  int64_t same = 0, telling = 0;
  for (int64_t i = 0; i < n; i++) {
    const double g = ref_load(got, i, c->dt);
    cr_assert(fabs(g - want[i]) <= 2 * ulp * big[i] + 1e-30, "%s: %s[%lld] = %.9g, chunked reference %.9g (scale %g)",
              where, what, (long long)i, g, want[i], big[i]);
    float h;
    ref_store(&h, 0, c->dt, exact[i]);
    same += g == want[i];
    telling += g == want[i] && want[i] != ref_load(&h, 0, c->dt);
  }
  if (!exact_bits) return;
  cr_assert(same >= n * 95 / 100, "%s: %s equals the chunked reference in only %lld of %lld elements", where, what,
            (long long)same, (long long)n);
  cr_assert(telling > 0, "%s: no element of %s tells rounding after every chunk from rounding once", where, what);
}

static void check_case(const acase *c) {
  char where[200];
  snprintf(where, sizeof where, "%s bt=%lld h=%lld v=%lld chunk=%lld %s%s%s gemm=%s", ug_dtype_name(c->dt),
           (long long)c->bt, (long long)c->h, (long long)c->v, (long long)c->chunk,
           c->red == UBG_REDUCE_MEAN ? "mean" : "sum", c->dweight ? " dweight" : "", c->dbias ? " dbias" : "",
           c->gemm ? c->gemm : "generated");
  ainputs in = make_inputs(c);
  ubg_ctx *ctx = case_ctx(c, 0);
  aout got = alloc_out(c), f32 = alloc_out(c);
  cr_assert_eq(run(ctx, c, &in, (ubg_dtype)c->dt, &got), UBG_OK, "%s: %s", where, ubg_ctx_error(ctx));
  const size_t scratch_in_dtype = rt_composite_last_scratch_bytes();
  cr_assert_eq(run(ctx, c, &in, UBG_F32, &f32), UBG_OK, "%s: %s", where, ubg_ctx_error(ctx));
  const size_t scratch_f32 = rt_composite_last_scratch_bytes();
  const size_t es = ref_dtype_bytes(c->dt);
  /* the loss and dx do not depend on where dweight is summed */
  cr_assert(got.loss == f32.loss, "%s: loss %.9g, with f32 sums %.9g", where, got.loss, f32.loss);
  cr_assert(!memcmp(got.dx, f32.dx, (size_t)(c->bt * c->h) * es), "%s: dx differs from the f32 sums' call", where);
  /* the vocab x hidden f32 accumulator is gone: what is left is a slice */
  if (c->dweight)
    cr_assert(scratch_in_dtype + (size_t)(c->v * c->h) * 2 <= scratch_f32,
              "%s: scratch %zu bytes summing in the dtype, %zu in f32", where, scratch_in_dtype, scratch_f32);

  const int64_t n = c->v * c->h;
  double *dw = malloc((size_t)n * sizeof *dw), *db = malloc((size_t)c->v * sizeof *db);
  double *big = malloc((size_t)(n + c->v) * sizeof *big), *exact = malloc((size_t)(n + c->v) * sizeof *exact);
  chunked_reference(c, &in, dw, db, big, exact);
  /* a library's GEMMs take the logits' gradient rounded to the dtype: a tolerance */
  const bool bits = c->gemm == NULL;
  if (c->dweight) {
    if (bits) expect_chunked("dweight", got.dw, c, dw, big, exact, n, true, where);
    else {
      double largest = 0;
      for (int64_t i = 0; i < n; i++) largest = fmax(largest, big[i]);
      for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(ref_load(got.dw, i, c->dt) - dw[i]) <= 0.02 * largest,
                  "%s: dweight[%lld] = %.9g, chunked reference %.9g (largest %g)", where, (long long)i,
                  ref_load(got.dw, i, c->dt), dw[i], largest);
    }
  }
  if (c->dbias) expect_chunked("dbias", got.db, c, db, big + n, exact + n, c->v, false, where);

  /* the same bits on one and two threads (a library's: on the same thread count, call after call) */
  ubg_ctx *other = bits ? case_ctx(c, 1) : ctx;
  aout o1 = alloc_out(c);
  cr_assert_eq(run(other, c, &in, (ubg_dtype)c->dt, &o1), UBG_OK, "%s: %s", where, ubg_ctx_error(other));
  if (c->dweight) cr_assert(!memcmp(o1.dw, got.dw, (size_t)n * es), "%s: dweight differs on another call", where);
  if (c->dbias) cr_assert(!memcmp(o1.db, got.db, (size_t)c->v * es), "%s: dbias differs on another call", where);
  free_out(&o1);
  if (other != ctx) ubg_ctx_destroy(other);
  free(dw), free(db), free(big), free(exact);
  free_out(&got), free_out(&f32);
  free_inputs(&in);
  ubg_ctx_destroy(ctx);
}

/* vocab 200 makes slices of 32 rows of dweight and a short last one */
Test(flce_accum, sums_in_the_dtype_rounded_after_every_chunk, .timeout = 60 * TC_TIME_SCALE) {
  for (int dt = REF_F16; dt <= REF_BF16; dt++)
    for (int r = 0; r < 2; r++) {
      acase c = {dt, 96, 40, 200, 16, r ? UBG_REDUCE_SUM : UBG_REDUCE_MEAN, true, true, NULL};
      check_case(&c);
    }
}

Test(flce_accum, dweight_or_dbias_alone) {
  acase a = {REF_BF16, 64, 24, 100, 8, UBG_REDUCE_SUM, true, false, NULL};
  check_case(&a);
  acase b = {REF_BF16, 64, 24, 100, 8, UBG_REDUCE_SUM, false, true, NULL};
  check_case(&b);
}

Test(flce_accum, on_onednn, .timeout = 60 * TC_TIME_SCALE) {
  if (rt_dnnl_missing() || !rt_dnnl_runs(UBG_BF16)) cr_skip_test("no oneDNN bf16 matmul in this build or on this CPU");
  acase c = {REF_BF16, 100, 64, 300, 32, UBG_REDUCE_MEAN, true, true, "onednn"};
  check_case(&c);
}

Test(flce_accum, refuses_a_third_dtype_and_writes_nothing) {
  const struct {
    int dt;
    int accum;
    const char *says;
  } bad[] = {{REF_BF16, UBG_F16, "fails with accum_dtype=1 (f16) dtype=2 (bf16)"},
             {REF_F32, UBG_BF16, "fails with accum_dtype=2 (bf16) dtype=0 (f32)"},
             {REF_F16, 9, "accum_dtype = 9 is not one of 0 (f32), 1 (f16), 2 (bf16)"}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    acase c = {bad[k].dt, 16, 8, 20, 4, UBG_REDUCE_MEAN, true, true, NULL};
    ainputs in = make_inputs(&c);
    ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 0);
    aout o = alloc_out(&c), untouched = alloc_out(&c);
    o.loss = untouched.loss = 7.0f;
    cr_assert_eq(run(ctx, &c, &in, (ubg_dtype)bad[k].accum, &o), UBG_EINVAL);
    cr_assert(strstr(ubg_ctx_error(ctx), bad[k].says), "error: %s", ubg_ctx_error(ctx));
    const size_t es = ref_dtype_bytes(c.dt);
    cr_assert(o.loss == 7.0f && !memcmp(o.dw, untouched.dw, (size_t)(c.v * c.h) * es) &&
                  !memcmp(o.db, untouched.db, (size_t)c.v * es),
              "a refused call wrote its outputs");
    free_out(&o), free_out(&untouched);
    free_inputs(&in);
    ubg_ctx_destroy(ctx);
  }
}

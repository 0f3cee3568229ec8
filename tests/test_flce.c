/* Fused linear cross entropy (ubg_flce) against the double-precision
 * reference (tests/ref/flce_ref.c): each option alone and all together
 * (ignore_index, class weights, label smoothing, z-loss, softcap, bias,
 * argmax, the three reductions) in f32, f16 and bf16; edge shapes (all rows
 * ignored, vocab not a multiple of the CE tile, H = 1, BT = 1, V = 1,
 * BT = 0); the no-gradient mode; the same bits for 1 and 2 threads, for
 * every GEMM variant and for any chunk size; gradients against central
 * finite differences of ubg_flce's own loss; torch's cross_entropy (when
 * a Python with torch is there); the extra memory (chunk of logits, flat in
 * BT); refusals with every output byte untouched.
 *
 * Inputs as a model has them: x ~ N(0, 1), W ~ N(0, 1/sqrt(H)) so logits
 * are O(1), bias ~ N(0, 0.5), class weights uniform in [0.25, 2], targets
 * uniform over the vocab with some rows at ignore_index. The reference
 * reads the stored (rounded) inputs, so every difference is the kernel's
 * own arithmetic.
 *
 * Tolerances are Liger-Kernel's test_fused_linear_cross_entropy.py: f32
 * atol 1e-5 rtol 5e-4, bf16 atol 5e-3 rtol 5e-2; f16 (which Liger does not
 * test) atol 1e-3 rtol 1e-2. Gradients stored in f16/bf16 are read back
 * with ref_load and compared at their dtype's tolerance. loss and z_loss
 * are f32 outputs computed in f32 from exactly represented inputs in every
 * dtype, so they are held to the f32 tolerance throughout (tighter than
 * Liger's bf16 one). The f32 accumulations over H (<= 96), V (<= 4099)
 * and BT (<= 64) stay well below these tolerances at the shapes used here
 * (worst case (n - 1) u sum|terms|, u = 2^-24: about 3e-5 on a logit at
 * H = 96, which moves the loss by as much and each p_v by that relatively,
 * against 1e-5 + 5e-4 |loss| (~3e-3 here) and rtol 5e-4; typical errors
 * are u sqrt(n) times the terms), so no extra allowance is needed. argmax must be the reference's, except where two logits tie to
 * within f32 rounding (|z_a - z_b| <= 1e-5 (1 + |z|)): then either index
 * is accepted. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ref/flce_ref.h"
#include "test_util.h"

extern size_t rt_composite_last_scratch_bytes(void);
extern int64_t rt_composite_chunk_rows(const ubg_ctx *ctx, const char *kernel, const char *op, ubg_dtype dtype,
                                      const int64_t *shape, int64_t rows);
/* the rows of a chunk ubg_flce takes at this shape (f32, the kernel's shape order bt, hidden, vocab) */
static int64_t flce_chunk_rows(const ubg_ctx *ctx, int64_t bt, int64_t hidden, int64_t vocab) {
  return rt_composite_chunk_rows(ctx, "flce", "chunk", UBG_F32, (const int64_t[3]){bt, hidden, vocab}, bt);
}

/* a context on the generated GEMMs: what this file tests of them (bits
 * across chunks, threads and variants, the scratch bound) is theirs; the
 * library GEMMs' own properties are tested in test_flce_onednn.c and
 * test_flce_accum.c */
static ubg_ctx *generated_ctx(ubg_backend backend, int threads) {
  ubg_ctx *ctx = tc_ctx(backend, threads);
  if (ctx) cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", "gemm=generated"), UBG_OK, "%s", ubg_ctx_error(ctx));
  return ctx;
}

static const double G_ATOL[3] = {1e-5, 1e-3, 5e-3}, G_RTOL[3] = {5e-4, 1e-2, 5e-2};
static const double L_ATOL = 1e-5, L_RTOL = 5e-4;

/* ---- a case: shape, options, which outputs are asked for */

typedef struct {
  int dt;
  int64_t bt, h, v;
  ubg_reduction red;
  int64_t ignore_index;
  float ls, s, cap;
  bool cw, bias;          /* class weights, bias given */
  bool cw_neg;            /* the class weights negated: in [-2, -0.25] */
  double go;              /* the upstream gradient (grad_output), 0: none given */
  bool go_rows;           /* NONE: one per row, go times values in [-0.5, 1.5] */
  bool ts, acc;           /* token scaling; token_accuracy asked for */
  bool z, am, dx, dw, db; /* outputs asked for (loss always) */
  int64_t ignored;        /* rows set to ignore_index, spread over the batch */
  bool identity;          /* no weight: the identity (h == v), x the logits */
  uint64_t seed;
} fc;

static fc base(int dt, int64_t bt, int64_t h, int64_t v) {
  fc c;
  memset(&c, 0, sizeof c);
  c.dt = dt, c.bt = bt, c.h = h, c.v = v;
  c.red = UBG_REDUCE_MEAN;
  c.ignore_index = -100;
  c.dx = c.dw = true;
  c.seed = 1;
  return c;
}

static const char *red_name(ubg_reduction r) {
  return r == UBG_REDUCE_MEAN ? "mean" : r == UBG_REDUCE_SUM ? "sum" : "none";
}

static void describe(const fc *c, char *buf, size_t n) {
  snprintf(buf, n, "%s bt=%lld H=%lld V=%lld %s ls=%g s=%g cap=%g%s%s ignored=%lld ignore_index=%lld%s%s%s%s%s",
           ug_dtype_name(c->dt), (long long)c->bt, (long long)c->h, (long long)c->v, red_name(c->red), c->ls, c->s,
           c->cap, c->cw ? " weights" : "", c->bias ? " bias" : "", (long long)c->ignored, (long long)c->ignore_index,
           c->z ? " +z_loss" : "", c->am ? " +argmax" : "", c->dx ? " +dx" : "", c->dw ? " +dweight" : "",
           c->db ? " +dbias" : "");
}

static double unif(uint64_t *s) { return (double)(tc_next(s) >> 11) * 0x1.0p-53; }

typedef struct {
  void *x, *w, *cw, *b;
  int64_t *t;
  float *go;
  ubg_flce_opts o;
} fin;

static fin make_inputs(const fc *c) {
  fin in;
  memset(&in, 0, sizeof in);
  const uint64_t seed = c->seed * 7919u + (uint64_t)(c->bt * 131 + c->h * 17 + c->v) * 3u + (uint64_t)c->dt;
  in.x = tc_tensor(c->dt, c->bt * c->h, 0, 1, seed + 1);
  in.w = c->identity ? NULL : tc_tensor(c->dt, c->v * c->h, 0, 1 / sqrt((double)c->h), seed + 2);
  if (c->bias) in.b = tc_tensor(c->dt, c->v, 0, 0.5, seed + 3);
  if (c->cw) {
    uint64_t s = seed + 4;
    in.cw = malloc((size_t)c->v * 4);
    for (int64_t i = 0; i < c->v; i++) ref_store(in.cw, i, REF_F32, (c->cw_neg ? -1 : 1) * (0.25 + 1.75 * unif(&s)));
  }
  uint64_t s = seed + 5;
  in.t = malloc((size_t)(c->bt ? c->bt : 1) * sizeof *in.t);
  for (int64_t r = 0; r < c->bt; r++) in.t[r] = (int64_t)(tc_next(&s) % (uint64_t)c->v);
  for (int64_t k = 0; k < c->ignored && k < c->bt; k++) in.t[(2 * k + 1) * c->bt / (2 * c->ignored)] = c->ignore_index;
  ubg_flce_opts_init(&in.o);
  in.o.ignore_index = c->ignore_index;
  in.o.label_smoothing = c->ls;
  in.o.lse_square_scale = c->s;
  in.o.softcap = c->cap;
  in.o.reduction = c->red;
  in.o.ce_weight = in.cw;
  in.o.bias = in.b;
  if (c->go != 0) {
    const int64_t n = c->red == UBG_REDUCE_NONE ? c->bt : 1;
    uint64_t gs = seed + 6;
    in.go = malloc((size_t)(n ? n : 1) * sizeof *in.go);
    for (int64_t i = 0; i < n; i++) in.go[i] = (float)(c->go_rows ? c->go * (2 * unif(&gs) - 0.5) : c->go);
    in.o.grad_output = in.go;
  }
  in.o.token_scaling = c->ts;
  return in;
}

static void free_inputs(fin *in) { free(in->x), free(in->w), free(in->cw), free(in->b), free(in->t), free(in->go); }

/* ---- outputs, each followed by a guard that must stay as it was */

enum { GUARD = 64, FILL_F = 0xff /* NaN in every float dtype */, FILL_I = 0x5a, FILL_G = 0x3c };

typedef struct {
  float *loss, *zl, *acc;
  int64_t *am;
  void *dx, *dw, *db;
  size_t n_loss, b_loss, b_am, b_dx, b_dw, b_db; /* bytes of each */
} fout;

static void *guarded(size_t bytes, int fill) {
  unsigned char *p = malloc(bytes + GUARD);
  memset(p, fill, bytes);
  memset(p + bytes, FILL_G, GUARD);
  return p;
}

static fout alloc_out(const fc *c) {
  fout o;
  memset(&o, 0, sizeof o);
  const size_t es = ref_dtype_bytes(c->dt);
  o.n_loss = c->red == UBG_REDUCE_NONE ? (size_t)c->bt : 1;
  o.b_loss = o.n_loss * 4;
  o.b_am = (size_t)c->bt * 8;
  o.b_dx = (size_t)(c->bt * c->h) * es;
  o.b_dw = (size_t)(c->v * c->h) * es;
  o.b_db = (size_t)c->v * es;
  o.loss = guarded(o.b_loss, FILL_F);
  if (c->z) o.zl = guarded(o.b_loss, FILL_F);
  if (c->am) o.am = guarded(o.b_am, FILL_I);
  if (c->dx) o.dx = guarded(o.b_dx, FILL_F);
  if (c->dw) o.dw = guarded(o.b_dw, FILL_F);
  if (c->db) o.db = guarded(o.b_db, FILL_F);
  if (c->acc) o.acc = guarded(o.b_loss, FILL_F);
  return o;
}

static void free_out(fout *o) {
  free(o->loss), free(o->zl), free(o->am), free(o->dx), free(o->dw), free(o->db), free(o->acc);
}

static void check_guard(const void *p, size_t bytes, const char *what, const char *where) {
  if (!p) return;
  const unsigned char *g = (const unsigned char *)p + bytes;
  for (int i = 0; i < GUARD; i++)
    cr_assert_eq(g[i], FILL_G, "%s: written past the end of %s (byte %zu)", where, what, bytes + (size_t)i);
}

static void check_guards(const fout *o, const char *where) {
  check_guard(o->loss, o->b_loss, "loss", where);
  check_guard(o->zl, o->b_loss, "z_loss", where);
  check_guard(o->am, o->b_am, "argmax", where);
  check_guard(o->dx, o->b_dx, "dx", where);
  check_guard(o->dw, o->b_dw, "dweight", where);
  check_guard(o->db, o->b_db, "dbias", where);
  check_guard(o->acc, o->b_loss, "token_accuracy", where);
}

static ubg_status call(ubg_ctx *ctx, const fc *c, const fin *in, const fout *o) {
  ubg_flce_out out = {o->loss, o->zl, o->am, o->dx, o->dw, o->db, o->acc};
  return ubg_flce(ctx, (ubg_dtype)c->dt, c->bt, c->h, c->v, in->x, in->w, in->t, &in->o, &out);
}

/* the same bytes in every output asked for (and the guards) */
static bool same_out(const fout *a, const fout *b) {
  return !memcmp(a->loss, b->loss, a->b_loss + GUARD) && (!a->zl || !memcmp(a->zl, b->zl, a->b_loss + GUARD)) &&
         (!a->am || !memcmp(a->am, b->am, a->b_am + GUARD)) && (!a->dx || !memcmp(a->dx, b->dx, a->b_dx + GUARD)) &&
         (!a->dw || !memcmp(a->dw, b->dw, a->b_dw + GUARD)) && (!a->db || !memcmp(a->db, b->db, a->b_db + GUARD));
}

static const char *first_diff(const fout *a, const fout *b) {
  if (memcmp(a->loss, b->loss, a->b_loss)) return "loss";
  if (a->zl && memcmp(a->zl, b->zl, a->b_loss)) return "z_loss";
  if (a->am && memcmp(a->am, b->am, a->b_am)) return "argmax";
  if (a->dx && memcmp(a->dx, b->dx, a->b_dx)) return "dx";
  if (a->dw && memcmp(a->dw, b->dw, a->b_dw)) return "dweight";
  if (a->db && memcmp(a->db, b->db, a->b_db)) return "dbias";
  return "a guard";
}

/* ---- the reference, and the comparison */

typedef struct {
  double *loss, *zl, *dx, *dw, *db;
  int64_t *am;
} fref;

static fref make_ref(const fc *c, const fin *in) {
  fref r;
  const size_t nl = c->red == UBG_REDUCE_NONE ? (size_t)c->bt : 1;
  r.loss = malloc((nl + 1) * sizeof(double));
  r.zl = malloc((nl + 1) * sizeof(double));
  r.am = malloc((size_t)(c->bt + 1) * sizeof(int64_t));
  r.dx = malloc((size_t)(c->bt * c->h + 1) * sizeof(double));
  r.dw = in->w ? malloc((size_t)(c->v * c->h + 1) * sizeof(double)) : NULL;
  r.db = malloc((size_t)(c->v + 1) * sizeof(double));
  flce_ref_full(c->dt, c->bt, c->h, c->v, in->x, in->w, in->t, &in->o, r.loss, r.zl, r.am, r.dx, r.dw,
                c->bias ? r.db : NULL);
  return r;
}

static void free_ref(fref *r) { free(r->loss), free(r->zl), free(r->am), free(r->dx), free(r->dw), free(r->db); }

static void expect_close(const char *what, const void *got, int dt, const double *want, int64_t n, double atol,
                         double rtol, const char *where) {
  tc_assert_close(got, dt, want, n, atol, rtol, "%s (atol %g, rtol %g): %s", where, atol, rtol, what);
}

/* z_v of row r in double (logits after the softcap) */
static double ref_z(const fc *c, const fin *in, int64_t r, int64_t v) {
  double l = in->b ? ref_load(in->b, v, c->dt) : 0;
  if (!in->w) /* the identity */
    l += ref_load(in->x, r * c->h + v, c->dt);
  for (int64_t h = 0; h < c->h && in->w; h++)
    l += ref_load(in->x, r * c->h + h, c->dt) * ref_load(in->w, v * c->h + h, c->dt);
  return c->cap > 0 ? c->cap * tanh(l / c->cap) : l;
}

static void expect_argmax(const fc *c, const fin *in, const int64_t *got, const int64_t *want, const char *where) {
  for (int64_t r = 0; r < c->bt; r++) {
    if (got[r] == want[r]) continue;
    cr_assert(want[r] >= 0 && got[r] >= 0 && got[r] < c->v, "%s: argmax[%lld] = %lld, reference %lld", where,
              (long long)r, (long long)got[r], (long long)want[r]);
    const double zg = ref_z(c, in, r, got[r]), zw = ref_z(c, in, r, want[r]);
    cr_assert(fabs(zg - zw) <= 1e-5 * (1 + fabs(zw)), "%s: argmax[%lld] = %lld (z %.9g), reference %lld (z %.9g)",
              where, (long long)r, (long long)got[r], zg, (long long)want[r], zw);
  }
}

static void check_ref(const fc *c, const fin *in, const fout *o, const fref *r, const char *where) {
  const int64_t nl = (int64_t)o->n_loss;
  expect_close("loss", o->loss, REF_F32, r->loss, nl, L_ATOL, L_RTOL, where);
  if (o->zl) expect_close("z_loss", o->zl, REF_F32, r->zl, nl, L_ATOL, L_RTOL, where);
  if (o->am) expect_argmax(c, in, o->am, r->am, where);
  const int dt = c->dt;
  if (o->dx) expect_close("dx", o->dx, dt, r->dx, c->bt * c->h, G_ATOL[dt], G_RTOL[dt], where);
  if (o->dw) expect_close("dweight", o->dw, dt, r->dw, c->v * c->h, G_ATOL[dt], G_RTOL[dt], where);
  if (o->db) expect_close("dbias", o->db, dt, r->db, c->v, G_ATOL[dt], G_RTOL[dt], where);
  if (o->acc) { /* from the argmax the call returned (checked above, ties allowed) */
    cr_assert_not_null(o->am, "%s: token_accuracy is checked against argmax", where);
    int64_t hits = 0, counted = 0;
    for (int64_t i = 0; i < c->bt; i++) {
      const bool valid = in->t[i] != c->ignore_index, hit = valid && o->am[i] == in->t[i];
      hits += hit, counted += valid;
      if (c->red == UBG_REDUCE_NONE)
        cr_assert_eq(o->acc[i], hit ? 1.0f : 0.0f, "%s: token_accuracy[%lld] = %g", where, (long long)i, o->acc[i]);
    }
    if (c->red != UBG_REDUCE_NONE)
      cr_assert_eq(o->acc[0], (float)((double)hits / (double)counted), "%s: token_accuracy %g, %lld of %lld", where,
                   o->acc[0], (long long)hits, (long long)counted);
  }
  check_guards(o, where);
}

/* one call against the reference; the outputs are returned for more checks */
static fout run_checked(ubg_ctx *ctx, const fc *c) {
  char where[300];
  describe(c, where, sizeof where);
  fin in = make_inputs(c);
  fout o = alloc_out(c);
  ubg_status st = call(ctx, c, &in, &o);
  cr_assert_eq(st, UBG_OK, "%s: %s: %s", where, ubg_status_str(st), ubg_ctx_error(ctx));
  fref r = make_ref(c, &in);
  check_ref(c, &in, &o, &r, where);
  free_ref(&r);
  free_inputs(&in);
  return o;
}

static void check_case(ubg_ctx *ctx, const fc *c) {
  fout o = run_checked(ctx, c);
  free_out(&o);
}

/* each dtype, on a fresh context */
#define FOR_DTYPES(ctx)                                                                                                \
  for (int dt = 0; dt < 3; dt++)                                                                                       \
    for (ubg_ctx *ctx = generated_ctx(UBG_BACKEND_AUTO, 0); ctx; ubg_ctx_destroy(ctx), ctx = NULL)

/* ---- each option alone, then together */

Test(flce_options, defaults) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 37, 64, 300);
    check_case(ctx, &c);
  }
}

Test(flce_options, ignore_index) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 37, 64, 300);
    c.ignored = 6;
    c.am = true;
    check_case(ctx, &c);
    c.ignore_index = 2; /* a class index: rows with target 2 are ignored */
    c.ignored = 4;
    check_case(ctx, &c);
  }
}

Test(flce_options, class_weights) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 40, 64, 300);
    c.cw = true;
    check_case(ctx, &c);
    c.ignored = 5;
    check_case(ctx, &c);
  }
}

/* Liger's tests use negative class weights: the mean divides by their sum
 * whatever its sign, as torch does (a clamp of the sum to 1e-12 once made
 * this loss -1e13) */
Test(flce_options, negative_class_weights) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 40, 64, 300);
    c.cw = c.cw_neg = true;
    c.ignored = 5;
    check_case(ctx, &c);
    c.red = UBG_REDUCE_SUM;
    check_case(ctx, &c);

    /* every weight -1: sum(w nll) / sum(w) is the unweighted mean, > 0 */
    c.red = UBG_REDUCE_MEAN;
    fin in = make_inputs(&c);
    for (int64_t v = 0; v < c.v; v++) ref_store(in.cw, v, REF_F32, -1.0);
    fout weighted = alloc_out(&c), plain = alloc_out(&c);
    cr_assert_eq(call(ctx, &c, &in, &weighted), UBG_OK, "%s", ubg_ctx_error(ctx));
    in.o.ce_weight = NULL;
    cr_assert_eq(call(ctx, &c, &in, &plain), UBG_OK, "%s", ubg_ctx_error(ctx));
    cr_assert(weighted.loss[0] > 0 && fabs(weighted.loss[0] - plain.loss[0]) <= L_ATOL + L_RTOL * fabs(plain.loss[0]),
              "%s: weights all -1 give mean loss %g, the unweighted mean is %g", ug_dtype_name(dt), weighted.loss[0],
              plain.loss[0]);
    in.o.ce_weight = in.cw;
    free_out(&weighted), free_out(&plain);
    free_inputs(&in);
  }
}

/* The gradients of grad_output * loss: a scalar for MEAN and SUM, one per
 * row for NONE (the C side folds it into each row's logits gradient,
 * before dweight and dbias sum over rows, as Liger's none path must) */
Test(flce_options, upstream_gradient) {
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  FOR_DTYPES(ctx) {
    for (int k = 0; k < 3; k++) {
      fc c = base(dt, 37, 48, 300);
      c.red = reds[k];
      c.go = k == 0 ? 2.5 : -0.75;
      c.go_rows = k == 2;
      c.bias = c.db = c.cw = true;
      c.ignored = 3;
      c.s = 1e-3f, c.ls = 0.1f;
      check_case(ctx, &c);
    }
  }
}

/* Liger's use_token_scaling: each row's loss, z-loss and gradient times
 * its own p(target), held constant */
Test(flce_options, token_scaling) {
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  FOR_DTYPES(ctx) {
    for (int k = 0; k < 3; k++) {
      fc c = base(dt, 33, 40, 257);
      c.red = reds[k];
      c.ts = c.z = true;
      c.s = 1e-2f;
      c.ignored = 4;
      c.cap = k == 1 ? 5.0f : 0.0f;
      check_case(ctx, &c);
      c.go = 0.5, c.go_rows = k == 2, c.cw = true; /* with an upstream gradient and class weights */
      check_case(ctx, &c);
    }
  }
}

/* Liger's return_token_accuracy: rows whose argmax is the target, over the
 * rows not ignored (MEAN, SUM), or 1 and 0 per row (NONE); with or without
 * argmax asked for (then in scratch) */
Test(flce_options, token_accuracy) {
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  FOR_DTYPES(ctx) {
    for (int k = 0; k < 3; k++) {
      fc c = base(dt, 64, 16, 8); /* few classes: many rows hit */
      c.red = reds[k];
      c.acc = c.am = true;
      c.ignored = 5;
      check_case(ctx, &c);
      /* without argmax: the same accuracy */
      fin in = make_inputs(&c);
      fout with = alloc_out(&c);
      c.am = false;
      fout without = alloc_out(&c);
      cr_assert_eq(call(ctx, &c, &in, &with), UBG_OK, "%s", ubg_ctx_error(ctx));
      cr_assert_eq(call(ctx, &c, &in, &without), UBG_OK, "%s", ubg_ctx_error(ctx));
      cr_assert(!memcmp(with.acc, without.acc, with.b_loss), "token_accuracy differs without argmax");
      free_out(&with), free_out(&without);
      free_inputs(&in);
    }
  }
}

/* ubg_cross_entropy on given logits L [bt, V] against the reference with
 * x = L and the identity for the weight (x W^T = L exactly and the
 * reference's dx is dloss/dL) */
static void ce_op_case(ubg_ctx *ctx, const fc *c, bool in_place, bool grad) {
  char where[300];
  describe(c, where, sizeof where);
  fc fcase = *c;
  fcase.h = c->v;
  fcase.identity = true;
  fin in = make_inputs(&fcase);
  const size_t es = ref_dtype_bytes(c->dt);
  fref r = make_ref(&fcase, &in);
  const int64_t n = c->bt * c->v;
  void *logits = malloc((size_t)n * es), *copy = malloc((size_t)n * es);
  memcpy(logits, in.x, (size_t)n * es);
  memcpy(copy, in.x, (size_t)n * es);
  fout o = alloc_out(&fcase);
  void *dl = !grad ? NULL : in_place ? logits : guarded((size_t)n * es, FILL_F);
  ubg_ce_out out = {o.loss, o.zl, o.am, o.acc, dl};
  in.o.bias = NULL;
  ubg_status st = ubg_cross_entropy(ctx, (ubg_dtype)c->dt, c->bt, c->v, logits, in.t, &in.o, &out);
  cr_assert_eq(st, UBG_OK, "%s: %s", where, ubg_ctx_error(ctx));
  const int64_t nl = (int64_t)o.n_loss;
  expect_close("loss", o.loss, REF_F32, r.loss, nl, L_ATOL, L_RTOL, where);
  if (o.zl) expect_close("z_loss", o.zl, REF_F32, r.zl, nl, L_ATOL, L_RTOL, where);
  if (o.am) expect_argmax(&fcase, &in, o.am, r.am, where);
  if (grad) expect_close("dlogits", dl, c->dt, r.dx, n, G_ATOL[c->dt], G_RTOL[c->dt], where);
  if (grad && !in_place) check_guard(dl, (size_t)n * es, "dlogits", where);
  if (!in_place) cr_assert(!memcmp(logits, copy, (size_t)n * es), "%s: the logits were written", where);
  check_guards(&o, where);
  if (dl != logits) free(dl);
  free(logits), free(copy);
  free_out(&o);
  free_ref(&r);
  free_inputs(&in);
}

Test(flce_ce_op, cross_entropy_on_given_logits) {
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  FOR_DTYPES(ctx) {
    for (int k = 0; k < 3; k++) {
      fc c = base(dt, 29, 0, 300);
      c.red = reds[k];
      c.am = c.z = c.acc = true;
      c.ignored = 3;
      ce_op_case(ctx, &c, false, true);
      ce_op_case(ctx, &c, true, true);
      ce_op_case(ctx, &c, false, false);
      c.cw = true, c.ls = 0.1f, c.s = 1e-3f, c.cap = 4.0f, c.ts = k == 1, c.go = 1.5, c.go_rows = k == 2;
      ce_op_case(ctx, &c, false, true);
    }
  }
  /* rows beyond one chunk of widened f16 and bf16 logits (4 MiB of f32) */
  ubg_ctx *ctx = generated_ctx(UBG_BACKEND_AUTO, 0);
  fc c = base(REF_BF16, 70, 0, 16384);
  c.red = UBG_REDUCE_SUM;
  ce_op_case(ctx, &c, false, true);
  ubg_ctx_destroy(ctx);
}

Test(flce_ce_op, refuses_bad_arguments) {
  ubg_ctx *ctx = generated_ctx(UBG_BACKEND_AUTO, 1);
  float logits[3 * 5] = {0}, dl[3 * 5], loss = -7, bias[5] = {0};
  int64_t t[3] = {0, 4, 7};
  ubg_flce_opts o;
  ubg_flce_opts_init(&o);
  ubg_ce_out out = {&loss, NULL, NULL, NULL, dl};
  cr_assert_eq(ubg_cross_entropy(ctx, UBG_F32, 3, 5, logits, t, &o, &out), UBG_ERANGE);
  cr_assert(strstr(ubg_ctx_error(ctx), "ubg_cross_entropy: target[2] = 7"), "%s", ubg_ctx_error(ctx));
  t[2] = 1;
  o.bias = bias;
  cr_assert_eq(ubg_cross_entropy(ctx, UBG_F32, 3, 5, logits, t, &o, &out), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "bias"), "%s", ubg_ctx_error(ctx));
  o.bias = NULL;
  ubg_ce_out part = {&loss, NULL, NULL, NULL, logits + 1}; /* dlogits a part of the logits */
  cr_assert_eq(ubg_cross_entropy(ctx, UBG_F32, 3, 5, logits, t, &o, &part), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "overlap"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(ubg_cross_entropy(ctx, UBG_F32, 3, 0, logits, t, &o, &out), UBG_EINVAL);
  cr_assert_eq(ubg_cross_entropy(ctx, UBG_F32, 3, 5, NULL, t, &o, &out), UBG_EINVAL);
  o.token_scaling = 2;
  cr_assert_eq(ubg_cross_entropy(ctx, UBG_F32, 3, 5, logits, t, &o, &out), UBG_EINVAL);
  cr_assert(strstr(ubg_ctx_error(ctx), "token_scaling = 2"), "%s", ubg_ctx_error(ctx));
  cr_assert_eq(loss, -7, "loss written by a refused call");
  ubg_ctx_destroy(ctx);
}

/* counted weights that sum to exactly 0: the mean's 1/0 is +Inf, so the loss
 * and the counted rows' gradients are not finite (torch's division by the
 * zero sum gives Inf or NaN too); status OK, as for any NaN in the inputs */
Test(flce_edge, class_weights_summing_to_zero) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 4, 16, 8);
    c.cw = true;
    fin in = make_inputs(&c);
    const int64_t t[4] = {0, 1, 2, 3};
    const double w[4] = {1, -1, 0.5, -0.5};
    for (int r = 0; r < 4; r++) in.t[r] = t[r], ref_store(in.cw, t[r], REF_F32, w[r]);
    fout o = alloc_out(&c);
    cr_assert_eq(call(ctx, &c, &in, &o), UBG_OK, "%s", ubg_ctx_error(ctx));
    cr_assert(!isfinite(o.loss[0]), "%s: loss %g with weights summing to 0", ug_dtype_name(dt), o.loss[0]);
    cr_assert(!isfinite(ref_load(o.dx, 0, dt)), "%s: dx[0] = %g", ug_dtype_name(dt), ref_load(o.dx, 0, dt));
    free_out(&o);
    free_inputs(&in);
  }
}

Test(flce_options, label_smoothing) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 33, 48, 257);
    c.ls = 0.1f;
    check_case(ctx, &c);
    c.ls = 1.0f; /* the whole loss is the smoothing term */
    check_case(ctx, &c);
    c.ls = 0.25f, c.cw = true, c.ignored = 3;
    check_case(ctx, &c);
  }
}

Test(flce_options, z_loss) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 35, 64, 300);
    c.s = 1e-2f;
    c.z = true;
    check_case(ctx, &c);
    c.s = 1e-4f, c.ignored = 4, c.cw = true; /* Liger's value; weights scale the CE part only */
    check_case(ctx, &c);
  }
}

Test(flce_options, softcap) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 30, 64, 300);
    c.cap = 1.5f; /* below the largest logits: the cap bends them */
    c.am = true;
    check_case(ctx, &c);
    c.cap = 30.0f; /* Gemma's value: nearly the identity */
    check_case(ctx, &c);
  }
}

Test(flce_options, bias_and_dbias) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 31, 64, 300);
    c.bias = true;
    check_case(ctx, &c);
    c.db = true, c.ignored = 3;
    check_case(ctx, &c);
  }
}

Test(flce_options, argmax_and_z_loss_outputs) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 45, 32, 200);
    c.am = c.z = true;
    c.ignored = 7;
    fout o = run_checked(ctx, &c);
    fin in = make_inputs(&c);
    for (int64_t r = 0; r < c.bt; r++)
      if (in.t[r] == c.ignore_index)
        cr_assert_eq(o.am[r], -1, "%s: argmax of ignored row %lld", ug_dtype_name(dt), (long long)r);
    cr_assert_eq(o.zl[0], 0.0f, "z_loss with s = 0");
    free_inputs(&in);
    free_out(&o);
  }
}

Test(flce_options, reduction_sum) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 37, 64, 300);
    c.red = UBG_REDUCE_SUM;
    c.ignored = 5;
    check_case(ctx, &c);
    c.cw = true;
    check_case(ctx, &c);
  }
}

Test(flce_options, reduction_none) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 37, 64, 300);
    c.red = UBG_REDUCE_NONE;
    c.ignored = 5;
    c.z = true, c.s = 1e-3f;
    fout o = run_checked(ctx, &c);
    fin in = make_inputs(&c);
    for (int64_t r = 0; r < c.bt; r++)
      if (in.t[r] == c.ignore_index)
        cr_assert(o.loss[r] == 0 && o.zl[r] == 0, "ignored row %lld has a loss", (long long)r);
    free_inputs(&in);
    free_out(&o);
    c.cw = true;
    check_case(ctx, &c);
  }
}

Test(flce_options, all_combined, .timeout = 120 * TC_TIME_SCALE) {
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  FOR_DTYPES(ctx) {
    for (int k = 0; k < 3; k++) {
      fc c = base(dt, 64, 96, 600);
      c.red = reds[k];
      c.cw = c.bias = c.z = c.am = c.db = true;
      c.ls = 0.1f, c.s = 1e-3f, c.cap = 2.0f;
      c.ignored = 9;
      c.seed = 10 + (uint64_t)k;
      check_case(ctx, &c);
    }
  }
}

/* ---- edge shapes */

Test(flce_edge, all_rows_ignored) {
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  FOR_DTYPES(ctx) {
    for (int k = 0; k < 3; k++) {
      fc c = base(dt, 12, 16, 50);
      c.red = reds[k];
      c.ignored = 12;
      c.cw = (k == 0), c.bias = c.db = c.z = c.am = true, c.ls = 0.1f, c.s = 1e-3f;
      fout o = run_checked(ctx, &c);
      /* Liger clamps the count (and weight sum) to 1: loss 0, no gradient, no NaN */
      for (size_t i = 0; i < o.n_loss; i++) cr_assert(o.loss[i] == 0 && o.zl[i] == 0, "loss %g", o.loss[i]);
      for (int64_t i = 0; i < c.bt; i++) cr_assert_eq(o.am[i], -1);
      for (int64_t i = 0; i < c.bt * c.h; i++) cr_assert_eq(ref_load(o.dx, i, dt), 0.0, "dx[%lld]", (long long)i);
      for (int64_t i = 0; i < c.v * c.h; i++) cr_assert_eq(ref_load(o.dw, i, dt), 0.0, "dweight[%lld]", (long long)i);
      for (int64_t i = 0; i < c.v; i++) cr_assert_eq(ref_load(o.db, i, dt), 0.0, "dbias[%lld]", (long long)i);
      free_out(&o);
    }
  }
}

/* every CE variant that applies (tiled ones whose BLOCK_V does not divide
 * the vocab, and non-tiled ones that hold it) gives the same bits */
static void ce_variants_sweep(int dt, int64_t vocab) {
  fc c = base(dt, 16, 40, vocab);
  c.cw = c.bias = c.db = c.z = c.am = true;
  c.ls = 0.1f, c.s = 1e-3f, c.cap = 3.0f, c.ignored = 2;
  char where[300];
  describe(&c, where, sizeof where);
  tc_variants vs = tc_kernel_variants("flce", "ce", dt);
  cr_assert(vs.n > 0, "no flce.ce variants for %s", ug_dtype_name(dt));
  ubg_ctx *ctx = generated_ctx(UBG_BACKEND_AUTO, 0);
  fout first;
  const char *first_name = NULL;
  int ran = 0, partial = 0;
  for (int i = 0; i < vs.n; i++) {
    const ug_variant *var = &vs.v[i];
    if (!tc_applies(var, vocab)) continue;
    cr_assert_eq(ubg_set_variant(ctx, "flce", "ce", var->name), UBG_OK, "%s: %s", var->name, ubg_ctx_error(ctx));
    if (var->pt.tiled && vocab % tc_block_d(var)) partial++;
    if (!first_name) {
      first = run_checked(ctx, &c);
      first_name = var->name;
      cr_assert(strstr(ubg_ctx_last_variant(ctx), var->name), "forced %s, ran %s", var->name,
                ubg_ctx_last_variant(ctx));
    } else {
      fin in = make_inputs(&c);
      fout o = alloc_out(&c);
      cr_assert_eq(call(ctx, &c, &in, &o), UBG_OK, "%s %s: %s", var->name, where, ubg_ctx_error(ctx));
      if (!same_out(&o, &first)) {
        fref r = make_ref(&c, &in);
        check_ref(&c, &in, &o, &r, where);
        cr_assert_fail("%s %s: %s differs from %s's", var->name, where, first_diff(&o, &first), first_name);
      }
      free_inputs(&in);
      free_out(&o);
    }
    ran++;
  }
  cr_assert(ran > 1 && partial > 0, "%s: %d CE variants ran, %d with a partial last tile", where, ran, partial);
  free_out(&first);
  tc_free_variants(&vs);
  ubg_ctx_destroy(ctx);
}

Test(flce_edge, vocab_not_a_multiple_of_block_v, .timeout = 120 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++) {
    ce_variants_sweep(dt, 600);
    ce_variants_sweep(dt, 4099);
  }
}

Test(flce_edge, hidden_1) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 20, 1, 300);
    c.bias = c.db = c.am = true, c.ls = 0.1f, c.ignored = 2;
    check_case(ctx, &c);
  }
}

Test(flce_edge, bt_1) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 1, 64, 300);
    c.cw = c.bias = c.db = c.am = c.z = true, c.ls = 0.1f, c.s = 1e-3f, c.cap = 2.0f;
    check_case(ctx, &c);
    c.red = UBG_REDUCE_NONE;
    check_case(ctx, &c);
  }
}

Test(flce_edge, vocab_1) {
  FOR_DTYPES(ctx) {
    /* one class: the CE part is 0; the z-loss and its gradient remain */
    fc c = base(dt, 9, 16, 1);
    c.bias = c.db = c.am = c.z = true, c.ls = 0.1f, c.s = 1e-2f, c.ignored = 1;
    fout o = run_checked(ctx, &c);
    for (int64_t r = 0; r < c.bt; r++) cr_assert(o.am[r] == 0 || o.am[r] == -1);
    free_out(&o);
    c.red = UBG_REDUCE_NONE, c.cw = true;
    check_case(ctx, &c);
  }
}

Test(flce_edge, bt_0) {
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  FOR_DTYPES(ctx) {
    for (int k = 0; k < 3; k++) {
      fc c = base(dt, 0, 16, 30);
      c.red = reds[k];
      c.bias = c.db = c.z = c.am = true;
      fin in = make_inputs(&c);
      fout o = alloc_out(&c);
      cr_assert_eq(call(ctx, &c, &in, &o), UBG_OK, "%s", ubg_ctx_error(ctx));
      if (c.red != UBG_REDUCE_NONE) {
        cr_assert(o.loss[0] == 0 && o.zl[0] == 0, "bt = 0 %s: loss %g z_loss %g", red_name(c.red), o.loss[0], o.zl[0]);
      }
      /* NONE: loss has no element; nothing is written there (the guards) */
      check_guards(&o, "bt = 0");
      /* the gradient of an empty sum: dweight and dbias are zero */
      for (int64_t i = 0; i < c.v * c.h; i++) cr_assert_eq(ref_load(o.dw, i, dt), 0.0, "dweight[%lld]", (long long)i);
      for (int64_t i = 0; i < c.v; i++) cr_assert_eq(ref_load(o.db, i, dt), 0.0, "dbias[%lld]", (long long)i);
      free_inputs(&in);
      free_out(&o);
    }
  }
}

/* ---- no gradient asked for: the loss (and argmax) alone */

Test(flce_nograd, loss_and_argmax_without_gradients) {
  FOR_DTYPES(ctx) {
    fc c = base(dt, 50, 64, 300);
    c.dx = c.dw = false;
    c.am = c.z = true, c.cw = c.bias = true, c.ls = 0.1f, c.s = 1e-3f, c.cap = 2.0f, c.ignored = 4;
    check_case(ctx, &c);
    c.red = UBG_REDUCE_NONE;
    check_case(ctx, &c);
    /* one gradient at a time */
    c.red = UBG_REDUCE_MEAN;
    c.dx = true;
    check_case(ctx, &c);
    c.dx = false, c.dw = true;
    check_case(ctx, &c);
    c.dw = false, c.db = true;
    check_case(ctx, &c);
  }
}

/* ---- the same bits: threads, variants, chunk sizes */

static fc bitwise_case(int dt) {
  fc c = base(dt, 64, 96, 600);
  c.cw = c.bias = c.db = c.z = c.am = true;
  c.ls = 0.1f, c.s = 1e-3f, c.cap = 2.0f, c.ignored = 5;
  return c;
}

static fout run_plain(ubg_ctx *ctx, const fc *c, const fin *in, const char *what) {
  fout o = alloc_out(c);
  ubg_status st = call(ctx, c, in, &o);
  cr_assert_eq(st, UBG_OK, "%s: %s", what, ubg_ctx_error(ctx));
  return o;
}

Test(flce_bitwise, one_and_two_threads) {
  for (int dt = 0; dt < 3; dt++) {
    const ubg_reduction reds[2] = {UBG_REDUCE_MEAN, UBG_REDUCE_NONE};
    for (int k = 0; k < 2; k++) {
      fc c = bitwise_case(dt);
      c.red = reds[k];
      char where[300];
      describe(&c, where, sizeof where);
      fin in = make_inputs(&c);
      ubg_ctx *one = generated_ctx(UBG_BACKEND_AUTO, 1), *two = generated_ctx(UBG_BACKEND_AUTO, 2);
      fout a = run_plain(one, &c, &in, "1 thread"), b = run_plain(two, &c, &in, "2 threads");
      cr_assert(same_out(&a, &b), "%s: 1 and 2 threads differ in %s", where, first_diff(&a, &b));
      fref r = make_ref(&c, &in);
      check_ref(&c, &in, &a, &r, where);
      free_ref(&r);
      free_out(&a), free_out(&b);
      free_inputs(&in);
      ubg_ctx_destroy(one), ubg_ctx_destroy(two);
    }
  }
}

Test(flce_bitwise, gemm_variants, .timeout = 120 * TC_TIME_SCALE) {
  for (int dt = 0; dt < 3; dt++) {
    fc c = bitwise_case(dt);
    char where[300];
    describe(&c, where, sizeof where);
    fin in = make_inputs(&c);
    ubg_ctx *dflt = generated_ctx(UBG_BACKEND_AUTO, 0), *ctx = generated_ctx(UBG_BACKEND_AUTO, 0);
    fout want = run_plain(dflt, &c, &in, "default variants");
    fref r = make_ref(&c, &in);
    check_ref(&c, &in, &want, &r, where);
    tc_variants lg = tc_kernel_variants("flce", "logits", dt), dx = tc_kernel_variants("flce", "dx", dt),
                dw = tc_kernel_variants("flce", "dw", dt);
    cr_assert(lg.n > 0 && dx.n > 0 && dw.n > 0, "%d %d %d GEMM variants", lg.n, dx.n, dw.n);
#ifndef TC_REDUCED /* make test-valgrind's sample may hold one of each; this run has them all */
    cr_assert(lg.n > 1 && dx.n > 1 && dw.n > 1, "%d %d %d GEMM variants", lg.n, dx.n, dw.n);
#endif
    /* every logits variant once, each with a different dx and dw variant */
    for (int i = 0; i < lg.n; i++) {
      const char *nl = lg.v[i].name, *nx = dx.v[(i * 7 + 3) % dx.n].name, *nw = dw.v[(i * 5 + 1) % dw.n].name;
      cr_assert_eq(ubg_set_variant(ctx, "flce", "logits", nl), UBG_OK, "%s: %s", nl, ubg_ctx_error(ctx));
      cr_assert_eq(ubg_set_variant(ctx, "flce", "dx", nx), UBG_OK, "%s: %s", nx, ubg_ctx_error(ctx));
      cr_assert_eq(ubg_set_variant(ctx, "flce", "dw", nw), UBG_OK, "%s: %s", nw, ubg_ctx_error(ctx));
      fout o = run_plain(ctx, &c, &in, nl);
      const char *ran = ubg_ctx_last_variant(ctx);
      cr_assert(strstr(ran, nl) && strstr(ran, nx) && strstr(ran, nw), "forced %s, %s, %s; ran %s", nl, nx, nw, ran);
      if (!same_out(&o, &want)) {
        check_ref(&c, &in, &o, &r, where);
        cr_assert_fail("%s: %s with %s, %s, %s differs from the default variants", where, first_diff(&o, &want), nl, nx,
                       nw);
      }
      free_out(&o);
    }
    tc_free_variants(&lg), tc_free_variants(&dx), tc_free_variants(&dw);
    free_ref(&r);
    free_out(&want);
    free_inputs(&in);
    ubg_ctx_destroy(dflt), ubg_ctx_destroy(ctx);
  }
}

/* a context whose chunk is `rows` (UBGEN_VARIANT at creation) */
static ubg_ctx *chunk_ctx(int64_t rows, int threads) {
  char buf[64];
  snprintf(buf, sizeof buf, "flce.chunk=chunk=%lld", (long long)rows);
  setenv("UBGEN_VARIANT", buf, 1);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, threads); /* a whole name: the generated GEMMs */
  unsetenv("UBGEN_VARIANT");
  return ctx;
}

Test(flce_bitwise, chunk_sizes) {
  for (int dt = 0; dt < 3; dt++) {
    const ubg_reduction reds[2] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM};
    for (int k = 0; k < 2; k++) {
      fc c = bitwise_case(dt);
      c.red = reds[k];
      char where[300];
      describe(&c, where, sizeof where);
      fin in = make_inputs(&c);
      ubg_ctx *dflt = generated_ctx(UBG_BACKEND_AUTO, 0);
      fout want = run_plain(dflt, &c, &in, "default chunk");
      const int64_t dchunk = flce_chunk_rows(dflt, c.bt, c.h, c.v);
      const int64_t chunks[5] = {1, 5, 16, 64, 1000};
      int64_t seen[5];
      int distinct = 0;
      for (int j = 0; j < 5; j++) {
        ubg_ctx *ctx = chunk_ctx(chunks[j], j % 2 ? 2 : 1);
        const int64_t got_chunk = flce_chunk_rows(ctx, c.bt, c.h, c.v);
        cr_assert(got_chunk >= 1, "chunk=%lld: chunk %lld", (long long)chunks[j], (long long)got_chunk);
        if (chunks[j] <= c.bt)
          cr_assert_eq(got_chunk, chunks[j], "UBGEN_VARIANT chunk=%lld not taken: chunk %lld", (long long)chunks[j],
                       (long long)got_chunk);
        bool dup = false;
        for (int q = 0; q < distinct; q++) dup |= seen[q] == got_chunk;
        if (!dup) seen[distinct++] = got_chunk;
        fout o = run_plain(ctx, &c, &in, "forced chunk");
        cr_assert(same_out(&o, &want), "%s: chunk %lld differs from the default chunk %lld in %s", where,
                  (long long)got_chunk, (long long)dchunk, first_diff(&o, &want));
        free_out(&o);
        ubg_ctx_destroy(ctx);
      }
      cr_assert(distinct >= 4, "only %d distinct chunk sizes", distinct);
      free_out(&want);
      free_inputs(&in);
      ubg_ctx_destroy(dflt);
    }
  }
}

/* ---- gradients against finite differences */

/* central differences of ubg_flce's own (f32) loss, step 1e-2 relative:
 * the f32 loss's rounding (~1e-7) over the step adds ~1e-5, the step's
 * truncation O(step^2) */
Test(flce_grad, finite_differences_of_ubg_flce) {
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  ubg_ctx *ctx = generated_ctx(UBG_BACKEND_AUTO, 0);
  for (int k = 0; k < 3; k++) {
    fc c = base(UBG_F32, 3, 4, 5);
    c.red = reds[k];
    c.cw = c.bias = c.db = true;
    c.ls = 0.1f, c.s = 0.05f, c.cap = 2.0f, c.ignored = 1;
    fin in = make_inputs(&c);
    /* targets: rows 0 and 2 valid, row 1 ignored */
    cr_assert_eq(in.t[1], c.ignore_index);
    fout g = run_plain(ctx, &c, &in, "gradients");
    fc cl = c;
    cl.dx = cl.dw = cl.db = false;
    float *params[3] = {in.x, in.w, in.b};
    const float *grads[3] = {g.dx, g.dw, g.db};
    const int64_t counts[3] = {c.bt * c.h, c.v * c.h, c.v};
    const char *names[3] = {"x", "weight", "bias"};
    for (int p = 0; p < 3; p++)
      for (int64_t e = 0; e < counts[p]; e++) {
        const float orig = params[p][e];
        const double step = 1e-2 * fmax(fabs(orig), 0.1);
        double f[2];
        float at[2];
        for (int side = 0; side < 2; side++) {
          params[p][e] = at[side] = (float)(orig + (side ? -step : step));
          fout o = run_plain(ctx, &cl, &in, "perturbed");
          f[side] = 0;
          for (size_t i = 0; i < o.n_loss; i++) f[side] += o.loss[i];
          free_out(&o);
        }
        params[p][e] = orig;
        const double fd = (f[0] - f[1]) / ((double)at[0] - (double)at[1]), an = grads[p][e];
        cr_assert(fabs(fd - an) <= 2e-2 * fabs(an) + 1e-3, "%s: d loss / d %s[%lld]: ubg_flce %.7g, differences %.7g",
                  red_name(c.red), names[p], (long long)e, an, fd);
      }
    for (int64_t h = 0; h < c.h; h++) cr_assert_eq(((float *)g.dx)[1 * c.h + h], 0.0f, "dx of the ignored row");
    free_out(&g);
    free_inputs(&in);
  }
  ubg_ctx_destroy(ctx);
}

/* the reference's hand-derived gradient against differences of its own
 * double loss (step 1e-4: truncation ~1e-8, rounding ~1e-12) */
Test(flce_grad, reference_matches_its_finite_differences) {
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  for (int k = 0; k < 3; k++)
    for (int variant = 0; variant < 2; variant++) {
      fc c = base(UBG_F32, 4, 5, 7);
      c.red = reds[k];
      c.cw = variant == 0, c.bias = true;
      c.ls = 0.2f, c.s = 0.05f, c.cap = variant ? 1.5f : 0.0f, c.ignored = 1;
      fin in = make_inputs(&c);
      fref r = make_ref(&c, &in);
      const size_t nl = c.red == UBG_REDUCE_NONE ? (size_t)c.bt : 1;
      double *lbuf = malloc(nl * sizeof *lbuf);
      float *params[3] = {in.x, in.w, in.b};
      const double *grads[3] = {r.dx, r.dw, r.db};
      const int64_t counts[3] = {c.bt * c.h, c.v * c.h, c.v};
      const char *names[3] = {"x", "weight", "bias"};
      for (int p = 0; p < 3; p++)
        for (int64_t e = 0; e < counts[p]; e++) {
          const float orig = params[p][e];
          double f[2];
          float at[2];
          for (int side = 0; side < 2; side++) {
            params[p][e] = at[side] = (float)(orig + (side ? -1e-4 : 1e-4));
            flce_ref_full(c.dt, c.bt, c.h, c.v, in.x, in.w, in.t, &in.o, lbuf, NULL, NULL, NULL, NULL, NULL);
            f[side] = 0;
            for (size_t i = 0; i < nl; i++) f[side] += lbuf[i];
          }
          params[p][e] = orig;
          const double fd = (f[0] - f[1]) / ((double)at[0] - (double)at[1]);
          cr_assert(fabs(fd - grads[p][e]) <= 1e-5 * fabs(grads[p][e]) + 1e-7,
                    "%s cap=%g: d loss / d %s[%lld]: reference %.12g, differences %.12g", red_name(c.red), c.cap,
                    names[p], (long long)e, grads[p][e], fd);
        }
      free(lbuf);
      free_ref(&r);
      free_inputs(&in);
    }
}

/* ---- torch.nn.functional.cross_entropy, float64 autograd */

static void write_file(const char *dir, const char *name, const void *p, size_t bytes) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s", path);
  cr_assert_eq(fwrite(p, 1, bytes, f), bytes);
  fclose(f);
}

static double *read_doubles(const char *dir, const char *name, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s: the torch script wrote no %s", dir, name);
  double *d = malloc((n ? n : 1) * sizeof *d);
  cr_assert_eq(fread(d, sizeof *d, n, f), n, "%s: short", path);
  fclose(f);
  return d;
}

static double *as_doubles(const void *p, int64_t n, int dt) {
  double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
  for (int64_t i = 0; i < n; i++) d[i] = ref_load(p, i, dt);
  return d;
}

/* a Python that imports torch: $UBGEN_TEST_PYTHON (make test sets it to
 * the interpreter of the Python suite), else python3 on PATH */
static const char *torch_python(void) {
  const char *given = getenv("UBGEN_TEST_PYTHON");
  const char *const candidates[] = {given && *given ? given : "python3", "python3"};
  char cmd[600];
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' >/dev/null 2>&1", candidates[i]);
    if (system(cmd) == 0) return candidates[i];
  }
  return NULL;
}

/* the case's inputs (as float64, t as int64) and meta.txt into dir */
static void torch_write(const char *dir, const fc *c, const fin *in) {
  char path[512];
  cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
  snprintf(path, sizeof path, "%s/meta.txt", dir);
  FILE *m = fopen(path, "w");
  cr_assert_not_null(m, "%s", path);
  fprintf(m, "%lld %lld %lld %lld %.17g %s %d %d\n", (long long)c->bt, (long long)c->h, (long long)c->v,
          (long long)c->ignore_index, (double)c->ls, red_name(c->red), c->cw, c->bias);
  fclose(m);
  double *x = as_doubles(in->x, c->bt * c->h, c->dt), *w = as_doubles(in->w, c->v * c->h, c->dt);
  double *cw = c->cw ? as_doubles(in->cw, c->v, REF_F32) : NULL, *b = c->bias ? as_doubles(in->b, c->v, c->dt) : NULL;
  write_file(dir, "x.bin", x, (size_t)(c->bt * c->h) * 8);
  write_file(dir, "w.bin", w, (size_t)(c->v * c->h) * 8);
  write_file(dir, "t.bin", in->t, (size_t)c->bt * 8);
  if (cw) write_file(dir, "cw.bin", cw, (size_t)c->v * 8);
  if (b) write_file(dir, "b.bin", b, (size_t)c->v * 8);
  free(x), free(w), free(cw), free(b);
}

/* ubg_flce against torch's results in dir (its tolerances), and the
 * reference against them to double rounding */
static void torch_check(ubg_ctx *ctx, const char *dir, const fc *c, const fin *in) {
  char where[340];
  describe(c, where, sizeof where);
  strcat(where, " vs torch");
  fout o = alloc_out(c);
  cr_assert_eq(call(ctx, c, in, &o), UBG_OK, "%s: %s", where, ubg_ctx_error(ctx));
  double *loss = read_doubles(dir, "loss.bin", o.n_loss), *dx = read_doubles(dir, "dx.bin", (size_t)(c->bt * c->h)),
         *dw = read_doubles(dir, "dw.bin", (size_t)(c->v * c->h)),
         *db = c->bias ? read_doubles(dir, "db.bin", (size_t)c->v) : NULL;
  expect_close("loss", o.loss, REF_F32, loss, (int64_t)o.n_loss, L_ATOL, L_RTOL, where);
  expect_close("dx", o.dx, c->dt, dx, c->bt * c->h, G_ATOL[c->dt], G_RTOL[c->dt], where);
  expect_close("dweight", o.dw, c->dt, dw, c->v * c->h, G_ATOL[c->dt], G_RTOL[c->dt], where);
  if (o.db) expect_close("dbias", o.db, c->dt, db, c->v, G_ATOL[c->dt], G_RTOL[c->dt], where);
  fref r = make_ref(c, in);
  const struct {
    const char *what;
    const double *mine, *torch;
    int64_t n;
  } cmp[4] = {{"loss", r.loss, loss, (int64_t)o.n_loss},
              {"dx", r.dx, dx, c->bt * c->h},
              {"dweight", r.dw, dw, c->v * c->h},
              {"dbias", r.db, db, db ? c->v : 0}};
  for (int k = 0; k < 4; k++)
    for (int64_t i = 0; i < cmp[k].n; i++)
      cr_assert(fabs(cmp[k].mine[i] - cmp[k].torch[i]) <= 1e-10 * (1 + fabs(cmp[k].torch[i])),
                "%s: the reference's %s[%lld] = %.15g, torch %.15g", where, cmp[k].what, (long long)i, cmp[k].mine[i],
                cmp[k].torch[i]);
  free_ref(&r);
  free(loss), free(dx), free(dw), free(db);
  free_out(&o);
}

Test(flce_torch, matches_torch_cross_entropy, .timeout = 300 * TC_TIME_SCALE) {
  const char *python = torch_python();
  if (!python)
    cr_skip("no Python with torch ($UBGEN_TEST_PYTHON and python3 -c 'import torch' fail): the comparison "
            "with torch.nn.functional.cross_entropy is skipped");
  /* the cases: each reduction and dtype, with ignored rows; plus class
   * weights and bias; plus label smoothing; label smoothing with a class
   * as ignore_index */
  enum { NCASES = 3 * 3 * 4 };
  fc cases[NCASES];
  int n = 0;
  const ubg_reduction reds[3] = {UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE};
  for (int dt = 0; dt < 3; dt++)
    for (int k = 0; k < 3; k++) {
      fc c = base(dt, 24, 48, 300);
      c.red = reds[k];
      c.ignored = 3;
      cases[n++] = c;
      c.cw = true, c.bias = c.db = true;
      cases[n++] = c;
      c.ls = 0.1f;
      cases[n++] = c;
      c.cw = false, c.ls = 0.3f, c.ignore_index = 1, c.ignored = 2;
      cases[n++] = c;
    }
  char root[64], dir[128], cmd[8192];
  snprintf(root, sizeof root, "/tmp/ubgen_flce_torch_XXXXXX");
  cr_assert_not_null(mkdtemp(root));
  /* one python run for every case: torch's import dominates */
  int len = snprintf(cmd, sizeof cmd, "%s '%s/tests/flce_torch.py'", python, UBGEN_SRC);
  for (int i = 0; i < n; i++) {
    fin in = make_inputs(&cases[i]);
    snprintf(dir, sizeof dir, "%s/%02d", root, i);
    torch_write(dir, &cases[i], &in);
    len += snprintf(cmd + len, sizeof cmd - (size_t)len, " '%s'", dir);
    free_inputs(&in);
  }
  cr_assert((size_t)len < sizeof cmd);
  cr_assert_eq(system(cmd), 0, "%s failed", cmd);
  ubg_ctx *ctx = generated_ctx(UBG_BACKEND_AUTO, 0);
  for (int i = 0; i < n; i++) {
    fin in = make_inputs(&cases[i]);
    snprintf(dir, sizeof dir, "%s/%02d", root, i);
    torch_check(ctx, dir, &cases[i], &in);
    free_inputs(&in);
  }
  ubg_ctx_destroy(ctx);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) cr_log_warn("could not remove %s", root);
}

/* flce.chunk forced by name, as any pass's variant: ubg_set_variant takes
 * "chunk=N", the call runs N rows a chunk with the default's bits and says
 * so; a name that is not a variant is refused by name; NULL clears */
Test(flce_bitwise, chunk_forced_by_name) {
  fc c = bitwise_case(2);
  fin in = make_inputs(&c);
  ubg_ctx *ctx = generated_ctx(UBG_BACKEND_AUTO, 0);
  fout want = run_plain(ctx, &c, &in, "default chunk");
  cr_assert(strstr(ubg_ctx_last_variant(ctx), "(spec rule)"), "%s", ubg_ctx_last_variant(ctx));
  cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", "chunk=5"), UBG_OK, "%s", ubg_ctx_error(ctx));
  fout o = run_plain(ctx, &c, &in, "forced chunk");
  cr_assert(strstr(ubg_ctx_last_variant(ctx), ";chunk=5 (ubg_set_variant)"), "%s", ubg_ctx_last_variant(ctx));
  cr_assert(same_out(&o, &want), "chunk 5 differs from the default chunk in %s", first_diff(&o, &want));
  free_out(&o);
  const char *bad[] = {"chunk=0", "chunk=08", "chunks=8", "chunk=8,gemm=cublas", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", bad[i]), UBG_ENOTFOUND, "\"%s\" taken", bad[i]);
    cr_assert(strstr(ubg_ctx_error(ctx), "flce.chunk has no variant") && strstr(ubg_ctx_error(ctx), "chunk=N"), "%s",
              ubg_ctx_error(ctx));
  }
  cr_assert_eq(ubg_set_variant(ctx, "flce", "chunk", NULL), UBG_OK);
  o = run_plain(ctx, &c, &in, "cleared");
  cr_assert(strstr(ubg_ctx_last_variant(ctx), "(spec rule)"), "cleared: %s", ubg_ctx_last_variant(ctx));
  free_out(&o);
  free_out(&want);
  free_inputs(&in);
  ubg_ctx_destroy(ctx);
}

/* ---- extra memory: a chunk of logits (and f32 accumulators), flat in BT */

static size_t scratch_of(ubg_ctx *ctx, const fc *c) {
  fin in = make_inputs(c);
  fout o = alloc_out(c);
  cr_assert_eq(call(ctx, c, &in, &o), UBG_OK, "%s", ubg_ctx_error(ctx));
  size_t s = rt_composite_last_scratch_bytes();
  free_out(&o);
  free_inputs(&in);
  return s;
}

static void expect_scratch_bound(ubg_ctx *ctx, const fc *c) {
  char where[300];
  describe(c, where, sizeof where);
  const size_t s = scratch_of(ctx, c);
  const int64_t chunk = flce_chunk_rows(ctx, c->bt, c->h, c->v);
  const size_t bound = (size_t)(chunk * c->v * 4 + 2 * chunk * 4) +
                       (c->dw && c->dt != UBG_F32 ? (size_t)(c->v * c->h * 4) : 0) + (c->db ? (size_t)c->v * 4 : 0) +
                       4096;
  cr_assert(s <= bound, "%s: %zu scratch bytes, bound %zu (chunk %lld)", where, s, bound, (long long)chunk);
}

Test(flce_memory, scratch_within_the_chunk_bound) {
  ubg_ctx *ctx = generated_ctx(UBG_BACKEND_AUTO, 0);
  for (int dt = 0; dt < 3; dt++) {
    fc c = base(dt, 256, 64, 600);
    expect_scratch_bound(ctx, &c);
    c.bias = c.db = c.cw = c.z = c.am = true;
    expect_scratch_bound(ctx, &c);
    c.dx = c.dw = c.db = false;
    expect_scratch_bound(ctx, &c);
    fc d = base(dt, 64, 16, 4099); /* V >> H: small chunks */
    expect_scratch_bound(ctx, &d);
  }
  ubg_ctx_destroy(ctx);
}

/* docs/semantics.md "FLCE chunks": chunk = min(512, max(256, next_pow2(ceil(BT / 4)))), at most BT */
Test(flce_memory, default_chunk_rule) {
  ubg_ctx *ctx = generated_ctx(UBG_BACKEND_AUTO, 0);
  const int64_t shapes[][3] = {{4096, 4096, 128256}, {256, 64, 600}, {64, 16, 4099}, {1000, 96, 300}, {7, 100, 50}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const int64_t bt = shapes[i][0], h = shapes[i][1], v = shapes[i][2];
    int64_t rule = 1;
    while (rule < (bt + 3) / 4) rule *= 2;
    rule = rule < 256 ? 256 : rule > 512 ? 512 : rule;
    const int64_t got = flce_chunk_rows(ctx, bt, h, v);
    cr_assert(got == (rule < bt ? rule : bt), "bt=%lld H=%lld V=%lld: chunk %lld, the rule %lld",
              (long long)bt, (long long)h, (long long)v, (long long)got, (long long)rule);
  }
  ubg_ctx_destroy(ctx);
}

Test(flce_memory, flat_in_bt) {
  ubg_ctx *ctx = chunk_ctx(64, 0);
  for (int dt = 0; dt < 3; dt++) {
    fc c = base(dt, 256, 32, 300);
    c.bias = c.db = true;
    cr_assert_eq(flce_chunk_rows(ctx, 256, 32, 300), 64);
    cr_assert_eq(flce_chunk_rows(ctx, 1024, 32, 300), 64);
    const size_t s256 = scratch_of(ctx, &c);
    c.bt = 1024;
    const size_t s1024 = scratch_of(ctx, &c);
    cr_assert_eq(s256, s1024, "%s: %zu scratch bytes at bt = 256, %zu at bt = 1024", ug_dtype_name(dt), s256, s1024);
    expect_scratch_bound(ctx, &c);
  }
  ubg_ctx_destroy(ctx);
}

/* ---- refusals: status, a message naming the argument and value, and
 * every output byte untouched */

typedef struct {
  ubg_ctx *ctx;
  float x[3 * 4], w[5 * 4], b[5], cw[5];
  int64_t t[3];
  float arena[64]; /* every float output, in slices */
  int64_t am[3 + 4];
  ubg_flce_opts o;
  ubg_flce_out out;
} rfx;

static rfx fx;

static void fx_setup(void) {
  cr_assert_eq(ubg_ctx_create(NULL, &fx.ctx), UBG_OK);
  for (int i = 0; i < 12; i++) fx.x[i] = (float)(i % 5) / 4 - 0.5f;
  for (int i = 0; i < 20; i++) fx.w[i] = (float)(i % 7) / 7 - 0.4f;
  for (int i = 0; i < 5; i++) fx.b[i] = 0.1f * (float)i, fx.cw[i] = 1.0f + 0.1f * (float)i;
  fx.t[0] = 1, fx.t[1] = 4, fx.t[2] = 0;
  memset(fx.arena, 0x5a, sizeof fx.arena);
  memset(fx.am, 0x5a, sizeof fx.am);
  ubg_flce_opts_init(&fx.o);
  fx.o.bias = fx.b;
  fx.o.ce_weight = fx.cw;
  fx.out.loss = fx.arena;       /* [1] (MEAN), [3] for NONE */
  fx.out.z_loss = fx.arena + 4; /* [3] */
  fx.out.argmax = fx.am;
  fx.out.dx = fx.arena + 8;       /* [12] */
  fx.out.dweight = fx.arena + 20; /* [20] */
  fx.out.dbias = fx.arena + 40;   /* [5] */
}
static void fx_teardown(void) { ubg_ctx_destroy(fx.ctx); }

static void untouched(void) {
  unsigned char pat[sizeof fx.arena];
  memset(pat, 0x5a, sizeof pat);
  cr_assert(!memcmp(fx.arena, pat, sizeof fx.arena), "an output was written");
  cr_assert(!memcmp(fx.am, pat, sizeof fx.am), "argmax was written");
}

static ubg_status fx_call(void) { return ubg_flce(fx.ctx, UBG_F32, 3, 4, 5, fx.x, fx.w, fx.t, &fx.o, &fx.out); }

static void refused(ubg_status got, ubg_status want, const char *needle) {
  cr_assert_eq(got, want, "status %s, want %s: %s", ubg_status_str(got), ubg_status_str(want), ubg_ctx_error(fx.ctx));
  cr_assert(strstr(ubg_ctx_error(fx.ctx), needle), "message \"%s\" lacks \"%s\"", ubg_ctx_error(fx.ctx), needle);
  untouched();
}

Test(flce_refuses, target_out_of_range, .init = fx_setup, .fini = fx_teardown) {
  fx.t[2] = 7;
  refused(fx_call(), UBG_ERANGE, "target[2] = 7");
  fx.t[2] = 5; /* == vocab */
  refused(fx_call(), UBG_ERANGE, "target[2] = 5");
  fx.t[2] = 0, fx.t[1] = -5;
  refused(fx_call(), UBG_ERANGE, "target[1] = -5");
  fx.t[1] = -100, fx.t[0] = INT64_MIN;
  refused(fx_call(), UBG_ERANGE, "target[0]");
  /* -100 is a target like any other once ignore_index is not -100 */
  fx.t[0] = 1, fx.o.ignore_index = 3;
  refused(fx_call(), UBG_ERANGE, "target[1] = -100");
  /* the no-gradient mode checks the targets too */
  fx.out.dx = fx.out.dweight = fx.out.dbias = NULL;
  refused(fx_call(), UBG_ERANGE, "target[1] = -100");
  /* and, with ignore_index back at -100, the same call is fine */
  fx.o.ignore_index = -100;
  cr_assert_eq(fx_call(), UBG_OK, "%s", ubg_ctx_error(fx.ctx));
}

Test(flce_refuses, bad_arguments, .init = fx_setup, .fini = fx_teardown) {
  refused(ubg_flce(fx.ctx, UBG_F32, 3, 4, 5, NULL, fx.w, fx.t, &fx.o, &fx.out), UBG_EINVAL, "x is NULL");
  refused(ubg_flce(fx.ctx, UBG_F32, 3, 4, 5, fx.x, NULL, fx.t, &fx.o, &fx.out), UBG_EINVAL, "weight is NULL");
  refused(ubg_flce(fx.ctx, UBG_F32, 3, 4, 5, fx.x, fx.w, NULL, &fx.o, &fx.out), UBG_EINVAL, "target is NULL");
  refused(ubg_flce(fx.ctx, UBG_F32, 3, 4, 5, fx.x, fx.w, fx.t, &fx.o, NULL), UBG_EINVAL, "out is NULL");
  ubg_flce_out no_loss = fx.out;
  no_loss.loss = NULL;
  refused(ubg_flce(fx.ctx, UBG_F32, 3, 4, 5, fx.x, fx.w, fx.t, &fx.o, &no_loss), UBG_EINVAL, "loss is NULL");
  refused(ubg_flce(fx.ctx, UBG_F32, -1, 4, 5, fx.x, fx.w, fx.t, &fx.o, &fx.out), UBG_EINVAL, "bt = -1");
  refused(ubg_flce(fx.ctx, UBG_F32, 3, 0, 5, fx.x, fx.w, fx.t, &fx.o, &fx.out), UBG_EINVAL, "hidden = 0");
  refused(ubg_flce(fx.ctx, UBG_F32, 3, 4, 0, fx.x, fx.w, fx.t, &fx.o, &fx.out), UBG_EINVAL, "vocab = 0");
  refused(ubg_flce(fx.ctx, (ubg_dtype)7, 3, 4, 5, fx.x, fx.w, fx.t, &fx.o, &fx.out), UBG_EINVAL, "dtype 7");
  refused(ubg_flce(fx.ctx, UBG_F32, 3, INT64_MAX / 2, 5, fx.x, fx.w, fx.t, &fx.o, &fx.out), UBG_EINVAL,
          "hidden = 4611686018427387903");
  fx.o.label_smoothing = 1.5f;
  refused(fx_call(), UBG_EINVAL, "label_smoothing = 1.5");
  fx.o.label_smoothing = NAN;
  refused(fx_call(), UBG_EINVAL, "label_smoothing = nan");
  fx.o.label_smoothing = -0.1f;
  refused(fx_call(), UBG_EINVAL, "label_smoothing = -0.1");
  fx.o.label_smoothing = 0;
  fx.o.softcap = -1;
  refused(fx_call(), UBG_EINVAL, "softcap = -1");
  fx.o.softcap = NAN;
  refused(fx_call(), UBG_EINVAL, "softcap = nan");
  fx.o.softcap = INFINITY;
  refused(fx_call(), UBG_EINVAL, "softcap = inf");
  fx.o.softcap = 0;
  fx.o.lse_square_scale = INFINITY;
  refused(fx_call(), UBG_EINVAL, "lse_square_scale = inf");
  fx.o.lse_square_scale = NAN;
  refused(fx_call(), UBG_EINVAL, "lse_square_scale = nan");
  fx.o.lse_square_scale = 0;
  fx.o.reduction = (ubg_reduction)7;
  refused(fx_call(), UBG_EINVAL, "reduction = 7");
  fx.o.reduction = UBG_REDUCE_MEAN;
  fx.o.bias = NULL; /* dbias asked for without a bias */
  refused(fx_call(), UBG_EINVAL, "dbias");
  fx.o.bias = fx.b;
  cr_assert_eq(ubg_flce(NULL, UBG_F32, 3, 4, 5, fx.x, fx.w, fx.t, &fx.o, &fx.out), UBG_EINVAL);
  untouched();
  /* and the fixture's call itself is fine */
  cr_assert_eq(fx_call(), UBG_OK, "%s", ubg_ctx_error(fx.ctx));
}

/* sizes near INT64_MAX are refused before any arithmetic on them: the chunk
 * rule once ran first (bt above 2^62 looped forever in next_pow2, hidden =
 * INT64_MAX overflowed vocab + hidden - 1 into a division by zero) */
Test(flce_refuses, huge_sizes_before_any_arithmetic, .init = fx_setup, .fini = fx_teardown, .timeout = 30) {
  const int64_t two62 = INT64_C(1) << 62;
  const struct {
    int64_t bt, hidden, vocab;
    const char *needle;
  } cases[] = {
      {two62 + 1, 16, 16, "bt x hidden"},
      {INT64_MAX, 16, 16, "bt x hidden"},
      {4, INT64_MAX, 16, "hidden = 9223372036854775807"},
      {4, 16, INT64_MAX, "vocab = 9223372036854775807"},
      {INT64_MAX, 1, 1, "does not fit in memory"},
      {two62 + 1, 1, INT32_MAX, "does not fit in memory"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int dt = 0; dt < 3; dt++)
      refused(ubg_flce(fx.ctx, (ubg_dtype)dt, cases[i].bt, cases[i].hidden, cases[i].vocab, fx.x, fx.w, fx.t, &fx.o,
                       &fx.out),
              UBG_EINVAL, cases[i].needle);
  /* the chunk rule itself (the spec's expression) at the extremes of what
   * validation lets through */
  cr_assert_eq(flce_chunk_rows(fx.ctx, INT64_MAX, 1, 1), 512);
  cr_assert_eq(flce_chunk_rows(fx.ctx, two62 + 1, 16, 16), 512);
  cr_assert_eq(flce_chunk_rows(fx.ctx, two62, 16, 16), 512);
  cr_assert_eq(flce_chunk_rows(fx.ctx, 4, INT32_MAX, 16), 4);
  cr_assert_eq(flce_chunk_rows(fx.ctx, 4, 1, INT32_MAX), 4);
  cr_assert_eq(flce_chunk_rows(fx.ctx, 0, 1, 1), 1);
  cr_assert_eq(flce_chunk_rows(fx.ctx, 100, 32, 300), 100);
  cr_assert_eq(flce_chunk_rows(fx.ctx, 300, 32, 300), 256);
  /* without a context no spec says the rule: one chunk of every row */
  cr_assert_eq(flce_chunk_rows(NULL, 100, 32, 300), 100);
}

Test(flce_refuses, overlapping_outputs, .init = fx_setup, .fini = fx_teardown) {
  fx.out.dx = fx.arena + 30; /* [30, 42) against dweight [20, 40) */
  refused(fx_call(), UBG_EINVAL, "overlap");
  fx.out.dx = fx.arena + 8;
  fx.out.dbias = fx.arena + 18; /* [18, 23) against dx [8, 20) and dweight */
  refused(fx_call(), UBG_EINVAL, "overlap");
  fx.out.dbias = fx.arena + 40;
  fx.out.z_loss = fx.arena; /* on the loss */
  refused(fx_call(), UBG_EINVAL, "overlap");
  fx.o.reduction = UBG_REDUCE_NONE; /* loss is [0, 3) now */
  fx.out.z_loss = fx.arena + 2;     /* [2, 5) */
  refused(fx_call(), UBG_EINVAL, "overlap");
  fx.out.z_loss = fx.arena + 4;
  fx.o.reduction = UBG_REDUCE_MEAN;
  /* an output over an input it reads: dweight on the weight */
  fx.out.dweight = fx.w;
  unsigned char w0[sizeof fx.w];
  memcpy(w0, fx.w, sizeof w0);
  cr_assert_eq(fx_call(), UBG_EINVAL, "dweight over weight: %s", ubg_ctx_error(fx.ctx));
  cr_assert(strstr(ubg_ctx_error(fx.ctx), "overlap"), "%s", ubg_ctx_error(fx.ctx));
  cr_assert(!memcmp(w0, fx.w, sizeof w0), "weight was written");
  untouched();
}

/* the GEMMs forced from the environment: a misspelt backend is refused
 * when the context is made (a build without oneDNN refusing "onednn" is in
 * tests/noaot) */
Test(flce_refuses, gemm_backend_setting) {
  setenv("UBGEN_VARIANT", "flce.chunk=gemm=cublas", 1);
  ubg_ctx *ctx = NULL;
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_ENOTFOUND);
  cr_assert(strstr(ubg_ctx_error(NULL), "UBGEN_VARIANT entry flce.chunk=gemm=cublas") &&
                strstr(ubg_ctx_error(NULL), "forces the gemm axis alone"),
            "%s", ubg_ctx_error(NULL));
  setenv("UBGEN_VARIANT", "flce.chunk=gemm=generated", 1);
  cr_assert_eq(ubg_ctx_create(NULL, &ctx), UBG_OK, "%s", ubg_ctx_error(NULL));
  unsetenv("UBGEN_VARIANT");
  ubg_ctx_destroy(ctx);
}

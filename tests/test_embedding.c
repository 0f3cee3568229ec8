/* Embedding against the double-precision reference: every feasible variant
 * (forced with ubg_set_variant) over num_embeddings V from 1 to 131072,
 * dim D in {1, 3, 768, 4097}, n up to 16384 tokens, repeated indices and
 * padding_idx, all dtypes; every variant gives the same bits as every
 * other; 1 and 2 threads give the same bits; bad indices and arguments are
 * refused with every output byte untouched.
 *
 * Tolerances: Liger-Kernel's test_embedding.py uses atol 1e-6, rtol 1e-5
 * (f32 only). The forward is a copy, so it must be exact in every dtype.
 * The backward sums k rows in f32, in token order, where the reference sums
 * in double: the difference is bounded by recursive summation's error,
 * (k - 1) u / (1 - (k - 1) u) * sum |x|, u = 2^-24, plus the final rounding
 * to the dtype (half an ulp); the test allows Liger's tolerance on top of
 * exactly that bound, element by element. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_util.h"

typedef struct {
  int64_t v, d, n, padding_idx;
} emb_shape;


/* n indices in [0, v): uniform, or (skewed) half of them on a few hot rows,
 * so rows repeat many times, plus every padding_idx case */
static int64_t *make_indices(const emb_shape *s, uint64_t seed) {
  int64_t *idx = malloc((size_t)(s->n ? s->n : 1) * sizeof *idx);
  for (int64_t i = 0; i < s->n; i++) {
    uint64_t r = tc_next(&seed);
    idx[i] = (r & 1) ? (int64_t)((r >> 8) % (uint64_t)(s->v < 4 ? s->v : 4)) : (int64_t)((r >> 8) % (uint64_t)s->v);
  }
  if (s->padding_idx >= 0 && s->n > 2) idx[s->n / 2] = idx[1] = s->padding_idx;
  return idx;
}

static void sweep_fwd(int dt, const emb_shape *s) {
  const int64_t v = s->v, d = s->d, n = s->n;
  const size_t es = ref_dtype_bytes(dt), out_bytes = (size_t)(n * d) * es;
  char where[128];
  snprintf(where, sizeof where, "V=%lld D=%lld n=%lld %s", (long long)v, (long long)d, (long long)n,
           ug_dtype_name(dt));
  void *table = tc_tensor(dt, v * d, 0, 1, (uint64_t)(v * 31 + d));
  int64_t *idx = make_indices(s, (uint64_t)(n + 5));
  double *want = malloc((size_t)(n * d + 1) * sizeof *want);
  ref_slot a[6] = {{.p = table}, {.p = idx}, {.p = NULL}, {.i = v}, {.i = d}, {.i = n}};
  double *outs[6] = {0};
  outs[2] = want;
  ref_find("embedding", "fwd")->fn(a, dt, outs);
  void *out = malloc(out_bytes + 1), *out2 = malloc(out_bytes + 1);
  ubg_ctx *one = tc_ctx(UBG_BACKEND_AUTO, 1), *two = tc_ctx(UBG_BACKEND_AUTO, 2);
  tc_variants vs = tc_kernel_variants("embedding", "fwd", dt);
  int ran = 0;
  for (int i = 0; i < vs.n; i++) {
    const ug_variant *var = &vs.v[i];
    if (!tc_applies(var, d)) continue;
    cr_assert_eq(ubg_set_variant(one, "embedding", "fwd", var->name), UBG_OK, "%s", ubg_ctx_error(one));
    memset(out, 0xff, out_bytes);
    cr_assert_eq(ubg_embedding_fwd(one, dt, v, d, table, n, idx, out), UBG_OK, "%s %s: %s", var->name, where,
                 ubg_ctx_error(one));
    tc_assert_close(out, dt, want, n * d, 0, 0, "%s %s: out", var->name, where);
    if (ran++ % 4 == 0) { /* 2 threads on every fourth variant: the same bits */
      cr_assert_eq(ubg_set_variant(two, "embedding", "fwd", var->name), UBG_OK);
      memset(out2, 0, out_bytes);
      cr_assert_eq(ubg_embedding_fwd(two, dt, v, d, table, n, idx, out2), UBG_OK);
      cr_assert(!memcmp(out, out2, out_bytes), "%s %s: 2 threads differ", var->name, where);
    }
  }
  cr_assert(ran > 0, "no variant applies to %s", where);
  tc_free_variants(&vs);
  ubg_ctx_destroy(one), ubg_ctx_destroy(two);
  free(table), free(idx), free(want), free(out), free(out2);
}

/* |got - want| <= atol + rtol |want| + the f32 summation bound + dtype rounding */
static void check_dtable(const void *got, int dt, const double *want, const double *sumabs, const int64_t *count,
                         int64_t v, int64_t d, const char *variant, const char *where) {
  const double u = 0x1p-24, u_dt = dt == 0 ? 0x1p-24 : dt == 1 ? 0x1p-11 : 0x1p-8;
  for (int64_t r = 0; r < v; r++)
    for (int64_t c = 0; c < d; c++) {
      const int64_t e = r * d + c;
      const double k = (double)count[r], sum_bound = k > 1 ? (k - 1) * u / (1 - (k - 1) * u) * sumabs[e] : 0;
      const double tol = 1e-6 + 1e-5 * fabs(want[e]) + sum_bound + u_dt * (fabs(want[e]) + sum_bound);
      const double g = ref_load(got, e, dt);
      cr_assert(fabs(g - want[e]) <= tol, "%s %s: dtable[%lld][%lld] = %.9g, reference %.9g (%lld terms, bound %g)",
                variant, where, (long long)r, (long long)c, g, want[e], (long long)count[r], tol);
    }
}

static void sweep_bwd(int dt, const emb_shape *s) {
  const int64_t v = s->v, d = s->d, n = s->n;
  const size_t es = ref_dtype_bytes(dt), tbytes = (size_t)(v * d) * es;
  char where[160];
  snprintf(where, sizeof where, "V=%lld D=%lld n=%lld padding_idx=%lld %s", (long long)v, (long long)d, (long long)n,
           (long long)s->padding_idx, ug_dtype_name(dt));
  void *dout = tc_tensor(dt, n * d, 0, 1, (uint64_t)(n * 17 + d));
  int64_t *idx = make_indices(s, (uint64_t)(v + 3));
  double *want = malloc((size_t)(v * d) * sizeof *want), *sumabs = calloc((size_t)(v * d), sizeof *sumabs);
  int64_t *count = calloc((size_t)v, sizeof *count);
  ref_slot a[7] = {{.p = idx}, {.p = dout}, {.p = NULL}, {.i = v}, {.i = d}, {.i = n}, {.i = s->padding_idx}};
  double *outs[7] = {0};
  outs[2] = want;
  ref_find("embedding", "bwd")->fn(a, dt, outs);
  for (int64_t i = 0; i < n; i++) {
    if (idx[i] == s->padding_idx) continue;
    count[idx[i]]++;
    for (int64_t c = 0; c < d; c++) sumabs[idx[i] * d + c] += fabs(ref_load(dout, i * d + c, dt));
  }
  void *dtable = malloc(tbytes), *first = malloc(tbytes), *dtable2 = malloc(tbytes);
  ubg_ctx *one = tc_ctx(UBG_BACKEND_AUTO, 1), *two = tc_ctx(UBG_BACKEND_AUTO, 2);
  tc_variants vs = tc_kernel_variants("embedding", "bwd", dt);
  int ran = 0;
  const char *first_name = NULL;
  for (int i = 0; i < vs.n; i++) {
    const ug_variant *var = &vs.v[i];
    if (!tc_applies(var, d)) continue;
    cr_assert_eq(ubg_set_variant(one, "embedding", "bwd", var->name), UBG_OK, "%s", ubg_ctx_error(one));
    memset(dtable, 0xff, tbytes);
    cr_assert_eq(ubg_embedding_bwd(one, dt, v, d, n, idx, dout, s->padding_idx, dtable), UBG_OK, "%s %s: %s",
                 var->name, where, ubg_ctx_error(one));
    if (!first_name) {
      check_dtable(dtable, dt, want, sumabs, count, v, d, var->name, where);
      if (s->padding_idx >= 0)
        for (int64_t c = 0; c < d; c++)
          cr_assert_eq(ref_load(dtable, s->padding_idx * d + c, dt), 0.0, "%s %s: the padding row has a gradient",
                       var->name, where);
      memcpy(first, dtable, tbytes);
      first_name = var->name;
    } else if (memcmp(dtable, first, tbytes)) {
      check_dtable(dtable, dt, want, sumabs, count, v, d, var->name, where);
      cr_assert_fail("%s %s: within the bound but not bitwise equal to %s", var->name, where, first_name);
    }
    if (ran++ % 4 == 0) {
      cr_assert_eq(ubg_set_variant(two, "embedding", "bwd", var->name), UBG_OK);
      memset(dtable2, 0, tbytes);
      cr_assert_eq(ubg_embedding_bwd(two, dt, v, d, n, idx, dout, s->padding_idx, dtable2), UBG_OK);
      cr_assert(!memcmp(dtable, dtable2, tbytes), "%s %s: 2 threads differ", var->name, where);
    }
  }
  cr_assert(ran > 0, "no variant applies to %s", where);
  tc_free_variants(&vs);
  ubg_ctx_destroy(one), ubg_ctx_destroy(two);
  free(dout), free(idx), free(want), free(sumabs), free(count), free(dtable), free(first), free(dtable2);
}

#define SHAPE_TESTS(name, V, D, N, PAD)                                                      \
  Test(embedding_fwd, name, .timeout = 300 * TC_TIME_SCALE) {                                                \
    const emb_shape s = {V, D, N, PAD};                                                      \
    tc_skip_if_large((int64_t)(V) * (D) + (int64_t)(N) * (D), #name);                       \
    for (int dt = 0; dt < 3; dt++) sweep_fwd(dt, &s);                                        \
  }                                                                                          \
  Test(embedding_bwd, name, .timeout = 300 * TC_TIME_SCALE) {                                                \
    const emb_shape s = {V, D, N, PAD};                                                      \
    tc_skip_if_large((int64_t)(V) * (D) + (int64_t)(N) * (D), #name);                       \
    for (int dt = 0; dt < 3; dt++) sweep_bwd(dt, &s);                                        \
  }

/* Liger's test_embedding.py shapes (n = 32 x 10), and the range */
SHAPE_TESTS(v1_d1_n1, 1, 1, 1, -1)
SHAPE_TESTS(v1_d768_n16384_all_one_row, 1, 768, 16384, -1)
SHAPE_TESTS(v7_d3_n1000_pad3, 7, 3, 1000, 3)
SHAPE_TESTS(v100_d64_n320_pad0, 100, 64, 320, 0)
SHAPE_TESTS(v1000_d128_n320_pad50, 1000, 128, 320, 50)
SHAPE_TESTS(v1000_d500_n320, 1000, 500, 320, -1)
SHAPE_TESTS(v30522_d768_n320_pad1, 30522, 768, 320, 1)
SHAPE_TESTS(v131072_d3_n16384, 131072, 3, 16384, -1)
SHAPE_TESTS(v131072_d1_n4096_pad131071, 131072, 1, 4096, 131071)
SHAPE_TESTS(v50_d4097_n64_pad7, 50, 4097, 64, 7)
SHAPE_TESTS(v9_d768_n0, 9, 768, 0, -1)

/* ---- refusals: the message names the argument and values; outputs untouched */

typedef struct {
  ubg_ctx *ctx;
  float table[8 * 4], dout[3 * 4], out[3 * 4], dtable[8 * 4];
  int64_t idx[3];
} fixture;

static fixture fx;

static void fx_setup(void) {
  cr_assert_eq(ubg_ctx_create(NULL, &fx.ctx), UBG_OK);
  for (int i = 0; i < 32; i++) fx.table[i] = (float)i;
  for (int i = 0; i < 12; i++) fx.dout[i] = 1.0f;
  fx.idx[0] = 1, fx.idx[1] = 7, fx.idx[2] = 0;
  memset(fx.out, 0x5a, sizeof fx.out);
  memset(fx.dtable, 0x5a, sizeof fx.dtable);
}
static void fx_teardown(void) { ubg_ctx_destroy(fx.ctx); }

static void untouched(void) {
  unsigned char pat[sizeof fx.dtable];
  memset(pat, 0x5a, sizeof pat);
  cr_assert(!memcmp(fx.out, pat, sizeof fx.out), "out was written");
  cr_assert(!memcmp(fx.dtable, pat, sizeof fx.dtable), "dtable was written");
}

static void refused(ubg_status got, ubg_status want, const char *needle) {
  cr_assert_eq(got, want, "status %s, want %s: %s", ubg_status_str(got), ubg_status_str(want), ubg_ctx_error(fx.ctx));
  cr_assert(strstr(ubg_ctx_error(fx.ctx), needle), "message \"%s\" lacks \"%s\"", ubg_ctx_error(fx.ctx), needle);
  untouched();
}

Test(embedding_refuses, index_out_of_range, .init = fx_setup, .fini = fx_teardown) {
  fx.idx[1] = 8; /* == num_embeddings */
  refused(ubg_embedding_fwd(fx.ctx, UBG_F32, 8, 4, fx.table, 3, fx.idx, fx.out), UBG_ERANGE, "indices[1] = 8");
  refused(ubg_embedding_bwd(fx.ctx, UBG_F32, 8, 4, 3, fx.idx, fx.dout, -1, fx.dtable), UBG_ERANGE, "indices[1] = 8");
  fx.idx[1] = 7, fx.idx[2] = -1;
  refused(ubg_embedding_fwd(fx.ctx, UBG_F32, 8, 4, fx.table, 3, fx.idx, fx.out), UBG_ERANGE, "indices[2] = -1");
  refused(ubg_embedding_bwd(fx.ctx, UBG_F32, 8, 4, 3, fx.idx, fx.dout, 2, fx.dtable), UBG_ERANGE,
          "outside [0, num_embeddings) = [0, 8)");
  fx.idx[2] = INT64_MIN;
  refused(ubg_embedding_fwd(fx.ctx, UBG_BF16, 8, 4, fx.table, 3, fx.idx, fx.out), UBG_ERANGE, "indices[2]");
}

Test(embedding_refuses, bad_arguments, .init = fx_setup, .fini = fx_teardown) {
  refused(ubg_embedding_bwd(fx.ctx, UBG_F32, 8, 4, 3, fx.idx, fx.dout, 8, fx.dtable), UBG_EINVAL, "padding_idx");
  refused(ubg_embedding_bwd(fx.ctx, UBG_F32, 8, 4, 3, fx.idx, fx.dout, -2, fx.dtable), UBG_EINVAL,
          "padding_idx = -2 is below its minimum -1");
  refused(ubg_embedding_fwd(fx.ctx, UBG_F32, 8, 4, fx.table, 3, NULL, fx.out), UBG_EINVAL, "indices is NULL");
  refused(ubg_embedding_fwd(fx.ctx, UBG_F32, 8, 4, NULL, 3, fx.idx, fx.out), UBG_EINVAL, "table is NULL");
  refused(ubg_embedding_fwd(fx.ctx, UBG_F32, 0, 4, fx.table, 3, fx.idx, fx.out), UBG_EINVAL,
          "num_embeddings = 0 is below its minimum 1");
  refused(ubg_embedding_fwd(fx.ctx, UBG_F32, 8, 0, fx.table, 3, fx.idx, fx.out), UBG_EINVAL, "dim = 0");
  refused(ubg_embedding_fwd(fx.ctx, UBG_F32, 8, 4, fx.table, -1, fx.idx, fx.out), UBG_EINVAL, "n = -1");
  refused(ubg_embedding_fwd(fx.ctx, (ubg_dtype)7, 8, 4, fx.table, 3, fx.idx, fx.out), UBG_EINVAL, "dtype 7");
  refused(ubg_embedding_fwd(fx.ctx, UBG_F32, INT64_MAX / 2, 4, fx.table, 3, fx.idx, fx.out), UBG_EINVAL,
          "overflows");
  /* out overlapping the table it reads */
  refused(ubg_embedding_fwd(fx.ctx, UBG_F32, 8, 4, fx.table, 3, fx.idx, fx.table + 4), UBG_EINVAL, "overlap");
  cr_assert_eq(ubg_embedding_fwd(NULL, UBG_F32, 8, 4, fx.table, 3, fx.idx, fx.out), UBG_EINVAL);
}

/* the default strategy picks a variant for every shape the issue names */
Test(embedding_edge, default_strategy_and_last_variant, .init = fx_setup, .fini = fx_teardown) {
  cr_assert_eq(ubg_embedding_fwd(fx.ctx, UBG_F32, 8, 4, fx.table, 3, fx.idx, fx.out), UBG_OK, "%s",
               ubg_ctx_error(fx.ctx));
  cr_assert(!strncmp(ubg_ctx_last_variant(fx.ctx), "embedding_fwd_f32_d16_", 22), "%s", ubg_ctx_last_variant(fx.ctx));
  for (int i = 0; i < 3; i++)
    for (int c = 0; c < 4; c++) cr_assert_eq(fx.out[i * 4 + c], fx.table[fx.idx[i] * 4 + c]);
  cr_assert_eq(ubg_embedding_bwd(fx.ctx, UBG_F32, 8, 4, 3, fx.idx, fx.dout, 7, fx.dtable), UBG_OK);
  for (int r = 0; r < 8; r++)
    for (int c = 0; c < 4; c++) cr_assert_eq(fx.dtable[r * 4 + c], (r == 1 || r == 0) ? 1.0f : 0.0f, "row %d", r);
}

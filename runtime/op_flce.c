/* ubg_flce: fused linear cross entropy (Liger's FLCE) over chunks of rows.
 *
 *   x [bt, hidden], weight [vocab, hidden], target [bt]   (dtype: x, weight, bias, ce_weight)
 *
 *   for each chunk of c rows (chunk rule below):
 *     logits [c, vocab] f32  = x_chunk weight^T (+ bias)        pass flce.logits (or sgemm)
 *     CE over each row: loss, z_loss, argmax; logits := dloss/dlogits      pass flce.ce (ce_rows.c)
 *     dx_chunk [c, hidden]  = dlogits weight                     pass flce.dx
 *     dw_acc [vocab, hidden] += dlogits^T x_chunk; dbias_acc += column sums  pass flce.dw
 *
 * The BT x vocab logits never exist: the extra memory is one chunk of
 * logits (chunk x vocab f32), two chunk-long rows of losses, and f32
 * accumulators for dweight and dbias when the dtype is not f32 (docs/
 * semantics.md). With opts->accum_dtype the dtype (Liger's default), the
 * sums are kept in dweight and dbias themselves, each chunk's part added to
 * them with one rounding. Everything that can fail is checked first (arguments,
 * targets, sizes, overlaps, memory, and every pass's variant, compiled),
 * so a failed call writes nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../templates/prelude.h"
#include "ce_rows.h"
#include "gemm_amx.h"
#ifdef UBG_HAVE_OPENBLAS
#include <cblas.h>
#endif

static _Thread_local size_t last_scratch;
size_t rt_flce_last_scratch_bytes(void) { return last_scratch; }

#ifdef UBG_HAVE_OPENBLAS
const bool rt_have_openblas = true;
#else
const bool rt_have_openblas = false;
#endif

const char *const rt_gemm_names[3] = {"generated", "openblas", "amx"};

bool rt_gemm_runs(rt_gemm g, ubg_dtype dtype) {
  return g == RT_GEMM_GENERATED || (g == RT_GEMM_OPENBLAS && dtype == UBG_F32) ||
         (g == RT_GEMM_AMX && dtype == UBG_BF16);
}

const char *rt_gemm_missing(rt_gemm g) {
  if (g == RT_GEMM_OPENBLAS && !rt_have_openblas) return "this library was built without OpenBLAS";
  if (g == RT_GEMM_AMX && !rt_amx_available())
    return "this CPU has no AMX-BF16 tiles (or the kernel does not grant them)";
  return NULL;
}

/* flce.chunk as this wrapper runs it: first an integer axis (the rows per
 * chunk, whose default is the rule), then a named axis "gemm" of the GEMMs
 * it knows, in rt_gemm's order */
static int chunk_spec_ok(const ug_kernel *k, const ug_composite *c, char *why, size_t n) {
  (void)k;
  if (c->naxes != 2 || c->axes[0].values || !c->axes[1].values || strcmp(c->axes[1].name, "gemm")) {
    if (why) snprintf(why, n, "the flce spec declares no composite \"chunk\" with an integer axis and a \"gemm\" axis");
    return -1;
  }
  for (int i = 0; i < c->axes[1].nvalues; i++)
    if (i > 2 || strcmp(c->axes[1].values[i], rt_gemm_names[i])) {
      if (why) snprintf(why, n, "the flce spec's gemm values must be generated, openblas, amx (in that order), not \"%s\"",
                        c->axes[1].values[i]);
      return -1;
    }
  return 0;
}
static const char *gemm_missing(int axis, int64_t v) { return axis == 1 ? rt_gemm_missing((rt_gemm)v) : NULL; }
static bool gemm_runs(int axis, int64_t v, ubg_dtype dtype) { return axis != 1 || rt_gemm_runs((rt_gemm)v, dtype); }

static rt_composite flce_chunk = {"flce", "chunk", chunk_spec_ok, gemm_missing, gemm_runs, 0, NULL};
__attribute__((constructor)) static void register_flce_chunk(void) { rt_composite_register(&flce_chunk); }

/* (bt, hidden, vocab) in the order of the kernel's shape names */
static void kernel_shape(const ug_kernel *k, int64_t bt, int64_t hidden, int64_t vocab, int64_t *sh) {
  for (int i = 0; k && i < k->nshape; i++)
    sh[i] = !strcmp(k->shape[i], "bt") ? bt : !strcmp(k->shape[i], "hidden") ? hidden : !strcmp(k->shape[i], "vocab") ? vocab : 0;
}

/* rows per chunk: n, at most bt, at least 1 */
static int64_t rows_of(int64_t n, int64_t bt) {
  const int64_t c = n > bt ? bt : n;
  return c < 1 ? 1 : c;
}

int64_t rt_flce_rule_rows(const ug_kernel *flce, int64_t bt, int64_t hidden, int64_t vocab) {
  int64_t sh[UG_TUNE_MAX_SHAPE], n = bt; /* bt where the rule overflows */
  const ug_composite *comp = ug_spec_composite(flce, "chunk");
  if (comp && flce->nshape <= UG_TUNE_MAX_SHAPE && chunk_spec_ok(flce, comp, NULL, 0) == 0) {
    kernel_shape(flce, bt, hidden, vocab, sh);
    if (ug_comp_default(&comp->axes[0], sh, &n) < 0) n = bt;
  }
  return rows_of(n, bt);
}

int rt_flce_parse_variant(const ubg_ctx *ctx, const char *s, int64_t *chunk, rt_gemm *gemm) {
  const ug_composite *c = rt_composite_spec(ctx, &flce_chunk, NULL, 0);
  int64_t v[RT_COMP_AXES];
  bool given[RT_COMP_AXES];
  if (!c || ug_comp_parse(c, s, v, given) < 0) return -1;
  *chunk = given[0] ? v[0] : 0;
  *gemm = (rt_gemm)v[1];
  return 0;
}

/* Rows per chunk without a tuning DB: the variant forced on ctx, else the
 * rule (rule_rows) */
int64_t rt_flce_chunk_rows(const ubg_ctx *ctx, int64_t bt, int64_t hidden, int64_t vocab) {
  int64_t c = rt_flce_rule_rows(rt_find_kernel(ctx, "flce"), bt, hidden, vocab), n;
  rt_gemm gemm;
  char forced[64] = "";
  if (ctx) rt_composite_forced(ctx, &flce_chunk, forced, sizeof forced, NULL);
  if (*forced && rt_flce_parse_variant(ctx, forced, &n, &gemm) == 0 && n > 0) c = rows_of(n, bt);
  return c;
}

/* The composite's choice for this call (rt_composite_choose), as ubg_flce
 * runs it: the rows per chunk at most bt, the rule's where it is the
 * default, and the GEMMs; the tuning DB's entry beside them. */
void rt_flce_choose(const ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t hidden, int64_t vocab, rt_flce_choice *c) {
  static _Thread_local char forced[64];
  memset(c, 0, sizeof *c);
  const ug_kernel *k = rt_find_kernel(ctx, "flce");
  c->chunk = rows_of(bt, bt); /* where the spec has no rule or it overflows */
  c->chunk_source = "spec rule";
  c->gemm = RT_GEMM_GENERATED;
  c->gemm_source = "default";
  c->forced = forced;
  forced[0] = '\0';
  int64_t sh[UG_TUNE_MAX_SHAPE];
  rt_comp_choice ch;
  if (!k || k->nshape > UG_TUNE_MAX_SHAPE) return;
  kernel_shape(k, bt < 0 ? 0 : bt, hidden < 1 ? 1 : hidden, vocab < 1 ? 1 : vocab, sh);
  if (rt_composite_choose(ctx, &flce_chunk, dtype, sh, &ch) < 0) return;
  snprintf(forced, sizeof forced, "%s", ch.forced);
  if (!ch.overflow[0]) c->chunk = rows_of(ch.value[0], bt);
  c->chunk_source = ch.source[0];
  c->gemm = (rt_gemm)ch.value[1];
  c->gemm_source = ch.source[1];
  c->entry = ch.entry;
  if (ch.entry_whole) {
    c->entry_chunk = ch.entry_value[0];
    c->entry_gemm = (rt_gemm)ch.entry_value[1];
  }
}

/* one call's plan: what the passes get */
typedef struct {
  rt_ce_rows ce; /* the options, the targets and the per-row outputs */
  size_t es;     /* bytes per element of x, weight, dx */
  int64_t hidden, chunk;
  const void *x, *weight;
  const ubg_flce_out *out;
  rt_gemm gemm;
  float *logits;             /* scratch: a chunk of logits */
  float *dx_rows;            /* scratch for AMX: a chunk of dx in f32 */
  void *amx;                 /* scratch for AMX: its packed operands */
  float *dw_acc, *dbias_acc; /* dweight / dbias themselves when f32 */
  bool accum_in_dtype;       /* opts->accum_dtype is the dtype (f16, bf16): no dw_acc, dbias_acc */
  float *db_chunk;           /* then, for AMX: a chunk's column sums of dlogits [vocab] */
  char variants[4][160];     /* the last variant of each pass, for ubg_ctx_last_variant */
} plan;

static void note_variant(plan *p, int pass) {
  const char *v = ubg_ctx_last_variant(p->ce.ctx);
  snprintf(p->variants[pass], sizeof p->variants[pass], "%s", v ? v : "?");
}

/* f32 accumulator -> output dtype */
static void store_rows(void *dst, const float *src, int64_t n, ubg_dtype dt, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    if (dt == UBG_F16) ubg_st_f16(dst, i, src[i]);
    else ubg_st_bf16(dst, i, src[i]);
  }
}

/* dst = rnd(dst + src), n elements of dt (f16 or bf16): a chunk's part of
 * dweight or dbias added where they are summed in their own dtype */
static void add_rounded(void *dst, const float *src, int64_t n, ubg_dtype dt, int threads) {
  if (dt == UBG_F16) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) ubg_st_f16(dst, i, ubg_ld_f16(dst, i) + src[i]);
  } else {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) ubg_st_bf16(dst, i, ubg_ld_bf16(dst, i) + src[i]);
  }
}

/* The three GEMMs on AMX tiles, for a chunk of `rows` rows (x the chunk's):
 *   logits [rows, vocab] = x [rows, hidden] weight^T
 *   dx_rows [rows, hidden] = dlogits [rows, vocab] weight [vocab, hidden]
 *   dw_acc [vocab, hidden] += dlogits^T x
 * dlogits rounded to bf16 as they are packed, as Liger's bf16 FLCE keeps them. */
static rt_amx_gemm_args logits_gemm(const plan *p, const void *x, int64_t rows) {
  return (rt_amx_gemm_args){rows,      p->ce.vocab, p->hidden, x,         p->hidden, false, true,
                            p->weight, p->hidden,   true,      p->logits, p->ce.vocab, false, NULL};
}
static rt_amx_gemm_args dx_gemm(const plan *p, int64_t rows) {
  return (rt_amx_gemm_args){rows,      p->hidden, p->ce.vocab, p->logits,  p->ce.vocab, true, true,
                            p->weight, p->hidden, false,       p->dx_rows, p->hidden,   false, NULL};
}
/* dw_bf16: dweight summed in bf16, dw_bf16 := rnd(dw_bf16 + dlogits^T x) */
static rt_amx_gemm_args dw_gemm(const plan *p, const void *x, int64_t rows, uint16_t *dw_bf16) {
  return (rt_amx_gemm_args){p->ce.vocab, p->hidden, rows,  p->logits,              p->ce.vocab, true, false,
                            x,           p->hidden, false, dw_bf16 ? NULL : p->dw_acc, p->hidden, true, dw_bf16};
}

/* logits += bias, row by row, after a library GEMM (the generated pass adds
 * it itself); OpenBLAS runs f32 and AMX bf16, so the bias is one of those */
static void add_bias(plan *p, int64_t rows) {
  const void *bias = p->ce.o.bias;
  const int64_t vocab = p->ce.vocab;
  const bool f32 = p->ce.dt == UBG_F32;
  if (!bias) return;
#pragma omp parallel for num_threads(p->ce.ctx->threads) schedule(static)
  for (int64_t i = 0; i < rows; i++)
    for (int64_t v = 0; v < vocab; v++) p->logits[i * vocab + v] += f32 ? ubg_ld_f32(bias, v) : ubg_ld_bf16(bias, v);
}

static ubg_status run_logits(plan *p, int64_t off, int64_t rows) {
  const char *x = (const char *)p->x + (size_t)(off * p->hidden) * p->es;
  const int64_t vocab = p->ce.vocab;
  const void *bias = p->ce.o.bias;
  if (p->gemm == RT_GEMM_AMX) {
    rt_amx_gemm_args g = logits_gemm(p, x, rows);
    rt_amx_gemm(&g, p->ce.ctx->threads, p->amx);
    add_bias(p, rows);
    snprintf(p->variants[0], sizeof p->variants[0], "amx");
    return UBG_OK;
  }
#ifdef UBG_HAVE_OPENBLAS
  if (p->gemm == RT_GEMM_OPENBLAS) {
    snprintf(p->variants[0], sizeof p->variants[0], "openblas");
    if (rows == 0) return UBG_OK;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)vocab, (int)p->hidden, 1.0f,
                (const float *)x, (int)p->hidden, p->weight, (int)p->hidden, 0.0f, p->logits, (int)vocab);
    add_bias(p, rows);
    return UBG_OK;
  }
#endif
  ubg_arg a[] = {
      {"x", UBG_ARG_PTR, {.p = (void *)x}},       {"weight", UBG_ARG_PTR, {.p = (void *)p->weight}},
      {"bias", UBG_ARG_PTR, {.p = (void *)bias}}, {"logits", UBG_ARG_PTR, {.p = p->logits}},
      {"bt", UBG_ARG_I64, {.i = rows}},           {"hidden", UBG_ARG_I64, {.i = p->hidden}},
      {"vocab", UBG_ARG_I64, {.i = vocab}},
  };
  ubg_status s = rt_launch(p->ce.ctx, "flce", "logits", p->ce.dt, a, sizeof a / sizeof a[0]);
  if (!s) note_variant(p, 0);
  return s;
}

static ubg_status run_ce(plan *p, int64_t off, int64_t rows) {
  ubg_status s = rt_ce_rows_run(&p->ce, p->logits, off, rows);
  if (!s) snprintf(p->variants[1], sizeof p->variants[1], "%s", p->ce.variant);
  return s;
}

static ubg_status run_dx(plan *p, int64_t off, int64_t rows) {
  char *dx = (char *)p->out->dx + (size_t)(off * p->hidden) * p->es;
  const int64_t vocab = p->ce.vocab;
  if (p->gemm == RT_GEMM_AMX) {
    rt_amx_gemm_args g = dx_gemm(p, rows);
    rt_amx_gemm(&g, p->ce.ctx->threads, p->amx);
    store_rows(dx, p->dx_rows, rows * p->hidden, p->ce.dt, p->ce.ctx->threads);
    snprintf(p->variants[2], sizeof p->variants[2], "amx");
    return UBG_OK;
  }
#ifdef UBG_HAVE_OPENBLAS
  if (p->gemm == RT_GEMM_OPENBLAS) {
    snprintf(p->variants[2], sizeof p->variants[2], "openblas");
    if (rows == 0) return UBG_OK;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)p->hidden, (int)vocab, 1.0f, p->logits,
                (int)vocab, p->weight, (int)p->hidden, 0.0f, (float *)dx, (int)p->hidden);
    return UBG_OK;
  }
#endif
  ubg_arg a[] = {
      {"dlogits", UBG_ARG_PTR, {.p = p->logits}}, {"weight", UBG_ARG_PTR, {.p = (void *)p->weight}},
      {"dx", UBG_ARG_PTR, {.p = dx}},             {"bt", UBG_ARG_I64, {.i = rows}},
      {"hidden", UBG_ARG_I64, {.i = p->hidden}},  {"vocab", UBG_ARG_I64, {.i = vocab}},
  };
  ubg_status s = rt_launch(p->ce.ctx, "flce", "dx", p->ce.dt, a, sizeof a / sizeof a[0]);
  if (!s) note_variant(p, 2);
  return s;
}

/* the chunk's dweight and dbias on OpenBLAS or AMX tiles, added to their
 * f32 sums (dw_acc, dbias_acc) or, with accum_in_dtype (AMX only: OpenBLAS
 * runs f32), to dweight and dbias in the dtype: the AMX GEMM adds each
 * block to dweight as it finishes it, dbias gets the chunk's column sums
 * with one rounding. rows = 0 writes nothing. */
static ubg_status run_dw_library(plan *p, const char *x, int64_t rows) {
  const int64_t vocab = p->ce.vocab;
  const ubg_flce_out *out = p->out;
  snprintf(p->variants[3], sizeof p->variants[3], "%s", rt_gemm_names[p->gemm]);
  if (rows == 0) return UBG_OK;
  if (p->gemm == RT_GEMM_AMX && (p->accum_in_dtype ? out->dweight != NULL : p->dw_acc != NULL)) {
    rt_amx_gemm_args g = dw_gemm(p, x, rows, p->accum_in_dtype ? out->dweight : NULL);
    rt_amx_gemm(&g, p->ce.ctx->threads, p->amx);
  }
#ifdef UBG_HAVE_OPENBLAS
  if (p->gemm == RT_GEMM_OPENBLAS && p->dw_acc)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)vocab, (int)p->hidden, (int)rows, 1.0f, p->logits,
                (int)vocab, (const float *)x, (int)p->hidden, 1.0f, p->dw_acc, (int)p->hidden);
#endif
  float *db = p->accum_in_dtype ? (out->dbias ? p->db_chunk : NULL) : p->dbias_acc;
  if (!db) return UBG_OK;
  if (p->accum_in_dtype) memset(db, 0, (size_t)vocab * 4);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t v = 0; v < vocab; v++) db[v] += p->logits[i * vocab + v];
  if (p->accum_in_dtype) add_rounded(out->dbias, db, vocab, p->ce.dt, p->ce.ctx->threads);
  return UBG_OK;
}

/* the chunk's dweight and dbias added to their sums: the generated pass
 * takes f32 sums (dw_acc, dbias_acc) and sums in the dtype (dw_sum,
 * dbias_sum, dweight and dbias themselves with accum_in_dtype); the two
 * not in use are NULL. rows = 0 picks and compiles the variant only. */
static ubg_status run_dw(plan *p, int64_t off, int64_t rows) {
  const char *x = (const char *)p->x + (size_t)(off * p->hidden) * p->es;
  if (p->gemm != RT_GEMM_GENERATED) return run_dw_library(p, x, rows);
  const bool in_dtype = p->accum_in_dtype;
  ubg_arg a[] = {
      T_ARG("dlogits", p->logits),
      T_ARG("x", x),
      T_ARG("dw_acc", p->dw_acc),
      T_ARG("dbias_acc", p->dbias_acc),
      T_ARG("dw_sum", in_dtype ? p->out->dweight : NULL),
      T_ARG("dbias_sum", in_dtype ? p->out->dbias : NULL),
      I_ARG("bt", rows),
      I_ARG("hidden", p->hidden),
      I_ARG("vocab", p->ce.vocab),
  };
  ubg_status s = rt_launch(p->ce.ctx, "flce", "dw", p->ce.dt, a, sizeof a / sizeof a[0]);
  if (!s) note_variant(p, 3);
  return s;
}

static bool need_dx(const plan *p) { return p->out->dx != NULL; }
static bool need_dw(const plan *p) { return p->out->dweight != NULL || p->out->dbias != NULL; }

/* every pass the call needs, on zero rows: picks and compiles each variant
 * (or fails) before anything is written */
static ubg_status prepare_passes(plan *p) {
  ubg_status s;
  if ((s = run_logits(p, 0, 0)) || (s = run_ce(p, 0, 0))) return s;
  if (need_dx(p) && (s = run_dx(p, 0, 0))) return s;
  if (need_dw(p) && (s = run_dw(p, 0, 0))) return s;
  return UBG_OK;
}

static ubg_status validate(plan *p, const ubg_flce_opts *opts) {
  rt_ce_rows *c = &p->ce;
  const ubg_ctx *ctx = c->ctx;
  const ubg_flce_out *out = p->out;
  const char *fn = c->fn;
  if ((unsigned)c->dt > UBG_BF16)
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: dtype %d is not one of UBG_F32, UBG_F16, UBG_BF16", (int)c->dt);
  if (c->bt < 0) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: bt = %lld is negative", (long long)c->bt);
  if (p->hidden < 1) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: hidden = %lld is below 1", (long long)p->hidden);
  if (c->vocab < 1) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: vocab = %lld is below 1", (long long)c->vocab);
  if (c->vocab > INT32_MAX || p->hidden > INT32_MAX)
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: vocab = %lld and hidden = %lld must be below 2^31", (long long)c->vocab,
                   (long long)p->hidden);
  if (!p->x) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: x is NULL");
  if (!p->weight) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: weight is NULL");
  if (!c->target) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: target is NULL");
  if (!out) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: out is NULL");
  /* x and weight first: their sizes are the ones a huge bt or hidden overflows */
  int64_t es = (int64_t)p->es, b_x, b_w, b_v;
  ubg_status s;
  if ((s = rt_check_size(ctx, fn, "x", "bt x hidden", c->bt, p->hidden, es, &b_x)) ||
      (s = rt_check_size(ctx, fn, "weight", "vocab x hidden", c->vocab, p->hidden, es, &b_w)) ||
      (s = rt_check_size(ctx, fn, "the vocab", "vocab x 1", c->vocab, 1, es, &b_v)))
    return s;
  rt_region r[16];
  int nr = 0;
  if ((s = rt_ce_rows_check(c, opts, out->loss, out->z_loss, out->argmax, out->token_accuracy, r, &nr))) return s;
  if (c->o.accum_dtype != UBG_F32 && c->o.accum_dtype != c->dt) {
    char got[24];
    if ((unsigned)c->o.accum_dtype <= UBG_BF16) snprintf(got, sizeof got, "%s", rt_dtype_text(c->o.accum_dtype));
    else snprintf(got, sizeof got, "%d", (int)c->o.accum_dtype);
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: opts->accum_dtype = %s is neither f32 nor the call's dtype %s", got,
                   rt_dtype_text(c->dt));
  }
  const void *bias = c->o.bias;
  if (out->dbias && !bias) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: out->dbias is given but opts->bias is NULL");
  const char *dt = rt_dtype_text(c->dt);
  if ((s = rt_check_aligned(ctx, fn, "x", p->x, p->es, dt)) ||
      (s = rt_check_aligned(ctx, fn, "weight", p->weight, p->es, dt)) ||
      (s = rt_check_aligned(ctx, fn, "opts->bias", bias, p->es, dt)) ||
      (s = rt_check_aligned(ctx, fn, "out->dx", out->dx, p->es, dt)) ||
      (s = rt_check_aligned(ctx, fn, "out->dweight", out->dweight, p->es, dt)) ||
      (s = rt_check_aligned(ctx, fn, "out->dbias", out->dbias, p->es, dt)))
    return s;
  const rt_region mine[] = {
      {"x", p->x, b_x, false},
      {"weight", p->weight, b_w, false},
      {"opts->bias", bias, b_v, false},
      {"out->dx", out->dx, b_x, true},
      {"out->dweight", out->dweight, b_w, true},
      {"out->dbias", out->dbias, b_v, true},
  };
  for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) r[nr++] = mine[i];
  return rt_check_overlaps(ctx, fn, r, nr);
}

/* the GEMMs chosen: in this build and on this CPU; OpenBLAS's with int sizes */
static ubg_status check_gemm(const plan *p) {
  const char *missing = rt_gemm_missing(p->gemm);
  if (missing)
    return rt_fail(p->ce.ctx, UBG_EINVAL, "ubg_flce: gemm=%s, but %s", rt_gemm_names[p->gemm], missing);
  if (p->gemm == RT_GEMM_OPENBLAS && p->ce.bt > INT32_MAX)
    return rt_fail(p->ce.ctx, UBG_EINVAL, "ubg_flce: bt = %lld is above OpenBLAS's int", (long long)p->ce.bt);
  return UBG_OK;
}

/* n bytes in whole 64-byte lines, at least one */
static size_t lines(size_t n) { return n == 0 ? 64 : (n + 63) / 64 * 64; }

void rt_flce_scratch_sizes(ubg_dtype dtype, ubg_dtype accum_dtype, int64_t chunk, int64_t hidden, int64_t vocab,
                           bool reduce_none, bool z_loss, bool dx, bool dweight, bool dbias, rt_gemm gemm, int threads,
                           rt_flce_scratch *s) {
  const bool f32 = dtype == UBG_F32, in_dtype = !f32 && accum_dtype == dtype;
  s->logits = lines((size_t)(chunk * vocab) * 4);
  s->loss_rows = reduce_none ? 0 : lines((size_t)chunk * 4);
  s->z_rows = reduce_none || !z_loss ? 0 : lines((size_t)chunk * 4);
  s->dw_acc = dweight && !f32 && !in_dtype ? lines((size_t)(vocab * hidden) * 4) : 0;
  s->dbias_acc = dbias && !f32 && !in_dtype ? lines((size_t)vocab * 4) : 0;
  s->db_chunk = in_dtype && dbias && gemm == RT_GEMM_AMX ? lines((size_t)vocab * 4) : 0;
  s->dx_rows = s->gemm_pack = 0;
  if (gemm == RT_GEMM_AMX) { /* the largest of the three GEMMs' packs, for a whole chunk */
    plan q;
    memset(&q, 0, sizeof q);
    q.ce.vocab = vocab, q.hidden = hidden;
    static uint16_t dw_bf16; /* stands for dweight: only whether there is one matters here */
    rt_amx_gemm_args g[3] = {logits_gemm(&q, NULL, chunk), dx_gemm(&q, chunk),
                             dw_gemm(&q, NULL, chunk, in_dtype ? &dw_bf16 : NULL)};
    for (int i = 0; i < 3; i++) {
      if ((i == 1 && !dx) || (i == 2 && !dweight)) continue;
      const size_t b = lines(rt_amx_gemm_scratch(&g[i], threads));
      if (b > s->gemm_pack) s->gemm_pack = b;
    }
    s->dx_rows = dx ? lines((size_t)(chunk * hidden) * 4) : 0;
  }
  s->total = s->logits + s->loss_rows + s->z_rows + s->dw_acc + s->dbias_acc + s->db_chunk + s->dx_rows + s->gemm_pack;
}

/* scratch of n bytes (a multiple of 64), zeroed or not; *bytes counts it.
 * NULL for n == 0 too. */
static void *scratch(size_t n, bool zero, size_t *bytes) {
  if (n == 0) return NULL;
  void *q = aligned_alloc(64, n);
  if (q && zero) memset(q, 0, n);
  if (q) *bytes += n;
  return q;
}

ubg_status ubg_flce(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t hidden, int64_t vocab, const void *x,
                    const void *weight, const int64_t *target, const ubg_flce_opts *opts, const ubg_flce_out *out) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_flce: ctx is NULL");
  last_scratch = 0;
  plan p;
  memset(&p, 0, sizeof p);
  p.ce.ctx = ctx;
  p.ce.fn = "ubg_flce";
  p.ce.dt = dtype;
  p.ce.bt = bt;
  p.ce.vocab = vocab;
  p.ce.target = target;
  p.es = rt_dtype_bytes(dtype);
  p.hidden = hidden;
  p.x = x;
  p.weight = weight;
  p.out = out;
  int64_t b_logits;
  ubg_status s = validate(&p, opts);
  if (s) return s;
  /* the chunk only now: its rule does arithmetic on the sizes */
  char why[300];
  if (!rt_composite_spec(ctx, &flce_chunk, why, sizeof why))
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: %s", why);
  rt_flce_choice choice;
  rt_flce_choose(ctx, dtype, bt, hidden, vocab, &choice);
  p.chunk = choice.chunk;
  p.gemm = choice.gemm;
  if ((s = rt_check_size(ctx, "ubg_flce", "a chunk of logits", "chunk x vocab", p.chunk, vocab, 4, &b_logits))) return s;
  if ((s = check_gemm(&p))) return s;
  p.ce.grad = out->dx || out->dweight || out->dbias;

  size_t bytes = 0;
  const bool none = p.ce.o.reduction == UBG_REDUCE_NONE, f32 = dtype == UBG_F32;
  rt_flce_scratch sz;
  rt_flce_scratch_sizes(dtype, p.ce.o.accum_dtype, p.chunk, hidden, vocab, none, out->z_loss != NULL,
                        out->dx != NULL, out->dweight != NULL, out->dbias != NULL, p.gemm, ctx->threads, &sz);
  p.accum_in_dtype = !f32 && p.ce.o.accum_dtype == dtype;
  p.logits = scratch(sz.logits, false, &bytes);
  float *dw_own = scratch(sz.dw_acc, true, &bytes);
  float *db_own = scratch(sz.dbias_acc, true, &bytes);
  p.db_chunk = scratch(sz.db_chunk, false, &bytes);
  p.dx_rows = scratch(sz.dx_rows, false, &bytes);
  p.amx = scratch(sz.gemm_pack, false, &bytes);
  if (bytes != sz.logits + sz.dw_acc + sz.dbias_acc + sz.db_chunk + sz.dx_rows + sz.gemm_pack) {
    s = rt_fail(ctx, UBG_ENOMEM, "ubg_flce: out of memory for %zu bytes of scratch (chunk of %lld rows x vocab %lld)",
                sz.total, (long long)p.chunk, (long long)vocab);
    goto done;
  }
  if ((s = rt_ce_rows_prepare(&p.ce, p.chunk, &bytes))) goto done;
  last_scratch = bytes;
  p.dw_acc = f32 ? out->dweight : dw_own;
  p.dbias_acc = f32 ? out->dbias : db_own;
  if ((s = prepare_passes(&p))) goto done;

  /* from here on only kernels that are known to run */
  if (f32 && out->dweight) memset(out->dweight, 0, (size_t)(vocab * hidden) * 4);
  if (f32 && out->dbias) memset(out->dbias, 0, (size_t)vocab * 4);
  if (p.accum_in_dtype && out->dweight) memset(out->dweight, 0, (size_t)(vocab * hidden) * p.es); /* +0 */
  if (p.accum_in_dtype && out->dbias) memset(out->dbias, 0, (size_t)vocab * p.es);
  for (int64_t off = 0; off < bt; off += p.chunk) {
    int64_t rows = bt - off < p.chunk ? bt - off : p.chunk;
    if ((s = run_logits(&p, off, rows)) || (s = run_ce(&p, off, rows))) goto done;
    if (need_dx(&p) && (s = run_dx(&p, off, rows))) goto done;
    if (need_dw(&p) && (s = run_dw(&p, off, rows))) goto done;
  }
  rt_ce_rows_finish(&p.ce);
  if (dw_own) store_rows(out->dweight, dw_own, vocab * hidden, dtype, ctx->threads);
  if (db_own) store_rows(out->dbias, db_own, vocab, dtype, ctx->threads);
  char last[700];
  snprintf(last, sizeof last, "%s;%s;%s;%s;chunk=%lld (%s)", p.variants[0], p.variants[1],
           need_dx(&p) ? p.variants[2] : "-", need_dw(&p) ? p.variants[3] : "-", (long long)p.chunk, choice.chunk_source);
  rt_set_last_variant(ctx, last);
done:
  free(p.logits);
  free(p.dx_rows);
  free(p.amx);
  free(p.db_chunk);
  free(dw_own);
  free(db_own);
  rt_ce_rows_free(&p.ce);
  return s;
}

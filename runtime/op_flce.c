/* ubg_flce: fused linear cross entropy (Liger's FLCE) over chunks of rows.
 *
 *   x [bt, hidden], weight [vocab, hidden], target [bt]   (dtype: x, weight, bias, ce_weight)
 *
 *   for each chunk of c rows (chunk rule below):
 *     logits [c, vocab] f32  = x_chunk weight^T (+ bias)        pass flce.logits (or sgemm)
 *     CE over each row: loss, z_loss, argmax; logits := dloss/dlogits      pass flce.ce
 *     dx_chunk [c, hidden]  = dlogits weight                     pass flce.dx
 *     dw_acc [vocab, hidden] += dlogits^T x_chunk; dbias_acc += column sums  pass flce.dw
 *
 * The BT x vocab logits never exist: the extra memory is one chunk of
 * logits (chunk x vocab f32), two chunk-long rows of losses, and f32
 * accumulators for dweight and dbias when the dtype is not f32 (docs/
 * decisions.md). Everything that can fail is checked first (arguments,
 * targets, sizes, overlaps, memory, and every pass's variant, compiled),
 * so a failed call writes nothing.
 *
 * The mean's denominators (rows not ignored, sum of their class weights)
 * are over the whole call and are computed before the first chunk, as
 * Liger's ce_stats. The loss is summed over rows in row order in double. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../templates/prelude.h"
#include "internal.h"
#ifdef UBG_HAVE_OPENBLAS
#include <cblas.h>
#endif

static _Thread_local size_t last_scratch;
size_t rt_flce_last_scratch_bytes(void) { return last_scratch; }

/* the least power of two >= x; x itself above 2^62, where the next one
 * is not an int64_t (the caller caps the chunk at bt anyway) */
static int64_t next_pow2(int64_t x) {
  if (x > INT64_C(1) << 62) return x;
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

/* ceil(a / b) for a >= 0, b >= 1, without forming a + b - 1 */
static int64_t cdiv(int64_t a, int64_t b) { return a == 0 ? 0 : (a - 1) / b + 1; }

/* Liger's rule: chunk = next_pow2(cdiv(bt, cdiv(vocab, hidden))), so a chunk
 * of logits is about as large as x; never more rows than bt. Callers pass
 * validated sizes (bt >= 0, hidden and vocab >= 1). */
int64_t rt_flce_chunk_rows(const ubg_ctx *ctx, int64_t bt, int64_t hidden, int64_t vocab) {
  int64_t c;
  if (ctx && ctx->flce_chunk > 0) {
    c = ctx->flce_chunk;
  } else {
    c = next_pow2(cdiv(bt, cdiv(vocab, hidden)));
  }
  if (c > bt) c = bt;
  return c < 1 ? 1 : c;
}

#ifdef UBG_HAVE_OPENBLAS
const bool rt_have_openblas = true;
#else
const bool rt_have_openblas = false;
#endif

int rt_flce_parse_variant(const char *s, int64_t *chunk, bool *openblas) {
  if (strncmp(s, "chunk=", 6)) return -1;
  const char *d = s + 6;
  int64_t n = 0;
  int digits = 0;
  for (; *d >= '0' && *d <= '9'; d++, digits++) {
    if (digits == 0 && *d == '0') return -1; /* no leading zero, so no two spellings of one chunk */
    n = n * 10 + (*d - '0');
    if (n > RT_FLCE_MAX_CHUNK) return -1;
  }
  if (digits == 0) return -1;
  if (*d && strcmp(d, ",gemm=openblas")) return -1;
  *chunk = n;
  *openblas = *d != '\0';
  return 0;
}

/* The rule, the environment and the tuning DB's entry for this call
 * (`ubgen tune flce.chunk`): kernel "flce", pass "chunk", the shape bucket
 * of (bt, hidden, vocab), variant "chunk=N" or "chunk=N,gemm=openblas". The
 * environment wins over the entry (UBGEN_FLCE_CHUNK, UBGEN_FLCE_GEMM); an
 * entry naming OpenBLAS in a build without it keeps the generated GEMMs. */
void rt_flce_choose(const ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t hidden, int64_t vocab, rt_flce_choice *c) {
  memset(c, 0, sizeof *c);
  c->chunk = rt_flce_chunk_rows(ctx, bt < 0 ? 0 : bt, hidden < 1 ? 1 : hidden, vocab < 1 ? 1 : vocab);
  c->chunk_source = ctx->flce_chunk > 0 ? "UBGEN_FLCE_CHUNK" : "Liger's rule";
  c->openblas = ctx->flce_openblas && dtype == UBG_F32;
  c->gemm_source = ctx->flce_gemm_set ? "UBGEN_FLCE_GEMM" : "default";
  if (!ctx->tunedb.n || bt < 1 || hidden < 1 || vocab < 1) return;
  const int64_t shape[3] = {ug_tune_bucket(bt), ug_tune_bucket(hidden), ug_tune_bucket(vocab)};
  static const char *const names[3] = {"bt", "hidden", "vocab"};
  c->entry = ug_tunedb_find(&ctx->tunedb, "flce", "chunk", (int)dtype, 3, names, shape, ctx->ub_bytes);
  int64_t n;
  bool openblas;
  if (!c->entry || rt_flce_parse_variant(c->entry->variant, &n, &openblas) < 0) return;
  c->entry_chunk = n;
  c->entry_openblas = openblas;
  if (ctx->flce_chunk <= 0) {
    c->chunk = n < bt ? n : bt;
    c->chunk_source = "tuned";
  }
  if (rt_have_openblas && !ctx->flce_gemm_set && dtype == UBG_F32) {
    c->openblas = c->entry_openblas;
    c->gemm_source = "tuned";
  }
}

typedef struct {
  const char *name;
  const void *p;
  int64_t bytes;
  bool out;
} region;

/* outputs may not overlap each other or any input */
static ubg_status check_overlaps(const ubg_ctx *ctx, const region *r, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      if (!r[i].p || !r[j].p || !r[i].bytes || !r[j].bytes || (!r[i].out && !r[j].out)) continue;
      uintptr_t a = (uintptr_t)r[i].p, b = (uintptr_t)r[j].p;
      if (a < b + (uintptr_t)r[j].bytes && b < a + (uintptr_t)r[i].bytes)
        return rt_fail(ctx, UBG_EINVAL, "ubg_flce: %s [%p, +%lld bytes) and %s [%p, +%lld bytes) overlap", r[i].name,
                       r[i].p, (long long)r[i].bytes, r[j].name, r[j].p, (long long)r[j].bytes);
    }
  return UBG_OK;
}

/* what [a_name x b_name = a x b] of esize-byte elements, overflow-checked */
static ubg_status check_size(const ubg_ctx *ctx, const char *what, const char *dims, int64_t a, int64_t b, int64_t esize,
                             int64_t *bytes) {
  if (__builtin_mul_overflow(a, b, bytes) || __builtin_mul_overflow(*bytes, esize, bytes) ||
      *bytes > (int64_t)(PTRDIFF_MAX / 4))
    return rt_fail(ctx, UBG_EINVAL,
                   "ubg_flce: %s of %s = %lld x %lld elements of %lld bytes does not fit in memory (the byte size "
                   "overflows)",
                   what, dims, (long long)a, (long long)b, (long long)esize);
  return UBG_OK;
}

/* every pointer aligned to its element size, before anything reads it (as
 * ubg_launch's check_alignment: a misaligned float * or int64_t * is
 * undefined behaviour in C) */
static ubg_status check_aligned(const ubg_ctx *ctx, const char *what, const void *p, size_t esize, const char *elem) {
  if ((uintptr_t)p % esize)
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: %s = %p is not aligned to %zu bytes (the size of its %s elements)", what,
                   p, esize, elem);
  return UBG_OK;
}

static double ld(const void *p, int64_t i, ubg_dtype dt) {
  return dt == UBG_F32 ? ubg_ld_f32(p, i) : dt == UBG_F16 ? ubg_ld_f16(p, i) : ubg_ld_bf16(p, i);
}

/* one call's plan: what the passes get */
typedef struct {
  ubg_ctx *ctx;
  ubg_dtype dt;
  size_t es; /* bytes per element of x, weight, dx */
  int64_t bt, hidden, vocab, chunk;
  const void *x, *weight, *bias, *ce_weight;
  const int64_t *target;
  ubg_flce_opts o;
  const ubg_flce_out *out;
  bool grad, blas;
  float scale_n, scale_w, weight_sum;
  float *logits, *loss_rows, *z_rows; /* scratch */
  float *dw_acc, *dbias_acc;          /* dweight / dbias themselves when f32 */
  char variants[4][160];              /* the last variant of each pass, for ubg_ctx_last_variant */
} plan;

static void note_variant(plan *p, int pass) {
  const char *v = ubg_ctx_last_variant(p->ctx);
  snprintf(p->variants[pass], sizeof p->variants[pass], "%s", v ? v : "?");
}

static ubg_status run_logits(plan *p, int64_t off, int64_t rows) {
  const char *x = (const char *)p->x + (size_t)(off * p->hidden) * p->es;
#ifdef UBG_HAVE_OPENBLAS
  if (p->blas) {
    if (rows == 0) return UBG_OK;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)p->vocab, (int)p->hidden, 1.0f,
                (const float *)x, (int)p->hidden, p->weight, (int)p->hidden, 0.0f, p->logits, (int)p->vocab);
    if (p->bias)
      for (int64_t i = 0; i < rows; i++)
        for (int64_t v = 0; v < p->vocab; v++) p->logits[i * p->vocab + v] += ((const float *)p->bias)[v];
    snprintf(p->variants[0], sizeof p->variants[0], "openblas");
    return UBG_OK;
  }
#endif
  ubg_arg a[] = {
      {"x", UBG_ARG_PTR, {.p = (void *)x}},          {"weight", UBG_ARG_PTR, {.p = (void *)p->weight}},
      {"bias", UBG_ARG_PTR, {.p = (void *)p->bias}}, {"logits", UBG_ARG_PTR, {.p = p->logits}},
      {"bt", UBG_ARG_I64, {.i = rows}},              {"hidden", UBG_ARG_I64, {.i = p->hidden}},
      {"vocab", UBG_ARG_I64, {.i = p->vocab}},
  };
  ubg_status s = rt_launch(p->ctx, "flce", "logits", p->dt, a, sizeof a / sizeof a[0]);
  if (!s) note_variant(p, 0);
  return s;
}

static ubg_status run_ce(plan *p, int64_t off, int64_t rows) {
  bool none = p->o.reduction == UBG_REDUCE_NONE;
  float *loss = none ? p->out->loss + off : p->loss_rows;
  float *z = !p->out->z_loss ? NULL : none ? p->out->z_loss + off : p->z_rows;
  ubg_arg a[] = {
      {"logits", UBG_ARG_PTR, {.p = p->logits}},
      {"target", UBG_ARG_PTR, {.p = (void *)(p->target + off)}},
      {"ce_weight", UBG_ARG_PTR, {.p = (void *)p->ce_weight}},
      {"loss", UBG_ARG_PTR, {.p = loss}},
      {"z_loss", UBG_ARG_PTR, {.p = z}},
      {"argmax", UBG_ARG_PTR, {.p = p->out->argmax ? p->out->argmax + off : NULL}},
      {"bt", UBG_ARG_I64, {.i = rows}},
      {"hidden", UBG_ARG_I64, {.i = p->hidden}},
      {"vocab", UBG_ARG_I64, {.i = p->vocab}},
      {"ignore_index", UBG_ARG_I64, {.i = p->o.ignore_index}},
      {"grad", UBG_ARG_I64, {.i = p->grad}},
      {"scale_n", UBG_ARG_F64, {.f = p->scale_n}},
      {"scale_w", UBG_ARG_F64, {.f = p->scale_w}},
      {"weight_sum", UBG_ARG_F64, {.f = p->weight_sum}},
      {"label_smoothing", UBG_ARG_F64, {.f = p->o.label_smoothing}},
      {"lse_square_scale", UBG_ARG_F64, {.f = p->o.lse_square_scale}},
      {"softcap", UBG_ARG_F64, {.f = p->o.softcap}},
  };
  ubg_status s = rt_launch(p->ctx, "flce", "ce", p->dt, a, sizeof a / sizeof a[0]);
  if (!s) note_variant(p, 1);
  return s;
}

static ubg_status run_dx(plan *p, int64_t off, int64_t rows) {
  char *dx = (char *)p->out->dx + (size_t)(off * p->hidden) * p->es;
#ifdef UBG_HAVE_OPENBLAS
  if (p->blas) {
    if (rows == 0) return UBG_OK;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)p->hidden, (int)p->vocab, 1.0f, p->logits,
                (int)p->vocab, p->weight, (int)p->hidden, 0.0f, (float *)dx, (int)p->hidden);
    snprintf(p->variants[2], sizeof p->variants[2], "openblas");
    return UBG_OK;
  }
#endif
  ubg_arg a[] = {
      {"dlogits", UBG_ARG_PTR, {.p = p->logits}}, {"weight", UBG_ARG_PTR, {.p = (void *)p->weight}},
      {"dx", UBG_ARG_PTR, {.p = dx}},             {"bt", UBG_ARG_I64, {.i = rows}},
      {"hidden", UBG_ARG_I64, {.i = p->hidden}},  {"vocab", UBG_ARG_I64, {.i = p->vocab}},
  };
  ubg_status s = rt_launch(p->ctx, "flce", "dx", p->dt, a, sizeof a / sizeof a[0]);
  if (!s) note_variant(p, 2);
  return s;
}

static ubg_status run_dw(plan *p, int64_t off, int64_t rows) {
  const char *x = (const char *)p->x + (size_t)(off * p->hidden) * p->es;
#ifdef UBG_HAVE_OPENBLAS
  if (p->blas) {
    if (rows == 0) return UBG_OK;
    if (p->dw_acc)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)p->vocab, (int)p->hidden, (int)rows, 1.0f, p->logits,
                  (int)p->vocab, (const float *)x, (int)p->hidden, 1.0f, p->dw_acc, (int)p->hidden);
    if (p->dbias_acc)
      for (int64_t i = 0; i < rows; i++)
        for (int64_t v = 0; v < p->vocab; v++) p->dbias_acc[v] += p->logits[i * p->vocab + v];
    snprintf(p->variants[3], sizeof p->variants[3], "openblas");
    return UBG_OK;
  }
#endif
  ubg_arg a[] = {
      {"dlogits", UBG_ARG_PTR, {.p = p->logits}},   {"x", UBG_ARG_PTR, {.p = (void *)x}},
      {"dw_acc", UBG_ARG_PTR, {.p = p->dw_acc}},    {"dbias_acc", UBG_ARG_PTR, {.p = p->dbias_acc}},
      {"bt", UBG_ARG_I64, {.i = rows}},             {"hidden", UBG_ARG_I64, {.i = p->hidden}},
      {"vocab", UBG_ARG_I64, {.i = p->vocab}},
  };
  ubg_status s = rt_launch(p->ctx, "flce", "dw", p->dt, a, sizeof a / sizeof a[0]);
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

static ubg_status validate(plan *p, const ubg_flce_opts *opts, int64_t *loss_n) {
  const ubg_ctx *ctx = p->ctx;
  const ubg_flce_out *out = p->out;
  if ((unsigned)p->dt > UBG_BF16)
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: dtype %d is not one of UBG_F32, UBG_F16, UBG_BF16", (int)p->dt);
  if (p->bt < 0) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: bt = %lld is negative", (long long)p->bt);
  if (p->hidden < 1) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: hidden = %lld is below 1", (long long)p->hidden);
  if (p->vocab < 1) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: vocab = %lld is below 1", (long long)p->vocab);
  if (p->vocab > INT32_MAX || p->hidden > INT32_MAX)
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: vocab = %lld and hidden = %lld must be below 2^31", (long long)p->vocab,
                   (long long)p->hidden);
  if (!p->x) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: x is NULL");
  if (!p->weight) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: weight is NULL");
  if (!p->target) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: target is NULL");
  if (!out) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: out is NULL");
  if (!out->loss) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: out->loss is NULL");
  if (opts) p->o = *opts;
  else ubg_flce_opts_init(&p->o);
  const ubg_flce_opts *o = &p->o;
  if ((unsigned)o->reduction > UBG_REDUCE_NONE)
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: opts->reduction = %d is not one of UBG_REDUCE_MEAN, SUM, NONE",
                   (int)o->reduction);
  if (!(o->label_smoothing >= 0.0f && o->label_smoothing <= 1.0f))
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: opts->label_smoothing = %g is outside [0, 1]", o->label_smoothing);
  if (!isfinite(o->lse_square_scale))
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: opts->lse_square_scale = %g is not finite", o->lse_square_scale);
  if (!(o->softcap >= 0.0f) || !isfinite(o->softcap))
    return rt_fail(ctx, UBG_EINVAL, "ubg_flce: opts->softcap = %g must be 0 (off) or a finite positive number",
                   o->softcap);
  if (out->dbias && !o->bias) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: out->dbias is given but opts->bias is NULL");
  p->bias = o->bias;
  p->ce_weight = o->ce_weight;

  int64_t es = (int64_t)p->es, b_x, b_w, b_t, b_v, b_loss;
  ubg_status s;
  const char *dt = p->dt == UBG_F32 ? "f32" : p->dt == UBG_F16 ? "f16" : "bf16";
  if ((s = check_aligned(ctx, "x", p->x, p->es, dt)) || (s = check_aligned(ctx, "weight", p->weight, p->es, dt)) ||
      (s = check_aligned(ctx, "target", p->target, 8, "i64")) ||
      (s = check_aligned(ctx, "opts->ce_weight", o->ce_weight, p->es, dt)) ||
      (s = check_aligned(ctx, "opts->bias", o->bias, p->es, dt)) ||
      (s = check_aligned(ctx, "out->loss", out->loss, 4, "f32")) ||
      (s = check_aligned(ctx, "out->z_loss", out->z_loss, 4, "f32")) ||
      (s = check_aligned(ctx, "out->argmax", out->argmax, 8, "i64")) ||
      (s = check_aligned(ctx, "out->dx", out->dx, p->es, dt)) ||
      (s = check_aligned(ctx, "out->dweight", out->dweight, p->es, dt)) ||
      (s = check_aligned(ctx, "out->dbias", out->dbias, p->es, dt)))
    return s;
  *loss_n = o->reduction == UBG_REDUCE_NONE ? p->bt : 1;
  if ((s = check_size(ctx, "x", "bt x hidden", p->bt, p->hidden, es, &b_x)) ||
      (s = check_size(ctx, "weight", "vocab x hidden", p->vocab, p->hidden, es, &b_w)) ||
      (s = check_size(ctx, "target", "bt x 1", p->bt, 1, 8, &b_t)) ||
      (s = check_size(ctx, "the vocab", "vocab x 1", p->vocab, 1, es, &b_v)) ||
      (s = check_size(ctx, "loss", o->reduction == UBG_REDUCE_NONE ? "bt x 1" : "1 x 1", *loss_n, 1, 4, &b_loss)))
    return s;
  region r[] = {
      {"x", p->x, b_x, false},
      {"weight", p->weight, b_w, false},
      {"target", p->target, b_t, false},
      {"opts->ce_weight", o->ce_weight, b_v, false},
      {"opts->bias", o->bias, b_v, false},
      {"out->loss", out->loss, b_loss, true},
      {"out->z_loss", out->z_loss, b_loss, true},
      {"out->argmax", out->argmax, b_t, true},
      {"out->dx", out->dx, b_x, true},
      {"out->dweight", out->dweight, b_w, true},
      {"out->dbias", out->dbias, b_v, true},
  };
  if ((s = check_overlaps(ctx, r, (int)(sizeof r / sizeof r[0])))) return s;
  for (int64_t i = 0; i < p->bt; i++) {
    int64_t y = p->target[i];
    if (y != o->ignore_index && (y < 0 || y >= p->vocab))
      return rt_fail(ctx, UBG_ERANGE,
                     "ubg_flce: target[%lld] = %lld is outside [0, vocab) = [0, %lld) and is not ignore_index = %lld",
                     (long long)i, (long long)y, (long long)p->vocab, (long long)o->ignore_index);
  }
  return UBG_OK;
}

/* OpenBLAS's GEMMs, when chosen: in this build, and with int sizes */
static ubg_status check_blas(const plan *p) {
  if (!p->blas || p->dt != UBG_F32) return UBG_OK;
#ifndef UBG_HAVE_OPENBLAS
  return rt_fail(p->ctx, UBG_EINVAL, "ubg_flce: UBGEN_FLCE_GEMM=openblas, but this library was not built with BLAS=openblas");
#else
  if (p->bt > INT32_MAX) return rt_fail(p->ctx, UBG_EINVAL, "ubg_flce: bt = %lld is above OpenBLAS's int", (long long)p->bt);
  return UBG_OK;
#endif
}

/* the mean's denominators over the whole call, as Liger's ce_stats */
static void reduction_factors(plan *p) {
  int64_t n_valid = 0;
  double sw = 0, wsum = 0;
  for (int64_t i = 0; i < p->bt; i++) {
    if (p->target[i] == p->o.ignore_index) continue;
    n_valid++;
    if (p->ce_weight) sw += ld(p->ce_weight, p->target[i], p->dt);
  }
  if (p->ce_weight)
    for (int64_t v = 0; v < p->vocab; v++) wsum += ld(p->ce_weight, v, p->dt);
  bool mean = p->o.reduction == UBG_REDUCE_MEAN;
  p->scale_n = mean ? (float)(1.0 / (double)(n_valid > 0 ? n_valid : 1)) : 1.0f;
  /* torch's formula for any sign of the weights; a sum of exactly 0 over
   * counted rows gives 1/0 = +Inf, as torch's division does (docs/decisions.md) */
  p->scale_w = mean && p->ce_weight ? (float)(1.0 / sw) : 1.0f;
  p->weight_sum = (float)wsum;
}

/* n bytes in whole 64-byte lines, at least one */
static size_t lines(size_t n) { return n == 0 ? 64 : (n + 63) / 64 * 64; }

void rt_flce_scratch_sizes(ubg_dtype dtype, int64_t chunk, int64_t hidden, int64_t vocab, bool reduce_none,
                           bool z_loss, bool dweight, bool dbias, rt_flce_scratch *s) {
  const bool f32 = dtype == UBG_F32;
  s->logits = lines((size_t)(chunk * vocab) * 4);
  s->loss_rows = reduce_none ? 0 : lines((size_t)chunk * 4);
  s->z_rows = reduce_none || !z_loss ? 0 : lines((size_t)chunk * 4);
  s->dw_acc = dweight && !f32 ? lines((size_t)(vocab * hidden) * 4) : 0;
  s->dbias_acc = dbias && !f32 ? lines((size_t)vocab * 4) : 0;
  s->total = s->logits + s->loss_rows + s->z_rows + s->dw_acc + s->dbias_acc;
}

/* scratch of n bytes (a multiple of 64, rt_flce_scratch_sizes's), all of
 * it before anything is written; *bytes counts it. NULL for n == 0 too. */
static void *scratch(size_t n, bool zero, size_t *bytes) {
  if (n == 0) return NULL;
  void *q = aligned_alloc(64, n);
  if (q && zero) memset(q, 0, n);
  if (q) *bytes += n;
  return q;
}

/* f32 accumulator -> output dtype */
static void store_rows(void *dst, const float *src, int64_t n, ubg_dtype dt, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    if (dt == UBG_F16) ubg_st_f16(dst, i, src[i]);
    else ubg_st_bf16(dst, i, src[i]);
  }
}

ubg_status ubg_flce(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t hidden, int64_t vocab, const void *x,
                    const void *weight, const int64_t *target, const ubg_flce_opts *opts, const ubg_flce_out *out) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_flce: ctx is NULL");
  last_scratch = 0;
  plan p;
  memset(&p, 0, sizeof p);
  p.ctx = ctx;
  p.dt = dtype;
  p.es = dtype == UBG_F32 ? 4 : 2;
  p.bt = bt;
  p.hidden = hidden;
  p.vocab = vocab;
  p.x = x;
  p.weight = weight;
  p.target = target;
  p.out = out;
  int64_t loss_n, b_logits;
  ubg_status s = validate(&p, opts, &loss_n);
  if (s) return s;
  /* the chunk only now: its rule does arithmetic on the sizes */
  rt_flce_choice choice;
  rt_flce_choose(ctx, dtype, bt, hidden, vocab, &choice);
  p.chunk = choice.chunk;
  p.blas = choice.openblas;
  if ((s = check_size(ctx, "a chunk of logits", "chunk x vocab", p.chunk, vocab, 4, &b_logits))) return s;
  if ((s = check_blas(&p))) return s;
  p.grad = out->dx || out->dweight || out->dbias;
  reduction_factors(&p);

  size_t bytes = 0;
  bool none = p.o.reduction == UBG_REDUCE_NONE, f32 = dtype == UBG_F32;
  rt_flce_scratch sz;
  rt_flce_scratch_sizes(dtype, p.chunk, hidden, vocab, none, out->z_loss != NULL, out->dweight != NULL,
                        out->dbias != NULL, &sz);
  p.logits = scratch(sz.logits, false, &bytes);
  p.loss_rows = scratch(sz.loss_rows, false, &bytes);
  p.z_rows = scratch(sz.z_rows, false, &bytes);
  float *dw_own = scratch(sz.dw_acc, true, &bytes);
  float *db_own = scratch(sz.dbias_acc, true, &bytes);
  last_scratch = bytes;
  if (bytes != sz.total) {
    s = rt_fail(ctx, UBG_ENOMEM, "ubg_flce: out of memory for %zu bytes of scratch (chunk of %lld rows x vocab %lld)",
                sz.total, (long long)p.chunk, (long long)vocab);
    goto done;
  }
  p.dw_acc = f32 ? out->dweight : dw_own;
  p.dbias_acc = f32 ? out->dbias : db_own;
  if ((s = prepare_passes(&p))) goto done;

  /* from here on only kernels that are known to run */
  if (f32 && out->dweight) memset(out->dweight, 0, (size_t)(vocab * hidden) * 4);
  if (f32 && out->dbias) memset(out->dbias, 0, (size_t)vocab * 4);
  double loss_sum = 0, z_sum = 0;
  for (int64_t off = 0; off < bt; off += p.chunk) {
    int64_t rows = bt - off < p.chunk ? bt - off : p.chunk;
    if ((s = run_logits(&p, off, rows)) || (s = run_ce(&p, off, rows))) goto done;
    if (!none)
      for (int64_t i = 0; i < rows; i++) {
        loss_sum += p.loss_rows[i];
        if (p.z_rows) z_sum += p.z_rows[i];
      }
    if (need_dx(&p) && (s = run_dx(&p, off, rows))) goto done;
    if (need_dw(&p) && (s = run_dw(&p, off, rows))) goto done;
  }
  if (!none) {
    out->loss[0] = (float)loss_sum;
    if (out->z_loss) out->z_loss[0] = (float)z_sum;
  }
  if (dw_own) store_rows(out->dweight, dw_own, vocab * hidden, dtype, ctx->threads);
  if (db_own) store_rows(out->dbias, db_own, vocab, dtype, ctx->threads);
  char last[700];
  snprintf(last, sizeof last, "%s;%s;%s;%s;chunk=%lld (%s)", p.variants[0], p.variants[1],
           need_dx(&p) ? p.variants[2] : "-", need_dw(&p) ? p.variants[3] : "-", (long long)p.chunk, choice.chunk_source);
  rt_set_last_variant(ctx, last);
done:
  free(p.logits);
  free(p.loss_rows);
  free(p.z_rows);
  free(dw_own);
  free(db_own);
  return s;
}

void ubg_flce_opts_init(ubg_flce_opts *o) {
  if (!o) return;
  o->ignore_index = -100;
  o->label_smoothing = 0.0f;
  o->lse_square_scale = 0.0f;
  o->softcap = 0.0f;
  o->reduction = UBG_REDUCE_MEAN;
  o->ce_weight = NULL;
  o->bias = NULL;
}

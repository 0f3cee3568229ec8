/* Cross entropy over rows of f32 logits, shared by ubg_flce and
 * ubg_cross_entropy (ce_rows.h). The mean's denominators (rows not ignored,
 * the sum of their class weights) are over the whole call, as Liger's
 * ce_stats; the loss is summed over rows in row order in double. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../templates/prelude.h"
#include "ce_rows.h"
#include "../gen/ckd.h"

ubg_status rt_check_size(const ubg_ctx *ctx, const char *fn, const char *what, const char *dims, int64_t a, int64_t b,
                         int64_t esize, int64_t *bytes) {
  if (ug_ckd_mul(bytes, a, b) || ug_ckd_mul(bytes, *bytes, esize) ||
      *bytes > (int64_t)(PTRDIFF_MAX / 4))
    return rt_fail(ctx, UBG_EINVAL,
                   "%s: %s of %s = %lld x %lld elements of %lld bytes does not fit in memory (the byte size overflows)",
                   fn, what, dims, (long long)a, (long long)b, (long long)esize);
  return UBG_OK;
}

/* as ubg_launch's check_alignment: a misaligned float * or int64_t * is
 * undefined behaviour in C */
ubg_status rt_check_aligned(const ubg_ctx *ctx, const char *fn, const char *what, const void *p, size_t esize,
                            const char *elem) {
  if ((uintptr_t)p % esize)
    return rt_fail(ctx, UBG_EINVAL, "%s: %s = %p is not aligned to %zu bytes (the size of its %s elements)", fn, what, p,
                   esize, elem);
  return UBG_OK;
}

ubg_status rt_check_overlaps(const ubg_ctx *ctx, const char *fn, const rt_region *r, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      if (!r[i].p || !r[j].p || !r[i].bytes || !r[j].bytes || (!r[i].out && !r[j].out)) continue;
      uintptr_t a = (uintptr_t)r[i].p, b = (uintptr_t)r[j].p;
      if (a < b + (uintptr_t)r[j].bytes && b < a + (uintptr_t)r[i].bytes)
        return rt_fail(ctx, UBG_EINVAL, "%s: %s [%p, +%lld bytes) and %s [%p, +%lld bytes) overlap", fn, r[i].name,
                       r[i].p, (long long)r[i].bytes, r[j].name, r[j].p, (long long)r[j].bytes);
    }
  return UBG_OK;
}

static ubg_status check_options(const rt_ce_rows *c) {
  const ubg_flce_opts *o = &c->o;
  if ((unsigned)o->reduction > UBG_REDUCE_NONE)
    return rt_fail(c->ctx, UBG_EINVAL, "%s: opts->reduction = %d is not one of UBG_REDUCE_MEAN, SUM, NONE", c->fn,
                   (int)o->reduction);
  if (!(o->label_smoothing >= 0.0f && o->label_smoothing <= 1.0f))
    return rt_fail(c->ctx, UBG_EINVAL, "%s: opts->label_smoothing = %g is outside [0, 1]", c->fn, o->label_smoothing);
  if (!isfinite(o->lse_square_scale))
    return rt_fail(c->ctx, UBG_EINVAL, "%s: opts->lse_square_scale = %g is not finite", c->fn, o->lse_square_scale);
  if (!(o->softcap >= 0.0f) || !isfinite(o->softcap))
    return rt_fail(c->ctx, UBG_EINVAL, "%s: opts->softcap = %g must be 0 (off) or a finite positive number", c->fn,
                   o->softcap);
  if (o->token_scaling != 0 && o->token_scaling != 1)
    return rt_fail(c->ctx, UBG_EINVAL, "%s: opts->token_scaling = %d is not 0 or 1", c->fn, o->token_scaling);
  return UBG_OK;
}

void rt_ce_rows_set(rt_ce_rows *c, const ubg_flce_opts *opts, float *loss, float *z_loss, int64_t *argmax,
                    float *token_accuracy) {
  if (opts) c->o = *opts;
  else ubg_flce_opts_init(&c->o);
  c->loss = loss, c->z_loss = z_loss, c->argmax = argmax, c->token_accuracy = token_accuracy;
}

ubg_status rt_ce_rows_check(rt_ce_rows *c, const ubg_flce_opts *opts, float *loss, float *z_loss, int64_t *argmax,
                            float *token_accuracy, rt_region *r, int *nr) {
  rt_ce_rows_set(c, opts, loss, z_loss, argmax, token_accuracy);
  if (!c->target) return rt_fail(c->ctx, UBG_EINVAL, "%s: target is NULL", c->fn);
  if (!loss) return rt_fail(c->ctx, UBG_EINVAL, "%s: out->loss is NULL", c->fn);
  ubg_status s = check_options(c);
  if (s) return s;
  const ubg_flce_opts *o = &c->o;
  const char *fn = c->fn;
  if ((s = rt_check_aligned(c->ctx, fn, "target", c->target, 8, "i64")) ||
      (s = rt_check_aligned(c->ctx, fn, "opts->ce_weight", o->ce_weight, 4, "f32")) ||
      (s = rt_check_aligned(c->ctx, fn, "opts->grad_output", o->grad_output, 4, "f32")) ||
      (s = rt_check_aligned(c->ctx, fn, "out->loss", loss, 4, "f32")) ||
      (s = rt_check_aligned(c->ctx, fn, "out->z_loss", z_loss, 4, "f32")) ||
      (s = rt_check_aligned(c->ctx, fn, "out->argmax", argmax, 8, "i64")) ||
      (s = rt_check_aligned(c->ctx, fn, "out->token_accuracy", token_accuracy, 4, "f32")))
    return s;
  const bool none = o->reduction == UBG_REDUCE_NONE;
  const int64_t per_call = none ? c->bt : 1;
  const char *per_dims = none ? "bt x 1" : "1 x 1";
  int64_t b_t, b_v, b_loss;
  if ((s = rt_check_size(c->ctx, fn, "target", "bt x 1", c->bt, 1, 8, &b_t)) ||
      (s = rt_check_size(c->ctx, fn, "ce_weight", "vocab x 1", c->vocab, 1, 4, &b_v)) ||
      (s = rt_check_size(c->ctx, fn, "loss", per_dims, per_call, 1, 4, &b_loss)))
    return s;
  const rt_region mine[] = {
      {"target", c->target, b_t, false},
      {"opts->ce_weight", o->ce_weight, b_v, false},
      {"opts->grad_output", o->grad_output, b_loss, false},
      {"out->loss", loss, b_loss, true},
      {"out->z_loss", z_loss, b_loss, true},
      {"out->argmax", argmax, b_t, true},
      {"out->token_accuracy", token_accuracy, b_loss, true},
  };
  for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) r[(*nr)++] = mine[i];
  for (int64_t i = 0; i < c->bt; i++) {
    int64_t y = c->target[i];
    if (y != o->ignore_index && (y < 0 || y >= c->vocab))
      return rt_fail(c->ctx, UBG_ERANGE,
                     "%s: target[%lld] = %lld is outside [0, vocab) = [0, %lld) and is not ignore_index = %lld", fn,
                     (long long)i, (long long)y, (long long)c->vocab, (long long)o->ignore_index);
  }
  return UBG_OK;
}

/* the mean's denominators over the whole call, as Liger's ce_stats */
static void reduction_factors(rt_ce_rows *c) {
  int64_t n_valid = 0;
  double sw = 0, wsum = 0;
  for (int64_t i = 0; i < c->bt; i++) {
    if (c->target[i] == c->o.ignore_index) continue;
    n_valid++;
    if (c->o.ce_weight) sw += ((const float *)c->o.ce_weight)[c->target[i]];
  }
  if (c->o.ce_weight)
    for (int64_t v = 0; v < c->vocab; v++) wsum += ((const float *)c->o.ce_weight)[v];
  const bool mean = c->o.reduction == UBG_REDUCE_MEAN;
  c->counted = n_valid;
  c->scale_n = mean ? (float)(1.0 / (double)(n_valid > 0 ? n_valid : 1)) : 1.0f;
  /* torch's formula for any sign of the weights; a sum of exactly 0 over
   * counted rows gives 1/0 = +Inf, as torch's division does (docs/semantics.md) */
  c->scale_w = mean && c->o.ce_weight ? (float)(1.0 / sw) : 1.0f;
  c->weight_sum = (float)wsum;
}

/* n bytes in whole 64-byte lines; none for n == 0 */
static size_t lines(size_t n) { return (n + 63) / 64 * 64; }

size_t rt_ce_rows_scratch(const rt_ce_rows *c, int64_t chunk) {
  const bool none = c->o.reduction == UBG_REDUCE_NONE;
  const size_t rows = (size_t)(chunk > 0 ? chunk : 1);
  return (none ? 0 : lines(rows * 4)) + (none || !c->z_loss ? 0 : lines(rows * 4)) +
         (c->token_accuracy && !c->argmax ? lines(rows * 8) : 0);
}

void rt_ce_rows_begin(rt_ce_rows *c) { reduction_factors(c); }

void rt_ce_rows_place(rt_ce_rows *c, int64_t chunk, void *scratch) {
  const bool none = c->o.reduction == UBG_REDUCE_NONE;
  const size_t rows = (size_t)(chunk > 0 ? chunk : 1);
  char *s = scratch;
  c->loss_rows = c->z_rows = NULL;
  c->argmax_rows = NULL;
  if (!none) c->loss_rows = (float *)s, s += lines(rows * 4);
  if (!none && c->z_loss) c->z_rows = (float *)s, s += lines(rows * 4);
  if (c->token_accuracy && !c->argmax) c->argmax_rows = (int64_t *)s;
}

ubg_status rt_ce_rows_prepare(rt_ce_rows *c, int64_t chunk, size_t *bytes) {
  rt_ce_rows_begin(c);
  const size_t n = rt_ce_rows_scratch(c, chunk);
  if (n && !(c->owned = aligned_alloc(64, n)))
    return rt_fail(c->ctx, UBG_ENOMEM, "%s: out of memory for %zu bytes of per-row scratch", c->fn, n);
  *bytes += n;
  rt_ce_rows_place(c, chunk, c->owned);
  return UBG_OK;
}

ubg_status rt_ce_rows_run(rt_ce_rows *c, float *logits, int64_t off, int64_t rows) {
  const bool none = c->o.reduction == UBG_REDUCE_NONE;
  float *loss = none ? c->loss + off : c->loss_rows;
  float *z = !c->z_loss ? NULL : none ? c->z_loss + off : c->z_rows;
  int64_t *am = c->argmax ? c->argmax + off : c->argmax_rows;
  const float *go = c->o.grad_output;
  ubg_arg a[] = {
      {"logits", UBG_ARG_PTR, {.p = logits}},
      {"target", UBG_ARG_PTR, {.p = (void *)(c->target + off)}},
      {"ce_weight", UBG_ARG_PTR, {.p = (void *)c->o.ce_weight}},
      {"loss", UBG_ARG_PTR, {.p = loss}},
      {"z_loss", UBG_ARG_PTR, {.p = z}},
      {"argmax", UBG_ARG_PTR, {.p = am}},
      {"bt", UBG_ARG_I64, {.i = rows}},
      {"vocab", UBG_ARG_I64, {.i = c->vocab}},
      {"ignore_index", UBG_ARG_I64, {.i = c->o.ignore_index}},
      {"grad", UBG_ARG_I64, {.i = c->grad}},
      {"scale_n", UBG_ARG_F64, {.f = c->scale_n}},
      {"scale_w", UBG_ARG_F64, {.f = c->scale_w}},
      {"weight_sum", UBG_ARG_F64, {.f = c->weight_sum}},
      {"label_smoothing", UBG_ARG_F64, {.f = c->o.label_smoothing}},
      {"lse_square_scale", UBG_ARG_F64, {.f = c->o.lse_square_scale}},
      {"softcap", UBG_ARG_F64, {.f = c->o.softcap}},
      {"row_scale", UBG_ARG_PTR, {.p = go && none ? (void *)(go + off) : NULL}},
      {"grad_scale", UBG_ARG_F64, {.f = go && !none ? go[0] : 1.0f}},
      {"token_scaling", UBG_ARG_I64, {.i = c->o.token_scaling}},
  };
  ubg_status s = rt_launch(c->ctx, c->kernel, c->pass, c->dt, a, sizeof a / sizeof a[0]);
  if (s) return s;
  const char *v = ubg_ctx_last_variant(c->ctx);
  snprintf(c->variant, sizeof c->variant, "%s", v ? v : "?");
  for (int64_t i = 0; i < rows; i++) {
    if (!none) {
      c->loss_sum += loss[i];
      if (z) c->z_sum += z[i];
    }
    if (!c->token_accuracy) continue;
    const int64_t y = c->target[off + i];
    const bool hit = y != c->o.ignore_index && am[i] == y;
    c->hits += hit;
    if (none) c->token_accuracy[off + i] = hit ? 1.0f : 0.0f;
  }
  return UBG_OK;
}

void rt_ce_rows_finish(rt_ce_rows *c) {
  if (c->o.reduction == UBG_REDUCE_NONE) return;
  c->loss[0] = (float)c->loss_sum;
  if (c->z_loss) c->z_loss[0] = (float)c->z_sum;
  /* as Liger: hits / rows not ignored, so 0 / 0 (every row ignored) is NaN */
  if (c->token_accuracy) c->token_accuracy[0] = (float)((double)c->hits / (double)c->counted);
}

void rt_ce_rows_free(rt_ce_rows *c) {
  free(c->owned);
  c->owned = NULL;
  c->loss_rows = c->z_rows = NULL;
  c->argmax_rows = NULL;
}

/* the options' defaults (Liger's), which the CE rows fall back to */
void ubg_flce_opts_init(ubg_flce_opts *o) {
  if (!o) return;
  o->ignore_index = -100;
  o->label_smoothing = 0.0f;
  o->lse_square_scale = 0.0f;
  o->softcap = 0.0f;
  o->reduction = UBG_REDUCE_MEAN;
  o->ce_weight = NULL;
  o->bias = NULL;
  o->grad_output = NULL;
  o->token_scaling = 0;
  o->accum_dtype = UBG_F32;
}

/* One op call, from named arguments to finished programs:
 *
 *   match args to the spec by name -> tensor pointers aligned to their
 *   element size -> validate every value -> size every
 *   tensor (overflow-checked) -> refuse overlaps the spec does not allow ->
 *   choose the variant (forced, else the default strategy) -> get its
 *   function -> workspace and arenas -> run the stages in order.
 *
 * Everything that can fail is checked before the first kernel runs, so a
 * failed call writes nothing. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/bind.h"
#include "../gen/strategy.h"
#include "../gen/tuned.h"
#include "../templates/prelude.h"
#include "internal.h"
#include "../gen/ckd.h"

enum { MAX_DERIVED = 32, MAX_SLOTS = UG_MAX_ARGS + MAX_DERIVED + UG_MAX_BUFFERS, MAX_WHAT = 160 };

typedef struct {
  const ubg_ctx *ctx;
  const ug_pass *p;
  int dtype;
  size_t esize[UG_MAX_ARGS]; /* each tensor argument's element bytes in this dtype */
  char what[MAX_WHAT];       /* "kernel.pass" for messages */
  const rt_bound *bound;     /* a composite's step (sizes at least, types given), or NULL */
  bool unset[UG_MAX_ARGS];   /* bound to a buffer that holds no values yet: its range is not read */
} call;

static ubg_status bad_dtype(const ubg_ctx *ctx, const char *what, ubg_dtype dtype) {
  return rt_fail(ctx, UBG_EINVAL, "%s: dtype %d is not one of UBG_F32, UBG_F16, UBG_BF16", what, (int)dtype);
}

/* a call of p in dtype (a valid one), named `what` in messages */
static void call_init(call *c, const ubg_ctx *ctx, const ug_pass *p, ubg_dtype dtype, const char *what) {
  c->ctx = ctx, c->p = p, c->dtype = (int)dtype, c->bound = NULL;
  for (int ai = 0; ai < p->nargs; ai++) c->esize[ai] = ug_elem_bytes(p->args[ai].elem, (int)dtype), c->unset[ai] = false;
  snprintf(c->what, sizeof c->what, "%s", what);
}

static ubg_status diag_fail(const call *c, ubg_status s, const ug_diag *d) {
  char msg[2200];
  ug_diag_format(d, msg, sizeof msg);
  return rt_fail(c->ctx, s, "%s: %s", c->what, msg);
}

static void arg_names(const ug_pass *p, char *out, size_t n) {
  out[0] = '\0';
  for (int i = 0; i < p->nargs; i++) {
    strncat(out, p->args[i].name, n - strlen(out) - 1);
    if (i + 1 < p->nargs) strncat(out, ", ", n - strlen(out) - 1);
  }
}

static const char *kind_name(ubg_arg_kind k) {
  return k == UBG_ARG_PTR ? "pointer (UBG_ARG_PTR)" : k == UBG_ARG_I64 ? "integer (UBG_ARG_I64)" : "float (UBG_ARG_F64)";
}

static ubg_arg_kind kind_of(const ug_arg *a) {
  return a->kind == UG_ARG_TENSOR ? UBG_ARG_PTR : a->kind == UG_ARG_INT ? UBG_ARG_I64 : UBG_ARG_F64;
}

/* nbytes (may be NULL): the sizes of the caller's buffers in bytes, by
 * argument (negative: not known); into sizes[] by spec slot, -1 unknown.
 * A composite's step (c->bound) gives each tensor's element type too. */
static ubg_status match_args(call *c, const ubg_arg *args, size_t nargs, const int64_t *nbytes, ubg_slot *slots,
                             int64_t *sizes) {
  const ug_pass *p = c->p;
  for (int ai = 0; ai < UG_MAX_ARGS; ai++) sizes[ai] = -1;
  bool given[UG_MAX_ARGS] = {false};
  char names[1024];
  if (nargs && !args) return rt_fail(c->ctx, UBG_EINVAL, "%s: args is NULL but nargs is %zu", c->what, nargs);
  for (size_t i = 0; i < nargs; i++) {
    const ubg_arg *a = &args[i];
    if (!a->name) return rt_fail(c->ctx, UBG_EINVAL, "%s: args[%zu].name is NULL", c->what, i);
    int ai = ug_pass_arg(p, a->name);
    if (ai < 0) {
      arg_names(p, names, sizeof names);
      return rt_fail(c->ctx, UBG_EINVAL, "%s has no argument \"%.64s\" (arguments: %s)", c->what, a->name, names);
    }
    if (given[ai]) return rt_fail(c->ctx, UBG_EINVAL, "%s: argument %s is given twice", c->what, a->name);
    given[ai] = true;
    ubg_arg_kind want = kind_of(&p->args[ai]);
    if ((unsigned)a->kind > UBG_ARG_F64)
      return rt_fail(c->ctx, UBG_EINVAL, "%s: argument %s has kind %d, not a ubg_arg_kind", c->what, a->name, (int)a->kind);
    if (a->kind != want)
      return rt_fail(c->ctx, UBG_EINVAL, "%s: argument %s must be a %s, got a %s", c->what, a->name, kind_name(want),
                     kind_name(a->kind));
    const rt_bound *b = c->bound;
    if (want == UBG_ARG_PTR && b && a->v.p && ug_elem_of(b->elem[i], c->dtype) != ug_elem_of(p->args[ai].elem, c->dtype))
      return rt_fail(c->ctx, UBG_EINVAL, "%s: %s is bound to a tensor of %s; the pass takes %s", c->what, a->name,
                     ug_elem_name(ug_elem_of(b->elem[i], c->dtype)), ug_elem_name(ug_elem_of(p->args[ai].elem, c->dtype)));
    if (want == UBG_ARG_PTR && b && b->unset) c->unset[ai] = b->unset[i];
    if (want == UBG_ARG_PTR) slots[ai].p = a->v.p, sizes[ai] = nbytes ? nbytes[i] : -1;
    else if (want == UBG_ARG_I64) slots[ai].i = a->v.i;
    else slots[ai].f = a->v.f;
  }
  for (int ai = 0; ai < p->nargs; ai++) {
    const ug_arg *a = &p->args[ai];
    if (given[ai]) continue;
    if (a->kind == UG_ARG_TENSOR) {
      slots[ai].p = NULL;
    } else if (a->has_dflt) {
      if (a->kind == UG_ARG_INT) slots[ai].i = (int64_t)a->dflt;
      else slots[ai].f = a->dflt;
    } else {
      return rt_fail(c->ctx, UBG_EINVAL, "%s: argument %s is missing", c->what, a->name);
    }
  }
  return UBG_OK;
}

/* a finite double stays finite as a float, and a nonzero one nonzero (NaN
 * and Inf are what they were; the spec says whether they are allowed) */
static bool survives_float(double v) {
  if (!isfinite(v)) return true;
  float f = (float)v;
  return isfinite(f) && (f != 0.0f || v == 0.0);
}

static ubg_status check_values(const call *c, const ubg_slot *slots, int64_t *env) {
  const ug_pass *p = c->p;
  for (int ai = 0; ai < p->nargs; ai++) {
    const ug_arg *a = &p->args[ai];
    if (a->kind == UG_ARG_TENSOR) {
      if (!slots[ai].p && !a->optional) return rt_fail(c->ctx, UBG_EINVAL, "%s: %s is NULL", c->what, a->name);
      env[p->sym_of_arg[ai]] = slots[ai].p != NULL;
    } else if (a->kind == UG_ARG_INT) {
      int64_t v = slots[ai].i;
      if (a->has_min && v < a->min)
        return rt_fail(c->ctx, UBG_EINVAL, "%s: %s = %lld is below its minimum %lld", c->what, a->name, (long long)v,
                       (long long)a->min);
      if (a->has_max && v > a->max)
        return rt_fail(c->ctx, UBG_EINVAL, "%s: %s = %lld is above its maximum %lld", c->what, a->name, (long long)v,
                       (long long)a->max);
      if (a->nvalues) {
        bool ok = false;
        for (int k = 0; k < a->nvalues; k++) ok |= a->values[k] == v;
        if (!ok) {
          char allowed[512] = "";
          for (int k = 0; k < a->nvalues; k++) {
            size_t l = strlen(allowed);
            snprintf(allowed + l, sizeof allowed - l, "%s%lld%s%s%s", k ? ", " : "", (long long)a->values[k],
                     a->value_names ? " (" : "", a->value_names ? a->value_names[k] : "", a->value_names ? ")" : "");
          }
          return rt_fail(c->ctx, UBG_EINVAL, "%s: %s = %lld is not one of %s", c->what, a->name, (long long)v, allowed);
        }
      }
      env[p->sym_of_arg[ai]] = v;
    } else if (!a->allow_nonfinite && !isfinite(slots[ai].f)) {
      return rt_fail(c->ctx, UBG_EINVAL, "%s: %s = %g is not finite", c->what, a->name, slots[ai].f);
    } else if (a->has_min && !(slots[ai].f >= a->fmin)) {
      return rt_fail(c->ctx, UBG_EINVAL, "%s: %s = %g is below its minimum %g", c->what, a->name, slots[ai].f, a->fmin);
    } else if (a->has_max && !(slots[ai].f <= a->fmax)) {
      return rt_fail(c->ctx, UBG_EINVAL, "%s: %s = %g is above its maximum %g", c->what, a->name, slots[ai].f, a->fmax);
    } else if (!survives_float(slots[ai].f)) {
      /* kernels take float arguments: 1e300 would arrive as inf, 1e-300 as 0 */
      return rt_fail(c->ctx, UBG_EINVAL,
                     "%s: %s = %.17g does not fit a float (a finite value must have a magnitude of at most %g and, "
                     "unless it is 0, at least %g)",
                     c->what, a->name, slots[ai].f, (double)FLT_MAX, (double)FLT_TRUE_MIN);
    }
  }
  for (int i = 0; i < p->nchecks; i++) {
    const ug_rule *r = &p->checks[i];
    int64_t v;
    ug_expr_err err;
    if (ug_expr_eval(r->require, env, &v, &err) < 0)
      return rt_fail(c->ctx, UBG_EINVAL, "%s: check `%s`: %s", c->what, ug_expr_source(r->require), err.msg);
    if (!v) {
      char why[768];
      ug_explain_rule(p, r, env, why, sizeof why);
      return rt_fail(c->ctx, UBG_EINVAL, "%s: %s", c->what, why);
    }
  }
  return UBG_OK;
}

/* Every tensor pointer aligned to its element size: C leaves a load through
 * a misaligned float * or int64_t * undefined (and gcc's vector code may
 * assume it), so such a pointer is refused before anything reads it. Only
 * the element size is asked for: kernels load and store vectors with
 * unaligned moves, and take streaming stores only where the address allows
 * (docs/semantics.md). */
static ubg_status check_alignment(const call *c, const ubg_slot *slots) {
  const ug_pass *p = c->p;
  for (int ai = 0; ai < p->nargs; ai++) {
    const ug_arg *a = &p->args[ai];
    if (a->kind != UG_ARG_TENSOR || !slots[ai].p) continue;
    if ((uintptr_t)slots[ai].p % c->esize[ai])
      return rt_fail(c->ctx, UBG_EINVAL, "%s: %s = %p is not aligned to %zu bytes (the size of its %s elements)",
                     c->what, a->name, slots[ai].p, c->esize[ai], ug_elem_name(ug_elem_of(a->elem, c->dtype)));
  }
  return UBG_OK;
}

/* Byte sizes of every tensor, overflow-checked; bytes[ai] = 0 for NULL.
 * Every dimension is evaluated first, so an overflow names them all (and a
 * zero dimension makes an empty tensor, whatever the others are). */
static ubg_status size_tensors(const call *c, const ubg_slot *slots, const int64_t *env, int64_t *bytes) {
  const ug_pass *p = c->p;
  for (int ai = 0; ai < p->nargs; ai++) {
    const ug_arg *a = &p->args[ai];
    bytes[ai] = 0;
    if (a->kind != UG_ARG_TENSOR || !slots[ai].p) continue;
    int64_t es = (int64_t)c->esize[ai], dims[UG_MAX_RANK], n = es;
    bool empty = false;
    for (int d = 0; d < a->rank; d++) {
      ug_expr_err err;
      if (ug_expr_eval(a->shape[d], env, &dims[d], &err) < 0)
        return rt_fail(c->ctx, UBG_EINVAL, "%s: dimension %d of %s (%s): %s", c->what, d, a->name,
                       ug_expr_source(a->shape[d]), err.msg);
      if (dims[d] < 0)
        return rt_fail(c->ctx, UBG_EINVAL, "%s: dimension %d of %s (%s) is %lld", c->what, d, a->name,
                       ug_expr_source(a->shape[d]), (long long)dims[d]);
      empty |= dims[d] == 0;
    }
    bool overflow = false;
    for (int d = 0; d < a->rank && !empty && !overflow; d++)
      overflow = ug_ckd_mul(&n, n, dims[d]) || n > (int64_t)(PTRDIFF_MAX / 2);
    if (overflow) {
      char names[256] = "", values[256] = "";
      for (int d = 0; d < a->rank; d++) {
        size_t l = strlen(names), k = strlen(values);
        snprintf(names + l, sizeof names - l, "%s%s", d ? " x " : "", ug_expr_source(a->shape[d]));
        snprintf(values + k, sizeof values - k, "%s%lld", d ? " x " : "", (long long)dims[d]);
      }
      return rt_fail(c->ctx, UBG_EINVAL,
                     "%s: %s of %s = %s elements of %lld bytes does not fit in memory (the byte size overflows)",
                     c->what, a->name, names, values, (long long)es);
    }
    bytes[ai] = empty ? 0 : n;
  }
  return UBG_OK;
}

/* a buffer whose size the caller gave must hold the spec's shape exactly;
 * one a composite's step binds, at least (a chunk's rows of a tensor) */
static ubg_status check_sizes(const call *c, const ubg_slot *slots, const int64_t *env, const int64_t *bytes,
                              const int64_t *given) {
  const ug_pass *p = c->p;
  for (int ai = 0; ai < p->nargs; ai++) {
    const ug_arg *a = &p->args[ai];
    if (a->kind != UG_ARG_TENSOR || !slots[ai].p || given[ai] < 0 || given[ai] == bytes[ai] ||
        (c->bound && given[ai] > bytes[ai]))
      continue;
    char shape[256] = "", values[256] = "";
    for (int d = 0; d < a->rank; d++) {
      int64_t v = 0;
      ug_expr_err err;
      ug_expr_eval(a->shape[d], env, &v, &err);
      size_t l = strlen(shape), k = strlen(values);
      snprintf(shape + l, sizeof shape - l, "%s%s", d ? ", " : "", ug_expr_source(a->shape[d]));
      snprintf(values + k, sizeof values - k, "%s%lld", d ? ", " : "", (long long)v);
    }
    return rt_fail(c->ctx, UBG_EINVAL, "%s: %s is a buffer of %lld bytes; its shape [%s] = [%s] of %s needs %lld",
                   c->what, a->name, (long long)given[ai], shape, values,
                   ug_elem_name(ug_elem_of(a->elem, c->dtype)), (long long)bytes[ai]);
  }
  return UBG_OK;
}

static bool may_alias(const ug_arg *a, const char *other) {
  for (int k = 0; k < a->nmay_alias; k++)
    if (!strcmp(a->may_alias[k], other)) return true;
  return false;
}

static ubg_status check_overlaps(const call *c, const ubg_slot *slots, const int64_t *bytes) {
  const ug_pass *p = c->p;
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    if (a->kind != UG_ARG_TENSOR || !bytes[i]) continue;
    for (int j = i + 1; j < p->nargs; j++) {
      const ug_arg *b = &p->args[j];
      if (b->kind != UG_ARG_TENSOR || !bytes[j]) continue;
      if (a->role == UG_ROLE_IN && b->role == UG_ROLE_IN) continue;
      uintptr_t pa = (uintptr_t)slots[i].p, pb = (uintptr_t)slots[j].p;
      bool overlap = pa < pb + (uintptr_t)bytes[j] && pb < pa + (uintptr_t)bytes[i];
      if (!overlap) continue;
      if (pa == pb && bytes[i] == bytes[j] && (may_alias(a, b->name) || may_alias(b, a->name))) continue;
      bool allowed = may_alias(a, b->name) || may_alias(b, a->name);
      return rt_fail(c->ctx, UBG_EINVAL, "%s: %s [%p, +%lld bytes) and %s [%p, +%lld bytes) overlap; %s", c->what,
                     a->name, slots[i].p, (long long)bytes[i], b->name, slots[j].p, (long long)bytes[j],
                     allowed ? "they may be the very same buffer, but not overlap partly" : "they must not overlap");
    }
  }
  return UBG_OK;
}

static int64_t element_at(const void *base, size_t esize, int64_t i) {
  if (esize == 8) return ((const int64_t *)base)[i];
  if (esize == 4) return ((const int32_t *)base)[i];
  return ((const uint8_t *)base)[i];
}

/* Index tensors with a "range": every element in [lo, hi) (or equal to
 * range_except), checked before anything runs so a bad index writes
 * nothing; UBG_ERANGE names the first bad position and its value. */
static ubg_status check_ranges(const call *c, const ubg_slot *slots, const int64_t *env, const int64_t *bytes) {
  const ug_pass *p = c->p;
  for (int ai = 0; ai < p->nargs; ai++) {
    const ug_arg *a = &p->args[ai];
    if (!a->range_lo || !bytes[ai] || c->unset[ai]) continue;
    int64_t lo, hi, except = 0;
    ug_expr_err err;
    if (ug_expr_eval(a->range_lo, env, &lo, &err) < 0 || ug_expr_eval(a->range_hi, env, &hi, &err) < 0 ||
        (a->range_except && ug_expr_eval(a->range_except, env, &except, &err) < 0))
      return rt_fail(c->ctx, UBG_EINVAL, "%s: range of %s: %s", c->what, a->name, err.msg);
    int64_t n = bytes[ai] / (int64_t)c->esize[ai];
    for (int64_t i = 0; i < n; i++) {
      int64_t v = element_at(slots[ai].p, c->esize[ai], i);
      if ((v < lo || v >= hi) && !(a->range_except && v == except)) {
        char exc[96] = "";
        if (a->range_except)
          snprintf(exc, sizeof exc, " and is not %s = %lld", ug_expr_source(a->range_except), (long long)except);
        return rt_fail(c->ctx, UBG_ERANGE, "%s: %s[%lld] = %lld is outside [%s, %s) = [%lld, %lld)%s", c->what, a->name,
                       (long long)i, (long long)v, ug_expr_source(a->range_lo), ug_expr_source(a->range_hi),
                       (long long)lo, (long long)hi, exc);
      }
    }
  }
  return UBG_OK;
}

/* the call's dtype into env, for the checks that name it */
static void set_dtype(const ug_pass *p, ubg_dtype dtype, int64_t *env) {
  if (p->sym_dtype >= 0) env[p->sym_dtype] = (int64_t)dtype;
  if (p->sym_dtype_bytes >= 0) env[p->sym_dtype_bytes] = ug_dtype_bytes((int)dtype);
}

/* every check of a call's arguments against the spec, in order */
static ubg_status check_call(call *c, const ubg_arg *args, size_t nargs, const int64_t *nbytes, ubg_slot *slots,
                             int64_t *env, int64_t *bytes) {
  int64_t given[UG_MAX_ARGS];
  ubg_status s;
  set_dtype(c->p, (ubg_dtype)c->dtype, env);
  if ((s = match_args(c, args, nargs, nbytes, slots, given)) || (s = check_alignment(c, slots)) ||
      (s = check_values(c, slots, env)) || (s = size_tensors(c, slots, env, bytes)) ||
      (s = check_sizes(c, slots, env, bytes, given)) || (s = check_overlaps(c, slots, bytes)) ||
      (s = check_ranges(c, slots, env, bytes)))
    return s;
  return UBG_OK;
}

ubg_status rt_check_args(const ubg_ctx *ctx, const char *what, const ug_pass *p, ubg_dtype dtype, const ubg_arg *args,
                         size_t nargs, const int64_t *nbytes, ubg_slot *slots, int64_t *env, int64_t *bytes) {
  call c;
  if ((unsigned)dtype >= UG_NDTYPES) return bad_dtype(ctx, what, dtype);
  call_init(&c, ctx, p, dtype, what);
  return check_call(&c, args, nargs, nbytes, slots, env, bytes);
}

ubg_status rt_check_values(const ubg_ctx *ctx, const char *what, const ug_pass *p, ubg_dtype dtype,
                           const ubg_slot *slots, int64_t *env, int64_t *bytes) {
  call c;
  if ((unsigned)dtype >= UG_NDTYPES) return bad_dtype(ctx, what, dtype);
  call_init(&c, ctx, p, dtype, what);
  set_dtype(p, dtype, env);
  ubg_status s = check_values(&c, slots, env);
  return s ? s : size_tensors(&c, slots, env, bytes);
}

static ubg_status choose(const call *c, rt_pass *rp, int dtype, int64_t *env, int *index) {
  ubg_ctx *ctx = (ubg_ctx *)c->ctx;
  const ug_pass *p = c->p;
  ug_diag d;
  pthread_mutex_lock(&ctx->lock);
  int forced = rp->forced[dtype];
  pthread_mutex_unlock(&ctx->lock);
  if (forced >= 0) {
    const ug_variant *v = &rp->variants[dtype][forced];
    int failed = -1;
    int b = ug_bind(p, &v->pt, env, &failed, &d);
    if (b < 0) return diag_fail(c, UBG_EINVAL, &d);
    if (b == 1) {
      char why[768];
      ug_explain_rule(p, &p->constraints[failed], env, why, sizeof why);
      return rt_fail(c->ctx, UBG_EINVAL, "%s: the forced variant %s does not apply to this call: %s", c->what, v->name, why);
    }
    *index = forced;
    return UBG_OK;
  }
  ug_choice ch;
  int64_t usable = ug_budget_usable(&ctx->budget, p->kernel);
  if (ctx->tunedb.n) { /* the DB's variant for this bucket, if it fits and applies */
    char why[512];
    int t = ug_tuned_choice(&ctx->tunedb, p, dtype, rp->variants[dtype], rp->nvariants[dtype], env, ctx->budget.ub_bytes,
                            usable, index, why, sizeof why, &d);
    if (t < 0) return diag_fail(c, UBG_EINVAL, &d);
    if (t == 1) return UBG_OK;
  }
  if (ug_default_strategy(p, rp->variants[dtype], rp->nvariants[dtype], env, usable, &ch, &d) < 0)
    return diag_fail(c, UBG_EINVAL, &d);
  if (ch.chosen < 0) return rt_fail(c->ctx, UBG_EUB, "%s: %s", c->what, ch.why);
  *index = ch.chosen;
  return UBG_OK;
}

ubg_status rt_launch(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype, const ubg_arg *args,
                     size_t nargs) {
  return rt_launch_sized(ctx, kernel, pass, dtype, args, nargs, NULL);
}

ubg_status rt_launch_sized(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype, const ubg_arg *args,
                           size_t nargs, const int64_t *nbytes) {
  return rt_launch_bound(ctx, kernel, pass, dtype, args, nargs, nbytes, NULL);
}

ubg_status rt_launch_bound(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype, const ubg_arg *args,
                           size_t nargs, const int64_t *nbytes, const rt_bound *bound) {
  rt_pass *rp;
  ubg_status s = rt_find_pass(ctx, kernel, pass, &rp);
  if (s) return s;
  const ug_pass *p = rp->pass;
  char what[MAX_WHAT];
  snprintf(what, sizeof what, "%s.%s", p->kernel->name, p->name);
  if ((unsigned)dtype >= UG_NDTYPES) return bad_dtype(ctx, what, dtype);
  call c;
  call_init(&c, ctx, p, dtype, what);
  c.bound = bound;
  if (!p->dtypes[dtype]) return rt_fail(ctx, UBG_EINVAL, "%s has no %s variants", c.what, ug_dtype_name((int)dtype));
  if (p->nderived > MAX_DERIVED)
    return rt_fail(ctx, UBG_EINVAL, "%s: more than %d derived values", c.what, MAX_DERIVED);

  ubg_slot slots[MAX_SLOTS];
  int64_t bytes[UG_MAX_ARGS];
  memset(slots, 0, sizeof slots);
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
  if (!env) return rt_fail(ctx, UBG_ENOMEM, "out of memory");
  int index = -1;
  if ((s = check_call(&c, args, nargs, nbytes, slots, env, bytes)) || (bound && bound->check_only) ||
      (s = choose(&c, rp, (int)dtype, env, &index))) {
    free(env);
    return s;
  }
  const ug_variant *v = &rp->variants[dtype][index];
  ubg_kernel_fn fn;
  int ran;
  if ((s = rt_kernel_fn(ctx, rp, (int)dtype, index, &fn, &ran))) {
    free(env);
    return s;
  }
  /* after choose(), env is bound to the variant: derived values are set */
  for (int i = 0; i < p->nderived; i++) slots[p->nargs + i].i = env[p->sym_of_derived_base + i];

  /* workspace buffers, one block, each 64-byte aligned */
  int64_t ws_off[UG_MAX_BUFFERS], ws_total = 0;
  for (int i = 0; i < p->nws; i++) {
    int64_t count, b;
    ug_expr_err err;
    if (ug_expr_eval(p->ws[i].count, env, &count, &err) < 0) {
      free(env);
      return rt_fail(ctx, UBG_EINVAL, "%s: workspace %s (%s): %s", c.what, p->ws[i].name, ug_expr_source(p->ws[i].count),
                     err.msg);
    }
    if (count < 0 || ug_ckd_mul(&b, count, (int64_t)ug_elem_bytes(p->ws[i].elem, (int)dtype)) ||
        b > (int64_t)(PTRDIFF_MAX / 4) || ws_total > (int64_t)(PTRDIFF_MAX / 4)) {
      free(env);
      return rt_fail(ctx, UBG_EINVAL, "%s: workspace %s of %lld elements does not fit in memory", c.what, p->ws[i].name,
                     (long long)count);
    }
    ws_off[i] = ws_total;
    ws_total += (b + 63) / 64 * 64;
  }
  int64_t nitems[UG_MAX_STAGES], most = 0;
  for (int st = 0; st < p->nstages; st++) {
    ug_expr_err err;
    if (ug_expr_eval(p->stages[st].grid, env, &nitems[st], &err) < 0) {
      free(env);
      return rt_fail(ctx, UBG_EINVAL, "%s: grid of stage %s (%s): %s", c.what, p->stages[st].name,
                     ug_expr_source(p->stages[st].grid), err.msg);
    }
    if (nitems[st] > most) most = nitems[st];
  }
  free(env);
  rt_block *ws = NULL;
  if (ws_total > 0 && (s = rt_workspace_take(ctx, (size_t)ws_total, &ws))) return s;
  for (int i = 0; i < p->nws; i++) slots[p->nargs + p->nderived + i].p = ws ? ws->p + ws_off[i] : NULL;

  int nthreads = (int)(most < ctx->threads ? most : ctx->threads);
  if (nthreads < 1) nthreads = 1;
  rt_block *arenas[1024];
  if ((s = rt_arenas_take(ctx, nthreads, arenas))) {
    if (ws) rt_workspace_give(ctx, ws);
    return s;
  }
  for (int st = 0; st < p->nstages; st++) {
    if (nitems[st] <= 0) continue;
    int64_t nprog = nitems[st] < nthreads ? nitems[st] : nthreads;
    rt_grid_run(fn, slots, st, nprog, arenas, (int)nprog);
  }
  rt_arenas_give(ctx, arenas, nthreads);
  if (ws) rt_workspace_give(ctx, ws);
  char last[200];
  snprintf(last, sizeof last, "%s@%s", v->name, rt_backend_name(ran));
  rt_set_last_variant(ctx, last);
  return UBG_OK;
}

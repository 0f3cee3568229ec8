/* A composite op's call, run as its spec's "run" declares it:
 *
 *   check the arguments against the composite's "args" (launch's checks) ->
 *   choose the variant (forced, tuned, else the spec's defaults) -> size
 *   and allocate the scratch -> begin the routines -> every chunk step on
 *   zero rows (each pass picks and compiles its variant, or the call fails
 *   here, before anything is written) -> the "before" steps -> the "chunk"
 *   steps for each chunk of rows -> the "after" steps -> end the routines.
 *
 * A step is a pass of the kernel (launched with its bindings), or a
 * routine of the runtime (routine.h), or, where its "or" axis is not at its
 * first value, the routine that value names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/strbuf.h"
#include "../templates/prelude.h"
#include "routine.h"
#include "../gen/ckd.h"

static _Thread_local size_t last_scratch;
size_t rt_composite_last_scratch_bytes(void) { return last_scratch; }

/* n bytes in whole 64-byte lines */
static size_t lines(size_t n) { return (n + 63) / 64 * 64; }

/* the routine a step runs for the chosen values: its own, the one its "or"
 * names at a value other than the first, or none (a pass); *name for messages */
static const char *step_routine(const ug_composite *comp, const ug_step *st, const int64_t *value, char *name,
                                size_t n) {
  if (st->or_axis >= 0 && value[st->or_axis] != 0) {
    snprintf(name, n, "%s.%s", st->or_routine, comp->axes[st->or_axis].values[value[st->or_axis]]);
    return name;
  }
  if (st->routine) return snprintf(name, n, "%s", st->routine), name;
  return NULL;
}

/* one call in flight */
typedef struct {
  ubg_ctx *ctx;
  const char *what;
  ubg_dtype dtype;
  const ug_kernel *k;
  const ug_composite *comp;
  const ug_pass *call;
  const ug_run *run;
  union ubg_slot slots[UG_MAX_ARGS];
  int64_t bytes[UG_MAX_ARGS];
  int64_t *env;
  int64_t value[8];  /* each axis's value */
  void *scratch[UG_MAX_BUFFERS];
  int64_t scratch_bytes[UG_MAX_BUFFERS];
  size_t scratch_lines[UG_MAX_BUFFERS]; /* what is allocated for each, 0: none */
  void *routine_scratch;
  size_t routine_scratch_bytes;
  /* per step of each phase, flattened: its routine for the chosen values
   * (NULL: a pass), and that routine's state */
  const rt_routine *routine[UG_RUN_PHASES * 32];
  void *state[UG_RUN_PHASES * 32];
} run_call;

static ubg_status eval(const run_call *rc, const ug_expr *e, const char *what, int64_t *out) {
  ug_expr_err err;
  if (ug_expr_eval(e, rc->env, out, &err) < 0)
    return rt_fail(rc->ctx, UBG_EINVAL, "%s: %s (%s): %s", rc->what, what, ug_expr_source(e), err.msg);
  return UBG_OK;
}

/* a tensor reference's pointer, element type and bytes */
static ubg_status tensor(const run_call *rc, const ug_tref *t, void **p, ug_elem *elem, int64_t *nbytes) {
  *p = NULL, *elem = UG_ELEM_F32, *nbytes = 0;
  if (t->scratch >= 0) {
    *p = rc->scratch[t->scratch], *elem = rc->run->scratch[t->scratch].elem;
    *nbytes = *p ? rc->scratch_bytes[t->scratch] : 0;
    return UBG_OK;
  }
  if (t->arg < 0) return UBG_OK;
  const ug_arg *a = &rc->call->args[t->arg];
  *elem = a->elem;
  if (!(*p = rc->slots[t->arg].p)) return UBG_OK;
  *nbytes = rc->bytes[t->arg];
  if (!t->at_off) return UBG_OK;
  /* from row off: the elements of one row are the product of the dimensions after the first */
  int64_t row = (int64_t)ug_elem_bytes(a->elem, (int)rc->dtype), d;
  ubg_status s;
  for (int i = 1; i < a->rank; i++) {
    if ((s = eval(rc, a->shape[i], "a dimension", &d))) return s;
    row *= d;
  }
  const int64_t off = rc->env[rc->run->sym_off] * row;
  *p = (char *)*p + off;
  *nbytes = *nbytes > off ? *nbytes - off : 0;
  return UBG_OK;
}

/* a step's bindings as named arguments; of each tensor, the call's
 * argument it is (or -1) and whether it is scratch */
static ubg_status bind(const run_call *rc, const ug_binding *b, int n, ubg_arg *args, ug_elem *elem, int64_t *nbytes,
                       int *arg, bool *scratch) {
  ubg_status s;
  for (int i = 0; i < n; i++) {
    args[i].name = b[i].param;
    elem[i] = UG_ELEM_F32, nbytes[i] = 0, arg[i] = -1, scratch[i] = false;
    if (b[i].kind == UG_BIND_TENSOR) {
      int64_t pick = 1;
      if (b[i].cond && (s = eval(rc, b[i].cond, "a binding's condition", &pick))) return s;
      args[i].kind = UBG_ARG_PTR;
      const ug_tref *t = pick ? &b[i].then : &b[i].other;
      arg[i] = t->arg, scratch[i] = t->scratch >= 0;
      if ((s = tensor(rc, t, &args[i].v.p, &elem[i], &nbytes[i]))) return s;
    } else if (b[i].kind == UG_BIND_INT) {
      args[i].kind = UBG_ARG_I64;
      if ((s = eval(rc, b[i].value, b[i].param, &args[i].v.i))) return s;
    } else {
      args[i].kind = UBG_ARG_F64;
      args[i].v.f = b[i].float_arg >= 0 ? rc->slots[b[i].float_arg].f : b[i].number;
    }
  }
  return UBG_OK;
}

/* STEP_CHECK: every check of a step's bindings (sizes, element types,
 * roles), nothing run: each chunk's steps are checked before the first
 * writes anything. STEP_CHECK_CALL: a chunk step's routine at the whole
 * call's rows, where it begins and ends: what begin and end read and write. */
typedef enum { STEP_SCRATCH, STEP_BEGIN, STEP_CHECK, STEP_CHECK_CALL, STEP_RUN, STEP_END_OK, STEP_END_FAILED } step_do;

/* a routine writes none of the call's inputs */
static ubg_status check_writes(const run_call *rc, const rt_routine_call *c, const rt_routine *r, const int *arg) {
  for (int i = 0; i < c->nargs; i++)
    if (arg[i] >= 0 && rc->call->args[arg[i]].role == UG_ROLE_IN && r->writes && r->writes(c, c->args[i].name))
      return rt_fail(rc->ctx, UBG_EINVAL, "%s: routine %s would write %s, an input of the call (bound to its %s)",
                     rc->what, r->name, rc->call->args[arg[i]].name, c->args[i].name);
  return UBG_OK;
}

/* one step (index `si` of all steps): bound, then sized, begun, run or ended;
 * *bytes gets a routine's scratch; variant what ran ("-": skipped) */
static ubg_status step(run_call *rc, const ug_step *st, int si, step_do todo, size_t *bytes, char *variant, size_t vn) {
  const rt_routine *r = rc->routine[si];
  if (!r && todo != STEP_RUN && todo != STEP_CHECK) return UBG_OK; /* a pass: nothing to size, begin or end */
  if (r && todo == STEP_CHECK_CALL && !r->begin && !r->end) return UBG_OK;
  if (r && (todo == STEP_BEGIN || todo >= STEP_END_OK) && !(todo == STEP_BEGIN ? r->begin != NULL : r->end != NULL))
    return UBG_OK;
  int64_t on = 1;
  ubg_status s;
  if (st->when && (s = eval(rc, st->when, "a step's \"when\"", &on))) return s;
  if (!on) {
    if (variant) snprintf(variant, vn, "-");
    return UBG_OK;
  }
  const bool alt = st->or_axis >= 0 && rc->value[st->or_axis] != 0;
  const ug_binding *b = alt ? st->or_binds : st->binds;
  const int nb = alt ? st->nor_binds : st->nbinds;
  ubg_arg args[UG_MAX_ARGS];
  ug_elem elem[UG_MAX_ARGS];
  int64_t nbytes[UG_MAX_ARGS];
  int arg[UG_MAX_ARGS];
  bool scratch[UG_MAX_ARGS];
  if ((s = bind(rc, b, nb, args, elem, nbytes, arg, scratch))) return s;
  if (!r) {
    /* before any step ran, scratch holds no values: its index ranges are not read */
    const rt_bound bound = {elem, todo == STEP_CHECK ? scratch : NULL, todo == STEP_CHECK};
    if ((s = rt_launch_bound(rc->ctx, rc->k->name, st->pass, rc->dtype, args, (size_t)nb, nbytes, &bound))) return s;
    if (todo == STEP_CHECK) return UBG_OK;
    const char *v = ubg_ctx_last_variant(rc->ctx);
    if (variant) snprintf(variant, vn, "%s", v ? v : "?");
    return UBG_OK;
  }
  rt_routine_call c = {rc->ctx, rc->what, rc->dtype, rt_omp_threads(rc->ctx->threads), rc->k->name, st->pass, args,
                       elem, nbytes, nb, rc->state[si], rc->routine_scratch, rc->routine_scratch_bytes, ""};
  switch (todo) {
  case STEP_SCRATCH:
    *bytes = r->scratch ? lines(r->scratch(&c)) : 0;
    return UBG_OK;
  case STEP_BEGIN:
    return r->begin(&c);
  case STEP_CHECK:
  case STEP_CHECK_CALL:
    if ((s = check_writes(rc, &c, r, arg))) return s;
    return r->check ? r->check(&c, todo == STEP_CHECK_CALL) : UBG_OK;
  case STEP_RUN:
    if ((s = r->run(&c))) return s;
    if (variant) snprintf(variant, vn, "%s", c.variant);
    return UBG_OK;
  default:
    r->end(&c, todo == STEP_END_OK);
    return UBG_OK;
  }
}

/* every step of phase ph (or all phases with ph = -1); the chunk steps'
 * variants into variants[i] */
static ubg_status steps(run_call *rc, int ph, step_do todo, size_t *most, char (*variants)[160]) {
  int si = 0;
  for (int p = 0; p < UG_RUN_PHASES; p++)
    for (int i = 0; i < rc->run->nsteps[p]; i++, si++) {
      if (ph >= 0 && p != ph) continue;
      size_t b = 0;
      char *v = variants && p == UG_RUN_CHUNK ? variants[i] : NULL;
      ubg_status s = step(rc, &rc->run->steps[p][i], si, todo, &b, v, 160);
      if (s) return s;
      if (b > *most) *most = b;
    }
  return UBG_OK;
}

static void set_rows(run_call *rc, int64_t off, int64_t rows) {
  rc->env[rc->run->sym_off] = off;
  rc->env[rc->run->sym_rows] = rows;
}

/* the "before" steps at the call's rows, the "chunk" steps per chunk of
 * `chunk` rows, the "after" steps: checked or run */
static ubg_status phases(run_call *rc, int64_t total, int64_t chunk, step_do todo, size_t *most,
                         char (*variants)[160]) {
  ubg_status s;
  set_rows(rc, 0, total);
  if ((s = steps(rc, UG_RUN_BEFORE, todo, most, NULL))) return s;
  for (int64_t off = 0; off < total; off += chunk) {
    set_rows(rc, off, total - off < chunk ? total - off : chunk);
    if ((s = steps(rc, UG_RUN_CHUNK, todo, most, variants))) return s;
  }
  set_rows(rc, 0, total);
  return steps(rc, UG_RUN_AFTER, todo, most, NULL);
}

/* a chunk's rows: at most the rows, at least 1 */
static int64_t chunk_rows(int64_t v, int64_t rows) {
  v = v > rows ? rows : v;
  return v < 1 ? 1 : v;
}

int64_t rt_composite_chunk_rows(const ubg_ctx *ctx, const char *kernel, const char *op, ubg_dtype dtype,
                                const int64_t *shape, int64_t rows) {
  rt_comp_choice ch;
  const rt_composite c = {kernel, op};
  if (!ctx || rt_composite_choose(ctx, &c, dtype, shape, &ch) < 0 || ch.overflow[0]) return chunk_rows(rows, rows);
  return chunk_rows(ch.value[0], rows);
}

/* the choice: each axis's value into value[] and env; the chunk's rows at
 * most total, at least 1 */
static ubg_status choose(run_call *rc, const rt_composite *op, int64_t total, rt_comp_choice *ch, char *missing_out,
                         size_t nmissing) {
  const ug_kernel *k = rc->k;
  int64_t shape[UG_TUNE_MAX_SHAPE] = {0};
  for (int i = 0; i < k->nshape && i < UG_TUNE_MAX_SHAPE; i++)
    shape[i] = rc->env[rc->call->sym_of_arg[ug_pass_arg(rc->call, k->shape[i])]];
  if (k->nshape > UG_TUNE_MAX_SHAPE || rt_composite_choose_spec(rc->ctx, k, rc->comp, op, rc->dtype, shape, ch) < 0)
    return rt_fail(rc->ctx, UBG_EINVAL, "%s: no variant chosen for %s.%s", rc->what, k->name, rc->comp->name);
  for (int i = 0; i < rc->comp->naxes; i++) {
    const ug_comp_axis *a = &rc->comp->axes[i];
    int64_t v = ch->overflow[i] ? total : ch->value[i];
    if (i == 0) v = chunk_rows(v, total);
    rc->value[i] = v;
    if (a->values) {
      const char *missing = rt_run_axis_missing(rc->comp, i, v);
      if (missing && missing_out) snprintf(missing_out, nmissing, "%s=%s, but %s", a->name, a->values[v], missing);
      else if (missing) return rt_fail(rc->ctx, UBG_EINVAL, "%s: %s=%s, but %s", rc->what, a->name, a->values[v], missing);
    }
    rc->env[rc->run->sym_axis[i]] = v;
  }
  return UBG_OK;
}

/* the scratch buffers the call has, zeroed where the spec says; *total
 * counts; dry: their sizes only */
static ubg_status allocate(run_call *rc, size_t *total, bool dry) {
  ubg_status s;
  for (int i = 0; i < rc->run->nscratch; i++) {
    const ug_scratch *sc = &rc->run->scratch[i];
    int64_t on = 1, count, b;
    if (sc->when && (s = eval(rc, sc->when, "a scratch buffer's \"when\"", &on))) return s;
    if (!on) continue;
    if ((s = eval(rc, sc->count, "a scratch count", &count))) return s;
    if (count < 0 || ug_ckd_mul(&b, count, (int64_t)ug_elem_bytes(sc->elem, (int)rc->dtype)) ||
        b > (int64_t)(PTRDIFF_MAX / 4))
      return rt_fail(rc->ctx, UBG_EINVAL, "%s: scratch %s of %s = %lld elements does not fit in memory", rc->what,
                     sc->name, ug_expr_source(sc->count), (long long)count);
    const size_t n = lines((size_t)(b > 0 ? b : 1));
    rc->scratch_bytes[i] = b;
    rc->scratch_lines[i] = n;
    *total += n;
    if (dry) continue;
    if (!(rc->scratch[i] = aligned_alloc(64, n)))
      return rt_fail(rc->ctx, UBG_ENOMEM, "%s: out of memory for scratch %s of %zu bytes", rc->what, sc->name, n);
    if (sc->zero) memset(rc->scratch[i], 0, n);
  }
  return UBG_OK;
}

/* each step's routine for the values chosen, once a call; with_state,
 * the states of those that keep one */
static ubg_status resolve(run_call *rc, bool with_state) {
  int si = 0;
  for (int ph = 0; ph < UG_RUN_PHASES; ph++)
    for (int i = 0; i < rc->run->nsteps[ph]; i++, si++) {
      char name[96];
      const char *rn = step_routine(rc->comp, &rc->run->steps[ph][i], rc->value, name, sizeof name);
      const rt_routine *r = rn ? rt_routine_find(rn) : NULL;
      if (rn && !r) return rt_fail(rc->ctx, UBG_EINVAL, "%s: this runtime has no routine %s", rc->what, rn);
      rc->routine[si] = r;
      if (with_state && r && r->state_bytes && !(rc->state[si] = calloc(1, r->state_bytes)))
        return rt_fail(rc->ctx, UBG_ENOMEM, "%s: out of memory", rc->what);
    }
  return UBG_OK;
}

static void release(run_call *rc) {
  for (int i = 0; i < UG_MAX_BUFFERS; i++) free(rc->scratch[i]);
  free(rc->routine_scratch);
  for (int i = 0; i < UG_RUN_PHASES * 32; i++) free(rc->state[i]);
  free(rc->env);
}

/* a call of comp (of kernel k) on ctx begun: its env allocated */
static ubg_status open_spec(run_call *rc, ubg_ctx *ctx, const ug_kernel *k, const ug_composite *comp, const char *what,
                            ubg_dtype dtype) {
  memset(rc, 0, sizeof *rc);
  rc->ctx = ctx, rc->what = what, rc->dtype = dtype;
  rc->k = k, rc->comp = comp;
  char why[400];
  if (rt_run_spec_ok(k, comp, why, sizeof why) < 0) return rt_fail(ctx, UBG_EINVAL, "%s: %s", what, why);
  rc->call = rc->comp->call, rc->run = rc->comp->run;
  if (!(rc->env = calloc((size_t)rc->call->nsyms + 1, sizeof *rc->env)))
    return rt_fail(ctx, UBG_ENOMEM, "%s: out of memory", what);
  return UBG_OK;
}

/* a call of op on ctx begun: its spec found, its env allocated */
static ubg_status open_call(run_call *rc, ubg_ctx *ctx, const rt_composite *op, const char *what, ubg_dtype dtype) {
  char why[400];
  const ug_composite *comp = rt_composite_spec(ctx, op, why, sizeof why); /* checked there, as open_spec checks */
  if (!comp) return memset(rc, 0, sizeof *rc), rt_fail(ctx, UBG_EINVAL, "%s: %s", what, why);
  return open_spec(rc, ctx, rt_find_kernel(ctx, op->kernel), comp, what, dtype);
}

static ubg_status run(run_call *rc, const rt_composite *op, const ubg_arg *args, size_t nargs,
                      const int64_t *nbytes);

ubg_status rt_composite_run(ubg_ctx *ctx, const rt_composite *op, const char *what, ubg_dtype dtype,
                            const ubg_arg *args, size_t nargs, const int64_t *nbytes) {
  last_scratch = 0;
  run_call rc;
  ubg_status s = open_call(&rc, ctx, op, what, dtype);
  if (s) return release(&rc), s;
  return run(&rc, op, args, nargs, nbytes);
}

ubg_status rt_composite_run_spec(ubg_ctx *ctx, const ug_kernel *k, const ug_composite *comp, const char *what,
                                 ubg_dtype dtype, const ubg_arg *args, size_t nargs, const int64_t *nbytes) {
  last_scratch = 0;
  run_call rc;
  const rt_composite op = {k->name, comp->name};
  ubg_status s = open_spec(&rc, ctx, k, comp, what, dtype);
  if (s) return release(&rc), s;
  return run(&rc, &op, args, nargs, nbytes);
}

/* the call rc opened: checked, chosen, run; rc released */
static ubg_status run(run_call *rc, const rt_composite *op, const ubg_arg *args, size_t nargs,
                      const int64_t *nbytes) {
  ubg_ctx *ctx = rc->ctx;
  const char *what = rc->what;
  const ubg_dtype dtype = rc->dtype;
  ubg_status s;
  s = rt_check_args(ctx, what, rc->call, dtype, args, nargs, nbytes, rc->slots, rc->env, rc->bytes);
  int64_t total = 0;
  rt_comp_choice ch;
  size_t bytes = 0, most = 0;
  bool begun = false;
  char variants[32][160];
  if (s || (s = eval(rc, rc->run->rows, "its rows", &total))) goto done;
  if (total < 0) {
    s = rt_fail(ctx, UBG_EINVAL, "%s: its rows (%s) = %lld, below 0", what, ug_expr_source(rc->run->rows), (long long)total);
    goto done;
  }
  if ((s = choose(rc, op, total, &ch, NULL, 0))) goto done;
  const int64_t chunk = rc->value[0];
  /* the routines and their states, and one scratch block for them all, as large as the largest chunk asks */
  if ((s = resolve(rc, true)) || (s = allocate(rc, &bytes, false))) goto done;
  set_rows(rc, 0, chunk);
  if ((s = steps(rc, -1, STEP_SCRATCH, &most, NULL))) goto done;
  rc->routine_scratch_bytes = most;
  if (most && !(rc->routine_scratch = aligned_alloc(64, most))) {
    s = rt_fail(ctx, UBG_ENOMEM, "%s: out of memory for %zu bytes of scratch", what, most);
    goto done;
  }
  last_scratch = bytes + most;
  /* every step of every chunk checked, so that none fails once one has written: the chunk
   * steps' routines at the whole call's rows too (they begin and end there), the chunk
   * steps at no rows (they run so below, to pick and compile their variants) */
  set_rows(rc, 0, total);
  if ((s = steps(rc, UG_RUN_CHUNK, STEP_CHECK_CALL, &most, NULL))) goto done;
  set_rows(rc, 0, 0);
  if ((s = steps(rc, UG_RUN_CHUNK, STEP_CHECK, &most, NULL)) || (s = phases(rc, total, chunk, STEP_CHECK, &most, NULL)))
    goto done;
  if ((s = steps(rc, -1, STEP_BEGIN, &most, NULL))) goto done; /* at the call's rows, where phases left them */
  begun = true;
  /* every chunk step on no rows: each variant picked and compiled before anything is written */
  set_rows(rc, 0, 0);
  if ((s = steps(rc, UG_RUN_CHUNK, STEP_RUN, &most, variants))) goto done;

  /* from here on only steps that are known to run */
  if ((s = phases(rc, total, chunk, STEP_RUN, &most, variants))) goto done;
  ug_buf last = {0};
  for (int i = 0; i < rc->run->nsteps[UG_RUN_CHUNK]; i++) ug_buf_printf(&last, "%s%s", i ? ";" : "", variants[i]);
  for (int i = 0; i < rc->comp->naxes; i++)
    if (!rc->comp->axes[i].values)
      ug_buf_printf(&last, ";%s=%lld (%s)", rc->comp->axes[i].name, (long long)rc->value[i], ch.source[i]);
  rt_set_last_variant(ctx, ug_buf_str(&last));
  ug_buf_free(&last);
done:
  if (begun) steps(rc, -1, s ? STEP_END_FAILED : STEP_END_OK, &most, NULL);
  release(rc);
  return s;
}

ubg_status rt_composite_plan(ubg_ctx *ctx, const rt_composite *op, ubg_dtype dtype, const int64_t *env,
                             rt_comp_plan *plan) {
  memset(plan, 0, sizeof *plan);
  char what[2 * UG_MAX_VARIANT_NAME];
  snprintf(what, sizeof what, "%s.%s", op->kernel, op->pass);
  run_call rc;
  ubg_status s = open_call(&rc, ctx, op, what, dtype);
  if (s) return s;
  memcpy(rc.env, env, (size_t)rc.call->nsyms * sizeof *env);
  /* the tensors only there or not: a stand-in address that nothing reads */
  static const int64_t there[8];
  for (int i = 0; i < rc.call->nargs; i++) {
    const ug_arg *a = &rc.call->args[i];
    if (a->kind == UG_ARG_TENSOR) rc.slots[i].p = env[rc.call->sym_of_arg[i]] ? (void *)there : NULL;
    else if (a->kind == UG_ARG_INT) rc.slots[i].i = env[rc.call->sym_of_arg[i]];
    else rc.slots[i].f = a->has_dflt ? a->dflt : 0.0;
  }
  s = rt_check_values(ctx, what, rc.call, dtype, rc.slots, rc.env, rc.bytes);
  size_t bytes = 0, most = 0;
  if (s || (s = eval(&rc, rc.run->rows, "its rows", &plan->rows)) ||
      (s = choose(&rc, op, plan->rows, &plan->choice, plan->missing, sizeof plan->missing)))
    goto done;
  memcpy(plan->value, rc.value, sizeof plan->value);
  plan->chunks = plan->rows == 0 ? 0 : (plan->rows - 1) / rc.value[0] + 1;
  plan->last = plan->rows - (plan->chunks > 0 ? (plan->chunks - 1) * rc.value[0] : 0);
  if ((s = resolve(&rc, false)) || (s = allocate(&rc, &bytes, true))) goto done;
  for (int i = 0; i < rc.run->nscratch; i++) plan->scratch[i] = (int64_t)rc.scratch_lines[i];
  set_rows(&rc, 0, rc.value[0]);
  if (!plan->missing[0] && (s = steps(&rc, -1, STEP_SCRATCH, &most, NULL))) goto done;
  plan->routine_scratch = (int64_t)most;
  plan->total = (int64_t)(bytes + most);
done:
  release(&rc);
  return s;
}

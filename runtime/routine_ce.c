/* ce_rows: cross entropy over chunks of f32 logits rows, through the pass
 * the step names (ce_rows.h: the mean's denominators over the whole call,
 * the per-row outputs reduced in row order, the token accuracy).
 *
 *   logits [rows, vocab] f32 (a chunk; the gradient over it with grad = 1)
 *   target [bt], ce_weight [vocab] or null, grad_output [1] or [bt] or null
 *   loss, z_loss, token_accuracy [1] (mean, sum) or [bt] (none); argmax [bt]
 *   ints bt, vocab, chunk (the largest rows), off, rows, ignore_index,
 *   reduction, token_scaling, grad; floats label_smoothing,
 *   lse_square_scale, softcap */
#include <stdio.h>
#include <string.h>

#include "ce_rows.h"
#include "routine.h"
#include "../gen/ckd.h"

/* the state from the call's whole-call arguments */
static void fill(const rt_routine_call *c, rt_ce_rows *ce) {
  memset(ce, 0, sizeof *ce);
  ce->ctx = c->ctx;
  ce->fn = c->what;
  ce->kernel = c->kernel;
  ce->pass = c->pass;
  ce->dt = c->dtype;
  ce->bt = rt_routine_i(c, "bt", 0);
  ce->vocab = rt_routine_i(c, "vocab", 1);
  ce->target = rt_routine_p(c, "target");
  ubg_flce_opts o;
  ubg_flce_opts_init(&o);
  o.ce_weight = rt_routine_p(c, "ce_weight");
  o.grad_output = rt_routine_p(c, "grad_output");
  o.ignore_index = rt_routine_i(c, "ignore_index", o.ignore_index);
  o.reduction = (ubg_reduction)rt_routine_i(c, "reduction", (int64_t)o.reduction);
  o.token_scaling = (int)rt_routine_i(c, "token_scaling", o.token_scaling);
  o.label_smoothing = (float)rt_routine_f(c, "label_smoothing", o.label_smoothing);
  o.lse_square_scale = (float)rt_routine_f(c, "lse_square_scale", o.lse_square_scale);
  o.softcap = (float)rt_routine_f(c, "softcap", o.softcap);
  rt_ce_rows_set(ce, &o, rt_routine_p(c, "loss"), rt_routine_p(c, "z_loss"), rt_routine_p(c, "argmax"),
                 rt_routine_p(c, "token_accuracy"));
  ce->grad = rt_routine_i(c, "grad", 1) != 0;
}

/* the call's tensors hold bt rows (target, argmax; the per-row outputs
 * with reduction none) and, but for the whole call's check (begin and end
 * read no logits), the chunk's logits its rows, off + rows <= bt */
static ubg_status ce_check(const rt_routine_call *c, bool call) {
  if (!c->pass)
    return rt_fail(c->ctx, UBG_EINVAL, "%s: a ce_rows step names no \"pass\" (the cross entropy it runs)", c->what);
  const int64_t bt = rt_routine_i(c, "bt", 0), vocab = rt_routine_i(c, "vocab", 1), off = rt_routine_i(c, "off", 0),
                rows = rt_routine_i(c, "rows", 0);
  const int64_t per_call = rt_routine_i(c, "reduction", 0) == UBG_REDUCE_NONE ? bt : 1;
  if (vocab < 1 || bt < 0 || (!call && (off < 0 || rows < 0 || off > bt - rows)))
    return rt_fail(c->ctx, UBG_EINVAL, "%s: routine ce_rows: vocab = %lld, off = %lld, rows = %lld, bt = %lld: "
                   "a chunk's rows [off, off + rows) lie in [0, bt) over vocab >= 1", c->what, (long long)vocab,
                   (long long)off, (long long)rows, (long long)bt);
  int64_t cells;
  if (ug_ckd_mul(&cells, rows, vocab))
    return rt_fail(c->ctx, UBG_EINVAL, "%s: routine ce_rows: rows x vocab overflows", c->what);
  ubg_status s;
  if ((s = rt_routine_need(c, "ce_rows", "target", UG_ELEM_I64, bt, "bt", true)) ||
      (!call && (s = rt_routine_need(c, "ce_rows", "logits", UG_ELEM_F32, cells, "rows x vocab", true))) ||
      (s = rt_routine_need(c, "ce_rows", "ce_weight", UG_ELEM_F32, vocab, "vocab", false)) ||
      (s = rt_routine_need(c, "ce_rows", "grad_output", UG_ELEM_F32, per_call, "its rows", false)) ||
      (s = rt_routine_need(c, "ce_rows", "loss", UG_ELEM_F32, per_call, "its rows", true)) ||
      (s = rt_routine_need(c, "ce_rows", "z_loss", UG_ELEM_F32, per_call, "its rows", false)) ||
      (s = rt_routine_need(c, "ce_rows", "token_accuracy", UG_ELEM_F32, per_call, "its rows", false)) ||
      (s = rt_routine_need(c, "ce_rows", "argmax", UG_ELEM_I64, bt, "bt", false)))
    return s;
  return UBG_OK;
}

static size_t ce_scratch(const rt_routine_call *c) {
  rt_ce_rows ce;
  fill(c, &ce);
  return rt_ce_rows_scratch(&ce, rt_routine_i(c, "chunk", 1));
}

static ubg_status ce_begin(rt_routine_call *c) {
  rt_ce_rows *ce = c->state;
  fill(c, ce);
  rt_ce_rows_begin(ce);
  return UBG_OK;
}

static ubg_status ce_run(rt_routine_call *c) {
  rt_ce_rows *ce = c->state;
  rt_ce_rows_place(ce, rt_routine_i(c, "chunk", 1), c->scratch);
  ubg_status s = rt_ce_rows_run(ce, rt_routine_p(c, "logits"), rt_routine_i(c, "off", 0), rt_routine_i(c, "rows", 0));
  if (!s) snprintf(c->variant, sizeof c->variant, "%s", ce->variant);
  return s;
}

static void ce_end(rt_routine_call *c, bool ok) {
  if (ok) rt_ce_rows_finish(c->state);
}

/* the outputs, and the logits where it turns them into their gradient */
static bool ce_writes(const rt_routine_call *c, const char *name) {
  static const char *const outputs[] = {"loss", "z_loss", "argmax", "token_accuracy", NULL};
  return rt_routine_named(name, outputs) || (!strcmp(name, "logits") && rt_routine_i(c, "grad", 1) != 0);
}

const rt_routine rt_routine_ce_rows = {.name = "ce_rows",
                             .state_bytes = sizeof(rt_ce_rows),
                             .writes = ce_writes,
                             .check = ce_check,
                             .scratch = ce_scratch,
                             .begin = ce_begin,
                             .run = ce_run,
                             .end = ce_end};

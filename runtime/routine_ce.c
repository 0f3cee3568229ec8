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

static size_t ce_scratch(const rt_routine_call *c) {
  rt_ce_rows ce;
  fill(c, &ce);
  return rt_ce_rows_scratch(&ce, rt_routine_i(c, "chunk", 1));
}

static ubg_status ce_begin(rt_routine_call *c) {
  if (!c->pass)
    return rt_fail(c->ctx, UBG_EINVAL, "%s: a ce_rows step names no \"pass\" (the cross entropy it runs)", c->what);
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

const rt_routine rt_routine_ce_rows = {.name = "ce_rows",
                             .state_bytes = sizeof(rt_ce_rows),
                             .scratch = ce_scratch,
                             .begin = ce_begin,
                             .run = ce_run,
                             .end = ce_end};

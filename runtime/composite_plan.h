/* What a composite op's call would do, asked of the runtime: each axis's
 * value and who chose it, the chunks of rows and the scratch (a spec's
 * "composites" entry with a "run", such as flce.chunk). The command line's
 * `ubgen plan` and `ubgen tune` of a composite op ask here, so that their
 * answer is the runtime's own; the rest of the composite machinery stays
 * in internal.h. */
#ifndef UBG_COMPOSITE_PLAN_H
#define UBG_COMPOSITE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "../gen/spec.h"
#include "../gen/tunedb.h"
#include "ctx_view.h"
#include "include/ubgen.h"

enum { RT_COMP_AXES = 8 }; /* the most axes a composite op has */
/* a composite op: its kernel and its name there ("flce", "chunk") */
typedef struct rt_composite {
  const char *kernel, *pass;
} rt_composite;
/* A call's variant of a composite op: each axis's value (an integer axis's
 * number, a named axis's index into its values) and who chose it. */
typedef struct {
  int naxes;
  int64_t value[RT_COMP_AXES];
  bool overflow[RT_COMP_AXES];      /* an integer axis whose default expression overflows here: value unset */
  const char *source[RT_COMP_AXES]; /* "ubg_set_variant", "UBGEN_VARIANT", "tuned", "spec rule" (an integer
                                       axis's default) or "default" (a named axis's) */
  bool forced_axis[RT_COMP_AXES];
  char forced[64];                  /* the name forced on ctx, "" none */
  const ug_tune_entry *entry;       /* ctx's tuning DB entry for the call's bucket and UB budget, or NULL */
  bool entry_whole;                 /* it names a whole variant: entry_value holds it */
  int64_t entry_value[RT_COMP_AXES];
} rt_comp_choice;
/* What rt_composite_run would do for a call: env holds the call's ints
 * and has_<tensor> flags (its spec's symbols, as `ubgen plan` parses
 * --shape), floats at their defaults. */
typedef struct {
  rt_comp_choice choice;      /* who chose each axis's value */
  int64_t value[RT_COMP_AXES]; /* the values it runs (the chunk at most the rows) */
  int64_t rows, chunks, last; /* the rows, the chunks of them and the last one's rows */
  int64_t scratch[UG_MAX_BUFFERS]; /* bytes of each scratch buffer of the spec (0: not allocated), in lines */
  int64_t routine_scratch;    /* bytes of the routines' one block */
  int64_t total;
  char missing[300];          /* a named value this build or CPU lacks, which the call would refuse; "" */
} rt_comp_plan;
UBG_HIDDEN ubg_status rt_composite_plan(ubg_ctx *ctx, const rt_composite *c, ubg_dtype dtype, const int64_t *env,
                                        rt_comp_plan *plan);
/* value v of named axis `axis`: NULL when this build and CPU have it (its
 * routine), else why not; and whether it runs calls of dtype */
UBG_HIDDEN const char *rt_run_axis_missing(const ug_composite *comp, int axis, int64_t v);
UBG_HIDDEN bool rt_run_axis_runs(const ug_composite *comp, int axis, int64_t v, ubg_dtype dtype);
/* a named axis's value where nothing forces or tunes it: its first
 * preferred value that this build and CPU run for dtype, else its first */
UBG_HIDDEN int64_t rt_run_axis_default(const ug_composite *comp, int axis, ubg_dtype dtype);

/* the scratch bytes the last rt_composite_run on this thread allocated */
UBG_HIDDEN size_t rt_composite_last_scratch_bytes(void);

#endif

/* The tuner of spec'd composite ops (a kernel's "composites" with a
 * "run"): `ubgen tune KERNEL.OP`, and the op with its kernel in `ubgen tune
 * KERNEL` and `all`. The candidates are whole calls of the op (ubg_launch
 * by name), each forced by name with ubg_set_variant; the DB entry is
 * (kernel, op, the kernel's shape bucketed, the variant's name). cmd_tune.c
 * walks the dtypes and shapes (--dtype and --shape, else the composite's
 * "tune" section) and names no op. */
#ifndef CLI_TUNE_COMPOSITE_H
#define CLI_TUNE_COMPOSITE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "tune_svg.h"
#include "../gen/tunedb.h"

/* where results go: the table, the DB being built, --json's array */
typedef struct {
  const cli_opts *o;
  FILE *out;
  ug_tunedb *db;
  json_t *json;   /* NULL without --json */
  cli_svg *svg;    /* NULL without --svg */
  int *failures;  /* wrong candidates, counted */
  const char *where; /* the sweep's position, the progress lines' prefix ("[3/8, about 2m left]") */
} cli_tune_sink;

typedef struct {
  int reps; /* rounds without --reps */
  /* one dtype and shape (the kernel's, in its order): 0 ok (a wrong
   * candidate is counted, not an error); -1 could not run */
  int (*tune)(const cli_tune_sink *s, const ug_kernel *k, const ug_composite *c, int dtype, const int64_t *shape,
              int reps);
  /* the least seconds tune takes there on `cores` cores (cli_time_floor);
   * adds its candidates to *ncand */
  double (*floor)(const ug_kernel *k, const ug_composite *c, int dtype, const int64_t *shape, int reps, int cores,
                  int *ncand);
} cli_composite_tuner;
/* the tuner of every composite op with a "run" (tune_composite.c) */
extern const cli_composite_tuner cli_composite_tuner_generic;

#endif

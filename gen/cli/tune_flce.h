/* ubgen tune flce.chunk: ubg_flce's rows per chunk (and its GEMMs: OpenBLAS
 * in f32 in a build with it, AMX tiles in bf16 on a CPU with them) for one
 * dtype and shape. Not a spec'd pass
 * but the runtime's composite op: the candidates are whole ubg_flce calls
 * on one context, each forced by name with ubg_set_variant(ctx, "flce",
 * "chunk", "chunk=N[,gemm=openblas|amx]"). The DB entry is kernel
 * "flce", pass "chunk", shape {bt, hidden, vocab} (bucketed), variant
 * "chunk=N" or "chunk=N,gemm=B" (B openblas or amx); ubg_flce follows it (op_flce.c). */
#ifndef CLI_TUNE_FLCE_H
#define CLI_TUNE_FLCE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "tune_svg.h"
#include "../lib/tunedb.h"

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

/* the shapes `ubgen tune all` and `ubgen tune flce.chunk` use without --shape */
typedef struct {
  int64_t bt, hidden, vocab;
} cli_flce_shape;
extern const cli_flce_shape cli_flce_tune_shapes[];
extern const int cli_flce_ntune_shapes;

/* the least seconds cli_tune_flce_chunk takes at this dtype and shape on
 * `cores` cores (cli_time_floor); adds its candidates to *ncand */
double cli_flce_chunk_floor(const ug_kernel *flce, int dtype, cli_flce_shape sh, int reps, int cores, int *ncand);

/* 0 ok (a wrong candidate is counted, not an error); -1 could not run */
int cli_tune_flce_chunk(const cli_tune_sink *s, const ug_kernel *flce, int dtype, cli_flce_shape sh, int reps);

#endif

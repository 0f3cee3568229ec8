/* The emitter: one .c per variant, a registry and a header, written into a
 * directory (ubgen emit). Everything is rendered in memory first, so bad
 * input writes nothing; each file is written under a temporary name and
 * renamed; unchanged files are left alone (make does not rebuild them); files
 * an earlier emit wrote that are no longer wanted are removed (MANIFEST). */
#ifndef UG_EMIT_H
#define UG_EMIT_H

#include <stdbool.h>

#include "variant.h"

typedef struct {
  const char *out_dir;
  const char *table;    /* registry symbol; "ubg_aot_main" when NULL */
  bool self_register;   /* the table registers itself from a constructor */
  const char *shipped_templates; /* last directory of every template path */
} ug_emit_opts;

typedef struct {
  int written;   /* files (re)written */
  int unchanged; /* files left as they were */
  int removed;   /* stale files removed */
} ug_emit_stats;

/* variants may come from several kernels; kernels lists each once. */
int ug_emit(ug_kernel *const *kernels, int nkernels, const ug_variant *variants, int nvariants,
            const ug_emit_opts *opts, ug_emit_stats *stats, ug_diag *d);

#endif

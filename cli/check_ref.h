/* A kernel's double-precision reference, given as data: the C file its spec
 * names ("reference"), beside the spec, compiled in memory by tcc and kept
 * for the rest of the run (templates/ubgen_ref.h says what such a file is). */
#ifndef CLI_CHECK_REF_H
#define CLI_CHECK_REF_H

#include <stddef.h>

#include "../templates/ubgen_ref.h"
#include "../gen/spec.h"

typedef void (*cli_check_ref_fn)(const ref_slot *args, int dtype, double *const *outs);

/* The reference of pass p: 0 and *fn; 1 when the spec names no reference
 * (msg says how to give one); -1 when it cannot be read or compiled, or
 * does not define the pass's function (msg says which, with file:line). A
 * file is compiled once per process however many passes ask. shipped is
 * the shipped templates directory (where ubgen_ref.h is). */
int cli_check_reference(const ug_pass *p, const char *shipped, cli_check_ref_fn *fn, char *msg, size_t n);
/* frees every compiled reference (their functions are invalid after) */
void cli_check_references_free(void);

#endif

/* The C source of a variant: a header comment naming the variant, its UB
 * layout and footprint and the spec it came from, then the rendered
 * template. Every backend (gcc at build time, tcc and gcc at run time)
 * compiles exactly this text. */
#ifndef UG_SOURCE_H
#define UG_SOURCE_H

#include "render.h"
#include "variant.h"

/* Template search path of a kernel: the spec's directory, a templates/
 * directory beside it, then `shipped` (may be NULL); and the spec's
 * partials. */
typedef struct {
  char dirs[3][4096];
  const char *ptrs[3];
  ug_tmpl_partial partials[UG_MAX_PARTIALS];
  ug_tmpl_path path;
} ug_kernel_path;
void ug_kernel_path_init(ug_kernel_path *kp, const ug_kernel *k, const char *shipped);

/* The values templates see for variant v (docs/templates.md lists them). */
ug_value *ug_variant_values(const ug_variant *v);

/* malloc'd source text, or NULL with d set. */
char *ug_variant_source(const ug_variant *v, const ug_tmpl_path *path, ug_diag *d);

#endif

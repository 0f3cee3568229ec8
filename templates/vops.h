/* The vector operations tcc-compiled kernels call (templates/vops.c). The
 * functions themselves are declared once, in templates/prelude.h, which is
 * what the kernels see; this is the table jit_tcc.c hands to tcc. */
#ifndef UBG_VOPS_H
#define UBG_VOPS_H

typedef struct {
  const char *name;
  const void *fn;
} ubg_vop_symbol;
__attribute__((visibility("hidden"))) extern const ubg_vop_symbol ubg_vop_symbols[];

#endif

/* The tests' registry of double-precision references: the files beside the
 * specs (specs/K_ref.c, see templates/ubgen_ref.h for what they are),
 * compiled into the test binaries by gcc and found by kernel and pass. */
#ifndef UBG_REF_H
#define UBG_REF_H

#include "ubgen_ref.h"

/* outs[i] is a double buffer for output tensor arg i (NULL otherwise). */
typedef void (*ref_fn)(const ref_slot *args, int dtype, double *const *outs);

typedef struct {
  const char *kernel;
  const char *pass;
  ref_fn fn;
} ref_entry;

void ref_register(const ref_entry *e);
const ref_entry *ref_find(const char *kernel, const char *pass);

#define REF_REGISTER(k, p, f)                                                  \
  static const ref_entry ref_entry_##k##_##p = {#k, #p, f};                    \
  __attribute__((constructor)) static void ref_register_##k##_##p(void) {      \
    ref_register(&ref_entry_##k##_##p);                                        \
  }

#endif

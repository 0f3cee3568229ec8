/* A C source compiled in memory by the library's tcc, for callers above
 * the runtime that need to run C given as data (`ubgen check` compiles a
 * kernel's reference with it). Freestanding: nothing is looked up in the
 * host but the symbols the caller hands over. */
#ifndef UBG_TCC_UNIT_H
#define UBG_TCC_UNIT_H

#include <stddef.h>

typedef struct {
  const char *name;
  const void *addr;
} rt_tcc_symbol;

/* Compiles src with #include "..." searched in include_dirs[0, ndirs) and
 * the symbols syms (ending with a NULL name) defined. Returns the compiled
 * unit, or NULL with tcc's messages in err. */
void *rt_tcc_unit_compile(const char *src, const char *const *include_dirs, int ndirs, const rt_tcc_symbol *syms,
                          char *err, size_t nerr);
/* the address of a function or object the unit defines, or NULL */
void *rt_tcc_unit_symbol(void *unit, const char *name);
void rt_tcc_unit_free(void *unit);

#endif

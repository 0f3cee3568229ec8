/* The registry of kernels compiled at build time ("AOT").
 *
 * `ubgen emit` writes a registry source that defines one table: the variant
 * functions it emitted, sorted by name, and the spec texts they came from
 * (so the library needs no spec files to serve its built-in kernels). The
 * library's own table is ubg_aot_main; an extra table (a test-only spec, an
 * application's own kernels: `ubgen emit --self-register`) registers itself
 * from a constructor. Installed beside ubgen.h for applications that build
 * their own kernels (docs/adding-a-kernel.md). */
#ifndef UBGEN_AOT_H
#define UBGEN_AOT_H

#include <stddef.h>

/* The signature of every generated kernel (UBG_KERNEL in prelude.h). */
typedef void (*ubg_kernel_fn)(const void *args, int stage, long long pid, long long nprog, unsigned char *ub);

typedef struct {
  const char *name;
  ubg_kernel_fn fn;
  int spec; /* index into the table's specs */
} ubg_aot_entry;

typedef struct {
  const char *file;            /* spec file name, for messages */
  const char *text;            /* the JSON text */
  unsigned long long hash;     /* FNV-1a of text */
} ubg_aot_spec;

typedef struct ubg_aot_table {
  const char *name;
  const ubg_aot_entry *entries; /* sorted by name (strcmp) */
  size_t nentries;
  const ubg_aot_spec *specs;
  size_t nspecs;
} ubg_aot_table;

extern const ubg_aot_table ubg_aot_main;

/* Adds a table; tables registered later are searched after earlier ones.
 * Exported by libubgen.so (its only export outside ubgen.h). */
__attribute__((visibility("default"))) void ubg_aot_register(const ubg_aot_table *t);

#endif

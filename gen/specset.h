/* A set of loaded specs, one per kernel name, looked up in directory order:
 * --specs directories, then UBGEN_SPEC_PATH, then the shipped specs. A
 * kernel found in an earlier directory hides the same kernel in later ones. */
#ifndef UG_SPECSET_H
#define UG_SPECSET_H

#include "spec.h"

typedef struct {
  ug_kernel **k;
  int n, cap;
} ug_specset;

/* Loads every *.json in dir (sorted by name). A bad spec is an error. */
int ug_specset_add_dir(ug_specset *s, const char *dir, ug_diag *d);
/* Adds every directory of a colon-separated list (empty entries skipped). */
int ug_specset_add_path(ug_specset *s, const char *path, ug_diag *d);
/* Takes k; when its kernel is already in the set, k is freed. */
int ug_specset_add(ug_specset *s, ug_kernel *k, ug_diag *d);
const ug_kernel *ug_specset_find(const ug_specset *s, const char *kernel);
void ug_specset_free(ug_specset *s);

/* Where the shipped specs/ and templates/ are: $UBGEN_DATA_DIR, else
 * <dir of anchor>/../share/ubgen when it exists (an installed tree), else
 * the source tree this was built from. anchor is a path to the running
 * program or library, or NULL. */
const char *ug_data_dir(const char *anchor, char *buf, size_t n);

#endif

/* Files: whole-file reads and atomic writes (temporary name + rename, so a
 * reader never sees a partial file and a failure leaves the old one). */
#ifndef UG_FSUTIL_H
#define UG_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

/* NUL-terminated; *len (when not NULL) excludes the NUL. max_bytes bounds
 * what will be read. */
char *ug_read_file(const char *path, size_t max_bytes, size_t *len, ug_diag *d);
/* ug_read_file for a spec or a template: also refused when the file
 * resolves (through symbolic links) outside the directory that path names
 * it in, so a link there cannot make ubgen read an arbitrary file. */
char *ug_read_file_within(const char *path, size_t max_bytes, size_t *len, ug_diag *d);
/* Writes path atomically with mode 0644 (umask applies). */
int ug_write_atomic(const char *path, const void *data, size_t len, ug_diag *d);
/* true when path holds exactly data */
bool ug_file_equals(const char *path, const void *data, size_t len);
/* mkdir -p, mode 0755 */
int ug_mkdirs(const char *path, ug_diag *d);
/* a directory only this user may enter (a cache): made 0700 when missing,
 * its missing parents as ug_mkdirs makes them; an existing one is left as
 * it is (the caller judges whether it is safe) */
int ug_mkdir_private(const char *path, ug_diag *d);
bool ug_is_dir(const char *path);
bool ug_is_file(const char *path);

#endif

/* Diagnostics: one error, located in a file, the way jansson's json_error_t
 * carries line and column. Every gen function that can fail fills one. */
#ifndef UG_DIAG_H
#define UG_DIAG_H

#include <stddef.h>

typedef struct {
  int line; /* 1-based; 0 when no position is known */
  int col;  /* 1-based */
} ug_loc;

typedef struct {
  char file[512]; /* empty when no file is at fault */
  ug_loc at;
  char text[1536];
} ug_diag;

void ug_diag_clear(ug_diag *d);
/* Sets d (when d is not NULL) and returns -1, so callers can write
 * `return ug_fail(d, file, at, "...", ...)`. */
int ug_fail(ug_diag *d, const char *file, ug_loc at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "file:line:col: text", "file: text" or "text" */
void ug_diag_format(const ug_diag *d, char *out, size_t n);

#endif

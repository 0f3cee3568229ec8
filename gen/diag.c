#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ug_diag_clear(ug_diag *d) {
  if (d) memset(d, 0, sizeof *d);
}

int ug_fail(ug_diag *d, const char *file, ug_loc at, const char *fmt, ...) {
  if (!d) return -1;
  snprintf(d->file, sizeof d->file, "%s", file ? file : "");
  d->at = at;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->text, sizeof d->text, fmt, ap);
  va_end(ap);
  return -1;
}

void ug_diag_format(const ug_diag *d, char *out, size_t n) {
  if (!d->file[0])
    snprintf(out, n, "%s", d->text);
  else if (d->at.line > 0)
    snprintf(out, n, "%s:%d:%d: %s", d->file, d->at.line, d->at.col, d->text);
  else
    snprintf(out, n, "%s: %s", d->file, d->text);
}

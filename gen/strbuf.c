#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(ug_buf *b, size_t extra) {
  if (b->oom) return false;
  if (b->len + extra + 1 <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) {
    if (cap > ((size_t)-1) / 2) { b->oom = true; return false; }
    cap *= 2;
  }
  char *p = realloc(b->p, cap);
  if (!p) { b->oom = true; return false; }
  b->p = p;
  b->cap = cap;
  return true;
}

void ug_buf_put(ug_buf *b, const char *s, size_t n) {
  if (!reserve(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void ug_buf_puts(ug_buf *b, const char *s) { ug_buf_put(b, s, strlen(s)); }

void ug_buf_printf(ug_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) { b->oom = true; return; }
  if (!reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

bool ug_buf_ok(const ug_buf *b) { return !b->oom; }

const char *ug_buf_str(const ug_buf *b) { return b->p ? b->p : ""; }

char *ug_buf_take(ug_buf *b) {
  char *p = b->p;
  if (!p && !b->oom) p = calloc(1, 1);
  if (b->oom) { free(p); p = NULL; }
  b->p = NULL;
  b->len = b->cap = 0;
  b->oom = false;
  return p;
}

void ug_buf_free(ug_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
  b->oom = false;
}

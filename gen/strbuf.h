/* A growable string. Allocation failure is sticky: every later append is a
 * no-op and ug_buf_ok() says so, so callers check once at the end. */
#ifndef UG_STRBUF_H
#define UG_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  char *p; /* always NUL-terminated once anything was appended */
  size_t len;
  size_t cap;
  bool oom;
} ug_buf;

void ug_buf_put(ug_buf *b, const char *s, size_t n);
void ug_buf_puts(ug_buf *b, const char *s);
void ug_buf_printf(ug_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool ug_buf_ok(const ug_buf *b);
const char *ug_buf_str(const ug_buf *b); /* "" when empty */
char *ug_buf_take(ug_buf *b);            /* caller frees; b is reset */
void ug_buf_free(ug_buf *b);

#endif

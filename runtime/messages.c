/* Per-thread, per-context messages: the last failure and the last variant.
 *
 * Each thread keeps a few slots keyed by context id (ids are never reused,
 * so a context created at the address of a destroyed one starts clean).
 * Nothing is allocated, so nothing leaks when threads or contexts come and
 * go; a thread that alternates between more contexts than there are slots
 * loses the oldest messages, which then read as "". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

enum { SLOTS = 8 };

typedef struct {
  uint64_t ctx_id; /* 0: free; 1: ubg_ctx_create's slot */
  uint64_t stamp;
  char error[1024];
  char variant[320];
} slot;

static __thread slot tls_slots[SLOTS];
static __thread uint64_t tls_clock;

static slot *slot_for(uint64_t id, bool create) {
  slot *oldest = &tls_slots[0];
  for (int i = 0; i < SLOTS; i++) {
    if (tls_slots[i].ctx_id == id) {
      tls_slots[i].stamp = ++tls_clock;
      return &tls_slots[i];
    }
    if (tls_slots[i].stamp < oldest->stamp) oldest = &tls_slots[i];
  }
  if (!create) return NULL;
  memset(oldest, 0, sizeof *oldest);
  oldest->ctx_id = id;
  oldest->stamp = ++tls_clock;
  return oldest;
}

static uint64_t id_of(const ubg_ctx *ctx) { return ctx ? ctx->id : 1; }

ubg_status rt_fail(const ubg_ctx *ctx, ubg_status s, const char *fmt, ...) {
  slot *sl = slot_for(id_of(ctx), true);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sl->error, sizeof sl->error, fmt, ap);
  va_end(ap);
  rt_log("%s: %s", ubg_status_str(s), sl->error);
  return s;
}

void rt_set_last_variant(const ubg_ctx *ctx, const char *name) {
  slot *sl = slot_for(id_of(ctx), true);
  snprintf(sl->variant, sizeof sl->variant, "%s", name);
}

const char *ubg_ctx_error(const ubg_ctx *ctx) {
  slot *sl = slot_for(id_of(ctx), false);
  return sl ? sl->error : "";
}

const char *ubg_ctx_last_variant(const ubg_ctx *ctx) {
  slot *sl = slot_for(id_of(ctx), false);
  return sl ? sl->variant : "";
}

const char *ubg_status_str(ubg_status s) {
  switch (s) {
  case UBG_OK: return "UBG_OK";
  case UBG_EINVAL: return "UBG_EINVAL";
  case UBG_ERANGE: return "UBG_ERANGE";
  case UBG_EUB: return "UBG_EUB";
  case UBG_ENOMEM: return "UBG_ENOMEM";
  case UBG_ECOMPILE: return "UBG_ECOMPILE";
  case UBG_ENOTFOUND: return "UBG_ENOTFOUND";
  case UBG_EIO: return "UBG_EIO";
  }
  return "UBG_(unknown status)";
}

/* UBGEN_LOG: unset or 0 = silent; 1 or stderr = standard error; anything
 * else = a file to append to. The library prints nowhere else. */
void rt_log(const char *fmt, ...) {
  const char *dest = getenv("UBGEN_LOG");
  if (!dest || !*dest || !strcmp(dest, "0")) return;
  char line[1400];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n > sizeof line - 2) n = sizeof line - 2;
  line[n++] = '\n';
  line[n] = '\0';
  if (!strcmp(dest, "1") || !strcmp(dest, "stderr")) {
    fprintf(stderr, "ubgen: %s", line);
    return;
  }
  FILE *f = fopen(dest, "ae");
  if (!f) return;
  fprintf(f, "ubgen[%ld]: %s", (long)getpid(), line);
  fclose(f);
}

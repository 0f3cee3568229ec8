/* The tcc backend: a rendered kernel compiled in memory with libtcc.
 *
 * Debian's libtcc (0.9.27+git2020) keeps global state, so every compile
 * holds one process-wide mutex. tcc_relocate takes two arguments there
 * (newer upstream takes one); TCC_RELOCATE_AUTO tells which. The kernel
 * is compiled with -nostdlib: the few libm functions the prelude declares
 * are handed over explicitly, nothing else is looked up in the host. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tcc_unit.h"
#include "../templates/vops.h"

#include <libtcc.h>

const int rt_have_tcc = 1;

/* libubgen.so links a copy of Debian's libtcc.a whose references to
 * glibc's stdout, stderr and environ are renamed to these (the Makefile's
 * libtcc-so.a): PC-relative loads of another object's data cannot be
 * resolved in a shared object, loads of the library's own can. libubgen.a
 * links libtcc.a as it is and leaves these unused. */
UBG_HIDDEN FILE *ubg_tcc_stdout, *ubg_tcc_stderr;
UBG_HIDDEN char **ubg_tcc_environ;
extern char **environ;

__attribute__((constructor)) static void tcc_globals(void) {
  ubg_tcc_stdout = stdout;
  ubg_tcc_stderr = stderr;
  ubg_tcc_environ = environ;
}

static pthread_mutex_t tcc_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
  char text[2048];
  size_t len;
} messages;

/* runs under libtcc's lock: only append */
static void on_error(void *opaque, const char *msg) {
  messages *m = opaque;
  if (m->len + 2 >= sizeof m->text) return;
  int n = snprintf(m->text + m->len, sizeof m->text - m->len, "%s%s", m->len ? "; " : "", msg);
  if (n > 0) m->len += (size_t)n < sizeof m->text - m->len ? (size_t)n : sizeof m->text - m->len - 1;
}

/* the text of line `line` (1-based) of src, for the message */
static void source_line(const char *src, long line, char *out, size_t n) {
  const char *p = src;
  for (long l = 1; l < line && p; l++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p) {
    out[0] = '\0';
    return;
  }
  size_t len = strcspn(p, "\n");
  while (len && (*p == ' ' || *p == '\t')) p++, len--;
  snprintf(out, n, "%.*s", (int)(len < 160 ? len : 160), p);
}

/* the line a message "FILE:LINE: ..." names, read from FILE */
static void template_line(const char *msg, char *out, size_t n) {
  out[0] = '\0';
  const char *colon = strchr(msg, ':');
  char *end;
  long line = colon ? strtol(colon + 1, &end, 10) : 0;
  if (!colon || line < 1 || *end != ':' || colon - msg >= 4096) return;
  char path[4096];
  snprintf(path, sizeof path, "%.*s", (int)(colon - msg), msg);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char buf[4096] = "";
  for (long l = 1; l <= line && fgets(buf, sizeof buf, f); l++)
    if (l == line) source_line(buf, 1, out, n);
  fclose(f);
}

#if defined(TCC_RELOCATE_AUTO)
#define RELOCATE(s) tcc_relocate((s), TCC_RELOCATE_AUTO)
#else
#define RELOCATE(s) tcc_relocate((s))
#endif

/* src compiled in memory and relocated, under tcc_lock: freestanding, with
 * the includes dirs[0, ndirs), the kernels' libm and vector operations when
 * for_kernels, and the symbols syms (NULL-name ended, may be NULL); NULL
 * with m holding tcc's messages when it fails */
static TCCState *compile_locked(const char *src, const char *const *dirs, int ndirs, bool for_kernels,
                                const rt_tcc_symbol *syms, messages *m) {
  TCCState *s = tcc_new();
  if (!s) {
    on_error(m, "cannot create a compiler state");
    return NULL;
  }
  tcc_set_error_func(s, m, on_error);
  tcc_set_options(s, "-nostdinc -nostdlib");
  tcc_set_output_type(s, TCC_OUTPUT_MEMORY);
  for (int i = 0; i < ndirs; i++)
    if (dirs[i] && dirs[i][0]) tcc_add_include_path(s, dirs[i]);
  if (for_kernels) {
    tcc_add_symbol(s, "sqrtf", (const void *)sqrtf);
    tcc_add_symbol(s, "expf", (const void *)expf);
    tcc_add_symbol(s, "logf", (const void *)logf);
    tcc_add_symbol(s, "tanhf", (const void *)tanhf);
    tcc_add_symbol(s, "fmaf", (const void *)fmaf);
    for (const ubg_vop_symbol *v = ubg_vop_symbols; v->name; v++) tcc_add_symbol(s, v->name, v->fn);
  }
  for (const rt_tcc_symbol *y = syms; y && y->name; y++) tcc_add_symbol(s, y->name, y->addr);
  if (tcc_compile_string(s, src) < 0 || RELOCATE(s) < 0) {
    tcc_delete(s);
    return NULL;
  }
  return s;
}

ubg_status rt_tcc_compile(ubg_ctx *ctx, const char *name, const char *src, ubg_kernel_fn *fn, void **state) {
  messages m = {{0}, 0};
  *fn = NULL;
  *state = NULL;
  pthread_mutex_lock(&tcc_lock);
  TCCState *s = compile_locked(src, NULL, 0, true, NULL, &m);
  if (s) {
    *fn = (ubg_kernel_fn)tcc_get_symbol(s, name);
    if (!*fn) {
      on_error(&m, "the kernel function is not defined by the source");
      tcc_delete(s);
      s = NULL;
    }
  }
  *state = s;
  pthread_mutex_unlock(&tcc_lock);
  if (s) return UBG_OK;
  /* tcc says "FILE:LINE: error: ...", FILE the template (the source's
   * #line directives) or "<string>"; show that line */
  char line_text[200] = "";
  const char *colon = strstr(m.text, "<string>:");
  if (colon) source_line(src, strtol(colon + 9, NULL, 10), line_text, sizeof line_text);
  else template_line(m.text, line_text, sizeof line_text);
  return rt_fail(ctx, UBG_ECOMPILE, "tcc could not compile %s: %s%s%s%s", name, m.text[0] ? m.text : "unknown error",
                 line_text[0] ? " (source line: `" : "", line_text, line_text[0] ? "`)" : "");
}

void rt_tcc_free(void *state) {
  if (!state) return;
  pthread_mutex_lock(&tcc_lock);
  tcc_delete(state);
  pthread_mutex_unlock(&tcc_lock);
}

void *rt_tcc_unit_compile(const char *src, const char *const *include_dirs, int ndirs, const rt_tcc_symbol *syms,
                          char *err, size_t nerr) {
  messages m = {{0}, 0};
  pthread_mutex_lock(&tcc_lock);
  TCCState *s = compile_locked(src, include_dirs, ndirs, false, syms, &m);
  pthread_mutex_unlock(&tcc_lock);
  if (!s) snprintf(err, nerr, "%s", m.text[0] ? m.text : "tcc failed");
  return s;
}

void *rt_tcc_unit_symbol(void *unit, const char *name) {
  pthread_mutex_lock(&tcc_lock);
  void *p = tcc_get_symbol(unit, name);
  pthread_mutex_unlock(&tcc_lock);
  return p;
}

void rt_tcc_unit_free(void *unit) { rt_tcc_free(unit); }

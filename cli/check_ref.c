#include "check_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/tcc_unit.h"
#include "../gen/fsutil.h"
#include "../gen/source.h"

enum { MAX_REFS = 64, MAX_REF_BYTES = 4 << 20 };

/* the C library a reference may call: what ubgen_ref.h declares freestanding */
static const rt_tcc_symbol libc[] = {
    {"sqrt", (const void *)sqrt},   {"exp", (const void *)exp},         {"log", (const void *)log},
    {"tanh", (const void *)tanh},   {"erf", (const void *)erf},         {"pow", (const void *)pow},
    {"fabs", (const void *)fabs},   {"floor", (const void *)floor},     {"ceil", (const void *)ceil},
    {"nearbyint", (const void *)nearbyint}, {"copysign", (const void *)copysign}, {"frexp", (const void *)frexp},
    {"ldexp", (const void *)ldexp}, {"expm1", (const void *)expm1},     {"log1p", (const void *)log1p},
    {"malloc", (const void *)malloc}, {"calloc", (const void *)calloc}, {"free", (const void *)free},
    {"abort", (const void *)abort}, {"memcpy", (const void *)memcpy},   {"memset", (const void *)memset},
    {NULL, NULL}};

/* one kernel's compiled reference file (or why it failed: asked once) */
typedef struct {
  const ug_kernel *k;
  void *unit;
  char why[1500];
} compiled;

static compiled refs[MAX_REFS];
static int nrefs;

static compiled *compile(const ug_kernel *k, const char *shipped) {
  for (int i = 0; i < nrefs; i++)
    if (refs[i].k == k) return &refs[i];
  if (nrefs == MAX_REFS) return NULL;
  compiled *c = &refs[nrefs++];
  memset(c, 0, sizeof *c);
  c->k = k;
  ug_kernel_path kp;
  ug_kernel_path_init(&kp, k, shipped);
  char path[4400];
  if (ug_tmpl_find(&kp.path, k->reference_name, path, sizeof path) < 0) {
    snprintf(c->why, sizeof c->why, "%s:%d:%d: the reference \"%s\" is not beside the spec (nor in %s)", k->path,
             k->reference_at.line, k->reference_at.col, k->reference_name,
             kp.path.ndirs > 1 ? "its templates directories" : "the templates directory");
    return c;
  }
  ug_diag d;
  size_t len;
  char *text = ug_read_file_within(path, MAX_REF_BYTES, &len, &d);
  if (!text) {
    ug_diag_format(&d, c->why, sizeof c->why);
    return c;
  }
  /* #line: tcc's messages name the reference file and its lines */
  size_t n = len + strlen(path) + 128;
  char *src = malloc(n);
  if (src) snprintf(src, n, "#define UBGEN_REF_FREESTANDING 1\n#line 1 \"%s\"\n%s", path, text);
  free(text);
  if (!src) {
    snprintf(c->why, sizeof c->why, "out of memory");
    return c;
  }
  char err[1200];
  c->unit = rt_tcc_unit_compile(src, kp.path.dirs, kp.path.ndirs, libc, err, sizeof err);
  free(src);
  if (!c->unit) snprintf(c->why, sizeof c->why, "the reference %s does not compile: %s", path, err);
  return c;
}

int cli_check_reference(const ug_pass *p, const char *shipped, cli_check_ref_fn *fn, char *msg, size_t n) {
  const ug_kernel *k = p->kernel;
  *fn = NULL;
  if (!k->reference_name) {
    snprintf(msg, n,
             "%s names no reference: add \"reference\": \"%s_ref.c\" to it, a C file beside it that defines "
             "UBGEN_REF(%s, %s) (see docs/adding-a-kernel.md)",
             k->path, k->name, k->name, p->name);
    return 1;
  }
  compiled *c = compile(k, shipped);
  if (!c) {
    snprintf(msg, n, "too many references in one run");
    return -1;
  }
  if (!c->unit) {
    snprintf(msg, n, "%s", c->why);
    return -1;
  }
  char name[300];
  snprintf(name, sizeof name, "%s_%s_ref", k->name, p->name);
  void *f = rt_tcc_unit_symbol(c->unit, name);
  if (!f) {
    snprintf(msg, n, "the reference %s defines no %s: write UBGEN_REF(%s, %s) { ... } in it", k->reference_name, name,
             k->name, p->name);
    return -1;
  }
  *fn = (cli_check_ref_fn)f;
  return 0;
}

void cli_check_references_free(void) {
  for (int i = 0; i < nrefs; i++)
    if (refs[i].unit) rt_tcc_unit_free(refs[i].unit);
  nrefs = 0;
}

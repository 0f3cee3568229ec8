#include "source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

void ug_kernel_path_init(ug_kernel_path *kp, const ug_kernel *k, const char *shipped) {
  memset(kp, 0, sizeof *kp);
  int n = 0;
  if (k->dir && k->dir[0]) {
    snprintf(kp->dirs[n++], sizeof kp->dirs[0], "%s", k->dir);
    snprintf(kp->dirs[n++], sizeof kp->dirs[0], "%s/../templates", k->dir);
  }
  if (shipped && shipped[0]) snprintf(kp->dirs[n++], sizeof kp->dirs[0], "%s", shipped);
  for (int i = 0; i < n; i++) kp->ptrs[i] = kp->dirs[i];
  kp->path.dirs = kp->ptrs;
  kp->path.ndirs = n;
  for (int i = 0; i < k->npartials; i++) kp->partials[i] = (ug_tmpl_partial){k->partials[i].name, k->partials[i].file};
  kp->path.partials = kp->partials;
  kp->path.npartials = k->npartials;
}

static int add_buffers(ug_value *list, const ug_buffer *bufs, int n, int dtype, int first_index) {
  for (int i = 0; i < n; i++) {
    ug_value *b = ug_list_push_map(list);
    if (!b || ug_map_ident(b, "name", bufs[i].name) < 0 ||
        ug_map_ident(b, "ctype", ug_elem_ctype(bufs[i].elem, dtype)) < 0 ||
        ug_map_int(b, "index", first_index + i) < 0)
      return -1;
  }
  return 0;
}

ug_value *ug_variant_values(const ug_variant *v) {
  const ug_pass *p = v->pass;
  int dt = v->pt.dtype;
  ug_value *m = ug_map_new();
  if (!m) return NULL;
  int rc = 0;
  rc |= ug_map_ident(m, "variant", v->name);
  rc |= ug_map_ident(m, "kernel", p->kernel->name);
  rc |= ug_map_ident(m, "pass", p->name);
  rc |= ug_map_ident(m, "dtype", ug_dtype_name(dt));
  rc |= ug_map_ident(m, "T", ug_elem_ctype(UG_ELEM_T, dt));
  rc |= ug_map_bool(m, "is_f32", dt == 0);
  rc |= ug_map_bool(m, "is_f16", dt == 1);
  rc |= ug_map_bool(m, "is_bf16", dt == 2);
  rc |= ug_map_int(m, "dtype_bytes", ug_dtype_bytes(dt));
  rc |= ug_map_int(m, "dtype_code", dt); /* 0 f32, 1 f16, 2 bf16: the prelude's vector operations take it */
  rc |= ug_map_int(m, "footprint", v->footprint);
  for (int i = 0; i < p->naxes; i++) rc |= ug_map_int(m, p->axes[i].name, v->pt.axis[i]);
  if (p->has_tiled) rc |= ug_map_bool(m, "tiled", v->pt.tiled > 0);

  ug_value *ub = ug_map_map(m, "ub");
  ug_value *ub_list = ug_map_list(m, "ub_buffers");
  if (!ub || !ub_list) rc = -1;
  for (int i = 0; i < p->nub && !rc; i++) {
    ug_value *b = ug_map_map(ub, p->ub[i].name);
    ug_value *l = ug_list_push_map(ub_list);
    for (int k = 0; k < 2; k++) {
      ug_value *x = k ? l : b;
      if (!x) { rc = -1; break; }
      rc |= ug_map_ident(x, "name", p->ub[i].name);
      rc |= ug_map_ident(x, "ctype", ug_elem_ctype(p->ub[i].elem, dt));
      rc |= ug_map_int(x, "offset", v->ub[i].offset);
      rc |= ug_map_int(x, "count", v->ub[i].count);
      rc |= ug_map_int(x, "bytes", v->ub[i].bytes);
    }
  }

  /* argument slots: args, then derived values, then workspace buffers */
  ug_value *args = ug_map_list(m, "args");
  if (!args) rc = -1;
  for (int i = 0; i < p->nargs && !rc; i++) {
    const ug_arg *a = &p->args[i];
    ug_value *x = ug_list_push_map(args);
    if (!x) { rc = -1; break; }
    rc |= ug_map_ident(x, "name", a->name);
    rc |= ug_map_int(x, "index", i);
    rc |= ug_map_bool(x, "is_tensor", a->kind == UG_ARG_TENSOR);
    rc |= ug_map_bool(x, "is_int", a->kind == UG_ARG_INT);
    rc |= ug_map_bool(x, "is_float", a->kind == UG_ARG_FLOAT);
    rc |= ug_map_bool(x, "is_in", a->kind == UG_ARG_TENSOR && a->role == UG_ROLE_IN);
    rc |= ug_map_bool(x, "is_optional", a->optional);
    if (a->kind == UG_ARG_TENSOR) rc |= ug_map_ident(x, "ctype", ug_elem_ctype(a->elem, dt));
  }
  ug_value *derived = ug_map_list(m, "derived");
  if (!derived) rc = -1;
  for (int i = 0; i < p->nderived && !rc; i++) {
    ug_value *x = ug_list_push_map(derived);
    if (!x) { rc = -1; break; }
    rc |= ug_map_ident(x, "name", p->derived[i].name);
    rc |= ug_map_int(x, "index", p->nargs + i);
  }
  ug_value *ws = ug_map_list(m, "workspace");
  if (!ws || add_buffers(ws, p->ws, p->nws, dt, p->nargs + p->nderived) < 0) rc = -1;
  ug_value *stage = ug_map_map(m, "stage");
  if (!stage) rc = -1;
  for (int i = 0; i < p->nstages && !rc; i++) rc |= ug_map_int(stage, p->stages[i].name, i);
  if (rc) {
    ug_value_free(m);
    return NULL;
  }
  return m;
}

/* File names reach a C comment: keep a safe subset of characters. */
static void safe_name(char *out, size_t n, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t k = 0;
  for (; *base && k + 1 < n; base++) {
    char c = *base;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    out[k++] = ok ? c : '?';
  }
  out[k] = '\0';
}

char *ug_variant_source(const ug_variant *v, const ug_tmpl_path *path, ug_diag *d) {
  const ug_pass *p = v->pass;
  ug_value *vals = ug_variant_values(v);
  if (!vals) {
    ug_fail(d, NULL, (ug_loc){0, 0}, "out of memory");
    return NULL;
  }
  char found[4096];
  if (ug_tmpl_find(path, p->template_name, found, sizeof found) < 0) {
    ug_value_free(vals);
    ug_fail(d, p->kernel->path, p->template_at, "template \"%s\" of pass %s not found on the template path",
            p->template_name, p->name);
    return NULL;
  }
  char *body = ug_render_file_lines(p->template_name, path, vals, d);
  ug_value_free(vals);
  if (!body) return NULL;
  char spec[256], tmpl[256];
  safe_name(spec, sizeof spec, p->kernel->path);
  safe_name(tmpl, sizeof tmpl, p->template_name);
  ug_buf b = {0};
  ug_buf_printf(&b, "/* Generated by ubgen: do not edit.\n * variant   %s\n * spec      %s (kernel %s, pass %s, spec hash %016llx)\n"
                    " * template  %s\n * axes      dtype=%s",
                v->name, spec, p->kernel->name, p->name, (unsigned long long)p->kernel->hash, tmpl,
                ug_dtype_name(v->pt.dtype));
  for (int i = 0; i < p->naxes; i++) ug_buf_printf(&b, " %s=%lld", p->axes[i].name, (long long)v->pt.axis[i]);
  if (p->has_tiled) ug_buf_printf(&b, " tiled=%d", v->pt.tiled);
  ug_buf_printf(&b, "\n * UB layout (footprint %lld bytes, buffers 64-byte aligned):\n", (long long)v->footprint);
  for (int i = 0; i < p->nub; i++)
    ug_buf_printf(&b, " *   %-16s %-5s %9lld elements  offset %7lld  %8lld bytes\n", p->ub[i].name,
                  ug_elem_name(p->ub[i].elem) [0] == 'T' ? ug_dtype_name(v->pt.dtype) : ug_elem_name(p->ub[i].elem),
                  (long long)v->ub[i].count, (long long)v->ub[i].offset, (long long)v->ub[i].bytes);
  ug_buf_puts(&b, " */\n");
  ug_buf_puts(&b, body);
  free(body);
  if (!ug_buf_ok(&b)) {
    ug_buf_free(&b);
    ug_fail(d, NULL, (ug_loc){0, 0}, "out of memory");
    return NULL;
  }
  return ug_buf_take(&b);
}

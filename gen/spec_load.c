/* Spec loader: JSON (jansson) -> validated ug_kernel. The schema is
 * docs/spec-format.md; every rule there is enforced, with the position of
 * the offending key or value. This file: a pass, a kernel, the entry points
 * and freeing; the parts it is built from are listed in spec_load_internal.h. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "spec_load_internal.h"

/* ---- a pass ------------------------------------------------------------------ */

typedef struct {
  json_t *dtypes, *axes, *tiled;
  const ug_jloc *dtypes_at, *axes_at, *tiled_at;
} kernel_defaults;

/* a file beside the spec (template, reference): a plain name, no path */
static int get_file_name(L *l, json_t *f, const ug_jloc *k, const char *what, char **out) {
  const char *tn = json_string_value(f);
  bool safe = tn[0] && tn[0] != '.' && strlen(tn) < 200;
  for (const char *c = tn; *c; c++)
    safe &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-';
  if (!safe) return ug_spec_fail_at(l, k->at, "%s file name \"%s\" may only use letters, digits, '_', '-' and '.' (no paths)", what, tn);
  if (!(*out = strdup(tn))) return ug_spec_fail_at(l, k->at, "out of memory");
  return 0;
}

/* "partials": {"activation": "glu_silu.h"}: the name a template's partial
 * tag uses, and the file beside the spec or among the templates it renders */
static int load_partials(L *l, ug_kernel *kn, json_t *f, const ug_jloc *at) {
  if (ug_spec_want(l, f, at, JSON_OBJECT, "\"partials\"") < 0) return -1;
  if (json_object_size(f) > UG_MAX_PARTIALS)
    return ug_spec_fail_at(l, at->at, "\"partials\" names %zu partials; at most %d", json_object_size(f), UG_MAX_PARTIALS);
  const char *name;
  json_t *v;
  json_object_foreach(f, name, v) {
    ug_loc name_at;
    const ug_jloc *k = ug_jloc_member(at, name, &name_at);
    ug_partial *p = &kn->partials[kn->npartials++];
    if (!ug_is_ident(name)) return ug_spec_fail_at(l, name_at, "partial name \"%s\" is not an identifier", name);
    if (!(p->name = strdup(name))) return ug_spec_fail_at(l, k->at, "out of memory");
    if (ug_spec_want(l, v, k, JSON_STRING, "a partial's file") < 0 || get_file_name(l, v, k, "partial", &p->file) < 0)
      return -1;
    p->at = k->at;
  }
  return 0;
}

static int load_pass(L *l, ug_kernel *kn, ug_pass *p, const char *name, json_t *v, const ug_jloc *at,
                     const kernel_defaults *kd) {
  static const char *const keys[] = {"template", "dtypes", "axes", "tiled", "args", "derived", "constraints", "checks",
                                     "stages", "ub", "workspace", "bitwise", "check", "tune", "description", NULL};
  char what[96];
  snprintf(what, sizeof what, "pass \"%s\"", name);
  p->kernel = kn;
  p->at = at->at;
  p->bitwise = true;
  p->sym_tiled = p->sym_dtype_bytes = p->sym_dtype = -1;
  for (int i = 0; i < UG_MAX_ARGS; i++) p->sym_of_arg[i] = -1;
  for (int i = 0; i < UG_MAX_AXES; i++) p->sym_of_axis[i] = -1;
  p->name = strdup(name);
  if (!p->name) return ug_spec_fail_at(l, at->at, "out of memory");
  if (!ug_is_ident(name)) return ug_spec_fail_at(l, at->at, "pass name \"%s\" is not an identifier", name);
  if (ug_spec_want(l, v, at, JSON_OBJECT, what) < 0 || ug_spec_check_keys(l, v, at, what, keys) < 0) return -1;

  const ug_jloc *k;
  json_t *f = ug_spec_member(v, at, "template", &k);
  if (ug_spec_require(l, f, at, "template", what) < 0 || ug_spec_want(l, f, k, JSON_STRING, "\"template\"") < 0) return -1;
  if (get_file_name(l, f, k, "template", &p->template_name) < 0) return -1;
  p->template_at = k->at;

  f = ug_spec_member(v, at, "dtypes", &k);
  if (!f) { f = kd->dtypes; k = kd->dtypes_at; }
  if (!f) return ug_spec_require(l, NULL, at, "dtypes", what);
  if (ug_spec_load_dtypes(l, f, k, p->dtypes) < 0) return -1;

  const ug_jloc *axes_at;
  json_t *axes = ug_spec_member(v, at, "axes", &axes_at);
  if (!axes) { axes = kd->axes; axes_at = kd->axes_at; }
  if (axes && ug_spec_load_axes(l, axes, axes_at, p) < 0) return -1;

  f = ug_spec_member(v, at, "tiled", &k);
  if (!f) { f = kd->tiled; k = kd->tiled_at; }
  if (f && ug_spec_load_tiled(l, f, k, p) < 0) return -1;

  /* every combination of axis values, tiled and dtype is a candidate that
   * ubgen enumerates and plans (and may render): bounded, so a spec cannot
   * make it run out of memory */
  double points = (double)(p->has_tiled ? p->tiled_values[0] + p->tiled_values[1] : 1);
  for (int i = 0; i < p->naxes; i++) points *= (double)p->axes[i].nvalues;
  int ndt = 0;
  for (int dt = 0; dt < UG_NDTYPES; dt++) ndt += p->dtypes[dt];
  if (points * ndt > UG_MAX_VARIANTS)
    return ug_spec_fail_at(l, axes_at ? axes_at->at : at->at,
                   "pass %s has %.0f variants (axis values x tiled x dtypes); at most %d", p->name, points * ndt,
                   UG_MAX_VARIANTS);

  const ug_jloc *args_at;
  json_t *args = ug_spec_member(v, at, "args", &args_at);
  if (ug_spec_require(l, args, at, "args", what) < 0 || ug_spec_load_args(l, args, args_at, p) < 0) return -1;

  /* the symbol table: axes, tiled, dtype_bytes, int args, has_<tensor> */
  for (int i = 0; i < p->naxes; i++)
    if ((p->sym_of_axis[i] = ug_spec_add_sym(l, p, p->axes[i].name, UG_SYM_AXIS, i, p->axes[i].at)) < 0) return -1;
  if (p->has_tiled && (p->sym_tiled = ug_spec_add_sym(l, p, "tiled", UG_SYM_TILED, 0, at->at)) < 0) return -1;
  if ((p->sym_dtype_bytes = ug_spec_add_sym(l, p, "dtype_bytes", UG_SYM_DTYPE_BYTES, 0, at->at)) < 0) return -1;
  for (int i = 0; i < p->nargs; i++) {
    if (p->args[i].kind == UG_ARG_INT) {
      if ((p->sym_of_arg[i] = ug_spec_add_sym(l, p, p->args[i].name, UG_SYM_INT, i, p->args[i].at)) < 0) return -1;
    } else if (p->args[i].kind == UG_ARG_TENSOR) {
      char hn[80];
      snprintf(hn, sizeof hn, "has_%s", p->args[i].name);
      if ((p->sym_of_arg[i] = ug_spec_add_sym(l, p, hn, UG_SYM_HAS, i, p->args[i].at)) < 0) return -1;
    }
  }
  if (axes && ug_spec_load_axis_exprs(l, axes, axes_at, p) < 0) return -1;
  if (ug_spec_load_arg_shapes(l, args, args_at, p) < 0) return -1;

  for (int s = 0; s < kn->nshape; s++) {
    int ai = ug_pass_arg(p, kn->shape[s]);
    if (ai < 0 || p->args[ai].kind != UG_ARG_INT)
      return ug_spec_fail_at(l, args_at->at, "shape name \"%s\" must be an int arg of %s", kn->shape[s], what);
  }

  const ug_jloc *da;
  json_t *derived = ug_spec_member(v, at, "derived", &da);
  if (derived && ug_spec_load_named_exprs(l, derived, da, p, "a derived value") < 0) return -1;

  f = ug_spec_member(v, at, "constraints", &k);
  if (f && ug_spec_load_rules(l, f, k, p, "constraints", ALLOW_AXES | ALLOW_INTS | ALLOW_HAS | ALLOW_DERIVED, &p->constraints,
                      &p->nconstraints) < 0)
    return -1;
  f = ug_spec_member(v, at, "checks", &k);
  if (f && ug_spec_load_rules(l, f, k, p, "checks", ALLOW_INTS | ALLOW_HAS, &p->checks, &p->nchecks) < 0) return -1;

  f = ug_spec_member(v, at, "stages", &k);
  if (ug_spec_require(l, f, at, "stages", what) < 0 || ug_spec_load_stages(l, f, k, p) < 0) return -1;
  f = ug_spec_member(v, at, "ub", &k);
  if (f && ug_spec_load_buffers(l, f, k, p, "ub", p->ub, &p->nub) < 0) return -1;
  f = ug_spec_member(v, at, "workspace", &k);
  if (f && ug_spec_load_buffers(l, f, k, p, "workspace", p->ws, &p->nws) < 0) return -1;
  f = ug_spec_member(v, at, "bitwise", &k);
  if (f) {
    if (ug_spec_want(l, f, k, JSON_TRUE, "\"bitwise\"") < 0) return -1;
    p->bitwise = json_is_true(f);
  }
  f = ug_spec_member(v, at, "description", &k);
  if (f && ug_spec_want(l, f, k, JSON_STRING, "\"description\"") < 0) return -1;
  f = ug_spec_member(v, at, "check", &k);
  if (f && ug_spec_load_check(l, f, k, p) < 0) return -1;
  f = ug_spec_member(v, at, "tune", &k);
  if (f) { /* "tune": {"cases": [...]}: the shapes `ubgen tune` sweeps when none is given */
    static const char *const tune_keys[] = {"cases", NULL};
    if (ug_spec_want(l, f, k, JSON_OBJECT, "\"tune\"") < 0 || ug_spec_check_keys(l, f, k, "\"tune\"", tune_keys) < 0) return -1;
    const ug_jloc *tat;
    json_t *tc = ug_spec_member(f, k, "cases", &tat);
    if (ug_spec_require(l, tc, k, "cases", "\"tune\"") < 0 || ug_spec_load_cases(l, tc, tat, p, &p->tune_cases, &p->ntune_cases) < 0)
      return -1;
  }

  /* variant names are keys of the registry and the tuning DB: they must fit
   * their buffer whole, never be cut (two cut names could be equal) */
  size_t longest = strlen(kn->name) + 1 + strlen(p->name) + 1 + 4 + (p->has_tiled ? 2 : 0);
  for (int i = 0; i < p->naxes; i++) {
    char digits[32];
    longest += 1 + strlen(p->axes[i].tag) + (size_t)snprintf(digits, sizeof digits, "%lld",
                                                              (long long)p->axes[i].values[p->axes[i].nvalues - 1]);
  }
  if (longest > UG_MAX_VARIANT_NAME)
    return ug_spec_fail_at(l, at->at, "variant names of pass \"%s\" would be up to %zu characters; at most %d (shorten the kernel, pass or axis tags)",
                   name, longest, UG_MAX_VARIANT_NAME);
  for (int i = 0; i < p->naxes; i++) {
    if (p->axes[i].tiles >= 0) continue;
    if (p->has_tiled && i == 0) return ug_spec_fail_at(l, p->axes[0].at, "the first axis must say which int arg it \"tiles\" when the pass has \"tiled\"");
  }
  return 0;
}

/* ---- a kernel --------------------------------------------------------- */

static int load_kernel(L *l, ug_kernel *kn, json_t *root, const ug_jloc *at) {
  static const char *const keys[] = {"ubgen_spec", "kernel", "description", "reference", "partials", "safety_margin",
                                     "shape", "dtypes", "axes", "tiled", "passes", "composites", NULL};
  if (ug_spec_want(l, root, at, JSON_OBJECT, "a spec") < 0 || ug_spec_check_keys(l, root, at, "the spec", keys) < 0) return -1;
  const ug_jloc *k;
  json_t *f = ug_spec_member(root, at, "ubgen_spec", &k);
  int64_t version;
  if (ug_spec_require(l, f, at, "ubgen_spec", "the spec") < 0 || ug_spec_get_int(l, f, k, "\"ubgen_spec\"", INT64_MIN, INT64_MAX, &version) < 0)
    return -1;
  if (version != 1) return ug_spec_fail_at(l, k->at, "\"ubgen_spec\" is %lld; this ubgen reads version 1", (long long)version);
  f = ug_spec_member(root, at, "kernel", &k);
  if (ug_spec_require(l, f, at, "kernel", "the spec") < 0 || ug_spec_get_ident(l, f, k, "the kernel name", &kn->name) < 0) return -1;
  kn->name_at = k->at;
  f = ug_spec_member(root, at, "description", &k);
  if (f) {
    if (ug_spec_want(l, f, k, JSON_STRING, "\"description\"") < 0) return -1;
    if (!(kn->description = strdup(json_string_value(f)))) return ug_spec_fail_at(l, k->at, "out of memory");
  }
  f = ug_spec_member(root, at, "reference", &k);
  if (f) {
    if (ug_spec_want(l, f, k, JSON_STRING, "\"reference\"") < 0 || get_file_name(l, f, k, "reference", &kn->reference_name) < 0)
      return -1;
    kn->reference_at = k->at;
  }
  f = ug_spec_member(root, at, "partials", &k);
  if (f && load_partials(l, kn, f, k) < 0) return -1;
  f = ug_spec_member(root, at, "safety_margin", &k);
  if (f) {
    if (ug_spec_get_number(l, f, k, "\"safety_margin\"", &kn->safety_margin) < 0) return -1;
    if (!(kn->safety_margin > 0 && kn->safety_margin <= 1))
      return ug_spec_fail_at(l, k->at, "\"safety_margin\" is %g, outside (0, 1]", kn->safety_margin);
  }
  f = ug_spec_member(root, at, "shape", &k);
  if (ug_spec_require(l, f, at, "shape", "the spec") < 0 || ug_spec_want(l, f, k, JSON_ARRAY, "\"shape\"") < 0) return -1;
  size_t ns = json_array_size(f);
  if (ns == 0 || ns > 8) return ug_spec_fail_at(l, k->at, "\"shape\" must list 1 to 8 names");
  kn->shape = calloc(ns, sizeof *kn->shape);
  if (!kn->shape) return ug_spec_fail_at(l, k->at, "out of memory");
  for (size_t i = 0; i < ns; i++) {
    if (ug_spec_get_ident(l, json_array_get(f, i), ug_jloc_index(k, i), "a shape name", &kn->shape[i]) < 0) return -1;
    kn->nshape++;
  }
  kernel_defaults kd = {0};
  kd.dtypes = ug_spec_member(root, at, "dtypes", &kd.dtypes_at);
  kd.axes = ug_spec_member(root, at, "axes", &kd.axes_at);
  kd.tiled = ug_spec_member(root, at, "tiled", &kd.tiled_at);

  const ug_jloc *pat;
  json_t *passes = ug_spec_member(root, at, "passes", &pat);
  if (ug_spec_require(l, passes, at, "passes", "the spec") < 0 || ug_spec_want(l, passes, pat, JSON_OBJECT, "\"passes\"") < 0) return -1;
  size_t np = json_object_size(passes);
  if (np == 0 || np > 16) return ug_spec_fail_at(l, pat->at, "\"passes\" must have 1 to 16 passes");
  kn->passes = calloc(np, sizeof *kn->passes);
  if (!kn->passes) return ug_spec_fail_at(l, pat->at, "out of memory");
  const char *key;
  json_t *pv;
  json_object_foreach(passes, key, pv) {
    const ug_jloc *pa = ug_jloc_member(pat, key, NULL);
    ug_pass *p = &kn->passes[kn->npasses++];
    if (load_pass(l, kn, p, key, pv, pa, &kd) < 0) return -1;
  }
  const ug_jloc *cat;
  json_t *comps = ug_spec_member(root, at, "composites", &cat);
  if (comps && ug_spec_load_composites(l, kn, comps, cat) < 0) return -1;
  return 0;
}

ug_kernel *ug_spec_parse(const char *name, const char *dir, const char *text, size_t len, ug_diag *d) {
  ug_diag_clear(d);
  L l = {name, text, d};
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    ug_loc at = {jerr.line > 0 ? jerr.line : 0, jerr.column > 0 ? jerr.column : 1};
    ug_fail(d, name, at, "JSON: %s", jerr.text);
    return NULL;
  }
  ug_kernel *kn = calloc(1, sizeof *kn);
  ug_jloc *loc = ug_jloc_build(text, len);
  if (!kn || !loc) {
    ug_fail(d, name, (ug_loc){0, 0}, "out of memory");
    free(kn);
    ug_jloc_free(loc);
    json_decref(root);
    return NULL;
  }
  kn->path = strdup(name);
  kn->dir = strdup(dir ? dir : "");
  kn->text = malloc(len + 1);
  if (!kn->path || !kn->dir || !kn->text) {
    ug_fail(d, name, (ug_loc){0, 0}, "out of memory");
    goto fail;
  }
  memcpy(kn->text, text, len);
  kn->text[len] = '\0';
  kn->text_len = len;
  kn->hash = ug_fnv1a(text, len);
  if (load_kernel(&l, kn, root, loc) < 0) goto fail;
  ug_jloc_free(loc);
  json_decref(root);
  return kn;
fail:
  ug_jloc_free(loc);
  json_decref(root);
  ug_spec_free(kn);
  return NULL;
}

bool ug_json_is_spec(const char *text, size_t len) {
  json_t *root = json_loadb(text, len, 0, NULL);
  bool spec = !root || !json_is_object(root) || json_object_get(root, "ubgen_spec") || json_object_get(root, "kernel");
  json_decref(root);
  return spec;
}

ug_kernel *ug_spec_load_dir_file(const char *path, bool *skipped, ug_diag *d) {
  ug_diag_clear(d);
  *skipped = false;
  size_t len;
  char *buf = ug_read_file_within(path, 64u << 20, &len, d);
  if (!buf) return NULL;
  *skipped = !ug_json_is_spec(buf, len);
  free(buf);
  return *skipped ? NULL : ug_spec_load_file(path, d);
}

ug_kernel *ug_spec_load_file(const char *path, ug_diag *d) {
  ug_diag_clear(d);
  size_t len;
  char *buf = ug_read_file_within(path, 64u << 20, &len, d);
  if (!buf) return NULL;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  ug_kernel *k = ug_spec_parse(path, dir, buf, len, d);
  free(buf);
  return k;
}

void ug_spec_free(ug_kernel *k) {
  if (!k) return;
  for (int i = 0; i < k->npasses; i++) ug_spec_free_pass(&k->passes[i]);
  ug_spec_free_composites(k);
  free(k->passes);
  for (int i = 0; i < k->nshape; i++) free(k->shape[i]);
  free(k->shape);
  free(k->name);
  free(k->path);
  free(k->dir);
  free(k->text);
  free(k->description);
  free(k->reference_name);
  for (int i = 0; i < k->npartials; i++) {
    free(k->partials[i].name);
    free(k->partials[i].file);
  }
  free(k);
}

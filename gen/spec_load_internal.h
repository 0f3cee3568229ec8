/* The spec loader's own parts (gen/spec_load.c and the files it is split
 * into): nothing outside the loader includes this. ug_spec_ (the library's prefix) names
 * its parts.
 *   spec_json.c      JSON values with their positions: typed getters, errors file:line:col
 *   spec_exprs.c     expressions whose names resolve to a pass's symbols; the symbol table
 *   spec_sections.c  the sections of a pass: dtypes, axes, args, rules, stages, buffers, check; freeing one
 *   spec_composite.c a kernel's composite ops: their axes, defaults and variant names
 *   spec_run.c       a composite's run: scratch, steps and their bindings
 *   spec_load.c      a pass, a kernel, the entry points, freeing
 *   spec_names.c     dtype and element tables, names of a pass (used everywhere) */
#ifndef UG_SPEC_LOAD_INTERNAL_H
#define UG_SPEC_LOAD_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "json_loc.h"
#include "spec.h"

/* the loader's context: the file in messages, its text, where errors go */
typedef struct {
  const char *file;
  const char *text;
  ug_diag *d;
} L;

/* what an expression may name */
enum {
  ALLOW_AXES = 1,   /* axes, tiled, dtype_bytes */
  ALLOW_INTS = 2,
  ALLOW_HAS = 4,
  ALLOW_DERIVED = 8,
};

int ug_spec_fail_at(L *l, ug_loc at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *ug_spec_json_kind(const json_t *v);
int ug_spec_want(L *l, const json_t *v, const ug_jloc *at, json_type t, const char *what);
int ug_spec_check_keys(L *l, json_t *obj, const ug_jloc *loc, const char *what, const char *const *allowed);
json_t *ug_spec_member(json_t *obj, const ug_jloc *loc, const char *key, const ug_jloc **vloc);
int ug_spec_require(L *l, json_t *v, const ug_jloc *loc, const char *key, const char *what);
int ug_spec_get_ident(L *l, json_t *v, const ug_jloc *at, const char *what, char **out);
int ug_spec_get_int(L *l, json_t *v, const ug_jloc *at, const char *what, int64_t lo, int64_t hi, int64_t *out);
int ug_spec_get_number(L *l, json_t *v, const ug_jloc *at, const char *what, double *out);
int ug_spec_resolve(void *ud, const char *name, size_t len, const char **why);
int ug_spec_get_expr(L *l, json_t *v, const ug_jloc *at, const ug_pass *p, int allow, int derived_limit,
                    const char *what, ug_expr **out);
/* src (a part of a JSON string at `at` from character pos0, or -1 when it
 * is not in the text) as an expression; errors point into the string */
int ug_spec_expr_text(L *l, const char *src, const ug_jloc *at, int pos0, const ug_pass *p, int allow,
                      int derived_limit, const char *what, ug_expr **out);
bool ug_spec_expr_variant_only(const ug_pass *p, const ug_expr *e);
bool ug_spec_name_taken(const ug_pass *p, const char *name);
int ug_spec_add_sym(L *l, ug_pass *p, const char *name, ug_symkind kind, int ref, ug_loc at);
int ug_spec_load_dtypes(L *l, json_t *v, const ug_jloc *at, bool out[UG_NDTYPES]);
int ug_spec_load_tiled(L *l, json_t *v, const ug_jloc *at, ug_pass *p);
int ug_spec_load_axes(L *l, json_t *v, const ug_jloc *at, ug_pass *p);
int ug_spec_load_axis_exprs(L *l, json_t *v, const ug_jloc *at, ug_pass *p);
int ug_spec_parse_elem(L *l, json_t *v, const ug_jloc *at, bool scalars_ok, ug_elem *elem, ug_argkind *kind);
int ug_spec_load_args(L *l, json_t *v, const ug_jloc *at, ug_pass *p);
int ug_spec_load_arg_shapes(L *l, json_t *v, const ug_jloc *at, ug_pass *p);
int ug_spec_load_named_exprs(L *l, json_t *v, const ug_jloc *at, ug_pass *p, const char *what);
int ug_spec_load_rules(L *l, json_t *v, const ug_jloc *at, ug_pass *p, const char *key, int allow, ug_rule **out, int *nout);
int ug_spec_load_stages(L *l, json_t *v, const ug_jloc *at, ug_pass *p);
int ug_spec_load_buffers(L *l, json_t *v, const ug_jloc *at, ug_pass *p, const char *key, ug_buffer *bufs, int *nbufs);
int ug_spec_load_cases(L *l, json_t *cases, const ug_jloc *cat, ug_pass *p, ug_case **out, int *nout);
int ug_spec_load_composites(L *l, ug_kernel *k, json_t *v, const ug_jloc *at);
void ug_spec_free_composites(ug_kernel *k);
void ug_spec_free_pass(ug_pass *p); /* what it owns, not p */
/* "run" of composite c (after its "args"): 0, or -1 with the error in l */
int ug_spec_load_run(L *l, const ug_kernel *k, ug_composite *c, json_t *v, const ug_jloc *at);
void ug_spec_free_run(ug_run *r);
int ug_spec_load_check(L *l, json_t *v, const ug_jloc *at, ug_pass *p);

#endif

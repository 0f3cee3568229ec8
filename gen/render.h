/* The template renderer (docs/templates.md).
 *
 * Templates are plain C with tags:
 *   {{name}} {{a.b}}       a value: integer, boolean (0/1) or identifier
 *   {{#name}}..{{/name}}   section: if true / non-zero; once per list item
 *                          (the item's fields come into scope); into a map
 *   {{^name}}..{{/name}}   inverted section: if false / zero / empty
 *   {{= expr}}             an integer expression (expr.h) over values in scope
 *   {{> file}}             a partial, rendered in the current scope
 *   {{! text}}             a comment, dropped
 * A line holding only a section, close, comment or partial tag (and blanks)
 * disappears from the output entirely.
 *
 * What can reach the C text is limited by construction: the value tree only
 * holds integers, booleans and strings checked to be identifiers, and
 * template text comes from files in the template search path. A name that is
 * not in scope is an error, never an empty string. */
#ifndef UG_RENDER_H
#define UG_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"

typedef enum { UG_V_INT, UG_V_BOOL, UG_V_IDENT, UG_V_LIST, UG_V_MAP } ug_vkind;

typedef struct ug_value ug_value;
struct ug_value {
  ug_vkind kind;
  int64_t i;        /* INT, BOOL */
  char *s;          /* IDENT */
  int n, cap;       /* LIST, MAP */
  char **keys;      /* MAP */
  ug_value **items; /* LIST, MAP */
};

ug_value *ug_map_new(void);
void ug_value_free(ug_value *v);
/* Setters return 0, or -1 when out of memory or (ident) the string is not an
 * identifier. A key set twice keeps the last value. */
int ug_map_int(ug_value *m, const char *key, int64_t v);
int ug_map_bool(ug_value *m, const char *key, bool v);
int ug_map_ident(ug_value *m, const char *key, const char *s);
ug_value *ug_map_list(ug_value *m, const char *key); /* a new empty list */
ug_value *ug_map_map(ug_value *m, const char *key);  /* a new empty map */
ug_value *ug_list_push_map(ug_value *list);          /* a new map at the end */

/* A name a spec gives a partial ("partials"): {{> name}} renders the file,
 * so templates shared by several kernels take what differs from the spec. */
typedef struct {
  const char *name;
  const char *file;
} ug_tmpl_partial;

typedef struct {
  const char *const *dirs; /* searched in order for templates and partials */
  int ndirs;
  const ug_tmpl_partial *partials; /* looked up first by the name asked for; may be NULL */
  int npartials;
} ug_tmpl_path;

/* Renders the template file `name` found on the path; malloc'd result. */
char *ug_render_file(const char *name, const ug_tmpl_path *path, const ug_value *ctx, ug_diag *d);
/* The same with `#line N "file"` wherever the output moves to another line
 * of a template or partial than the one that follows, so a C compiler's
 * messages name the template's lines: what generated sources are. */
char *ug_render_file_lines(const char *name, const ug_tmpl_path *path, const ug_value *ctx, ug_diag *d);
/* Renders text; `name` is used in messages and partials use path. */
char *ug_render_text(const char *name, const char *text, const ug_tmpl_path *path, const ug_value *ctx, ug_diag *d);

/* The full path of template `name` (or of the file a partial of the path
 * names so) on the search path, or -1. */
int ug_tmpl_find(const ug_tmpl_path *path, const char *name, char *out, size_t n);

#endif

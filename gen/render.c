#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "fsutil.h"
#include "spec.h"
#include "strbuf.h"

/* A template file's text. A NUL byte in it is an error at its place: the
 * renderer works on C strings, and would otherwise drop the rest of the
 * file without a word. */
static char *read_template(const char *path, ug_diag *d) {
  size_t len;
  char *text = ug_read_file_within(path, 4u << 20, &len, d);
  const char *nul = text ? memchr(text, '\0', len) : NULL;
  if (!nul) return text;
  ug_loc at = {1, 1};
  for (const char *q = text; q < nul; q++) {
    if (*q == '\n') at.line++, at.col = 1;
    else at.col++;
  }
  free(text);
  ug_fail(d, path, at, "a NUL byte in a template");
  return NULL;
}

/* ---- values ------------------------------------------------------------- */

static ug_value *value_new(ug_vkind kind) {
  ug_value *v = calloc(1, sizeof *v);
  if (v) v->kind = kind;
  return v;
}

ug_value *ug_map_new(void) { return value_new(UG_V_MAP); }

void ug_value_free(ug_value *v) {
  if (!v) return;
  for (int k = 0; k < v->n; k++) {
    ug_value_free(v->items[k]);
    if (v->keys) free(v->keys[k]);
  }
  free(v->items);
  free(v->keys);
  free(v->s);
  free(v);
}

static int push(ug_value *c, const char *key, ug_value *item) {
  if (!item) return -1;
  if (key) {
    for (int k = 0; k < c->n; k++) {
      if (strcmp(c->keys[k], key) == 0) {
        ug_value_free(c->items[k]);
        c->items[k] = item;
        return 0;
      }
    }
  }
  if (c->n == c->cap) {
    int cap = c->cap ? c->cap * 2 : 8;
    ug_value **items = realloc(c->items, (size_t)cap * sizeof *items);
    if (!items) goto oom;
    c->items = items;
    if (c->kind == UG_V_MAP) {
      char **keys = realloc(c->keys, (size_t)cap * sizeof *keys);
      if (!keys) goto oom;
      c->keys = keys;
    }
    c->cap = cap;
  }
  if (key && !(c->keys[c->n] = strdup(key))) goto oom;
  c->items[c->n++] = item;
  return 0;
oom:
  ug_value_free(item);
  return -1;
}

int ug_map_int(ug_value *m, const char *key, int64_t v) {
  ug_value *x = value_new(UG_V_INT);
  if (x) x->i = v;
  return push(m, key, x);
}

int ug_map_bool(ug_value *m, const char *key, bool v) {
  ug_value *x = value_new(UG_V_BOOL);
  if (x) x->i = v;
  return push(m, key, x);
}

int ug_map_ident(ug_value *m, const char *key, const char *s) {
  if (!ug_is_ident(s)) return -1;
  ug_value *x = value_new(UG_V_IDENT);
  if (x && !(x->s = strdup(s))) {
    free(x);
    x = NULL;
  }
  return push(m, key, x);
}

ug_value *ug_map_list(ug_value *m, const char *key) {
  ug_value *x = value_new(UG_V_LIST);
  return push(m, key, x) == 0 ? x : NULL;
}

ug_value *ug_map_map(ug_value *m, const char *key) {
  ug_value *x = value_new(UG_V_MAP);
  return push(m, key, x) == 0 ? x : NULL;
}

ug_value *ug_list_push_map(ug_value *list) {
  ug_value *x = value_new(UG_V_MAP);
  return push(list, NULL, x) == 0 ? x : NULL;
}

static const ug_value *map_get(const ug_value *m, const char *key, size_t len) {
  if (!m || m->kind != UG_V_MAP) return NULL;
  for (int k = 0; k < m->n; k++)
    if (strlen(m->keys[k]) == len && strncmp(m->keys[k], key, len) == 0) return m->items[k];
  return NULL;
}

/* ---- templates ------------------------------------------------------------ */

enum { MAX_DEPTH = 16, MAX_SCOPES = 64, MAX_SECTIONS = 64 };

typedef struct {
  const ug_tmpl_path *path;
  ug_diag *d;
  ug_buf out;
  const ug_value *scopes[MAX_SCOPES];
  int nscopes;
  int depth;    /* partials being rendered */
  int sections; /* sections open, including the skimmed ones */
  bool lines;   /* #line directives, so a compiler's messages name the template's lines */
  char line_file[4096]; /* where the next output line comes from when it follows on: file, */
  int line_next;        /* and line (0: nowhere yet) */
} renderer;

typedef struct {
  const char *name; /* file, for messages */
  const char *text;
  const char **seen_at; /* the line of *seen_at is *seen_line: lines are counted from there */
  int *seen_line;
} source;

/* the 1-based line of p in src: counted on from the last one asked for,
 * from the start when p lies before it (a section's body again) */
static int line_of(const source *src, const char *p) {
  if (*src->seen_at > p) *src->seen_at = src->text, *src->seen_line = 1;
  for (const char *c = *src->seen_at; c < p; c++) *src->seen_line += *c == '\n';
  *src->seen_at = p;
  return *src->seen_line;
}

/* the text [p, end) of src, after a #line directive when the output starts
 * a line that does not follow on from the one before in the same file */
static void emit_text(renderer *r, const source *src, const char *p, const char *end) {
  if (p == end) return;
  if (r->lines) {
    const int line = line_of(src, p);
    const bool line_start = r->out.len == 0 || r->out.p[r->out.len - 1] == '\n';
    if (line_start && (r->line_next != line || strcmp(r->line_file, src->name) != 0)) {
      ug_buf_printf(&r->out, "#line %d \"", line);
      for (const char *c = src->name; *c; c++) {
        if (*c == '"' || *c == '\\') ug_buf_put(&r->out, "\\", 1);
        ug_buf_put(&r->out, c, 1);
      }
      ug_buf_puts(&r->out, "\"\n");
    }
    if (end[-1] == '\n') {
      int k = 0;
      for (const char *c = p; c < end; c++) k += *c == '\n';
      snprintf(r->line_file, sizeof r->line_file, "%s", src->name);
      r->line_next = line + k;
    }
  }
  ug_buf_put(&r->out, p, (size_t)(end - p));
}

static ug_loc loc_of(const source *src, const char *p) {
  ug_loc at = {1, 1};
  for (const char *c = src->text; c < p; c++) {
    if (*c == '\n') {
      at.line++;
      at.col = 1;
    } else {
      at.col++;
    }
  }
  return at;
}

int ug_tmpl_find(const ug_tmpl_path *path, const char *name, char *out, size_t n) {
  /* names come from validated specs or template tags: no directories */
  for (int i = 0; i < path->npartials; i++)
    if (strcmp(name, path->partials[i].name) == 0) {
      name = path->partials[i].file;
      break;
    }
  if (!name[0] || name[0] == '.' || strchr(name, '/')) return -1;
  for (int i = 0; i < path->ndirs; i++) {
    if (!path->dirs[i] || !path->dirs[i][0]) continue;
    if (snprintf(out, n, "%s/%s", path->dirs[i], name) >= (int)n) continue;
    if (ug_is_file(out)) return 0;
  }
  return -1;
}

/* Resolves a dotted path against the scopes, innermost first. */
static const ug_value *lookup(renderer *r, const char *p, size_t len) {
  const char *dot = memchr(p, '.', len);
  size_t first = dot ? (size_t)(dot - p) : len;
  const ug_value *v = NULL;
  for (int s = r->nscopes - 1; s >= 0 && !v; s--) v = map_get(r->scopes[s], p, first);
  while (v && dot) {
    const char *rest = dot + 1;
    size_t rlen = len - (size_t)(rest - p);
    dot = memchr(rest, '.', rlen);
    size_t seg = dot ? (size_t)(dot - rest) : rlen;
    v = map_get(v, rest, seg);
  }
  return v;
}

static bool valid_path(const char *p, size_t len) {
  if (len == 0) return false;
  bool start = true;
  for (size_t i = 0; i < len; i++) {
    char c = p[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (c == '.') {
      if (start) return false;
      start = true;
      continue;
    }
    if (start && !alpha) return false;
    if (!alpha && !digit) return false;
    start = false;
  }
  return !start;
}

static bool truthy(const ug_value *v) {
  switch (v->kind) {
  case UG_V_INT:
  case UG_V_BOOL: return v->i != 0;
  case UG_V_LIST: return v->n > 0;
  case UG_V_MAP: return true;
  case UG_V_IDENT: return true;
  }
  return false;
}

static int render_source(renderer *r, const source *src);

typedef struct {
  renderer *r;
  const ug_value *vals[64];
  int n;
} expr_scope;

static int expr_resolve(void *ud, const char *name, size_t len, const char **why) {
  expr_scope *es = ud;
  const ug_value *v = lookup(es->r, name, len);
  if (!v) return -1;
  if (v->kind != UG_V_INT && v->kind != UG_V_BOOL) {
    *why = "only integers and booleans can be used in expressions";
    return -2;
  }
  if (es->n == 64) {
    *why = "too many names in one expression";
    return -2;
  }
  es->vals[es->n] = v;
  return es->n++;
}

/* Finds the "}}" closing a tag that starts at p ("{{"). */
static const char *tag_end(const char *p) { return strstr(p + 2, "}}"); }

/* A tag is standalone when only blanks share its line; then the whole line
 * (with its newline) is dropped. Returns the start of the line or NULL. */
static const char *standalone(const source *src, const char *tag, const char *after, const char **line_end) {
  const char *ls = tag;
  while (ls > src->text && (ls[-1] == ' ' || ls[-1] == '\t')) ls--;
  if (ls > src->text && ls[-1] != '\n') return NULL;
  const char *le = after;
  while (*le == ' ' || *le == '\t' || *le == '\r') le++;
  if (*le != '\n' && *le != '\0') return NULL;
  *line_end = *le == '\n' ? le + 1 : le;
  return ls;
}

/* Renders src->text[begin, end) (the body of a section or the whole file).
 * *stop is set to the position of the closing tag of `section` when given. */
static int render_range(renderer *r, const source *src, const char *p, const char *section, size_t section_len,
                        const char *section_tag, const char **stop, bool emit);

static int render_section_body(renderer *r, const source *src, const char *tag, const char *name, size_t len,
                               bool inverted, const char *body, const char **after, bool emit, const ug_value *v);

static int render_section(renderer *r, const source *src, const char *tag, const char *name, size_t len, bool inverted,
                          const char *body, const char **after, bool emit) {
  const ug_value *v = emit ? lookup(r, name, len) : NULL;
  if (emit && !v)
    return ug_fail(r->d, src->name, loc_of(src, tag), "section '%.*s' names nothing in scope", (int)len, name);
  /* recursion depth is bounded by the template, which may be a user's */
  if (r->sections >= MAX_SECTIONS)
    return ug_fail(r->d, src->name, loc_of(src, tag), "sections nest more than %d deep", MAX_SECTIONS);
  r->sections++;
  int rc = render_section_body(r, src, tag, name, len, inverted, body, after, emit, v);
  r->sections--;
  return rc;
}

static int render_section_body(renderer *r, const source *src, const char *tag, const char *name, size_t len,
                               bool inverted, const char *body, const char **after, bool emit, const ug_value *v) {
  /* find the matching close by a dry run over the body */
  const char *close_end;
  if (render_range(r, src, body, name, len, tag, &close_end, false) < 0) return -1;
  if (emit) {
    if (inverted) {
      if (!truthy(v) && render_range(r, src, body, name, len, tag, &close_end, true) < 0) return -1;
    } else if (v->kind == UG_V_LIST) {
      for (int k = 0; k < v->n; k++) {
        if (r->nscopes == MAX_SCOPES) return ug_fail(r->d, src->name, loc_of(src, tag), "sections nest too deeply");
        r->scopes[r->nscopes++] = v->items[k];
        int rc = render_range(r, src, body, name, len, tag, &close_end, true);
        r->nscopes--;
        if (rc < 0) return -1;
      }
    } else if (truthy(v)) {
      bool scope = v->kind == UG_V_MAP;
      if (scope) {
        if (r->nscopes == MAX_SCOPES) return ug_fail(r->d, src->name, loc_of(src, tag), "sections nest too deeply");
        r->scopes[r->nscopes++] = v;
      }
      int rc = render_range(r, src, body, name, len, tag, &close_end, true);
      if (scope) r->nscopes--;
      if (rc < 0) return -1;
    }
  }
  *after = close_end;
  return 0;
}

static int render_range(renderer *r, const source *src, const char *p, const char *section, size_t section_len,
                        const char *section_tag, const char **stop, bool emit) {
  for (;;) {
    const char *open = strstr(p, "{{");
    const char *text_end = open ? open : p + strlen(p);
    const char *end = open ? tag_end(open) : NULL;
    if (open && !end) return ug_fail(r->d, src->name, loc_of(src, open), "tag is not closed with '}}'");
    char kind = open ? open[2] : 0;
    const char *line_end = NULL;
    const char *ls = NULL;
    if (open && (kind == '#' || kind == '^' || kind == '/' || kind == '!' || kind == '>'))
      ls = standalone(src, open, end + 2, &line_end);
    const char *copy_end = ls ? ls : text_end;
    if (emit) emit_text(r, src, p, copy_end);
    if (!open) {
      if (section)
        return ug_fail(r->d, src->name, loc_of(src, section_tag), "section '%.*s' is not closed ({{/%.*s}} missing)",
                       (int)section_len, section, (int)section_len, section);
      *stop = text_end;
      return 0;
    }
    const char *after = ls ? line_end : end + 2;
    const char *body = open + 2 + (kind == '#' || kind == '^' || kind == '/' || kind == '!' || kind == '>' || kind == '=');
    while (*body == ' ') body++;
    const char *bend = end;
    while (bend > body && bend[-1] == ' ') bend--;
    size_t blen = (size_t)(bend - body);
    if (kind == '!') {
      p = after;
      continue;
    }
    if (memchr(body, '\n', blen))
      return ug_fail(r->d, src->name, loc_of(src, open), "a tag must fit on one line");
    if (kind == '/') {
      if (!section)
        return ug_fail(r->d, src->name, loc_of(src, open), "{{/%.*s}} closes no open section", (int)blen, body);
      if (blen != section_len || strncmp(body, section, blen) != 0)
        return ug_fail(r->d, src->name, loc_of(src, open), "{{/%.*s}} does not match the open section '%.*s'",
                       (int)blen, body, (int)section_len, section);
      *stop = after;
      return 0;
    }
    if (kind == '=') {
      if (emit) {
        char expr_src[512];
        if (blen >= sizeof expr_src) return ug_fail(r->d, src->name, loc_of(src, open), "expression too long");
        memcpy(expr_src, body, blen);
        expr_src[blen] = '\0';
        expr_scope es = {r, {0}, 0};
        ug_expr_err err;
        ug_expr *e = ug_expr_parse(expr_src, expr_resolve, &es, &err);
        int64_t env[64], val;
        if (!e) {
          ug_loc at = loc_of(src, body + err.pos);
          return ug_fail(r->d, src->name, at, "%s (in {{= %s}})", err.msg, expr_src);
        }
        for (int k = 0; k < es.n; k++) env[k] = es.vals[k]->i;
        int rc = ug_expr_eval(e, env, &val, &err);
        ug_expr_free(e);
        if (rc < 0) return ug_fail(r->d, src->name, loc_of(src, open), "%s (in {{= %s}})", err.msg, expr_src);
        ug_buf_printf(&r->out, "%lld", (long long)val);
      }
      p = after;
      continue;
    }
    if (kind == '>') {
      if (emit) {
        char name[256], full[4096];
        if (blen == 0 || blen >= sizeof name) return ug_fail(r->d, src->name, loc_of(src, open), "bad partial name");
        memcpy(name, body, blen);
        name[blen] = '\0';
        if (ug_tmpl_find(r->path, name, full, sizeof full) < 0)
          return ug_fail(r->d, src->name, loc_of(src, open), "partial \"%s\" not found on the template path", name);
        if (r->depth >= MAX_DEPTH)
          return ug_fail(r->d, src->name, loc_of(src, open), "partials nest more than %d deep (a cycle?)", MAX_DEPTH);
        char *text = read_template(full, r->d);
        if (!text) return -1;
        const char *seen_at = text;
        int seen_line = 1;
        source sub = {full, text, &seen_at, &seen_line};
        r->depth++;
        int rc = render_source(r, &sub);
        r->depth--;
        free(text);
        if (rc < 0) return -1;
      }
      p = after;
      continue;
    }
    if (!valid_path(body, blen))
      return ug_fail(r->d, src->name, loc_of(src, open), "'%.*s' is not a name (identifiers joined by '.')", (int)blen, body);
    if (kind == '#' || kind == '^') {
      if (render_section(r, src, open, body, blen, kind == '^', after, &p, emit) < 0) return -1;
      continue;
    }
    if (emit) {
      const ug_value *v = lookup(r, body, blen);
      if (!v) return ug_fail(r->d, src->name, loc_of(src, open), "'%.*s' names nothing in scope", (int)blen, body);
      switch (v->kind) {
      case UG_V_INT:
      case UG_V_BOOL: ug_buf_printf(&r->out, "%lld", (long long)v->i); break;
      case UG_V_IDENT: ug_buf_puts(&r->out, v->s); break;
      default:
        return ug_fail(r->d, src->name, loc_of(src, open), "'%.*s' is a %s; use a section to go into it", (int)blen,
                       body, v->kind == UG_V_LIST ? "list" : "map");
      }
    }
    p = after;
  }
}

static int render_source(renderer *r, const source *src) {
  const char *stop;
  return render_range(r, src, src->text, NULL, 0, NULL, &stop, true);
}

static char *render_text(const char *name, const char *text, const ug_tmpl_path *path, const ug_value *ctx,
                         bool lines, ug_diag *d) {
  ug_diag_clear(d);
  renderer r = {path, d, {0}, {ctx}, 1, 0, 0, lines, "", 0};
  const char *seen_at = text;
  int seen_line = 1;
  source src = {name, text, &seen_at, &seen_line};
  if (render_source(&r, &src) < 0) {
    ug_buf_free(&r.out);
    return NULL;
  }
  if (!ug_buf_ok(&r.out)) {
    ug_buf_free(&r.out);
    ug_fail(d, name, (ug_loc){0, 0}, "out of memory");
    return NULL;
  }
  return ug_buf_take(&r.out);
}

char *ug_render_text(const char *name, const char *text, const ug_tmpl_path *path, const ug_value *ctx, ug_diag *d) {
  return render_text(name, text, path, ctx, false, d);
}

static char *render_file(const char *name, const ug_tmpl_path *path, const ug_value *ctx, bool lines, ug_diag *d) {
  char full[4096];
  ug_diag_clear(d);
  if (ug_tmpl_find(path, name, full, sizeof full) < 0) {
    ug_fail(d, name, (ug_loc){0, 0}, "template not found on the template path");
    return NULL;
  }
  char *text = read_template(full, d);
  if (!text) return NULL;
  char *out = render_text(full, text, path, ctx, lines, d);
  free(text);
  return out;
}

char *ug_render_file(const char *name, const ug_tmpl_path *path, const ug_value *ctx, ug_diag *d) {
  return render_file(name, path, ctx, false, d);
}

char *ug_render_file_lines(const char *name, const ug_tmpl_path *path, const ug_value *ctx, ug_diag *d) {
  return render_file(name, path, ctx, true, d);
}

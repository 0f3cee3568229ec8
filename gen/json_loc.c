#include "json_loc.h"
#include "json_text.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *s;
  size_t len;
  size_t i;
  int line;
  size_t line_start;
  int depth;
} scan;

static ug_loc here(const scan *sc) {
  ug_loc l = {sc->line, (int)(sc->i - sc->line_start) + 1};
  return l;
}

static void skip_ws(scan *sc) {
  while (sc->i < sc->len) {
    char c = sc->s[sc->i];
    if (c == '\n') {
      sc->line++;
      sc->i++;
      sc->line_start = sc->i;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      sc->i++;
    } else {
      break;
    }
  }
}

/* the 4 hex digits at sc->i into *v, advancing past them; -1 if they are not */
static int hex4(scan *sc, unsigned *v) {
  const int h = sc->i + 4 <= sc->len ? ug_json_hex4(sc->s + sc->i) : -1;
  if (h < 0) return -1;
  *v = (unsigned)h;
  sc->i += 4;
  return 0;
}

/* Decodes the string at sc->i (the opening quote) into *out (NUL-terminated,
 * \u escapes as UTF-8) and advances past the closing quote. */
static int scan_string(scan *sc, char **out) {
  if (sc->i >= sc->len || sc->s[sc->i] != '"') return -1;
  sc->i++;
  size_t start = sc->i;
  size_t cap = 16, n = 0;
  char *buf = out ? malloc(cap) : NULL;
  if (out && !buf) return -1;
  while (sc->i < sc->len && sc->s[sc->i] != '"') {
    char c = sc->s[sc->i];
    char tmp[4];
    size_t tn = 1;
    tmp[0] = c;
    if (c == '\\') {
      if (sc->i + 1 >= sc->len) goto bad;
      char e = sc->s[sc->i + 1];
      sc->i += 2;
      switch (e) {
      case 'n': tmp[0] = '\n'; break;
      case 't': tmp[0] = '\t'; break;
      case 'r': tmp[0] = '\r'; break;
      case 'b': tmp[0] = '\b'; break;
      case 'f': tmp[0] = '\f'; break;
      case 'u': {
        unsigned v;
        if (hex4(sc, &v) < 0) goto bad;
        /* a surrogate pair is one code point, as jansson decodes it, so the
         * keys found here are byte for byte the keys jansson reports (a
         * lone half, which jansson refuses, is kept as 3 bytes) */
        unsigned lo;
        if (v >= 0xd800 && v < 0xdc00 && sc->i + 6 <= sc->len && sc->s[sc->i] == '\\' && sc->s[sc->i + 1] == 'u') {
          scan peek = *sc;
          peek.i += 2;
          if (hex4(&peek, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
            *sc = peek;
            v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
          }
        }
        tn = (size_t)ug_utf8_put(v, tmp);
        break;
      }
      default: tmp[0] = e; break;
      }
    } else {
      sc->i++;
    }
    if (buf) {
      if (n + tn + 1 > cap) {
        cap *= 2;
        char *nb = realloc(buf, cap);
        if (!nb) goto bad;
        buf = nb;
      }
      memcpy(buf + n, tmp, tn);
      n += tn;
    }
  }
  (void)start;
  if (sc->i >= sc->len) goto bad;
  sc->i++; /* closing quote */
  if (buf) {
    buf[n] = '\0';
    *out = buf;
  }
  return 0;
bad:
  free(buf);
  return -1;
}

static void free_node(ug_jloc *n);

static int scan_value(scan *sc, ug_jloc *node) {
  skip_ws(sc);
  if (sc->i >= sc->len) return -1;
  if (++sc->depth > 2048) return -1;
  node->at = here(sc);
  node->off = sc->i;
  char c = sc->s[sc->i];
  int rc = 0;
  if (c == '{' || c == '[') {
    int is_obj = c == '{';
    char close = is_obj ? '}' : ']';
    size_t cap = 0;
    sc->i++;
    skip_ws(sc);
    if (sc->i < sc->len && sc->s[sc->i] == close) {
      sc->i++;
      sc->depth--;
      return 0;
    }
    for (;;) {
      if (node->n == cap) {
        cap = cap ? cap * 2 : 4;
        ug_jloc *kids = realloc(node->kids, cap * sizeof *kids);
        if (!kids) return -1;
        node->kids = kids;
        if (is_obj) {
          char **keys = realloc(node->keys, cap * sizeof *keys);
          if (!keys) return -1;
          node->keys = keys;
          ug_loc *ka = realloc(node->key_at, cap * sizeof *ka);
          if (!ka) return -1;
          node->key_at = ka;
        }
      }
      ug_jloc *kid = &node->kids[node->n];
      memset(kid, 0, sizeof *kid);
      if (is_obj) {
        skip_ws(sc);
        node->key_at[node->n] = here(sc);
        node->keys[node->n] = NULL;
        if (scan_string(sc, &node->keys[node->n]) < 0) return -1;
        skip_ws(sc);
        if (sc->i >= sc->len || sc->s[sc->i] != ':') {
          free(node->keys[node->n]);
          return -1;
        }
        sc->i++;
      }
      node->n++;
      if (scan_value(sc, kid) < 0) return -1;
      skip_ws(sc);
      if (sc->i >= sc->len) return -1;
      if (sc->s[sc->i] == ',') {
        sc->i++;
        continue;
      }
      if (sc->s[sc->i] == close) {
        sc->i++;
        break;
      }
      return -1;
    }
  } else if (c == '"') {
    rc = scan_string(sc, NULL);
  } else {
    /* number, true, false, null: up to the next delimiter */
    while (sc->i < sc->len) {
      char d = sc->s[sc->i];
      if (d == ',' || d == '}' || d == ']' || d == ' ' || d == '\t' || d == '\n' || d == '\r') break;
      sc->i++;
    }
  }
  sc->depth--;
  return rc;
}

static void free_node(ug_jloc *n) {
  for (size_t k = 0; k < n->n; k++) {
    free_node(&n->kids[k]);
    if (n->keys) free(n->keys[k]);
  }
  free(n->kids);
  free(n->keys);
  free(n->key_at);
}

ug_jloc *ug_jloc_build(const char *text, size_t len) {
  scan sc = {text, len, 0, 1, 0, 0};
  ug_jloc *root = calloc(1, sizeof *root);
  if (!root) return NULL;
  /* a UTF-8 byte order mark is not part of the document */
  if (len >= 3 && (unsigned char)text[0] == 0xef && (unsigned char)text[1] == 0xbb &&
      (unsigned char)text[2] == 0xbf)
    sc.i = sc.line_start = 3;
  if (scan_value(&sc, root) < 0) {
    ug_jloc_free(root);
    return NULL;
  }
  return root;
}

void ug_jloc_free(ug_jloc *root) {
  if (!root) return;
  free_node(root);
  free(root);
}

const ug_jloc *ug_jloc_member(const ug_jloc *obj, const char *key, ug_loc *key_at) {
  if (!obj) return NULL;
  /* jansson rejected duplicate keys, so the first match is the only one */
  for (size_t k = 0; obj->keys && k < obj->n; k++) {
    if (strcmp(obj->keys[k], key) == 0) {
      if (key_at) *key_at = obj->key_at[k];
      return &obj->kids[k];
    }
  }
  if (key_at) *key_at = obj->at;
  return obj;
}

const ug_jloc *ug_jloc_index(const ug_jloc *arr, size_t i) {
  if (!arr) return NULL;
  if (arr->keys || i >= arr->n) return arr;
  return &arr->kids[i];
}

ug_loc ug_jloc_string_char(const char *text, const ug_jloc *str, size_t index) {
  ug_loc at = str->at;
  size_t i = str->off + 1; /* after the quote */
  at.col += 1;
  for (size_t k = 0; k < index && text[i] && text[i] != '"'; k++) {
    size_t step = 1;
    if (text[i] == '\\') step = text[i + 1] == 'u' ? 6 : 2;
    i += step;
    at.col += (int)step;
  }
  return at;
}

/* Reading a tuning DB's JSON in one pass, straight into ug_tunedb: no tree
 * of JSON values in between (jansson's took most of the time of loading a
 * DB of many entries). Any valid JSON is read: keys in any order, unknown
 * keys skipped, a later duplicate key winning; anything else is an error
 * "line:col: what", or "entries[i]: what" for an entry of the wrong shape. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_text.h"
#include "spec.h"
#include "tunedb.h"

enum { MAX_DEPTH = 64, MAX_STR = 256 };

typedef struct {
  const char *p, *start, *end;
  char *why;
  size_t nwhy;
  bool failed;
} reader;

/* an error at the current position; later ones are ignored */
static bool fail(reader *r, const char *fmt, ...) {
  if (r->failed) return false;
  r->failed = true;
  int line = 1, col = 1;
  for (const char *c = r->start; c < r->p && c < r->end; c++) {
    if (*c == '\n') line++, col = 1;
    else col++;
  }
  int n = snprintf(r->why, r->nwhy, "%d:%d: ", line, col);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < r->nwhy) vsnprintf(r->why + n, r->nwhy - (size_t)n, fmt, ap);
  va_end(ap);
  return false;
}

static void blank(reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static bool eat(reader *r, char c) {
  blank(r);
  if (r->p < r->end && *r->p == c) {
    r->p++;
    return true;
  }
  return false;
}

/* a string into out (UTF-8, NUL-terminated, at most n - 1 bytes; *len its
 * length); *fits false when it is longer or holds a NUL. out may be NULL:
 * the string is only checked and skipped. */
static bool string(reader *r, char *out, size_t n, size_t *len, bool *fits) {
  blank(r);
  if (r->p >= r->end || *r->p != '"') return fail(r, "a string was expected");
  r->p++;
  size_t k = 0;
  *fits = true;
  while (r->p < r->end && *r->p != '"') {
    unsigned cp = (unsigned char)*r->p++;
    if (cp < 0x20) return r->p--, fail(r, "a control character in a string");
    if (cp == '\\') {
      if (r->p >= r->end) break;
      const char *at_escape = r->p - 1;
      char e = *r->p++;
      const char *simple = "\"\\/bfnrt", *value = "\"\\/\b\f\n\r\t";
      const char *at = strchr(simple, e);
      if (e && at) {
        cp = (unsigned char)value[at - simple];
      } else if (e == 'u' && r->end - r->p >= 4 && ug_json_hex4(r->p) >= 0) {
        cp = (unsigned)ug_json_hex4(r->p);
        r->p += 4;
        if (cp >= 0xd800 && cp < 0xdc00) { /* a surrogate pair */
          if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' || ug_json_hex4(r->p + 2) < 0xdc00 ||
              ug_json_hex4(r->p + 2) > 0xdfff)
            return fail(r, "a lone surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + ((unsigned)ug_json_hex4(r->p + 2) - 0xdc00);
          r->p += 6;
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return fail(r, "a lone surrogate in a \\u escape");
        }
        if (cp == 0) *fits = false;
        char u[4];
        const int m = ug_utf8_put(cp, u);
        for (int i = 0; i < m; i++, k++)
          if (out && k + 1 < n) out[k] = u[i];
        continue;
      } else {
        r->p = at_escape;
        return fail(r, "an invalid escape in a string");
      }
    }
    if (cp >= 0x80) { /* raw UTF-8: well-formed, as the writer (jansson) will need it */
      const int m = ug_utf8_len(r->p - 1, r->end);
      if (!m) return r->p--, fail(r, "a string that is not valid UTF-8");
      for (int i = 0; i < m; i++, k++)
        if (out && k + 1 < n) out[k] = r->p[i - 1];
      r->p += m - 1;
      continue;
    }
    if (out && k + 1 < n) out[k] = (char)cp;
    k++;
  }
  if (r->p >= r->end) return fail(r, "a string is not terminated");
  r->p++;
  if (k + 1 > n) *fits = false;
  if (out && n) out[k + 1 <= n ? k : n - 1] = '\0';
  if (len) *len = k;
  return true;
}

/* a number: *is_int when it has no fraction or exponent (and fits int64) */
static bool number(reader *r, bool *is_int, int64_t *i, double *d) {
  blank(r);
  const char *s = r->p;
  if (s < r->end && *s == '-') s++;
  if (s >= r->end || *s < '0' || *s > '9') return fail(r, "a value was expected");
  if (*s == '0' && s + 1 < r->end && s[1] >= '0' && s[1] <= '9') return fail(r, "a number with a leading zero");
  while (s < r->end && *s >= '0' && *s <= '9') s++;
  *is_int = true;
  if (s < r->end && *s == '.') {
    *is_int = false;
    if (++s >= r->end || *s < '0' || *s > '9') return fail(r, "a digit must follow the decimal point");
    while (s < r->end && *s >= '0' && *s <= '9') s++;
  }
  if (s < r->end && (*s == 'e' || *s == 'E')) {
    *is_int = false;
    s++;
    if (s < r->end && (*s == '+' || *s == '-')) s++;
    if (s >= r->end || *s < '0' || *s > '9') return fail(r, "a digit must follow the exponent");
    while (s < r->end && *s >= '0' && *s <= '9') s++;
  }
  char buf[64];
  size_t len = (size_t)(s - r->p);
  if (len >= sizeof buf) return fail(r, "a number of more than %zu characters", sizeof buf - 1);
  memcpy(buf, r->p, len);
  buf[len] = '\0';
  errno = 0;
  if (*is_int) {
    *i = strtoll(buf, NULL, 10);
    if (errno == ERANGE) return fail(r, "an integer too large for 64 bits");
    *d = (double)*i;
  } else {
    *d = strtod(buf, NULL);
    if (errno == ERANGE && (*d > 1 || *d < -1)) return fail(r, "a number too large for a double");
  }
  r->p = s;
  return true;
}

static bool literal(reader *r, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return fail(r, "a value was expected");
  r->p += n;
  return true;
}

/* any value, checked and skipped */
static bool skip(reader *r, int depth) {
  if (depth > MAX_DEPTH) return fail(r, "values nested more than %d deep", MAX_DEPTH);
  blank(r);
  if (r->p >= r->end) return fail(r, "a value was expected, the file ends");
  bool b;
  switch (*r->p) {
  case '"': return string(r, NULL, 0, NULL, &b);
  case 't': return literal(r, "true");
  case 'f': return literal(r, "false");
  case 'n': return literal(r, "null");
  case '[':
    r->p++;
    if (eat(r, ']')) return true;
    do
      if (!skip(r, depth + 1)) return false;
    while (eat(r, ','));
    return eat(r, ']') || fail(r, "',' or ']' was expected");
  case '{':
    r->p++;
    if (eat(r, '}')) return true;
    do {
      if (!string(r, NULL, 0, NULL, &b)) return false;
      if (!eat(r, ':')) return fail(r, "':' was expected");
      if (!skip(r, depth + 1)) return false;
    } while (eat(r, ','));
    return eat(r, '}') || fail(r, "',' or '}' was expected");
  default: {
    bool is_int;
    int64_t i;
    double d;
    return number(r, &is_int, &i, &d);
  }
  }
}

/* the members of an object: for each key, member(r, key, fits, arg) reads its
 * value (fits: the key is under MAX_STR bytes and holds no NUL) */
typedef bool (*member_fn)(reader *r, const char *key, bool fits, void *arg);
static bool object(reader *r, member_fn member, void *arg, const char *what) {
  if (!eat(r, '{')) return fail(r, "%s must be an object", what);
  if (eat(r, '}')) return true;
  do {
    char key[MAX_STR];
    size_t len;
    bool fits;
    if (!string(r, key, sizeof key, &len, &fits)) return false;
    if (!eat(r, ':')) return fail(r, "':' was expected");
    if (!member(r, key, fits, arg)) return false;
  } while (eat(r, ','));
  return eat(r, '}') || fail(r, "',' or '}' was expected");
}

/* ---- the DB's own structure -------------------------------------------------- */

typedef enum { F_STR, F_INT, F_NUM } field_type;
#define FIELD(name, t) {#name, t, offsetof(ug_tune_entry, name), sizeof(((ug_tune_entry *)0)->name)}
static const struct {
  const char *key;
  field_type type;
  size_t off, size;
} fields[] = {
    FIELD(kernel, F_STR),          FIELD(pass, F_STR),       FIELD(ub_bytes, F_INT),
    FIELD(variant, F_STR),         FIELD(backend, F_STR),    FIELD(median_us, F_NUM),
    FIELD(default_variant, F_STR), FIELD(default_median_us, F_NUM), FIELD(candidates, F_INT),
    FIELD(rejected_ub, F_INT),
};
enum { NFIELDS = sizeof fields / sizeof fields[0], F_DTYPE = NFIELDS, F_SHAPE, NSEEN };

typedef struct {
  ug_tune_entry *e;
  bool seen[NSEEN];
  bool bad_shape;
  char bad[160]; /* the first field of the wrong type, for the message */
} entry_state;

static bool scalar_of_type(reader *r, field_type t, void *dst, size_t size, bool *ok) {
  blank(r);
  *ok = false;
  if (t == F_STR) {
    if (r->p >= r->end || *r->p != '"') return skip(r, 1);
    size_t len;
    return string(r, dst, size, &len, ok);
  }
  if (r->p >= r->end || !(*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))) return skip(r, 1);
  bool is_int;
  int64_t i;
  double d;
  if (!number(r, &is_int, &i, &d)) return false;
  if (t == F_INT) {
    *ok = is_int;
    if (is_int) *(int64_t *)dst = i;
  } else {
    *ok = true;
    *(double *)dst = d;
  }
  return true;
}

static bool shape_member(reader *r, const char *key, bool fits, void *arg) {
  entry_state *s = arg;
  ug_tune_entry *e = s->e;
  bool is_int;
  int64_t i;
  double d;
  blank(r);
  if (r->p >= r->end || !(*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))) {
    s->bad_shape = true;
    return skip(r, 2);
  }
  if (!number(r, &is_int, &i, &d)) return false;
  size_t len = strlen(key);
  if (!is_int || !fits || len >= sizeof e->shape_names[0] || e->nshape >= UG_TUNE_MAX_SHAPE) {
    s->bad_shape = true;
    return true;
  }
  for (int k = 0; k < e->nshape; k++)
    if (!strcmp(e->shape_names[k], key)) { /* a later duplicate wins */
      e->shape[k] = i;
      return true;
    }
  memcpy(e->shape_names[e->nshape], key, len + 1);
  e->shape[e->nshape++] = i;
  return true;
}

static bool entry_member(reader *r, const char *key, bool fits, void *arg) {
  entry_state *s = arg;
  if (!fits) return skip(r, 1);
  for (int k = 0; k < NFIELDS; k++)
    if (!strcmp(key, fields[k].key)) {
      bool ok;
      if (!scalar_of_type(r, fields[k].type, (char *)s->e + fields[k].off, fields[k].size, &ok)) return false;
      s->seen[k] = ok;
      if (!ok && !s->bad[0]) {
        static const char *const want[] = {"a string of under %zu bytes", "an integer", "a number"};
        char w[64];
        snprintf(w, sizeof w, want[fields[k].type], fields[k].size);
        snprintf(s->bad, sizeof s->bad, "\"%s\" is not %s", key, w);
      }
      return true;
    }
  if (!strcmp(key, "dtype")) {
    char dt[16];
    bool ok;
    if (!scalar_of_type(r, F_STR, dt, sizeof dt, &ok)) return false;
    s->e->dtype = ok ? ug_dtype_parse(dt) : -1;
    s->seen[F_DTYPE] = s->e->dtype >= 0;
    return true;
  }
  if (!strcmp(key, "shape")) {
    blank(r);
    if (r->p >= r->end || *r->p != '{') {
      s->bad_shape = true;
      return skip(r, 1);
    }
    s->e->nshape = 0;
    s->bad_shape = false;
    s->seen[F_SHAPE] = true;
    return object(r, shape_member, s, "\"shape\"");
  }
  return skip(r, 1);
}

typedef struct {
  ug_tunedb *db;
  bool have_version, have_entries;
  int version_ok;
  int bad_entry; /* the first entry of the wrong shape, -1 none */
  char bad_why[300];
} db_state;

/* an entry checked as the jansson-based reader did: every field present and
 * of its type, a known dtype, a shape object of integer values */
static void entry_done(db_state *st, entry_state *s, int idx) {
  if (st->bad_entry >= 0) return;
  const char *why = s->bad[0] ? s->bad : NULL;
  char missing[96];
  for (int k = 0; k < NFIELDS && !why; k++)
    if (!s->seen[k]) snprintf(missing, sizeof missing, "\"%s\" is missing", fields[k].key), why = missing;
  if (!why && !s->seen[F_DTYPE]) why = "\"dtype\" is missing or not one of f32, f16, bf16";
  if (!why && !s->seen[F_SHAPE]) why = "\"shape\" is missing or not an object";
  if (!why && s->bad_shape) why = "\"shape\" must hold at most 8 integer values with names of under 32 bytes";
  if (why) {
    st->bad_entry = idx;
    snprintf(st->bad_why, sizeof st->bad_why, "entries[%d]: %s", idx, why);
  }
}

static bool root_member(reader *r, const char *key, bool fits, void *arg) {
  db_state *st = arg;
  if (!fits) return skip(r, 1);
  if (!strcmp(key, "version")) {
    bool ok;
    int64_t v = 0;
    if (!scalar_of_type(r, F_INT, &v, sizeof v, &ok)) return false;
    st->have_version = true;
    st->version_ok = ok && v == 1;
    return true;
  }
  if (!strcmp(key, "cpu")) {
    bool ok;
    if (!scalar_of_type(r, F_STR, st->db->cpu, sizeof st->db->cpu, &ok)) return false;
    if (!ok) return fail(r, "\"cpu\" is not a string of under %zu bytes", sizeof st->db->cpu);
    return true;
  }
  if (!strcmp(key, "entries")) {
    if (!eat(r, '[')) return fail(r, "\"entries\" must be an array");
    if (st->have_entries) { /* a later "entries" replaces the earlier one */
      char cpu[sizeof st->db->cpu];
      memcpy(cpu, st->db->cpu, sizeof cpu);
      ug_tunedb_free(st->db);
      memcpy(st->db->cpu, cpu, sizeof cpu);
      st->bad_entry = -1;
    }
    st->have_entries = true;
    if (eat(r, ']')) return true;
    int idx = 0;
    do {
      ug_tune_entry e;
      memset(&e, 0, sizeof e);
      entry_state s = {&e, {false}, false, ""};
      if (!object(r, entry_member, &s, "an entry")) return false;
      entry_done(st, &s, idx);
      if (st->bad_entry < 0 && ug_tunedb_put(st->db, &e) < 0) return fail(r, "out of memory");
      idx++;
    } while (eat(r, ','));
    return eat(r, ']') || fail(r, "',' or ']' was expected");
  }
  return skip(r, 1);
}

int ug_tunedb_parse(const char *text, size_t len, ug_tunedb *db, char *why, size_t nwhy) {
  reader r = {text, text, text + len, why, nwhy, false};
  db_state st = {db, false, false, 0, -1, ""};
  why[0] = '\0';
  bool ok = object(&r, root_member, &st, "a tuning DB");
  blank(&r);
  if (ok && r.p != r.end) ok = fail(&r, "text follows the DB's object");
  if (!ok) return strstr(why, "out of memory") ? -1 : 1;
  if (!st.have_version || !st.version_ok)
    return snprintf(why, nwhy, "\"version\" is missing or not 1, the only version this ubgen reads"), 1;
  if (!st.have_entries) return snprintf(why, nwhy, "\"entries\" is missing or not an array"), 1;
  if (st.bad_entry >= 0) return snprintf(why, nwhy, "%s", st.bad_why), 1;
  return 0;
}

/* Source positions of JSON values.
 *
 * jansson parses and validates the text but keeps no positions once it is
 * done, and spec errors must say file:line:col. This walks the same text a
 * second time (it is already known to be valid JSON) and builds a tree that
 * mirrors the document: each value's position, each object member's key and
 * position. The spec loader walks json_t and this tree side by side. */
#ifndef UG_JSON_LOC_H
#define UG_JSON_LOC_H

#include <stddef.h>

#include "diag.h"

typedef struct ug_jloc ug_jloc;
struct ug_jloc {
  ug_loc at;     /* first character of the value */
  size_t off;    /* byte offset of that character */
  size_t n;      /* members (object) or elements (array) */
  char **keys;   /* object member names, decoded; NULL for arrays */
  ug_loc *key_at;
  ug_jloc *kids; /* n children */
};

/* NULL when out of memory or when text is not valid JSON. */
ug_jloc *ug_jloc_build(const char *text, size_t len);
void ug_jloc_free(ug_jloc *root);

/* Member `key` of an object node; *key_at gets the key's position when
 * key_at is not NULL. Callers ask for keys jansson found, and this scanner
 * decodes keys as jansson does; should they ever disagree, the object
 * itself is returned (an error then points at the object, never at NULL).
 * Likewise ug_jloc_index returns the array for an index it does not have.
 * NULL only for a NULL node. */
const ug_jloc *ug_jloc_member(const ug_jloc *obj, const char *key, ug_loc *key_at);
const ug_jloc *ug_jloc_index(const ug_jloc *arr, size_t i);

/* Position of the decoded character `index` of the string value at `str`,
 * following escapes, so an error inside an expression points at the right
 * column. */
ug_loc ug_jloc_string_char(const char *text, const ug_jloc *str, size_t index);

#endif

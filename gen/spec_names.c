/* Tables every layer uses: dtype and element names and sizes, identifiers,
 * the names of a pass. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "spec.h"

/* Every element type a spec names: its name, bytes and C type in kernels.
 * The dtypes (ubg_dtype's values) are the three float rows; UG_ELEM_T, the
 * variant's dtype, is one of them, so its row has no size of its own. */
static const struct {
  const char *name;
  int bytes;
  const char *ctype;
} elems[] = {
    [UG_ELEM_T] = {"T", 0, "void"},           [UG_ELEM_F32] = {"f32", 4, "float"},
    [UG_ELEM_F16] = {"f16", 2, "ubg_u16"},    [UG_ELEM_BF16] = {"bf16", 2, "ubg_u16"},
    [UG_ELEM_I64] = {"i64", 8, "ubg_i64"},    [UG_ELEM_I32] = {"i32", 4, "int"},
    [UG_ELEM_U8] = {"u8", 1, "ubg_u8"},
};
enum { NELEMS = sizeof elems / sizeof elems[0] };
/* the element of each dtype, in ubg_dtype's order (UBG_F32, UBG_F16, UBG_BF16) */
static const ug_elem dtype_elems[UG_NDTYPES] = {UG_ELEM_F32, UG_ELEM_F16, UG_ELEM_BF16};

static bool dtype_ok(int dtype) { return dtype >= 0 && dtype < UG_NDTYPES; }

ug_elem ug_elem_of(ug_elem e, int dtype) { return e == UG_ELEM_T && dtype_ok(dtype) ? dtype_elems[dtype] : e; }

int ug_elem_dtype(ug_elem e, int dtype) {
  e = ug_elem_of(e, dtype);
  for (int k = 0; k < UG_NDTYPES; k++)
    if (dtype_elems[k] == e) return k;
  return -1;
}

const char *ug_dtype_name(int dtype) { return dtype_ok(dtype) ? elems[dtype_elems[dtype]].name : "?"; }

int ug_dtype_parse(const char *s) {
  for (int k = 0; k < UG_NDTYPES; k++)
    if (strcmp(s, elems[dtype_elems[k]].name) == 0) return k;
  return -1;
}

int ug_dtype_bytes(int dtype) { return dtype_ok(dtype) ? elems[dtype_elems[dtype]].bytes : 0; }

int ug_elem_parse(const char *s, ug_elem *e) {
  for (int k = 0; k < NELEMS; k++)
    if (strcmp(s, elems[k].name) == 0) {
      *e = (ug_elem)k;
      return 0;
    }
  return -1;
}

const char *ug_elem_name(ug_elem e) { return (unsigned)e < NELEMS ? elems[e].name : "?"; }

size_t ug_elem_bytes(ug_elem e, int dtype) {
  e = ug_elem_of(e, dtype);
  return (unsigned)e < NELEMS ? (size_t)elems[e].bytes : 1;
}

const char *ug_elem_ctype(ug_elem e, int dtype) {
  e = ug_elem_of(e, dtype);
  return (unsigned)e < NELEMS ? elems[e].ctype : "void";
}

uint64_t ug_fnv1a(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t k = 0; k < n; k++) {
    h ^= p[k];
    h *= 0x100000001b3ull;
  }
  return h;
}

bool ug_is_ident(const char *s) {
  if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (const char *c = s + 1; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
      return false;
  return strlen(s) <= 64;
}

const ug_pass *ug_spec_pass(const ug_kernel *k, const char *pass) {
  for (int i = 0; i < k->npasses; i++)
    if (strcmp(k->passes[i].name, pass) == 0) return &k->passes[i];
  return NULL;
}

int ug_pass_arg(const ug_pass *p, const char *name) {
  for (int i = 0; i < p->nargs; i++)
    if (strcmp(p->args[i].name, name) == 0) return i;
  return -1;
}

int ug_pass_sym(const ug_pass *p, const char *name) {
  for (int i = 0; i < p->nsyms; i++)
    if (strcmp(p->syms[i].name, name) == 0) return i;
  return -1;
}

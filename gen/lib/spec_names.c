/* Tables every layer uses: dtype and element names and sizes, identifiers,
 * the names of a pass. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "spec.h"

static const char *const dtype_names[UG_NDTYPES] = {"f32", "f16", "bf16"};

const char *ug_dtype_name(int dtype) {
  return dtype >= 0 && dtype < UG_NDTYPES ? dtype_names[dtype] : "?";
}

int ug_dtype_parse(const char *s) {
  for (int k = 0; k < UG_NDTYPES; k++)
    if (strcmp(s, dtype_names[k]) == 0) return k;
  return -1;
}

int ug_dtype_bytes(int dtype) { return dtype == 0 ? 4 : 2; }

static const struct { const char *name; ug_elem elem; } elem_table[] = {
    {"T", UG_ELEM_T},     {"f32", UG_ELEM_F32}, {"f16", UG_ELEM_F16}, {"bf16", UG_ELEM_BF16},
    {"i64", UG_ELEM_I64}, {"i32", UG_ELEM_I32}, {"u8", UG_ELEM_U8},
};

int ug_elem_parse(const char *s, ug_elem *e) {
  for (size_t k = 0; k < sizeof elem_table / sizeof elem_table[0]; k++)
    if (strcmp(s, elem_table[k].name) == 0) {
      *e = elem_table[k].elem;
      return 0;
    }
  return -1;
}

const char *ug_elem_name(ug_elem e) {
  for (size_t k = 0; k < sizeof elem_table / sizeof elem_table[0]; k++)
    if (elem_table[k].elem == e) return elem_table[k].name;
  return "?";
}

size_t ug_elem_bytes(ug_elem e, int dtype) {
  switch (e) {
  case UG_ELEM_T: return (size_t)ug_dtype_bytes(dtype);
  case UG_ELEM_F32: return 4;
  case UG_ELEM_F16: return 2;
  case UG_ELEM_BF16: return 2;
  case UG_ELEM_I64: return 8;
  case UG_ELEM_I32: return 4;
  case UG_ELEM_U8: return 1;
  }
  return 1;
}

const char *ug_elem_ctype(ug_elem e, int dtype) {
  switch (e) {
  case UG_ELEM_T: return dtype == 0 ? "float" : "ubg_u16";
  case UG_ELEM_F32: return "float";
  case UG_ELEM_F16: return "ubg_u16";
  case UG_ELEM_BF16: return "ubg_u16";
  case UG_ELEM_I64: return "ubg_i64";
  case UG_ELEM_I32: return "int";
  case UG_ELEM_U8: return "ubg_u8";
  }
  return "void";
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

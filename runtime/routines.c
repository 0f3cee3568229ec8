/* The routines' registry, the access to a step's arguments, and the
 * plainest routines: zero (a tensor to zero bytes), store (f32 values into
 * a tensor of the call's dtype, rounded to nearest even) and convert (n
 * elements from one tensor to another, each in its own element type). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../templates/prelude.h"
#include "routine.h"
#include "../gen/ckd.h"

static const rt_routine *const routines[] = {&rt_routine_zero,    &rt_routine_store,  &rt_routine_convert,
                                             &rt_routine_ce_rows, &rt_routine_gemm_onednn,
                                             &rt_routine_moe_mm_onednn, &rt_routine_moe_dw_onednn};

const rt_routine *rt_routine_find(const char *name) {
  for (size_t i = 0; name && i < sizeof routines / sizeof routines[0]; i++)
    if (!strcmp(routines[i]->name, name)) return routines[i];
  return NULL;
}

int rt_routine_arg(const rt_routine_call *c, const char *name) {
  for (int i = 0; i < c->nargs; i++)
    if (!strcmp(c->args[i].name, name)) return i;
  return -1;
}

void *rt_routine_p(const rt_routine_call *c, const char *name) {
  const int i = rt_routine_arg(c, name);
  return i >= 0 && c->args[i].kind == UBG_ARG_PTR ? c->args[i].v.p : NULL;
}

int64_t rt_routine_i(const rt_routine_call *c, const char *name, int64_t dflt) {
  const int i = rt_routine_arg(c, name);
  return i >= 0 && c->args[i].kind == UBG_ARG_I64 ? c->args[i].v.i : dflt;
}

double rt_routine_f(const rt_routine_call *c, const char *name, double dflt) {
  const int i = rt_routine_arg(c, name);
  return i >= 0 && c->args[i].kind == UBG_ARG_F64 ? c->args[i].v.f : dflt;
}

ug_elem rt_routine_elem(const rt_routine_call *c, const char *name) {
  const int i = rt_routine_arg(c, name);
  return i >= 0 && c->args[i].kind == UBG_ARG_PTR ? c->elem[i] : UG_ELEM_F32;
}

int64_t rt_routine_bytes(const rt_routine_call *c, const char *name) {
  const int i = rt_routine_arg(c, name);
  return i >= 0 && c->args[i].kind == UBG_ARG_PTR ? c->nbytes[i] : 0;
}

ubg_status rt_routine_need(const rt_routine_call *c, const char *routine, const char *name, int elem, int64_t count,
                           const char *dims, bool required) {
  if (count < 0)
    return rt_fail(c->ctx, UBG_EINVAL, "%s: routine %s: %s's %s = %lld elements, below 0", c->what, routine, name, dims,
                   (long long)count);
  const int i = rt_routine_arg(c, name);
  const void *p = i >= 0 && c->args[i].kind == UBG_ARG_PTR ? c->args[i].v.p : NULL;
  if (i >= 0 && c->args[i].kind != UBG_ARG_PTR)
    return rt_fail(c->ctx, UBG_EINVAL, "%s: routine %s: %s must be bound to a tensor", c->what, routine, name);
  if (!p) {
    if (required && count > 0)
      return rt_fail(c->ctx, UBG_EINVAL, "%s: routine %s: %s is not bound (or NULL), but it needs %s = %lld elements",
                     c->what, routine, name, dims, (long long)count);
    return UBG_OK;
  }
  const int dt = (int)c->dtype;
  const ug_elem got = ug_elem_of(c->elem[i], dt);
  const bool ok = elem == RT_F32_OR_T ? (got == UG_ELEM_F32 || got == ug_elem_of(UG_ELEM_T, dt))
                                      : got == ug_elem_of((ug_elem)elem, dt);
  if (!ok)
    return rt_fail(c->ctx, UBG_EINVAL, "%s: routine %s: %s is bound to a tensor of %s; it takes %s%s", c->what, routine,
                   name, ug_elem_name(got), elem == RT_F32_OR_T ? "f32 or " : "",
                   ug_elem_name(ug_elem_of(elem == RT_F32_OR_T ? UG_ELEM_T : (ug_elem)elem, dt)));
  int64_t need;
  if (ug_ckd_mul(&need, count, (int64_t)ug_elem_bytes(got, dt)) || c->nbytes[i] < need)
    return rt_fail(c->ctx, UBG_EINVAL, "%s: routine %s: %s holds %lld bytes from where it is bound; %s = %lld elements of %s need more",
                   c->what, routine, name, (long long)c->nbytes[i], dims, (long long)count, ug_elem_name(got));
  return UBG_OK;
}

bool rt_routine_named(const char *name, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(name, *list)) return true;
  return false;
}

static bool writes_dst(const rt_routine_call *c, const char *name) { return !strcmp(name, "dst"); }

/* dst's first dst_bytes and src's first src_bytes share a byte, and are not
 * the very same buffer (which convert skips) */
static ubg_status apart(const rt_routine_call *c, const char *routine, int64_t dst_bytes, int64_t src_bytes) {
  const char *d = rt_routine_p(c, "dst"), *s = rt_routine_p(c, "src");
  if (!d || !s || d == s || dst_bytes <= 0 || src_bytes <= 0 || d >= s + src_bytes || s >= d + dst_bytes) return UBG_OK;
  return rt_fail(c->ctx, UBG_EINVAL, "%s: routine %s: dst and src overlap (bound to parts of one buffer)", c->what,
                 routine);
}

/* zero: dst's bytes to 0 (+0.0 in every float type) */
static ubg_status zero_run(rt_routine_call *c) {
  void *dst = rt_routine_p(c, "dst");
  if (dst) memset(dst, 0, (size_t)rt_routine_bytes(c, "dst"));
  snprintf(c->variant, sizeof c->variant, "zero");
  return UBG_OK;
}
const rt_routine rt_routine_zero = {.name = "zero", .writes = writes_dst, .run = zero_run};

/* store: dst [n] (the call's dtype) := src [n] (f32), n dst's elements;
 * nothing where either is null */
static ubg_status store_run(rt_routine_call *c) {
  void *dst = rt_routine_p(c, "dst");
  const float *src = rt_routine_p(c, "src");
  snprintf(c->variant, sizeof c->variant, "store");
  if (!dst || !src) return UBG_OK;
  const ubg_dtype dt = c->dtype;
  const int64_t n = rt_routine_bytes(c, "dst") / (int64_t)ug_dtype_bytes((int)dt);
  if (dt == UBG_F32) {
    memcpy(dst, src, (size_t)n * 4);
    return UBG_OK;
  }
#pragma omp parallel for num_threads(c->threads) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    if (dt == UBG_F16) ubg_st_f16(dst, i, src[i]);
    else ubg_st_bf16(dst, i, src[i]);
  }
  return UBG_OK;
}
static ubg_status store_check(const rt_routine_call *c, bool call) {
  (void)call;
  const int64_t n = rt_routine_bytes(c, "dst") / (int64_t)ug_dtype_bytes((int)c->dtype);
  ubg_status s = rt_routine_need(c, "store", "dst", UG_ELEM_T, n, "its elements", false);
  if (!s && rt_routine_p(c, "dst")) s = rt_routine_need(c, "store", "src", UG_ELEM_F32, n, "dst's elements", false);
  return s ? s : apart(c, "store", n * (int64_t)ug_dtype_bytes((int)c->dtype), n * 4);
}
const rt_routine rt_routine_store = {.name = "store", .writes = writes_dst, .check = store_check, .run = store_run};

/* One loop per pair of types, each a plain loop of the prelude's
 * branch-free conversions, so that `omp simd` vectorizes it on the
 * library's baseline ISA: the conversions of a chunk's gradient are
 * memory-bound, and a loop that chose the type per element ran at a
 * fraction of that. */
#define CONVERT_LOOP(expr)                                                          \
  _Pragma("omp parallel for simd num_threads(threads) schedule(static)")            \
  for (int64_t i = 0; i < n; i++) expr;

void rt_convert(void *dst, ubg_dtype to, const void *src, ubg_dtype from, int64_t n, int threads) {
  float *d32 = dst;
  ubg_u16 *d16 = dst;
  const float *s32 = src;
  const ubg_u16 *s16 = src;
  if (to == from) memcpy(dst, src, (size_t)n * ug_dtype_bytes((int)to));
  else if (from == UBG_F32 && to == UBG_BF16) CONVERT_LOOP(d16[i] = ubg_f32_to_bf16(s32[i]))
  else if (from == UBG_F32) CONVERT_LOOP(d16[i] = ubg_f32_to_f16(s32[i]))
  else if (to == UBG_F32 && from == UBG_BF16) CONVERT_LOOP(d32[i] = ubg_bf16_to_f32(s16[i]))
  else if (to == UBG_F32) CONVERT_LOOP(d32[i] = ubg_f16_to_f32(s16[i]))
  else if (to == UBG_BF16) CONVERT_LOOP(d16[i] = ubg_f32_to_bf16(ubg_f16_to_f32(s16[i])))
  else CONVERT_LOOP(d16[i] = ubg_f32_to_f16(ubg_bf16_to_f32(s16[i])))
}

/* convert: dst [n] := src [n], each in its element type (f32, f16, bf16),
 * rounded to nearest even where it narrows; nothing where either is null
 * or they are the very same buffer (a copy onto itself) */
static ubg_status convert_check(const rt_routine_call *c, bool call) {
  (void)call;
  const int64_t n = rt_routine_i(c, "n", 0);
  if (!rt_routine_p(c, "dst") || !rt_routine_p(c, "src") || n <= 0) return UBG_OK;
  ubg_status s = rt_routine_need(c, "convert", "dst", RT_F32_OR_T, n, "n", true);
  if (!s) s = rt_routine_need(c, "convert", "src", RT_F32_OR_T, n, "n", true);
  const int dt = (int)c->dtype;
  return s ? s : apart(c, "convert", n * (int64_t)ug_elem_bytes(rt_routine_elem(c, "dst"), dt),
                       n * (int64_t)ug_elem_bytes(rt_routine_elem(c, "src"), dt));
}

static ubg_status convert_run(rt_routine_call *c) {
  void *dst = rt_routine_p(c, "dst");
  const void *src = rt_routine_p(c, "src");
  const int64_t n = rt_routine_i(c, "n", 0);
  const int to = ug_elem_dtype(rt_routine_elem(c, "dst"), (int)c->dtype),
            from = ug_elem_dtype(rt_routine_elem(c, "src"), (int)c->dtype);
  snprintf(c->variant, sizeof c->variant, "convert");
  if (!dst || !src || dst == src || n <= 0) return UBG_OK;
  rt_convert(dst, (ubg_dtype)to, src, (ubg_dtype)from, n, c->threads);
  return UBG_OK;
}
const rt_routine rt_routine_convert = {.name = "convert", .writes = writes_dst, .check = convert_check,
                                       .run = convert_run};

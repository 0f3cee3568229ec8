#include "check_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *s) {
  /* splitmix64: tiny, and good enough for test data */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return (double)(next(s) >> 11) * 0x1.0p-53; }

static double normal(uint64_t *s) {
  double u = uniform(s), v = uniform(s);
  return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

static int ref_dtype_of(ug_elem e, int dtype) {
  switch (e) {
  case UG_ELEM_T: return dtype;
  case UG_ELEM_F32: return REF_F32;
  case UG_ELEM_F16: return REF_F16;
  case UG_ELEM_BF16: return REF_BF16;
  default: return -1;
  }
}

void ck_case_env(const ug_pass *p, const ug_case *cs, int64_t *env) {
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    if (a->kind == UG_ARG_INT) env[p->sym_of_arg[i]] = cs->set[i] ? cs->ints[i] : (int64_t)a->dflt;
    else if (a->kind == UG_ARG_TENSOR) env[p->sym_of_arg[i]] = !cs->omit[i];
  }
}

int ck_run_case(ubg_ctx *ctx, const ug_pass *p, const ref_entry *ref, int dtype, const ug_case *cs, uint64_t seed,
                char *msg, size_t n) {
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
  void *bufs[UG_MAX_ARGS] = {0}, *copies[UG_MAX_ARGS] = {0};
  double *outs[UG_MAX_ARGS] = {0};
  int64_t counts[UG_MAX_ARGS] = {0};
  ubg_arg args[UG_MAX_ARGS];
  ref_slot rargs[UG_MAX_ARGS];
  int rc = -1;
  if (!env) {
    snprintf(msg, n, "out of memory");
    return -1;
  }
  ck_case_env(p, cs, env);
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    args[i].name = a->name;
    if (a->kind == UG_ARG_INT) {
      args[i].kind = UBG_ARG_I64;
      args[i].v.i = rargs[i].i = env[p->sym_of_arg[i]];
      continue;
    }
    if (a->kind == UG_ARG_FLOAT) {
      args[i].kind = UBG_ARG_F64;
      args[i].v.f = rargs[i].f = cs->set[i] ? cs->floats[i] : a->dflt;
      continue;
    }
    args[i].kind = UBG_ARG_PTR;
    args[i].v.p = rargs[i].p = NULL;
    if (cs->omit[i]) continue;
    int64_t count = 1;
    for (int d = 0; d < a->rank; d++) {
      int64_t dim;
      ug_expr_err err;
      if (ug_expr_eval(a->shape[d], env, &dim, &err) < 0 || __builtin_mul_overflow(count, dim, &count) ||
          count > ((int64_t)1 << 31)) {
        snprintf(msg, n, "case shape: %s is too large or invalid", a->name);
        goto out;
      }
    }
    int rdt = ref_dtype_of(a->elem, dtype);
    size_t esize = ug_elem_bytes(a->elem, dtype);
    counts[i] = count;
    bufs[i] = malloc((size_t)count * esize + 64);
    copies[i] = malloc((size_t)count * esize + 64);
    if (!bufs[i] || !copies[i]) {
      snprintf(msg, n, "out of memory");
      goto out;
    }
    if (a->role == UG_ROLE_OUT) {
      memset(bufs[i], 0xff, (size_t)count * esize); /* NaN in every float format: unwritten shows */
    } else {
      const ug_init *init = NULL;
      for (int k = 0; k < p->ninits; k++)
        if (p->inits[k].arg == i) init = &p->inits[k];
      int64_t lo = 0, hi = 0;
      ug_expr_err err;
      bool ranged = !init && a->range_lo && ug_expr_eval(a->range_lo, env, &lo, &err) == 0 &&
                    ug_expr_eval(a->range_hi, env, &hi, &err) == 0 && lo < hi;
      for (int64_t e = 0; e < count; e++) {
        double v;
        if (ranged) v = (double)(lo + (int64_t)(uniform(&seed) * (double)(hi - lo)));
        else if (init && init->integer) v = floor(init->lo + uniform(&seed) * (init->hi - init->lo + 1));
        else if (init) v = init->lo + uniform(&seed) * (init->hi - init->lo);
        else v = normal(&seed);
        if (rdt >= 0) ref_store(bufs[i], e, rdt, v);
        else if (esize == 8) ((int64_t *)bufs[i])[e] = (int64_t)v;
        else if (esize == 4) ((int32_t *)bufs[i])[e] = (int32_t)v;
        else ((uint8_t *)bufs[i])[e] = (uint8_t)v;
      }
    }
    memcpy(copies[i], bufs[i], (size_t)count * esize);
    args[i].v.p = bufs[i];
    rargs[i].p = copies[i];
    if (a->role != UG_ROLE_IN) {
      outs[i] = malloc((size_t)count * sizeof(double) + 8);
      if (!outs[i]) {
        snprintf(msg, n, "out of memory");
        goto out;
      }
    }
  }
  ubg_status s = ubg_launch(ctx, p->kernel->name, p->name, (ubg_dtype)dtype, args, (size_t)p->nargs);
  if (s != UBG_OK) {
    snprintf(msg, n, "%s: %s", ubg_status_str(s), ubg_ctx_error(ctx));
    goto out;
  }
  ref->fn(rargs, dtype, outs);
  rc = 0;
  for (int i = 0; i < p->nargs && rc == 0; i++) {
    if (!outs[i]) continue;
    const ug_arg *a = &p->args[i];
    int rdt = ref_dtype_of(a->elem, dtype);
    if (rdt < 0) continue; /* integer outputs are compared by their kernels' own tests */
    double err;
    int64_t bad = ref_compare(bufs[i], rdt, outs[i], counts[i], p->tol[dtype].atol, p->tol[dtype].rtol, &err);
    if (bad >= 0) {
      snprintf(msg, n, "%s[%lld] = %.9g, reference %.9g (atol %g, rtol %g)", a->name, (long long)bad,
               ref_load(bufs[i], bad, rdt), outs[i][bad], p->tol[dtype].atol, p->tol[dtype].rtol);
      rc = 1;
    }
  }
out:
  for (int i = 0; i < p->nargs; i++) {
    free(bufs[i]);
    free(copies[i]);
    free(outs[i]);
  }
  free(env);
  return rc;
}

#include "check_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/bind.h"
#include "isolate.h"
#include "../gen/ckd.h"

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

/* the tensors and the reference's outputs live in shared memory: a child
 * process that runs the call or the reference writes them for the parent */
static size_t tensor_bytes(const cli_check_call *c, int i) { return c->bytes[i] + 64; }
static size_t out_bytes(const cli_check_call *c, int i) { return (size_t)c->counts[i] * sizeof(double) + 8; }

void cli_check_call_free(cli_check_call *c) {
  for (int i = 0; i < UG_MAX_ARGS; i++) {
    cli_shared_free(c->bufs[i], tensor_bytes(c, i));
    cli_shared_free(c->copies[i], tensor_bytes(c, i));
    cli_shared_free(c->outs[i], out_bytes(c, i));
  }
  cli_shared_free(c->msg, CLI_CHECK_MSG);
  free(c->env);
  memset(c, 0, sizeof *c);
}

/* the elements of tensor a at env: 0 ok, -1 invalid or over 2^31 */
static int tensor_count(const ug_arg *a, const int64_t *env, int64_t *count) {
  *count = 1;
  for (int d = 0; d < a->rank; d++) {
    int64_t dim;
    ug_expr_err err;
    if (ug_expr_eval(a->shape[d], env, &dim, &err) < 0 || ug_ckd_mul(count, *count, dim) ||
        *count > ((int64_t)1 << 31))
      return -1;
  }
  return 0;
}

int64_t cli_check_call_bytes(const ug_pass *p, int dtype, const ug_case *cs) {
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env), total = 0, count;
  if (!env) return -1;
  ug_case_env(p, cs, env);
  for (int i = 0; i < p->nargs && total >= 0; i++) {
    const ug_arg *a = &p->args[i];
    if (a->kind == UG_ARG_INT || a->kind == UG_ARG_FLOAT || cs->omit[i]) continue;
    total = tensor_count(a, env, &count) < 0 ? -1 : total + count * (int64_t)ug_elem_bytes(a->elem, dtype);
  }
  free(env);
  return total;
}

int cli_check_call_make(cli_check_call *c, const ug_pass *p, int dtype, const ug_case *cs, uint64_t seed, char *msg, size_t n) {
  memset(c, 0, sizeof *c);
  c->p = p;
  c->dtype = dtype;
  c->env = calloc((size_t)p->nsyms + 1, sizeof *c->env);
  c->msg = cli_shared_alloc(CLI_CHECK_MSG);
  if (!c->env || !c->msg) {
    snprintf(msg, n, "out of memory");
    return -1;
  }
  int64_t *env = c->env;
  ug_case_env(p, cs, env);
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    c->args[i].name = a->name;
    if (a->kind == UG_ARG_INT) {
      c->args[i].kind = UBG_ARG_I64;
      c->args[i].v.i = c->rargs[i].i = env[p->sym_of_arg[i]];
      continue;
    }
    if (a->kind == UG_ARG_FLOAT) {
      c->args[i].kind = UBG_ARG_F64;
      c->args[i].v.f = c->rargs[i].f = cs->set[i] ? cs->floats[i] : a->dflt;
      continue;
    }
    c->args[i].kind = UBG_ARG_PTR;
    c->args[i].v.p = c->rargs[i].p = NULL;
    if (cs->omit[i]) continue;
    int64_t count;
    if (tensor_count(a, env, &count) < 0) {
      snprintf(msg, n, "case shape: %s is too large or invalid", a->name);
      goto fail;
    }
    int rdt = ref_dtype_of(a->elem, dtype);
    size_t esize = ug_elem_bytes(a->elem, dtype);
    c->counts[i] = count;
    c->bytes[i] = (size_t)count * esize;
    c->bufs[i] = cli_shared_alloc(tensor_bytes(c, i));
    c->copies[i] = cli_shared_alloc(tensor_bytes(c, i));
    if (!c->bufs[i] || !c->copies[i]) {
      snprintf(msg, n, "out of memory");
      goto fail;
    }
    void *buf = c->bufs[i];
    if (a->role == UG_ROLE_OUT) {
      memset(buf, 0xff, c->bytes[i]); /* NaN in every float format: unwritten shows */
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
        if (rdt >= 0) ref_store(buf, e, rdt, v);
        else if (esize == 8) ((int64_t *)buf)[e] = (int64_t)v;
        else if (esize == 4) ((int32_t *)buf)[e] = (int32_t)v;
        else ((uint8_t *)buf)[e] = (uint8_t)v;
      }
    }
    memcpy(c->copies[i], buf, c->bytes[i]);
    c->args[i].v.p = buf;
    c->rargs[i].p = c->copies[i];
  }
  return 0;
fail:
  cli_check_call_free(c);
  return -1;
}

void cli_check_call_reset(cli_check_call *c) {
  for (int i = 0; i < c->p->nargs; i++)
    if (c->bufs[i] && c->p->args[i].role != UG_ROLE_IN) memcpy(c->bufs[i], c->copies[i], c->bytes[i]);
}

ubg_status cli_check_call_run(ubg_ctx *ctx, cli_check_call *c) {
  return ubg_launch(ctx, c->p->kernel->name, c->p->name, (ubg_dtype)c->dtype, c->args, (size_t)c->p->nargs);
}

typedef struct {
  ubg_ctx *ctx;
  cli_check_call *c;
  cli_check_ref_fn ref;
} isolated_call;

static int run_in_child(void *arg) {
  isolated_call *ic = arg;
  const ubg_status s = cli_check_call_run(ic->ctx, ic->c);
  if (s) snprintf(ic->c->msg, CLI_CHECK_MSG, "%s", ubg_ctx_error(ic->ctx));
  return (int)s;
}

int cli_check_call_run_isolated(ubg_ctx *ctx, cli_check_call *c, int timeout_s, char *msg, size_t n) {
  isolated_call ic = {ctx, c, NULL};
  c->msg[0] = '\0';
  const int s = cli_isolated(run_in_child, &ic, timeout_s, msg, n);
  if (s > 0) snprintf(msg, n, "%s: %s", ubg_status_str((ubg_status)s), c->msg);
  return s;
}

static int reference_in_child(void *arg) {
  isolated_call *ic = arg;
  ic->ref(ic->c->rargs, ic->c->dtype, ic->c->outs);
  return 0;
}

int cli_check_call_reference(cli_check_call *c, cli_check_ref_fn ref, int timeout_s, char *msg, size_t n) {
  for (int i = 0; i < c->p->nargs; i++) {
    if (!c->bufs[i] || c->p->args[i].role == UG_ROLE_IN || c->outs[i]) continue;
    c->outs[i] = cli_shared_alloc(out_bytes(c, i));
    if (!c->outs[i]) {
      snprintf(msg, n, "out of memory");
      return -1;
    }
  }
  isolated_call ic = {NULL, c, ref};
  char why[512];
  if (cli_isolated(reference_in_child, &ic, timeout_s, why, sizeof why) != 0) {
    snprintf(msg, n, "the reference of %s.%s did not return: %s", c->p->kernel->name, c->p->name, why);
    return -1;
  }
  return 0;
}

int cli_check_call_compare(const cli_check_call *c, char *msg, size_t n) {
  const ug_pass *p = c->p;
  for (int i = 0; i < p->nargs; i++) {
    if (!c->outs[i]) continue;
    const ug_arg *a = &p->args[i];
    int rdt = ref_dtype_of(a->elem, c->dtype);
    if (rdt < 0) continue; /* integer outputs are compared by their kernels' own tests */
    double err;
    const ug_tol *t = &p->tol[c->dtype];
    int64_t bad = ref_compare(c->bufs[i], rdt, c->outs[i], c->counts[i], t->atol, t->rtol, &err);
    if (bad >= 0) {
      snprintf(msg, n, "%s[%lld] = %.9g, reference %.9g (atol %g, rtol %g)", a->name, (long long)bad,
               ref_load(c->bufs[i], bad, rdt), c->outs[i][bad], t->atol, t->rtol);
      return 1;
    }
  }
  return 0;
}

int cli_check_call_save(const cli_check_call *c, void **saved) {
  for (int i = 0; i < c->p->nargs; i++) {
    if (!c->bufs[i] || c->p->args[i].role == UG_ROLE_IN) continue;
    if (!saved[i] && !(saved[i] = malloc(c->bytes[i] + 1))) return -1;
    memcpy(saved[i], c->bufs[i], c->bytes[i]);
  }
  return 0;
}

int cli_check_call_same_bits(const cli_check_call *c, void *const *saved, char *msg, size_t n) {
  for (int i = 0; i < c->p->nargs; i++) {
    if (!saved[i] || !memcmp(saved[i], c->bufs[i], c->bytes[i])) continue;
    const ug_arg *a = &c->p->args[i];
    size_t esize = ug_elem_bytes(a->elem, c->dtype);
    int64_t e = 0;
    while (e < c->counts[i] && !memcmp((char *)saved[i] + (size_t)e * esize, (char *)c->bufs[i] + (size_t)e * esize, esize))
      e++;
    int rdt = ref_dtype_of(a->elem, c->dtype);
    if (rdt >= 0)
      snprintf(msg, n, "%s[%lld] = %.9g where the variant it is checked against gives %.9g", a->name, (long long)e,
               ref_load(c->bufs[i], e, rdt), ref_load(saved[i], e, rdt));
    else
      snprintf(msg, n, "%s[%lld] differs from the variant it is checked against", a->name, (long long)e);
    return 1;
  }
  return 0;
}

int cli_check_run_case(ubg_ctx *ctx, const ug_pass *p, cli_check_ref_fn ref, int dtype, const ug_case *cs, uint64_t seed,
                char *msg, size_t n) {
  cli_check_call c;
  if (cli_check_call_make(&c, p, dtype, cs, seed, msg, n) < 0) return -1;
  int rc = -1;
  ubg_status s = cli_check_call_run(ctx, &c);
  if (s != UBG_OK) snprintf(msg, n, "%s: %s", ubg_status_str(s), ubg_ctx_error(ctx));
  else if (cli_check_call_reference(&c, ref, CLI_TIMEOUT_DEFAULT, msg, n) == 0) rc = cli_check_call_compare(&c, msg, n);
  cli_check_call_free(&c);
  return rc;
}

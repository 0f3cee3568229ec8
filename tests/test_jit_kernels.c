/* The JIT for the kernels after RMSNorm (the JIT_TESTS list at the end):
 * each variant compiled by tcc (every feasible one) and by gcc (every
 * 28th, at least one of each pass and dtype: gcc takes 0.3 s a variant;
 * its JIT renders and compiles the source the build compiled, so the
 * sample checks that path, not gcc) gives the built-in variant's bits, on
 * every one of the spec's check cases the variant applies to.
 * The calls go through ubg_launch with arguments built from the spec
 * alone, so the same test serves any kernel whose spec has check cases.
 *
 * Under valgrind (TC_VALGRIND) the gcc half is left out and tcc compiles
 * every sixth variant of the sample (each pass still several, of each
 * dtype): the gcc JIT's path (render, compile, load) is the same for
 * every kernel and test_jit runs it there, and the code both compile is
 * the built-in kernels' source, which each op's suite runs under
 * valgrind; this suite was the stage's longest (233 s with every third). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "../gen/bind.h"
#include "test_util.h"


/* env of a check case: its ints (or defaults) and has_<tensor> */
static void case_env(const ug_pass *p, const ug_case *cs, int64_t *env) {
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    if (a->kind == UG_ARG_INT) env[p->sym_of_arg[i]] = cs->set[i] ? cs->ints[i] : (int64_t)a->dflt;
    else if (a->kind == UG_ARG_TENSOR) env[p->sym_of_arg[i]] = !cs->omit[i];
  }
}

typedef struct {
  ubg_arg args[UG_MAX_ARGS];
  void *out[2][UG_MAX_ARGS]; /* output tensors, one set per context */
  size_t bytes[UG_MAX_ARGS];
  void *in[UG_MAX_ARGS];
} call_args;

/* inputs: index tensors uniform in their range, the spec's "inputs" ranges,
 * else N(0, 1); outputs filled with 0xff */
static void build_args(const ug_pass *p, const ug_case *cs, int64_t *env, int dt, uint64_t seed, call_args *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < p->nargs; i++) {
    const ug_arg *a = &p->args[i];
    c->args[i].name = a->name;
    if (a->kind == UG_ARG_INT) {
      c->args[i].kind = UBG_ARG_I64;
      c->args[i].v.i = env[p->sym_of_arg[i]];
      continue;
    }
    if (a->kind == UG_ARG_FLOAT) {
      c->args[i].kind = UBG_ARG_F64;
      c->args[i].v.f = cs->set[i] ? cs->floats[i] : a->dflt;
      continue;
    }
    c->args[i].kind = UBG_ARG_PTR;
    if (cs->omit[i]) continue;
    int64_t count = 1, dim, lo = 0, hi = 0;
    ug_expr_err err;
    for (int d = 0; d < a->rank; d++) {
      cr_assert_eq(ug_expr_eval(a->shape[d], env, &dim, &err), 0);
      count *= dim;
    }
    const size_t es = ug_elem_bytes(a->elem, dt);
    c->bytes[i] = (size_t)count * es;
    if (a->role != UG_ROLE_IN) {
      for (int k = 0; k < 2; k++) {
        c->out[k][i] = malloc(c->bytes[i] + 1);
        memset(c->out[k][i], 0xff, c->bytes[i]);
      }
      continue;
    }
    void *buf = malloc(c->bytes[i] + 1);
    const ug_init *init = NULL;
    for (int k = 0; k < p->ninits; k++)
      if (p->inits[k].arg == i) init = &p->inits[k];
    if (a->range_lo) {
      cr_assert_eq(ug_expr_eval(a->range_lo, env, &lo, &err), 0);
      cr_assert_eq(ug_expr_eval(a->range_hi, env, &hi, &err), 0);
    }
    const int rdt = a->elem == UG_ELEM_T ? dt : a->elem == UG_ELEM_F32 ? REF_F32 : a->elem == UG_ELEM_F16 ? REF_F16
                                                                       : REF_BF16;
    for (int64_t e = 0; e < count; e++) {
      const double u = (double)(tc_next(&seed) >> 11) * 0x1.0p-53;
      const int64_t pick = lo + (int64_t)(u * (double)(hi - lo));
      if (a->range_lo && !init && a->elem == UG_ELEM_I32) ((int32_t *)buf)[e] = (int32_t)pick; /* an i32 index */
      else if (a->range_lo && !init) ((int64_t *)buf)[e] = pick;
      else if (a->elem == UG_ELEM_I64) /* labels drawn from their "integers" init (ubgen check's rule) */
        ((int64_t *)buf)[e] = init ? (int64_t)floor(init->lo + u * (init->hi - init->lo + 1)) : 0;
      else ref_store(buf, e, rdt, init ? init->lo + u * (init->hi - init->lo) : tc_normal(&seed));
    }
    c->in[i] = buf;
  }
}

static void free_args(call_args *c) {
  for (int i = 0; i < UG_MAX_ARGS; i++) free(c->in[i]), free(c->out[0][i]), free(c->out[1][i]);
}

static void same_bits(const char *kernel, const char *pass, int dt, ubg_backend backend, int every) {
  tc_variants vs = tc_kernel_variants(kernel, pass, dt);
  cr_assert(vs.n > 0);
  const ug_pass *p = ug_spec_pass(vs.spec, pass);
  const char *suffix = backend == UBG_BACKEND_GCC ? "gcc" : "tcc";
  if (backend == UBG_BACKEND_GCC) tc_fresh_cache();
  ubg_ctx *ctxs[2] = {tc_ctx(UBG_BACKEND_AOT, 2), tc_ctx(backend, 2)};
  int64_t *env = calloc((size_t)p->nsyms + 1, sizeof *env);
  int ran = 0;
  for (int vi = 0; vi < vs.n; vi += every) {
    const ug_variant *v = &vs.v[vi];
    int cases = 0;
    for (int k = 0; k < p->ncases; k++) {
      int failed;
      ug_diag d;
      const ug_case *cs = &p->cases[k];
      case_env(p, cs, env);
      if (ug_bind(p, &v->pt, env, &failed, &d) != 0) continue; /* the variant does not apply to this shape */
      call_args c;
      build_args(p, cs, env, dt, (uint64_t)(vi * 64 + k), &c);
      for (int x = 0; x < 2; x++) {
        for (int i = 0; i < p->nargs; i++)
          if (p->args[i].kind == UG_ARG_TENSOR) c.args[i].v.p = c.in[i] ? c.in[i] : c.out[x][i];
        cr_assert_eq(ubg_set_variant(ctxs[x], kernel, pass, v->name), UBG_OK, "%s", ubg_ctx_error(ctxs[x]));
        ubg_status s = ubg_launch(ctxs[x], kernel, pass, (ubg_dtype)dt, c.args, (size_t)p->nargs);
        cr_assert_eq(s, UBG_OK, "%s: %s", v->name, ubg_ctx_error(ctxs[x]));
      }
      char want[200];
      snprintf(want, sizeof want, "%s@%s", v->name, suffix);
      cr_assert_str_eq(ubg_ctx_last_variant(ctxs[1]), want);
      for (int i = 0; i < p->nargs; i++)
        if (c.out[0][i])
          cr_assert(!memcmp(c.out[0][i], c.out[1][i], c.bytes[i]), "%s, check case %d: %s from %s differs from the built-in's",
                    v->name, k, p->args[i].name, suffix);
      free_args(&c);
      cases++;
    }
    ran += cases > 0;
  }
  cr_log_info("%s.%s %s %s: %d variants compared", kernel, pass, ug_dtype_name(dt), suffix, ran);
  cr_assert(ran >= vs.n / every / 2, "only %d of %d variants had a check case", ran, vs.n / every);
  free(env);
  ubg_ctx_destroy(ctxs[0]);
  ubg_ctx_destroy(ctxs[1]);
  tc_free_variants(&vs);
  if (backend == UBG_BACKEND_GCC) tc_drop_cache();
}

#ifdef TC_VALGRIND
enum { TCC_EVERY = 6, GCC_LEFT_OUT = 1 };
#else
enum { TCC_EVERY = 1, GCC_LEFT_OUT = 0 };
#endif

#define JIT_TESTS(kernel, pass)                                                                              \
  Test(jit_tcc_##kernel, pass, .timeout = 300 * TC_TIME_SCALE) {                                             \
    for (int dt = 0; dt < 3; dt++) same_bits(#kernel, #pass, dt, UBG_BACKEND_TCC, TCC_EVERY);                \
  }                                                                                                          \
  Test(jit_gcc_##kernel, pass, .timeout = 300 * TC_TIME_SCALE, .disabled = GCC_LEFT_OUT) {                   \
    for (int dt = 0; dt < 3; dt++) same_bits(#kernel, #pass, dt, UBG_BACKEND_GCC, 28);                       \
  }

JIT_TESTS(embedding, fwd)
JIT_TESTS(embedding, bwd)
JIT_TESTS(attn_res, fwd)
JIT_TESTS(attn_res, bwd)
JIT_TESTS(swiglu, fwd)
JIT_TESTS(swiglu, bwd)
JIT_TESTS(geglu, fwd)
JIT_TESTS(geglu, bwd)
JIT_TESTS(layer_norm, fwd)
JIT_TESTS(layer_norm, bwd)
JIT_TESTS(rope, fwd)
JIT_TESTS(rope, bwd)
JIT_TESTS(rope, mrope_fwd)
JIT_TESTS(rope, mrope_bwd)
JIT_TESTS(dyt, fwd)
JIT_TESTS(dyt, bwd)
JIT_TESTS(relu_squared, fwd)
JIT_TESTS(relu_squared, bwd)
JIT_TESTS(softmax, fwd)
JIT_TESTS(softmax, bwd)
JIT_TESTS(neighborhood_attention, fwd)
JIT_TESTS(neighborhood_attention, bwd)
JIT_TESTS(mhc, coeffs_fwd)
JIT_TESTS(mhc, coeffs_bwd)
JIT_TESTS(mhc, pre_fwd)
JIT_TESTS(mhc, pre_bwd)
JIT_TESTS(mhc, post_res_fwd)
JIT_TESTS(mhc, post_res_bwd)
JIT_TESTS(grpo_loss, fwd)
JIT_TESTS(grpo_loss, bwd)
JIT_TESTS(tvd, fwd)
JIT_TESTS(tvd, bwd)
JIT_TESTS(kl_div, fwd)
JIT_TESTS(kl_div, bwd)
JIT_TESTS(jsd, fwd)
JIT_TESTS(fused_linear_jsd, rows)
JIT_TESTS(fused_linear_jsd, count)
JIT_TESTS(fused_moe, route)
JIT_TESTS(fused_moe, act)
JIT_TESTS(fused_moe, act_bwd)
JIT_TESTS(fused_moe, combine)
JIT_TESTS(poly_norm, fwd)
JIT_TESTS(poly_norm, bwd)
JIT_TESTS(sparsemax, fwd)
JIT_TESTS(sparsemax, bwd)
JIT_TESTS(llama4_rope, fwd)
JIT_TESTS(llama4_rope, bwd)
JIT_TESTS(modulated_rms_norm, fwd)
JIT_TESTS(modulated_rms_norm, bwd)
JIT_TESTS(group_norm, fwd)
JIT_TESTS(group_norm, bwd)
JIT_TESTS(fused_add_rms_norm, fwd)
JIT_TESTS(fused_add_rms_norm, bwd)

/* Kernel inputs at their edges, for every op (RMSNorm, embedding and AttnRes,
 * forward and backward, and FLCE) in f32, f16 and bf16.
 *
 * 1. NaN and Inf in inputs and weights. docs/semantics.md keeps NaN and Inf in every
 *    storage dtype, and no document lets an op refuse them in a tensor (only
 *    float arguments must be finite: eps, offset, FLCE's options; their
 *    refusal is checked here too). So every op must run (UBG_OK) and give
 *    NaN exactly where the double reference (tests/ref) gives NaN, the same
 *    infinity where it gives one, and finite values within the kernel
 *    suites' tolerances everywhere else. Each special value sits in some
 *    rows (tokens) and not in others, so both kinds of output are checked
 *    in one call. Every variant that applies is forced in turn (for FLCE,
 *    those of the CE pass), since their code paths differ (tiled or not,
 *    vector bodies and scalar tails). NaNs are quiet and signalling, of both
 *    signs; the embedding forward, a copy, must keep their bits.
 * 2. Alignment (docs/semantics.md). Pointers aligned to their element size
 *    and to nothing more (a 64-byte aligned slot plus 1 or 3 elements) give
 *    the same bits as 64-byte aligned ones and write nothing outside their
 *    tensors. A pointer not aligned to its element size cannot be
 *    dereferenced in C (undefined behaviour), so it is refused before
 *    anything is read or written: UBG_EINVAL, a message with the argument,
 *    its address and the alignment, every byte of every buffer as it was.
 *    Every pointer argument of every op.
 * 3. Sizes whose byte count overflows int64 are refused with the sizes in
 *    the message; outputs overlapping an input or another output are
 *    refused with both names in it (only the spec's may_alias pairs, y = x
 *    and dx = dy of RMSNorm, may be the very same buffer; never a partial
 *    overlap); nothing is written. Every output against every other tensor
 *    of every op, each overlap at the start and at the end of the other.
 *
 * Shapes are small (rows of 37, 19 and 20 elements leave vector tails; the
 * shapes are in the comments at each op), so the file runs in seconds. */
#include <criterion/criterion.h>
#include <float.h>
#include <stdio.h>

#include "ref/flce_ref.h"
#include "test_util.h"

/* ======================================================================
 * Part 1: NaN and Inf
 * ====================================================================== */

enum { QNAN, SNAN_NEG, PINF, NINF };

/* element i of a tensor in dt := a quiet NaN, a negative signalling NaN with
 * a payload (the hardware quiets it when it computes), +Inf or -Inf */
static void put(void *p, int64_t i, int dt, int what) {
  if (what == PINF || what == NINF) {
    ref_store(p, i, dt, what == PINF ? INFINITY : -INFINITY);
  } else if (dt == REF_F32) {
    const uint32_t u = what == QNAN ? 0x7fc00000u : 0xff800001u;
    memcpy((char *)p + 4 * i, &u, 4);
  } else {
    const uint16_t h = dt == REF_F16 ? (what == QNAN ? 0x7e00 : 0xfd01) : (what == QNAN ? 0x7fc0 : 0xff81);
    memcpy((char *)p + 2 * i, &h, 2);
  }
}

typedef struct {
  int64_t nonfinite, finite; /* reference values seen */
} tally;

/* got[0, n) in dt against the reference: NaN where it is NaN, the same
 * infinity where it is infinite, finite and within atol + rtol |want|
 * elsewhere */
static void expect_like_ref(const char *where, const char *what, const void *got, int dt, const double *want, int64_t n,
                            double atol, double rtol, tally *t) {
  for (int64_t i = 0; i < n; i++) {
    const double g = ref_load(got, i, dt), w = want[i];
    if (isnan(w))
      cr_assert(isnan(g), "%s: %s[%lld] = %.9g, the reference is NaN", where, what, (long long)i, g);
    else if (isinf(w))
      cr_assert(g == w, "%s: %s[%lld] = %.9g, the reference is %g", where, what, (long long)i, g, w);
    else
      cr_assert(isfinite(g) && fabs(g - w) <= atol + rtol * fabs(w),
                "%s: %s[%lld] = %.9g, the reference %.9g (atol %g, rtol %g)", where, what, (long long)i, g, w, atol,
                rtol);
    if (isfinite(w)) t->finite++;
    else t->nonfinite++;
  }
}

/* the case must have exercised both kinds of reference value (or, with
 * all_nonfinite, at least the non-finite kind) */
static void expect_mixed(const tally *t, const char *where, bool all_nonfinite) {
  cr_assert(t->nonfinite > 0, "%s: the reference has no NaN or Inf: the case tests nothing", where);
  if (!all_nonfinite) cr_assert(t->finite > 0, "%s: the reference has no finite value", where);
}

/* The feasible variants of kernel.pass in dt that apply to a row of dim
 * elements (and, for AttnRes, to nb blocks: axis 1 is MAX_BLOCKS), then ""
 * for the default choice. */
typedef struct {
  int n;
  char name[200][96];
} vlist;

static vlist *variants_of(const char *kernel, const char *pass, int dt, int64_t dim, int64_t nb) {
  vlist *l = calloc(1, sizeof *l);
  tc_variants vs = tc_kernel_variants(kernel, pass, dt);
  cr_assert(vs.n > 0, "no variants of %s.%s", kernel, pass);
  for (int i = 0; i < vs.n && l->n < 199; i++) {
    if (!tc_applies(&vs.v[i], dim) || (nb > 0 && vs.v[i].pt.axis[1] < nb)) continue;
    snprintf(l->name[l->n++], sizeof l->name[0], "%s", vs.v[i].name);
  }
  l->name[l->n++][0] = '\0';
  tc_free_variants(&vs);
  return l;
}

static void force(ubg_ctx *ctx, const char *kernel, const char *pass, const char *name) {
  cr_assert_eq(ubg_set_variant(ctx, kernel, pass, name[0] ? name : NULL), UBG_OK, "%s", ubg_ctx_error(ctx));
}

/* the backend of this test process (Criterion runs each test in its own) */
static const char *backend_shown = "aot";

/* "variant@backend" for messages */
static const char *shown(const char *variant) {
  static char b[160];
  snprintf(b, sizeof b, "%s@%s", variant[0] ? variant : "default choice", backend_shown);
  return b;
}

/* ---- RMSNorm: x, y, dy, dx [R, C]; w, dw [C]; rstd [R] (tests/test_rms_norm.c's tolerances) */

enum { RN_R = 6, RN_C = 37 };
static const double rn_atol[3] = {1e-4, 1e-2, 2e-1}, rn_rtol[3] = {1e-6, 1e-2, 2e-2};
static const char *const cast_names[] = {"llama", "gemma", "none"};

static void rms_norm_fwd_nonfinite(int dt, ubg_backend be) {
  const int64_t R = RN_R, C = RN_C, N = R * C;
  const size_t es = ref_dtype_bytes(dt);
  static const char *const cases[] = {"x (with w)", "x (no w)", "w"};
  ubg_ctx *ctx = tc_ctx(be, 2);
  vlist *vl = variants_of("rms_norm", "fwd", dt, C, 0);
  void *y = malloc((size_t)N * es);
  float rstd[RN_R];
  double want_y[RN_R * RN_C], want_r[RN_R];
  for (int casting = 0; casting < 3; casting++)
    for (int k = 0; k < 3; k++) {
      void *x = tc_tensor(dt, N, 0, 1, 100 + (uint64_t)k);
      void *w = k == 1 ? NULL : tc_tensor(dt, C, casting == 1 ? 0 : 1, 0.5, 200 + (uint64_t)k);
      if (k < 2) { /* rows 1, 2, 4, 5; rows 0 and 3 stay finite */
        put(x, 1 * C + 3, dt, QNAN), put(x, 2 * C + 0, dt, PINF), put(x, 4 * C + 36, dt, NINF);
        put(x, 5 * C + 10, dt, SNAN_NEG);
      } else { /* columns 5, 9, 20, 30 of every row */
        put(w, 5, dt, QNAN), put(w, 9, dt, PINF), put(w, 20, dt, NINF), put(w, 30, dt, SNAN_NEG);
      }
      const float eps = 1e-6f, offset = casting == 1 ? 1.0f : 0.0f;
      ref_slot a[9] = {{.p = x},  {.p = w},  {.p = NULL},   {.p = NULL},      {.i = R},
                       {.i = C},  {.f = eps}, {.f = offset}, {.i = casting}};
      double *outs[9] = {0};
      outs[2] = want_y, outs[3] = want_r;
      ref_find("rms_norm", "fwd")->fn(a, dt, outs);
      tally t = {0, 0};
      char where[256];
      for (int i = 0; i < vl->n; i++) {
        snprintf(where, sizeof where, "rms_norm fwd %s %s, NaN/Inf in %s, %s", ug_dtype_name(dt), cast_names[casting],
                 cases[k], shown(vl->name[i]));
        force(ctx, "rms_norm", "fwd", vl->name[i]);
        memset(y, 0x5a, (size_t)N * es), memset(rstd, 0x5a, sizeof rstd);
        cr_assert_eq(ubg_rms_norm_fwd(ctx, dt, R, C, x, w, eps, offset, casting, y, rstd), UBG_OK, "%s: %s", where,
                     ubg_ctx_error(ctx));
        expect_like_ref(where, "y", y, dt, want_y, N, rn_atol[dt], rn_rtol[dt], &t);
        expect_like_ref(where, "rstd", rstd, REF_F32, want_r, R, rn_atol[dt], rn_rtol[dt], &t);
      }
      expect_mixed(&t, where, false);
      free(x), free(w);
    }
  free(y), free(vl);
  ubg_ctx_destroy(ctx);
}

static void rms_norm_bwd_nonfinite(int dt, ubg_backend be) {
  const int64_t R = RN_R, C = RN_C, N = R * C;
  const size_t es = ref_dtype_bytes(dt);
  static const char *const cases[] = {"dy (with w)", "dy (no w)", "x", "w", "rstd"};
  ubg_ctx *ctx = tc_ctx(be, 2);
  vlist *vl = variants_of("rms_norm", "bwd", dt, C, 0);
  void *dx = malloc((size_t)N * es), *dw = malloc((size_t)C * es);
  double want_dx[RN_R * RN_C], want_dw[RN_C];
  for (int casting = 0; casting < 3; casting++)
    for (int k = 0; k < 5; k++) {
      void *x = tc_tensor(dt, N, 0, 1, 300 + (uint64_t)k), *dy = tc_tensor(dt, N, 0, 1, 400 + (uint64_t)k);
      void *w = k == 1 ? NULL : tc_tensor(dt, C, casting == 1 ? 0 : 1, 0.5, 500 + (uint64_t)k);
      float rstd[RN_R]; /* as the forward gives it for the finite x */
      for (int64_t r = 0; r < R; r++) {
        double ss = 0;
        for (int64_t d = 0; d < C; d++) ss += pow(ref_load(x, r * C + d, dt), 2);
        rstd[r] = (float)(1.0 / sqrt(ss / (double)C + 1e-6));
      }
      if (k < 2) {
        put(dy, 1 * C + 3, dt, QNAN), put(dy, 2 * C + 0, dt, PINF), put(dy, 4 * C + 36, dt, NINF);
        put(dy, 5 * C + 10, dt, SNAN_NEG);
      } else if (k == 2) {
        put(x, 1 * C + 3, dt, PINF), put(x, 3 * C + 7, dt, QNAN), put(x, 4 * C + 0, dt, NINF);
      } else if (k == 3) {
        put(w, 5, dt, QNAN), put(w, 9, dt, PINF), put(w, 20, dt, NINF);
      } else {
        put(rstd, 1, REF_F32, QNAN), put(rstd, 2, REF_F32, PINF), put(rstd, 4, REF_F32, NINF);
      }
      const float offset = casting == 1 ? 1.0f : 0.0f;
      ref_slot a[10] = {{.p = dy}, {.p = x}, {.p = w}, {.p = rstd}, {.p = NULL},
                        {.p = NULL}, {.i = R}, {.i = C}, {.f = offset}, {.i = casting}};
      double *outs[10] = {0};
      outs[4] = want_dx, outs[5] = w ? want_dw : NULL;
      ref_find("rms_norm", "bwd")->fn(a, dt, outs);
      tally t = {0, 0};
      char where[256];
      for (int i = 0; i < vl->n; i++) {
        snprintf(where, sizeof where, "rms_norm bwd %s %s, NaN/Inf in %s, %s", ug_dtype_name(dt), cast_names[casting],
                 cases[k], shown(vl->name[i]));
        force(ctx, "rms_norm", "bwd", vl->name[i]);
        memset(dx, 0x5a, (size_t)N * es), memset(dw, 0x5a, (size_t)C * es);
        cr_assert_eq(ubg_rms_norm_bwd(ctx, dt, R, C, dy, x, w, rstd, offset, casting, dx, w ? dw : NULL), UBG_OK,
                     "%s: %s", where, ubg_ctx_error(ctx));
        expect_like_ref(where, "dx", dx, dt, want_dx, N, rn_atol[dt], rn_rtol[dt], &t);
        if (w) expect_like_ref(where, "dw", dw, dt, want_dw, C, rn_atol[dt], rn_rtol[dt], &t);
      }
      expect_mixed(&t, where, false);
      free(x), free(dy), free(w);
    }
  free(dx), free(dw), free(vl);
  ubg_ctx_destroy(ctx);
}

/* ---- embedding: table, dtable [V, D]; indices [N]; out, dout [N, D]
 * (tests/test_embedding.c: the forward exact, the backward at Liger's
 * tolerances; a handful of summands stay far inside them) */

enum { EM_V = 7, EM_D = 19 };
static const double em_atol[3] = {1e-6, 1e-3, 1e-2}, em_rtol[3] = {1e-5, 1e-3, 1e-2};

static void embedding_fwd_nonfinite(int dt, ubg_backend be) {
  enum { N = 10 };
  const int64_t V = EM_V, D = EM_D;
  const size_t es = ref_dtype_bytes(dt), row = (size_t)D * es;
  const int64_t idx[N] = {2, 5, 0, 2, 6, 5, 1, 2, 3, 4};
  ubg_ctx *ctx = tc_ctx(be, 2);
  vlist *vl = variants_of("embedding", "fwd", dt, D, 0);
  void *table = tc_tensor(dt, V * D, 0, 1, 600), *out = malloc((size_t)N * row);
  put(table, 2 * D + 4, dt, QNAN), put(table, 2 * D + 7, dt, SNAN_NEG); /* rows 2 and 5 */
  put(table, 5 * D + 0, dt, PINF), put(table, 5 * D + 18, dt, NINF);
  double want[N * EM_D];
  ref_slot a[6] = {{.p = table}, {.p = (void *)idx}, {.p = NULL}, {.i = V}, {.i = D}, {.i = N}};
  double *outs[6] = {0};
  outs[2] = want;
  ref_find("embedding", "fwd")->fn(a, dt, outs);
  tally t = {0, 0};
  char where[256];
  for (int i = 0; i < vl->n; i++) {
    snprintf(where, sizeof where, "embedding fwd %s, NaN/Inf in table, %s", ug_dtype_name(dt), shown(vl->name[i]));
    force(ctx, "embedding", "fwd", vl->name[i]);
    memset(out, 0x5a, (size_t)N * row);
    cr_assert_eq(ubg_embedding_fwd(ctx, dt, V, D, table, N, idx, out), UBG_OK, "%s: %s", where, ubg_ctx_error(ctx));
    expect_like_ref(where, "out", out, dt, want, N * D, 0, 0, &t);
    for (int n = 0; n < N; n++) /* a copy: NaN payloads and signs too */
      cr_assert(!memcmp((char *)out + (size_t)n * row, (char *)table + (size_t)idx[n] * row, row),
                "%s: out row %d is not a bitwise copy of table row %lld", where, n, (long long)idx[n]);
  }
  expect_mixed(&t, where, false);
  free(table), free(out), free(vl);
  ubg_ctx_destroy(ctx);
}

static void embedding_bwd_nonfinite(int dt, ubg_backend be) {
  enum { N = 12 };
  const int64_t V = EM_V, D = EM_D;
  const size_t es = ref_dtype_bytes(dt);
  const int64_t idx[N] = {2, 2, 5, 3, 0, 2, 5, 3, 1, 6, 2, 0}; /* row 4 gets no token */
  ubg_ctx *ctx = tc_ctx(be, 2);
  vlist *vl = variants_of("embedding", "bwd", dt, D, 0);
  void *dout = tc_tensor(dt, N * D, 0, 1, 700), *dtable = malloc((size_t)(V * D) * es);
  put(dout, 0 * D + 4, dt, QNAN);     /* token 0 -> row 2 */
  put(dout, 1 * D + 0, dt, PINF);     /* token 1 -> row 2 */
  put(dout, 5 * D + 0, dt, NINF);     /* token 5 -> row 2: +Inf + -Inf, NaN */
  put(dout, 2 * D + 18, dt, PINF);    /* token 2 -> row 5 */
  put(dout, 6 * D + 9, dt, SNAN_NEG); /* token 6 -> row 5 */
  for (int64_t d = 0; d < D; d++) put(dout, 3 * D + d, dt, QNAN); /* token 3 -> row 3 */
  put(dout, 7 * D + 1, dt, NINF);                                 /* token 7 -> row 3 */
  double want[EM_V * EM_D];
  for (int pad = 0; pad < 2; pad++) {
    const int64_t padding_idx = pad ? 3 : -1; /* row 3, all NaN and -Inf, gets nothing when it is padding */
    ref_slot a[7] = {{.p = (void *)idx}, {.p = dout}, {.p = NULL}, {.i = V}, {.i = D}, {.i = N}, {.i = padding_idx}};
    double *outs[7] = {0};
    outs[2] = want;
    ref_find("embedding", "bwd")->fn(a, dt, outs);
    tally t = {0, 0};
    char where[256];
    for (int i = 0; i < vl->n; i++) {
      snprintf(where, sizeof where, "embedding bwd %s padding_idx %lld, NaN/Inf in dout, %s", ug_dtype_name(dt),
               (long long)padding_idx, shown(vl->name[i]));
      force(ctx, "embedding", "bwd", vl->name[i]);
      memset(dtable, 0x5a, (size_t)(V * D) * es);
      cr_assert_eq(ubg_embedding_bwd(ctx, dt, V, D, N, idx, dout, padding_idx, dtable), UBG_OK, "%s: %s", where,
                   ubg_ctx_error(ctx));
      expect_like_ref(where, "dtable", dtable, dt, want, V * D, em_atol[dt], em_rtol[dt], &t);
      for (int64_t d = 0; pad && d < D; d++)
        cr_assert_eq(ref_load(dtable, 3 * D + d, dt), 0.0, "%s: the padding row's dtable[3, %lld] is not 0", where,
                     (long long)d);
    }
    expect_mixed(&t, where, false);
  }
  free(dout), free(dtable), free(vl);
  ubg_ctx_destroy(ctx);
}

/* ---- AttnRes: v, dv [NB, T, D]; w_query, w_norm, dw_* [D]; out, dout [T, D];
 * alpha, rstd [T, NB] (tests/test_attn_res.c's tolerances) */

enum { AR_NB = 3, AR_T = 5, AR_D = 37 };
static const double ar_fwd_atol[3] = {1e-4, 1e-2, 1e-1}, ar_fwd_rtol[3] = {1e-5, 1e-3, 1e-2};
static const double ar_bwd_atol[3] = {1e-3, 5e-2, 2e-1}, ar_bwd_rtol[3] = {1e-4, 5e-3, 2e-2};

#define AR_V(i, t, d) (((int64_t)(i) * AR_T + (t)) * AR_D + (d))

static void ar_reference_fwd(int dt, void *v, void *wq, void *wn, double *out, double *alpha, double *rstd) {
  ref_slot a[10] = {{.p = v}, {.p = wq}, {.p = wn}, {.p = NULL}, {.p = NULL}, {.p = NULL},
                    {.i = AR_NB}, {.i = AR_T}, {.i = AR_D}, {.f = 1e-6f}};
  double *outs[10] = {0};
  outs[3] = out, outs[4] = alpha, outs[5] = rstd;
  ref_find("attn_res", "fwd")->fn(a, dt, outs);
}

static void attn_res_fwd_nonfinite(int dt, ubg_backend be) {
  const int64_t NB = AR_NB, T = AR_T, D = AR_D;
  const size_t es = ref_dtype_bytes(dt);
  static const char *const cases[] = {"v", "w_query", "w_norm"};
  ubg_ctx *ctx = tc_ctx(be, 2);
  vlist *vl = variants_of("attn_res", "fwd", dt, D, NB);
  void *out = malloc((size_t)(T * D) * es);
  float alpha[AR_T * AR_NB], rstd[AR_T * AR_NB];
  double want_out[AR_T * AR_D], want_a[AR_T * AR_NB], want_r[AR_T * AR_NB];
  for (int k = 0; k < 3; k++) {
    void *v = tc_tensor(dt, NB * T * D, 0, 1, 800 + (uint64_t)k), *wq = tc_tensor(dt, D, 0, 0.02, 810 + (uint64_t)k);
    void *wn = tc_tensor(dt, D, 1, 0.1, 820 + (uint64_t)k);
    if (k == 0) { /* tokens 1, 3, 4; tokens 0 and 2 stay finite */
      put(v, AR_V(0, 1, 3), dt, QNAN), put(v, AR_V(2, 3, 0), dt, PINF), put(v, AR_V(1, 4, 36), dt, NINF);
      put(v, AR_V(1, 1, 5), dt, SNAN_NEG);
    } else if (k == 1) {
      put(wq, 5, dt, QNAN), put(wq, 9, dt, PINF), put(wq, 11, dt, NINF);
    } else {
      put(wn, 9, dt, PINF), put(wn, 11, dt, NINF), put(wn, 20, dt, SNAN_NEG);
    }
    ar_reference_fwd(dt, v, wq, wn, want_out, want_a, want_r);
    tally t = {0, 0};
    char where[256];
    for (int i = 0; i < vl->n; i++) {
      snprintf(where, sizeof where, "attn_res fwd %s, NaN/Inf in %s, %s", ug_dtype_name(dt), cases[k],
               shown(vl->name[i]));
      force(ctx, "attn_res", "fwd", vl->name[i]);
      memset(out, 0x5a, (size_t)(T * D) * es), memset(alpha, 0x5a, sizeof alpha), memset(rstd, 0x5a, sizeof rstd);
      cr_assert_eq(ubg_attn_res_fwd(ctx, dt, NB, T, D, v, wq, wn, 1e-6f, out, alpha, rstd), UBG_OK, "%s: %s", where,
                   ubg_ctx_error(ctx));
      expect_like_ref(where, "out", out, dt, want_out, T * D, ar_fwd_atol[dt], ar_fwd_rtol[dt], &t);
      expect_like_ref(where, "alpha", alpha, REF_F32, want_a, T * NB, ar_fwd_atol[dt], ar_fwd_rtol[dt], &t);
      expect_like_ref(where, "rstd", rstd, REF_F32, want_r, T * NB, ar_fwd_atol[dt], ar_fwd_rtol[dt], &t);
    }
    expect_mixed(&t, where, false);
    free(v), free(wq), free(wn);
  }
  free(out), free(vl);
  ubg_ctx_destroy(ctx);
}

static void attn_res_bwd_nonfinite(int dt, ubg_backend be) {
  const int64_t NB = AR_NB, T = AR_T, D = AR_D;
  const size_t es = ref_dtype_bytes(dt);
  static const char *const cases[] = {"dout", "v", "alpha and rstd", "w_query and w_norm"};
  ubg_ctx *ctx = tc_ctx(be, 2);
  vlist *vl = variants_of("attn_res", "bwd", dt, D, NB);
  void *dv = malloc((size_t)(NB * T * D) * es), *dwq = malloc((size_t)D * es), *dwn = malloc((size_t)D * es);
  double want_dv[AR_NB * AR_T * AR_D], want_dwq[AR_D], want_dwn[AR_D];
  double fo[AR_T * AR_D], fa[AR_T * AR_NB], fr[AR_T * AR_NB];
  for (int k = 0; k < 4; k++) {
    void *v = tc_tensor(dt, NB * T * D, 0, 1, 900 + (uint64_t)k), *wq = tc_tensor(dt, D, 0, 0.02, 910 + (uint64_t)k);
    void *wn = tc_tensor(dt, D, 1, 0.1, 920 + (uint64_t)k), *dout = tc_tensor(dt, T * D, 0, 1, 930 + (uint64_t)k);
    float alpha[AR_T * AR_NB], rstd[AR_T * AR_NB]; /* the forward's, from the finite inputs */
    ar_reference_fwd(dt, v, wq, wn, fo, fa, fr);
    for (int64_t i = 0; i < T * NB; i++) alpha[i] = (float)fa[i], rstd[i] = (float)fr[i];
    if (k == 0) { /* tokens 1 and 3 */
      put(dout, 1 * D + 3, dt, QNAN), put(dout, 3 * D + 0, dt, PINF), put(dout, 3 * D + 5, dt, NINF);
    } else if (k == 1) { /* tokens 0 and 4 */
      put(v, AR_V(2, 4, 5), dt, NINF), put(v, AR_V(0, 0, 2), dt, PINF), put(v, AR_V(1, 0, 30), dt, SNAN_NEG);
    } else if (k == 2) { /* tokens 1, 2 and 4 */
      put(alpha, 2 * NB + 1, REF_F32, QNAN), put(rstd, 4 * NB + 0, REF_F32, PINF);
      put(alpha, 1 * NB + 2, REF_F32, NINF);
    } else {
      put(wq, 5, dt, QNAN), put(wn, 7, dt, PINF), put(wq, 11, dt, NINF);
    }
    ref_slot a[12] = {{.p = dout}, {.p = v},    {.p = wq},   {.p = wn},   {.p = alpha}, {.p = rstd},
                      {.p = NULL}, {.p = NULL}, {.p = NULL}, {.i = NB},   {.i = T},     {.i = D}};
    double *outs[12] = {0};
    outs[6] = want_dv, outs[7] = want_dwq, outs[8] = want_dwn;
    ref_find("attn_res", "bwd")->fn(a, dt, outs);
    tally t = {0, 0};
    char where[256];
    for (int i = 0; i < vl->n; i++) {
      snprintf(where, sizeof where, "attn_res bwd %s, NaN/Inf in %s, %s", ug_dtype_name(dt), cases[k],
               shown(vl->name[i]));
      force(ctx, "attn_res", "bwd", vl->name[i]);
      memset(dv, 0x5a, (size_t)(NB * T * D) * es), memset(dwq, 0x5a, (size_t)D * es), memset(dwn, 0x5a, (size_t)D * es);
      cr_assert_eq(ubg_attn_res_bwd(ctx, dt, NB, T, D, dout, v, wq, wn, alpha, rstd, dv, dwq, dwn), UBG_OK, "%s: %s",
                   where, ubg_ctx_error(ctx));
      expect_like_ref(where, "dv", dv, dt, want_dv, NB * T * D, ar_bwd_atol[dt], ar_bwd_rtol[dt], &t);
      expect_like_ref(where, "dw_query", dwq, dt, want_dwq, D, ar_bwd_atol[dt], ar_bwd_rtol[dt], &t);
      expect_like_ref(where, "dw_norm", dwn, dt, want_dwn, D, ar_bwd_atol[dt], ar_bwd_rtol[dt], &t);
    }
    expect_mixed(&t, where, k == 3);
    free(v), free(wq), free(wn), free(dout);
  }
  free(dv), free(dwq), free(dwn), free(vl);
  ubg_ctx_destroy(ctx);
}

/* ---- FLCE: x, dx [BT, H]; weight, dweight [V, H]; target, argmax [BT];
 * bias, ce_weight, dbias [V]; loss, z_loss [BT] (NONE) or [1] (MEAN)
 * (tests/test_flce.c's tolerances: Liger's) */

enum { FL_BT = 6, FL_H = 20, FL_V = 37 };
static const double fl_g_atol[3] = {1e-5, 1e-3, 5e-3}, fl_g_rtol[3] = {5e-4, 1e-2, 5e-2};
static const double fl_l_atol = 1e-5, fl_l_rtol = 5e-4;

static void flce_nonfinite(int dt, ubg_backend be) {
  const int64_t BT = FL_BT, H = FL_H, V = FL_V;
  const size_t es = ref_dtype_bytes(dt);
  static const char *const cases[] = {
      "x (row 4, ignored: -Inf reaches dweight through 0 * -Inf)",
      "weight (+Inf and -Inf)",
      "weight (NaN)",
      "bias (-Inf: masked tokens, one of them a target)",
      "bias (-Inf, masked) with label smoothing",
      "bias (NaN and +Inf)",
      "ce_weight (+Inf and -Inf on classes no row targets, NaN on row 1's target)",
      "ce_weight (the same) with label smoothing",
  };
  const int64_t target[FL_BT] = {3, 17, 36, 0, -100, 8};
  ubg_ctx *ctx = tc_ctx(be, 2);
  vlist *vl = variants_of("flce", "ce", dt, V, 0);
  void *dx = malloc((size_t)(BT * H) * es), *dw = malloc((size_t)(V * H) * es), *db = malloc((size_t)V * es);
  float loss[FL_BT], zl[FL_BT];
  int64_t am[FL_BT], want_am[FL_BT];
  double want_loss[FL_BT], want_zl[FL_BT], want_dx[FL_BT * FL_H], want_dw[FL_V * FL_H], want_db[FL_V];
  for (int k = 0; k < 8; k++)
    for (int red = 0; red < 2; red++) {
      void *x = tc_tensor(dt, BT * H, 0, 1, 1000 + (uint64_t)k), *w = tc_tensor(dt, V * H, 0, 0.2, 1010 + (uint64_t)k);
      void *b = tc_tensor(dt, V, 0, 0.5, 1020 + (uint64_t)k), *cw = NULL;
      ubg_flce_opts o;
      ubg_flce_opts_init(&o);
      o.reduction = red ? UBG_REDUCE_MEAN : UBG_REDUCE_NONE;
      o.lse_square_scale = 1e-3f;
      o.bias = b;
      if (k == 0) { /* rows 1, 3 and the ignored row 4; rows 0, 2, 5 stay finite */
        put(x, 1 * H + 3, dt, QNAN), put(x, 3 * H + 0, dt, PINF), put(x, 4 * H + 5, dt, NINF);
      } else if (k == 1) { /* logits 5 and 9 of each row: +-Inf by the sign of x */
        put(w, 5 * H + 2, dt, PINF), put(w, 9 * H + 4, dt, NINF);
      } else if (k == 2) {
        put(w, 12 * H + 0, dt, QNAN);
      } else if (k == 3 || k == 4) {
        put(b, 0, dt, NINF), put(b, 20, dt, NINF), put(b, 36, dt, NINF);
        if (k == 4) o.label_smoothing = 0.1f;
      } else if (k == 5) {
        put(b, 7, dt, QNAN), put(b, 8, dt, PINF);
      } else {
        uint64_t s = 1030;
        cw = malloc((size_t)V * 4);
        for (int64_t v = 0; v < V; v++) ref_store(cw, v, REF_F32, 0.25 + 1.75 * (double)(tc_next(&s) >> 11) * 0x1.0p-53);
        put(cw, 11, REF_F32, PINF), put(cw, 17, REF_F32, QNAN), put(cw, 25, REF_F32, NINF);
        o.ce_weight = cw;
        if (k == 7) o.label_smoothing = 0.1f;
      }
      const int64_t nl = red ? 1 : BT;
      flce_ref_full(dt, BT, H, V, x, w, target, &o, want_loss, want_zl, want_am, want_dx, want_dw, want_db);
      tally t = {0, 0};
      char where[320];
      for (int i = 0; i < vl->n; i++) {
        snprintf(where, sizeof where, "flce %s %s, NaN/Inf in %s, ce %s", ug_dtype_name(dt), red ? "mean" : "none",
                 cases[k], shown(vl->name[i]));
        force(ctx, "flce", "ce", vl->name[i]);
        memset(loss, 0x5a, sizeof loss), memset(zl, 0x5a, sizeof zl), memset(am, 0x5a, sizeof am);
        memset(dx, 0x5a, (size_t)(BT * H) * es), memset(dw, 0x5a, (size_t)(V * H) * es), memset(db, 0x5a, (size_t)V * es);
        ubg_flce_out out = {loss, zl, am, dx, dw, db, NULL};
        cr_assert_eq(ubg_flce(ctx, dt, BT, H, V, x, w, target, &o, &out), UBG_OK, "%s: %s", where, ubg_ctx_error(ctx));
        expect_like_ref(where, "loss", loss, REF_F32, want_loss, nl, fl_l_atol, fl_l_rtol, &t);
        expect_like_ref(where, "z_loss", zl, REF_F32, want_zl, nl, fl_l_atol, fl_l_rtol, &t);
        for (int64_t r = 0; r < BT; r++)
          cr_assert_eq(am[r], want_am[r], "%s: argmax[%lld] = %lld, the reference's %lld", where, (long long)r,
                       (long long)am[r], (long long)want_am[r]);
        expect_like_ref(where, "dx", dx, dt, want_dx, BT * H, fl_g_atol[dt], fl_g_rtol[dt], &t);
        expect_like_ref(where, "dweight", dw, dt, want_dw, V * H, fl_g_atol[dt], fl_g_rtol[dt], &t);
        expect_like_ref(where, "dbias", db, dt, want_db, V, fl_g_atol[dt], fl_g_rtol[dt], &t);
      }
      expect_mixed(&t, where, false);
      free(x), free(w), free(b), free(cw);
    }
  free(dx), free(dw), free(db), free(vl);
  ubg_ctx_destroy(ctx);
}

#define NONFINITE(op, dt, dtype)                                             \
  Test(nonfinite, op##_##dt) { op##_nonfinite(dtype, UBG_BACKEND_AUTO); } \
  Test(nonfinite_tcc, op##_##dt) {                                         \
    backend_shown = "tcc";                                                  \
    op##_nonfinite(dtype, UBG_BACKEND_TCC);                                 \
  }
#define NONFINITE_ALL(op)         \
  NONFINITE(op, f32, UBG_F32)     \
  NONFINITE(op, f16, UBG_F16)     \
  NONFINITE(op, bf16, UBG_BF16)

NONFINITE_ALL(rms_norm_fwd)
NONFINITE_ALL(rms_norm_bwd)
NONFINITE_ALL(embedding_fwd)
NONFINITE_ALL(embedding_bwd)
NONFINITE_ALL(attn_res_fwd)
NONFINITE_ALL(attn_res_bwd)
NONFINITE_ALL(flce)

/* The float arguments, unlike tensors, are documented to be finite
 * (docs/semantics.md): refused, nothing written. */
Test(nonfinite, float_arguments_are_refused) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  float x[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8}, w[4] = {1, 1, 1, 1}, y[8], rstd[2] = {1, 1}, dw[4];
  float v[2 * 2 * 4], alpha[4], r4[4];
  for (int i = 0; i < 16; i++) v[i] = (float)i / 8;
  const float bad[3] = {NAN, INFINITY, -INFINITY};
  static const char *const shown_bad[3] = {"nan", "inf", "-inf"};
  for (int k = 0; k < 3; k++) {
    char want[64];
    memset(y, 0x5a, sizeof y), memset(dw, 0x5a, sizeof dw), memset(alpha, 0x5a, sizeof alpha);
    const unsigned char *yb = (const unsigned char *)y;
    struct {
      ubg_status s;
      const char *arg;
    } calls[] = {
        {ubg_rms_norm_fwd(ctx, UBG_F32, 2, 4, x, w, bad[k], 0, UBG_CAST_LLAMA, y, r4), "eps"},
        {ubg_rms_norm_fwd(ctx, UBG_BF16, 2, 4, x, w, 1e-6f, bad[k], UBG_CAST_GEMMA, y, r4), "offset"},
        {ubg_rms_norm_bwd(ctx, UBG_F16, 2, 4, x, x, w, rstd, bad[k], UBG_CAST_LLAMA, y, dw), "offset"},
        {ubg_attn_res_fwd(ctx, UBG_F32, 2, 2, 4, v, w, w, bad[k], y, alpha, r4), "eps"},
    };
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
      cr_assert_eq(calls[c].s, UBG_EINVAL, "%s = %s: %s", calls[c].arg, shown_bad[k], ubg_status_str(calls[c].s));
    }
    /* the messages, one call at a time */
    cr_assert_eq(ubg_rms_norm_fwd(ctx, UBG_F32, 2, 4, x, w, 1e-6f, bad[k], UBG_CAST_LLAMA, y, r4), UBG_EINVAL);
    snprintf(want, sizeof want, "offset = %s is not finite", shown_bad[k]);
    cr_assert(strstr(ubg_ctx_error(ctx), want), "\"%s\" lacks \"%s\"", ubg_ctx_error(ctx), want);
    cr_assert_eq(ubg_attn_res_fwd(ctx, UBG_BF16, 2, 2, 4, v, w, w, bad[k], y, alpha, r4), UBG_EINVAL);
    snprintf(want, sizeof want, "eps = %s is not finite", shown_bad[k]);
    cr_assert(strstr(ubg_ctx_error(ctx), want), "\"%s\" lacks \"%s\"", ubg_ctx_error(ctx), want);
    for (size_t i = 0; i < sizeof y; i++) cr_assert_eq(yb[i], 0x5a, "y written by a refused call");
    for (size_t i = 0; i < sizeof dw; i++) cr_assert_eq(((unsigned char *)dw)[i], 0x5a, "dw written");
    for (size_t i = 0; i < sizeof alpha; i++) cr_assert_eq(((unsigned char *)alpha)[i], 0x5a, "alpha written");
    /* FLCE's float options */
    int64_t t[2] = {0, 3};
    float loss = -7;
    ubg_flce_out out = {&loss, NULL, NULL, NULL, NULL, NULL, NULL};
    ubg_flce_opts o;
    ubg_flce_opts_init(&o);
    o.lse_square_scale = bad[k];
    cr_assert_eq(ubg_flce(ctx, UBG_F32, 2, 2, 4, x, x, t, &o, &out), UBG_EINVAL);
    snprintf(want, sizeof want, "lse_square_scale = %s", shown_bad[k]);
    cr_assert(strstr(ubg_ctx_error(ctx), want), "\"%s\" lacks \"%s\"", ubg_ctx_error(ctx), want);
    ubg_flce_opts_init(&o);
    o.softcap = bad[k];
    cr_assert_eq(ubg_flce(ctx, UBG_F32, 2, 2, 4, x, x, t, &o, &out), UBG_EINVAL);
    ubg_flce_opts_init(&o);
    o.label_smoothing = bad[k];
    cr_assert_eq(ubg_flce(ctx, UBG_F32, 2, 2, 4, x, x, t, &o, &out), UBG_EINVAL);
    cr_assert_eq(loss, -7, "loss written by a refused call");
  }
  ubg_ctx_destroy(ctx);
}

/* ubg_launch takes float arguments as doubles; a finite double that a
 * float cannot hold (eps = 1e300 once ran as inf, giving y = 0 with
 * status OK) or that would become 0 is refused, nothing written. Values
 * that round but stay finite and nonzero are taken. */
Test(nonfinite, float_arguments_that_do_not_survive_float_are_refused) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 1);
  float x[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8], rstd[2];
  const double bad[] = {1e300, -1e300, 3.5e38, 1e-300, -1e-60, 0x1p-150};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    memset(y, 0x5a, sizeof y), memset(rstd, 0x5a, sizeof rstd);
    ubg_arg a[] = {{"x", UBG_ARG_PTR, {.p = x}},     {"y", UBG_ARG_PTR, {.p = y}},
                   {"rstd", UBG_ARG_PTR, {.p = rstd}}, {"rows", UBG_ARG_I64, {.i = 2}},
                   {"cols", UBG_ARG_I64, {.i = 4}},    {"eps", UBG_ARG_F64, {.f = bad[k]}}};
    ubg_status st = ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, a, sizeof a / sizeof a[0]);
    cr_assert_eq(st, UBG_EINVAL, "eps = %g: %s", bad[k], ubg_status_str(st));
    cr_assert(strstr(ubg_ctx_error(ctx), "eps = ") && strstr(ubg_ctx_error(ctx), "does not fit a float"), "%s",
              ubg_ctx_error(ctx));
    for (size_t i = 0; i < sizeof y; i++) cr_assert_eq(((unsigned char *)y)[i], 0x5a, "y written by a refused call");
    for (size_t i = 0; i < sizeof rstd; i++) cr_assert_eq(((unsigned char *)rstd)[i], 0x5a, "rstd written");
    /* offset too, which the spec's backward takes */
    ubg_arg b[] = {{"dy", UBG_ARG_PTR, {.p = x}},      {"x", UBG_ARG_PTR, {.p = x}},
                   {"rstd", UBG_ARG_PTR, {.p = rstd}}, {"dx", UBG_ARG_PTR, {.p = y}},
                   {"rows", UBG_ARG_I64, {.i = 2}},    {"cols", UBG_ARG_I64, {.i = 4}},
                   {"offset", UBG_ARG_F64, {.f = bad[k]}}};
    cr_assert_eq(ubg_launch(ctx, "rms_norm", "bwd", UBG_F32, b, sizeof b / sizeof b[0]), UBG_EINVAL);
    cr_assert(strstr(ubg_ctx_error(ctx), "offset = "), "%s", ubg_ctx_error(ctx));
  }
  /* 0, a value that rounds (0.1), the extremes of float itself: taken */
  const double good[] = {0.0, 0.1, 1e-6, (double)FLT_MAX, (double)FLT_TRUE_MIN, 1e-40};
  for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
    ubg_arg a[] = {{"x", UBG_ARG_PTR, {.p = x}},     {"y", UBG_ARG_PTR, {.p = y}},
                   {"rstd", UBG_ARG_PTR, {.p = rstd}}, {"rows", UBG_ARG_I64, {.i = 2}},
                   {"cols", UBG_ARG_I64, {.i = 4}},    {"eps", UBG_ARG_F64, {.f = good[k]}}};
    cr_assert_eq(ubg_launch(ctx, "rms_norm", "fwd", UBG_F32, a, sizeof a / sizeof a[0]), UBG_OK, "eps = %g: %s",
                 good[k], ubg_ctx_error(ctx));
  }
  ubg_ctx_destroy(ctx);
}

/* ======================================================================
 * Parts 2 and 3: every op's tensors as a table
 * ====================================================================== */

enum { E_T, E_F32, E_I64 }; /* element type: the call's dtype, f32, int64 */

typedef struct {
  const char *name; /* as the op's messages name it */
  int elem;
  int64_t n;  /* elements at the table's shape */
  bool out;
  int64_t hi; /* int64 inputs: values in [0, hi) */
} tensor;

enum { MAXT = 11 };

typedef struct {
  const char *op;
  int nt;
  tensor t[MAXT];
  int alias_out, alias_in; /* the pair that may be the very same buffer, or -1 */
  ubg_status (*call)(ubg_ctx *ctx, int dt, void *const *p);
} opdesc;

/* rms_norm fwd: x, y [5, 37]; w [37]; rstd [5] */
static ubg_status call_rms_fwd(ubg_ctx *ctx, int dt, void *const *p) {
  return ubg_rms_norm_fwd(ctx, dt, 5, 37, p[0], p[1], 1e-6f, 0.0f, UBG_CAST_LLAMA, p[2], p[3]);
}
/* rms_norm bwd: dy, x, dx [5, 37]; w, dw [37]; rstd [5] */
static ubg_status call_rms_bwd(ubg_ctx *ctx, int dt, void *const *p) {
  return ubg_rms_norm_bwd(ctx, dt, 5, 37, p[0], p[1], p[2], p[3], 0.0f, UBG_CAST_LLAMA, p[4], p[5]);
}
/* embedding fwd: table [7, 19]; indices [10]; out [10, 19] */
static ubg_status call_emb_fwd(ubg_ctx *ctx, int dt, void *const *p) {
  return ubg_embedding_fwd(ctx, dt, 7, 19, p[0], 10, p[1], p[2]);
}
/* embedding bwd: indices [10]; dout [10, 19]; dtable [7, 19] */
static ubg_status call_emb_bwd(ubg_ctx *ctx, int dt, void *const *p) {
  return ubg_embedding_bwd(ctx, dt, 7, 19, 10, p[0], p[1], -1, p[2]);
}
/* attn_res fwd: v [3, 5, 37]; w_query, w_norm [37]; out [5, 37]; alpha, rstd [5, 3] */
static ubg_status call_ar_fwd(ubg_ctx *ctx, int dt, void *const *p) {
  return ubg_attn_res_fwd(ctx, dt, 3, 5, 37, p[0], p[1], p[2], 1e-6f, p[3], p[4], p[5]);
}
/* attn_res bwd: dout [5, 37]; v, dv [3, 5, 37]; w_query, w_norm, dw_query, dw_norm [37]; alpha, rstd [5, 3] */
static ubg_status call_ar_bwd(ubg_ctx *ctx, int dt, void *const *p) {
  return ubg_attn_res_bwd(ctx, dt, 3, 5, 37, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
}
/* flce: x, dx [6, 20]; weight, dweight [37, 20]; target, loss, z_loss, argmax [6] (REDUCE_NONE);
 * ce_weight, bias, dbias [37] */
static ubg_status call_flce(ubg_ctx *ctx, int dt, void *const *p) {
  ubg_flce_opts o;
  ubg_flce_opts_init(&o);
  o.reduction = UBG_REDUCE_NONE;
  o.label_smoothing = 0.1f;
  o.lse_square_scale = 1e-3f;
  o.ce_weight = p[3];
  o.bias = p[4];
  ubg_flce_out out = {p[5], p[6], p[7], p[8], p[9], p[10], NULL};
  return ubg_flce(ctx, dt, 6, 20, 37, p[0], p[1], p[2], &o, &out);
}

static const opdesc ops[] = {
    {"ubg_rms_norm_fwd", 4,
     {{"x", E_T, 185, false, 0}, {"w", E_T, 37, false, 0}, {"y", E_T, 185, true, 0}, {"rstd", E_F32, 5, true, 0}},
     2, 0, call_rms_fwd},
    {"ubg_rms_norm_bwd", 6,
     {{"dy", E_T, 185, false, 0}, {"x", E_T, 185, false, 0}, {"w", E_T, 37, false, 0}, {"rstd", E_F32, 5, false, 0},
      {"dx", E_T, 185, true, 0}, {"dw", E_T, 37, true, 0}},
     4, 0, call_rms_bwd},
    {"ubg_embedding_fwd", 3,
     {{"table", E_T, 133, false, 0}, {"indices", E_I64, 10, false, 7}, {"out", E_T, 190, true, 0}},
     -1, -1, call_emb_fwd},
    {"ubg_embedding_bwd", 3,
     {{"indices", E_I64, 10, false, 7}, {"dout", E_T, 190, false, 0}, {"dtable", E_T, 133, true, 0}},
     -1, -1, call_emb_bwd},
    {"ubg_attn_res_fwd", 6,
     {{"v", E_T, 555, false, 0}, {"w_query", E_T, 37, false, 0}, {"w_norm", E_T, 37, false, 0},
      {"out", E_T, 185, true, 0}, {"alpha", E_F32, 15, true, 0}, {"rstd", E_F32, 15, true, 0}},
     -1, -1, call_ar_fwd},
    {"ubg_attn_res_bwd", 9,
     {{"dout", E_T, 185, false, 0}, {"v", E_T, 555, false, 0}, {"w_query", E_T, 37, false, 0},
      {"w_norm", E_T, 37, false, 0}, {"alpha", E_F32, 15, false, 0}, {"rstd", E_F32, 15, false, 0},
      {"dv", E_T, 555, true, 0}, {"dw_query", E_T, 37, true, 0}, {"dw_norm", E_T, 37, true, 0}},
     -1, -1, call_ar_bwd},
    {"ubg_flce", 11,
     {{"x", E_T, 120, false, 0}, {"weight", E_T, 740, false, 0}, {"target", E_I64, 6, false, 37},
      {"ce_weight", E_F32, 37, false, 0}, {"bias", E_T, 37, false, 0}, {"loss", E_F32, 6, true, 0},
      {"z_loss", E_F32, 6, true, 0}, {"argmax", E_I64, 6, true, 0}, {"dx", E_T, 120, true, 0},
      {"dweight", E_T, 740, true, 0}, {"dbias", E_T, 37, true, 0}},
     -1, -1, call_flce},
};
enum { NOPS = sizeof ops / sizeof ops[0] };
static const int dtypes[3] = {UBG_F32, UBG_F16, UBG_BF16};

static size_t esize(const tensor *t, int dt) { return t->elem == E_T ? ref_dtype_bytes(dt) : t->elem == E_F32 ? 4 : 8; }
static size_t nbytes(const tensor *t, int dt) { return (size_t)t->n * esize(t, dt); }

/* One buffer holding every tensor of a call, each in its own 64-byte
 * aligned slot with room after it for a shift, then a spare slot as large
 * as any two tensors; bytes outside the tensors are 0x5a. */
enum { FILL = 0x5a, SLACK = 128 };

typedef struct {
  unsigned char *mem;
  size_t size, off[MAXT], len[MAXT], spare;
  void *p[MAXT];
} arena;

static void arena_make(arena *a, const opdesc *op, int dt) {
  size_t off = 0, most = 0;
  for (int i = 0; i < op->nt; i++) {
    a->off[i] = off;
    a->len[i] = (nbytes(&op->t[i], dt) + SLACK + 63) / 64 * 64;
    off += a->len[i];
    if (a->len[i] > most) most = a->len[i];
  }
  a->spare = off;
  a->size = off + 2 * most;
  a->mem = aligned_alloc(64, a->size);
  cr_assert_not_null(a->mem);
}

/* tensor i at its slot + shift[i] bytes, inputs filled with valid values
 * (through memcpy: a shifted pointer may be misaligned) */
static void arena_place(arena *a, const opdesc *op, int dt, const size_t *shift) {
  memset(a->mem, FILL, a->size);
  for (int i = 0; i < op->nt; i++) {
    const tensor *t = &op->t[i];
    unsigned char *p = a->mem + a->off[i] + (shift ? shift[i] : 0);
    a->p[i] = p;
    if (t->out) continue;
    for (int64_t k = 0; k < t->n; k++) {
      const double v = 0.25 + (double)((k * 37 + i * 11) % 101) / 100.0; /* in [0.25, 1.25]: class weights too */
      if (t->elem == E_T) {
        float h[1]; /* room and alignment for any dtype */
        ref_store(h, 0, dt, v);
        memcpy(p + (size_t)k * ref_dtype_bytes(dt), h, ref_dtype_bytes(dt));
      } else if (t->elem == E_F32) {
        const float f = (float)v;
        memcpy(p + (size_t)k * 4, &f, 4);
      } else {
        const int64_t j = (k * 3 + 1) % t->hi;
        memcpy(p + (size_t)k * 8, &j, 8);
      }
    }
  }
}

static void where_of(char *buf, size_t n, const opdesc *op, int dt) { snprintf(buf, n, "%s %s", op->op, ug_dtype_name(dt)); }

/* ---- part 2: alignment */

/* element-aligned, not 16- or 64-byte aligned: the same bits, nothing
 * written outside the outputs */
static void element_aligned_same_bits(ubg_backend be) {
  ubg_ctx *ctx = tc_ctx(be, 2);
  for (int o = 0; o < NOPS; o++)
    for (int d = 0; d < 3; d++) {
      const opdesc *op = &ops[o];
      const int dt = dtypes[d];
      char where[128];
      where_of(where, sizeof where, op, dt);
      arena A, B;
      arena_make(&A, op, dt), arena_make(&B, op, dt);
      arena_place(&A, op, dt, NULL);
      cr_assert_eq(op->call(ctx, dt, A.p), UBG_OK, "%s, 64-byte aligned: %s", where, ubg_ctx_error(ctx));
      for (int elems = 1; elems <= 3; elems += 2) {
        size_t shift[MAXT];
        for (int i = 0; i < op->nt; i++) shift[i] = (size_t)elems * esize(&op->t[i], dt);
        arena_place(&B, op, dt, shift);
        cr_assert_eq(op->call(ctx, dt, B.p), UBG_OK, "%s, shifted by %d elements: %s", where, elems, ubg_ctx_error(ctx));
        for (int i = 0; i < op->nt; i++) {
          const size_t b = nbytes(&op->t[i], dt);
          cr_assert(!memcmp(A.p[i], B.p[i], b), "%s: %s shifted by %d elements (%zu bytes) differs from the aligned call",
                    where, op->t[i].name, elems, shift[i]);
          const unsigned char *slot = B.mem + B.off[i], *start = B.p[i];
          for (const unsigned char *q = slot; q < slot + B.len[i]; q++)
            cr_assert(q >= start && q < start + b ? true : *q == FILL, "%s: byte %td of %s's slot (the tensor at %zu) "
                      "written", where, q - slot, op->t[i].name, shift[i]);
        }
      }
      free(A.mem), free(B.mem);
    }
  ubg_ctx_destroy(ctx);
}
Test(alignment, element_aligned_pointers_give_the_same_bits) { element_aligned_same_bits(UBG_BACKEND_AUTO); }
Test(alignment, element_aligned_pointers_give_the_same_bits_tcc) { element_aligned_same_bits(UBG_BACKEND_TCC); }

/* Runs check(ctx, op, dt, where, arena, before) for every op and dtype,
 * each with an arena of its tensors and room for a copy of it (the bytes
 * before a call); returns the sum of what the checks return (the cases
 * they ran). */
typedef int (*op_check)(ubg_ctx *ctx, const opdesc *op, int dt, const char *where, arena *A, unsigned char *before);

static int each_op_and_dtype(ubg_ctx *ctx, op_check check) {
  int cases = 0;
  for (int o = 0; o < NOPS; o++)
    for (int d = 0; d < 3; d++) {
      char where[128];
      where_of(where, sizeof where, &ops[o], dtypes[d]);
      arena A;
      arena_make(&A, &ops[o], dtypes[d]);
      unsigned char *before = malloc(A.size);
      cases += check(ctx, &ops[o], dtypes[d], where, &A, before);
      free(before), free(A.mem);
    }
  return cases;
}

/* not aligned to the element size: refused, named, nothing written */
static int misaligned_refused(ubg_ctx *ctx, const opdesc *op, int dt, const char *where, arena *A,
                              unsigned char *before) {
  int checked = 0;
  for (int i = 0; i < op->nt; i++) {
    const size_t es = esize(&op->t[i], dt);
    const size_t offs[2] = {1, es / 2}; /* an odd address; half the element (+4 for an int64) */
    for (int k = 0; k < 2; k++) {
      if (k == 1 && offs[1] == offs[0]) continue;
      size_t shift[MAXT] = {0};
      shift[i] = offs[k];
      arena_place(A, op, dt, shift);
      memcpy(before, A->mem, A->size);
      const ubg_status s = op->call(ctx, dt, A->p);
      const char *msg = ubg_ctx_error(ctx);
      cr_assert_eq(s, UBG_EINVAL, "%s: %s at +%zu: %s (%s)", where, op->t[i].name, offs[k], ubg_status_str(s), msg);
      char want[160];
      snprintf(want, sizeof want, "%s = %p is not aligned to %zu bytes", op->t[i].name, A->p[i], es);
      cr_assert(strstr(msg, want), "%s: message \"%s\" lacks \"%s\"", where, msg, want);
      cr_assert(!memcmp(before, A->mem, A->size), "%s: a call refused for %s wrote to memory", where, op->t[i].name);
      checked++;
    }
  }
  return checked;
}

Test(alignment, misaligned_pointers_are_refused) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  cr_assert_gt(each_op_and_dtype(ctx, misaligned_refused), 100);
  ubg_ctx_destroy(ctx);
}

/* ---- part 3: overlaps and sizes */

/* "NAME [" where the message names a tensor ("...: NAME [0x.., +n bytes) and NAME [...") */
static bool names_tensor(const char *msg, const char *name) {
  char a[80], b[80];
  snprintf(a, sizeof a, ": %s [", name);
  snprintf(b, sizeof b, "and %s [", name);
  return strstr(msg, a) || strstr(msg, b);
}

/* every output over every other tensor, at its start and over its end:
 * refused (but the very same buffer for the may-alias pair), both named,
 * nothing written */
static int overlaps_refused(ubg_ctx *ctx, const opdesc *op, int dt, const char *where, arena *A,
                            unsigned char *before) {
  int refused = 0;
  for (int i = 0; i < op->nt; i++) {
    if (!op->t[i].out) continue;
    for (int j = 0; j < op->nt; j++) {
      if (j == i) continue;
      const bool pair = i == op->alias_out && j == op->alias_in;
      const size_t bj = nbytes(&op->t[j], dt);
      /* tensor i at the start of tensor j, then over its last 8-byte word
       * (8-byte steps keep every element type aligned) */
      const size_t at[2] = {0, (bj - 1) / 8 * 8};
      for (int k = 0; k < 2; k++) {
        /* j (its contents) and i in the spare slot, away from the others */
        arena_place(A, op, dt, NULL);
        void *p[MAXT];
        memcpy(p, A->p, sizeof p);
        p[j] = A->mem + A->spare;
        memcpy(p[j], A->p[j], bj);
        p[i] = (unsigned char *)p[j] + (pair && k == 1 ? 8 : at[k]);
        memcpy(before, A->mem, A->size);
        const ubg_status s = op->call(ctx, dt, p);
        const char *msg = ubg_ctx_error(ctx);
        if (pair && k == 0) { /* the very same buffer: in place, allowed */
          cr_assert_eq(s, UBG_OK, "%s: %s = %s in place: %s", where, op->t[i].name, op->t[j].name, msg);
          continue;
        }
        cr_assert_eq(s, UBG_EINVAL, "%s: %s over %s at +%zu: %s", where, op->t[i].name, op->t[j].name,
                     pair ? (size_t)8 : at[k], ubg_status_str(s));
        cr_assert(strstr(msg, "overlap") && names_tensor(msg, op->t[i].name) && names_tensor(msg, op->t[j].name),
                  "%s: message \"%s\" does not name the overlap of %s and %s", where, msg, op->t[i].name,
                  op->t[j].name);
        if (pair) cr_assert(strstr(msg, "not overlap partly"), "%s: \"%s\"", where, msg);
        cr_assert(!memcmp(before, A->mem, A->size), "%s: a call refused for %s over %s wrote to memory", where,
                  op->t[i].name, op->t[j].name);
        refused++;
      }
    }
  }
  return refused;
}

Test(overlaps, every_output_against_every_other_tensor) {
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  cr_assert_gt(each_op_and_dtype(ctx, overlaps_refused), 300);
  ubg_ctx_destroy(ctx);
}

/* sizes whose byte count overflows int64: refused, the message names the
 * tensor and its sizes, nothing written (the buffers are small: a call that
 * went on would read and write far outside them) */
typedef struct {
  int op;
  int64_t s[3]; /* the op's sizes, in its signature's order */
  const char *want; /* in the message */
} huge_case;

static ubg_status call_sized(ubg_ctx *ctx, int op, int dt, const int64_t *s, void *const *p) {
  ubg_flce_opts o;
  ubg_flce_out fo = {p[5], p[6], p[7], p[8], p[9], p[10], NULL};
  switch (op) {
  case 0: return ubg_rms_norm_fwd(ctx, dt, s[0], s[1], p[0], p[1], 1e-6f, 0, UBG_CAST_LLAMA, p[2], p[3]);
  case 1: return ubg_rms_norm_bwd(ctx, dt, s[0], s[1], p[0], p[1], p[2], p[3], 0, UBG_CAST_LLAMA, p[4], p[5]);
  case 2: return ubg_embedding_fwd(ctx, dt, s[0], s[1], p[0], s[2], p[1], p[2]);
  case 3: return ubg_embedding_bwd(ctx, dt, s[0], s[1], s[2], p[0], p[1], -1, p[2]);
  case 4: return ubg_attn_res_fwd(ctx, dt, s[0], s[1], s[2], p[0], p[1], p[2], 1e-6f, p[3], p[4], p[5]);
  case 5: return ubg_attn_res_bwd(ctx, dt, s[0], s[1], s[2], p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
  default:
    ubg_flce_opts_init(&o);
    o.reduction = UBG_REDUCE_NONE;
    o.ce_weight = p[3], o.bias = p[4];
    return ubg_flce(ctx, dt, s[0], s[1], s[2], p[0], p[1], p[2], &o, &fo);
  }
}

Test(sizes, products_overflowing_int64_are_refused) {
  const int64_t G = (int64_t)1 << 30;
  const huge_case cases[] = {
      {0, {4 * G, 4 * G, 0}, "x of rows x cols = 4294967296 x 4294967296 elements"},
      {0, {INT64_MAX, 2, 0}, "x of rows x cols = 9223372036854775807 x 2 elements"},
      {1, {3, INT64_MAX / 2, 0}, "dy of rows x cols = 3 x 4611686018427387903 elements"},
      {2, {INT64_MAX / 2, 4, 10}, "table of num_embeddings x dim = 4611686018427387903 x 4 elements"},
      {2, {7, 19, (int64_t)1 << 61}, "indices of n = 2305843009213693952 elements of 8 bytes"},
      {3, {7, (int64_t)1 << 61, 10}, "dout of n x dim = 10 x 2305843009213693952 elements"},
      {4, {256, 1024 * G, 1 << 20}, "v of nblocks x tokens x dim = 256 x 1099511627776 x 1048576 elements"},
      {5, {3, 2 * G, 2 * G}, "dout of tokens x dim = 2147483648 x 2147483648 elements"},
      {6, {(int64_t)1 << 62, 4, 37}, "x of bt x hidden = 4611686018427387904 x 4 elements"},
      {6, {6, INT32_MAX, INT32_MAX}, "weight of vocab x hidden = 2147483647 x 2147483647 elements"},
  };
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int d = 0; d < 3; d++) {
      const opdesc *op = &ops[cases[c].op];
      const int dt = dtypes[d];
      arena A;
      arena_make(&A, op, dt);
      arena_place(&A, op, dt, NULL);
      unsigned char *before = malloc(A.size);
      memcpy(before, A.mem, A.size);
      const ubg_status s = call_sized(ctx, cases[c].op, dt, cases[c].s, A.p);
      const char *msg = ubg_ctx_error(ctx);
      cr_assert_eq(s, UBG_EINVAL, "%s %s case %zu: %s (%s)", op->op, ug_dtype_name(dt), c, ubg_status_str(s), msg);
      cr_assert(strstr(msg, cases[c].want) && strstr(msg, "overflows"), "%s %s: message \"%s\" lacks \"%s\"", op->op,
                ug_dtype_name(dt), msg, cases[c].want);
      cr_assert(!memcmp(before, A.mem, A.size), "%s %s case %zu: a refused call wrote to memory", op->op,
                ug_dtype_name(dt), c);
      free(before), free(A.mem);
    }
  ubg_ctx_destroy(ctx);
}

/* A context shared by many threads, contexts created and destroyed in a
 * loop, and fork (docs/architecture.md "Threads and fork").
 *
 *   - 8 threads share one context and run every op, in different orders,
 *     50 times each, while 4 of them also make the tcc JIT compile variants
 *     on a second shared context; every result must have the bits the same
 *     call gives alone, and every thread's ubg_ctx_last_variant must name
 *     its own call.
 *   - 300 contexts created, used and destroyed: the resident set may not
 *     grow (make test-asan runs the same loop under LeakSanitizer).
 *   - fork: a child creates its own context and computes the parent's bits;
 *     a context the parent created before fork is not to be used in the
 *     child (documented), so the test does not.
 * Shapes are small: this is about sharing, not speed. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

enum { THREADS = 8, ROUNDS = 50 };

/* the inputs and the alone-results of one small call of each op */
typedef struct {
  /* RMSNorm fwd: x [rows, cols] bf16, w [cols] -> y [rows, cols], rstd [rows] */
  int64_t rows, cols;
  uint16_t *x, *w, *y;
  float *rstd;
  /* embedding fwd: table [V, D] f32, idx [n] -> out [n, D] */
  int64_t V, D, n;
  float *table, *emb;
  int64_t *idx;
  /* AttnRes fwd: v [N, T, H] f32 -> h [T, H], alpha, rstd [T, N] */
  int64_t N, T, H;
  float *v, *wq, *wn, *h, *alpha, *arstd;
  /* FLCE: x [bt, hid] f32, W [voc, hid], target [bt] -> loss, dx [bt, hid] */
  int64_t bt, hid, voc;
  float *fx, *fw, *dx, loss;
  int64_t *target;
} calls;

static void make_inputs(calls *c) {
  c->rows = 37, c->cols = 300;
  c->x = tc_tensor(REF_BF16, c->rows * c->cols, 0, 1, 11);
  c->w = tc_tensor(REF_BF16, c->cols, 1, 0.2, 12);
  c->V = 500, c->D = 96, c->n = 200;
  c->table = tc_tensor(REF_F32, c->V * c->D, 0, 1, 13);
  c->idx = malloc((size_t)c->n * sizeof *c->idx);
  for (int64_t i = 0; i < c->n; i++) c->idx[i] = (i * 7919) % c->V;
  c->N = 4, c->T = 9, c->H = 200;
  c->v = tc_tensor(REF_F32, c->N * c->T * c->H, 0, 1, 14);
  c->wq = tc_tensor(REF_F32, c->H, 0, 0.05, 15);
  c->wn = tc_tensor(REF_F32, c->H, 1, 0.1, 16);
  c->bt = 24, c->hid = 40, c->voc = 300;
  c->fx = tc_tensor(REF_F32, c->bt * c->hid, 0, 1, 17);
  c->fw = tc_tensor(REF_F32, c->voc * c->hid, 0, 0.1, 18);
  c->target = malloc((size_t)c->bt * sizeof *c->target);
  for (int64_t i = 0; i < c->bt; i++) c->target[i] = (i * 31) % c->voc;
}

static void free_inputs(calls *c) {
  free(c->x), free(c->w), free(c->table), free(c->idx), free(c->v), free(c->wq), free(c->wn), free(c->fx), free(c->fw);
  free(c->target);
}

static void alloc_outputs(const calls *in, calls *c) {
  *c = *in;
  c->y = malloc((size_t)(c->rows * c->cols) * 2);
  c->rstd = malloc((size_t)c->rows * 4);
  c->emb = malloc((size_t)(c->n * c->D) * 4);
  c->h = malloc((size_t)(c->T * c->H) * 4);
  c->alpha = malloc((size_t)(c->T * c->N) * 4);
  c->arstd = malloc((size_t)(c->T * c->N) * 4);
  c->dx = malloc((size_t)(c->bt * c->hid) * 4);
}

static void free_outputs(calls *c) {
  free(c->y), free(c->rstd), free(c->emb), free(c->h), free(c->alpha), free(c->arstd), free(c->dx);
}

/* op k of the four into c's outputs; the variant it ran into ran (may be NULL) */
static ubg_status run_op(ubg_ctx *ctx, int k, calls *c, char *ran, size_t n) {
  ubg_status s = UBG_OK;
  ubg_flce_opts o;
  ubg_flce_out out = {&c->loss, NULL, NULL, c->dx, NULL, NULL, NULL};
  switch (k) {
  case 0:
    s = ubg_rms_norm_fwd(ctx, UBG_BF16, c->rows, c->cols, c->x, c->w, 1e-6f, 0, UBG_CAST_LLAMA, c->y, c->rstd);
    break;
  case 1: s = ubg_embedding_fwd(ctx, UBG_F32, c->V, c->D, c->table, c->n, c->idx, c->emb); break;
  case 2:
    s = ubg_attn_res_fwd(ctx, UBG_F32, c->N, c->T, c->H, c->v, c->wq, c->wn, 1e-6f, c->h, c->alpha, c->arstd);
    break;
  default:
    ubg_flce_opts_init(&o);
    s = ubg_flce(ctx, UBG_F32, c->bt, c->hid, c->voc, c->fx, c->fw, c->target, &o, &out);
    break;
  }
  if (ran) snprintf(ran, n, "%s", s ? ubg_ctx_error(ctx) : ubg_ctx_last_variant(ctx));
  return s;
}

static const char *const op_prefix[4] = {"rms_norm_fwd_bf16_", "embedding_fwd_f32_", "attn_res_fwd_f32_", "flce_ce_f32_"};

/* the bytes of op k's outputs in a and b differ: what, else NULL */
static const char *differs(int k, const calls *a, const calls *b) {
  switch (k) {
  case 0:
    if (memcmp(a->y, b->y, (size_t)(a->rows * a->cols) * 2)) return "y";
    return memcmp(a->rstd, b->rstd, (size_t)a->rows * 4) ? "rstd" : NULL;
  case 1: return memcmp(a->emb, b->emb, (size_t)(a->n * a->D) * 4) ? "out" : NULL;
  case 2:
    if (memcmp(a->h, b->h, (size_t)(a->T * a->H) * 4)) return "h";
    return memcmp(a->alpha, b->alpha, (size_t)(a->T * a->N) * 4) ? "alpha" : NULL;
  default:
    if (memcmp(&a->loss, &b->loss, 4)) return "loss";
    return memcmp(a->dx, b->dx, (size_t)(a->bt * a->hid) * 4) ? "dx" : NULL;
  }
}

typedef struct {
  int id;
  ubg_ctx *shared, *jit;
  const calls *in, *want;
  int failures;
  char first[800];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  calls mine;
  alloc_outputs(w->in, &mine);
  char ran[700];
  for (int r = 0; r < ROUNDS; r++) {
    /* threads start at different ops and half of them use the JIT context
     * on odd rounds: calls of every op, built-in and being compiled, overlap */
    int k = (w->id + r) % 4;
    ubg_ctx *ctx = (w->id % 2 && r % 2) ? w->jit : w->shared;
    ubg_status s = run_op(ctx, k, &mine, ran, sizeof ran);
    const char *bad = s ? "the call failed" : differs(k, &mine, w->want);
    if (!bad && !strstr(ran, op_prefix[k])) bad = "ubg_ctx_last_variant names another call";
    if (bad && w->failures++ == 0)
      snprintf(w->first, sizeof w->first, "thread %d round %d op %d: %s (%s)", w->id, r, k, bad, ran);
  }
  free_outputs(&mine);
  return NULL;
}

Test(concurrency, threads_share_a_context_and_the_jit, .timeout = 120 * TC_TIME_SCALE) {
  calls in, want;
  make_inputs(&in);
  alloc_outputs(&in, &want);
  ubg_ctx *shared = tc_ctx(UBG_BACKEND_AUTO, 2), *jit = tc_ctx(UBG_BACKEND_TCC, 2);
  for (int k = 0; k < 4; k++) cr_assert_eq(run_op(shared, k, &want, NULL, 0), UBG_OK, "%s", ubg_ctx_error(shared));
  pthread_t t[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){i, shared, jit, &in, &want, 0, ""};
    cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  int failures = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    if (w[i].failures) cr_log_error("%d failures, the first: %s", w[i].failures, w[i].first);
    failures += w[i].failures;
  }
  cr_assert_eq(failures, 0, "%d of %d calls went wrong", failures, THREADS * ROUNDS);
  ubg_ctx_destroy(shared);
  ubg_ctx_destroy(jit);
  free_outputs(&want);
  free_inputs(&in);
}

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Under a memory checker the growth is not checked (below), so a few
 * contexts of each op and backend serve its leak check. */
#if defined(__SANITIZE_ADDRESS__) || defined(TC_VALGRIND)
enum { LOOP_CONTEXTS = 24 };
#else
enum { LOOP_CONTEXTS = 300 };
#endif

Test(concurrency, contexts_created_and_destroyed_in_a_loop_do_not_grow, .timeout = 120 * TC_TIME_SCALE) {
  calls in, out;
  make_inputs(&in);
  alloc_outputs(&in, &out);
  long base = 0;
  for (int i = 0; i < LOOP_CONTEXTS; i++) {
    ubg_ctx *ctx = tc_ctx(i % 3 == 2 ? UBG_BACKEND_TCC : UBG_BACKEND_AUTO, 2);
    cr_assert_eq(run_op(ctx, i % 4, &out, NULL, 0), UBG_OK, "%s", ubg_ctx_error(ctx));
    ubg_ctx_destroy(ctx);
    if (i == LOOP_CONTEXTS / 6) base = rss_kib(); /* after allocators and thread pools settled */
  }
  long grown = rss_kib() - base;
#if defined(__SANITIZE_ADDRESS__) || defined(TC_VALGRIND)
  /* ASan and valgrind keep freed memory in quarantine: resident, not leaked
   * (their leak checkers check that) */
  cr_log_info("under a memory checker the resident set grew by %ld KiB (its quarantine); not checked", grown);
#else
  cr_assert_lt(grown, 8 * 1024, "%d more contexts grew the resident set by %ld KiB", LOOP_CONTEXTS - LOOP_CONTEXTS / 6 - 1,
                grown);
#endif
  free_outputs(&out);
  free_inputs(&in);
}

Test(concurrency, a_forked_child_uses_its_own_context, .timeout = 60 * TC_TIME_SCALE) {
  calls in, want;
  make_inputs(&in);
  alloc_outputs(&in, &want);
  ubg_ctx *ctx = tc_ctx(UBG_BACKEND_AUTO, 2);
  for (int k = 0; k < 4; k++) cr_assert_eq(run_op(ctx, k, &want, NULL, 0), UBG_OK);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    /* the child: a context of its own, every op, the parent's bits */
    calls mine;
    alloc_outputs(&in, &mine);
    ubg_ctx *child = NULL;
    ubg_config cfg = {0};
    cfg.threads = 2;
    if (ubg_ctx_create(&cfg, &child) != UBG_OK) _exit(3);
    for (int k = 0; k < 4; k++)
      if (run_op(child, k, &mine, NULL, 0) != UBG_OK || differs(k, &mine, &want)) _exit(10 + k);
    ubg_ctx_destroy(child);
    _exit(0);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "the child died (signal %d)", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  cr_assert_eq(WEXITSTATUS(st), 0, "the child failed: status %d (3: create, 10 + k: op k)", WEXITSTATUS(st));
  /* and the parent's context still works */
  calls again;
  alloc_outputs(&in, &again);
  for (int k = 0; k < 4; k++) {
    cr_assert_eq(run_op(ctx, k, &again, NULL, 0), UBG_OK);
    cr_assert_null(differs(k, &again, &want));
  }
  ubg_ctx_destroy(ctx);
  free_outputs(&again);
  free_outputs(&want);
  free_inputs(&in);
}

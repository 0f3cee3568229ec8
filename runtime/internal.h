/* libubgen internals: the context and what hangs off it.
 *
 *   ubg_ctx
 *    +- config (budget, threads, backend, guard)
 *    +- rt_kernel[]: one per spec (from UBGEN_SPEC_PATH, then the specs
 *    |   embedded in the AOT registries)
 *    |   +- rt_pass[]: enumerated variants per dtype, the AOT function of
 *    |       each (NULL when not built in), the forced variant per dtype
 *    +- pools: UB arenas (one per worker of a launch) and workspace blocks
 *
 * A launch reads the context and takes from the pools under a mutex; the
 * kernels run without any lock. */
#ifndef UBG_INTERNAL_H
#define UBG_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../gen/spec.h"
#include "../gen/tunedb.h"
#include "../gen/ubplan.h"
#include "../gen/variant.h"
#include "composite_plan.h"
#include "gemm_onednn.h"
#include "ctx_view.h"
#include "include/ubgen.h"
#include "ubgen_aot.h"

/* which code ran a call */
enum { RT_RAN_AOT = 1, RT_RAN_TCC = 2, RT_RAN_GCC = 3 };

/* a variant compiled at run time; fn is published last, atomically */
typedef struct {
  _Atomic(ubg_kernel_fn) fn;
  _Atomic int ran;
} rt_jit_slot;

typedef struct {
  const ug_pass *pass;
  ug_variant *variants[UG_NDTYPES]; /* every enumerated variant */
  int nvariants[UG_NDTYPES];
  ubg_kernel_fn *aot[UG_NDTYPES];   /* parallel to variants; NULL: not built in */
  rt_jit_slot *jit[UG_NDTYPES];     /* parallel to variants */
  int forced[UG_NDTYPES];           /* index into variants, or -1; under ctx->lock */
} rt_pass;

typedef struct {
  ug_kernel *spec;
  rt_pass *passes;
  bool from_aot; /* the spec text came from an AOT registry */
} rt_kernel;

typedef struct {
  int kind; /* RT_RAN_TCC or RT_RAN_GCC */
  void *p;  /* TCCState, or dlopen handle */
} rt_jit_state;
enum { RT_MAX_ASYNC = 256 };

typedef struct rt_block {
  struct rt_block *next;
  void *base;      /* what to free or unmap */
  size_t map_len;  /* guard arenas: the whole mapping; else 0 */
  unsigned char *p; /* 64-byte aligned start */
  size_t size;
} rt_block;

enum { RT_MAX_COMPOSITES = 16 }; /* composite ops forced on one context */
/* a composite op's variant forced on a context */
typedef struct {
  char op[UG_MAX_VARIANT_NAME + 1]; /* "kernel.pass", "" for a free slot */
  char name[64];
  bool from_env; /* given by UBGEN_VARIANT */
} rt_comp_forced;


struct ubg_ctx {
  uint64_t id; /* unique per context, so per-thread messages never leak between contexts */
  ug_budget budget; /* budget.ub_bytes: each worker's arena, the tuning DB's key */
  int threads;
  ubg_backend backend;
  bool guard;
  char *tuning_db;
  ug_tunedb tunedb;       /* loaded once at creation; empty when there is none */
  char *cache_dir;
  char *spec_path; /* ubg_config.spec_path, else $UBGEN_SPEC_PATH; NULL: none */
  const char *spec_path_source; /* which of the two, for messages */
  rt_kernel *kernels;
  int nkernels;
  pthread_mutex_t lock;
  rt_block *free_arenas;
  rt_block *free_workspace;
  pthread_mutex_t jit_lock; /* one compile at a time per context */
  rt_jit_state *jit_states; /* compiled code to free with the context */
  int njit_states, cap_jit_states;
  _Atomic int jit_compiles; /* variants this context compiled or swapped (tests) */
  bool jit_async;           /* UBGEN_JIT_ASYNC=1 */
  rt_comp_forced composite_forced[RT_MAX_COMPOSITES]; /* ubg_set_variant's names for composite ops; under lock */
  rt_dnnl_cache *dnnl; /* oneDNN's GEMM primitives made for this context's calls (gemm_onednn.h) */
  pthread_t async[RT_MAX_ASYNC]; /* background gcc builds, joined at destroy */
  int nasync;
};

/* ---- composite ops (composite.c, composite_run.c) ----
 * An op that is not one spec'd pass but runs several (ubg_flce) has
 * variants of its own (its chunk, its GEMMs): the axes of a "composites"
 * entry of its kernel's spec (ug_composite), whose "args" and "run" say
 * what it takes and what it runs: ubg_launch runs it by name (its typed
 * wrapper, if it has one, through rt_composite_run), ubg_set_variant and
 * UBGEN_VARIANT force a variant by name as for any pass, checked against
 * the spec, and rt_composite_choose gives a call's values. What the command
 * line may ask of one (a call's plan) is in composite_plan.h. */
/* whether ctx's spec of kernel has a composite op named pass */
UBG_HIDDEN bool rt_composite_exists(const ubg_ctx *ctx, const char *kernel, const char *pass);
/* ctx's spec of c, when it is one the runtime can run; else NULL and why */
UBG_HIDDEN const ug_composite *rt_composite_spec(const ubg_ctx *ctx, const rt_composite *c, char *why, size_t n);
/* 0 when name is one of c's variants on ctx (spelled as the spec's
 * composite spells them, its named values here); else -1 and why */
UBG_HIDDEN int rt_composite_check(const ubg_ctx *ctx, const rt_composite *c, const char *name, char *why, size_t n);
/* ubg_set_variant of c: the name checked, then kept (NULL clears) */
UBG_HIDDEN ubg_status rt_composite_set(ubg_ctx *ctx, const rt_composite *c, const char *variant, bool from_env);
/* the name forced on ctx for c ("" when none), and who forced it:
 * "ubg_set_variant" or "UBGEN_VARIANT" */
UBG_HIDDEN void rt_composite_forced(const ubg_ctx *ctx, const rt_composite *c, char *out, size_t n,
                                    const char **source);

/* The variant of c for a call of this dtype and shape (its kernel's, in
 * its order): per axis the value forced on ctx (a whole name fixes every
 * axis, a partial one the axes it gives), else the tuning DB's entry when
 * it is a whole variant and every shape value is at least 1, else the
 * axis's default. A named value that does not run the dtype is replaced
 * by the default; a tuned one this build or CPU lacks is not taken.
 * -1 when ctx has no spec of c the wrapper can run. */
UBG_HIDDEN int rt_composite_choose(const ubg_ctx *ctx, const rt_composite *c, ubg_dtype dtype, const int64_t *shape,
                                   rt_comp_choice *ch);
/* ... of a spec given (k, comp), c its names (what is forced or tuned under them) */
UBG_HIDDEN int rt_composite_choose_spec(const ubg_ctx *ctx, const ug_kernel *k, const ug_composite *comp,
                                        const rt_composite *c, ubg_dtype dtype, const int64_t *shape,
                                        rt_comp_choice *ch);
/* A call of c (its spec's "args", by name) run as its spec's "run" says:
 * nothing written when it fails. what starts every message ("ubg_flce"). */
UBG_HIDDEN ubg_status rt_composite_run(ubg_ctx *ctx, const rt_composite *c, const char *what, ubg_dtype dtype,
                                       const ubg_arg *args, size_t nargs, const int64_t *nbytes);
/* ... of a composite spec the caller parsed itself (k, comp), not ctx's:
 * its steps' passes are ctx's of kernel k->name (fuzz/fuzz_composite.c
 * runs the specs it makes this way, with one context for all) */
UBG_HIDDEN ubg_status rt_composite_run_spec(ubg_ctx *ctx, const ug_kernel *k, const ug_composite *comp,
                                            const char *what, ubg_dtype dtype, const ubg_arg *args, size_t nargs,
                                            const int64_t *nbytes);
/* the rows of a chunk a call of this shape (the kernel's, in its order)
 * and rows would take: the first axis's value as rt_composite_choose gives
 * it, rows where the default overflows (or there is no ctx), capped to [1,
 * rows] */
UBG_HIDDEN int64_t rt_composite_chunk_rows(const ubg_ctx *ctx, const char *kernel, const char *op, ubg_dtype dtype,
                                           const int64_t *shape, int64_t rows);
/* 0 when comp has at most RT_COMP_AXES axes, "args" and a "run" whose
 * routines this runtime has; else -1 and why */
UBG_HIDDEN int rt_run_spec_ok(const ug_kernel *k, const ug_composite *comp, char *why, size_t n);
/* UBGEN_VARIANT's entries forced on a new context, as ubg_set_variant would */
UBG_HIDDEN ubg_status rt_env_variants(ubg_ctx *ctx);

/* ---- messages (per thread, per context) ---- */
UBG_HIDDEN ubg_status rt_fail(const ubg_ctx *ctx, ubg_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
UBG_HIDDEN void rt_set_last_variant(const ubg_ctx *ctx, const char *name);
UBG_HIDDEN void rt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- configuration ---- */
UBG_HIDDEN ubg_status rt_config_resolve(ubg_ctx *ctx, const ubg_config *cfg);
/* the tuning DB: ubg_config.tuning_db, $UBGEN_TUNING_DB, else <cache dir>/tuning.json;
 * a missing file is no DB, an unusable one a warning through the log */
UBG_HIDDEN void rt_tunedb_load(ubg_ctx *ctx);

/* ---- AOT registries ---- */
/* the function of variant `name` built from the spec with this hash, or NULL */
UBG_HIDDEN ubg_kernel_fn rt_aot_lookup(const char *name, uint64_t spec_hash);
/* calls fn(table) for every registered table, main first */
UBG_HIDDEN void rt_aot_each(void (*fn)(const ubg_aot_table *t, void *ud), void *ud);

/* ---- kernels of a context ---- */
UBG_HIDDEN ubg_status rt_kernels_load(ubg_ctx *ctx);
UBG_HIDDEN void rt_kernels_free(ubg_ctx *ctx);
UBG_HIDDEN ubg_status rt_find_pass(const ubg_ctx *ctx, const char *kernel, const char *pass, rt_pass **out);

/* ---- pools ---- */
/* n arenas of ctx->budget.ub_bytes (with a guard page after each in guard mode) */
UBG_HIDDEN ubg_status rt_arenas_take(ubg_ctx *ctx, int n, rt_block **out);
UBG_HIDDEN void rt_arenas_give(ubg_ctx *ctx, rt_block **arenas, int n);
UBG_HIDDEN ubg_status rt_workspace_take(ubg_ctx *ctx, size_t bytes, rt_block **out);
UBG_HIDDEN void rt_workspace_give(ubg_ctx *ctx, rt_block *b);
UBG_HIDDEN void rt_pools_free(ubg_ctx *ctx);

/* ---- backends ---- */
UBG_HIDDEN const char *rt_data_dir(void);
UBG_HIDDEN const char *rt_backend_name(int ran);
/* The function that runs variant index of rp for dtype, compiling it when the
 * context's backend says so; *ran = RT_RAN_*. */
UBG_HIDDEN ubg_status rt_kernel_fn(ubg_ctx *ctx, rt_pass *rp, int dtype, int index, ubg_kernel_fn *fn, int *ran);
UBG_HIDDEN void rt_jit_free(ubg_ctx *ctx);
UBG_HIDDEN extern const int rt_have_tcc; /* 0 in libubgen.so */
UBG_HIDDEN ubg_status rt_tcc_compile(ubg_ctx *ctx, const char *name, const char *src, ubg_kernel_fn *fn, void **state);
UBG_HIDDEN void rt_tcc_free(void *state);
/* The variant from the gcc disk cache; with compile, built into it first
 * when missing. *usable: the cache directory could be used. */
UBG_HIDDEN ubg_status rt_gcc_get(ubg_ctx *ctx, const char *name, const char *src, int compile, ubg_kernel_fn *fn,
                                 void **handle, bool *usable);
UBG_HIDDEN void rt_gcc_free(void *handle);

/* ---- the grid ---- */
/* Runs programs 0..nprog-1 of one stage on up to nthreads workers, each
 * with its own arena. */
/* threads, or 1 in a forked child of a process that ran a parallel region
 * (GNU libgomp's pool does not survive fork): what any OpenMP region of
 * the runtime, or of a library it calls, may use */
UBG_HIDDEN int rt_omp_threads(int threads);
UBG_HIDDEN void rt_grid_run(ubg_kernel_fn fn, const void *slots, int stage, int64_t nprog, rt_block **arenas,
                            int nthreads);

/* ---- launch ---- */
UBG_HIDDEN ubg_status rt_launch(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype,
                                const ubg_arg *args, size_t nargs);
/* a typed entry point's arguments (runtime/op_*.c): a tensor, an int, a float
 * by name; LAUNCH runs kernel.pass with them for the entry's ctx and dtype */
#define T_ARG(n, ptr) {n, UBG_ARG_PTR, {.p = (void *)(ptr)}}
#define I_ARG(n, v) {n, UBG_ARG_I64, {.i = (v)}}
#define F_ARG(n, v) {n, UBG_ARG_F64, {.f = (v)}}
#define LAUNCH(kernel, pass, args) rt_launch(ctx, kernel, pass, dtype, args, sizeof args / sizeof args[0])

/* launch's checks of a call's arguments (match by name, alignment, values
 * and the spec's checks, sizes, overlaps, index ranges) against p's args:
 * what a composite op's call (ug_composite.call) shares with a pass's. what
 * starts each message. Fills slots [p->nargs], env [p->nsyms] (the int
 * args, has_<tensor>, dtype, dtype_bytes) and bytes [p->nargs] (each
 * tensor's byte size, 0 for NULL); nbytes as ubg_launch_sized's, or NULL. */
union ubg_slot;
UBG_HIDDEN ubg_status rt_check_args(const ubg_ctx *ctx, const char *what, const ug_pass *p, ubg_dtype dtype,
                                    const ubg_arg *args, size_t nargs, const int64_t *nbytes, union ubg_slot *slots,
                                    int64_t *env, int64_t *bytes);

/* of those checks the ones that read no tensor (the values, the spec's
 * checks, the sizes): for a plan, whose tensors are only there or not */
UBG_HIDDEN ubg_status rt_check_values(const ubg_ctx *ctx, const char *what, const ug_pass *p, ubg_dtype dtype,
                                      const union ubg_slot *slots, int64_t *env, int64_t *bytes);

/* rt_launch with the byte sizes of the callers' buffers (ubg_launch_sized) */
UBG_HIDDEN ubg_status rt_launch_sized(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype,
                                      const ubg_arg *args, size_t nargs, const int64_t *nbytes);
/* rt_launch_sized for a composite's step (composite_run.c), whose
 * bindings come from a spec and are checked as a caller's are: nbytes[i]
 * is what args[i]'s tensor holds from where it points (at least the pass's
 * shape), elem[i] its element type (the pass's own, or refused); unset[i]
 * (or NULL): a buffer no step has filled yet, whose index range is not
 * read; check_only: every check, and nothing run */
typedef struct {
  const ug_elem *elem;
  const bool *unset;
  bool check_only;
} rt_bound;
UBG_HIDDEN ubg_status rt_launch_bound(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype,
                                      const ubg_arg *args, size_t nargs, const int64_t *nbytes, const rt_bound *bound);

#endif

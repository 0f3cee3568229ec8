/* Routines: the runtime's own operations that a composite op's steps may
 * name beside its kernel's passes (a spec's "run", docs/spec-format.md):
 * GEMMs on a library, the cross entropy over rows with its reductions,
 * zeroing and narrowing. A routine knows no kernel: a step binds its
 * arguments by name, as a pass's, and the runner (composite_run.c) calls
 * it once per step, with begin and end around the chunks for a routine
 * that keeps state over a call. A new routine is one more entry in
 * routines.c's table. */
#ifndef UBG_ROUTINE_H
#define UBG_ROUTINE_H

#include "internal.h"

enum { RT_ROUTINE_ARGS = 32 };

/* one step's call of a routine: its arguments by name, each tensor with its
 * element type and the bytes from where it points to its end */
typedef struct {
  ubg_ctx *ctx;
  const char *what; /* the op, for messages ("ubg_flce") */
  ubg_dtype dtype;
  int threads; /* for its parallel loops and libraries: the context's, 1 in a forked child (rt_omp_threads) */
  const char *kernel, *pass; /* the composite's kernel; the step's pass, or NULL */
  const ubg_arg *args;
  const ug_elem *elem;   /* [nargs]: tensors' element types */
  const int64_t *nbytes; /* [nargs]: tensors' bytes, 0 for NULL */
  int nargs;
  void *state;   /* state_bytes, zeroed before begin; the same for a step's begin, runs and end */
  void *scratch; /* the routine's scratch bytes for this step (64-byte aligned), or NULL */
  size_t scratch_bytes; /* ... its size: at least what scratch() asked at a whole chunk's rows; a chunk of
                           other rows may need more of a library (which then takes its own) */
  char variant[160]; /* what ran, for ubg_ctx_last_variant */
} rt_routine_call;

typedef struct rt_routine {
  const char *name; /* "gemm.onednn" */
  size_t state_bytes;
  /* NULL, or why it cannot run in this build or on this CPU */
  const char *(*missing)(void);
  /* the dtypes it runs; NULL: all */
  bool (*runs)(ubg_dtype dtype);
  /* whether it writes the tensor bound to argument `name` in this call (a call's input may not be one) */
  bool (*writes)(const rt_routine_call *c, const char *name);
  /* the bound tensors hold what run reads and writes, and are of types it takes (a spec binds
   * them; called for every chunk before the first runs); call: the bindings at the whole call's
   * rows, where begin and end run (what they read and write); NULL: nothing to check */
  ubg_status (*check)(const rt_routine_call *c, bool call);
  /* its scratch for the call's largest chunk (the arguments bound at rows = chunk); NULL: none */
  size_t (*scratch)(const rt_routine_call *c);
  /* before the first step of the call's first chunk: may fail (and then nothing ran) */
  ubg_status (*begin)(rt_routine_call *c);
  ubg_status (*run)(rt_routine_call *c);
  /* after the call (ok: every step ran), to write what it reduced and free what begin took */
  void (*end)(rt_routine_call *c, bool ok);
} rt_routine;

/* the routines, listed in routines.c (a table, not constructors: a static
 * link keeps only the objects something names) */
UBG_HIDDEN extern const rt_routine rt_routine_zero, rt_routine_store, rt_routine_convert, rt_routine_ce_rows,
    rt_routine_gemm_onednn, rt_routine_moe_mm_onednn, rt_routine_moe_dw_onednn;
UBG_HIDDEN const rt_routine *rt_routine_find(const char *name);

/* an argument by name: its index, or -1 when the step binds none */
UBG_HIDDEN int rt_routine_arg(const rt_routine_call *c, const char *name);
/* a tensor (NULL when not bound), an int (dflt when not bound), a float */
UBG_HIDDEN void *rt_routine_p(const rt_routine_call *c, const char *name);
UBG_HIDDEN int64_t rt_routine_i(const rt_routine_call *c, const char *name, int64_t dflt);
UBG_HIDDEN double rt_routine_f(const rt_routine_call *c, const char *name, double dflt);
/* routine `routine`'s check (its `check`) of a tensor bound to `name`:
 * not NULL where required, of element type elem (UG_ELEM_T: the call's
 * dtype; RT_F32_OR_T: either f32 or the dtype) and at least count elements
 * from where it is bound; count below 0 is refused, named by `dims` */
enum { RT_F32_OR_T = -1 };
UBG_HIDDEN ubg_status rt_routine_need(const rt_routine_call *c, const char *routine, const char *name, int elem,
                                      int64_t count, const char *dims, bool required);
/* name is one of list's, NULL-terminated */
UBG_HIDDEN bool rt_routine_named(const char *name, const char *const *list);
/* a tensor's element type (UG_ELEM_F32 when not bound) and bytes */
UBG_HIDDEN ug_elem rt_routine_elem(const rt_routine_call *c, const char *name);
UBG_HIDDEN int64_t rt_routine_bytes(const rt_routine_call *c, const char *name);

/* dst [n] := src [n], each in its type, rounded to nearest even where it
 * narrows, on `threads` OpenMP threads */
UBG_HIDDEN void rt_convert(void *dst, ubg_dtype to, const void *src, ubg_dtype from, int64_t n, int threads);

#endif

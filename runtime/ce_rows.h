/* Cross entropy over rows of f32 logits, chunk by chunk: what ubg_flce and
 * ubg_cross_entropy share (the options, their checks, the mean's
 * denominators, the CE pass flce.ce, and the reductions of its per-row
 * outputs). Each op brings its own logits to ce_rows_run one chunk at a
 * time.
 *
 *   target [bt] i64;  ce_weight [vocab] (dtype) or NULL
 *   loss, z_loss: [1] (MEAN, SUM) or [bt] (NONE);  argmax [bt] or NULL
 *   token_accuracy: [1] or [bt], or NULL;  grad_output: [1] or [bt], or NULL */
#ifndef UBG_CE_ROWS_H
#define UBG_CE_ROWS_H

#include "internal.h"

typedef struct {
  const char *name;
  const void *p;
  int64_t bytes;
  bool out;
} rt_region;

typedef struct {
  ubg_ctx *ctx;
  const char *fn; /* "ubg_flce" or "ubg_cross_entropy", for messages */
  const char *kernel, *pass; /* the CE pass it launches (flce.ce) */
  ubg_dtype dt;
  int64_t bt, vocab;
  const int64_t *target;
  ubg_flce_opts o;
  float *loss, *z_loss, *token_accuracy; /* the caller's outputs */
  int64_t *argmax;
  bool grad;                             /* the CE pass writes the gradient over the logits */
  float scale_n, scale_w, weight_sum;    /* the mean's factors, over the whole call */
  float *loss_rows, *z_rows;             /* scratch [chunk] (MEAN, SUM) */
  int64_t *argmax_rows;                  /* scratch [chunk]: token_accuracy without argmax */
  void *owned;                           /* the block rt_ce_rows_prepare allocated for them, or NULL */
  double loss_sum, z_sum;
  int64_t hits, counted;
  char variant[160];                     /* the CE pass's last variant */
} rt_ce_rows;

/* fn: what [dims = a x b] of esize-byte elements, overflow-checked */
UBG_HIDDEN ubg_status rt_check_size(const ubg_ctx *ctx, const char *fn, const char *what, const char *dims, int64_t a,
                                    int64_t b, int64_t esize, int64_t *bytes);
/* fn: p aligned to esize, the size of its elem elements */
UBG_HIDDEN ubg_status rt_check_aligned(const ubg_ctx *ctx, const char *fn, const char *what, const void *p, size_t esize,
                                       const char *elem);
/* fn: outputs overlap neither each other nor any input */
UBG_HIDDEN ubg_status rt_check_overlaps(const ubg_ctx *ctx, const char *fn, const rt_region *r, int n);

/* Fills c's options (opts, or Liger's defaults for NULL) and outputs */
UBG_HIDDEN void rt_ce_rows_set(rt_ce_rows *c, const ubg_flce_opts *opts, float *loss, float *z_loss, int64_t *argmax,
                               float *token_accuracy);
/* Fills c from the arguments both ops share and checks them, the targets
 * included: c->ctx, fn, dt, bt, vocab and target set by the caller. loss,
 * z_loss, argmax and token_accuracy are taken from the caller's outputs.
 * Adds the regions of these tensors to r (at most 7), *nr counting. */
UBG_HIDDEN ubg_status rt_ce_rows_check(rt_ce_rows *c, const ubg_flce_opts *opts, float *loss, float *z_loss,
                                       int64_t *argmax, float *token_accuracy, rt_region *r, int *nr);

/* After the checks: the mean's denominators, and the scratch for chunks of
 * up to chunk rows (its bytes added to *bytes); UBG_ENOMEM names fn. */
UBG_HIDDEN ubg_status rt_ce_rows_prepare(rt_ce_rows *c, int64_t chunk, size_t *bytes);
/* rt_ce_rows_prepare in two parts for a caller that owns the scratch: the
 * mean's denominators, then the per-row scratch placed in `scratch` (of
 * rt_ce_rows_scratch bytes, 64-byte aligned), which c does not free */
UBG_HIDDEN void rt_ce_rows_begin(rt_ce_rows *c);
UBG_HIDDEN void rt_ce_rows_place(rt_ce_rows *c, int64_t chunk, void *scratch);
/* the scratch rt_ce_rows_prepare allocates for chunks of chunk rows */
UBG_HIDDEN size_t rt_ce_rows_scratch(const rt_ce_rows *c, int64_t chunk);

/* The CE pass over rows [off, off + rows) whose f32 logits are at logits
 * ([rows, vocab]); with c->grad they become the gradient. rows = 0 picks
 * and compiles the pass's variant only. */
UBG_HIDDEN ubg_status rt_ce_rows_run(rt_ce_rows *c, float *logits, int64_t off, int64_t rows);

/* writes the reduced loss, z-loss and token accuracy (MEAN, SUM) */
UBG_HIDDEN void rt_ce_rows_finish(rt_ce_rows *c);
UBG_HIDDEN void rt_ce_rows_free(rt_ce_rows *c);

#endif

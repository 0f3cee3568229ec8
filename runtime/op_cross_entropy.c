/* ubg_cross_entropy: cross entropy over logits the caller has (Liger's
 * cross_entropy), through FLCE's CE pass (ce_rows.c).
 *
 *   logits [bt, vocab] (dtype), target [bt] -> loss, z_loss, argmax,
 *   token_accuracy, and dlogits [bt, vocab] (dtype) when asked
 *
 * The pass works on f32 rows in place. f32 logits are that already: the
 * pass runs on dlogits (a copy of the logits, or the logits themselves when
 * dlogits is them), or, without a gradient, on the logits, which it then
 * only reads. f16 and bf16 rows are widened into an f32 chunk of at most
 * CHUNK_BYTES and the gradient narrowed into dlogits. */
#include <stdlib.h>
#include <string.h>

#include "../templates/prelude.h"
#include "ce_rows.h"

enum { CHUNK_BYTES = 4 << 20 };

static void widen(float *dst, const void *src, int64_t n, ubg_dtype dt, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; i++) dst[i] = dt == UBG_F16 ? ubg_ld_f16(src, i) : ubg_ld_bf16(src, i);
}

static void narrow(void *dst, const float *src, int64_t n, ubg_dtype dt, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    if (dt == UBG_F16) ubg_st_f16(dst, i, src[i]);
    else ubg_st_bf16(dst, i, src[i]);
  }
}

static ubg_status validate(rt_ce_rows *c, const void *logits, const ubg_flce_opts *opts, const ubg_ce_out *out) {
  const ubg_ctx *ctx = c->ctx;
  if ((unsigned)c->dt > UBG_BF16)
    return rt_fail(ctx, UBG_EINVAL, "ubg_cross_entropy: dtype %d is not one of UBG_F32, UBG_F16, UBG_BF16", (int)c->dt);
  if (c->bt < 0) return rt_fail(ctx, UBG_EINVAL, "ubg_cross_entropy: bt = %lld is negative", (long long)c->bt);
  if (c->vocab < 1 || c->vocab > INT32_MAX)
    return rt_fail(ctx, UBG_EINVAL, "ubg_cross_entropy: vocab = %lld is outside [1, 2^31)", (long long)c->vocab);
  if (!logits) return rt_fail(ctx, UBG_EINVAL, "ubg_cross_entropy: logits is NULL");
  if (!c->target) return rt_fail(ctx, UBG_EINVAL, "ubg_cross_entropy: target is NULL");
  if (!out) return rt_fail(ctx, UBG_EINVAL, "ubg_cross_entropy: out is NULL");
  if (opts && opts->bias) return rt_fail(ctx, UBG_EINVAL, "ubg_cross_entropy: opts->bias must be NULL (no projection)");
  rt_region r[16];
  int nr = 0;
  ubg_status s = rt_ce_rows_check(c, opts, out->loss, out->z_loss, out->argmax, out->token_accuracy, r, &nr);
  if (s) return s;
  const size_t es = (size_t)ug_dtype_bytes((int)c->dt);
  const char *dt = ug_dtype_name((int)c->dt);
  int64_t b_l;
  if ((s = rt_check_aligned(ctx, c->fn, "logits", logits, es, dt)) ||
      (s = rt_check_aligned(ctx, c->fn, "out->dlogits", out->dlogits, es, dt)) ||
      (s = rt_check_size(ctx, c->fn, "logits", "bt x vocab", c->bt, c->vocab, (int64_t)es, &b_l)))
    return s;
  /* dlogits may be the logits themselves, not a part of them */
  const bool in_place = out->dlogits == logits;
  r[nr++] = (rt_region){"logits", logits, b_l, false};
  r[nr++] = (rt_region){"out->dlogits", in_place ? NULL : out->dlogits, b_l, true};
  return rt_check_overlaps(ctx, c->fn, r, nr);
}

ubg_status ubg_cross_entropy(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t vocab, const void *logits,
                             const int64_t *target, const ubg_flce_opts *opts, const ubg_ce_out *out) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_cross_entropy: ctx is NULL");
  rt_ce_rows c;
  memset(&c, 0, sizeof c);
  c.ctx = ctx;
  c.fn = "ubg_cross_entropy";
  c.kernel = "flce";
  c.pass = "ce";
  c.dt = dtype;
  c.bt = bt;
  c.vocab = vocab;
  c.target = target;
  ubg_status s = validate(&c, logits, opts, out);
  if (s) return s;
  c.grad = out->dlogits != NULL;
  const bool f32 = dtype == UBG_F32;
  int64_t chunk = f32 ? bt : CHUNK_BYTES / 4 / vocab;
  if (chunk < 1) chunk = 1;
  if (chunk > bt) chunk = bt;
  size_t bytes = 0;
  float *rows = NULL;
  if (!f32 && bt > 0) {
    rows = aligned_alloc(64, ((size_t)(chunk * vocab) * 4 + 63) / 64 * 64);
    if (!rows) return rt_fail(ctx, UBG_ENOMEM, "ubg_cross_entropy: out of memory for a chunk of %lld rows", (long long)chunk);
  }
  /* the pass's variant, compiled on no rows (it reads nothing there) */
  float *probe = rows ? rows : (float *)logits;
  if ((s = rt_ce_rows_prepare(&c, chunk, &bytes)) || (s = rt_ce_rows_run(&c, probe, 0, 0))) goto done;

  /* from here on only the pass, known to run */
  for (int64_t off = 0; off < bt; off += chunk) {
    const int64_t n = bt - off < chunk ? bt - off : chunk, first = off * vocab;
    float *work;
    if (f32) {
      work = c.grad ? (float *)out->dlogits + first : (float *)logits + first; /* without grad: only read */
      if (c.grad && out->dlogits != logits) memcpy(work, (const float *)logits + first, (size_t)(n * vocab) * 4);
    } else {
      work = rows;
      widen(work, (const char *)logits + (size_t)first * 2, n * vocab, dtype, rt_omp_threads(ctx->threads));
    }
    if ((s = rt_ce_rows_run(&c, work, off, n))) goto done;
    if (!f32 && c.grad) narrow((char *)out->dlogits + (size_t)first * 2, work, n * vocab, dtype, rt_omp_threads(ctx->threads));
  }
  rt_ce_rows_finish(&c);
  rt_set_last_variant(ctx, c.variant);
done:
  free(rows);
  rt_ce_rows_free(&c);
  return s;
}

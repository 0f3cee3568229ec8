/* ubg_flce: fused linear cross entropy (Liger's FLCE), the typed entry of
 * the flce spec's composite "chunk", which declares its arguments, its
 * scratch and the passes it runs per chunk of rows (composite_run.c runs
 * them):
 *
 *   x [bt, hidden], weight [vocab, hidden], target [bt]   (dtype: x, weight, bias, dx, dweight, dbias)
 *   per chunk:  logits = x_chunk weight^T (+ bias); cross entropy over each
 *   row, the logits replaced by their gradient; dx_chunk = dlogits weight;
 *   dweight += dlogits^T x_chunk, dbias += column sums
 *
 * Here only the C structs become the spec's named arguments. */
#include "internal.h"

static const rt_composite flce_chunk = {"flce", "chunk"};

ubg_status ubg_flce(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t hidden, int64_t vocab, const void *x,
                    const void *weight, const int64_t *target, const ubg_flce_opts *opts, const ubg_flce_out *out) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_flce: ctx is NULL");
  if (!out) return rt_fail(ctx, UBG_EINVAL, "ubg_flce: out is NULL");
  ubg_flce_opts o;
  if (opts) o = *opts;
  else ubg_flce_opts_init(&o);
  const ubg_arg a[] = {
      T_ARG("x", x),
      T_ARG("weight", weight),
      T_ARG("target", target),
      T_ARG("bias", o.bias),
      T_ARG("ce_weight", o.ce_weight),
      T_ARG("grad_output", o.grad_output),
      T_ARG("loss", out->loss),
      T_ARG("z_loss", out->z_loss),
      T_ARG("argmax", out->argmax),
      T_ARG("token_accuracy", out->token_accuracy),
      T_ARG("dx", out->dx),
      T_ARG("dweight", out->dweight),
      T_ARG("dbias", out->dbias),
      I_ARG("bt", bt),
      I_ARG("hidden", hidden),
      I_ARG("vocab", vocab),
      I_ARG("ignore_index", o.ignore_index),
      I_ARG("reduction", (int64_t)o.reduction),
      I_ARG("accum_dtype", (int64_t)o.accum_dtype),
      I_ARG("token_scaling", o.token_scaling),
      F_ARG("label_smoothing", o.label_smoothing),
      F_ARG("lse_square_scale", o.lse_square_scale),
      F_ARG("softcap", o.softcap),
  };
  return rt_composite_run(ctx, &flce_chunk, "ubg_flce", dtype, a, sizeof a / sizeof a[0], NULL);
}

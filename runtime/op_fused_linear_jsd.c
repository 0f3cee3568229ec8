/* ubg_fused_linear_jsd: fused linear generalized JSD (Liger's
 * LigerFusedLinearJSDFunction), the typed entry of the fused_linear_jsd
 * spec's composite "chunk", which declares its arguments, its scratch and
 * the passes it runs (composite_run.c runs them):
 *
 *   student_input [bt, hidden], student_weight [vocab, hidden]     (dtype: also dx, dweight)
 *   teacher_input [bt, teacher_hidden], teacher_weight [vocab, teacher_hidden]
 *   before: kept = rows not ignored; per chunk: z_s = x_s W_s^T, z_t = x_t W_t^T
 *   (f32), each row's JSD of their log-softmax over the temperature with
 *   dz_s in place of z_s; dx_chunk = dz_s W_s; dweight += dz_s^T x_s;
 *   after: loss = sum of the rows' JSD / kept
 *
 * Here the C arguments become the spec's named ones, and a temperature of
 * 0, which no spec bound can refuse (floats are not expressions), is. */
#include "internal.h"

static const rt_composite fused_linear_jsd_chunk = {"fused_linear_jsd", "chunk"};

ubg_status ubg_fused_linear_jsd(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t hidden, int64_t teacher_hidden,
                                int64_t vocab, const void *student_input, const void *student_weight,
                                const void *teacher_input, const void *teacher_weight, const int64_t *shift_labels,
                                float jsd_beta, int64_t ignore_index, float temperature, ubg_dtype accum_dtype,
                                float *loss, void *dx, void *dweight) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_fused_linear_jsd: ctx is NULL");
  if (!(temperature > 0.0f))
    return rt_fail(ctx, UBG_EINVAL, "ubg_fused_linear_jsd: temperature = %g; it divides the logits and must be above 0",
                   (double)temperature);
  const ubg_arg a[] = {
      T_ARG("student_input", student_input),
      T_ARG("student_weight", student_weight),
      T_ARG("teacher_input", teacher_input),
      T_ARG("teacher_weight", teacher_weight),
      T_ARG("shift_labels", shift_labels),
      T_ARG("loss", loss),
      T_ARG("dx", dx),
      T_ARG("dweight", dweight),
      I_ARG("bt", bt),
      I_ARG("hidden", hidden),
      I_ARG("teacher_hidden", teacher_hidden),
      I_ARG("vocab", vocab),
      I_ARG("ignore_index", ignore_index),
      I_ARG("accum_dtype", (int64_t)accum_dtype),
      F_ARG("jsd_beta", jsd_beta),
      F_ARG("temperature", temperature),
  };
  return rt_composite_run(ctx, &fused_linear_jsd_chunk, "ubg_fused_linear_jsd", dtype, a, sizeof a / sizeof a[0], NULL);
}

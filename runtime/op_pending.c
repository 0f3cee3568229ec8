/* Typed entry points of kernels whose specs have not landed yet (their
 * issues are open): declared in ubgen.h so the API is whole, answering
 * UBG_ENOTFOUND until the kernel exists. When a kernel lands, its entry
 * point moves to its own op_<kernel>.c. */
#include "internal.h"

static ubg_status pending(const ubg_ctx *ctx, const char *fn, const char *kernel) {
  return rt_fail(ctx, UBG_ENOTFOUND, "%s: the %s kernel is not in this build yet", fn, kernel);
}

ubg_status ubg_embedding_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t num_embeddings, int64_t dim, const void *table,
                             int64_t n, const int64_t *indices, void *out) {
  (void)dtype, (void)num_embeddings, (void)dim, (void)table, (void)n, (void)indices, (void)out;
  return pending(ctx, "ubg_embedding_fwd", "embedding");
}

ubg_status ubg_embedding_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t num_embeddings, int64_t dim, int64_t n,
                             const int64_t *indices, const void *dout, int64_t padding_idx, void *dtable) {
  (void)dtype, (void)num_embeddings, (void)dim, (void)n, (void)indices, (void)dout, (void)padding_idx, (void)dtable;
  return pending(ctx, "ubg_embedding_bwd", "embedding");
}

ubg_status ubg_attn_res_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t nblocks, int64_t tokens, int64_t dim, const void *v,
                            const void *w_query, const void *w_norm, float eps, void *out, float *alpha, float *rstd) {
  (void)dtype, (void)nblocks, (void)tokens, (void)dim, (void)v, (void)w_query, (void)w_norm, (void)eps, (void)out;
  (void)alpha, (void)rstd;
  return pending(ctx, "ubg_attn_res_fwd", "attn_res");
}

ubg_status ubg_attn_res_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t nblocks, int64_t tokens, int64_t dim,
                            const void *dout, const void *v, const void *w_query, const void *w_norm,
                            const float *alpha, const float *rstd, void *dv, void *dw_query, void *dw_norm) {
  (void)dtype, (void)nblocks, (void)tokens, (void)dim, (void)dout, (void)v, (void)w_query, (void)w_norm;
  (void)alpha, (void)rstd, (void)dv, (void)dw_query, (void)dw_norm;
  return pending(ctx, "ubg_attn_res_bwd", "attn_res");
}

void ubg_flce_opts_init(ubg_flce_opts *o) {
  if (!o) return;
  o->ignore_index = -100;
  o->label_smoothing = 0.0f;
  o->lse_square_scale = 0.0f;
  o->softcap = 0.0f;
  o->reduction = UBG_REDUCE_MEAN;
  o->ce_weight = NULL;
  o->bias = NULL;
}

ubg_status ubg_flce(ubg_ctx *ctx, ubg_dtype dtype, int64_t bt, int64_t hidden, int64_t vocab, const void *x,
                    const void *weight, const int64_t *target, const ubg_flce_opts *opts, const ubg_flce_out *out) {
  (void)dtype, (void)bt, (void)hidden, (void)vocab, (void)x, (void)weight, (void)target, (void)opts, (void)out;
  return pending(ctx, "ubg_flce", "flce");
}

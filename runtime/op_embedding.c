/* Typed entry points of the embedding kernel: the arguments by name, then
 * ubg_launch's path (the spec validates them, and checks every index before
 * anything is written). */
#include "internal.h"

ubg_status ubg_embedding_fwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t num_embeddings, int64_t dim, const void *table,
                             int64_t n, const int64_t *indices, void *out) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_embedding_fwd: ctx is NULL");
  ubg_arg args[] = {
      {"table", UBG_ARG_PTR, {.p = (void *)table}},
      {"indices", UBG_ARG_PTR, {.p = (void *)indices}},
      {"out", UBG_ARG_PTR, {.p = out}},
      {"num_embeddings", UBG_ARG_I64, {.i = num_embeddings}},
      {"dim", UBG_ARG_I64, {.i = dim}},
      {"n", UBG_ARG_I64, {.i = n}},
  };
  return rt_launch(ctx, "embedding", "fwd", dtype, args, sizeof args / sizeof args[0]);
}

ubg_status ubg_embedding_bwd(ubg_ctx *ctx, ubg_dtype dtype, int64_t num_embeddings, int64_t dim, int64_t n,
                             const int64_t *indices, const void *dout, int64_t padding_idx, void *dtable) {
  if (!ctx) return rt_fail(NULL, UBG_EINVAL, "ubg_embedding_bwd: ctx is NULL");
  ubg_arg args[] = {
      {"indices", UBG_ARG_PTR, {.p = (void *)indices}},
      {"dout", UBG_ARG_PTR, {.p = (void *)dout}},
      {"dtable", UBG_ARG_PTR, {.p = dtable}},
      {"num_embeddings", UBG_ARG_I64, {.i = num_embeddings}},
      {"dim", UBG_ARG_I64, {.i = dim}},
      {"n", UBG_ARG_I64, {.i = n}},
      {"padding_idx", UBG_ARG_I64, {.i = padding_idx}},
  };
  return rt_launch(ctx, "embedding", "bwd", dtype, args, sizeof args / sizeof args[0]);
}

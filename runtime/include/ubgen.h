/* ubgen: specialized, UB-budgeted kernels for fused training ops.
 *
 * docs/semantics.md says what each op computes, docs/environment.md what
 * configures a context. Rules every function follows: no exit or abort on
 * bad input, no printing (a log callback or UBGEN_LOG only); a failure
 * returns a status and sets a message naming the argument and its values
 * (ubg_ctx_error); inputs are validated before anything is written, so a
 * failed call leaves outputs untouched. A context may be used from several
 * threads at once.
 *
 * Tensors are dense, row-major, in the storage dtype of the call unless a
 * comment says f32; sizes are element counts. A tensor pointer must be
 * aligned to its element size (UBG_EINVAL otherwise; no wider alignment is
 * needed). An output may not overlap any other tensor, except where a
 * comment says it may equal one. NaN and Inf in tensors are data, carried
 * through as the double-precision reference does; float arguments (eps,
 * offset, FLCE's options) must be finite.
 */
#ifndef UBGEN_H
#define UBGEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define UBG_API __attribute__((visibility("default")))
#else
#define UBG_API
#endif

typedef enum { UBG_F32, UBG_F16, UBG_BF16 } ubg_dtype;
typedef enum { UBG_OK = 0, UBG_EINVAL, UBG_ERANGE, UBG_EUB, UBG_ENOMEM,
               UBG_ECOMPILE, UBG_ENOTFOUND, UBG_EIO } ubg_status;
typedef enum { UBG_BACKEND_AUTO, UBG_BACKEND_AOT, UBG_BACKEND_TCC,
               UBG_BACKEND_GCC } ubg_backend;
typedef struct {
  size_t ub_bytes;        /* 0: $UBGEN_UB_BYTES, else 196608 */
  double safety_margin;   /* 0: 0.90 */
  int threads;            /* 0: $UBGEN_THREADS, else online CPUs */
  ubg_backend backend;    /* AUTO; $UBGEN_BACKEND overrides AUTO */
  const char *tuning_db;  /* NULL: $UBGEN_TUNING_DB, else <cache>/tuning.json */
  const char *cache_dir;  /* NULL: $UBGEN_CACHE_DIR, else $XDG_CACHE_HOME/ubgen */
  const char *spec_path;  /* directories of specs served before the built-in ones, ':'-separated;
                             NULL: $UBGEN_SPEC_PATH */
} ubg_config;
typedef struct ubg_ctx ubg_ctx;

/* On failure *out is NULL and ubg_ctx_error(NULL) says why (this thread). */
UBG_API ubg_status  ubg_ctx_create(const ubg_config *cfg /* NULL: defaults */, ubg_ctx **out);
UBG_API void        ubg_ctx_destroy(ubg_ctx *ctx);
UBG_API const char *ubg_ctx_error(const ubg_ctx *ctx);        /* last failure, this thread */
UBG_API const char *ubg_ctx_last_variant(const ubg_ctx *ctx); /* variant of the last call or ubg_prepare, this thread */
UBG_API const char *ubg_status_str(ubg_status s);
/* force a variant for kernel.pass (NULL: automatic again); UBG_EUB if it does not fit.
 * ubg_flce's chunk and GEMMs are the variants of "flce", "chunk": "chunk=N" or
 * "chunk=N,gemm=onednn", or "gemm=B" (generated, onednn) for the
 * GEMMs alone (over the tuning DB). $UBGEN_VARIANT forces them at ubg_ctx_create. */
UBG_API ubg_status  ubg_set_variant(ubg_ctx *ctx, const char *kernel, const char *pass, const char *variant);
/* get a variant's code ready now (built in, or compiled by the context's
 * backend) without running it: a compile error shows here, and the first
 * call pays no compile; ubg_ctx_last_variant then says which code serves it
 * ("<variant>@aot|tcc|gcc"). variant NULL: every variant of kernel.pass in
 * dtype that fits the UB budget. */
UBG_API ubg_status  ubg_prepare(ubg_ctx *ctx, const char *kernel, const char *pass, ubg_dtype dtype,
                                const char *variant);

typedef enum { UBG_CAST_LLAMA, UBG_CAST_GEMMA, UBG_CAST_NONE } ubg_casting;
UBG_API ubg_status ubg_rms_norm_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols,
    const void *x, const void *w /* [cols] or NULL */, float eps, float offset,
    ubg_casting, void *y /* may equal x */, float *rstd /* [rows] */);
UBG_API ubg_status ubg_rms_norm_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols,
    const void *dy, const void *x, const void *w, const float *rstd, float offset,
    ubg_casting, void *dx /* may equal dy */, void *dw /* [cols]; NULL iff w NULL */);

UBG_API ubg_status ubg_embedding_fwd(ubg_ctx *, ubg_dtype, int64_t num_embeddings,
    int64_t dim, const void *table, int64_t n, const int64_t *indices, void *out);
UBG_API ubg_status ubg_embedding_bwd(ubg_ctx *, ubg_dtype, int64_t num_embeddings,
    int64_t dim, int64_t n, const int64_t *indices, const void *dout,
    int64_t padding_idx /* -1: none */, void *dtable /* overwritten */);

/* LayerNorm (Liger's LigerLayerNormFunction) over rows of x [rows, cols]:
 * y = (x - mean) rstd w + b, biased variance, mean and rstd [rows] f32 kept
 * for the backward; dw and db [cols] are summed over the rows. y may equal
 * x, dx may equal dy. */
UBG_API ubg_status ubg_layer_norm_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *x,
    const void *w, const void *b, float eps, void *y, float *mean, float *rstd);
UBG_API ubg_status ubg_layer_norm_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *dy,
    const void *x, const void *w, const float *mean, const float *rstd, void *dx, void *dw, void *db);

/* Dynamic tanh (Liger's LigerDyTFunction) over rows of x [rows, cols]:
 * y = gamma tanh(alpha x) + beta, alpha [1], gamma and beta [cols] (beta
 * NULL: none); dalpha [1], dgamma and dbeta [cols] (dbeta NULL: not
 * computed) are summed over the rows. y may equal x, dx may equal dy. */
UBG_API ubg_status ubg_dyt_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *x,
    const void *alpha, const void *gamma, const void *beta, void *y);
UBG_API ubg_status ubg_dyt_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *dy,
    const void *x, const void *alpha, const void *gamma, void *dx, void *dalpha, void *dgamma, void *dbeta);

/* GroupNorm (Liger's LigerGroupNormFunction) over x [batch, channels,
 * spatial] seen as [batch, groups, cols], cols = channels / groups x
 * spatial: each row (a batch's group) is normalized as LayerNorm's, then
 * each channel c takes its w[c] and b[c]: y = (x - mean) rstd w[c] + b[c],
 * biased variance, mean and rstd [batch, groups] f32 kept for the
 * backward; dw and db [channels] are summed over the batch and the
 * channel's spatial elements. y may equal x, dx may equal dy. */
UBG_API ubg_status ubg_group_norm_fwd(ubg_ctx *, ubg_dtype, int64_t batch, int64_t channels, int64_t groups,
    int64_t cols, const void *x, const void *w, const void *b, float eps, void *y, float *mean, float *rstd);
UBG_API ubg_status ubg_group_norm_bwd(ubg_ctx *, ubg_dtype, int64_t batch, int64_t channels, int64_t groups,
    int64_t cols, const void *dy, const void *x, const void *w, const float *mean, const float *rstd, void *dx,
    void *dw, void *db);

/* Softmax over the last dimension (Liger's LigerSoftmaxFunction), rows of
 * x [rows, cols]: y = exp(x - max) / sum exp(x - max); the backward from
 * y: dx = y (dy - sum(dy y)). y may equal x, dx may equal dy. */
UBG_API ubg_status ubg_softmax_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *x, void *y);
UBG_API ubg_status ubg_softmax_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *dy,
    const void *y, void *dx);

/* Fused 1-D neighborhood attention (Liger's
 * LigerFusedNeighborhoodAttentionFunction) over q, k, v, out [batch_heads,
 * seq_len, head_dim], head_dim <= 512: query i attends to keys j = i + u
 * dilation, |u| <= kernel_size / 2, 0 <= j < seq_len (clipped at the
 * ends); out = softmax(scale q k^T) v over them, lse [batch_heads,
 * seq_len] f32 its log-sum-exp for the backward. The backward takes the
 * forward's out and lse; dq, dk, dv [batch_heads, seq_len, head_dim]. */
UBG_API ubg_status ubg_neighborhood_attention_fwd(ubg_ctx *, ubg_dtype, int64_t batch_heads, int64_t seq_len,
    int64_t head_dim, int64_t kernel_size, int64_t dilation, float scale, const void *q, const void *k,
    const void *v, void *out, float *lse);
UBG_API ubg_status ubg_neighborhood_attention_bwd(ubg_ctx *, ubg_dtype, int64_t batch_heads, int64_t seq_len,
    int64_t head_dim, int64_t kernel_size, int64_t dilation, float scale, const void *dout, const void *q,
    const void *k, const void *v, const void *out, const float *lse, void *dq, void *dk, void *dv);

/* Manifold-constrained hyper-connections (Liger's LigerMHCCoeffsFunction,
 * LigerMHCPreFunction, LigerMHCPostResFunction) over tokens of x [rows, hc,
 * c], hc <= 16 streams, M = hc hc + 2 hc; every tensor but x, f_out, dout
 * and their gradients is f32. coeffs: mix = (x [rows, hc c] @ phi [hc c, M])
 * invr, invr = 1 / sqrt(mean(x^2) + rms_eps) (both saved for the backward);
 * h_pre = sigmoid(alpha[0] mix[:hc] + b[:hc]) + pre_eps, h_post = post_mult
 * sigmoid(alpha[1] mix[hc:2hc] + b[hc:2hc]), h_res [rows, hc, hc] =
 * Sinkhorn-Knopp of alpha[2] mix[2hc:] + b[2hc:] (tmax column steps); the
 * backward takes dh_pre, dh_post, dh_res (each NULL: zero) and sums dphi,
 * db, dalpha over the rows. pre: out [rows, c] = sum_i h_pre[i] x[i].
 * post_res: out [rows, hc, c] = sum_i h_res[o, i] x[i] + h_post[o] f_out. */
UBG_API ubg_status ubg_mhc_coeffs_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t hc, int64_t c, const void *x,
    const float *phi, const float *b, const float *alpha, int64_t tmax, float rms_eps, float pre_eps,
    float sinkhorn_eps, float post_mult, float *h_pre, float *h_post, float *h_res, float *mix, float *invr);
UBG_API ubg_status ubg_mhc_coeffs_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t hc, int64_t c,
    const float *dh_pre, const float *dh_post, const float *dh_res, const void *x, const float *phi, const float *b,
    const float *alpha, const float *mix, const float *invr, int64_t tmax, float sinkhorn_eps, float post_mult,
    void *dx, float *dphi, float *db, float *dalpha);
UBG_API ubg_status ubg_mhc_pre_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t hc, int64_t c, const void *x,
    const float *h_pre, void *out);
UBG_API ubg_status ubg_mhc_pre_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t hc, int64_t c, const void *dout,
    const void *x, const float *h_pre, void *dx, float *dh_pre);
UBG_API ubg_status ubg_mhc_post_res_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t hc, int64_t c, const void *x,
    const void *f_out, const float *h_post, const float *h_res, void *out);
UBG_API ubg_status ubg_mhc_post_res_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t hc, int64_t c,
    const void *dout, const void *x, const void *f_out, const float *h_post, const float *h_res, void *dx,
    void *df_out, float *dh_post, float *dh_res);

/* KL divergence (Liger's LigerKLDivLossFunction) of y_true from y_pred,
 * both [rows, cols], y_pred log-probabilities: l = y_true (log max(y_true,
 * eps) - y_pred), or e^y_true (y_true - y_pred) with log_target 1.
 * reduction is a ubg_reduction: UBG_REDUCE_NONE gives loss [rows, cols] =
 * l; SUM, MEAN and BATCHMEAN give loss [1], the sum of l (in double)
 * divided by 1, rows cols or rows. The backward needs y_true alone:
 * dy_pred = -(y_true or e^y_true) grad_output, grad_output [rows, cols]
 * for NONE, else [1] and divided likewise. dy_pred may equal y_true. */
UBG_API ubg_status ubg_kl_div_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, int reduction, int log_target,
    float eps, const void *y_pred, const void *y_true, float *loss);
UBG_API ubg_status ubg_kl_div_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, int reduction, int log_target,
    const void *y_true, const float *grad_output, void *dy_pred);

/* The vocabulary sweeps of the GRPO loss (Liger's GrpoLossFunction and
 * fused_selective_log_softmax). logits [batch, seq + 1, vocab] (position
 * seq of each sequence is not used), ids [batch, seq] in [0, vocab),
 * temperature t > 0. Forward: lse = log sum exp(x / t) of each token's
 * row x, logp = x[ids] / t - lse, both [batch, seq] f32. Backward, from
 * the caller's dloss/dlogp [batch, seq] (its loss_type's derivative):
 * dlogits = dlogp / t ([v = ids] - exp(x / t - lse)), 0 at position seq
 * and where dlogp is 0. dlogits may equal logits. */
UBG_API ubg_status ubg_grpo_loss_fwd(ubg_ctx *, ubg_dtype, int64_t batch, int64_t seq, int64_t vocab,
    float temperature, const void *logits, const int64_t *ids, float *logp, float *lse);
UBG_API ubg_status ubg_grpo_loss_bwd(ubg_ctx *, ubg_dtype, int64_t batch, int64_t seq, int64_t vocab,
    float temperature, const void *logits, const int64_t *ids, const float *lse, const float *dlogp,
    void *dlogits);
/* Generalized Jensen-Shannon divergence (Liger's LigerJSDFunction) over
 * rows of log-probabilities log_q (the student's) and log_p (the
 * teacher's), [rows, cols]: beta KL(P || M) + (1 - beta) KL(Q || M), M =
 * beta P + (1 - beta) Q, beta in [0, 1]; beta = 0 is KL(P || Q), beta = 1
 * KL(Q || P). Rows whose shift_labels [rows] equal ignore_index are left
 * out (shift_labels NULL: none is); loss [1] = the kept rows' sum / their
 * count (0 when none is kept). dlog_q (NULL: not computed) receives
 * dloss/dlog_q in the same sweep, 0 on the rows left out; it may equal
 * log_q. */
UBG_API ubg_status ubg_jsd_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *log_q,
    const void *log_p, const int64_t *shift_labels, float beta, int64_t ignore_index, float *loss, void *dlog_q);

/* Fused linear generalized JSD (Liger's LigerFusedLinearJSDFunction): the
 * JSD above of log q = log_softmax(student_input student_weight^T /
 * temperature) against log p = log_softmax(teacher_input teacher_weight^T /
 * temperature), student_input [bt, hidden], student_weight [vocab, hidden],
 * teacher_input [bt, teacher_hidden], teacher_weight [vocab,
 * teacher_hidden], on chunks of rows (never a [bt, vocab] logits tensor):
 * loss [1] = the kept rows' sum / their count. dx [bt, hidden] and dweight
 * [vocab, hidden] (NULL: not computed) are the student's gradients for an
 * upstream gradient of 1; the teacher gets none. accum_dtype: UBG_F32 sums
 * dweight over the chunks in f32, the call's dtype in it (Liger's
 * accum_dtype=None). temperature must be above 0. The variants of
 * "fused_linear_jsd", "chunk" are ubg_flce's (chunk=N, gemm=onednn). */
UBG_API ubg_status ubg_fused_linear_jsd(ubg_ctx *, ubg_dtype, int64_t bt, int64_t hidden, int64_t teacher_hidden,
    int64_t vocab, const void *student_input, const void *student_weight, const void *teacher_input,
    const void *teacher_weight, const int64_t *shift_labels, float jsd_beta, int64_t ignore_index, float temperature,
    ubg_dtype accum_dtype, float *loss, void *dx, void *dweight);

/* A mixture of experts' expert layers with SwiGLU (Liger's
 * LigerFusedMoEFunction): x [tokens, hidden], gate_up_proj [experts,
 * 2 inter, hidden] (each expert's gate rows, then its up rows), down_proj
 * [experts, hidden, inter], top_k_index [tokens, top_k] int32 in [0,
 * experts), top_k_weights [tokens, top_k]: out [tokens, hidden] = the sum
 * over k of top_k_weights[t, k] expert_e(x[t]), e = top_k_index[t, k],
 * expert_e(v) = (silu(v G_e^T) * (v U_e^T)) D_e^T, summed in f32 in slot
 * order. pre_act [tokens, top_k, 2 inter] f32 (NULL: not kept) receives
 * each slot's v W_gu[e]^T for the backward, which takes it back with dout
 * [tokens, hidden]; dx, dgate_up_proj, ddown_proj and dtop_k_weights
 * (each NULL: not computed) are the gradients of the inputs of the same
 * shapes. Both run on chunks of tokens, all of them unless "fused_moe",
 * "forward"/"backward" is forced to chunk=N (the weights' gradients are
 * then rounded to the dtype once per chunk). */
UBG_API ubg_status ubg_fused_moe_forward(ubg_ctx *, ubg_dtype, int64_t tokens, int64_t hidden, int64_t inter,
    int64_t experts, int64_t top_k, const void *x, const void *gate_up_proj, const void *down_proj,
    const int32_t *top_k_index, const void *top_k_weights, void *out, float *pre_act);
UBG_API ubg_status ubg_fused_moe_backward(ubg_ctx *, ubg_dtype, int64_t tokens, int64_t hidden, int64_t inter,
    int64_t experts, int64_t top_k, const void *x, const void *gate_up_proj, const void *down_proj,
    const int32_t *top_k_index, const void *top_k_weights, const float *pre_act, const void *dout, void *dx,
    void *dgate_up_proj, void *ddown_proj, void *dtop_k_weights);

/* PolyNorm (Liger's LigerPolyNormFunction) over rows of x [rows, cols]:
 * y = w0 norm(x^3) + w1 norm(x^2) + w2 norm(x) + b, norm(u) = u rstd_u,
 * rstd_u = 1 / sqrt(mean(u^2) + eps); w [3], b [1]; rstd [rows, 3] f32
 * (x^3's, x^2's, x's) kept for the backward; dw [3] and db [1] are summed
 * over every element. y may equal x, dx may equal dy. */
UBG_API ubg_status ubg_poly_norm_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *x,
    const void *w, const void *b, float eps, void *y, float *rstd);
UBG_API ubg_status ubg_poly_norm_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *dy,
    const void *x, const void *w, const float *rstd, void *dx, void *dw, void *db);
/* Sparsemax over the last dimension (Liger's LigerSparsemaxFunction), rows
 * of x [rows, cols]: y = max(x - tau, 0), tau such that each row of y sums
 * to 1; the backward from y: dx = dy - mean(dy over y > 0) where y > 0, 0
 * elsewhere. y may equal x, dx may equal dy. */
UBG_API ubg_status ubg_sparsemax_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *x, void *y);
UBG_API ubg_status ubg_sparsemax_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *dy,
    const void *y, void *dx);
/* Residual add then RMSNorm (Liger's LigerFusedAddRMSNormFunction) over
 * rows of x, residual [rows, cols]: s = rnd(x + residual), the residual
 * stream; y = RMSNorm of s with w [cols], eps, offset and casting as
 * ubg_rms_norm_fwd's; rstd [rows]. The backward takes dy and ds (the
 * gradient of s; NULL: none): dx = RMSNorm's dx + ds, which is also the
 * gradient of residual; dw [cols]. y may equal x, s residual; dx may equal
 * dy or ds. */
UBG_API ubg_status ubg_fused_add_rms_norm_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *x,
    const void *residual, const void *w, float eps, float offset, ubg_casting, void *y, void *s, float *rstd);
UBG_API ubg_status ubg_fused_add_rms_norm_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *dy,
    const void *ds, const void *s, const void *w, const float *rstd, float offset, ubg_casting, void *dx, void *dw);

/* Squared ReLU (Liger's LigerReLUSquaredFunction, nemotron's MLP
 * activation), elementwise over x [rows, cols]: y = max(x, 0)^2,
 * dx = 2 dy max(x, 0). y may equal x; dx may equal dy or x. */
UBG_API ubg_status ubg_relu_squared_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *x, void *y);
UBG_API ubg_status ubg_relu_squared_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *dy,
    const void *x, void *dx);

/* Modulated RMSNorm (Liger's LigerModulatedRMSNormFunction) over rows of x
 * [rows, cols]: y = (1 + scale) RMSNorm(x) + shift, RMSNorm as
 * ubg_rms_norm_fwd's (w NULL: none); scale and shift [mod_rows, cols]
 * (shift NULL: none), row j serving rows j k .. j k + k - 1 of x, k = rows /
 * mod_rows (mod_rows must divide rows). dw [cols] (given iff w is), dscale
 * and dshift [mod_rows, cols] (dshift NULL: not computed) are summed over
 * the rows each serves. y may equal x, dx may equal dy. */
UBG_API ubg_status ubg_modulated_rms_norm_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, int64_t mod_rows,
    const void *x, const void *w, const void *scale, const void *shift, float eps, float offset, ubg_casting,
    void *y, float *rstd /* [rows] */);
UBG_API ubg_status ubg_modulated_rms_norm_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, int64_t mod_rows,
    const void *dy, const void *x, const void *w, const void *scale, const float *rstd, float offset, ubg_casting,
    void *dx, void *dw, void *dscale, void *dshift);

/* The gated activations of an MLP (Liger's LigerSiLUMulFunction and
 * LigerGELUMulFunction), elementwise over a, b [rows, cols]:
 *   swiglu: c = rnd(silu(a gm)) b, times dm (1, 1: plain SwiGLU)
 *   geglu:  c = rnd(gelu_tanh(a)) b
 * c may equal a or b; da may equal a or dc, db may equal b or dc (Liger
 * writes the gradients over a and b). */
UBG_API ubg_status ubg_swiglu_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *a,
    const void *b, float gate_multiplier, float down_multiplier, void *c);
UBG_API ubg_status ubg_swiglu_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *dc,
    const void *a, const void *b, float gate_multiplier, float down_multiplier, void *da, void *db);
UBG_API ubg_status ubg_geglu_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *a,
    const void *b, void *c);
UBG_API ubg_status ubg_geglu_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *dc,
    const void *a, const void *b, void *da, void *db);

/* Rotary position embedding (transformers' apply_rotary_pos_emb, the
 * rotate-half convention; Liger's LigerRopeFunction), q [bt, hq, d] and
 * k [bt, hk, d] token-major (a [B, H, T, D] tensor transposed to [B, T, H,
 * D] is that without a copy), cos and sin [cos_rows, d] with cos_rows =
 * seq (one row per position, shared by the batch) or bt (one per token):
 *   fwd: each head's [x1, x2] -> [x1 c_a - x2 s_a, x2 c_b + x1 s_b]
 *   bwd: the gradients through the transposed rotation
 * d even, bt whole sequences of seq tokens; q_out may equal q, k_out k, dq
 * dq_out and dk dk_out. */
UBG_API ubg_status ubg_rope_fwd(ubg_ctx *, ubg_dtype, int64_t bt, int64_t seq, int64_t cos_rows, int64_t hq,
    int64_t hk, int64_t d, const void *q, const void *k, const void *cos, const void *sin, void *q_out,
    void *k_out);
UBG_API ubg_status ubg_rope_bwd(ubg_ctx *, ubg_dtype, int64_t bt, int64_t seq, int64_t cos_rows, int64_t hq,
    int64_t hk, int64_t d, const void *dq_out, const void *dk_out, const void *cos, const void *sin, void *dq,
    void *dk);

/* Llama 4's rotary position embedding (transformers' apply_rotary_emb and
 * vision_apply_rotary_emb; Liger's LigerLlama4RopeFunction), q [bt, hq, d]
 * and k [bt, hk, d] token-major, each head d/2 interleaved pairs (re, im);
 * freqs [freq_rows, d] f32, the pairs (cos, sin) of freqs_cis (its
 * torch.view_as_real), freq_rows = seq (one row per position) or bt (one
 * per token):
 *   fwd: each pair times its frequency, (x_re + i x_im)(f_re + i f_im)
 *   bwd: the gradients times the conjugate frequency
 * d even, bt whole sequences of seq tokens; q_out may equal q, k_out k, dq
 * dq_out and dk dk_out. */
UBG_API ubg_status ubg_llama4_rope_fwd(ubg_ctx *, ubg_dtype, int64_t bt, int64_t seq, int64_t freq_rows,
    int64_t hq, int64_t hk, int64_t d, const void *q, const void *k, const float *freqs, void *q_out, void *k_out);
UBG_API ubg_status ubg_llama4_rope_bwd(ubg_ctx *, ubg_dtype, int64_t bt, int64_t seq, int64_t freq_rows,
    int64_t hq, int64_t hk, int64_t d, const void *dq_out, const void *dk_out, const float *freqs, void *dq,
    void *dk);

UBG_API ubg_status ubg_attn_res_fwd(ubg_ctx *, ubg_dtype, int64_t nblocks, int64_t tokens,
    int64_t dim, const void *v /* [nblocks,tokens,dim] */, const void *w_query,
    const void *w_norm, float eps, void *out /* [tokens,dim] */,
    float *alpha /* [tokens,nblocks] */, float *rstd /* [tokens,nblocks] */);
UBG_API ubg_status ubg_attn_res_bwd(ubg_ctx *, ubg_dtype, int64_t nblocks, int64_t tokens,
    int64_t dim, const void *dout, const void *v, const void *w_query,
    const void *w_norm, const float *alpha, const float *rstd,
    void *dv, void *dw_query, void *dw_norm);

/* BATCHMEAN (the sum / rows kept) is the distillation losses' (KL divergence, TVD) */
typedef enum { UBG_REDUCE_MEAN, UBG_REDUCE_SUM, UBG_REDUCE_NONE, UBG_REDUCE_BATCHMEAN } ubg_reduction;
typedef struct {
  int64_t ignore_index;    /* -100 */
  float label_smoothing;   /* 0 */
  float lse_square_scale;  /* 0: z-loss coefficient */
  float softcap;           /* 0: off */
  ubg_reduction reduction; /* MEAN */
  const float *ce_weight;  /* [vocab] class weights (f32 for every dtype, as Liger's), or NULL */
  const void *bias;        /* [vocab] or NULL */
  const float *grad_output; /* the upstream gradient the gradients are taken for: [1] for
                              MEAN and SUM, [bt] (one per row) for NONE; NULL: 1 */
  int token_scaling;       /* 1: each row's loss and gradient times its p(target), detached */
  ubg_dtype accum_dtype;   /* UBG_F32: dweight and dbias summed over the chunks in f32, rounded
                              once; the call's dtype: summed in it, rounded after every chunk
                              (Liger's accum_dtype=None), with no vocab x hidden f32 buffer */
} ubg_flce_opts;
typedef struct {
  float *loss;             /* [1], or [bt] for REDUCE_NONE */
  float *z_loss;           /* like loss, or NULL */
  int64_t *argmax;         /* [bt] predicted token, -1 on ignored rows, or NULL */
  void *dx;                /* [bt,hidden], or NULL: no input gradient */
  void *dweight;           /* [vocab,hidden], or NULL */
  void *dbias;             /* [vocab], or NULL */
  float *token_accuracy;   /* [1]: rows whose argmax is the target / rows not ignored
                              (MEAN, SUM), or [bt]: 1 or 0, 0 on ignored rows (NONE); or NULL */
} ubg_flce_out;
UBG_API void       ubg_flce_opts_init(ubg_flce_opts *o);
UBG_API ubg_status ubg_flce(ubg_ctx *, ubg_dtype, int64_t bt, int64_t hidden, int64_t vocab,
    const void *x /* [bt,hidden] */, const void *weight /* [vocab,hidden] */,
    const int64_t *target /* [bt] */, const ubg_flce_opts *, const ubg_flce_out *);

/* Cross entropy over given logits (Liger's cross_entropy): the CE of ubg_flce
 * without the projection. Same options (bias must be NULL); dlogits, when
 * given, receives the gradient in dtype and may be the logits themselves. */
typedef struct {
  float *loss;             /* [1], or [bt] for REDUCE_NONE */
  float *z_loss;           /* like loss, or NULL */
  int64_t *argmax;         /* [bt], -1 on ignored rows, or NULL */
  float *token_accuracy;   /* as ubg_flce_out's, or NULL */
  void *dlogits;           /* [bt,vocab], or NULL: no gradient */
} ubg_ce_out;
UBG_API ubg_status ubg_cross_entropy(ubg_ctx *, ubg_dtype, int64_t bt, int64_t vocab,
    const void *logits /* [bt,vocab] */, const int64_t *target /* [bt] */,
    const ubg_flce_opts *, const ubg_ce_out *);

/* Total variation distance (Liger's LigerTVDLossFunction) between the rows
 * of p and q [rows, cols]: 0.5 |p - q| per element; a row whose
 * shift_labels entry ([rows], or NULL: none) is ignore_index is left out.
 * loss: [rows, cols] for REDUCE_NONE (0 on rows left out), else [1]: the
 * sum over the rows kept (SUM), divided by their number (BATCHMEAN) or by
 * their elements (MEAN), 0 when no row is kept. The backward takes the
 * loss's gradient dloss (shaped as loss): dp = dloss 0.5 sign(p - q) times
 * the same factor, sign(0) = 0, 0 on rows left out. dp may equal p. */
UBG_API ubg_status ubg_tvd_fwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const void *p, const void *q,
    const int64_t *shift_labels, int64_t ignore_index, ubg_reduction, float *loss);
UBG_API ubg_status ubg_tvd_bwd(ubg_ctx *, ubg_dtype, int64_t rows, int64_t cols, const float *dloss,
    const void *p, const void *q, const int64_t *shift_labels, int64_t ignore_index, ubg_reduction, void *dp);

/* generic entry: any spec'd kernel's pass, or composite op (a spec's
 * "composites" entry with a "run": ubg_launch(ctx, "flce", "chunk", ...) is
 * ubg_flce's call), arguments matched to the spec by name */
typedef enum { UBG_ARG_PTR, UBG_ARG_I64, UBG_ARG_F64 } ubg_arg_kind;
typedef struct { const char *name; ubg_arg_kind kind;
                 union { void *p; int64_t i; double f; } v; } ubg_arg;
UBG_API ubg_status ubg_launch(ubg_ctx *, const char *kernel, const char *pass, ubg_dtype,
                              const ubg_arg *args, size_t nargs);
/* ubg_launch for callers that know how large each buffer is (a binding such
 * as Python's): nbytes[i] is the byte size of args[i]'s buffer when it is a
 * tensor (negative: unknown). A buffer whose size is not exactly its spec
 * shape's (elements x element size) is refused (UBG_EINVAL) before
 * anything runs. */
UBG_API ubg_status ubg_launch_sized(ubg_ctx *, const char *kernel, const char *pass, ubg_dtype,
                                    const ubg_arg *args, size_t nargs, const int64_t *nbytes);
/* What a call of kernel.pass (a pass or a composite op) in dtype takes as
 * its argument number `index` (from 0): the name, the kind, for a tensor
 * its element type ("f32", "f16", "bf16", "i64", "i32" or "u8"; NULL for
 * a scalar) and whether the call writes it (1) or only reads it (0), so
 * that a binding can check what ubg_launch_sized cannot see in a byte
 * count. The strings live as long as the context. UBG_ENOTFOUND past the
 * last argument or for a kernel, pass or composite without arguments. */
UBG_API ubg_status ubg_arg_info(ubg_ctx *, const char *kernel, const char *pass, ubg_dtype, int index,
                                const char **name, ubg_arg_kind *kind, const char **elem, int *written);

#ifdef __cplusplus
}
#endif

#endif /* UBGEN_H */

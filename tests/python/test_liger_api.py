"""ubgen.liger: Liger-Kernel's public names at Liger's import paths, with
Liger's parameter names, order and defaults, and Liger's return types."""
import dataclasses
import importlib
import inspect

import pytest
import torch

import ubgen.liger as liger
import ubgen.liger.transformers.grpo_loss  # noqa: F401 (Liger has its GRPO names in their modules only)
import ubgen.liger.transformers.fused_neighborhood_attention  # noqa: F401 (its Module, Layer and Config likewise)

# (parameter, default) in Liger's order; inspect.Parameter.empty: required
REQ = inspect.Parameter.empty
SIGNATURES = {
    "LigerRMSNorm.__init__": [("hidden_size", REQ), ("eps", 1e-6), ("offset", 0.0), ("casting_mode", "llama"),
                              ("init_fn", "ones"), ("in_place", True), ("row_mode", None),
                              ("elementwise_affine", True)],
    "LigerRMSNorm.forward": [("hidden_states", REQ)],
    "LigerRMSNormFunction.forward": [("X", REQ), ("W", REQ), ("eps", 1e-6), ("offset", 0.0),
                                     ("casting_mode", "llama"), ("in_place", True), ("row_mode", None)],
    "liger_rms_norm": [("X", REQ), ("W", REQ), ("eps", REQ), ("offset", 0.0), ("casting_mode", "llama"),
                       ("in_place", True)],
    "LigerEmbedding.__init__": [("num_embeddings", REQ), ("embedding_dim", REQ), ("padding_idx", None)],
    "LigerEmbedding.forward": [("indices", REQ)],
    "LigerAttnResFunction.forward": [("V", REQ), ("w_query", REQ), ("w_norm", REQ), ("eps", 1e-6)],
    "liger_attn_res": [("V", REQ), ("w_query", REQ), ("w_norm", REQ), ("eps", 1e-6)],
    "LigerFusedLinearCrossEntropyFunction.forward": [
        ("_input", REQ), ("weight", REQ), ("target", REQ), ("bias", None), ("ce_weight", None),
        ("ignore_index", -100), ("lse_square_scale", 0.0), ("label_smoothing", 0.0), ("reduction", "mean"),
        ("softcap", None), ("return_z_loss", False), ("accum_dtype", None), ("use_token_scaling", False),
        ("return_token_accuracy", False), ("return_predicted_tokens", False)],
    "liger_fused_linear_cross_entropy": [
        ("input", REQ), ("weight", REQ), ("target", REQ), ("bias", None), ("ce_weight", None),
        ("ignore_index", -100), ("lse_square_scale", 0.0), ("label_smoothing", 0.0), ("reduction", "mean"),
        ("softcap", None), ("return_z_loss", False), ("accum_dtype", None), ("use_token_scaling", False),
        ("return_token_accuracy", False), ("return_predicted_tokens", False)],
    "LigerFusedLinearCrossEntropyLoss.__init__": [
        ("ce_weight", None), ("ignore_index", -100), ("lse_square_scale", 0.0), ("label_smoothing", 0.0),
        ("reduction", "mean"), ("softcap", None), ("return_z_loss", False), ("accum_dtype", None),
        ("use_token_scaling", False), ("return_token_accuracy", False), ("return_predicted_tokens", False)],
    "LigerFusedLinearCrossEntropyLoss.forward": [("lin_weight", REQ), ("_input", REQ), ("target", REQ),
                                                 ("bias", None)],
    "LigerCrossEntropyFunction.forward": [
        ("_input", REQ), ("target", REQ), ("weight", None), ("ignore_index", -100), ("lse_square_scale", 0.0),
        ("label_smoothing", 0.0), ("reduction", "mean"), ("softcap", None), ("return_z_loss", False),
        ("return_token_accuracy", False), ("return_predicted_tokens", False)],
    "liger_cross_entropy": [
        ("input", REQ), ("target", REQ), ("weight", None), ("size_average", None), ("ignore_index", -100),
        ("reduce", None), ("reduction", "mean"), ("label_smoothing", 0.0), ("lse_square_scale", 0.0),
        ("softcap", None), ("return_z_loss", False), ("return_token_accuracy", False),
        ("return_predicted_tokens", False)],
    "LigerCrossEntropyLoss.__init__": [
        ("weight", None), ("ignore_index", -100), ("lse_square_scale", 0.0), ("label_smoothing", 0.0),
        ("reduction", "mean"), ("softcap", None), ("return_z_loss", False), ("return_token_accuracy", False),
        ("return_predicted_tokens", False)],
    "LigerCrossEntropyLoss.forward": [("_input", REQ), ("target", REQ)],
    "LigerSiLUMulFunction.forward": [("a", REQ), ("b", REQ), ("gate_multiplier", 1.0), ("down_multiplier", 1.0)],
    "LigerGELUMulFunction.forward": [("a", REQ), ("b", REQ)],
    "liger_swiglu": [("a", REQ), ("b", REQ)],
    "liger_geglu": [("a", REQ), ("b", REQ)],
    "LigerSwiGLUMLP.__init__": [("config", REQ)],
    "LigerSwiGLUMLP.forward": [("x", REQ)],
    "LigerGEGLUMLP.__init__": [("config", REQ)],
    "LigerGEGLUMLP.forward": [("x", REQ)],
    "LigerLayerNormFunction.forward": [("X", REQ), ("W", REQ), ("B", REQ), ("eps", REQ)],
    "liger_layer_norm": [("X", REQ), ("W", REQ), ("B", REQ), ("eps", REQ)],
    "LigerLayerNorm.__init__": [("hidden_size", REQ), ("eps", 1e-6), ("bias", False), ("init_fn", "ones")],
    "LigerLayerNorm.forward": [("hidden_states", REQ)],
    "LigerDyTFunction.forward": [("x", REQ), ("alpha", REQ), ("gamma", REQ), ("beta", REQ)],
    "liger_dyt": [("x", REQ), ("alpha", REQ), ("gamma", REQ), ("beta", REQ)],
    "LigerDyT.__init__": [("hidden_size", REQ), ("beta", True), ("init_alpha", 0.5)],
    "LigerDyT.forward": [("x", REQ)],
    "LigerReLUSquaredFunction.forward": [("X", REQ)],
    "liger_relu_squared": [("x", REQ)],
    "LigerReLUSquared.forward": [("x", REQ)],
    "LigerSoftmaxFunction.forward": [("x", REQ)],
    # Liger's GRPO names live in their modules only (not at liger_kernel's top level)
    "ops.grpo_loss.GrpoLossFunction.forward": [
        ("logits", REQ), ("old_logp", REQ), ("ref_logp", REQ), ("completion_ids", REQ), ("advantages", REQ),
        ("completion_mask", REQ), ("temperature", REQ), ("beta", REQ), ("eps_low", REQ), ("eps_high", REQ),
        ("inplace", REQ), ("loss_type", "grpo"), ("max_completion_length", None), ("reduce", True),
        ("importance_sampling_level", "token"), ("sapo_temperature_pos", 1.0), ("sapo_temperature_neg", 1.05),
        ("vllm_is_ratio", None), ("delta", None), ("use_bias_correction_kl", False), ("num_items_in_batch", None),
        ("phi_seq", None)],
    "ops.grpo_loss.fused_selective_log_softmax": [("logits", REQ), ("input_ids", REQ), ("temperature", 0.9),
                                                  ("mask", None)],
    "transformers.grpo_loss.triton_grpo_loss": [
        ("logits", REQ), ("old_logp", REQ), ("ref_logp", REQ), ("completion_ids", REQ), ("advantages", REQ),
        ("completion_mask", None), ("temperature", 0.9), ("beta", 0.04), ("eps_low", 0.2), ("eps_high", 0.4),
        ("inplace", True), ("loss_type", "dapo"), ("max_completion_length", None),
        ("importance_sampling_level", "token"), ("reduce", False), ("sapo_temperature_pos", 1.0),
        ("sapo_temperature_neg", 1.05), ("vllm_is_ratio", None), ("delta", None), ("use_bias_correction_kl", False),
        ("num_items_in_batch", None), ("vespo_k_pos", 2.0), ("vespo_lambda_pos", 3.0), ("vespo_k_neg", 3.0),
        ("vespo_lambda_neg", 2.0)],
    "liger_softmax": [("x", REQ)],
    "LigerSoftmax.forward": [("x", REQ)],
    "LigerFusedNeighborhoodAttentionFunction.forward": [("query", REQ), ("key", REQ), ("value", REQ),
                                                        ("kernel_size", 7), ("dilation", 1), ("scale", None)],
    "liger_fused_neighborhood_attention": [("query", REQ), ("key", REQ), ("value", REQ), ("kernel_size", 7),
                                           ("dilation", 1), ("scale", None)],
    "transformers.fused_neighborhood_attention.LigerFusedNeighborhoodAttention.__init__": [
        ("hidden_size", REQ), ("num_heads", REQ), ("kernel_size", 7), ("dilation", 1), ("bias", True),
        ("dropout", 0.0), ("scale", None)],
    "transformers.fused_neighborhood_attention.LigerFusedNeighborhoodAttention.forward": [
        ("hidden_states", REQ), ("attention_mask", None)],
    "transformers.fused_neighborhood_attention.LigerFusedNeighborhoodAttentionLayer.__init__": [
        ("hidden_size", REQ), ("num_heads", REQ), ("kernel_size", 7), ("dilation", 1), ("bias", True),
        ("dropout", 0.0), ("layer_norm_eps", 1e-5), ("scale", None)],
    "transformers.fused_neighborhood_attention.LigerFusedNeighborhoodAttentionLayer.forward": [
        ("hidden_states", REQ), ("attention_mask", None)],
    "transformers.fused_neighborhood_attention.LigerFusedNeighborhoodAttentionConfig.__init__": [
        ("hidden_size", 768), ("num_heads", 12), ("kernel_size", 7), ("dilation", 1), ("bias", True),
        ("dropout", 0.0), ("layer_norm_eps", 1e-5), ("scale", None)],
    "LigerMHCCoeffsFunction.forward": [("x", REQ), ("phi", REQ), ("b", REQ), ("alpha_pre", REQ), ("alpha_post", REQ),
                                       ("alpha_res", REQ), ("allow_fp32", REQ), ("tmax", REQ), ("rms_eps", REQ),
                                       ("pre_eps", REQ), ("sinkhorn_eps", REQ), ("post_mult", REQ)],
    "LigerMHCPreFunction.forward": [("x", REQ), ("h_pre", REQ)],
    "LigerMHCPostResFunction.forward": [("x", REQ), ("f_out", REQ), ("h_post", REQ), ("h_res", REQ)],
    "liger_mhc_coeffs": [("x", REQ), ("phi", REQ), ("b", REQ), ("alpha_pre", REQ), ("alpha_post", REQ),
                         ("alpha_res", REQ), ("allow_fp32", False), ("tmax", 20), ("rms_eps", 1e-6), ("pre_eps", 0.0),
                         ("sinkhorn_eps", 1e-6), ("post_mult", 2.0)],
    "liger_mhc_pre": [("x", REQ), ("h_pre", REQ)],
    "liger_mhc_post_res": [("x", REQ), ("f_out", REQ), ("h_post", REQ), ("h_res", REQ)],
    "LigerMHC.__init__": [("layer", REQ), ("hc", REQ), ("c", REQ), ("tmax", 20), ("rms_eps", 1e-6), ("pre_eps", 0.0),
                          ("sinkhorn_eps", 1e-6), ("post_mult", 2.0), ("phi_dtype", torch.float16),
                          ("allow_fp32", False)],
    "LigerMHC.forward": [("x", REQ)],
    "LigerTVDLossFunction.forward": [("p", REQ), ("q", REQ), ("shift_labels", None), ("reduction", "batchmean"),
                                     ("ignore_index", -100)],
    "liger_tvd": [("input", REQ), ("target", REQ), ("shift_labels", None), ("reduction", "mean"),
                  ("ignore_index", -100)],
    "LigerTVDLoss.__init__": [("reduction", "batchmean"), ("ignore_index", -100)],
    "LigerTVDLoss.forward": [("p", REQ), ("q", REQ), ("shift_labels", None)],
    "LigerKLDivLossFunction.forward": [("y_pred", REQ), ("y_true", REQ), ("reduction", "batchmean"),
                                       ("log_target", False), ("eps", 1e-10)],
    "liger_kl_div": [("input", REQ), ("target", REQ), ("size_average", True), ("reduce", True), ("reduction", "mean"),
                     ("log_target", False), ("eps", 1e-10)],
    "LigerKLDIVLoss.__init__": [("eps", 1e-10), ("args", REQ), ("kwargs", REQ)],
    "LigerKLDIVLoss.forward": [("y_pred", REQ), ("y_true", REQ)],
    "LigerJSDFunction.forward": [("_input", REQ), ("target", REQ), ("shift_labels", None), ("beta", 0.5),
                                 ("ignore_index", -100)],
    "liger_jsd": [("input", REQ), ("target", REQ), ("shift_labels", None), ("beta", 0.5), ("ignore_index", -100)],
    "LigerJSD.__init__": [("beta", 0.5), ("ignore_index", -100)],
    "LigerJSD.forward": [("log_q", REQ), ("log_p", REQ), ("shift_labels", None)],
    "LigerFusedLinearJSDFunction.forward": [("student_input", REQ), ("student_weight", REQ), ("teacher_input", REQ),
                                            ("teacher_weight", REQ), ("shift_labels", None), ("jsd_beta", 0.5),
                                            ("ignore_index", -100), ("temperature", 1.0), ("accum_dtype", None)],
    "liger_fused_linear_jsd": [("student_input", REQ), ("student_weight", REQ), ("teacher_input", REQ),
                               ("teacher_weight", REQ), ("shift_labels", None), ("jsd_beta", 0.5),
                               ("ignore_index", -100), ("temperature", 1.0), ("accum_dtype", None)],
    "LigerFusedLinearJSD.__init__": [("jsd_beta", 0.5), ("ignore_index", -100), ("temperature", 1.0),
                                     ("accum_dtype", None)],
    "LigerFusedLinearJSD.forward": [("student_input", REQ), ("student_weight", REQ), ("teacher_input", REQ),
                                    ("teacher_weight", REQ), ("shift_labels", REQ)],
    "LigerFusedMoEFunction.forward": [("x", REQ), ("gate_up_proj", REQ), ("down_proj", REQ),
                                      ("top_k_index", REQ), ("top_k_weights", REQ)],
    "LigerExperts.__init__": [("config", REQ)],
    "LigerExperts.forward": [("hidden_states", REQ), ("top_k_index", REQ), ("top_k_weights", REQ)],
    "LigerPolyNormFunction.forward": [("X", REQ), ("W", REQ), ("B", REQ), ("eps", 1e-6), ("in_place", True)],
    "liger_poly_norm": [("X", REQ), ("W", REQ), ("B", REQ), ("eps", 1e-6), ("in_place", True)],
    "LigerPolyNorm.__init__": [("eps", 1e-6), ("in_place", True)],
    "LigerPolyNorm.forward": [("hidden_states", REQ)],
    "LigerSparsemaxFunction.forward": [("x", REQ), ("dim", REQ)],
    "liger_sparsemax": [("input", REQ), ("dim", -1)],
    "LigerSparsemax.__init__": [("dim", -1)],
    "LigerSparsemax.forward": [("x", REQ)],
    "LigerQwen2VLMRopeFunction.forward": [("q", REQ), ("k", REQ), ("cos", REQ), ("sin", REQ), ("mrope_section", REQ),
                                          ("unsqueeze_dim", 1)],
    "liger_qwen2vl_mrope": [("q", REQ), ("k", REQ), ("cos", REQ), ("sin", REQ), ("mrope_section", REQ),
                            ("unsqueeze_dim", 1)],
    "liger_multimodal_rotary_pos_emb": [("q", REQ), ("k", REQ), ("cos", REQ), ("sin", REQ), ("mrope_section", REQ),
                                        ("unsqueeze_dim", 1)],
    "LigerLlama4RopeFunction.forward": [("q", REQ), ("k", REQ), ("freqs_cis", REQ), ("BLOCK_SIZE", None)],
    "liger_llama4_text_rotary_pos_emb": [("xq", REQ), ("xk", REQ), ("freqs_cis", REQ)],
    "liger_llama4_vision_rotary_pos_emb": [("query", REQ), ("key", REQ), ("freqs_ci", REQ)],
    "LigerModulatedRMSNormFunction.forward": [("X", REQ), ("W", REQ), ("scale", REQ), ("shift", REQ), ("eps", REQ),
                                              ("offset", 0.0), ("casting_mode", "llama"), ("in_place", True)],
    "liger_modulated_rms_norm": [("X", REQ), ("W", REQ), ("scale", REQ), ("shift", None), ("eps", 1e-6),
                                 ("offset", 0.0), ("casting_mode", "llama"), ("in_place", True)],
    "LigerModulatedRMSNorm.__init__": [("hidden_size", REQ), ("eps", 1e-6), ("offset", 0.0),
                                       ("casting_mode", "llama"), ("init_fn", "ones"), ("in_place", True),
                                       ("elementwise_affine", True)],
    "LigerModulatedRMSNorm.forward": [("hidden_states", REQ), ("scale", REQ), ("shift", None)],
    "LigerGroupNormFunction.forward": [("X", REQ), ("affine_scaling_weight", REQ), ("affine_shifting_bias", REQ),
                                       ("num_channels", REQ), ("num_groups", REQ), ("eps", REQ)],
    "liger_group_norm": [("X", REQ), ("affine_scaling_weight", REQ), ("affine_shifting_bias", REQ),
                         ("num_channels", REQ), ("num_groups", REQ), ("eps", REQ)],
    "LigerGroupNorm.__init__": [("num_channels", REQ), ("num_groups", REQ), ("eps", 1e-6), ("bias", False),
                                ("init_fn", "ones")],
    "LigerGroupNorm.forward": [("hidden_states", REQ)],
    "LigerFusedAddRMSNormFunction.forward": [("X", REQ), ("R", REQ), ("W", REQ), ("eps", REQ), ("offset", 0.0),
                                             ("casting_mode", "llama"), ("in_place", False)],
    "liger_fused_add_rms_norm": [("X", REQ), ("R", REQ), ("W", REQ), ("eps", REQ), ("offset", 0.0),
                                 ("casting_mode", "llama"), ("in_place", True)],
    "LigerFusedAddRMSNorm.__init__": [("hidden_size", REQ), ("eps", 1e-6), ("offset", 0.0), ("casting_mode", "llama"),
                                      ("init_fn", "ones"), ("in_place", False)],
    "LigerFusedAddRMSNorm.forward": [("hidden_states", REQ), ("residual", REQ)],
}


def resolve(name):
    obj = liger
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature(name):
    params = list(inspect.signature(resolve(name)).parameters.values())
    if name.endswith((".__init__", ".forward")) and params[0].name in ("self", "ctx"):
        params = params[1:]
    got = [(p.name, p.default) for p in params]
    assert got == SIGNATURES[name]


MODULE_PATHS = {
    "ubgen.liger.ops": ["LigerRMSNormFunction", "LigerEmbeddingFunction", "LigerAttnResFunction",
                        "LigerFusedLinearCrossEntropyFunction", "LigerCrossEntropyFunction", "LigerSiLUMulFunction",
                        "LigerGELUMulFunction", "GrpoLossFunction", "LigerFusedMoEFunction"],
    "ubgen.liger.ops.swiglu": ["LigerSiLUMulFunction"],
    "ubgen.liger.ops.geglu": ["LigerGELUMulFunction"],
    "ubgen.liger.transformers.swiglu": ["LigerSwiGLUMLP", "LigerExperts"],
    "ubgen.liger.transformers.geglu": ["LigerGEGLUMLP"],
    "ubgen.liger.ops.layer_norm": ["LigerLayerNormFunction"],
    "ubgen.liger.transformers.layer_norm": ["LigerLayerNorm"],
    "ubgen.liger.ops.dyt": ["LigerDyTFunction"],
    "ubgen.liger.transformers.dyt": ["LigerDyT"],
    "ubgen.liger.ops.relu_squared": ["LigerReLUSquaredFunction"],
    "ubgen.liger.transformers.relu_squared": ["LigerReLUSquared"],
    "ubgen.liger.ops.softmax": ["LigerSoftmaxFunction"],
    "ubgen.liger.ops.grpo_loss": ["GrpoLossFunction", "fused_selective_log_softmax"],
    "ubgen.liger.transformers.grpo_loss": ["triton_grpo_loss"],
    "ubgen.liger.transformers.softmax": ["LigerSoftmax"],
    "ubgen.liger.ops.fused_neighborhood_attention": ["LigerFusedNeighborhoodAttentionFunction"],
    "ubgen.liger.transformers.fused_neighborhood_attention": ["LigerFusedNeighborhoodAttention",
                                                              "LigerFusedNeighborhoodAttentionLayer",
                                                              "LigerFusedNeighborhoodAttentionConfig"],
    "ubgen.liger.ops.mhc": ["LigerMHCCoeffsFunction", "LigerMHCPreFunction", "LigerMHCPostResFunction"],
    "ubgen.liger.transformers.mhc": ["LigerMHC"],
    "ubgen.liger.ops.tvd": ["LigerTVDLossFunction"],
    "ubgen.liger.transformers.tvd": ["LigerTVDLoss"],
    "ubgen.liger.ops.kl_div": ["LigerKLDivLossFunction"],
    "ubgen.liger.transformers.kl_div": ["LigerKLDIVLoss"],
    "ubgen.liger.ops.jsd": ["LigerJSDFunction"],
    "ubgen.liger.transformers.jsd": ["LigerJSD", "LigerJSDFunction"],
    "ubgen.liger.ops.fused_linear_jsd": ["LigerFusedLinearJSDFunction"],
    "ubgen.liger.transformers.fused_linear_jsd": ["LigerFusedLinearJSD"],
    "ubgen.liger.ops.fused_moe": ["LigerFusedMoEFunction"],
    "ubgen.liger.ops.poly_norm": ["LigerPolyNormFunction"],
    "ubgen.liger.transformers.poly_norm": ["LigerPolyNorm"],
    "ubgen.liger.ops.sparsemax": ["LigerSparsemaxFunction"],
    "ubgen.liger.transformers.sparsemax": ["LigerSparsemax"],
    "ubgen.liger.ops.qwen2vl_mrope": ["LigerQwen2VLMRopeFunction"],
    "ubgen.liger.transformers.qwen2vl_mrope": ["liger_multimodal_rotary_pos_emb"],
    "ubgen.liger.ops.llama4_rope": ["LigerLlama4RopeFunction"],
    "ubgen.liger.transformers.llama4_rope": ["liger_llama4_text_rotary_pos_emb", "liger_llama4_vision_rotary_pos_emb"],
    "ubgen.liger.ops.modulated_rms_norm": ["LigerModulatedRMSNormFunction"],
    "ubgen.liger.transformers.modulated_rms_norm": ["LigerModulatedRMSNorm"],
    "ubgen.liger.ops.group_norm": ["LigerGroupNormFunction"],
    "ubgen.liger.transformers.group_norm": ["LigerGroupNorm"],
    "ubgen.liger.ops.fused_add_rms_norm": ["LigerFusedAddRMSNormFunction"],
    "ubgen.liger.transformers.fused_add_rms_norm": ["LigerFusedAddRMSNorm"],
    "ubgen.liger.ops.cross_entropy": ["LigerCrossEntropyFunction", "liger_cross_entropy_kernel"],
    "ubgen.liger.ops.utils": ["is_hip"],
    "ubgen.liger.transformers": ["LigerRMSNorm", "LigerEmbedding", "LigerFusedLinearCrossEntropyLoss",
                                 "LigerCrossEntropyLoss", "LigerSwiGLUMLP", "LigerGEGLUMLP", "LigerDyT",
                                 "LigerReLUSquared", "LigerSoftmax", "LigerMHC", "LigerTVDLoss", "LigerKLDIVLoss", "LigerJSD",
                                 "LigerFusedLinearJSD", "LigerPolyNorm", "LigerSparsemax",
                                 "liger_llama4_text_rotary_pos_emb", "liger_llama4_vision_rotary_pos_emb",
                                 "LigerModulatedRMSNorm", "LigerGroupNorm", "LigerFusedAddRMSNorm"],
    "ubgen.liger.transformers.functional": ["liger_rms_norm", "liger_attn_res", "liger_fused_linear_cross_entropy",
                                            "liger_cross_entropy", "CrossEntropyOutput", "liger_swiglu",
                                            "liger_geglu", "liger_layer_norm", "liger_dyt",
                                            "liger_relu_squared", "liger_softmax", "liger_fused_neighborhood_attention",
                                            "liger_mhc_coeffs", "liger_mhc_pre", "liger_mhc_post_res", "liger_mhc_apply",
                                            "liger_mhc_forward",
                                            "liger_tvd", "liger_kl_div",
                                            "liger_jsd", "liger_fused_linear_jsd", "liger_poly_norm",
                                            "liger_sparsemax", "liger_qwen2vl_mrope", "liger_modulated_rms_norm",
                                            "liger_group_norm", "liger_fused_add_rms_norm"],
    "ubgen.liger.transformers.rms_norm": ["LigerRMSNorm"],
    "ubgen.liger.transformers.fused_linear_cross_entropy": ["LigerFusedLinearCrossEntropyLoss"],
    "ubgen.liger.transformers.cross_entropy": ["LigerCrossEntropyLoss"],
    "ubgen.liger.transformers.experimental.embedding": ["LigerEmbedding"],
    "ubgen.liger.utils": ["infer_device", "infer_comm_backend"],
}


@pytest.mark.parametrize("module", sorted(MODULE_PATHS))
def test_import_paths(module):
    """Liger's module paths with liger_kernel replaced by ubgen.liger; each
    name the same object as at the package's top level where it is there"""
    mod = importlib.import_module(module)
    for name in MODULE_PATHS[module]:
        obj = getattr(mod, name)
        if hasattr(liger, name):
            assert obj is getattr(liger, name), name


def test_top_level_names():
    for name in ["LigerRMSNorm", "LigerRMSNormFunction", "liger_rms_norm", "LigerEmbedding", "LigerAttnResFunction",
                 "liger_attn_res", "LigerFusedLinearCrossEntropyFunction", "liger_fused_linear_cross_entropy",
                 "LigerFusedLinearCrossEntropyLoss", "CrossEntropyOutput", "LigerCrossEntropyFunction",
                 "liger_cross_entropy", "LigerCrossEntropyLoss"]:
        assert name in liger.__all__ and hasattr(liger, name), name
    for fn in ("LigerRMSNormFunction", "LigerAttnResFunction", "LigerFusedLinearCrossEntropyFunction",
               "LigerCrossEntropyFunction", "LigerEmbeddingFunction"):
        assert issubclass(getattr(liger, fn), torch.autograd.Function)
    for mod in ("LigerRMSNorm", "LigerEmbedding", "LigerFusedLinearCrossEntropyLoss", "LigerCrossEntropyLoss"):
        assert issubclass(getattr(liger, mod), torch.nn.Module)
    assert liger.utils.infer_device() == "cpu"
    assert liger.ops.utils.is_hip() is False


def test_cross_entropy_output_dataclass():
    fields = [(f.name, f.default) for f in dataclasses.fields(liger.CrossEntropyOutput)]
    assert fields == [("loss", dataclasses.MISSING), ("z_loss", None), ("token_accuracy", None),
                      ("predicted_tokens", None)]
    out = liger.CrossEntropyOutput(loss=torch.tensor(1.0))
    assert out.z_loss is None and out.token_accuracy is None and out.predicted_tokens is None


@pytest.mark.parametrize("flags", [dict(), dict(return_z_loss=True), dict(return_token_accuracy=True),
                                   dict(return_predicted_tokens=True)], ids=["none", "z", "acc", "pred"])
def test_return_types(flags):
    """the functionals and the loss modules return the loss tensor when no
    return_* flag is set, else a CrossEntropyOutput; the Functions always
    return a 4-tuple with None for what was not asked"""
    x = torch.randn(6, 5, requires_grad=True)
    w = torch.randn(7, 5, requires_grad=True)
    logits = torch.randn(6, 7, requires_grad=True)
    t = torch.tensor([1, 2, 3, -100, 5, 6])
    want_struct = bool(flags)
    results = [
        liger.liger_fused_linear_cross_entropy(x, w, t, **flags),
        liger.LigerFusedLinearCrossEntropyLoss(**flags)(w, x, t),
        liger.liger_cross_entropy(logits, t, **flags),
        liger.LigerCrossEntropyLoss(**flags)(logits, t),
    ]
    for r in results:
        if want_struct:
            assert isinstance(r, liger.CrossEntropyOutput)
            assert (r.z_loss is not None) == flags.get("return_z_loss", False)
            assert (r.token_accuracy is not None) == flags.get("return_token_accuracy", False)
            assert (r.predicted_tokens is not None) == flags.get("return_predicted_tokens", False)
            assert r.loss.requires_grad
        else:
            assert isinstance(r, torch.Tensor) and r.shape == () and r.requires_grad
    z, acc, pred = (flags.get(k, False) for k in ("return_z_loss", "return_token_accuracy", "return_predicted_tokens"))
    tup = liger.LigerFusedLinearCrossEntropyFunction.apply(x, w, t, None, None, -100, 0.0, 0.0, "mean", None, z, None,
                                                           False, acc, pred)
    assert isinstance(tup, tuple) and len(tup) == 4
    assert [v is not None for v in tup] == [True, z, acc, pred]
    tup = liger.LigerCrossEntropyFunction.apply(logits, t, None, -100, 0.0, 0.0, "mean", None, z, acc, pred)
    assert isinstance(tup, tuple) and len(tup) == 4
    assert [v is not None for v in tup] == [True, z, acc, pred]


def test_loss_modules_assert_their_arguments_as_liger():
    with pytest.raises(AssertionError):
        liger.LigerCrossEntropyLoss(label_smoothing=1.5)
    with pytest.raises(AssertionError):
        liger.LigerCrossEntropyLoss(reduction="avg")
    with pytest.raises(AssertionError):
        liger.LigerFusedLinearCrossEntropyLoss(softcap=0.0)
    with pytest.raises(AssertionError):
        liger.LigerRMSNorm(8, init_fn="normal")

"""Liger-Kernel's public names, signatures, defaults and return values, on
the CPU through ubgen: code written for Liger runs by changing its import,

    from liger_kernel.transformers import LigerRMSNorm   ->   from ubgen.liger import LigerRMSNorm

and the submodules mirror Liger's paths (ubgen.liger.ops,
ubgen.liger.transformers.functional, .rms_norm, .fused_linear_cross_entropy,
.cross_entropy, .experimental.embedding, ubgen.liger.utils), so that
replacing `liger_kernel` with `ubgen.liger` in an import line is enough.
"""
from .ops import (LigerAttnResFunction, LigerCrossEntropyFunction, LigerDyTFunction, LigerEmbeddingFunction,
                  LigerFusedAddRMSNormFunction, LigerFusedLinearCrossEntropyFunction, LigerGELUMulFunction,
                  LigerGroupNormFunction, LigerLayerNormFunction, LigerLlama4RopeFunction,
                  LigerModulatedRMSNormFunction, LigerPolyNormFunction, LigerQwen2VLMRopeFunction,
                  LigerRMSNormFunction, LigerReLUSquaredFunction, LigerRopeFunction, LigerSiLUMulFunction,
                  LigerSoftmaxFunction, LigerMHCCoeffsFunction, LigerMHCPreFunction, LigerMHCPostResFunction,
                  LigerKLDivLossFunction, LigerSparsemaxFunction, LigerTVDLossFunction)
from .transformers.functional import (CrossEntropyOutput, liger_attn_res, liger_cross_entropy, liger_dyt,
                                      liger_fused_add_rms_norm, liger_fused_linear_cross_entropy, liger_geglu,
                                      liger_group_norm, liger_layer_norm, liger_modulated_rms_norm, liger_poly_norm,
                                      liger_qwen2vl_mrope, liger_relu_squared, liger_rms_norm, liger_rope,
                                      liger_softmax, liger_kl_div, liger_sparsemax, liger_swiglu, liger_tvd)
from .transformers.cross_entropy import LigerCrossEntropyLoss
from .transformers.dyt import LigerDyT
from .transformers.experimental.embedding import LigerEmbedding
from .transformers.fused_add_rms_norm import LigerFusedAddRMSNorm
from .transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss
from .transformers.geglu import LigerGEGLUMLP
from .transformers.group_norm import LigerGroupNorm
from .transformers.layer_norm import LigerLayerNorm
from .transformers.llama4_rope import liger_llama4_text_rotary_pos_emb, liger_llama4_vision_rotary_pos_emb
from .transformers.modulated_rms_norm import LigerModulatedRMSNorm
from .transformers.poly_norm import LigerPolyNorm
from .transformers.qwen2vl_mrope import liger_multimodal_rotary_pos_emb
from .transformers.relu_squared import LigerReLUSquared
from .transformers.rms_norm import LigerRMSNorm
from .transformers.rope import liger_rotary_pos_emb
from .transformers.softmax import LigerSoftmax
from .ops import LigerFusedNeighborhoodAttentionFunction
from .transformers.functional import liger_fused_neighborhood_attention
from .transformers.mhc import LigerMHC
from .transformers.functional import liger_mhc_coeffs, liger_mhc_pre, liger_mhc_post_res
from .transformers.tvd import LigerTVDLoss
from .transformers.kl_div import LigerKLDIVLoss
from .transformers.jsd import LigerJSD, LigerJSDFunction
from .transformers.functional import liger_jsd
from .transformers.fused_linear_jsd import LigerFusedLinearJSD, LigerFusedLinearJSDFunction
from .transformers.functional import liger_fused_linear_jsd
from .ops.fused_moe import LigerFusedMoEFunction
from .transformers.swiglu import LigerExperts
from .transformers.sparsemax import LigerSparsemax
from .transformers.swiglu import LigerSwiGLUMLP


def __getattr__(name):
    """the patching functions and AutoLigerKernelForCausalLM, from
    ubgen.liger.transformers (they import transformers on first use)"""
    from . import transformers as _t
    if name.startswith("apply_liger_kernel_to_") or name == "AutoLigerKernelForCausalLM":
        return getattr(_t, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = [
    "LigerAttnResFunction", "LigerCrossEntropyFunction", "LigerEmbeddingFunction",
    "LigerFusedLinearCrossEntropyFunction", "LigerRMSNormFunction", "LigerCrossEntropyLoss", "LigerEmbedding",
    "CrossEntropyOutput", "liger_attn_res", "liger_cross_entropy", "liger_fused_linear_cross_entropy",
    "liger_rms_norm", "LigerFusedLinearCrossEntropyLoss", "LigerRMSNorm",
    "LigerSiLUMulFunction", "LigerGELUMulFunction", "LigerSwiGLUMLP", "LigerGEGLUMLP", "liger_swiglu", "liger_geglu",
    "LigerLayerNormFunction", "LigerLayerNorm", "liger_layer_norm",
    "LigerRopeFunction", "liger_rope", "liger_rotary_pos_emb",
    "LigerDyTFunction", "LigerDyT", "liger_dyt",
    "LigerReLUSquaredFunction", "LigerReLUSquared", "liger_relu_squared",
    "LigerSoftmaxFunction", "LigerSoftmax", "liger_softmax",
    "LigerFusedNeighborhoodAttentionFunction", "liger_fused_neighborhood_attention",
    "LigerMHCCoeffsFunction", "LigerMHCPreFunction", "LigerMHCPostResFunction", "LigerMHC", "liger_mhc_coeffs",
    "liger_mhc_pre", "liger_mhc_post_res",
    "LigerTVDLossFunction", "LigerTVDLoss", "liger_tvd",
    "LigerKLDivLossFunction", "LigerKLDIVLoss", "liger_kl_div",
    "LigerJSDFunction", "LigerJSD", "liger_jsd",
    "LigerFusedLinearJSDFunction", "LigerFusedLinearJSD", "liger_fused_linear_jsd",
    "LigerFusedMoEFunction", "LigerExperts",
    "LigerPolyNormFunction", "LigerPolyNorm", "liger_poly_norm",
    "LigerSparsemaxFunction", "LigerSparsemax", "liger_sparsemax",
    "LigerQwen2VLMRopeFunction", "liger_qwen2vl_mrope", "liger_multimodal_rotary_pos_emb",
    "LigerLlama4RopeFunction", "liger_llama4_text_rotary_pos_emb", "liger_llama4_vision_rotary_pos_emb",
    "LigerModulatedRMSNormFunction", "LigerModulatedRMSNorm", "liger_modulated_rms_norm",
    "LigerGroupNormFunction", "LigerGroupNorm", "liger_group_norm",
    "LigerFusedAddRMSNormFunction", "LigerFusedAddRMSNorm", "liger_fused_add_rms_norm",
]

"""ubgen's kernels as torch.autograd Functions and nn.Modules, for CPU
tensors of torch.float32, float16 and bfloat16.

Every op runs on the process context (ubgen.configure sets it). Inputs
are checked before anything is written: a wrong dtype is a TypeError, a
wrong device, shape, index or value a ValueError with the library's
message. Non-contiguous inputs are made contiguous first.
"""
from .attn_res import AttnRes, AttnResFunction, attn_res
from .dyt import DyT, DyTFunction, dyt
from .cross_entropy import (CrossEntropyFunction, CrossEntropyLoss, FusedLinearCrossEntropyFunction,
                            FusedLinearCrossEntropyLoss, cross_entropy, fused_linear_cross_entropy)
from .embedding import Embedding, EmbeddingFunction, embedding
from .glu import GEGLUMLP, GELUMulFunction, SiLUMulFunction, SwiGLUMLP, geglu, swiglu
from .group_norm import GroupNorm, GroupNormFunction, group_norm
from .layer_norm import LayerNorm, LayerNormFunction, layer_norm
from .modulated_rms_norm import ModulatedRMSNorm, ModulatedRMSNormFunction, modulated_rms_norm
from .relu_squared import ReLUSquared, ReLUSquaredFunction, relu_squared
from .rms_norm import RMSNorm, RMSNormFunction, rms_norm
from .rope import MRopeFunction, RopeFunction, mrope, rope
from .llama4_rope import Llama4RopeFunction, llama4_rope
from .softmax import Softmax, SoftmaxFunction, softmax
from .neighborhood_attention import (NeighborhoodAttention, NeighborhoodAttentionFunction, NeighborhoodAttentionLayer,
                                     neighborhood_attention)
from .mhc import MHC, MHCCoeffsFunction, MHCPostResFunction, MHCPreFunction, mhc_coeffs, mhc_post_res, mhc_pre
from .grpo_loss import GrpoLossFunction, fused_selective_log_softmax, grpo_loss
from .tvd import TVDLoss, TVDLossFunction, tvd
from .kl_div import KLDivLoss, KLDivLossFunction, kl_div
from .jsd import JSD, JSDFunction, jsd
from .fused_linear_jsd import FusedLinearJSD, FusedLinearJSDFunction, fused_linear_jsd
from .fused_moe import FusedMoEFunction, fused_moe
from .poly_norm import PolyNorm, PolyNormFunction, poly_norm
from .sparsemax import Sparsemax, SparsemaxFunction, sparsemax
from .fused_add_rms_norm import FusedAddRMSNorm, FusedAddRMSNormFunction, fused_add_rms_norm
from ._util import empty_cache, pool_bytes, set_pool_limit

__all__ = [
    "AttnRes", "AttnResFunction", "attn_res",
    "CrossEntropyFunction", "CrossEntropyLoss", "cross_entropy",
    "FusedLinearCrossEntropyFunction", "FusedLinearCrossEntropyLoss", "fused_linear_cross_entropy",
    "DyT", "DyTFunction", "dyt",
    "Embedding", "EmbeddingFunction", "embedding",
    "SiLUMulFunction", "SwiGLUMLP", "swiglu", "GELUMulFunction", "GEGLUMLP", "geglu",
    "LayerNorm", "LayerNormFunction", "layer_norm",
    "ModulatedRMSNorm", "ModulatedRMSNormFunction", "modulated_rms_norm",
    "ReLUSquared", "ReLUSquaredFunction", "relu_squared",
    "RMSNorm", "RMSNormFunction", "rms_norm",
    "RopeFunction", "rope", "MRopeFunction", "mrope", "Llama4RopeFunction", "llama4_rope",
    "Softmax", "SoftmaxFunction", "softmax",
    "NeighborhoodAttention", "NeighborhoodAttentionFunction", "NeighborhoodAttentionLayer", "neighborhood_attention",
    "MHC", "MHCCoeffsFunction", "MHCPreFunction", "MHCPostResFunction", "mhc_coeffs", "mhc_pre", "mhc_post_res",
    "GrpoLossFunction", "grpo_loss", "fused_selective_log_softmax",
    "TVDLoss", "TVDLossFunction", "tvd",
    "KLDivLoss", "KLDivLossFunction", "kl_div",
    "JSD", "JSDFunction", "jsd",
    "FusedLinearJSD", "FusedLinearJSDFunction", "fused_linear_jsd",
    "FusedMoEFunction", "fused_moe",
    "PolyNorm", "PolyNormFunction", "poly_norm",
    "Sparsemax", "SparsemaxFunction", "sparsemax",
    "GroupNorm", "GroupNormFunction", "group_norm",
    "FusedAddRMSNorm", "FusedAddRMSNormFunction", "fused_add_rms_norm",
    "empty_cache", "pool_bytes", "set_pool_limit",
]

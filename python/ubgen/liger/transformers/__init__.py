"""liger_kernel.transformers: the Modules, and (imported on first use, since
they need transformers) the apply_liger_kernel_to_* functions and
AutoLigerKernelForCausalLM."""
import importlib

from .cross_entropy import LigerCrossEntropyLoss
from .dyt import LigerDyT
from .experimental.embedding import LigerEmbedding
from .fused_add_rms_norm import LigerFusedAddRMSNorm
from .fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss
from .geglu import LigerGEGLUMLP, LigerGEGLUMLPForGemma4
from .group_norm import LigerGroupNorm
from .layer_norm import LigerLayerNorm
from .llama4_rope import liger_llama4_text_rotary_pos_emb, liger_llama4_vision_rotary_pos_emb
from .modulated_rms_norm import LigerModulatedRMSNorm
from .poly_norm import LigerPolyNorm
from .relu_squared import LigerReLUSquared
from .rms_norm import (LigerRMSNorm, LigerRMSNormForGemma, LigerRMSNormForGemma2, LigerRMSNormForGemma3,
                       LigerRMSNormForGlm4, LigerRMSNormForOlmo2)
from .rope import liger_rotary_pos_emb
from .softmax import LigerSoftmax
from .mhc import LigerMHC
from .tvd import LigerTVDLoss
from .kl_div import LigerKLDIVLoss
from .jsd import LigerJSD
from .fused_linear_jsd import LigerFusedLinearJSD
from .sparsemax import LigerSparsemax
from .swiglu import (LigerBlockSparseTop2MLP, LigerExperts, LigerFalconH1SwiGLUMLP, LigerPhi3SwiGLUMLP,
                     LigerQwen3MoeSwiGLUMLP, LigerSwiGLUMLP)

_PATCHING = ["MODEL_TYPE_TO_APPLY_LIGER_FN", "_apply_liger_kernel", "_apply_liger_kernel_to_instance"]
_LAZY = {"AutoLigerKernelForCausalLM": "auto_model"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module("." + _LAZY[name], __name__), name)
    if name.startswith("apply_liger_kernel_to_") or name in _PATCHING:
        return getattr(importlib.import_module(".monkey_patch", __name__), name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = ["LigerBlockSparseTop2MLP", "LigerCrossEntropyLoss", "LigerDyT", "LigerEmbedding", "LigerExperts",
           "LigerFalconH1SwiGLUMLP", "LigerFusedAddRMSNorm", "LigerFusedLinearCrossEntropyLoss", "LigerGEGLUMLP",
           "LigerGEGLUMLPForGemma4", "LigerGroupNorm", "LigerLayerNorm", "LigerModulatedRMSNorm",
           "LigerPhi3SwiGLUMLP", "LigerPolyNorm", "LigerQwen3MoeSwiGLUMLP", "LigerRMSNorm", "LigerRMSNormForGemma",
           "LigerRMSNormForGemma2", "LigerRMSNormForGemma3", "LigerRMSNormForGlm4", "LigerRMSNormForOlmo2",
           "LigerReLUSquared", "LigerSoftmax", "LigerMHC", "LigerTVDLoss", "LigerKLDIVLoss", "LigerJSD", "LigerFusedLinearJSD", "LigerSparsemax",
           "LigerSwiGLUMLP", "liger_llama4_text_rotary_pos_emb", "liger_llama4_vision_rotary_pos_emb",
           "liger_rotary_pos_emb", "AutoLigerKernelForCausalLM"]

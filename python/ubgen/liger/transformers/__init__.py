"""liger_kernel.transformers: the Modules, and (imported on first use, since
they need transformers) the apply_liger_kernel_to_* functions and
AutoLigerKernelForCausalLM."""
import importlib

from .cross_entropy import LigerCrossEntropyLoss
from .dyt import LigerDyT
from .experimental.embedding import LigerEmbedding
from .fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss
from .geglu import LigerGEGLUMLP, LigerGEGLUMLPForGemma4
from .layer_norm import LigerLayerNorm
from .rms_norm import (LigerRMSNorm, LigerRMSNormForGemma, LigerRMSNormForGemma2, LigerRMSNormForGemma3,
                       LigerRMSNormForGlm4, LigerRMSNormForOlmo2)
from .relu_squared import LigerReLUSquared
from .rope import liger_rotary_pos_emb
from .softmax import LigerSoftmax
from .fused_add_rms_norm import LigerFusedAddRMSNorm
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


__all__ = ["LigerCrossEntropyLoss", "LigerDyT", "LigerEmbedding", "LigerFusedLinearCrossEntropyLoss", "LigerGEGLUMLP",
           "LigerGEGLUMLPForGemma4",
           "LigerLayerNorm", "LigerReLUSquared", "LigerRMSNorm", "LigerSoftmax", "LigerRMSNormForGemma", "LigerRMSNormForGemma2", "LigerRMSNormForGemma3",
           "LigerRMSNormForGlm4", "LigerRMSNormForOlmo2", "LigerSwiGLUMLP", "LigerBlockSparseTop2MLP", "LigerExperts",
           "LigerFalconH1SwiGLUMLP", "LigerPhi3SwiGLUMLP", "LigerQwen3MoeSwiGLUMLP", "AutoLigerKernelForCausalLM",
           "liger_rotary_pos_emb", "LigerFusedAddRMSNorm"]

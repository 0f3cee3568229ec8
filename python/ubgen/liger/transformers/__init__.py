"""liger_kernel.transformers: the Modules."""
from .cross_entropy import LigerCrossEntropyLoss
from .experimental.embedding import LigerEmbedding
from .fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss
from .geglu import LigerGEGLUMLP
from .layer_norm import LigerLayerNorm
from .rms_norm import LigerRMSNorm
from .swiglu import LigerSwiGLUMLP

__all__ = ["LigerCrossEntropyLoss", "LigerEmbedding", "LigerFusedLinearCrossEntropyLoss", "LigerGEGLUMLP",
           "LigerLayerNorm", "LigerRMSNorm", "LigerSwiGLUMLP"]

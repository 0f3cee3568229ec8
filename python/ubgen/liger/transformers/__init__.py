"""liger_kernel.transformers: the Modules."""
from .cross_entropy import LigerCrossEntropyLoss
from .experimental.embedding import LigerEmbedding
from .fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss
from .rms_norm import LigerRMSNorm

__all__ = ["LigerCrossEntropyLoss", "LigerEmbedding", "LigerFusedLinearCrossEntropyLoss", "LigerRMSNorm"]

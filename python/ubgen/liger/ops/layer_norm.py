"""liger_kernel.ops.layer_norm"""
from ...torch.layer_norm import LayerNormFunction as LigerLayerNormFunction

__all__ = ["LigerLayerNormFunction"]

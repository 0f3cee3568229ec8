"""liger_kernel.ops.poly_norm"""
from ...torch.poly_norm import PolyNormFunction as LigerPolyNormFunction

__all__ = ["LigerPolyNormFunction"]

"""liger_kernel.ops.geglu"""
from ...torch.glu import GELUMulFunction as LigerGELUMulFunction

__all__ = ["LigerGELUMulFunction"]

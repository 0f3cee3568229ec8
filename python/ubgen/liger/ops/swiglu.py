"""liger_kernel.ops.swiglu"""
from ...torch.glu import SiLUMulFunction as LigerSiLUMulFunction

__all__ = ["LigerSiLUMulFunction"]

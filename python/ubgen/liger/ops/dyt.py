"""liger_kernel.ops.dyt"""
from ...torch.dyt import DyTFunction as LigerDyTFunction

__all__ = ["LigerDyTFunction"]

"""liger_kernel.ops.tvd"""
from ...torch.tvd import TVDLossFunction as LigerTVDLossFunction

__all__ = ["LigerTVDLossFunction"]

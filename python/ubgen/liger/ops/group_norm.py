"""liger_kernel.ops.group_norm"""
from ...torch.group_norm import GroupNormFunction as LigerGroupNormFunction

__all__ = ["LigerGroupNormFunction"]

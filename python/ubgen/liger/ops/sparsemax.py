"""liger_kernel.ops.sparsemax"""
from ...torch.sparsemax import SparsemaxFunction as LigerSparsemaxFunction

__all__ = ["LigerSparsemaxFunction"]

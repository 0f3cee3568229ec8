"""liger_kernel.ops.softmax"""
from ...torch.softmax import SoftmaxFunction as LigerSoftmaxFunction

__all__ = ["LigerSoftmaxFunction"]

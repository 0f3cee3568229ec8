"""liger_kernel.ops.jsd"""
from ...torch.jsd import JSDFunction as LigerJSDFunction

__all__ = ["LigerJSDFunction"]

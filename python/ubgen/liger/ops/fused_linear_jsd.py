"""liger_kernel.ops.fused_linear_jsd"""
from ...torch.fused_linear_jsd import FusedLinearJSDFunction as LigerFusedLinearJSDFunction

__all__ = ["LigerFusedLinearJSDFunction"]

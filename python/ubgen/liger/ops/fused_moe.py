"""liger_kernel.ops.fused_moe"""
from ...torch.fused_moe import FusedMoEFunction as LigerFusedMoEFunction

__all__ = ["LigerFusedMoEFunction"]

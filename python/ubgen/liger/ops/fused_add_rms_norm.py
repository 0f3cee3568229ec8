"""liger_kernel.ops.fused_add_rms_norm"""
from ...torch.fused_add_rms_norm import FusedAddRMSNormFunction as LigerFusedAddRMSNormFunction

__all__ = ["LigerFusedAddRMSNormFunction"]

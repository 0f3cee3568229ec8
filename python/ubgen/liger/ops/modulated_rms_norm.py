"""liger_kernel.ops.modulated_rms_norm"""
from ...torch.modulated_rms_norm import ModulatedRMSNormFunction as LigerModulatedRMSNormFunction

__all__ = ["LigerModulatedRMSNormFunction"]

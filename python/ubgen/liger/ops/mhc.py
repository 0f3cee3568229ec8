"""liger_kernel.ops.mhc"""
from ...torch.mhc import MHCCoeffsFunction as LigerMHCCoeffsFunction
from ...torch.mhc import MHCPostResFunction as LigerMHCPostResFunction
from ...torch.mhc import MHCPreFunction as LigerMHCPreFunction

__all__ = ["LigerMHCCoeffsFunction", "LigerMHCPreFunction", "LigerMHCPostResFunction"]

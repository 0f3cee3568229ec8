"""liger_kernel.ops.kl_div"""
from ...torch.kl_div import KLDivLossFunction as LigerKLDivLossFunction

__all__ = ["LigerKLDivLossFunction"]

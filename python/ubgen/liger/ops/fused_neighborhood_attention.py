"""liger_kernel.ops.fused_neighborhood_attention"""
from ...torch.neighborhood_attention import NeighborhoodAttentionFunction as LigerFusedNeighborhoodAttentionFunction

__all__ = ["LigerFusedNeighborhoodAttentionFunction"]

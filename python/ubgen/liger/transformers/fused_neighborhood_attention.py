"""liger_kernel.transformers.fused_neighborhood_attention"""
from typing import Optional

from ...torch.neighborhood_attention import NeighborhoodAttention, NeighborhoodAttentionLayer


class LigerFusedNeighborhoodAttention(NeighborhoodAttention):
    """ubgen.torch's NeighborhoodAttention under Liger's name and signature"""

    def __init__(self, hidden_size: int, num_heads: int, kernel_size: int = 7, dilation: int = 1, bias: bool = True,
                 dropout: float = 0.0, scale: Optional[float] = None):
        super().__init__(hidden_size, num_heads, kernel_size, dilation, bias, dropout, scale)


class LigerFusedNeighborhoodAttentionLayer(NeighborhoodAttentionLayer):
    """ubgen.torch's NeighborhoodAttentionLayer under Liger's name and signature"""

    attention_class = LigerFusedNeighborhoodAttention

    def __init__(self, hidden_size: int, num_heads: int, kernel_size: int = 7, dilation: int = 1, bias: bool = True,
                 dropout: float = 0.0, layer_norm_eps: float = 1e-5, scale: Optional[float] = None):
        super().__init__(hidden_size, num_heads, kernel_size, dilation, bias, dropout, layer_norm_eps, scale)


class LigerFusedNeighborhoodAttentionConfig:
    """Liger's configuration record of the layer's arguments"""

    def __init__(self, hidden_size: int = 768, num_heads: int = 12, kernel_size: int = 7, dilation: int = 1,
                 bias: bool = True, dropout: float = 0.0, layer_norm_eps: float = 1e-5,
                 scale: Optional[float] = None):
        self.hidden_size, self.num_heads = hidden_size, num_heads
        self.kernel_size, self.dilation = kernel_size, dilation
        self.bias, self.dropout, self.layer_norm_eps, self.scale = bias, dropout, layer_norm_eps, scale

    def to_dict(self):
        return {name: getattr(self, name) for name in ("hidden_size", "num_heads", "kernel_size", "dilation", "bias",
                                                       "dropout", "layer_norm_eps", "scale")}

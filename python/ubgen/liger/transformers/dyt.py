"""liger_kernel.transformers.dyt"""
from ...torch.dyt import DyT


class LigerDyT(DyT):
    """ubgen.torch's DyT under Liger's name and signature"""

    def __init__(self, hidden_size, beta=True, init_alpha=0.5):
        super().__init__(hidden_size, beta, init_alpha)

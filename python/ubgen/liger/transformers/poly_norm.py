"""liger_kernel.transformers.poly_norm"""
from ...torch.poly_norm import PolyNorm


class LigerPolyNorm(PolyNorm):
    """ubgen.torch's PolyNorm under Liger's name and signature"""

    def __init__(self, eps=1e-6, in_place=True):
        super().__init__(eps, in_place)

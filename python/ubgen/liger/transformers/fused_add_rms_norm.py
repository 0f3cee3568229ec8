"""liger_kernel.transformers.fused_add_rms_norm"""
from ...torch.fused_add_rms_norm import FusedAddRMSNorm


class LigerFusedAddRMSNorm(FusedAddRMSNorm):
    """ubgen.torch's FusedAddRMSNorm under Liger's name and signature"""

    def __init__(self, hidden_size, eps=1e-6, offset=0.0, casting_mode="llama", init_fn="ones", in_place=False):
        super().__init__(hidden_size, eps, offset, casting_mode, init_fn, in_place)

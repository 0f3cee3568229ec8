"""liger_kernel.transformers.modulated_rms_norm"""
from ...torch.modulated_rms_norm import ModulatedRMSNorm


class LigerModulatedRMSNorm(ModulatedRMSNorm):
    """ubgen.torch's ModulatedRMSNorm under Liger's name and signature"""

    def __init__(self, hidden_size, eps=1e-6, offset=0.0, casting_mode="llama", init_fn="ones", in_place=True,
                 elementwise_affine=True):
        super().__init__(hidden_size, eps, offset, casting_mode, init_fn, in_place, elementwise_affine)

"""liger_kernel.transformers.mhc"""
import torch

from ...torch.mhc import MHC


class LigerMHC(MHC):
    """ubgen.torch's MHC under Liger's name and signature"""

    def __init__(self, layer, *, hc, c, tmax=20, rms_eps=1e-6, pre_eps=0.0, sinkhorn_eps=1e-6, post_mult=2.0,
                 phi_dtype=torch.float16, allow_fp32=False):
        super().__init__(layer, hc=hc, c=c, tmax=tmax, rms_eps=rms_eps, pre_eps=pre_eps, sinkhorn_eps=sinkhorn_eps,
                         post_mult=post_mult, phi_dtype=phi_dtype, allow_fp32=allow_fp32)

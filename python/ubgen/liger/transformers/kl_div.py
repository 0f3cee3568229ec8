"""liger_kernel.transformers.kl_div"""
from ...torch.kl_div import KLDivLoss


class LigerKLDIVLoss(KLDivLoss):
    """LigerKLDIVLoss(eps=1e-10, *args, **kwargs): torch's nn.KLDivLoss
    arguments (default reduction "mean"), ubgen.torch's KLDivLoss under
    Liger's name"""

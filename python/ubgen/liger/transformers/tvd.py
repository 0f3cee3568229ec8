"""liger_kernel.transformers.tvd"""
from ...torch.tvd import TVDLoss


class LigerTVDLoss(TVDLoss):
    """LigerTVDLoss(reduction="batchmean", ignore_index=-100): ubgen.torch's TVDLoss under Liger's name"""

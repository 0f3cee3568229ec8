"""liger_kernel.transformers.jsd (which also gives LigerJSDFunction)"""
from ..ops.jsd import LigerJSDFunction
from ...torch.jsd import JSD


class LigerJSD(JSD):
    """LigerJSD(beta=0.5, ignore_index=-100), forward(log_q, log_p,
    shift_labels=None): the generalized JSD (ubgen.torch's JSD under Liger's
    name)"""


__all__ = ["LigerJSD", "LigerJSDFunction"]

"""liger_kernel.transformers.sparsemax"""
from ...torch.sparsemax import Sparsemax


class LigerSparsemax(Sparsemax):
    """LigerSparsemax(dim=-1): sparsemax along dim (ubgen.torch's Sparsemax under Liger's name)"""

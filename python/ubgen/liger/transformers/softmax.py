"""liger_kernel.transformers.softmax"""
from ...torch.softmax import Softmax


class LigerSoftmax(Softmax):
    """LigerSoftmax(): softmax over the last dimension (ubgen.torch's Softmax under Liger's name)"""

"""liger_kernel.ops: the autograd Functions (ubgen.torch's, under Liger's names)."""
from ...torch.attn_res import AttnResFunction as LigerAttnResFunction
from ...torch.cross_entropy import CrossEntropyFunction as LigerCrossEntropyFunction
from ...torch.cross_entropy import FusedLinearCrossEntropyFunction as LigerFusedLinearCrossEntropyFunction
from ...torch.dyt import DyTFunction as LigerDyTFunction
from ...torch.embedding import EmbeddingFunction as LigerEmbeddingFunction
from ...torch.glu import GELUMulFunction as LigerGELUMulFunction
from ...torch.glu import SiLUMulFunction as LigerSiLUMulFunction
from ...torch.layer_norm import LayerNormFunction as LigerLayerNormFunction
from ...torch.rms_norm import RMSNormFunction as LigerRMSNormFunction
from .relu_squared import LigerReLUSquaredFunction
from .softmax import LigerSoftmaxFunction
from .fused_add_rms_norm import LigerFusedAddRMSNormFunction
from ...torch.rope import RopeFunction as LigerRopeFunction

__all__ = ["LigerAttnResFunction", "LigerCrossEntropyFunction", "LigerFusedLinearCrossEntropyFunction",
           "LigerDyTFunction", "LigerEmbeddingFunction", "LigerGELUMulFunction", "LigerLayerNormFunction", "LigerReLUSquaredFunction", "LigerRMSNormFunction",
           "LigerRopeFunction", "LigerSiLUMulFunction", "LigerSoftmaxFunction",
           "LigerFusedAddRMSNormFunction"]

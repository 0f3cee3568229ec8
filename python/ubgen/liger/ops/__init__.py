"""liger_kernel.ops: the autograd Functions (ubgen.torch's, under Liger's names)."""
from ...torch.attn_res import AttnResFunction as LigerAttnResFunction
from ...torch.cross_entropy import CrossEntropyFunction as LigerCrossEntropyFunction
from ...torch.cross_entropy import FusedLinearCrossEntropyFunction as LigerFusedLinearCrossEntropyFunction
from ...torch.dyt import DyTFunction as LigerDyTFunction
from ...torch.embedding import EmbeddingFunction as LigerEmbeddingFunction
from ...torch.glu import GELUMulFunction as LigerGELUMulFunction
from ...torch.glu import SiLUMulFunction as LigerSiLUMulFunction
from ...torch.group_norm import GroupNormFunction as LigerGroupNormFunction
from ...torch.layer_norm import LayerNormFunction as LigerLayerNormFunction
from ...torch.rms_norm import RMSNormFunction as LigerRMSNormFunction
from ...torch.rope import RopeFunction as LigerRopeFunction
from .fused_add_rms_norm import LigerFusedAddRMSNormFunction
from .llama4_rope import LigerLlama4RopeFunction
from .modulated_rms_norm import LigerModulatedRMSNormFunction
from .poly_norm import LigerPolyNormFunction
from .qwen2vl_mrope import LigerQwen2VLMRopeFunction
from .relu_squared import LigerReLUSquaredFunction
from .softmax import LigerSoftmaxFunction
from .fused_neighborhood_attention import LigerFusedNeighborhoodAttentionFunction
from .mhc import LigerMHCCoeffsFunction, LigerMHCPostResFunction, LigerMHCPreFunction
from .grpo_loss import GrpoLossFunction
from .tvd import LigerTVDLossFunction
from .kl_div import LigerKLDivLossFunction
from .jsd import LigerJSDFunction
from .fused_linear_jsd import LigerFusedLinearJSDFunction
from .fused_moe import LigerFusedMoEFunction
from .sparsemax import LigerSparsemaxFunction

__all__ = ["LigerAttnResFunction", "LigerCrossEntropyFunction", "LigerDyTFunction", "LigerEmbeddingFunction",
           "LigerFusedAddRMSNormFunction", "LigerFusedLinearCrossEntropyFunction", "LigerGELUMulFunction",
           "LigerGroupNormFunction", "LigerLayerNormFunction", "LigerLlama4RopeFunction",
           "LigerModulatedRMSNormFunction", "LigerPolyNormFunction", "LigerQwen2VLMRopeFunction",
           "LigerRMSNormFunction", "LigerReLUSquaredFunction", "LigerRopeFunction", "LigerSiLUMulFunction",
           "LigerSoftmaxFunction", "LigerFusedNeighborhoodAttentionFunction",
           "LigerMHCCoeffsFunction", "LigerMHCPreFunction", "LigerMHCPostResFunction", "GrpoLossFunction", "LigerJSDFunction",
           "LigerFusedLinearJSDFunction", "LigerFusedMoEFunction", "LigerKLDivLossFunction", "LigerSparsemaxFunction",
           "LigerTVDLossFunction"]

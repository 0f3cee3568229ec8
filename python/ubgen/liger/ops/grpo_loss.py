"""liger_kernel.ops.grpo_loss"""
from ...torch.grpo_loss import GrpoLossFunction, fused_selective_log_softmax

__all__ = ["GrpoLossFunction", "fused_selective_log_softmax"]

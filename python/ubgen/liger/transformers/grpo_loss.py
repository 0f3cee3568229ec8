"""liger_kernel.transformers.grpo_loss"""
from ...torch.grpo_loss import grpo_loss as triton_grpo_loss

__all__ = ["triton_grpo_loss"]

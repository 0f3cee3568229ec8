"""liger_kernel.transformers.model.loss_utils: the causal-LM loss on the
hidden states, as transformers' ForCausalLMLoss defines it on the logits."""
import inspect
from typing import Optional

import torch

from .. import functional as F
from ..functional import CrossEntropyOutput


def unpack_cross_entropy_result(result):
    """(loss, z_loss, token_accuracy, predicted_tokens) from whatever the loss returned"""
    if isinstance(result, CrossEntropyOutput):
        return result.loss, result.z_loss, result.token_accuracy, result.predicted_tokens
    if isinstance(result, tuple):
        return tuple(result) + (None,) * (4 - len(result))
    return result, None, None, None


def fixed_fused_linear_cross_entropy(hidden_states: torch.Tensor, lm_head_weight: torch.Tensor, target: torch.Tensor,
                                     num_items_in_batch: Optional[int] = None, ignore_index: int = -100,
                                     final_logit_softcapping: Optional[float] = None, accum_dtype=None,
                                     return_token_accuracy: bool = False, return_predicted_tokens: bool = False,
                                     **kwargs):
    """the mean over the batch's tokens, or, given num_items_in_batch (the
    tokens of every micro-batch of a gradient-accumulation step), the sum
    divided by it, as transformers' fixed_cross_entropy"""
    reduction = "sum" if num_items_in_batch is not None else "mean"
    result = F.liger_fused_linear_cross_entropy(hidden_states, lm_head_weight, target, reduction=reduction,
                                                ignore_index=ignore_index, softcap=final_logit_softcapping,
                                                accum_dtype=accum_dtype, return_token_accuracy=return_token_accuracy,
                                                return_predicted_tokens=return_predicted_tokens, **kwargs)
    loss, _, token_accuracy, predicted_tokens = unpack_cross_entropy_result(result)
    if reduction == "sum":
        loss = loss / num_items_in_batch
    if return_token_accuracy or return_predicted_tokens:
        return CrossEntropyOutput(loss=loss, token_accuracy=token_accuracy, predicted_tokens=predicted_tokens)
    return loss


def LigerForCausalLMLoss(hidden_states, lm_head_weight, labels, hidden_size: int,
                         num_items_in_batch: Optional[int] = None, ignore_index: int = -100,
                         shift_labels: Optional[torch.Tensor] = None, final_logit_softcapping: Optional[float] = None,
                         return_token_accuracy: bool = False, return_predicted_tokens: bool = False, **kwargs):
    """hidden_states [B, T, H], labels [B, T] (token t predicts label t + 1,
    the last position ignored) or shift_labels [B, T] already shifted"""
    applicable = inspect.signature(F.liger_fused_linear_cross_entropy).parameters
    kwargs = {k: v for k, v in kwargs.items() if k in applicable}
    if shift_labels is None:
        labels = torch.nn.functional.pad(labels, (0, 1), value=ignore_index)
        shift_labels = labels[..., 1:].contiguous()
    hidden_states = hidden_states.reshape(-1, hidden_size)
    shift_labels = shift_labels.reshape(-1).to(hidden_states.device)
    return fixed_fused_linear_cross_entropy(hidden_states, lm_head_weight, shift_labels, num_items_in_batch,
                                            ignore_index, final_logit_softcapping,
                                            return_token_accuracy=return_token_accuracy,
                                            return_predicted_tokens=return_predicted_tokens, **kwargs)

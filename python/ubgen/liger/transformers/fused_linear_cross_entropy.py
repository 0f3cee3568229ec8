"""liger_kernel.transformers.fused_linear_cross_entropy"""
from typing import Optional

import torch

from ..ops import LigerFusedLinearCrossEntropyFunction
from .functional import CrossEntropyOutput


class LigerFusedLinearCrossEntropyLoss(torch.nn.Module):
    def __init__(self, ce_weight: Optional[torch.FloatTensor] = None, ignore_index: int = -100,
                 lse_square_scale: float = 0.0, label_smoothing: float = 0.0, reduction: str = "mean",
                 softcap: Optional[float] = None, return_z_loss: bool = False,
                 accum_dtype: Optional[torch.dtype] = None, use_token_scaling: bool = False,
                 return_token_accuracy: bool = False, return_predicted_tokens: bool = False):
        super().__init__()
        assert 0 <= label_smoothing <= 1, f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
        assert reduction in {"mean", "sum", "none"}, f"reduction must be 'mean' or 'sum' or 'none'. Got: {reduction}"
        assert softcap is None or softcap > 0, f"softcap must greater than 0.0 or None. Got: {softcap}"
        self.ce_weight, self.ignore_index, self.lse_square_scale = ce_weight, ignore_index, lse_square_scale
        self.label_smoothing, self.reduction, self.softcap = label_smoothing, reduction, softcap
        self.return_z_loss, self.accum_dtype, self.use_token_scaling = return_z_loss, accum_dtype, use_token_scaling
        self.return_token_accuracy, self.return_predicted_tokens = return_token_accuracy, return_predicted_tokens

    def forward(self, lin_weight, _input, target, bias=None):
        loss, z_loss, token_accuracy, predicted_tokens = LigerFusedLinearCrossEntropyFunction.apply(
            _input, lin_weight, target, bias, self.ce_weight, self.ignore_index, self.lse_square_scale,
            self.label_smoothing, self.reduction, self.softcap, self.return_z_loss, self.accum_dtype,
            self.use_token_scaling, self.return_token_accuracy, self.return_predicted_tokens)
        if not self.return_z_loss and not self.return_token_accuracy and not self.return_predicted_tokens:
            return loss
        return CrossEntropyOutput(loss=loss, z_loss=z_loss, token_accuracy=token_accuracy,
                                  predicted_tokens=predicted_tokens)

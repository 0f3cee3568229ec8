"""liger_kernel.transformers.fused_linear_jsd"""
from typing import Optional

import torch

from ..ops.fused_linear_jsd import LigerFusedLinearJSDFunction
from ...torch.fused_linear_jsd import FusedLinearJSD


class LigerFusedLinearJSD(FusedLinearJSD):
    """LigerFusedLinearJSD(jsd_beta=0.5, ignore_index=-100, temperature=1.0,
    accum_dtype=None), forward(student_input, student_weight, teacher_input,
    teacher_weight, shift_labels): ubgen.torch's FusedLinearJSD under
    Liger's name, shift_labels without a default as in Liger"""

    def __init__(self, jsd_beta=0.5, ignore_index=-100, temperature=1.0, accum_dtype: Optional[torch.dtype] = None):
        super().__init__(jsd_beta, ignore_index, temperature, accum_dtype)

    def forward(self, student_input: torch.Tensor, student_weight: torch.Tensor, teacher_input: torch.Tensor,
                teacher_weight: torch.Tensor, shift_labels: Optional[torch.LongTensor]):
        return super().forward(student_input, student_weight, teacher_input, teacher_weight, shift_labels)


__all__ = ["LigerFusedLinearJSD", "LigerFusedLinearJSDFunction"]

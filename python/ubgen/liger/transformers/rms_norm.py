"""liger_kernel.transformers.rms_norm"""
import torch

from ...torch.rms_norm import RMSNormFunction


class LigerRMSNorm(torch.nn.Module):
    def __init__(self, hidden_size, eps=1e-6, offset=0.0, casting_mode="llama", init_fn="ones", in_place=True,
                 row_mode=None, elementwise_affine=True):
        super().__init__()
        assert init_fn in ["ones", "zeros"], f"init_fn must be either 'ones' or 'zeros', got {init_fn}"
        self.elementwise_affine = elementwise_affine
        if self.elementwise_affine:
            self.weight = torch.nn.Parameter(torch.ones(hidden_size) if init_fn == "ones" else torch.zeros(hidden_size))
        else:
            self.register_parameter("weight", None)
        self.variance_epsilon, self.offset, self.casting_mode, self.in_place, self.row_mode = (
            eps, offset, casting_mode, in_place, row_mode)

    def forward(self, hidden_states):
        return RMSNormFunction.apply(hidden_states, self.weight, self.variance_epsilon, self.offset,
                                     self.casting_mode, self.in_place, self.row_mode)

    def extra_repr(self):
        shape = tuple(self.weight.shape) if self.weight is not None else None
        return (f"weight_shape={shape}, eps={self.variance_epsilon}, offset={self.offset}, "
                f"in_place={self.in_place}, row_mode={self.row_mode}")


class LigerRMSNormForGemma(LigerRMSNorm):
    """Gemma's norm: x * rstd * (1 + w), computed in f32 (casting "gemma"),
    w initialised to zeros"""

    def __init__(self, hidden_size, eps=1e-6, offset=1.0, casting_mode="gemma", init_fn="zeros", in_place=True,
                 row_mode=None):
        super().__init__(hidden_size, eps, offset, casting_mode, init_fn, in_place, row_mode)


class LigerRMSNormForGemma2(LigerRMSNorm):
    """Gemma 2's norm: Gemma's, its dY kept (the residual stream reads it again)"""

    def __init__(self, hidden_size, eps=1e-6, offset=1.0, casting_mode="gemma", init_fn="zeros", in_place=False,
                 row_mode=None):
        super().__init__(hidden_size, eps, offset, casting_mode, init_fn, in_place, row_mode)


class LigerRMSNormForQwen3Next(LigerRMSNormForGemma2):
    """Qwen3-Next's and Qwen3.5-MoE's norm: Gemma 2's settings"""


class LigerRMSNormForGemma3(LigerRMSNorm):
    """Gemma 3's norm; its first argument is `dim`, as Gemma3RMSNorm's (q_norm, k_norm)"""

    def __init__(self, dim, eps=0.000001, offset=1.0, casting_mode="gemma", init_fn="zeros", in_place=False):
        super().__init__(dim, eps, offset, casting_mode, init_fn, in_place)


class LigerRMSNormForOlmo2(LigerRMSNorm):
    """OLMo 2's norm: LLaMA's, its dY kept (the norms sit after the blocks)"""

    def __init__(self, hidden_size, eps=1e-6, offset=0.0, casting_mode="llama", init_fn="ones", in_place=False,
                 row_mode=None):
        super().__init__(hidden_size, eps, offset, casting_mode, init_fn, in_place, row_mode)


class LigerRMSNormForGlm4(LigerRMSNormForOlmo2):
    """GLM-4's norm: the same settings as OLMo 2's"""

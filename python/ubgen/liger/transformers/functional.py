"""liger_kernel.transformers.functional: the functions, and CrossEntropyOutput."""
from dataclasses import dataclass
from typing import Optional

import torch

from ...torch.attn_res import attn_res
from ...torch.mhc import mhc_forward
from ...torch.rope import rope
from ..ops import (LigerCrossEntropyFunction, LigerDyTFunction, LigerFusedAddRMSNormFunction,
                   LigerFusedLinearCrossEntropyFunction, LigerGELUMulFunction, LigerGroupNormFunction,
                   LigerLayerNormFunction, LigerModulatedRMSNormFunction, LigerPolyNormFunction,
                   LigerQwen2VLMRopeFunction, LigerRMSNormFunction, LigerReLUSquaredFunction, LigerSiLUMulFunction,
                   LigerSoftmaxFunction, LigerMHCCoeffsFunction, LigerMHCPreFunction, LigerMHCPostResFunction,
                   LigerJSDFunction, LigerFusedLinearJSDFunction, LigerKLDivLossFunction, LigerSparsemaxFunction,
                   LigerTVDLossFunction)
from ..ops import LigerFusedNeighborhoodAttentionFunction


@dataclass
class CrossEntropyOutput:
    loss: torch.Tensor
    z_loss: Optional[torch.Tensor] = None
    token_accuracy: Optional[torch.Tensor] = None
    predicted_tokens: Optional[torch.Tensor] = None


def liger_cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                        reduction: str = "mean", label_smoothing: float = 0.0, lse_square_scale: float = 0.0,
                        softcap: Optional[float] = None, return_z_loss: bool = False,
                        return_token_accuracy: bool = False, return_predicted_tokens: bool = False):
    """torch.nn.functional.cross_entropy's signature; size_average and reduce
    are placeholders, as in Liger"""
    loss, z_loss, token_accuracy, predicted_tokens = LigerCrossEntropyFunction.apply(
        input, target, weight, ignore_index, lse_square_scale, label_smoothing, reduction, softcap, return_z_loss,
        return_token_accuracy, return_predicted_tokens)
    if not return_z_loss and not return_token_accuracy and not return_predicted_tokens:
        return loss
    return CrossEntropyOutput(loss=loss, z_loss=z_loss, token_accuracy=token_accuracy,
                              predicted_tokens=predicted_tokens)


def liger_fused_linear_cross_entropy(input, weight, target, bias=None, ce_weight=None, ignore_index: int = -100,
                                     lse_square_scale: float = 0.0, label_smoothing: float = 0.0,
                                     reduction: str = "mean", softcap: Optional[float] = None,
                                     return_z_loss: bool = False, accum_dtype=None, use_token_scaling: bool = False,
                                     return_token_accuracy: bool = False, return_predicted_tokens: bool = False):
    loss, z_loss, token_accuracy, predicted_tokens = LigerFusedLinearCrossEntropyFunction.apply(
        input, weight, target, bias, ce_weight, ignore_index, lse_square_scale, label_smoothing, reduction, softcap,
        return_z_loss, accum_dtype, use_token_scaling, return_token_accuracy, return_predicted_tokens)
    if not return_z_loss and not return_token_accuracy and not return_predicted_tokens:
        return loss
    return CrossEntropyOutput(loss=loss, z_loss=z_loss, token_accuracy=token_accuracy,
                              predicted_tokens=predicted_tokens)


def liger_rms_norm(X, W, eps, offset: float = 0.0, casting_mode: str = "llama", in_place: bool = True):
    return LigerRMSNormFunction.apply(X, W, eps, offset, casting_mode, in_place)


def liger_attn_res(V, w_query, w_norm, eps: float = 1e-6):
    """V: [N, B, T, D], or a list of N tensors [B, T, D]"""
    return attn_res(V, w_query, w_norm, eps)


def liger_swiglu(a, b):
    return LigerSiLUMulFunction.apply(a, b)


def liger_geglu(a, b):
    return LigerGELUMulFunction.apply(a, b)


def liger_layer_norm(X, W, B, eps):
    return LigerLayerNormFunction.apply(X, W, B, eps)


def liger_dyt(x, alpha, gamma, beta):
    return LigerDyTFunction.apply(x, alpha, gamma, beta)


def liger_modulated_rms_norm(X, W, scale, shift=None, eps: float = 1e-6, offset: float = 0.0,
                             casting_mode: str = "llama", in_place: bool = True):
    return LigerModulatedRMSNormFunction.apply(X, W, scale, shift, eps, offset, casting_mode, in_place)


def liger_relu_squared(x):
    return LigerReLUSquaredFunction.apply(x)[0]


def liger_softmax(x):
    return LigerSoftmaxFunction.apply(x)


def liger_fused_neighborhood_attention(query, key, value, kernel_size: int = 7, dilation: int = 1, scale: float = None):
    return LigerFusedNeighborhoodAttentionFunction.apply(query, key, value, kernel_size, dilation, scale)


def liger_mhc_coeffs(x, phi, b, alpha_pre, alpha_post, alpha_res, *, allow_fp32: bool = False, tmax: int = 20,
                     rms_eps: float = 1e-6, pre_eps: float = 0.0, sinkhorn_eps: float = 1e-6, post_mult: float = 2.0):
    return LigerMHCCoeffsFunction.apply(x, phi, b, alpha_pre, alpha_post, alpha_res, allow_fp32, int(tmax),
                                        float(rms_eps), float(pre_eps), float(sinkhorn_eps), float(post_mult))


def liger_mhc_pre(x, h_pre):
    return LigerMHCPreFunction.apply(x, h_pre)


def liger_mhc_post_res(x, f_out, h_post, h_res):
    return LigerMHCPostResFunction.apply(x, f_out, h_post, h_res)


def liger_mhc_apply(x, f_out, h_pre, h_post, h_res, *, return_x_in: bool = False):
    x_in = liger_mhc_pre(x, h_pre)
    x_out = liger_mhc_post_res(x, f_out, h_post, h_res)
    return (x_out, x_in) if return_x_in else x_out


def liger_mhc_forward(x, layer, phi, b, alpha_pre, alpha_post, alpha_res, *, allow_fp32=False, tmax=20, rms_eps=1e-6,
                      pre_eps=0.0, sinkhorn_eps=1e-6, post_mult=2.0, return_coeffs=False):
    """coefficients, pre, layer, post and residual (ubgen.torch.mhc_forward)"""
    return mhc_forward(x, layer, phi, b, alpha_pre, alpha_post, alpha_res, allow_fp32=allow_fp32, tmax=tmax,
                       rms_eps=rms_eps, pre_eps=pre_eps, sinkhorn_eps=sinkhorn_eps, post_mult=post_mult,
                       return_coeffs=return_coeffs)


def liger_tvd(input, target, shift_labels=None, reduction: str = "mean", ignore_index: int = -100):
    """LigerTVDLossFunction with Liger's functional default, reduction "mean" (the Function's and
    LigerTVDLoss's is "batchmean")"""
    return LigerTVDLossFunction.apply(input, target, shift_labels, reduction, ignore_index)
def liger_kl_div(input, target, size_average: bool = True, reduce: bool = True, reduction: str = "mean",
                 log_target: bool = False, eps: float = 1e-10):
    """torch.nn.functional.kl_div's signature, default reduction "mean";
    size_average and reduce are placeholders, as in Liger"""
    return LigerKLDivLossFunction.apply(input, target, reduction, log_target, eps)
def liger_jsd(input, target, shift_labels=None, beta: float = 0.5, ignore_index: int = -100):
    return LigerJSDFunction.apply(input, target, shift_labels, beta, ignore_index)


def liger_fused_linear_jsd(student_input, student_weight, teacher_input, teacher_weight, shift_labels=None,
                           jsd_beta: float = 0.5, ignore_index: int = -100, temperature: float = 1.0,
                           accum_dtype=None):
    return LigerFusedLinearJSDFunction.apply(student_input, student_weight, teacher_input, teacher_weight,
                                             shift_labels, jsd_beta, ignore_index, temperature, accum_dtype)


def liger_poly_norm(X, W, B, eps=1e-6, in_place=True):
    return LigerPolyNormFunction.apply(X, W, B, eps, in_place)


def liger_sparsemax(input, dim=-1):
    return LigerSparsemaxFunction.apply(input, dim)


def liger_group_norm(X, affine_scaling_weight, affine_shifting_bias, num_channels, num_groups, eps):
    return LigerGroupNormFunction.apply(X, affine_scaling_weight, affine_shifting_bias, num_channels, num_groups, eps)


def liger_fused_add_rms_norm(X, R, W, eps, offset: float = 0.0, casting_mode: str = "llama", in_place: bool = True):
    return LigerFusedAddRMSNormFunction.apply(X, R, W, eps, offset, casting_mode, in_place)


def liger_rope(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    """(q, k) rotated as transformers' apply_rotary_pos_emb: q [B, Hq, T, D],
    k [B, Hk, T, D], cos and sin [1 or B, T, D]"""
    return rope(q, k, cos, sin, position_ids, unsqueeze_dim)


def liger_qwen2vl_mrope(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    return LigerQwen2VLMRopeFunction.apply(q, k, cos, sin, mrope_section, unsqueeze_dim)

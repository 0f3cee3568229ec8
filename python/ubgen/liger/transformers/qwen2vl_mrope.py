"""liger_kernel.transformers.qwen2vl_mrope"""
from ..ops.qwen2vl_mrope import LigerQwen2VLMRopeFunction


def liger_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    """(q, k) rotated by Qwen2-VL's multimodal RoPE: q [B, Hq, T, D], k [B,
    Hk, T, D], cos and sin [3, B, T, D] (temporal, height, width), each
    section of mrope_section ([t, h, w], summing to D/2) from its stream"""
    return LigerQwen2VLMRopeFunction.apply(q, k, cos, sin, mrope_section, unsqueeze_dim)

"""liger_kernel.transformers.llama4_rope: the functions
apply_liger_kernel_to_llama4 puts in place of transformers' apply_rotary_emb
and vision_apply_rotary_emb"""
import torch

from ..ops.llama4_rope import LigerLlama4RopeFunction


def liger_llama4_text_rotary_pos_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    """(xq, xk) [B, T, H, D] times freqs_cis (complex [B or 1, T, D/2], from
    Llama4TextRotaryEmbedding), as interleaved (re, im) pairs"""
    return LigerLlama4RopeFunction.apply(xq, xk, freqs_cis)


def liger_llama4_vision_rotary_pos_emb(query: torch.Tensor, key: torch.Tensor, freqs_ci: torch.Tensor):
    """(query, key) [B, T, H, D] times freqs_ci (complex [T, 1, D/2], from
    Llama4VisionRotaryEmbedding). A real freqs_ci (the complex buffer after
    model.to(a real dtype), which keeps the real part) multiplies both parts
    of each pair, as transformers' vision_apply_rotary_emb does with it."""
    if not freqs_ci.is_complex():
        freqs_ci = torch.complex(freqs_ci.float(), torch.zeros(freqs_ci.shape))
    return LigerLlama4RopeFunction.apply(query, key, freqs_ci)


def apply_liger_llama4_rope_full(modeling_module):
    """both of modeling_llama4's rotary functions replaced"""
    modeling_module.apply_rotary_emb = liger_llama4_text_rotary_pos_emb
    modeling_module.vision_apply_rotary_emb = liger_llama4_vision_rotary_pos_emb

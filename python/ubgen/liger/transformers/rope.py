"""liger_kernel.transformers.rope: the function apply_liger_kernel_to_*
puts in place of a family's apply_rotary_pos_emb"""
from ...torch.rope import rope


def liger_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    """(q, k) rotated by cos and sin, transformers' apply_rotary_pos_emb on
    ubgen's kernel: q [B, Hq, T, D], k [B, Hk, T, D], cos and sin [1 or B,
    T, D] (position_ids unused: cos and sin are already gathered, as in
    Liger); cos with fewer columns than D rotates those alone (Phi-3)"""
    return rope(q, k, cos, sin, position_ids, unsqueeze_dim)

"""Rotary position embedding (specs/rope.json), forward and backward in one
place, transformers' apply_rotary_pos_emb (the rotate-half convention):

    q [B, Hq, T, D], k [B, Hk, T, D]   (unsqueeze_dim=1; [B, T, H, D] with unsqueeze_dim=2)
    cos, sin [1 or B, T, R] or [T, R]  (R = D; R < D rotates the first R columns, as Phi-3's partial rotary)
    q_out = q cos + rotate_half(q) sin, the same for k; in q's dtype
    backward: dq, dk through the transposed rotation; none for cos and sin (Liger's)
    M-RoPE (Qwen2-VL): cos, sin [3, B, T, D] picked per column section into [B, T, D] (mrope_table)

The kernel takes q and k token-major, [B, T, H, D]: the layout of the
projection a model views as [B, H, T, D] by transposing, so such a q is
read where it lies; any other layout is copied once. cos and sin are used
in q's dtype, as transformers multiplies them.
"""
import torch

from . import _util


def _check(q, k, cos, sin, unsqueeze_dim):
    if unsqueeze_dim not in (1, 2):
        raise ValueError("unsqueeze_dim=%r: 1 (q [B, H, T, D]) or 2 (q [B, T, H, D])" % (unsqueeze_dim,))
    for name, t in (("q", q), ("k", k), ("cos", cos), ("sin", sin)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
        if not t.is_cpu:
            raise ValueError("%s is on %s; ubgen runs on the CPU (move it with .cpu())" % (name, t.device))
    _util.dtype_code("q", q)
    if k.dtype != q.dtype:
        raise TypeError("k has dtype %s and q %s; they must be the same" % (k.dtype, q.dtype))
    if q.dim() != 4 or k.dim() != 4:
        raise ValueError("q has shape %s and k %s; both need 4 dimensions" % (tuple(q.shape), tuple(k.shape)))
    t_dim = 3 - unsqueeze_dim  # the sequence's dimension of q
    B, T, D = q.shape[0], q.shape[t_dim], q.shape[3]
    if k.shape[0] != B or k.shape[t_dim] != T or k.shape[3] != D:
        raise ValueError("q has shape %s and k %s: batch, sequence and head size must agree"
                         % (tuple(q.shape), tuple(k.shape)))
    if cos.shape != sin.shape or cos.dim() not in (2, 3) or cos.shape[-2] != T or \
            (cos.dim() == 3 and cos.shape[0] not in (1, B)):
        raise ValueError("cos has shape %s and sin %s; both [1 or %d, %d, R] or [%d, R] for q of shape %s"
                         % (tuple(cos.shape), tuple(sin.shape), B, T, T, tuple(q.shape)))
    if cos.shape[-1] % 2 or cos.shape[-1] > D or cos.shape[-1] == 0:
        raise ValueError("cos and sin have %d columns; an even number up to the head size %d is needed"
                         % (cos.shape[-1], D))


def _token_major(t, unsqueeze_dim):
    """[B, T, H, D], contiguous"""
    t = t.transpose(1, 2) if unsqueeze_dim == 1 else t
    return t if t.is_contiguous() else t.contiguous()


def _table(t, dtype):
    """cos or sin as [rows, R] contiguous in dtype: rows = T (one batch) or B T"""
    t = _util.same_dtype("cos", t, dtype)
    t = t.reshape(-1, t.shape[-1])
    return t if t.is_contiguous() else t.contiguous()


class RopeFunction(torch.autograd.Function):
    """q and k rotated by cos and sin (cos.shape[-1] == head size)"""

    @staticmethod
    def forward(ctx, q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        _check(q, k, cos, sin, unsqueeze_dim)
        cos, sin = _table(cos, q.dtype), _table(sin, q.dtype)
        ctx.save_for_backward(cos, sin)
        ctx.unsqueeze_dim = unsqueeze_dim
        return _rotate("fwd", q, k, cos, sin, unsqueeze_dim)

    @staticmethod
    def backward(ctx, dq, dk):
        cos, sin = ctx.saved_tensors
        dq = _util.same_dtype("dq", dq, cos.dtype)
        dk = _util.same_dtype("dk", dk, cos.dtype)
        dq, dk = _rotate("bwd", dq, dk, cos, sin, ctx.unsqueeze_dim)
        return dq, dk, None, None, None, None


def _rotate(pass_, q, k, cos, sin, unsqueeze_dim):
    """pass_ of the kernel over q and k ([B, H, T, D] or [B, T, H, D]), in that layout"""
    qt, kt = _token_major(q, unsqueeze_dim), _token_major(k, unsqueeze_dim)
    B, T, Hq, D = qt.shape
    q_out, k_out = _util.empty(tuple(qt.shape), qt.dtype), _util.empty(tuple(kt.shape), kt.dtype)
    if q_out.numel() or k_out.numel():
        names = ("q", "k", "q_out", "k_out") if pass_ == "fwd" else ("dq_out", "dk_out", "dq", "dk")
        _util.launch("rope", pass_, qt.dtype, cos=cos, sin=sin, bt=B * T, seq=T, cos_rows=cos.shape[0], hq=Hq,
                     hk=kt.shape[2], d=D, **dict(zip(names, (qt, kt, q_out, k_out))))
    if unsqueeze_dim == 1:
        return q_out.transpose(1, 2), k_out.transpose(1, 2)
    return q_out, k_out


def rope(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    """(q_out, k_out); cos with fewer columns than the head size rotates
    those columns and passes the rest through, as transformers' Phi-3"""
    _check(q, k, cos, sin, unsqueeze_dim)
    R = cos.shape[-1]
    if R == q.shape[-1]:
        return RopeFunction.apply(q, k, cos, sin, position_ids, unsqueeze_dim)
    q_rot, k_rot = RopeFunction.apply(q[..., :R], k[..., :R], cos, sin, position_ids, unsqueeze_dim)
    return torch.cat([q_rot, q[..., R:]], dim=-1), torch.cat([k_rot, k[..., R:]], dim=-1)


def mrope_table(t, mrope_section):
    """Qwen2-VL's cos or sin [3, B, T, D] (a table per position stream:
    temporal, height, width) as [B, T, D]: the columns of section i from
    stream i % 3, the sections laid over each half of D (transformers'
    apply_multimodal_rotary_pos_emb); a [B, T, D] table is taken as already
    picked (transformers >= 5's Qwen2VLRotaryEmbedding picks it)"""
    if t.dim() == 3:
        return t
    sections = [int(s) for s in mrope_section]
    if t.dim() != 4 or t.shape[0] != 3 or 2 * sum(sections) != t.shape[-1] or min(sections, default=0) < 0:
        raise ValueError("cos has shape %s and mrope_section is %s; cos [3, B, T, D] with the sections summing to "
                         "D/2" % (tuple(t.shape), list(mrope_section)))
    return torch.cat([part[i % 3] for i, part in enumerate(t.split(sections * 2, dim=-1))], dim=-1)


class MRopeFunction(torch.autograd.Function):
    """Qwen2-VL's multimodal RoPE (M-RoPE): RopeFunction on the [B, T, D]
    cos and sin that mrope_table picks from the three position streams"""

    @staticmethod
    def forward(ctx, q, k, cos, sin, mrope_section, unsqueeze_dim=1):
        cos, sin = mrope_table(cos, mrope_section), mrope_table(sin, mrope_section)
        if isinstance(q, torch.Tensor) and cos.shape[-1] != q.shape[-1]:
            raise ValueError("cos has %d columns and q's heads %d; M-RoPE rotates whole heads"
                             % (cos.shape[-1], q.shape[-1]))
        return RopeFunction.forward(ctx, q, k, cos, sin, None, unsqueeze_dim)

    @staticmethod
    def backward(ctx, dq, dk):
        return RopeFunction.backward(ctx, dq, dk)


def mrope(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    """(q_out, k_out): q [B, Hq, T, D], k [B, Hk, T, D], cos and sin [3, B,
    T, D] picked by mrope_section ([t, h, w], summing to D/2)"""
    return MRopeFunction.apply(q, k, cos, sin, mrope_section, unsqueeze_dim)

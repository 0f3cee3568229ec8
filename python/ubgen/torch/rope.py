"""Rotary position embedding (specs/rope.json), forward and backward in one
place, transformers' apply_rotary_pos_emb (the rotate-half convention):

    q [B, Hq, T, D], k [B, Hk, T, D]   (unsqueeze_dim=1; [B, T, H, D] with unsqueeze_dim=2)
    cos, sin [1 or B, T, R] or [T, R]  (R = D; R < D rotates the first R columns, as Phi-3's partial rotary)
    q_out = q cos + rotate_half(q) sin, the same for k; in q's dtype
    backward: dq, dk through the transposed rotation; none for cos and sin (Liger's)
    M-RoPE (Qwen2-VL): cos, sin [3, 1 or B, T, D], each pair's from its section's stream (the kernel's
    mrope passes read the three streams: no [B, T, D] table is built)

The kernel takes q and k token-major, [B, T, H, D]: the layout of the
projection a model views as [B, H, T, D] by transposing, so such a q is
read where it lies; the M-RoPE's passes read a contiguous [B, H, T, D] in
place too (the layout of the gradients autograd often hands over); any
other layout is copied once. cos and sin are used in q's dtype, as
transformers multiplies them.
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


def _head_major(q, k, unsqueeze_dim):
    """q and k as contiguous [B, H, T, D] where both lie so (a gradient
    autograd hands over in a model's layout), else None"""
    qh, kh = (q, k) if unsqueeze_dim == 1 else (q.transpose(1, 2), k.transpose(1, 2))
    return (qh, kh) if qh.is_contiguous() and kh.is_contiguous() else None


def _rotate(pass_, q, k, cos, sin, unsqueeze_dim, **sections):
    """pass_ of the kernel over q and k ([B, H, T, D] or [B, T, H, D]), in that layout; the M-RoPE's
    passes read q and k head-major too, where they lie so (sections given), not copied token-major"""
    heads = _head_major(q, k, unsqueeze_dim) if sections else None
    qt, kt = (heads[0].transpose(1, 2), heads[1].transpose(1, 2)) if heads else \
        (_token_major(q, unsqueeze_dim), _token_major(k, unsqueeze_dim))
    B, T, Hq, D = qt.shape
    q_out, k_out = _util.empty(tuple(qt.shape), qt.dtype), _util.empty(tuple(kt.shape), kt.dtype)
    if q_out.numel() or k_out.numel():
        names = ("q", "k", "q_out", "k_out") if pass_.endswith("fwd") else ("dq_out", "dk_out", "dq", "dk")
        ins = heads or (qt, kt)
        if sections:
            sections = dict(sections, head_major=int(heads is not None))
        _util.launch("rope", pass_, qt.dtype, cos=cos, sin=sin, bt=B * T, seq=T, cos_rows=cos.shape[-2], hq=Hq,
                     hk=kt.shape[2], d=D, **sections, **dict(zip(names, ins + (q_out, k_out))))
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


def _sections(cos, mrope_section):
    """mrope_section [t, h, w] for cos [3, 1 or B, T, D]: the kernel's sec_t and sec_h"""
    sections = [int(s) for s in mrope_section]
    if cos.dim() != 4 or cos.shape[0] != 3 or len(sections) != 3 or 2 * sum(sections) != cos.shape[-1] or \
            min(sections) < 0:
        raise ValueError("cos has shape %s and mrope_section is %s; cos [3, B, T, D] with the sections summing to "
                         "D/2" % (tuple(cos.shape), list(mrope_section)))
    return {"sec_t": sections[0], "sec_h": sections[1]}


def _streams(t, dtype):
    """cos or sin [3, 1 or B, T, D] as [3, rows, D] contiguous in dtype: rows = T (one batch) or B T"""
    t = _util.same_dtype("cos", t, dtype)
    t = t.reshape(3, -1, t.shape[-1])
    return t if t.is_contiguous() else t.contiguous()


class MRopeFunction(torch.autograd.Function):
    """Qwen2-VL's multimodal RoPE (M-RoPE): cos and sin [3, B, T, D] (a
    table per position stream: temporal, height, width), the pairs of
    section i of mrope_section from stream i (transformers'
    apply_multimodal_rotary_pos_emb, the sections laid over each half of
    D), read so by the kernel; a [B, T, D] cos is taken as already picked
    (transformers >= 5's Qwen2VLRotaryEmbedding picks it): RopeFunction's"""

    @staticmethod
    def forward(ctx, q, k, cos, sin, mrope_section, unsqueeze_dim=1):
        ctx.sections = None
        if isinstance(cos, torch.Tensor) and cos.dim() == 3:
            if isinstance(q, torch.Tensor) and cos.shape[-1] != q.shape[-1]:
                raise ValueError("cos has %d columns and q's heads %d; M-RoPE rotates whole heads"
                                 % (cos.shape[-1], q.shape[-1]))
            return RopeFunction.forward(ctx, q, k, cos, sin, None, unsqueeze_dim)
        for name, t in (("cos", cos), ("sin", sin)):
            if not isinstance(t, torch.Tensor):
                raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
        sections = _sections(cos, mrope_section)
        if sin.shape != cos.shape:
            raise ValueError("cos has shape %s and sin %s; they must be the same"
                             % (tuple(cos.shape), tuple(sin.shape)))
        _check(q, k, cos[0], sin[0], unsqueeze_dim)
        if cos.shape[-1] != q.shape[-1]:
            raise ValueError("cos has %d columns and q's heads %d; M-RoPE rotates whole heads"
                             % (cos.shape[-1], q.shape[-1]))
        cos, sin = _streams(cos, q.dtype), _streams(sin, q.dtype)
        ctx.save_for_backward(cos, sin)
        ctx.unsqueeze_dim, ctx.sections = unsqueeze_dim, sections
        return _rotate("mrope_fwd", q, k, cos, sin, unsqueeze_dim, **sections)

    @staticmethod
    def backward(ctx, dq, dk):
        if ctx.sections is None:
            return RopeFunction.backward(ctx, dq, dk)
        cos, sin = ctx.saved_tensors
        dq = _util.same_dtype("dq", dq, cos.dtype)
        dk = _util.same_dtype("dk", dk, cos.dtype)
        dq, dk = _rotate("mrope_bwd", dq, dk, cos, sin, ctx.unsqueeze_dim, **ctx.sections)
        return dq, dk, None, None, None, None


def mrope(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    """(q_out, k_out): q [B, Hq, T, D], k [B, Hk, T, D], cos and sin [3, B,
    T, D] picked by mrope_section ([t, h, w], summing to D/2)"""
    return MRopeFunction.apply(q, k, cos, sin, mrope_section, unsqueeze_dim)

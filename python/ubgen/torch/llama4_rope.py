"""Llama 4's rotary position embedding (specs/llama4_rope.json), forward and
backward in one place, transformers' apply_rotary_emb and
vision_apply_rotary_emb (Liger's LigerLlama4RopeFunction):

    q [B, T, Hq, D], k [B, T, Hk, D]   each head D/2 interleaved pairs (re, im)
    freqs_cis complex, T or B T rows of D/2 ([B, T, D/2], [1, T, D/2], [T, 1, D/2], ...),
              or its torch.view_as_real ([..., D/2, 2] real)
    q_out = (q_re + i q_im) freqs_cis, the same for k; in q's dtype
    backward: dq, dk times the conjugate of freqs_cis; none for freqs_cis (Liger's)

q and k are taken as the attention makes them, [B, T, H, D] views of its
projections, read where they lie. freqs_cis is used in complex64 (pairs of
f32), as transformers multiplies q.float() by it.
"""
import torch

from . import _util


def _check(q, k, freqs_cis):
    for name, t in (("q", q), ("k", k), ("freqs_cis", freqs_cis)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
        if not t.is_cpu:
            raise ValueError("%s is on %s; ubgen runs on the CPU (move it with .cpu())" % (name, t.device))
    _util.dtype_code("q", q)
    if k.dtype != q.dtype:
        raise TypeError("k has dtype %s and q %s; they must be the same" % (k.dtype, q.dtype))
    if q.dim() != 4 or k.dim() != 4 or k.shape[:2] != q.shape[:2] or k.shape[3] != q.shape[3] or q.shape[3] % 2:
        raise ValueError("q has shape %s and k %s; both [B, T, heads, D] with the same B, T and an even D"
                         % (tuple(q.shape), tuple(k.shape)))


def _freqs_table(freqs_cis, q):
    """freqs_cis as [rows, D] f32 contiguous, pairs (re, im); rows T (a row
    per position) or B T (a row per token)"""
    B, T, _, D = q.shape
    f = torch.view_as_real(freqs_cis.to(torch.complex64)) if freqs_cis.is_complex() else freqs_cis.float()
    if f.dim() < 2 or f.shape[-2:] != (D // 2, 2) or f.numel() not in (T * D, B * T * D):
        raise ValueError("freqs_cis has shape %s (%s); %d or %d rows of %d complex numbers are needed for q of "
                         "shape %s" % (tuple(freqs_cis.shape), freqs_cis.dtype, T, B * T, D // 2, tuple(q.shape)))
    f = f.reshape(-1, D)
    return f if f.is_contiguous() else f.contiguous()


class Llama4RopeFunction(torch.autograd.Function):
    """q and k, [B, T, H, D], rotated by freqs_cis"""

    @staticmethod
    def forward(ctx, q, k, freqs_cis):
        _check(q, k, freqs_cis)
        freqs = _freqs_table(freqs_cis, q)
        ctx.save_for_backward(freqs)
        ctx.dtype = q.dtype
        return _rotate("fwd", q, k, freqs)

    @staticmethod
    def backward(ctx, dq, dk):
        (freqs,) = ctx.saved_tensors
        dq, dk = _rotate("bwd", _util.same_dtype("dq", dq, ctx.dtype), _util.same_dtype("dk", dk, ctx.dtype), freqs)
        return dq, dk, None


def _rotate(pass_, q, k, freqs):
    """pass_ of the kernel over q and k [B, T, H, D]"""
    q, k = (t if t.is_contiguous() else t.contiguous() for t in (q, k))
    B, T, Hq, D = q.shape
    q_out, k_out = _util.empty(tuple(q.shape), q.dtype), _util.empty(tuple(k.shape), k.dtype)
    if q_out.numel() or k_out.numel():
        names = ("q", "k", "q_out", "k_out") if pass_ == "fwd" else ("dq_out", "dk_out", "dq", "dk")
        _util.launch("llama4_rope", pass_, q.dtype, freqs=freqs, bt=B * T, seq=T, freq_rows=freqs.shape[0], hq=Hq,
                     hk=k.shape[2], d=D, **dict(zip(names, (q, k, q_out, k_out))))
    return q_out, k_out


def llama4_rope(q, k, freqs_cis):
    """(q_out, k_out): q [B, T, Hq, D] and k [B, T, Hk, D] times freqs_cis"""
    return Llama4RopeFunction.apply(q, k, freqs_cis)

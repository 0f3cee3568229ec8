"""Attention residuals (Kimi's AttnRes, Liger's attn_res): softmax over N
blocks, keyed by each block's RMSNorm, forward and backward in one place.

    V [N, ..., D] (or a list of N tensors [..., D]), w_query [D], w_norm [D]
    -> h [..., D];  alpha, rstd [tokens, N] f32 saved
"""
import torch

from . import _util


class AttnResFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, V, w_query, w_norm, eps=1e-6):
        Vc = _util.tensor("V", V, min_ndim=2)
        _util.dtype_code("V", Vc)
        N, D = Vc.shape[0], Vc.shape[-1]
        tokens = Vc.numel() // (N * D) if N * D else 0
        wq = _util.same_dtype("w_query", _util.tensor("w_query", w_query, ndim=1), Vc.dtype)
        wn = _util.same_dtype("w_norm", _util.tensor("w_norm", w_norm, ndim=1), Vc.dtype)
        for name, w in (("w_query", wq), ("w_norm", wn)):
            if w.shape[0] != D:
                raise ValueError("%s has shape %s, but V's last dimension is %d" % (name, tuple(w.shape), D))
        out = _util.empty(tuple(Vc.shape[1:]), Vc.dtype)
        alpha = _util.empty((tokens * N,), torch.float32)
        rstd = _util.empty((tokens * N,), torch.float32)
        _util.launch("attn_res", "fwd", Vc.dtype, v=Vc, w_query=wq, w_norm=wn, out=out, alpha=alpha, rstd=rstd,
                     nblocks=N, tokens=tokens, dim=D, eps=_util.f32(eps))
        ctx.save_for_backward(Vc, wq, wn, alpha, rstd)
        ctx.meta = (N, tokens, D, w_query.dtype, w_norm.dtype)
        return out

    @staticmethod
    def backward(ctx, dout):
        Vc, wq, wn, alpha, rstd = ctx.saved_tensors
        N, tokens, D, wq_dtype, wn_dtype = ctx.meta
        g = _util.same_dtype("dout", _util.tensor("dout", dout), Vc.dtype)
        dV = _util.empty_like(Vc)
        dwq = _util.empty((D,), Vc.dtype)
        dwn = _util.empty((D,), Vc.dtype)
        _util.launch("attn_res", "bwd", Vc.dtype, dout=g, v=Vc, w_query=wq, w_norm=wn, alpha=alpha, rstd=rstd, dv=dV,
                     dw_query=dwq, dw_norm=dwn, nblocks=N, tokens=tokens, dim=D)
        return dV, dwq.to(wq_dtype), dwn.to(wn_dtype), None


def attn_res(V, w_query, w_norm, eps=1e-6):
    """V: a tensor [N, ..., D] or a list of N tensors [..., D] (stacked here,
    so each block gets its own gradient)"""
    if isinstance(V, (list, tuple)):
        if not V:
            raise ValueError("V is an empty list; AttnRes needs at least one block")
        for i, b in enumerate(V):
            _util.tensor("V[%d]" % i, b)
            if b.shape != V[0].shape:
                raise ValueError("V[%d] has shape %s, but V[0] has shape %s" % (i, tuple(b.shape), tuple(V[0].shape)))
        V = torch.stack(list(V))
    return AttnResFunction.apply(V, w_query, w_norm, eps)


class AttnRes(torch.nn.Module):
    """the learned pseudo-query w_query (N(0, 0.02^2)) and RMSNorm weight
    w_norm (ones) of one AttnRes layer"""

    def __init__(self, hidden_size, eps=1e-6, dtype=None):
        super().__init__()
        self.w_query = torch.nn.Parameter(torch.randn(hidden_size, dtype=dtype) * 0.02)
        self.w_norm = torch.nn.Parameter(torch.ones(hidden_size, dtype=dtype))
        self.eps = eps

    def forward(self, V):
        return attn_res(V, self.w_query, self.w_norm, self.eps)

"""Fused 1-D neighborhood attention, forward and backward in one place
(specs/neighborhood_attention.json):

    query, key, value [B, H, N, D]  ->  out [B, H, N, D]
    query i sees keys j = i + u dilation, |u| <= kernel_size // 2, 0 <= j < N
    out_i = softmax_j(scale q_i . k_j) v_j,  scale = 1/sqrt(D) by default
    backward from out and the row's log-sum-exp (kept in f32): dq, dk, dv

and the attention Module and Layer around it (projections, dropout, and
the Layer's LayerNorm and residual), with Liger's arguments.
"""
import math

import torch

from . import _util


def _qkv(query, key, value):
    """query, key and value checked as [B, H, N, D] of one shape, in query's dtype"""
    q = _util.tensor("query", query, ndim=4)
    _util.dtype_code("query", q)
    k = _util.same_dtype("key", _util.tensor("key", key, ndim=4), q.dtype)
    v = _util.same_dtype("value", _util.tensor("value", value, ndim=4), q.dtype)
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError("query, key and value have shapes %s, %s and %s; one shape [B, H, N, D] is needed"
                         % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    return q, k, v


class NeighborhoodAttentionFunction(torch.autograd.Function):
    """Liger's LigerFusedNeighborhoodAttentionFunction: apply(query, key,
    value, kernel_size=7, dilation=1, scale=None)"""

    @staticmethod
    def forward(ctx, query, key, value, kernel_size=7, dilation=1, scale=None):
        q, k, v = _qkv(query, key, value)
        B, H, N, D = q.shape
        scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
        out = _util.empty(tuple(q.shape), q.dtype)
        lse = torch.empty(B, H, N, dtype=torch.float32)
        shape = dict(batch_heads=B * H, seq_len=N, head_dim=D, kernel_size=kernel_size, dilation=dilation,
                     scale=scale)
        if q.numel():
            _util.launch("neighborhood_attention", "fwd", q.dtype, q=q, k=k, v=v, out=out, lse=lse, **shape)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.shape, ctx.dtypes = shape, (query.dtype, key.dtype, value.dtype)
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        d = _util.same_dtype("dout", _util.tensor("dout", dout), q.dtype).reshape(q.shape)
        dq, dk, dv = (_util.empty(tuple(q.shape), q.dtype) for _ in range(3))
        if q.numel():
            _util.launch("neighborhood_attention", "bwd", q.dtype, dout=d, q=q, k=k, v=v, out=out, lse=lse, dq=dq,
                         dk=dk, dv=dv, **ctx.shape)
        dq_dtype, dk_dtype, dv_dtype = ctx.dtypes
        return dq.to(dq_dtype), dk.to(dk_dtype), dv.to(dv_dtype), None, None, None


def neighborhood_attention(query, key, value, kernel_size=7, dilation=1, scale=None):
    return NeighborhoodAttentionFunction.apply(query, key, value, kernel_size, dilation, scale)


class NeighborhoodAttention(torch.nn.Module):
    """Neighborhood attention over hidden_states [B, N, hidden_size]: q, k,
    v projections, num_heads heads of hidden_size / num_heads, the fused
    attention, dropout, the output projection (Liger's
    LigerFusedNeighborhoodAttention)"""

    def __init__(self, hidden_size, num_heads, kernel_size=7, dilation=1, bias=True, dropout=0.0, scale=None):
        super().__init__()
        if hidden_size % num_heads != 0:
            raise ValueError(f"hidden_size ({hidden_size}) must be divisible by num_heads ({num_heads})")
        if kernel_size <= 0:
            raise ValueError(f"kernel_size ({kernel_size}) must be positive")
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size ({kernel_size}) must be odd")
        if dilation < 1:
            raise ValueError(f"dilation ({dilation}) must be positive")
        self.hidden_size, self.num_heads, self.head_dim = hidden_size, num_heads, hidden_size // num_heads
        self.kernel_size, self.dilation, self.dropout_p = kernel_size, dilation, dropout
        self.scale = scale if scale is not None else 1.0 / math.sqrt(self.head_dim)
        self.q_proj = torch.nn.Linear(hidden_size, hidden_size, bias=bias)
        self.k_proj = torch.nn.Linear(hidden_size, hidden_size, bias=bias)
        self.v_proj = torch.nn.Linear(hidden_size, hidden_size, bias=bias)
        self.out_proj = torch.nn.Linear(hidden_size, hidden_size, bias=bias)
        self.dropout = torch.nn.Dropout(dropout) if dropout > 0.0 else None

    def forward(self, hidden_states, attention_mask=None):
        if attention_mask is not None:
            raise NotImplementedError("Attention mask is not yet supported in %s" % type(self).__name__)
        B, N, C = hidden_states.shape

        def heads(x):  # [B, N, C] -> [B, num_heads, N, head_dim]
            return x.view(B, N, self.num_heads, self.head_dim).transpose(1, 2)

        out = NeighborhoodAttentionFunction.apply(heads(self.q_proj(hidden_states)), heads(self.k_proj(hidden_states)),
                                                  heads(self.v_proj(hidden_states)), self.kernel_size, self.dilation,
                                                  self.scale)
        out = out.transpose(1, 2).contiguous().view(B, N, C)
        if self.dropout is not None:
            out = self.dropout(out)
        return self.out_proj(out)

    def extra_repr(self):
        return (f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, head_dim={self.head_dim}, "
                f"kernel_size={self.kernel_size}, dilation={self.dilation}, scale={self.scale}, "
                f"dropout={self.dropout_p}")


class NeighborhoodAttentionLayer(torch.nn.Module):
    """hidden_states + dropout(attention(LayerNorm(hidden_states))) (Liger's
    LigerFusedNeighborhoodAttentionLayer; torch's LayerNorm, as Liger's)"""

    attention_class = NeighborhoodAttention  # the Liger layer holds the Liger-named module

    def __init__(self, hidden_size, num_heads, kernel_size=7, dilation=1, bias=True, dropout=0.0,
                 layer_norm_eps=1e-5, scale=None):
        super().__init__()
        self.attention = self.attention_class(hidden_size=hidden_size, num_heads=num_heads, kernel_size=kernel_size,
                                              dilation=dilation, bias=bias, dropout=dropout, scale=scale)
        self.layer_norm = torch.nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = torch.nn.Dropout(dropout) if dropout > 0.0 else None

    def forward(self, hidden_states, attention_mask=None):
        out = self.attention(self.layer_norm(hidden_states), attention_mask)
        if self.dropout is not None:
            out = self.dropout(out)
        return hidden_states + out

"""Embedding, forward and backward in one place.

    weight [V, D], indices [...] int  ->  out [..., D]
    backward: dweight [V, D] = sum of dout rows by index (f32 accumulation,
    in a fixed order); rows at padding_idx get no gradient
"""
import torch

from . import _util


def _padding(padding_idx, num_embeddings):
    if padding_idx is None:
        return -1
    p = int(padding_idx)
    if p < 0:
        p += num_embeddings
    if not 0 <= p < num_embeddings:
        raise ValueError("padding_idx=%r is outside [-%d, %d)" % (padding_idx, num_embeddings, num_embeddings))
    return p


class EmbeddingFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight, indices, padding_idx=None):
        table = _util.tensor("weight", weight, ndim=2)
        _util.dtype_code("weight", table)
        V, D = table.shape
        pad = _padding(padding_idx, V)
        idx = _util.indices("indices", indices).view(-1)
        n = idx.shape[0]
        out = _util.empty((n, D), table.dtype)
        _util.launch("embedding", "fwd", table.dtype, table=table, indices=idx, out=out, num_embeddings=V, dim=D, n=n)
        ctx.save_for_backward(idx)
        ctx.meta = (V, D, pad, table.dtype)
        return out.view(*indices.shape, D)

    @staticmethod
    def backward(ctx, dout):
        (idx,) = ctx.saved_tensors
        V, D, pad, dtype = ctx.meta
        n = idx.shape[0]
        g = _util.same_dtype("dout", _util.tensor("dout", dout), dtype).reshape(n, D)
        dtable = _util.empty((V, D), dtype)
        _util.launch("embedding", "bwd", dtype, indices=idx, dout=g, dtable=dtable, num_embeddings=V, dim=D, n=n,
                     padding_idx=pad)
        return dtable, None, None


def embedding(indices, weight, padding_idx=None):
    return EmbeddingFunction.apply(weight, indices, padding_idx)


class Embedding(torch.nn.Module):
    """torch.nn.Embedding's semantics: weight ~ N(0, 1), the padding row
    zeroed and given no gradient."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = None if padding_idx is None else _padding(padding_idx, num_embeddings)
        self.weight = torch.nn.Parameter(torch.randn(num_embeddings, embedding_dim, dtype=dtype))
        if self.padding_idx is not None:
            with torch.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, indices):
        return EmbeddingFunction.apply(self.weight, indices, self.padding_idx)

    def extra_repr(self):
        return "%d, %d, padding_idx=%s" % (self.num_embeddings, self.embedding_dim, self.padding_idx)

"""Sparsemax along any dimension, forward and backward in one place
(specs/sparsemax.json):

    x [..., D, ...]  ->  y = max(x - tau, 0) along dim, tau such that y sums to 1 there
    backward, from y: dx = dy - mean(dy over y > 0) where y > 0, 0 elsewhere

The kernel works on rows of the last dimension: another dim is moved last
(a contiguous copy), and y and dx come back as views with it moved back,
as Liger's do.
"""
import torch

from . import _util


def _dim(dim, ndim):
    """dim as 0 .. ndim - 1"""
    if not -ndim <= dim < ndim:
        raise IndexError("dim=%d is out of range for x with %d dimensions" % (dim, ndim))
    return dim % ndim


class SparsemaxFunction(torch.autograd.Function):
    """Liger's LigerSparsemaxFunction: apply(x, dim)"""

    @staticmethod
    def forward(ctx, x, dim):
        xc = _util.tensor("x", x, min_ndim=1)
        _util.dtype_code("x", xc)
        d = _dim(dim, xc.dim())
        x_last = xc.transpose(d, -1).contiguous()  # x_last: [..., D] with D = x's size along dim
        y = _util.empty(tuple(x_last.shape), xc.dtype)
        rows, cols = _util.rows_cols(x_last)
        if y.numel():
            _util.launch("sparsemax", "fwd", xc.dtype, x=x_last, y=y, rows=rows, cols=cols)
        ctx.save_for_backward(y)
        ctx.dim = d
        return y.transpose(d, -1)

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        g = _util.same_dtype("dy", _util.tensor("dy", dy), y.dtype).transpose(ctx.dim, -1).contiguous()
        dx = _util.empty(tuple(y.shape), y.dtype)
        rows, cols = _util.rows_cols(y)
        if y.numel():
            _util.launch("sparsemax", "bwd", y.dtype, dy=g, y=y, dx=dx, rows=rows, cols=cols)
        return dx.transpose(ctx.dim, -1), None


def sparsemax(x, dim=-1):
    return SparsemaxFunction.apply(x, dim)


class Sparsemax(torch.nn.Module):
    """sparsemax along dim"""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return SparsemaxFunction.apply(x, self.dim)

    def extra_repr(self):
        return "dim=%d" % self.dim

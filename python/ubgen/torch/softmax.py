"""Softmax over the last dimension, forward and backward in one place
(specs/softmax.json):

    x [..., D]  ->  y [..., D] = exp(x - max) / sum exp(x - max) per row
    backward, from y: dx = y (dy - sum(dy y))
"""
import torch

from . import _util


class SoftmaxFunction(torch.autograd.Function):
    """Liger's LigerSoftmaxFunction: apply(x), over the last dimension"""

    @staticmethod
    def forward(ctx, x):
        xc = _util.tensor("x", x, min_ndim=1)
        _util.dtype_code("x", xc)
        y = _util.empty(tuple(xc.shape), xc.dtype)
        rows, cols = _util.rows_cols(xc)
        if xc.numel():
            _util.launch("softmax", "fwd", xc.dtype, x=xc, y=y, rows=rows, cols=cols)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        d = _util.same_dtype("dy", _util.tensor("dy", dy), y.dtype).reshape(y.shape)
        dx = _util.empty(tuple(y.shape), y.dtype)
        rows, cols = _util.rows_cols(y)
        if y.numel():
            _util.launch("softmax", "bwd", y.dtype, dy=d, y=y, dx=dx, rows=rows, cols=cols)
        return dx


def softmax(x):
    return SoftmaxFunction.apply(x)


class Softmax(torch.nn.Module):
    """softmax over the last dimension"""

    def forward(self, x):
        return SoftmaxFunction.apply(x)

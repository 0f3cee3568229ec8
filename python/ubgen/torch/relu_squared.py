"""Squared ReLU, forward and backward in one place (specs/relu_squared.json):

    x [...]  ->  y [...] = max(x, 0)^2;  backward dx = 2 dy max(x, 0)
"""
import torch

from . import _util


class ReLUSquaredFunction(torch.autograd.Function):
    """apply(x) -> max(x, 0)^2"""

    @staticmethod
    def forward(ctx, x):
        xc = _util.tensor("x", x)
        _util.dtype_code("x", xc)
        y = _util.empty(tuple(xc.shape), xc.dtype)
        rows, cols = _util.rows_cols(xc)
        if xc.numel():
            _util.launch("relu_squared", "fwd", xc.dtype, x=xc, y=y, rows=rows, cols=cols)
        ctx.save_for_backward(xc)
        return y

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return _backward(x, dy)


def _backward(x, dy):
    d = _util.same_dtype("dy", _util.tensor("dy", dy), x.dtype).reshape(x.shape)
    dx = _util.empty(tuple(x.shape), x.dtype)
    rows, cols = _util.rows_cols(x)
    if x.numel():
        _util.launch("relu_squared", "bwd", x.dtype, dy=d, x=x, dx=dx, rows=rows, cols=cols)
    return dx


def relu_squared(x):
    return ReLUSquaredFunction.apply(x)


class ReLUSquared(torch.nn.Module):
    def forward(self, x):
        return ReLUSquaredFunction.apply(x)

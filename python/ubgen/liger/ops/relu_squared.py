"""liger_kernel.ops.relu_squared"""
import torch

from ...torch.relu_squared import ReLUSquaredFunction, _backward


class LigerReLUSquaredFunction(torch.autograd.Function):
    """Liger's: apply(X) -> (Y, X), Y = max(X, 0)^2 and X itself (a view),
    as Liger's function returns them. A gradient reaching X through that
    second output is added to X's (Liger drops it)."""

    @staticmethod
    def forward(ctx, X):
        y = ReLUSquaredFunction.forward(ctx, X)
        return y, X.view_as(X)

    @staticmethod
    def backward(ctx, dY, dX_view):
        (x,) = ctx.saved_tensors
        dx = _backward(x, dY)
        return dx if dX_view is None else dx + dX_view.to(dx.dtype)


__all__ = ["LigerReLUSquaredFunction"]

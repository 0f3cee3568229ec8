"""PolyNorm, forward and backward in one place (specs/poly_norm.json):

    X [..., H], W [3], B (one element)  ->  Y [..., H];  rstd [rows, 3] f32 saved
    y = W[0] norm(x^3) + W[1] norm(x^2) + W[2] norm(x) + B,
    norm(u) = u / sqrt(mean(u^2) + eps) over the last dimension
    backward: dX [..., H], dW [3], dB (summed over every element, in double)
"""
import torch

from . import _util


def _params(X, W, B):
    """W and B checked (3 elements, 1 element), in X's dtype"""
    Wc = _util.same_dtype("W", _util.tensor("W", W, ndim=1), X.dtype)
    Bc = _util.same_dtype("B", _util.tensor("B", B), X.dtype).reshape(-1)
    if Wc.shape[0] != 3:
        raise ValueError("W has shape %s; PolyNorm's weight has 3 elements" % (tuple(W.shape),))
    if Bc.numel() != 1:
        raise ValueError("B has shape %s; PolyNorm's bias is one element" % (tuple(B.shape),))
    return Wc, Bc


class PolyNormFunction(torch.autograd.Function):
    """Liger's LigerPolyNormFunction: apply(X, W, B, eps=1e-6, in_place=True)"""

    @staticmethod
    def forward(ctx, X, W, B, eps=1e-6, in_place=True):
        Xc = _util.tensor("X", X, min_ndim=1)
        _util.dtype_code("X", Xc)
        Wc, Bc = _params(Xc, W, B)
        rows, cols = _util.rows_cols(Xc)
        Y = _util.empty(tuple(Xc.shape), Xc.dtype)
        rstd = _util.empty((rows, 3), torch.float32)
        if Xc.numel():
            _util.launch("poly_norm", "fwd", Xc.dtype, x=Xc, w=Wc, b=Bc, y=Y, rstd=rstd, rows=rows, cols=cols,
                         eps=_util.f32(eps))
        ctx.save_for_backward(Xc, Wc, rstd)
        ctx.meta = (W.shape, W.dtype, B.shape, B.dtype, bool(in_place))
        return Y

    @staticmethod
    def backward(ctx, dY):
        X, W, rstd = ctx.saved_tensors
        w_shape, w_dtype, b_shape, b_dtype, in_place = ctx.meta
        rows, cols = _util.rows_cols(X)
        dYc = _util.same_dtype("dY", _util.tensor("dY", dY), X.dtype)
        # dX overwrites dY's memory where no one else reads it: a copy made
        # here, or (in_place, Liger's default) a gradient autograd gives this
        # backward alone; Liger's writes over it always, as RMSNorm's does
        over_dY = dYc is not dY or (in_place and _util.private(dY))
        dY2 = dYc.reshape(X.shape)
        dX = dY2 if over_dY else _util.empty(tuple(X.shape), X.dtype)
        dW, dB = torch.zeros(3, dtype=X.dtype), torch.zeros(1, dtype=X.dtype)
        if X.numel():
            _util.launch("poly_norm", "bwd", X.dtype, dy=dY2, x=X, w=W, rstd=rstd, dx=dX, dw=dW, db=dB, rows=rows,
                         cols=cols)
        return dX, dW.view(w_shape).to(w_dtype), dB.view(b_shape).to(b_dtype), None, None


def poly_norm(X, W, B, eps=1e-6, in_place=True):
    return PolyNormFunction.apply(X, W, B, eps, in_place)


class PolyNorm(torch.nn.Module):
    """PolyNorm over the last dimension: weight (1/3, 1/3, 1/3), bias 1 (PolyCom's)"""

    def __init__(self, eps=1e-6, in_place=True, dtype=None):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((3,), 1.0 / 3.0, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.tensor(1.0, dtype=dtype))
        self.variance_epsilon, self.in_place = eps, in_place

    def forward(self, hidden_states):
        return PolyNormFunction.apply(hidden_states, self.weight, self.bias, self.variance_epsilon, self.in_place)

    def extra_repr(self):
        return "weight_shape=%s, eps=%s, in_place=%s" % (tuple(self.weight.shape), self.variance_epsilon,
                                                          self.in_place)

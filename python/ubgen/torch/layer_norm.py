"""LayerNorm, forward and backward in one place (specs/layer_norm.json):

    X [..., H], W [H], B [H]  ->  Y [..., H]
    Y = (X - mean) rstd W + B, mean and rstd per row in f32 (biased variance)
    backward: dX [..., H], dW [H], dB [H] (summed over the rows in f32, in a
    fixed order)
"""
import torch

from . import _util


class LayerNormFunction(torch.autograd.Function):
    """Liger's LigerLayerNormFunction: apply(X, W, B, eps)"""

    @staticmethod
    def forward(ctx, X, W, B, eps):
        x = _util.tensor("X", X, min_ndim=1)
        _util.dtype_code("X", x)
        rows, H = _util.rows_cols(x)
        w = _util.same_dtype("W", _util.tensor("W", W, ndim=1), x.dtype)
        b = _util.same_dtype("B", _util.tensor("B", B, ndim=1), x.dtype)
        if w.shape[0] != H or b.shape[0] != H:
            raise ValueError("W has shape %s and B %s; X's last dimension is %d" % (tuple(w.shape), tuple(b.shape), H))
        y = _util.empty(tuple(x.shape), x.dtype)
        mean, rstd = torch.empty(rows), torch.empty(rows)
        if x.numel():
            _util.launch("layer_norm", "fwd", x.dtype, x=x, w=w, b=b, y=y, mean=mean, rstd=rstd, rows=rows, cols=H,
                         eps=float(eps))
        ctx.save_for_backward(x, w, mean, rstd)
        ctx.meta = (X.shape, W.dtype, B.dtype)
        return y.view(X.shape)

    @staticmethod
    def backward(ctx, dY):
        x, w, mean, rstd = ctx.saved_tensors
        shape, w_dtype, b_dtype = ctx.meta
        rows, H = _util.rows_cols(x)
        dy = _util.same_dtype("dY", _util.tensor("dY", dY), x.dtype).reshape(x.shape)
        dx = _util.empty(tuple(x.shape), x.dtype)
        dw, db = torch.zeros(H, dtype=x.dtype), torch.zeros(H, dtype=x.dtype)
        if x.numel():
            _util.launch("layer_norm", "bwd", x.dtype, dy=dy, x=x, w=w, mean=mean, rstd=rstd, dx=dx, dw=dw, db=db,
                         rows=rows, cols=H)
        return dx.view(shape), dw.to(w_dtype), db.to(b_dtype), None


def layer_norm(X, W, B, eps=1e-6):
    return LayerNormFunction.apply(X, W, B, eps)


class LayerNorm(torch.nn.Module):
    """torch.nn.LayerNorm over the last dimension: weight ones, bias zeros"""

    def __init__(self, hidden_size, eps=1e-6, dtype=None):
        super().__init__()
        self.hidden_size, self.eps = hidden_size, eps
        self.weight = torch.nn.Parameter(torch.ones(hidden_size, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.zeros(hidden_size, dtype=dtype))

    def forward(self, x):
        return LayerNormFunction.apply(x, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "%d, eps=%s" % (self.hidden_size, self.eps)

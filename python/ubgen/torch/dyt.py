"""DyT (dynamic tanh), forward and backward in one place (specs/dyt.json):

    x [..., H], alpha [1], gamma [H], beta [H] or None  ->  y [..., H]
    y = gamma tanh(alpha x) + beta
    backward: dx [..., H], dalpha [1], dgamma [H], dbeta [H] (summed over
    the rows in f32, in a fixed order)
"""
import torch

from . import _util


def _params(x, alpha, gamma, beta):
    """alpha, gamma and beta checked against x [..., H], in x's dtype"""
    H = x.shape[-1]
    a = _util.same_dtype("alpha", _util.tensor("alpha", alpha), x.dtype).reshape(-1)
    g = _util.same_dtype("gamma", _util.tensor("gamma", gamma, ndim=1), x.dtype)
    b = None if beta is None else _util.same_dtype("beta", _util.tensor("beta", beta, ndim=1), x.dtype)
    if a.numel() != 1:
        raise ValueError("alpha has shape %s; one element is needed" % (tuple(alpha.shape),))
    if g.shape[0] != H or (b is not None and b.shape[0] != H):
        raise ValueError("gamma has shape %s and beta %s; x's last dimension is %d"
                         % (tuple(g.shape), None if b is None else tuple(b.shape), H))
    return a, g, b


class DyTFunction(torch.autograd.Function):
    """Liger's LigerDyTFunction: apply(x, alpha, gamma, beta), beta None for none"""

    @staticmethod
    def forward(ctx, x, alpha, gamma, beta):
        xc = _util.tensor("x", x, min_ndim=1)
        _util.dtype_code("x", xc)
        a, g, b = _params(xc, alpha, gamma, beta)
        rows, H = _util.rows_cols(xc)
        y = _util.empty(tuple(xc.shape), xc.dtype)
        if xc.numel():
            _util.launch("dyt", "fwd", xc.dtype, x=xc, alpha=a, gamma=g, beta=b, y=y, rows=rows, cols=H)
        ctx.save_for_backward(xc, a, g)
        ctx.meta = (x.shape, alpha.shape, alpha.dtype, gamma.dtype, None if beta is None else beta.dtype)
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        x, a, g = ctx.saved_tensors
        shape, a_shape, a_dtype, g_dtype, b_dtype = ctx.meta
        rows, H = _util.rows_cols(x)
        d = _util.same_dtype("dy", _util.tensor("dy", dy), x.dtype).reshape(x.shape)
        dx = _util.empty(tuple(x.shape), x.dtype)
        da, dg = torch.zeros(1, dtype=x.dtype), torch.zeros(H, dtype=x.dtype)
        db = None if b_dtype is None else torch.zeros(H, dtype=x.dtype)
        if x.numel():
            _util.launch("dyt", "bwd", x.dtype, dy=d, x=x, alpha=a, gamma=g, dx=dx, dalpha=da, dgamma=dg, dbeta=db,
                         rows=rows, cols=H)
        return dx.view(shape), da.view(a_shape).to(a_dtype), dg.to(g_dtype), None if db is None else db.to(b_dtype)


def dyt(x, alpha, gamma, beta=None):
    return DyTFunction.apply(x, alpha, gamma, beta)


class DyT(torch.nn.Module):
    """DyT over the last dimension: alpha init_alpha, gamma ones, beta zeros (or none)"""

    def __init__(self, hidden_size, beta=True, init_alpha=0.5, dtype=None):
        super().__init__()
        self.hidden_size, self.init_alpha = hidden_size, init_alpha
        self.alpha = torch.nn.Parameter(torch.ones(1, dtype=dtype) * init_alpha)
        self.gamma = torch.nn.Parameter(torch.ones(hidden_size, dtype=dtype))
        self.beta = torch.nn.Parameter(torch.zeros(hidden_size, dtype=dtype)) if beta else None

    def forward(self, x):
        return DyTFunction.apply(x, self.alpha, self.gamma, self.beta)

    def extra_repr(self):
        return "%d, init_alpha=%s, beta=%s" % (self.hidden_size, self.init_alpha, self.beta is not None)

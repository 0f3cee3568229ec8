"""GroupNorm, forward and backward in one place (specs/group_norm.json):

    X [B, C, *], W [C], B [C]  ->  Y [B, C, *]
    each (batch, group) row of C / G channels x prod(*) elements normalized:
    Y = (X - mean) rstd W[c] + B[c], mean and rstd [B, G] in f32 (biased
    variance)
    backward: dX [B, C, *], dW [C], dB [C] (summed over the batch and the
    channel's elements in double, in a fixed order)
"""
import torch

from . import _util


class GroupNormFunction(torch.autograd.Function):
    """Liger's LigerGroupNormFunction: apply(X, W, B, num_channels, num_groups, eps)"""

    @staticmethod
    def forward(ctx, X, affine_scaling_weight, affine_shifting_bias, num_channels, num_groups, eps):
        x = _util.tensor("X", X, min_ndim=2)
        _util.dtype_code("X", x)
        batch, C = x.shape[0], x.shape[1]
        if C != num_channels:
            raise ValueError("X has shape %s; num_channels = %d are needed in its dimension 1"
                             % (tuple(x.shape), num_channels))
        if num_groups < 1 or C % num_groups:
            raise ValueError("num_groups = %d does not split num_channels = %d into equal groups" % (num_groups, C))
        w = _util.same_dtype("W", _util.tensor("affine_scaling_weight", affine_scaling_weight, ndim=1), x.dtype)
        b = _util.same_dtype("B", _util.tensor("affine_shifting_bias", affine_shifting_bias, ndim=1), x.dtype)
        if w.shape[0] != C or b.shape[0] != C:
            raise ValueError("affine_scaling_weight has shape %s and affine_shifting_bias %s; X has %d channels"
                             % (tuple(w.shape), tuple(b.shape), C))
        cols = x.numel() // batch // num_groups if batch else 0  # a group's row: its channels' elements
        y = _util.empty(tuple(x.shape), x.dtype)
        mean, rstd = torch.empty(batch, num_groups), torch.empty(batch, num_groups)
        if x.numel():
            _util.launch("group_norm", "fwd", x.dtype, x=x, w=w, b=b, y=y, mean=mean, rstd=rstd, batch=batch,
                         channels=C, groups=num_groups, cols=cols, eps=float(eps))
        ctx.save_for_backward(x, w, mean, rstd)
        ctx.meta = (X.shape, affine_scaling_weight.dtype, affine_shifting_bias.dtype, num_groups, cols)
        return y.view(X.shape)

    @staticmethod
    def backward(ctx, dY):
        x, w, mean, rstd = ctx.saved_tensors
        shape, w_dtype, b_dtype, groups, cols = ctx.meta
        C = x.shape[1]
        dy = _util.same_dtype("dY", _util.tensor("dY", dY), x.dtype).reshape(x.shape)
        dx = _util.empty(tuple(x.shape), x.dtype)
        dw, db = torch.zeros(C, dtype=x.dtype), torch.zeros(C, dtype=x.dtype)
        if x.numel():
            _util.launch("group_norm", "bwd", x.dtype, dy=dy, x=x, w=w, mean=mean, rstd=rstd, dx=dx, dw=dw, db=db,
                         batch=x.shape[0], channels=C, groups=groups, cols=cols)
        return dx.view(shape), dw.to(w_dtype), db.to(b_dtype), None, None, None


def group_norm(X, W, B, num_channels, num_groups, eps=1e-6):
    return GroupNormFunction.apply(X, W, B, num_channels, num_groups, eps)


class GroupNorm(torch.nn.Module):
    """torch.nn.GroupNorm over X [B, C, *]: weight ones, bias zeros"""

    def __init__(self, num_channels, num_groups, eps=1e-6, dtype=None):
        super().__init__()
        self.num_channels, self.num_groups, self.eps = num_channels, num_groups, eps
        self.weight = torch.nn.Parameter(torch.ones(num_channels, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.zeros(num_channels, dtype=dtype))

    def forward(self, x):
        return GroupNormFunction.apply(x, self.weight, self.bias, self.num_channels, self.num_groups, self.eps)

    def extra_repr(self):
        return "num_channels=%d, num_groups=%d, eps=%s" % (self.num_channels, self.num_groups, self.eps)

"""RMSNorm (LigerRMSNorm's semantics), forward and backward in one place.

    X [..., H], W [H] or None  ->  Y [..., H];  rstd [rows] f32 saved
    y = x * rstd * (offset + w), with the rounding of casting_mode
    ("llama", "gemma", "none"; docs/semantics.md)
"""
import torch

from . import _util

CASTINGS = {"llama": 0, "gemma": 1, "none": 2}  # the spec's casting values


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, W, eps=1e-6, offset=0.0, casting_mode="llama", in_place=True, row_mode=None):
        X2 = _util.tensor("X", X, min_ndim=1)
        _util.dtype_code("X", X2)
        H = X2.shape[-1]
        if X2.dim() != 2:  # X2 as it is when it is rows x H: a view costs a microsecond a call
            X2 = X2.view(-1, H)
        Wc = None
        if W is not None:
            Wc = _util.same_dtype("W", _util.tensor("W", W, ndim=1), X2.dtype)
            if Wc.shape[0] != H:
                raise ValueError("W has shape %s, but X's last dimension is %d" % (tuple(W.shape), H))
        casting = _util.choice("casting_mode", casting_mode, CASTINGS)
        rows = X2.shape[0]
        Y = _util.empty_like(X2)
        rstd = _util.empty((rows,), torch.float32)
        offset = _util.f32(offset)
        _util.launch("rms_norm", "fwd", X2.dtype, x=X2, w=Wc, y=Y, rstd=rstd, rows=rows, cols=H, eps=_util.f32(eps),
                     offset=offset, casting=casting)
        ctx.save_for_backward(X2, Wc, rstd)
        ctx.meta = (X.shape, offset, casting, bool(in_place), W.dtype if W is not None else None)
        return Y.view_as(X)  # view(X.shape), in a third of the time

    @staticmethod
    def backward(ctx, dY):
        X2, Wc, rstd = ctx.saved_tensors
        shape, offset, casting, in_place, w_dtype = ctx.meta
        rows, H = X2.shape
        dYc = _util.same_dtype("dY", _util.tensor("dY", dY), X2.dtype)
        # dX overwrites dY's memory where no one else reads it: a copy made
        # here, or (in_place, Liger's default, to save memory) a gradient
        # autograd gives this backward alone; Liger's writes over it always,
        # which is wrong where dY reaches several consumers
        over_dY = dYc is not dY or (in_place and _util.private(dY))
        dY2 = dYc.reshape(rows, H)
        dX = dY2 if over_dY else _util.empty_like(dY2)
        dW = _util.empty((H,), X2.dtype) if Wc is not None else None
        _util.launch("rms_norm", "bwd", X2.dtype, dy=dY2, x=X2, w=Wc, rstd=rstd, dx=dX, dw=dW, rows=rows, cols=H,
                     offset=offset, casting=casting)
        if dW is not None and dW.dtype != w_dtype:
            dW = dW.to(w_dtype)
        return dX.view(shape), dW, None, None, None, None, None


def rms_norm(X, W, eps=1e-6, offset=0.0, casting_mode="llama", in_place=True):
    return RMSNormFunction.apply(X, W, eps, offset, casting_mode, in_place)


class RMSNorm(torch.nn.Module):
    def __init__(self, hidden_size, eps=1e-6, offset=0.0, casting_mode="llama", init_fn="ones", in_place=True,
                 elementwise_affine=True, dtype=None):
        super().__init__()
        if init_fn not in ("ones", "zeros"):
            raise ValueError("init_fn=%r is not 'ones' or 'zeros'" % (init_fn,))
        _util.choice("casting_mode", casting_mode, CASTINGS)
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            fill = torch.ones if init_fn == "ones" else torch.zeros
            self.weight = torch.nn.Parameter(fill(hidden_size, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.variance_epsilon, self.offset, self.casting_mode, self.in_place = eps, offset, casting_mode, in_place

    def forward(self, hidden_states):
        return RMSNormFunction.apply(hidden_states, self.weight, self.variance_epsilon, self.offset,
                                     self.casting_mode, self.in_place)

    def extra_repr(self):
        shape = tuple(self.weight.shape) if self.weight is not None else None
        return "weight_shape=%s, eps=%s, offset=%s, in_place=%s" % (shape, self.variance_epsilon, self.offset,
                                                                   self.in_place)

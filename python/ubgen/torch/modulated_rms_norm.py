"""Modulated RMSNorm (LigerModulatedRMSNorm's semantics), forward and
backward in one place (specs/modulated_rms_norm.json):

    X [..., H], W [H] or None, scale [..., H], shift (scale's size) or None  ->  Y [..., H]
    y = (1 + scale) * RMSNorm(x) + shift, RMSNorm with rms_norm's offset and
    casting_mode ("llama", "gemma", "none"; docs/semantics.md)
    scale holds mod_rows = scale.numel() / H rows, each serving rows / mod_rows
    consecutive rows of X (Liger's broadcast: [H] or [1, H] every row, [B, H]
    the rows of batch b of X [B, T, H], X's shape one row each); shift the same
    backward: dX, dW [H], dscale and dshift (scale's and shift's shapes),
    summed over the rows each of their rows serves, in f32, in a fixed order
"""
import torch

from . import _util
from .rms_norm import CASTINGS, RMSNorm


def _mod_rows(rows, H, scale, shift):
    """the rows of scale (and shift), checked against X's rows x H"""
    n = scale.numel()
    if H == 0 or n == 0 or n % H:
        raise ValueError("scale has shape %s; its element count must be a positive multiple of X's last dimension %d"
                         % (tuple(scale.shape), H))
    mod_rows = n // H
    if rows % mod_rows:
        raise ValueError("scale has %d rows of %d (shape %s), which do not divide X's %d rows"
                         % (mod_rows, H, tuple(scale.shape), rows))
    if shift is not None and shift.numel() != n:
        raise ValueError("shift has shape %s and scale %s; shift must broadcast as scale does"
                         % (tuple(shift.shape), tuple(scale.shape)))
    return mod_rows


class ModulatedRMSNormFunction(torch.autograd.Function):
    """Liger's LigerModulatedRMSNormFunction: apply(X, W, scale, shift, eps,
    offset, casting_mode, in_place); W and shift may be None"""

    @staticmethod
    def forward(ctx, X, W, scale, shift, eps, offset=0.0, casting_mode="llama", in_place=True):
        X2 = _util.tensor("X", X, min_ndim=1)
        _util.dtype_code("X", X2)
        H = X2.shape[-1]
        X2 = X2.reshape(-1, H)
        rows = X2.shape[0]
        Wc = None
        if W is not None:
            Wc = _util.same_dtype("W", _util.tensor("W", W, ndim=1), X2.dtype)
            if Wc.shape[0] != H:
                raise ValueError("W has shape %s, but X's last dimension is %d" % (tuple(W.shape), H))
        # scale and shift in X's dtype: the library takes one dtype per call
        S = _util.same_dtype("scale", _util.tensor("scale", scale), X2.dtype)
        Sh = None if shift is None else _util.same_dtype("shift", _util.tensor("shift", shift), X2.dtype)
        mod_rows = _mod_rows(rows, H, S, Sh)
        casting = _util.choice("casting_mode", casting_mode, CASTINGS)
        Y = _util.empty_like(X2)
        rstd = _util.empty((rows,), torch.float32)
        offset = _util.f32(offset)
        S = S.reshape(mod_rows, H)
        _util.launch("modulated_rms_norm", "fwd", X2.dtype, x=X2, w=Wc, scale=S,
                     shift=None if Sh is None else Sh.reshape(mod_rows, H), y=Y, rstd=rstd, rows=rows, cols=H,
                     mod_rows=mod_rows, eps=_util.f32(eps), offset=offset, casting=casting)
        ctx.save_for_backward(X2, Wc, S, rstd)
        ctx.meta = (X.shape, offset, casting, bool(in_place), None if W is None else W.dtype, scale.shape,
                    scale.dtype, None if shift is None else (shift.shape, shift.dtype))
        return Y.view(X.shape)

    @staticmethod
    def backward(ctx, dY):
        X2, Wc, S, rstd = ctx.saved_tensors
        shape, offset, casting, in_place, w_dtype, s_shape, s_dtype, shift_meta = ctx.meta
        rows, H = X2.shape
        mod_rows = S.shape[0]
        dYc = _util.same_dtype("dY", _util.tensor("dY", dY), X2.dtype)
        # dX over dY's memory where no one else reads it, as RMSNormFunction does
        over_dY = dYc is not dY or (in_place and _util.private(dY))
        dY2 = dYc.reshape(rows, H)
        dX = dY2 if over_dY else _util.empty_like(dY2)
        dW = None if Wc is None else _util.empty((H,), X2.dtype)
        dS = _util.empty((mod_rows, H), X2.dtype)
        dSh = None if shift_meta is None else _util.empty((mod_rows, H), X2.dtype)
        _util.launch("modulated_rms_norm", "bwd", X2.dtype, dy=dY2, x=X2, w=Wc, scale=S, rstd=rstd, dx=dX, dw=dW,
                     dscale=dS, dshift=dSh, rows=rows, cols=H, mod_rows=mod_rows, offset=offset, casting=casting)
        if dW is not None:
            dW = dW.to(w_dtype)
        dS = dS.view(s_shape).to(s_dtype)
        if dSh is not None:
            dSh = dSh.view(shift_meta[0]).to(shift_meta[1])
        return dX.view(shape), dW, dS, dSh, None, None, None, None


def modulated_rms_norm(X, W, scale, shift=None, eps=1e-6, offset=0.0, casting_mode="llama", in_place=True):
    return ModulatedRMSNormFunction.apply(X, W, scale, shift, eps, offset, casting_mode, in_place)


class ModulatedRMSNorm(RMSNorm):
    """y = (1 + scale) * RMSNorm(x) + shift; forward(hidden_states, scale, shift=None); RMSNorm's parameters"""

    def forward(self, hidden_states, scale, shift=None):
        return ModulatedRMSNormFunction.apply(hidden_states, self.weight, scale, shift, self.variance_epsilon,
                                              self.offset, self.casting_mode, self.in_place)

    def extra_repr(self):
        shape = tuple(self.weight.shape) if self.weight is not None else None
        return "weight_shape=%s, eps=%s, offset=%s, casting_mode=%s, in_place=%s" % (
            shape, self.variance_epsilon, self.offset, self.casting_mode, self.in_place)

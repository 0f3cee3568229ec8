"""Residual add then RMSNorm (Liger's LigerFusedAddRMSNormFunction),
forward and backward in one place (specs/fused_add_rms_norm.json):

    X, R [..., H], W [H]  ->  Y [..., H], S [..., H];  rstd [rows] f32 saved
    S = X + R (in the dtype: the residual stream), Y = RMSNorm(S) with
    offset + W and the rounding of casting_mode ("llama", "gemma", "none")
    backward: dX = dR = RMSNorm's dX + dS, dW summed over the rows in f32
"""
import torch

from . import _util
from .rms_norm import CASTINGS


class FusedAddRMSNormFunction(torch.autograd.Function):
    """Liger's LigerFusedAddRMSNormFunction: apply(X, R, W, eps, offset,
    casting_mode, in_place) -> (Y, S)"""

    @staticmethod
    def forward(ctx, X, R, W, eps, offset=0.0, casting_mode="llama", in_place=False):
        Xc = _util.tensor("X", X, min_ndim=1)
        _util.dtype_code("X", Xc)
        Rc = _util.same_dtype("R", _util.tensor("R", R), Xc.dtype)
        if Rc.shape != Xc.shape:
            raise ValueError("R has shape %s, but X has %s" % (tuple(R.shape), tuple(X.shape)))
        Wc = _util.same_dtype("W", _util.tensor("W", W, ndim=1), Xc.dtype)
        rows, H = _util.rows_cols(Xc)
        if Wc.shape[0] != H:
            raise ValueError("W has shape %s, but X's last dimension is %d" % (tuple(W.shape), H))
        casting = _util.choice("casting_mode", casting_mode, CASTINGS)
        offset = _util.f32(offset)
        Y, S = _util.empty(tuple(Xc.shape), Xc.dtype), _util.empty(tuple(Xc.shape), Xc.dtype)
        rstd = _util.empty((rows,), torch.float32)
        _util.launch("fused_add_rms_norm", "fwd", Xc.dtype, x=Xc, residual=Rc, w=Wc, y=Y, s=S, rstd=rstd, rows=rows,
                     cols=H, eps=_util.f32(eps), offset=offset, casting=casting)
        ctx.save_for_backward(S, Wc, rstd)
        # leaves both: autograd would clone a dX given to both (AccumulateGrad steals only an unshared gradient)
        leaves = X.is_leaf and R.is_leaf and X.requires_grad and R.requires_grad
        ctx.meta = (offset, casting, bool(in_place), W.dtype, leaves)
        ctx.set_materialize_grads(False)  # an unused S gives dS None, which the kernel skips (no zeros read)
        return Y, S

    @staticmethod
    def backward(ctx, dY, dS):
        S, Wc, rstd = ctx.saved_tensors
        offset, casting, in_place, w_dtype, leaves = ctx.meta
        rows, H = _util.rows_cols(S)
        if dY is None:  # only S was used
            dY = torch.zeros(S.shape, dtype=S.dtype)
        dYc = _util.same_dtype("dY", _util.tensor("dY", dY), S.dtype)
        dSc = None if dS is None else _util.same_dtype("dS", _util.tensor("dS", dS), S.dtype)
        # dX over dY's memory where no one else reads it (as RMSNormFunction's):
        # a copy made here, or with in_place a gradient autograd gives this backward alone
        over_dY = dYc is not dY or (in_place and _util.private(dY))
        dX = dYc if over_dY else _util.empty(tuple(S.shape), S.dtype)
        dW = _util.empty((H,), S.dtype)
        _util.launch("fused_add_rms_norm", "bwd", S.dtype, dy=dYc, ds=dSc, s=S, w=Wc, rstd=rstd, dx=dX, dw=dW,
                     rows=rows, cols=H, offset=offset, casting=casting)
        if dW.dtype != w_dtype:
            dW = dW.to(w_dtype)
        # dR is dX, as Liger's; for two leaves a copy in the pool's pages, where autograd's clone
        # would take fresh ones (page faults above 32 MiB: most of a step's time)
        dR = _util.empty(tuple(S.shape), S.dtype).copy_(dX) if leaves else dX
        return dX, dR, dW, None, None, None, None


def fused_add_rms_norm(X, R, W, eps=1e-6, offset=0.0, casting_mode="llama", in_place=False):
    return FusedAddRMSNormFunction.apply(X, R, W, eps, offset, casting_mode, in_place)


class FusedAddRMSNorm(torch.nn.Module):
    """forward(hidden_states, residual) -> (RMSNorm(hidden_states + residual), hidden_states + residual)"""

    def __init__(self, hidden_size, eps=1e-6, offset=0.0, casting_mode="llama", init_fn="ones", in_place=False,
                 dtype=None):
        super().__init__()
        if init_fn not in ("ones", "zeros"):
            raise ValueError("init_fn=%r is not 'ones' or 'zeros'" % (init_fn,))
        _util.choice("casting_mode", casting_mode, CASTINGS)
        fill = torch.ones if init_fn == "ones" else torch.zeros
        self.weight = torch.nn.Parameter(fill(hidden_size, dtype=dtype))
        self.variance_epsilon, self.offset, self.casting_mode, self.in_place = eps, offset, casting_mode, in_place

    def forward(self, hidden_states, residual):
        return FusedAddRMSNormFunction.apply(hidden_states, residual, self.weight, self.variance_epsilon, self.offset,
                                             self.casting_mode, self.in_place)

    def extra_repr(self):
        return "%s, eps=%s, offset=%s, in_place=%s" % (tuple(self.weight.shape), self.variance_epsilon, self.offset,
                                                      self.in_place)

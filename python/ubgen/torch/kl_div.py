"""KL divergence, forward and backward in one place (specs/kl_div.json):

    y_pred [BT, V] log-probabilities, y_true [BT, V] probabilities
    (log-probabilities with log_target)
    l = y_true (log max(y_true, eps) - y_pred), or e^y_true (y_true - y_pred)
    -> loss f32 (Liger's for every dtype): l [BT, V] for "none", else []
       = sum l / (1 "sum", BT V "mean", BT "batchmean"), summed in double
    backward: dy_pred = -(y_true or e^y_true) grad_output / that divisor

y_pred and y_true take torch's promoted dtype, as torch's kl_div does
(Liger's test gives an f32 y_true with a bf16 y_pred); the gradient is
y_pred's dtype, and y_true gets none (Liger's).
"""
import torch

from . import _util

REDUCTIONS = _util.REDUCTIONS
NONE = REDUCTIONS["none"]


def _divisor(red, rows, cols):
    return {REDUCTIONS["sum"]: 1, REDUCTIONS["mean"]: rows * cols, REDUCTIONS["batchmean"]: rows}[red]


class KLDivLossFunction(torch.autograd.Function):
    """Liger's LigerKLDivLossFunction: apply(y_pred, y_true, reduction, log_target, eps)"""

    @staticmethod
    def forward(ctx, y_pred, y_true, reduction="batchmean", log_target=False, eps=1e-10):
        red = _util.choice("reduction", reduction, REDUCTIONS)
        p = _util.tensor("y_pred", y_pred, ndim=2)
        t = _util.tensor("y_true", y_true, ndim=2)
        if t.shape != p.shape:
            raise ValueError("y_true has shape %s, but y_pred has %s" % (tuple(t.shape), tuple(p.shape)))
        dtype = torch.promote_types(p.dtype, t.dtype)
        p, t = _util.same_dtype("y_pred", p, dtype), _util.same_dtype("y_true", t, dtype)
        _util.dtype_code("y_pred", p)
        rows, cols = p.shape
        loss = _util.empty((rows, cols) if red == NONE else (1,), torch.float32)
        if cols:
            _util.launch("kl_div", "fwd", dtype, y_pred=p, y_true=t, loss=loss, rows=rows, cols=cols, reduction=red,
                         log_target=1 if log_target else 0, eps=_util.f32(eps))
        elif red != NONE:  # a sum of nothing: 0, divided as torch's (0 / 0 is NaN)
            loss.fill_(0.0).div_(_divisor(red, rows, cols))
        ctx.save_for_backward(t)
        ctx.red, ctx.log_target, ctx.pred_dtype = red, log_target, y_pred.dtype
        return loss if red == NONE else loss.view(())

    @staticmethod
    def backward(ctx, grad_output):
        (t,) = ctx.saved_tensors
        rows, cols = t.shape
        g = grad_output.detach().to(torch.float32).contiguous()
        g = g.reshape(t.shape if ctx.red == NONE else (1,))
        dy = _util.empty(tuple(t.shape), t.dtype)
        if cols:
            _util.launch("kl_div", "bwd", t.dtype, y_true=t, grad_output=g, dy_pred=dy, rows=rows, cols=cols,
                         reduction=ctx.red, log_target=1 if ctx.log_target else 0)
        return dy.to(ctx.pred_dtype), None, None, None, None


def kl_div(y_pred, y_true, reduction="batchmean", log_target=False, eps=1e-10):
    return KLDivLossFunction.apply(y_pred, y_true, reduction, log_target, eps)


class KLDivLoss(torch.nn.KLDivLoss):
    """torch's nn.KLDivLoss (its arguments, its default reduction "mean")
    with eps, computed by KLDivLossFunction"""

    def __init__(self, eps=1e-10, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _util.choice("reduction", self.reduction, REDUCTIONS)
        self.eps = eps

    def forward(self, y_pred, y_true):
        return KLDivLossFunction.apply(y_pred, y_true, self.reduction, self.log_target, self.eps)

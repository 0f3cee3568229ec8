"""Cross entropy: fused with the linear layer before it (FLCE, never holding
the BT x V logits) and on given logits, with Liger's options.

    FLCE: x [BT, H], weight [V, H], target [BT] (bias [V], ce_weight [V])
    CE:   logits [BT, V], target [BT] (ce_weight [V])
    -> loss (f32: [] for "mean" and "sum", [BT] for "none"), z_loss,
       token_accuracy, predicted_tokens (argmax, -1 on ignored rows)

The gradients are computed in the forward pass, as Liger does (the logits
are gone by the backward), and scaled by grad_output in the backward. FLCE
with reduction "none" is the exception: a per-row grad_output must enter
each row's logits gradient before dweight sums over rows, so its backward
runs the op again with grad_output (docs/python.md).
"""
import torch

from .. import _lib
from . import _util

REDUCTIONS = {k: v for k, v in _util.REDUCTIONS.items() if k != "batchmean"}  # the spec's reduction values
NONE = REDUCTIONS["none"]


def _options(dtype, ignore_index, lse_square_scale, label_smoothing, reduction, softcap, ce_weight, bias,
             use_token_scaling, vocab):
    """the options as the spec's arguments (floats rounded to float32, as
    the kernels take them)"""
    if softcap is not None and not _util.f32(softcap) > 0:
        raise ValueError("softcap=%r must be None or a positive number" % (softcap,))
    o = dict(ignore_index=int(ignore_index), lse_square_scale=_util.f32(lse_square_scale),
             label_smoothing=_util.f32(label_smoothing), reduction=_util.choice("reduction", reduction, REDUCTIONS),
             softcap=0.0 if softcap is None else _util.f32(softcap), token_scaling=1 if use_token_scaling else 0)
    if ce_weight is not None:
        cw = _util.tensor("ce_weight", ce_weight, ndim=1)
        if not torch.is_floating_point(cw):
            raise TypeError("ce_weight has dtype %s; a floating point tensor is needed" % (cw.dtype,))
        if cw.shape[0] != vocab:
            raise ValueError("ce_weight has shape %s, but there are %d classes" % (tuple(cw.shape), vocab))
        o["ce_weight"] = cw.to(torch.float32).contiguous()  # the library's class weights are f32 for every dtype
    if bias is not None:
        b = _util.same_dtype("bias", _util.tensor("bias", bias, ndim=1), dtype).contiguous()
        if b.shape[0] != vocab:
            raise ValueError("bias has shape %s, but there are %d classes" % (tuple(b.shape), vocab))
        o["bias"] = b
    return o


def _flags(return_z_loss, return_token_accuracy, return_predicted_tokens):
    for name, v in (("return_z_loss", return_z_loss), ("return_token_accuracy", return_token_accuracy),
                    ("return_predicted_tokens", return_predicted_tokens)):
        if not isinstance(v, bool):
            raise TypeError("%s must be True or False, got %r" % (name, v))


def _per_row_outputs(reduction, bt, return_z_loss, return_token_accuracy):
    n = bt if reduction == NONE else 1
    loss = _util.empty((n,), torch.float32)
    z = _util.empty((n,), torch.float32) if return_z_loss else None
    acc = _util.empty((n,), torch.float32) if return_token_accuracy else None
    return loss, z, acc


def _shape_loss(t, reduction):
    return t if t is None or reduction == NONE else t.view(())


def _target(target, bt):
    t = _util.indices("target", target).view(-1)
    if t.shape[0] != bt:
        raise ValueError("target has %d elements, but the input has %d rows" % (t.shape[0], bt))
    return t


def _flce_call(x, w, t, opts, want, grad_rows=None):
    """one run of flce.chunk; want: which of dx, dweight, dbias to compute"""
    bt, H = x.shape
    V = w.shape[0]
    dx = _util.empty_like(x) if want["dx"] else None
    dw = _util.empty_like(w) if want["dw"] else None
    db = _util.empty((V,), x.dtype) if want["db"] else None
    _util.launch("flce", "chunk", x.dtype, x=x, weight=w, target=t, grad_output=grad_rows, loss=want["loss"],
                 z_loss=want["z"], argmax=want["am"], token_accuracy=want["acc"], dx=dx, dweight=dw, dbias=db, bt=bt,
                 hidden=H, vocab=V, **opts)
    return dx, dw, db


def _accum_dtype(accum_dtype, dtype):
    """where dweight and dbias are summed over the chunks, as Liger's
    accum_dtype: None is the input's dtype (Liger's default), else
    torch.float32 or that dtype"""
    if accum_dtype is None:
        accum_dtype = dtype
    if accum_dtype not in (torch.float32, dtype):
        raise ValueError("accum_dtype=%s: the sums are kept in torch.float32 or in the input's dtype %s"
                         % (accum_dtype, dtype))
    return _lib.dtype_code(accum_dtype)


class FusedLinearCrossEntropyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, _input, weight, target, bias=None, ce_weight=None, ignore_index=-100, lse_square_scale=0.0,
                label_smoothing=0.0, reduction="mean", softcap=None, return_z_loss=False, accum_dtype=None,
                use_token_scaling=False, return_token_accuracy=False, return_predicted_tokens=False):
        _flags(return_z_loss, return_token_accuracy, return_predicted_tokens)
        x = _util.tensor("_input", _input, ndim=2)
        _util.dtype_code("_input", x)
        w = _util.same_dtype("weight", _util.tensor("weight", weight, ndim=2), x.dtype)
        if w.shape[1] != x.shape[1]:
            raise ValueError("weight has shape %s, but _input has %d columns" % (tuple(w.shape), x.shape[1]))
        bt = x.shape[0]
        t = _target(target, bt)
        opts = _options(x.dtype, ignore_index, lse_square_scale, label_smoothing, reduction, softcap, ce_weight, bias,
                        use_token_scaling, w.shape[0])
        opts["accum_dtype"] = _accum_dtype(accum_dtype, x.dtype)
        red = opts["reduction"]
        loss, z, acc = _per_row_outputs(red, bt, return_z_loss, return_token_accuracy)
        am = _util.empty((bt,), torch.int64) if return_predicted_tokens else None
        grads = dict(dx=_input.requires_grad, dw=weight.requires_grad,
                     db=bias is not None and bias.requires_grad)
        # "none": grad_output is per row and must enter before the sums over rows
        defer = red == NONE and any(grads.values())
        want = dict(loss=loss, z=z, acc=acc, am=am, **({k: False for k in grads} if defer else grads))
        dx, dw, db = _flce_call(x, w, t, opts, want)
        if defer:
            ctx.save_for_backward(x, w, t)
            ctx.opts = opts  # holds the f32 ce_weight and the bias the call took
        else:
            ctx.save_for_backward(dx, dw, db)
        ctx.defer, ctx.grads = defer, grads
        ctx.dtypes = (_input.dtype, weight.dtype, bias.dtype if bias is not None else None)
        if z is not None:
            z = z.to(_input.dtype)  # Liger keeps the z-loss in the input's dtype
        outs = (_shape_loss(loss, red), _shape_loss(z, red), _shape_loss(acc, red), am)
        ctx.mark_non_differentiable(*[o for o in outs[1:] if o is not None])
        return outs

    @staticmethod
    def backward(ctx, grad_output, *unused):
        if ctx.defer:
            x, w, t = ctx.saved_tensors
            g = grad_output.detach().to(torch.float32).contiguous().view(-1)
            bt = x.shape[0]
            want = dict(loss=_util.empty((bt,), torch.float32), z=None, acc=None, am=None, **ctx.grads)
            dx, dw, db = _flce_call(x, w, t, ctx.opts, want, grad_rows=g)
        else:
            dx, dw, db = ctx.saved_tensors
            if not torch.equal(grad_output, torch.ones_like(grad_output)):
                g = grad_output.to(torch.float32)
                dx, dw, db = [None if d is None else (d.float() * g).to(d.dtype) for d in (dx, dw, db)]
        x_dt, w_dt, b_dt = ctx.dtypes
        dx = None if dx is None else dx.to(x_dt)
        dw = None if dw is None else dw.to(w_dt)
        db = None if db is None else db.to(b_dt)
        return (dx, dw, None, db) + (None,) * 11


def fused_linear_cross_entropy(input, weight, target, bias=None, ce_weight=None, ignore_index=-100,
                               lse_square_scale=0.0, label_smoothing=0.0, reduction="mean", softcap=None,
                               return_z_loss=False, accum_dtype=None, use_token_scaling=False,
                               return_token_accuracy=False, return_predicted_tokens=False):
    """the loss alone, or (loss, z_loss, token_accuracy, predicted_tokens)
    when any return_* is set"""
    outs = FusedLinearCrossEntropyFunction.apply(input, weight, target, bias, ce_weight, ignore_index,
                                                 lse_square_scale, label_smoothing, reduction, softcap,
                                                 return_z_loss, accum_dtype, use_token_scaling,
                                                 return_token_accuracy, return_predicted_tokens)
    if not (return_z_loss or return_token_accuracy or return_predicted_tokens):
        return outs[0]
    return outs


class CrossEntropyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, _input, target, weight=None, ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0,
                reduction="mean", softcap=None, return_z_loss=False, return_token_accuracy=False,
                return_predicted_tokens=False):
        _flags(return_z_loss, return_token_accuracy, return_predicted_tokens)
        logits = _util.tensor("_input", _input, ndim=2)
        _util.dtype_code("_input", logits)
        bt, V = logits.shape
        t = _target(target, bt)
        opts = _options(logits.dtype, ignore_index, lse_square_scale, label_smoothing, reduction, softcap, weight, None,
                        False, V)
        red = opts["reduction"]
        loss, z, acc = _per_row_outputs(red, bt, return_z_loss, return_token_accuracy)
        am = _util.empty((bt,), torch.int64) if return_predicted_tokens else None
        dl = _util.empty_like(logits) if _input.requires_grad else None
        _util.launch("flce", "cross_entropy", logits.dtype, logits=logits, target=t, loss=loss, z_loss=z, argmax=am,
                     token_accuracy=acc, dlogits=dl, bt=bt, vocab=V, **opts)
        ctx.save_for_backward(dl)
        # as Liger's cross entropy: loss and z-loss in the input's dtype
        loss = loss.to(_input.dtype)
        if z is not None:
            z = z.to(_input.dtype)
        outs = (_shape_loss(loss, red), _shape_loss(z, red), _shape_loss(acc, red), am)
        ctx.mark_non_differentiable(*[o for o in outs[1:] if o is not None])
        return outs

    @staticmethod
    def backward(ctx, grad_output, *unused):
        (dl,) = ctx.saved_tensors
        if dl is not None and not torch.equal(grad_output, torch.ones_like(grad_output)):
            g = grad_output.to(torch.float32)
            g = g.view(-1, 1) if g.dim() > 0 else g
            dl = (dl.float() * g).to(dl.dtype)
        return (dl,) + (None,) * 10


def cross_entropy(input, target, weight=None, ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0,
                  reduction="mean", softcap=None, return_z_loss=False, return_token_accuracy=False,
                  return_predicted_tokens=False):
    outs = CrossEntropyFunction.apply(input, target, weight, ignore_index, lse_square_scale, label_smoothing,
                                      reduction, softcap, return_z_loss, return_token_accuracy,
                                      return_predicted_tokens)
    if not (return_z_loss or return_token_accuracy or return_predicted_tokens):
        return outs[0]
    return outs


class FusedLinearCrossEntropyLoss(torch.nn.Module):
    def __init__(self, ce_weight=None, ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0,
                 reduction="mean", softcap=None, return_z_loss=False, accum_dtype=None, use_token_scaling=False,
                 return_token_accuracy=False, return_predicted_tokens=False):
        super().__init__()
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError("label_smoothing=%r is outside [0, 1]" % (label_smoothing,))
        _util.choice("reduction", reduction, REDUCTIONS)
        self.ce_weight, self.ignore_index, self.lse_square_scale = ce_weight, ignore_index, lse_square_scale
        self.label_smoothing, self.reduction, self.softcap = label_smoothing, reduction, softcap
        self.return_z_loss, self.accum_dtype, self.use_token_scaling = return_z_loss, accum_dtype, use_token_scaling
        self.return_token_accuracy, self.return_predicted_tokens = return_token_accuracy, return_predicted_tokens

    def forward(self, lin_weight, _input, target, bias=None):
        return fused_linear_cross_entropy(_input, lin_weight, target, bias, self.ce_weight, self.ignore_index,
                                          self.lse_square_scale, self.label_smoothing, self.reduction, self.softcap,
                                          self.return_z_loss, self.accum_dtype, self.use_token_scaling,
                                          self.return_token_accuracy, self.return_predicted_tokens)


class CrossEntropyLoss(torch.nn.Module):
    def __init__(self, weight=None, ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0, reduction="mean",
                 softcap=None, return_z_loss=False, return_token_accuracy=False, return_predicted_tokens=False):
        super().__init__()
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError("label_smoothing=%r is outside [0, 1]" % (label_smoothing,))
        _util.choice("reduction", reduction, REDUCTIONS)
        self.weight, self.ignore_index, self.lse_square_scale = weight, ignore_index, lse_square_scale
        self.label_smoothing, self.reduction, self.softcap = label_smoothing, reduction, softcap
        self.return_z_loss, self.return_token_accuracy = return_z_loss, return_token_accuracy
        self.return_predicted_tokens = return_predicted_tokens

    def forward(self, _input, target):
        return cross_entropy(_input, target, self.weight, self.ignore_index, self.lse_square_scale,
                             self.label_smoothing, self.reduction, self.softcap, self.return_z_loss,
                             self.return_token_accuracy, self.return_predicted_tokens)

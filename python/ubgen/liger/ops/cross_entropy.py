"""liger_kernel.ops.cross_entropy: LigerCrossEntropyFunction, and a stand-in
for Liger's Triton kernel `liger_cross_entropy_kernel[(n_rows,)](...)` that
runs ubgen's CE pass (flce.ce) on CPU tensors with the same keyword
arguments: X_ptr's rows are replaced by their gradient (HAS_GRADIENTS), each
row's loss goes to loss_ptr, scaled for reduction "mean" by n_non_ignore
(or sum_non_ignore_weight with weights)."""
import torch

from ...torch import _util
from ...torch.cross_entropy import CrossEntropyFunction as LigerCrossEntropyFunction


def _launch(n_rows, X_ptr, Y_ptr, loss_ptr, n_cols, n_non_ignore, ignore_index, lse_square_scale, label_smoothing,
            reduction, softcap, weight_ptr=None, z_loss_ptr=None, sum_non_ignore_weight=None, weight_sum=0.0,
            token_accuracy_ptr=None, predicted_tokens_ptr=None, RETURN_Z_LOSS=False, RETURN_TOKEN_ACCURACY=False,
            RETURN_PREDICTED_TOKENS=False, HAS_WEIGHT=False, HAS_SOFTCAPPING=False, HAS_GRADIENTS=True, **_ignored):
    _check_rows(n_rows, n_cols, X_ptr=X_ptr, Y_ptr=Y_ptr, loss_ptr=loss_ptr,
                z_loss_ptr=z_loss_ptr if RETURN_Z_LOSS else None,
                token_accuracy_ptr=token_accuracy_ptr if RETURN_TOKEN_ACCURACY else None,
                predicted_tokens_ptr=predicted_tokens_ptr if RETURN_PREDICTED_TOKENS else None)
    X = X_ptr
    _util.dtype_code("X_ptr", X)
    rows = X.view(-1)[:n_rows * n_cols].view(n_rows, n_cols)
    work = rows.float().contiguous()
    t = _util.indices("Y_ptr", Y_ptr).view(-1)[:n_rows].contiguous()
    loss = torch.empty(n_rows, dtype=torch.float32)
    z = torch.empty(n_rows, dtype=torch.float32) if RETURN_Z_LOSS else None
    am = torch.empty(n_rows, dtype=torch.int64) if (RETURN_TOKEN_ACCURACY or RETURN_PREDICTED_TOKENS) else None
    mean = reduction == "mean"
    cw = weight_ptr.to(torch.float32).contiguous() if HAS_WEIGHT else None
    scale_w = 1.0 / float(sum_non_ignore_weight) if mean and HAS_WEIGHT else 1.0
    _util.launch("flce", "ce", X.dtype, logits=work, target=t, ce_weight=cw, loss=loss, z_loss=z, argmax=am, bt=n_rows,
                 vocab=n_cols, ignore_index=int(ignore_index), grad=1 if HAS_GRADIENTS else 0,
                 scale_n=1.0 / max(float(n_non_ignore), 1.0) if mean else 1.0, scale_w=scale_w,
                 weight_sum=float(weight_sum) if HAS_WEIGHT else 0.0, label_smoothing=float(label_smoothing),
                 lse_square_scale=float(lse_square_scale),
                 softcap=float(softcap) if HAS_SOFTCAPPING and softcap else 0.0)
    if HAS_GRADIENTS:
        rows.copy_(work)
    loss_ptr.view(-1)[:n_rows].copy_(loss)
    if z is not None and z_loss_ptr is not None:
        z_loss_ptr.view(-1)[:n_rows].copy_(z)
    if RETURN_TOKEN_ACCURACY and token_accuracy_ptr is not None:
        token_accuracy_ptr.view(-1)[:n_rows].copy_(((am == t) & (t != ignore_index)).float())
    if RETURN_PREDICTED_TOKENS and predicted_tokens_ptr is not None:
        predicted_tokens_ptr.view(-1)[:n_rows].copy_(am)


def _check_rows(n_rows, n_cols, **tensors):
    """the grid's n_rows and n_cols fit every tensor the launch reads or
    writes (X_ptr rows of n_cols; the rest a value per row): Triton's
    kernel trusts them, a stand-in on the CPU must not"""
    for name, value in (("n_rows", n_rows), ("n_cols", n_cols)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("%s=%r is not an int >= 0" % (name, value))
    for name, t in tensors.items():
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
        if not t.is_contiguous():
            raise ValueError("%s is not contiguous (strides %s); the kernel reads and writes it in place"
                             % (name, tuple(t.stride())))
        if n_rows * (n_cols if name == "X_ptr" else 1) > t.numel():
            raise ValueError("n_rows=%d, n_cols=%d do not fit %s of shape %s" % (n_rows, n_cols, name, tuple(t.shape)))


class _Kernel:
    """kernel[(n_rows,)](**kwargs), as Triton launches it"""

    def __getitem__(self, grid):
        n_rows = grid[0] if isinstance(grid, tuple) else grid
        return lambda **kw: _launch(n_rows, **kw)


liger_cross_entropy_kernel = _Kernel()

__all__ = ["LigerCrossEntropyFunction", "liger_cross_entropy_kernel"]

"""Cross entropy on given logits (ubgen.torch.cross_entropy /
CrossEntropyFunction / CrossEntropyLoss and Liger's LigerCrossEntropyLoss,
LigerCrossEntropyFunction, liger_cross_entropy) against a float64 torch
reference, forward and backward, over the option grid of Liger-Kernel's
test_cross_entropy.py at small shapes (its odd 47-row and 123-class sizes
kept), in float32, float16 and bfloat16, with Liger's tolerances."""
import pytest
import torch
import torch.nn.functional as F

import ubgen.torch as ut
from ubgen.liger import CrossEntropyOutput, LigerCrossEntropyFunction, LigerCrossEntropyLoss, liger_cross_entropy
from ubgen.liger.ops.cross_entropy import liger_cross_entropy_kernel
from ubgen.liger.transformers.cross_entropy import LigerCrossEntropyLoss as TransformersCrossEntropyLoss
from ubgen.liger.transformers.functional import CrossEntropyOutput as FunctionalCrossEntropyOutput

import _ref
from _ref import DTYPE_IDS, DTYPES, class_weights, opt_id

# Liger: f32 (1e-8, 1e-6), bf16 (1e-8, 5e-2). float16 is in Liger's CE grid
# forward-only, at (1e-2, 1e-2); its rtol is kept for the gradient too, and
# its atol is 1e-6 (16 steps of f16's subnormals, where the gradient's small
# entries fall: bf16's 1e-8 is below f16's resolution there).
TOL = {torch.float32: (1e-8, 1e-6), torch.float16: (1e-6, 1e-2), torch.bfloat16: (1e-8, 5e-2)}
SHAPES = [(2, 64, 1000), (3, 47, 123)]
SHAPE_IDS = ["2x64x1000", "3x47x123"]
REDUCTIONS = ["mean", "sum", "none"]

# Liger's option sets (test_correctness, _with_ignore_index, _with_label_smoothing(_with_ignore_index),
# _with_softcap, _with_z_loss(_with_other_params), _with_weight(_with_other_params)), plus signed
# class weights. "weight": "rand" is torch.rand (Liger's), "signed" has a fifth of the classes negative.
OPTION_SETS = [
    dict(),
    dict(ignore_index=2),
    dict(ignore_index=-123),
    dict(label_smoothing=0.1),
    dict(ignore_index=1, label_smoothing=0.1),
    dict(ignore_index=-300, label_smoothing=0.2),
    dict(softcap=30.0),
    dict(lse_square_scale=1e-4, return_z_loss=True),
    dict(lse_square_scale=1e-5),
    dict(lse_square_scale=1e-4, return_z_loss=True, label_smoothing=0.1, ignore_index=42),
    dict(lse_square_scale=1e-5, label_smoothing=0.2, ignore_index=-42),
    dict(weight="rand"),
    dict(weight="rand", ignore_index=-100, lse_square_scale=1e-4, label_smoothing=0.1, softcap=30.0),
    dict(weight="rand", ignore_index=42, lse_square_scale=1e-5, label_smoothing=0.2, softcap=40.0, return_z_loss=True),
    dict(weight="signed", lse_square_scale=1e-4, label_smoothing=0.1, softcap=30.0, return_z_loss=True),
]


def make_case(B, T, V, dtype, opts, ignore_rows=True):
    """logits, target (with some rows ignored), class weights, and the
    reference's keyword arguments"""
    opts = dict(opts)
    weight = class_weights(opts.pop("weight", None), V)
    return_z_loss = opts.pop("return_z_loss", False)
    logits = torch.randn(B * T, V, dtype=dtype)
    target = torch.randint(0, V, (B * T,))
    ignore_index = opts.get("ignore_index", -100)
    if ignore_rows:
        target = _ref.with_ignored(target, ignore_index)
    return logits, target, weight, return_z_loss, opts


def reference(logits, target, weight, reduction, grad_output=None, **opts):
    x = _ref.leaf(logits)
    loss, z = _ref.cross_entropy(x, target, ce_weight=weight, reduction=reduction, **opts)
    loss.backward(torch.ones_like(loss) if grad_output is None else grad_output.to(torch.float64))
    return loss.detach(), z.detach(), x.grad


@pytest.mark.parametrize("opts", OPTION_SETS, ids=opt_id)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("B, T, V", SHAPES, ids=SHAPE_IDS)
def test_correctness(B, T, V, dtype, reduction, opts):
    logits, target, weight, return_z_loss, kw = make_case(B, T, V, dtype, opts, ignore_rows=bool(opts))
    ce = LigerCrossEntropyLoss(weight=weight, reduction=reduction, return_z_loss=return_z_loss, **kw)
    x = logits.clone().requires_grad_(True)
    out = ce(x, target)
    if return_z_loss:
        assert isinstance(out, CrossEntropyOutput)
        loss, z = out.loss, out.z_loss
        assert z.dtype == dtype
    else:
        assert isinstance(out, torch.Tensor)
        loss, z = out, None
    assert loss.dtype == dtype  # as Liger's: the loss in the input's dtype
    assert loss.shape == ((B * T,) if reduction == "none" else ())
    loss.backward(torch.ones_like(loss))
    assert torch.equal(x.detach(), logits), "the logits were modified"

    loss_ref, z_ref, dx_ref = reference(logits, target, weight, reduction, **kw)
    atol, rtol = TOL[dtype]
    _ref.assert_close(loss, loss_ref, atol, rtol, "loss")
    if z is not None:
        _ref.assert_close(z, z_ref, atol, rtol, "z_loss")
    assert x.grad.dtype == dtype
    _ref.assert_close(x.grad, dx_ref, atol, rtol, "dlogits")
    ignored = target == kw.get("ignore_index", -100)
    assert torch.count_nonzero(x.grad[ignored]) == 0
    if reduction == "none":
        assert torch.count_nonzero(loss[ignored]) == 0


@pytest.mark.parametrize("opts", [dict(), dict(weight="signed", ignore_index=7, lse_square_scale=1e-4,
                                               label_smoothing=0.1, softcap=30.0, return_z_loss=True)],
                         ids=["plain", "all-options"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_grad_output(dtype, reduction, opts):
    """the loss not last in the graph: a scalar upstream gradient (2.5) for
    mean and sum, a per-row one for none; and Liger's (loss * 3) with a
    random upstream gradient"""
    B, T, V = 3, 47, 123
    logits, target, weight, return_z_loss, kw = make_case(B, T, V, dtype, opts)
    g = torch.tensor(2.5) if reduction != "none" else torch.rand(B * T) * 4 - 1
    atol, rtol = TOL[dtype]
    for scale_by_three in (False, True):
        x = logits.clone().requires_grad_(True)
        loss = ut.cross_entropy(x, target, weight, reduction=reduction, **kw)
        gg = g.to(dtype)
        if scale_by_three:
            gg = torch.rand_like(loss)
            (loss * 3).backward(gg)
            g_ref = gg.double() * 3
        else:
            loss.backward(gg)
            g_ref = gg.double()
        _, _, dx_ref = reference(logits, target, weight, reduction, grad_output=g_ref, **kw)
        _ref.assert_close(x.grad, dx_ref, atol, rtol, "dlogits (grad_output, x3=%s)" % scale_by_three)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_forward_only(dtype, reduction):
    """under no_grad the loss is right and there is no graph"""
    logits, target, _, _, _ = make_case(2, 64, 1000, dtype, dict(ignore_index=2))
    with torch.no_grad():
        loss = LigerCrossEntropyLoss(ignore_index=2, reduction=reduction)(logits, target)
    loss_ref, _, _ = reference(logits, target, None, reduction, ignore_index=2)
    _ref.assert_close(loss, loss_ref, *{torch.float32: (1e-4, 1e-4)}.get(dtype, (1e-2, 1e-2)), what="loss")
    assert not loss.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        loss.backward(torch.ones_like(loss))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("B, T, V", [(2, 2, 8), (9, 7, 41)])
def test_functional(B, T, V, dtype):
    """liger_cross_entropy and LigerCrossEntropyFunction.apply (Liger's
    test_correctness_functional), ubgen.torch's names: the same bits, and
    the reference's values, with a random upstream gradient"""
    logits = torch.randn(B * T, V, dtype=dtype)
    target = torch.randint(0, V, (B * T,))
    opts = dict(ignore_index=0, lse_square_scale=1e-4, label_smoothing=0.1, softcap=30.0)
    grad = torch.randn(()).to(dtype)
    x1, x2, x3, x4 = [logits.clone().requires_grad_(True) for _ in range(4)]
    r1 = liger_cross_entropy(x1, target, None, reduction="mean", return_z_loss=True, **opts)
    y2, z2, acc2, pred2 = LigerCrossEntropyFunction.apply(x2, target, None, 0, 1e-4, 0.1, "mean", 30.0, True, False,
                                                          False)
    y3, z3, _, _ = ut.cross_entropy(x3, target, None, reduction="mean", return_z_loss=True, **opts)
    y4, z4, _, _ = ut.CrossEntropyFunction.apply(x4, target, None, 0, 1e-4, 0.1, "mean", 30.0, True, False, False)
    assert isinstance(r1, CrossEntropyOutput) and acc2 is None and pred2 is None
    for y, z in ((y2, z2), (y3, z3), (y4, z4)):
        assert torch.equal(y, r1.loss) and torch.equal(z, r1.z_loss)
    for y, x in ((r1.loss, x1), (y2, x2), (y3, x3), (y4, x4)):
        y.backward(grad)
        assert torch.equal(x.grad, x1.grad)
    loss_ref, z_ref, dx_ref = reference(logits, target, None, "mean", grad_output=grad.double(), **opts)
    atol, rtol = TOL[dtype]
    _ref.assert_close(r1.loss, loss_ref, atol, rtol, "loss")
    _ref.assert_close(r1.z_loss, z_ref, atol, rtol, "z_loss")
    _ref.assert_close(x1.grad, dx_ref, atol, rtol, "dlogits")


def test_module_names_agree():
    """ubgen.torch.CrossEntropyLoss and LigerCrossEntropyLoss: the same bits
    (the torch module returns the tuple, Liger's the dataclass)"""
    logits = torch.randn(40, 77)
    target = _ref.with_ignored(torch.randint(0, 77, (40,)), 5)
    w = torch.rand(77)
    kw = dict(weight=w, ignore_index=5, lse_square_scale=1e-4, label_smoothing=0.1, reduction="sum", softcap=20.0,
              return_z_loss=True, return_token_accuracy=True, return_predicted_tokens=True)
    x1, x2 = logits.clone().requires_grad_(True), logits.clone().requires_grad_(True)
    a = ut.CrossEntropyLoss(**kw)(x1, target)
    b = LigerCrossEntropyLoss(**kw)(x2, target)
    assert isinstance(a, tuple) and len(a) == 4 and isinstance(b, CrossEntropyOutput)
    for u, v in zip(a, (b.loss, b.z_loss, b.token_accuracy, b.predicted_tokens)):
        assert torch.equal(u, v)
    a[0].backward()
    b.loss.backward()
    assert torch.equal(x1.grad, x2.grad)
    assert TransformersCrossEntropyLoss is LigerCrossEntropyLoss
    assert FunctionalCrossEntropyOutput is CrossEntropyOutput


FLAGS = [(z, a, p) for z in (False, True) for a in (False, True) for p in (False, True)]


@pytest.mark.parametrize("return_z_loss, return_token_accuracy, return_predicted_tokens", FLAGS)
def test_structured_output(return_z_loss, return_token_accuracy, return_predicted_tokens):
    """Liger's test_liger_cross_entropy_structured_output: the loss tensor
    alone when no return_* flag is set, else a CrossEntropyOutput with
    exactly the asked fields"""
    logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 1.5, 0.3], [0.7, -0.2, 0.9]], requires_grad=True)
    targets = torch.tensor([0, 1, 2])
    original = logits.detach().clone()
    result = liger_cross_entropy(logits, targets, reduction="mean", return_z_loss=return_z_loss,
                                 return_token_accuracy=return_token_accuracy,
                                 return_predicted_tokens=return_predicted_tokens)
    expected = F.cross_entropy(original.double(), targets)
    if not (return_z_loss or return_token_accuracy or return_predicted_tokens):
        assert isinstance(result, torch.Tensor) and result.shape == ()
        assert torch.allclose(result.double(), expected, atol=1e-6)
        result.backward()
        assert logits.grad is not None
        return
    assert isinstance(result, CrossEntropyOutput) and result.loss.shape == ()
    assert torch.allclose(result.loss.double(), expected, atol=1e-6)
    if return_z_loss:
        assert isinstance(result.z_loss, torch.Tensor) and result.z_loss.shape == ()
        assert result.z_loss.item() == 0.0  # lse_square_scale = 0
    else:
        assert result.z_loss is None
    if return_token_accuracy:
        expected_acc = (original.argmax(-1) == targets).float().mean()
        assert torch.allclose(result.token_accuracy, expected_acc, atol=1e-6)
    else:
        assert result.token_accuracy is None
    if return_predicted_tokens:
        assert result.predicted_tokens.dtype == torch.int64 and result.predicted_tokens.shape == (3,)
        assert torch.equal(result.predicted_tokens, original.argmax(-1))
        if return_token_accuracy:
            assert torch.allclose(result.token_accuracy, (result.predicted_tokens == targets).float().mean())
    else:
        assert result.predicted_tokens is None
    result.loss.backward()
    assert logits.grad is not None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("B, T, V", [(2, 128, 512), (3, 47, 31)])
def test_predicted_tokens_and_accuracy(B, T, V, ignore_index, dtype):
    """argmax per row (-1 on ignored rows) and the accuracy over the rows
    not ignored; per row for reduction none"""
    logits = torch.randn(B * T, V, dtype=dtype)
    target = torch.randint(0, V, (B * T,))
    target[torch.randperm(B * T)[: B * T // 4]] = ignore_index
    keep = target != ignore_index
    expected = logits.float().argmax(dim=-1)
    x = logits.clone().requires_grad_(True)
    res = LigerCrossEntropyLoss(ignore_index=ignore_index, return_predicted_tokens=True,
                                return_token_accuracy=True)(x, target)
    assert isinstance(res, CrossEntropyOutput)
    assert res.predicted_tokens.shape == (B * T,) and res.predicted_tokens.dtype == torch.int64
    assert torch.equal(res.predicted_tokens[keep], expected[keep])
    assert torch.all(res.predicted_tokens[~keep] == -1)
    hits = (expected == target) & keep
    assert torch.allclose(res.token_accuracy, hits.sum().float() / keep.sum().float(), atol=1e-6)
    res.loss.backward()
    assert x.grad is not None
    res_none = liger_cross_entropy(logits, target, ignore_index=ignore_index, reduction="none",
                                   return_token_accuracy=True, return_predicted_tokens=True)
    assert torch.equal(res_none.token_accuracy, hits.float())
    assert torch.equal(res_none.predicted_tokens, res.predicted_tokens)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_true_class_grad_confident_predictions(dtype, label_smoothing, reduction):
    """Liger's test: with softmax(x_y) near 1 the true-class gradient is a
    small difference; it must be no less accurate than torch's own 16-bit
    backward, against float32 on the same 16-bit logits"""
    B, T, V = 2, 64, 1000
    logits = torch.randn(B * T, V)
    target = torch.randint(0, V, (B * T,))
    logits[torch.arange(B * T), target] = logits.max(dim=-1).values + 10.0
    low = logits.to(dtype)
    x_ubgen, x_ref = low.clone().requires_grad_(True), low.float().requires_grad_(True)
    LigerCrossEntropyLoss(reduction=reduction, label_smoothing=label_smoothing)(x_ubgen, target).backward()
    torch.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=label_smoothing)(x_ref, target).backward()
    rows = torch.arange(B * T)
    ref = x_ref.grad[rows, target].double()
    if dtype == torch.bfloat16:
        x_torch = low.clone().requires_grad_(True)
        torch.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=label_smoothing)(x_torch, target).backward()
        torch_low = x_torch.grad[rows, target]
    else:  # torch 1.13 has no float16 log_softmax on the CPU: the float32 gradient rounded to f16, a stricter bound
        torch_low = x_ref.grad[rows, target].to(dtype)
    torch_err = (torch_low.double() - ref).abs().max().item()
    ubgen_err = (x_ubgen.grad[rows, target].double() - ref).abs().max().item()
    assert ubgen_err <= max(4 * torch_err, torch.finfo(dtype).tiny), (ubgen_err, torch_err)


def test_all_rows_ignored():
    """mean over no counted row is 0 (Liger clamps the count; torch gives
    NaN), with zero gradient; the accuracy is 0/0 = NaN"""
    x = torch.randn(5, 9, requires_grad=True)
    t = torch.full((5,), -100)
    out = liger_cross_entropy(x, t, return_token_accuracy=True)
    assert out.loss.item() == 0.0
    assert torch.isnan(out.token_accuracy)
    out.loss.backward()
    assert torch.equal(x.grad, torch.zeros(5, 9))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_liger_kernel_launch(dtype, reduction):
    """the stand-in for Liger's Triton kernel (liger_cross_entropy_kernel
    [(n_rows,)](...), as Liger's test_float32_internal calls it): each row's
    loss in loss_ptr and the logits replaced by their gradient, the same
    for bf16 logits as for their float32 widening within bf16's rounding"""
    n_rows, n_cols = 4, 4096
    X_init = torch.randn(n_rows, n_cols, dtype=dtype)
    Y = torch.randint(0, n_cols, (n_rows,))
    X = X_init.clone()
    loss = torch.zeros(n_rows)
    acc = torch.zeros(n_rows)
    pred = torch.full((n_rows,), -1, dtype=torch.int64)
    liger_cross_entropy_kernel[(n_rows,)](
        X_ptr=X, X_stride=X.stride(-2), Y_ptr=Y, Y_stride=Y.stride(-1), weight_ptr=X, z_loss_ptr=loss,
        loss_ptr=loss, loss_stride=loss.stride(-1), token_accuracy_ptr=acc, token_accuracy_stride=1,
        predicted_tokens_ptr=pred, predicted_tokens_stride=1, n_cols=n_cols, n_non_ignore=n_rows,
        sum_non_ignore_weight=n_rows, weight_sum=0.0, ignore_index=-100, lse_square_scale=0.0,
        label_smoothing=0.0, reduction=reduction, softcap=0.0, RETURN_Z_LOSS=0, RETURN_TOKEN_ACCURACY=1,
        RETURN_PREDICTED_TOKENS=1, HAS_WEIGHT=False, HAS_SOFTCAPPING=False, HAS_GRADIENTS=True, BLOCK_SIZE=32768,
        num_warps=32)
    x64 = _ref.leaf(X_init)
    per_row = F.cross_entropy(x64, Y, reduction="none")
    scale = 1.0 / n_rows if reduction == "mean" else 1.0
    (per_row.sum() * scale).backward()
    _ref.assert_close(loss, per_row.detach() * scale, 1e-6, 1e-5, "loss_ptr")
    _ref.assert_close(X, x64.grad, *TOL[dtype], what="X_ptr (gradient)")
    assert torch.equal(pred, X_init.float().argmax(-1))
    assert torch.equal(acc, (pred == Y).float())

"""Fused linear cross entropy (ubgen.torch.fused_linear_cross_entropy /
FusedLinearCrossEntropyFunction / FusedLinearCrossEntropyLoss and Liger's
LigerFusedLinearCrossEntropyLoss, LigerFusedLinearCrossEntropyFunction,
liger_fused_linear_cross_entropy) against a float64 torch reference
(logits = x @ W.T + b, then torch's cross entropy plus Liger's z-loss,
softcap and token scaling), forward and backward (dx, dW, dbias), over the
option grid of Liger-Kernel's test_fused_linear_cross_entropy.py at small
shapes (its odd 4 x 47 x 31 x 123 kept), in float32, float16 and bfloat16,
with Liger's tolerances."""
import pytest
import torch
import torch.nn.functional as F

import ubgen.torch as ut
from ubgen.liger import (CrossEntropyOutput, LigerFusedLinearCrossEntropyFunction, LigerFusedLinearCrossEntropyLoss,
                         liger_fused_linear_cross_entropy)
from ubgen.liger.transformers.fused_linear_cross_entropy import \
    LigerFusedLinearCrossEntropyLoss as TransformersFLCELoss

import _ref
from _ref import class_weights, opt_id

# Liger: mean bf16 (5e-3, 5e-2), mean f32 (1e-5, 5e-4), sum bf16 (5, 50), sum f32 (1e-3, 5e-2); none (its
# per-token grad_output test) f32 (1e-4, 1e-4). float16 takes bf16's, as Liger's test_amp does for both
# 16-bit autocast dtypes; none in 16 bits takes mean's.
TOL = {
    ("mean", torch.float32): (1e-5, 5e-4), ("mean", torch.bfloat16): (5e-3, 5e-2),
    ("mean", torch.float16): (5e-3, 5e-2),
    ("sum", torch.float32): (1e-3, 5e-2), ("sum", torch.bfloat16): (5.0, 50.0), ("sum", torch.float16): (5.0, 50.0),
    ("none", torch.float32): (1e-4, 1e-4), ("none", torch.bfloat16): (5e-3, 5e-2),
    ("none", torch.float16): (5e-3, 5e-2),
}
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
DTYPE_IDS = ["f32", "bf16", "f16"]
SHAPES = [(4, 47, 31, 123), (2, 64, 128, 1000)]
SHAPE_IDS = ["4x47x31x123", "2x64x128x1000"]

# Liger's two sets (defaults; every option on once), the same with signed class weights (Liger's
# functional test draws them with randn), and token scaling alone and with everything else
OPTION_SETS = [
    dict(),
    dict(ce_weight="rand", label_smoothing=0.1, ignore_index=42, lse_square_scale=1e-4, softcap=30.0,
         return_z_loss=True),
    dict(ce_weight="signed", label_smoothing=0.1, ignore_index=-100, lse_square_scale=1e-4, softcap=30.0,
         return_z_loss=True),
    dict(use_token_scaling=True),
    dict(use_token_scaling=True, ce_weight="rand", label_smoothing=0.1, ignore_index=7, lse_square_scale=1e-4,
         softcap=30.0, return_z_loss=True),
]


def make_case(B, T, H, V, dtype, bias, opts):
    opts = dict(opts)
    ce_weight = class_weights(opts.pop("ce_weight", None), V)
    return_z_loss = opts.pop("return_z_loss", False)
    x = torch.randn(B * T, H, dtype=dtype)
    weight = torch.rand(V, H, dtype=dtype)  # Liger's: torch.rand
    b = torch.rand(V, dtype=dtype) if bias else None
    target = _ref.with_ignored(torch.randint(0, V, (B * T,)), opts.get("ignore_index", -100))
    return x, weight, b, target, ce_weight, return_z_loss, opts


def reference(x, weight, b, target, ce_weight, reduction, grad_output=None, **opts):
    """loss, z_loss, dx, dweight, dbias of the float64 reference, and what
    rounding the logits' gradient G to the inputs' dtype before the GEMMs
    (as Liger does, and ubgen's library GEMMs) may move each gradient by,
    per unit roundoff: |G| |W|, |G|^T |x|, the column sums of |G|"""
    xr, wr = _ref.leaf(x), _ref.leaf(weight)
    br = None if b is None else _ref.leaf(b)
    logits = (xr @ wr.t() + (0 if br is None else br)).detach().requires_grad_()
    loss, z = _ref.cross_entropy(logits, target, ce_weight=ce_weight, reduction=reduction, **opts)
    loss.backward(torch.ones_like(loss) if grad_output is None else grad_output.to(torch.float64))
    G = logits.grad
    dx, dw, db = G @ wr.detach(), G.t() @ xr.detach(), (None if br is None else G.sum(0))
    slack = (G.abs() @ wr.detach().abs(), G.t().abs() @ xr.detach().abs(), G.abs().sum(0))
    return loss.detach(), z.detach(), dx, dw, db, slack


UNIT_ROUNDOFF = {torch.float32: 0.0, torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}


def check_grads(got, ref, atol, rtol, what=""):
    """ref: dx, dweight, dbias (and the slack of reference())"""
    slack = ref[3] if len(ref) > 3 else (None, None, None)
    for g, r, s, name in zip(got, ref[:3], slack, ("dx", "dweight", "dbias")):
        if r is None:
            assert g is None, name
        else:
            extra = None if s is None else 2 * UNIT_ROUNDOFF[g.dtype] * s
            _ref.assert_close(g, r, atol, rtol, what + name, extra)


@pytest.mark.parametrize("opts", OPTION_SETS, ids=opt_id)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("B, T, H, V", SHAPES, ids=SHAPE_IDS)
def test_correctness(B, T, H, V, dtype, reduction, bias, opts):
    x, weight, b, target, ce_weight, return_z_loss, kw = make_case(B, T, H, V, dtype, bias, opts)
    lin = torch.nn.Linear(H, V, bias=bias, dtype=dtype)
    with torch.no_grad():
        lin.weight.copy_(weight)
        if bias:
            lin.bias.copy_(b)
    # Liger's default accum_dtype (None: dweight summed in the input's dtype) where the tolerance allows its
    # roundings; "none"'s gradient is that of sum(loss), whose chunk sums in 16 bits cancel beyond mean's tolerance
    # (test_accum_dtype_none_sums_in_the_input_dtype holds them to their own reference)
    accum = torch.float32 if return_z_loss or reduction == "none" else None
    ce = LigerFusedLinearCrossEntropyLoss(ce_weight=ce_weight, reduction=reduction, return_z_loss=return_z_loss,
                                          accum_dtype=accum, **kw)
    xi = x.clone().requires_grad_(True)
    out = ce(lin.weight, xi, target, lin.bias)
    if return_z_loss:
        assert isinstance(out, CrossEntropyOutput)
        loss, z = out.loss, out.z_loss
        assert z.dtype == dtype  # as Liger's: the z-loss in the input's dtype
    else:
        assert isinstance(out, torch.Tensor)
        loss, z = out, None
    assert loss.shape == ((B * T,) if reduction == "none" else ())
    loss.backward(torch.ones_like(loss))

    ref = reference(x, weight, b, target, ce_weight, reduction, **kw)
    atol, rtol = TOL[(reduction, dtype)]
    _ref.assert_close(loss, ref[0], atol, rtol, "loss")
    if z is not None:
        _ref.assert_close(z, ref[1], atol, rtol, "z_loss")
    assert xi.grad.dtype == dtype and lin.weight.grad.dtype == dtype
    check_grads((xi.grad, lin.weight.grad, None if b is None else lin.bias.grad), ref[2:], atol, rtol)
    ignored = target == kw.get("ignore_index", -100)
    assert torch.count_nonzero(xi.grad[ignored]) == 0


@pytest.mark.parametrize("opts", [dict(), OPTION_SETS[2], OPTION_SETS[4]], ids=["defaults", "signed-weights",
                                                                              "token-scaling"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_grad_output(dtype, reduction, opts):
    """an upstream gradient other than 1: loss.backward(2.5) for mean and
    sum, a random per-row vector for none (which must enter each row before
    dweight and dbias sum over rows), and Liger's not-last-layer (loss * 3)"""
    B, T, H, V = 4, 47, 31, 123
    x, weight, b, target, ce_weight, return_z_loss, kw = make_case(B, T, H, V, dtype, True, opts)
    atol, rtol = TOL[(reduction, dtype)]
    for times_three in (False, True):
        xi, wi, bi = x.clone().requires_grad_(True), weight.clone().requires_grad_(True), b.clone().requires_grad_(True)
        accum = torch.float32 if reduction == "none" else None  # as in test_correctness
        loss = ut.fused_linear_cross_entropy(xi, wi, target, bi, ce_weight, reduction=reduction, accum_dtype=accum,
                                             **kw)
        if reduction == "none":
            g = torch.rand(B * T) * 4 - 1
        else:
            g = torch.tensor(2.5)
        if times_three:
            (loss * 3).backward(g)
            g_ref = g.double() * 3
        else:
            loss.backward(g)
            g_ref = g.double()
        ref = reference(x, weight, b, target, ce_weight, reduction, grad_output=g_ref, **kw)
        check_grads((xi.grad, wi.grad, bi.grad), ref[2:], atol, rtol, "x3=%s " % times_three)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("B, T, H, V", [(2, 16, 32, 64), (1, 32, 64, 128)])
def test_reduction_none_per_token_grad_output(B, T, H, V, bias):
    """Liger's regression test: a non-uniform per-token upstream gradient
    (a uniform one would hide using only its first element)"""
    x = torch.randn(B * T, H) * 0.1
    weight = torch.randn(V, H) * 0.1
    b = torch.randn(V) * 0.1 if bias else None
    target = torch.randint(0, V, (B * T,))
    g = torch.rand(B * T) + 0.5
    xi, wi = x.clone().requires_grad_(True), weight.clone().requires_grad_(True)
    bi = b.clone().requires_grad_(True) if bias else None
    loss, z, acc, pred = LigerFusedLinearCrossEntropyFunction.apply(xi, wi, target, bi, None, -100, 0.0, 0.0, "none",
                                                                    None, False, None, False, False, False)
    assert z is None and acc is None and pred is None
    loss.backward(g)
    ref = reference(x, weight, b, target, None, "none", grad_output=g)
    _ref.assert_close(loss, ref[0], 1e-4, 1e-4, "loss")
    check_grads((xi.grad, wi.grad, None if b is None else bi.grad), ref[2:], 1e-4, 1e-4)


@pytest.mark.parametrize("opts", OPTION_SETS[:2], ids=["defaults", "all-options"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_forward_only(dtype, reduction, bias, opts):
    """under no_grad: the reference's loss, no graph (Liger's
    test_correctness_with_forward_only)"""
    x, weight, b, target, ce_weight, return_z_loss, kw = make_case(4, 47, 31, 123, dtype, bias, opts)
    with torch.no_grad():
        out = LigerFusedLinearCrossEntropyLoss(ce_weight=ce_weight, reduction=reduction,
                                               return_z_loss=return_z_loss, **kw)(weight, x, target, b)
    loss = out.loss if return_z_loss else out
    ref = reference(x, weight, b, target, ce_weight, reduction, **kw)
    atol, rtol = TOL[(reduction, dtype)]
    _ref.assert_close(loss, ref[0], atol, rtol, "loss")
    if return_z_loss:
        _ref.assert_close(out.z_loss, ref[1], atol, rtol, "z_loss")
    with pytest.raises(RuntimeError, match="does not require grad"):
        loss.backward(torch.rand_like(loss))


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("ce_weight", [True, False], ids=["ce_weight", "no-ce_weight"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
@pytest.mark.parametrize("B, T, H, V", [(2, 2, 8, 8), (9, 7, 41, 41)])
def test_functional(B, T, H, V, dtype, ce_weight, bias):
    """liger_fused_linear_cross_entropy (CrossEntropyOutput),
    LigerFusedLinearCrossEntropyFunction.apply (a 4-tuple) and ubgen.torch's
    functional: the same bits, with randn (signed) class weights and a
    random upstream gradient; and the reference's values"""
    x = torch.randn(B * T, H, dtype=dtype)
    target = torch.randint(0, V, (B * T,))
    weight = torch.randn(V, H, dtype=dtype)
    b = torch.randn(V, dtype=dtype) if bias else None
    cw = torch.randn(V) if ce_weight else None
    x1, x2, x3 = [x.clone().requires_grad_(True) for _ in range(3)]
    result = liger_fused_linear_cross_entropy(input=x1, weight=weight, target=target, bias=b, ce_weight=cw,
                                              ignore_index=-100, lse_square_scale=1e-4, label_smoothing=0.1,
                                              reduction="mean", softcap=30.0, return_z_loss=True,
                                              accum_dtype=torch.float32)
    assert isinstance(result, CrossEntropyOutput)
    y2, z2, acc2, pred2 = LigerFusedLinearCrossEntropyFunction.apply(x2, weight, target, b, cw, -100, 1e-4, 0.1,
                                                                     "mean", 30.0, True, torch.float32, False, False,
                                                                     False)
    y3, z3, acc3, pred3 = ut.fused_linear_cross_entropy(x3, weight, target, b, cw, -100, 1e-4, 0.1, "mean", 30.0, True)
    assert acc2 is None and pred2 is None and acc3 is None and pred3 is None
    assert torch.equal(result.loss, y2) and torch.equal(result.z_loss, z2)
    assert torch.equal(result.loss, y3) and torch.equal(result.z_loss, z3)
    grad = torch.randn(())
    for y, xx in ((result.loss, x1), (y2, x2), (y3, x3)):
        y.backward(grad)
        assert torch.equal(xx.grad, x1.grad)
    ref = reference(x, weight, b, target, cw, "mean", grad_output=grad, ignore_index=-100, lse_square_scale=1e-4,
                    label_smoothing=0.1, softcap=30.0)
    atol, rtol = TOL[("mean", dtype)]
    _ref.assert_close(result.loss, ref[0], atol, rtol, "loss")
    _ref.assert_close(result.z_loss, ref[1], atol, rtol, "z_loss")
    _ref.assert_close(x1.grad, ref[2], atol, rtol, "dx")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("return_token_accuracy", [True, False])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
@pytest.mark.parametrize("B, T, H, V", SHAPES, ids=SHAPE_IDS)
def test_token_accuracy(B, T, H, V, dtype, bias, return_token_accuracy, reduction):
    """return_token_accuracy: the fraction of rows not ignored whose argmax
    is the target (per row, 1 or 0, for none); the loss and gradients as
    without it"""
    x, weight, b, target, _, _, _ = make_case(B, T, H, V, dtype, bias, {})
    xi = x.clone().requires_grad_(True)
    result = liger_fused_linear_cross_entropy(input=xi, weight=weight, target=target, bias=b, ignore_index=-100,
                                              reduction=reduction, return_token_accuracy=return_token_accuracy)
    if return_token_accuracy:
        assert isinstance(result, CrossEntropyOutput) and result.z_loss is None and result.predicted_tokens is None
        loss = result.loss
        logits = x.double() @ weight.double().t() + (b.double() if bias else 0)
        keep = target != -100
        hits = (logits.argmax(-1) == target) & keep
        if reduction == "none":
            assert torch.equal(result.token_accuracy, hits.float())
        else:
            assert torch.allclose(result.token_accuracy, hits.sum().float() / keep.sum().float(), atol=1e-6)
    else:
        assert isinstance(result, torch.Tensor)
        loss = result
    loss.backward(torch.ones_like(loss))
    ref = reference(x, weight, b, target, None, reduction)
    atol, rtol = TOL[(reduction, dtype)]
    _ref.assert_close(loss, ref[0], atol, rtol, "loss")
    _ref.assert_close(xi.grad, ref[2], atol, rtol, "dx")


@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
@pytest.mark.parametrize("B, T, H, V", SHAPES, ids=SHAPE_IDS)
def test_predicted_tokens(B, T, H, V, dtype, bias, ignore_index):
    """argmax of each row's logits (its logit is the row's largest), -1 on
    ignored rows, int64 [BT]"""
    weight = torch.randn(V, H, dtype=dtype)
    b = torch.randn(V, dtype=dtype) if bias else None
    x = torch.randn(B * T, H, dtype=dtype, requires_grad=True)
    target = torch.randint(0, V, (B * T,))
    target[torch.randperm(B * T)[: B * T // 4]] = ignore_index
    result = liger_fused_linear_cross_entropy(input=x, weight=weight, target=target, bias=b,
                                              ignore_index=ignore_index, return_predicted_tokens=True)
    assert isinstance(result, CrossEntropyOutput)
    pred = result.predicted_tokens
    assert pred.shape == (B * T,) and pred.dtype == torch.int64
    keep = target != ignore_index
    logits = x.detach().double() @ weight.double().t() + (b.double() if bias else 0)
    top = logits[keep].max(-1).values
    at_pred = logits[keep].gather(1, pred[keep].unsqueeze(1)).squeeze(1)
    assert torch.allclose(at_pred, top, atol=1e-5, rtol=1e-6)
    assert torch.all(pred[~keep] == -1)
    result.loss.backward()
    assert x.grad is not None


def token_scaling_reference(x, weight, b, target, reduction):
    """Liger's manual token scaling: each row's CE times its detached
    predicted probability of the target"""
    x = x.detach().double().requires_grad_(True)
    logits = x @ weight.double().t() + b.double()
    probs = torch.softmax(logits.detach(), dim=-1)
    safe = torch.where(target == -100, torch.zeros_like(target), target)
    scaled = F.cross_entropy(logits, target, ignore_index=-100, reduction="none") * probs.gather(1, safe[:, None])[:, 0]
    loss = scaled if reduction == "none" else scaled.sum()
    loss.sum().backward()
    return loss.detach(), x.grad


@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_token_scaling(reduction):
    """Liger's test_correctness_token_scaling(_functional, _module,
    _consistency): functional and module agree bit for bit, and match
    Liger's manual implementation"""
    B, T, H, V = 2, 4, 8, 16
    x = torch.randn(B * T, H)
    target = torch.randint(0, V, (B * T,))
    weight, b = torch.randn(V, H), torch.randn(V)
    x1, x2 = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    y1 = liger_fused_linear_cross_entropy(input=x1, weight=weight, target=target, bias=b, ignore_index=-100,
                                          reduction=reduction, use_token_scaling=True)
    y2 = LigerFusedLinearCrossEntropyLoss(ignore_index=-100, reduction=reduction, use_token_scaling=True)(
        weight, x2, target, b)
    assert torch.equal(y1, y2)
    y1.sum().backward(retain_graph=True)
    y2.sum().backward(retain_graph=True)
    assert torch.equal(x1.grad, x2.grad)
    g_first = x1.grad.clone()
    x1.grad.zero_()
    y1.sum().backward()  # a second backward through the retained graph gives the same gradient
    assert torch.equal(x1.grad, g_first)
    loss_ref, dx_ref = token_scaling_reference(x, weight, b, target, reduction)
    _ref.assert_close(y1, loss_ref, 1e-5, 1e-5, "loss")
    _ref.assert_close(g_first, dx_ref, 1e-5, 1e-5, "dx")


def test_token_scaling_with_ignore_index():
    H, V = 8, 1000
    target = torch.tensor([0, 100, -100, 500, -100, 999])
    x = torch.randn(6, H, requires_grad=True)
    weight, b = torch.randn(V, H), torch.randn(V)
    loss = liger_fused_linear_cross_entropy(input=x, weight=weight, target=target, bias=b, ignore_index=-100,
                                            reduction="sum", use_token_scaling=True)
    assert loss.numel() == 1 and torch.isfinite(loss)
    loss.backward()
    assert torch.isfinite(x.grad).all()
    assert torch.count_nonzero(x.grad[target == -100]) == 0
    loss_ref, dx_ref = token_scaling_reference(x, weight, b, target, "sum")
    _ref.assert_close(loss, loss_ref, 1e-5, 1e-5, "loss")
    _ref.assert_close(x.grad, dx_ref, 1e-5, 1e-5, "dx")


@pytest.mark.parametrize("return_z_loss, return_token_accuracy", [(False, False), (True, False), (False, True),
                                                                   (True, True)])
def test_structured_output(return_z_loss, return_token_accuracy):
    """Liger's test_liger_fused_linear_cross_entropy_structured_output"""
    hidden = torch.tensor([[0.2, -0.1], [1.0, 0.5], [-0.3, 0.7]], requires_grad=True)
    weight = torch.tensor([[0.5, -0.4], [-0.2, 0.3], [0.1, 0.6]])
    bias = torch.tensor([0.1, -0.2, 0.05])
    targets = torch.tensor([0, 1, 2])
    logits = hidden.detach() @ weight.t() + bias
    expected_loss = F.cross_entropy(logits, targets)
    expected_acc = (logits.argmax(-1) == targets).float().mean()
    for result in (liger_fused_linear_cross_entropy(input=hidden, weight=weight, target=targets, bias=bias,
                                                    return_z_loss=return_z_loss,
                                                    return_token_accuracy=return_token_accuracy),
                   LigerFusedLinearCrossEntropyLoss(return_z_loss=return_z_loss,
                                                    return_token_accuracy=return_token_accuracy)(
                       weight, hidden, targets, bias)):
        if not (return_z_loss or return_token_accuracy):
            assert isinstance(result, torch.Tensor)
            loss = result
        else:
            assert isinstance(result, CrossEntropyOutput)
            loss = result.loss
            assert (result.z_loss is not None) == return_z_loss
            assert (result.token_accuracy is not None) == return_token_accuracy
            assert result.predicted_tokens is None
            if return_token_accuracy:
                assert torch.allclose(result.token_accuracy, expected_acc, atol=1e-6)
        assert torch.allclose(loss, expected_loss, atol=1e-6)
        hidden.grad = None
        loss.backward()
        assert hidden.grad is not None


def test_module_and_torch_names():
    """ubgen.torch.FusedLinearCrossEntropyLoss (tuple) and Liger's module
    (dataclass): the same bits"""
    x = torch.randn(30, 16)
    w = torch.randn(50, 16)
    b = torch.randn(50)
    t = _ref.with_ignored(torch.randint(0, 50, (30,)), -100)
    kw = dict(ce_weight=torch.rand(50), lse_square_scale=1e-4, label_smoothing=0.05, reduction="sum", softcap=10.0,
              return_z_loss=True, return_token_accuracy=True, return_predicted_tokens=True)
    x1, x2 = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    a = ut.FusedLinearCrossEntropyLoss(**kw)(w, x1, t, b)
    c = LigerFusedLinearCrossEntropyLoss(**kw)(w, x2, t, b)
    assert isinstance(a, tuple) and isinstance(c, CrossEntropyOutput)
    for u, v in zip(a, (c.loss, c.z_loss, c.token_accuracy, c.predicted_tokens)):
        assert torch.equal(u, v)
    a[0].backward()
    c.loss.backward()
    assert torch.equal(x1.grad, x2.grad)
    assert TransformersFLCELoss is LigerFusedLinearCrossEntropyLoss
    assert ut.FusedLinearCrossEntropyFunction is LigerFusedLinearCrossEntropyFunction


def test_mixed_dtypes_amp_style():
    """Liger's test_amp in spirit: bf16 activations with a float32 weight
    and bias; each gradient comes back in its parameter's dtype, the values
    those of the reference within bf16's tolerance"""
    x = torch.randn(64, 32).bfloat16()
    w = torch.rand(100, 32)
    b = torch.rand(100)
    t = torch.randint(0, 100, (64,))
    xi, wi, bi = x.clone().requires_grad_(True), w.clone().requires_grad_(True), b.clone().requires_grad_(True)
    loss = ut.fused_linear_cross_entropy(xi, wi, t, bi)
    loss.backward()
    assert xi.grad.dtype == torch.bfloat16 and wi.grad.dtype == torch.float32 and bi.grad.dtype == torch.float32
    ref = reference(x, w.bfloat16(), b.bfloat16(), t, None, "mean")
    check_grads((xi.grad, wi.grad, bi.grad), ref[2:], 5e-3, 5e-2)
    _ref.assert_close(loss, ref[0], 5e-3, 5e-2, "loss")


def test_all_rows_ignored():
    x = torch.randn(4, 8, requires_grad=True)
    w = torch.randn(10, 8, requires_grad=True)
    out = liger_fused_linear_cross_entropy(x, w, torch.full((4,), -100), return_token_accuracy=True,
                                           return_predicted_tokens=True)
    assert out.loss.item() == 0.0 and torch.isnan(out.token_accuracy)
    assert torch.equal(out.predicted_tokens, torch.full((4,), -1))
    out.loss.backward()
    assert torch.count_nonzero(x.grad) == 0 and torch.count_nonzero(w.grad) == 0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_accum_dtype_none_sums_in_the_input_dtype(restore_context, dtype, reduction):
    """Liger's accum_dtype: None sums dweight and dbias in the input's dtype,
    rounded after every chunk (a reference that does so, chunk by chunk in
    float64, agrees almost everywhere); torch.float32 sums in f32 and rounds
    once; any third dtype is a ValueError naming it"""
    import ubgen
    ctx = ubgen.configure(threads=2)
    ctx.set_variant("flce", "chunk", "chunk=16")
    torch.manual_seed(5)
    bt, H, V = 96, 32, 200
    x, w, b = torch.randn(bt, H).to(dtype), (torch.randn(V, H) * 0.3).to(dtype), (torch.randn(V) * 0.3).to(dtype)
    t = torch.randint(0, V, (bt,))
    got = {}
    for accum in (None, torch.float32):
        wi, bi = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
        ut.fused_linear_cross_entropy(x, wi, t, bi, reduction=reduction, accum_dtype=accum).backward()
        got[accum] = (wi.grad, bi.grad)
    # the reference: each chunk's part in float64, added to the running sums in dtype
    acc_w, acc_b = torch.zeros(V, H, dtype=torch.float64), torch.zeros(V, dtype=torch.float64)
    exact_w = torch.zeros_like(acc_w)
    scale = 1.0 / bt if reduction == "mean" else 1.0
    for off in range(0, bt, 16):
        wr, br = _ref.leaf(w), _ref.leaf(b)
        loss, _ = _ref.flce(x[off:off + 16].double(), wr, t[off:off + 16], br, reduction="sum")
        (loss * scale).backward()
        acc_w = (acc_w + wr.grad).to(dtype).double()
        acc_b = (acc_b + br.grad).to(dtype).double()
        exact_w += wr.grad
    dw_none, db_none = got[None][0].double(), got[None][1].double()
    assert (dw_none == acc_w).float().mean() >= 0.95, (dw_none == acc_w).float().mean()
    assert (db_none == acc_b).float().mean() >= 0.95, (db_none == acc_b).float().mean()
    once = exact_w.to(dtype).double()
    assert ((dw_none == acc_w) & (acc_w != once)).any(), "no element tells the per-chunk rounding from one rounding"
    dw_f32 = got[torch.float32][0].double()
    assert (dw_f32 == once).float().mean() >= 0.95, (dw_f32 == once).float().mean()
    assert not torch.equal(dw_f32, dw_none)
    with pytest.raises(ValueError, match="accum_dtype=torch.float16" if dtype == torch.bfloat16 else
                       "accum_dtype=torch.bfloat16"):
        other = torch.float16 if dtype == torch.bfloat16 else torch.bfloat16
        ut.fused_linear_cross_entropy(x, w.clone().requires_grad_(True), t, accum_dtype=other)


def test_accum_dtype_is_moot_in_float32():
    torch.manual_seed(6)
    x, w, t = torch.randn(64, 16), torch.randn(50, 16), torch.randint(0, 50, (64,))
    grads = []
    for accum in (None, torch.float32):
        wi = w.clone().requires_grad_(True)
        ut.fused_linear_cross_entropy(x, wi, t, accum_dtype=accum).backward()
        grads.append(wi.grad)
    assert torch.equal(grads[0], grads[1])
    with pytest.raises(ValueError, match="accum_dtype=torch.bfloat16"):
        ut.fused_linear_cross_entropy(x, w, t, accum_dtype=torch.bfloat16)

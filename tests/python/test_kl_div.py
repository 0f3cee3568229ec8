"""KL divergence (ubgen.torch's KLDivLossFunction / kl_div / KLDivLoss and
Liger's LigerKLDivLossFunction, LigerKLDIVLoss, liger_kl_div) against
torch's kl_div in float64, forward and backward through autograd, each
reduction with and without log_target, Liger-Kernel's test_kl_div.py
inputs (y_pred a log_softmax in the dtype, y_true an f32 softmax) and
tolerances (f32 1e-8 / 1e-6, f16 1e-3 / 1e-3, bf16 1e-8 / 5e-2), at its
vocabularies (32000 and 1271) with fewer rows; y_true in the dtype too.
Liger's own shapes, 4096 x 32000 and 16441 x 1271, run under -m
large (not in make test or CI)."""
import pytest
import torch
import torch.nn.functional as F

import ubgen.torch as ut
from ubgen.liger import LigerKLDIVLoss, LigerKLDivLossFunction, liger_kl_div

import _ref
from _ref import DTYPE_IDS, DTYPES

TOL = {torch.float32: (1e-8, 1e-6), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-8, 5e-2)}
REDUCTIONS = ["batchmean", "sum", "mean", "none"]
SHAPES = [(64, 32000), (41 * 11, 1271)]
# torch's own warning for its reduction "mean" (Liger's and ubgen's give none)
pytestmark = pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")


def check(BT, V, dtype, reduction, log_target, target_dtype, grad_scale):
    torch.manual_seed(0)
    y_pred = torch.randn(BT, V, dtype=dtype).log_softmax(dim=-1).requires_grad_()
    y_true = torch.randn(BT, V).softmax(dim=-1).to(target_dtype)
    loss = LigerKLDIVLoss(reduction=reduction, log_target=log_target)(y_pred, y_true)
    pr = _ref.leaf(y_pred)
    want = F.kl_div(pr, y_true.double(), reduction=reduction, log_target=log_target)
    atol, rtol = TOL[dtype]
    assert loss.dtype == torch.float32 and loss.shape == want.shape  # Liger's loss is f32 for every dtype
    _ref.assert_close(loss, want, atol, rtol, "loss")
    g = torch.randn(BT, V) if reduction == "none" else torch.tensor(grad_scale)
    loss.backward(g)
    want.backward(g.double())
    assert y_pred.grad.dtype == dtype
    _ref.assert_close(y_pred.grad, pr.grad, atol, rtol, "dy_pred")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_target", [False, True], ids=["prob", "log_target"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("target", ["f32", "dtype"])
def test_against_torch(shape, log_target, reduction, dtype, target):
    """Liger's test_correctness and test_correctness_not_last (a grad_output of 2) in one"""
    check(*shape, dtype, reduction, log_target, torch.float32 if target == "f32" else dtype, 2.0)


@pytest.mark.large
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_target", [False, True], ids=["prob", "log_target"])
@pytest.mark.parametrize("shape", [(4096, 32000), (41 * 401, 1271)], ids=lambda s: "x".join(map(str, s)))
def test_liger_shapes(shape, log_target, reduction, dtype):
    check(*shape, dtype, reduction, log_target, torch.float32, 1.0)


def test_entry_points_agree():
    """the Function (default batchmean), the functional (default mean) and
    the modules (torch's default mean) give the same bits for the same reduction"""
    torch.manual_seed(1)
    p = torch.randn(6, 50).log_softmax(-1)
    t = torch.randn(6, 50).softmax(-1)
    ref = LigerKLDivLossFunction.apply(p, t)
    assert torch.equal(ref, ut.kl_div(p, t)) and torch.equal(ref, ut.KLDivLoss(reduction="batchmean")(p, t))
    mean = LigerKLDivLossFunction.apply(p, t, "mean")
    assert torch.equal(mean, liger_kl_div(p, t)) and torch.equal(mean, LigerKLDIVLoss()(p, t))
    assert torch.equal(ut.kl_div(p, t, "sum", True, 1e-3), liger_kl_div(p, t, reduction="sum", log_target=True))
    assert isinstance(LigerKLDIVLoss(), torch.nn.KLDivLoss) and LigerKLDIVLoss(eps=1e-6).eps == 1e-6


def test_zero_targets_and_empty_rows():
    p = torch.full((2, 3), -1.0)
    t = torch.tensor([[0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    _ref.assert_close(ut.kl_div(p, t, "none"), F.kl_div(p.double(), t.double(), reduction="none"), 1e-7, 1e-6, "l")
    assert ut.kl_div(torch.empty(0, 4), torch.empty(0, 4), "sum").item() == 0.0
    assert torch.isnan(ut.kl_div(torch.empty(0, 4), torch.empty(0, 4), "mean"))


def test_bad_inputs_are_refused():
    p = torch.randn(4, 8).log_softmax(-1)
    with pytest.raises(ValueError, match="reduction"):
        ut.kl_div(p, p.exp(), "avg")
    with pytest.raises(ValueError, match="shape"):
        ut.kl_div(p, p[:, :4].exp())
    with pytest.raises(ValueError, match="dimensions"):
        ut.kl_div(p.view(-1), p.view(-1).exp())
    with pytest.raises(TypeError, match="float64"):
        ut.kl_div(p.double(), p.double().exp())
    with pytest.raises(ValueError, match="eps"):
        ut.kl_div(p, p.exp(), eps=-1.0)
    with pytest.raises(ValueError, match="reduction"):
        LigerKLDIVLoss(reduction="avg")

"""Total variation distance (ubgen.torch's TVDLossFunction / tvd / TVDLoss
and Liger's LigerTVDLossFunction, LigerTVDLoss, liger_tvd) against Liger's
TorchTVDLoss written in float64, forward and backward through autograd:
Liger-Kernel's test_tvd.py grid (every reduction; last layer or not;
shift_labels with ignore_index -100, 0, 1) at its vocabularies with fewer
tokens (its odd 41 x 401 x 1271 kept as 41 x 11 x 1271), p in the dtype
against an f32 q as Liger's test has them, and p, q both in the dtype.
Liger's tolerance, atol 1e-8 and rtol 1e-6, for the loss and for the
gradient, which is compared after the reference's rounding to p's dtype
(Liger compares with torch's gradient in that dtype)."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerTVDLoss, LigerTVDLossFunction, liger_tvd

import _ref
from _ref import DTYPE_IDS, DTYPES

ATOL, RTOL = 1e-8, 1e-6
SHAPES = [(1, 64, 32000), (2, 32, 1024), (41, 11, 1271), (1, 4, 128256), (3, 5, 32000)]
REDUCTIONS = ["batchmean", "sum", "mean", "none"]
CALLS = {
    "Module": lambda p, q, lab, red, ign: LigerTVDLoss(reduction=red, ignore_index=ign)(p, q, lab),
    "Function": lambda p, q, lab, red, ign: LigerTVDLossFunction.apply(p, q, lab, red, ign),
    "liger_tvd": lambda p, q, lab, red, ign: liger_tvd(p, q, lab, red, ign),
    "ut": lambda p, q, lab, red, ign: ut.tvd(p, q, lab, red, ign),
}


def tvd_ref(p, q, labels, reduction, ignore_index):
    """Liger's TorchTVDLoss (test_tvd.py) on float64 leaves"""
    t = torch.abs(p - q) / 2.0
    n = p.shape[0]
    if labels is not None:
        keep = labels != ignore_index
        t = torch.where(keep.unsqueeze(1), t, torch.zeros_like(t))
        n = int(keep.sum())
    if reduction == "none":
        return t
    if reduction == "sum":
        return t.sum()
    if n == 0:
        return t.sum() * 0.0
    return t.sum() / (n * p.shape[1]) if reduction == "mean" else t.sum() / n


def labels_for(BT, V, ignore_index):
    """Liger's: random labels, 1 to BT / 2 of them ignore_index"""
    label = torch.randint(0, V, (BT,), dtype=torch.long)
    k = torch.randint(1, max(2, BT // 2), (1,)).item()
    label[torch.randperm(BT)[:k]] = ignore_index
    return label


def check(call, p, q, labels, reduction, ignore_index, grad_scale=1.0):
    x = p.detach().clone().requires_grad_()
    out = CALLS[call](x, q, labels, reduction, ignore_index)
    xr = _ref.leaf(p)
    want = tvd_ref(xr, q.double(), labels, reduction, ignore_index)
    assert out.dtype == torch.float32 and out.shape == want.shape
    _ref.assert_close(out, want, ATOL, RTOL, "loss")
    g = torch.randn(out.shape) if reduction == "none" else torch.tensor(grad_scale)
    out.backward(g)
    want.backward(g.double())
    assert x.grad.dtype == p.dtype
    _ref.assert_close(x.grad, xr.grad.to(p.dtype), ATOL, RTOL, "dp")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("B, T, V", SHAPES, ids=lambda s: str(s))
def test_correctness(B, T, V, reduction, dtype):
    """Liger's test_correctness and _not_last: p randn in the dtype, q an f32 softmax"""
    torch.manual_seed(0)
    p = torch.randn(B * T, V, dtype=dtype)
    q = torch.randn(B * T, V).softmax(dim=-1)
    for call, scale in (("Module", 1.0), ("Function", 2.0)):
        check(call, p, q, None, reduction, -100, scale)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("ignore_index", [-100, 0, 1])
@pytest.mark.parametrize("B, T, V", SHAPES[1:3], ids=lambda s: str(s))
def test_correctness_with_ignore_index(B, T, V, ignore_index, reduction, dtype):
    torch.manual_seed(ignore_index + 100)
    p = torch.randn(B * T, V, dtype=dtype)
    q = torch.randn(B * T, V).softmax(dim=-1)
    check("Module", p, q, labels_for(B * T, V, ignore_index), reduction, ignore_index)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_both_in_the_dtype(call, dtype):
    """p and q two softmaxes in the dtype (Liger's benchmark's inputs): the
    kernel of that dtype"""
    torch.manual_seed(1)
    p = torch.randn(37, 1271).softmax(dim=-1).to(dtype)
    q = torch.randn(37, 1271).softmax(dim=-1).to(dtype)
    for reduction in REDUCTIONS:
        check(call, p, q, labels_for(37, 1271, -100), reduction, -100, 0.5)


def test_defaults_as_liger():
    """the Function and the Module reduce by batchmean, liger_tvd by mean"""
    torch.manual_seed(2)
    p, q = torch.randn(6, 50).softmax(-1), torch.randn(6, 50).softmax(-1)
    total = (p - q).abs().sum().double() / 2
    assert abs(LigerTVDLossFunction.apply(p, q).item() - total / 6) < 1e-7
    assert abs(LigerTVDLoss()(p, q).item() - total / 6) < 1e-7
    assert abs(liger_tvd(p, q).item() - total / 300) < 1e-9


def test_ties_nan_and_no_row_kept():
    """p == q: a gradient of 0 (torch's; Liger's kernel gives -0.5 / BT);
    NaN stays NaN; every row ignored: 0, where Liger divides by zero"""
    p = torch.tensor([[0.25, 0.5, float("nan"), 0.25]], requires_grad=True)
    q = torch.tensor([[0.25, 0.25, 0.25, 0.25]])
    ut.tvd(p, q, reduction="sum").backward()
    assert p.grad[0, 0] == 0 and p.grad[0, 1] == 0.5 and p.grad[0, 2].isnan() and p.grad[0, 3] == 0
    p.grad = None
    loss = ut.tvd(p, q, torch.tensor([-100]), reduction="batchmean")
    loss.backward()
    assert loss.item() == 0 and (p.grad == 0).all()


def test_bad_inputs_are_refused():
    p = torch.rand(4, 8)
    with pytest.raises(ValueError, match="reduction='avg'"):
        ut.tvd(p, p, reduction="avg")
    with pytest.raises(ValueError, match=r"q has shape \(4, 7\)"):
        ut.tvd(p, p[:, :7])
    with pytest.raises(ValueError, match=r"shift_labels has shape \(3,\)"):
        ut.tvd(p, p, torch.zeros(3, dtype=torch.long))
    with pytest.raises(TypeError, match="float64"):
        ut.tvd(p.double(), p)
    with pytest.raises(ValueError, match="2 dimensions"):
        ut.tvd(p.view(2, 2, 8), p.view(2, 2, 8))

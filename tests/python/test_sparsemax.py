"""Sparsemax (ubgen.torch's SparsemaxFunction / sparsemax / Sparsemax and
Liger's LigerSparsemaxFunction, LigerSparsemax, liger_sparsemax) against
the sort of Martins & Astudillo in float64, forward and backward through
autograd, over the shapes of Liger-Kernel's test_sparsemax.py (dim -1 and
1) and more dims; Liger's f32 tolerance (1e-5) and its check that rows sum
to 1 (1e-4), and in f16 / bf16 1e-2 / 2e-2 (Liger tests f32 only)."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerSparsemax, LigerSparsemaxFunction, liger_sparsemax

import _ref
from _ref import DTYPE_IDS, DTYPES

TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}
CASES = [((2, 128, 512), -1), ((2, 128, 512), 1), ((5, 123, 123), -1), ((5, 123, 123), 1),
         ((1, 1), -1), ((3, 7), 0), ((4, 5, 6), 0), ((2, 70000), -1)]


def sparsemax_ref(x, dim):
    """float64 sparsemax along dim by a sort; autograd gives its gradient,
    0 where y = 0 (Liger's support, y > 0: torch.clamp's would pass it where
    x = tau exactly, a tie f16's and bf16's coarse values make)"""
    z = torch.sort(x, dim=dim, descending=True).values
    cum = z.cumsum(dim)
    shape = [1] * x.dim()
    shape[dim] = x.shape[dim]
    j = torch.arange(1, x.shape[dim] + 1, dtype=x.dtype).view(shape)
    support = 1 + j * z > cum
    k = support.sum(dim, keepdim=True)
    tau = ((z * support).sum(dim, keepdim=True) - 1) / k
    return torch.where(x > tau, x - tau, 0.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape, dim", CASES, ids=lambda c: "x".join(map(str, c)) if isinstance(c, tuple) else str(c))
@pytest.mark.parametrize("fn", [LigerSparsemaxFunction.apply, liger_sparsemax, ut.sparsemax, "Module"],
                         ids=["Function", "liger_sparsemax", "ut", "Module"])
def test_against_torch(fn, shape, dim, dtype):
    torch.manual_seed(0)
    x = torch.randn(*shape).to(dtype).requires_grad_()
    dy = torch.randn(*shape).to(dtype)
    y = LigerSparsemax(dim)(x) if fn == "Module" else fn(x, dim)
    y.backward(dy)
    xr = _ref.leaf(x)
    want = sparsemax_ref(xr, dim)
    want.backward(dy.to(torch.float64))
    atol, rtol = TOL[dtype]
    assert y.dtype == dtype and x.grad.dtype == dtype and y.shape == x.shape
    _ref.assert_close(y, want, atol, rtol, "y")
    _ref.assert_close(x.grad, xr.grad, atol, rtol, "dx")
    if dtype == torch.float32:
        sums = y.double().sum(dim)
        _ref.assert_close(sums, torch.ones_like(sums), 10 * atol, 10 * rtol, "sum of y")


def test_module_repr_and_noncontiguous_input():
    assert repr(LigerSparsemax(dim=1)) == "LigerSparsemax(dim=1)"
    x = torch.randn(6, 9).t()  # [9, 6], not contiguous
    _ref.assert_close(ut.sparsemax(x, 0), sparsemax_ref(x.double(), 0), 1e-5, 1e-5, "y")


def test_special_rows():
    inf = float("inf")
    x = torch.tensor([[-inf] * 4, [1.0, float("nan"), 2.0, 3.0], [1.0, 0.0, -inf, 0.5]])
    y = ut.sparsemax(x)
    assert torch.isnan(y[0]).all() and torch.isnan(y[1]).all()
    assert y[2].tolist() == [0.75, 0.0, 0.0, 0.25]


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError, match="float64"):
        ut.sparsemax(torch.randn(4, 8).double())
    with pytest.raises(ValueError, match="dimensions"):
        ut.sparsemax(torch.tensor(1.0))
    with pytest.raises(IndexError, match="dim=2"):
        ut.sparsemax(torch.randn(4, 8), 2)

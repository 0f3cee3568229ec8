"""Softmax over the last dimension (ubgen.torch's SoftmaxFunction /
softmax / Softmax and Liger's LigerSoftmaxFunction, LigerSoftmax,
liger_softmax) against torch.softmax in float64, forward and backward
through autograd, over the shapes of Liger-Kernel's test_softmax.py (its
multi-block rows of 70000 included); Liger's f32 tolerance (1e-5), and in
bf16 2e-2 (Liger's: 5e-2), f16 1e-2."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerSoftmax, LigerSoftmaxFunction, liger_softmax

import _ref
from _ref import DTYPE_IDS, DTYPES

TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}
SHAPES = [(2, 8), (4, 16), (1, 1023), (3, 7, 256), (1, 4096), (1, 2, 4096), (2, 70000), (1, 3, 70000)]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", [LigerSoftmaxFunction.apply, liger_softmax, ut.softmax, LigerSoftmax()],
                         ids=["Function", "liger_softmax", "ut", "Module"])
def test_against_torch(fn, shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(*shape).to(dtype).requires_grad_()
    dy = torch.randn(*shape).to(dtype)
    y = fn(x)
    y.backward(dy)
    xr = _ref.leaf(x)
    want = torch.softmax(xr, dim=-1)
    want.backward(dy.to(torch.float64))
    atol, rtol = TOL[dtype]
    assert y.dtype == dtype and x.grad.dtype == dtype
    _ref.assert_close(y, want, atol, rtol, "y")
    _ref.assert_close(x.grad, xr.grad, atol, rtol, "dx")


def test_masked_rows_as_torch():
    x = torch.tensor([[-float("inf")] * 4, [0.0, -float("inf"), 0.0, 1.0]])
    y, want = ut.softmax(x), torch.softmax(x, dim=-1)
    assert torch.isnan(y[0]).all() and torch.isnan(want[0]).all()
    _ref.assert_close(y[1], want[1].double(), 1e-6, 1e-6, "row with a -Inf")


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError, match="float64"):
        ut.softmax(torch.randn(4, 8).double())
    with pytest.raises(ValueError, match="dimensions"):
        ut.softmax(torch.tensor(1.0))

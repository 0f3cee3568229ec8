"""Squared ReLU (ubgen.torch's ReLUSquaredFunction / relu_squared /
ReLUSquared and Liger's LigerReLUSquaredFunction, LigerReLUSquared,
liger_relu_squared) against relu(x)^2 in float64, forward and backward
through autograd, over the shapes of Liger-Kernel's test_relu_squared.py
plus rows above the largest block; Liger's f32 tolerance (1e-5), and
1e-2 in f16 and bf16 (one rounding; Liger's bf16 test allows 1e-1 / 5e-2)."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerReLUSquared, LigerReLUSquaredFunction, liger_relu_squared

import _ref
from _ref import DTYPE_IDS, DTYPES

TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (1e-2, 1e-2)}
SHAPES = [(2, 8, 4096), (4, 16, 2048), (1, 1, 1023), (3, 7, 256), (2, 8), (1, 4096), (2, 20000), (5,)]


def reference(x, dy):
    xr = _ref.leaf(x)
    y = torch.square(torch.relu(xr))
    y.backward(dy.to(torch.float64))
    return y, xr.grad


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", [lambda x: LigerReLUSquaredFunction.apply(x)[0], liger_relu_squared, ut.relu_squared,
                                LigerReLUSquared()], ids=["Function", "liger_relu_squared", "ut", "Module"])
def test_against_torch(fn, shape, dtype):
    x = torch.randn(*shape).to(dtype).requires_grad_()
    dy = torch.randn(*shape).to(dtype)
    y = fn(x)
    y.backward(dy)
    atol, rtol = TOL[dtype]
    want_y, want_dx = reference(x, dy)
    assert y.dtype == dtype and x.grad.dtype == dtype
    _ref.assert_close(y, want_y, atol, rtol, "y")
    _ref.assert_close(x.grad, want_dx, atol, rtol, "dx")


def test_function_returns_y_and_x_as_ligers():
    x = torch.randn(3, 8, requires_grad=True)
    y, same = LigerReLUSquaredFunction.apply(x)
    assert torch.equal(same, x) and same.shape == x.shape
    # a gradient through the second output reaches x as well (Liger drops it)
    (y.sum() + (3 * same).sum()).backward()
    _ref.assert_close(x.grad, 2 * torch.relu(x.detach()).double() + 3, 1e-6, 1e-6, "dx")


def test_nan_and_inf():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, -2.0, 3.0])
    y = ut.relu_squared(x)
    assert torch.isnan(y[0]) and y[1] == float("inf") and torch.equal(y[2:], torch.tensor([0.0, 0, 0, 0, 9]))


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError, match="float64"):
        ut.relu_squared(torch.randn(4, 8).double())
    with pytest.raises(TypeError, match="torch.Tensor"):
        ut.relu_squared([1.0, 2.0])

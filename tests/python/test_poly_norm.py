"""PolyNorm (ubgen.torch's PolyNormFunction / poly_norm / PolyNorm and
Liger's LigerPolyNormFunction, liger_poly_norm, LigerPolyNorm) against
PolyCom's formula in float64, forward and backward through autograd, over
the shapes of Liger-Kernel's test_poly_norm.py plus a row longer than a
whole-row variant holds; Liger's f32 tolerances (3e-4 / 1e-6, and 1e-4 /
1e-6 at its functional test's shapes), and 2e-2 in bf16 (Liger's bf16
tests compare with torch's bf16 at 6e-1 / 5e-2; against float64 a bf16
result is within its rounding), f16 1e-2."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerPolyNorm, LigerPolyNormFunction, liger_poly_norm
from ubgen.torch import _util

import _ref
from _ref import DTYPE_IDS, DTYPES

EPS = 1e-6
TOL = {torch.float32: (3e-4, 1e-6), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}
SMALL_F32 = (1e-4, 1e-6)  # test_correctness_functional's f32 tolerance, at its shapes
SHAPES = [(2, 128, 512), (8, 64, 1024), (5, 123, 123), (2, 2, 8), (9, 7, 41), (32, 512), (4, 8, 16, 512),
          (2, 70000)]


def reference(x, w, b, dy, eps=EPS):
    """PolyCom's PolyNorm in float64: (y, dx, dw, db)"""
    xr, wr, br = _ref.leaf(x), _ref.leaf(w), _ref.leaf(b)

    def norm(u):
        return u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + eps)

    y = wr[0] * norm(xr ** 3) + wr[1] * norm(xr ** 2) + wr[2] * norm(xr) + br
    y.backward(dy.to(torch.float64))
    return y, xr.grad, wr.grad, br.grad


def check(got, want, dtype, shape, what):
    atol, rtol = SMALL_F32 if dtype == torch.float32 and shape[-1] < 64 else TOL[dtype]
    for g, w, name in zip(got, want, ("y", "dx", "dw", "db")):
        assert g.dtype == dtype, (name, g.dtype)
        _ref.assert_close(g, w, atol, rtol, "%s %s" % (what, name))


def inputs(shape, dtype):
    x = torch.randn(*shape).to(dtype).requires_grad_()
    w = torch.tensor([0.3, 0.4, 0.3]).to(dtype).requires_grad_()
    b = torch.tensor(0.1).to(dtype).requires_grad_()
    return x, w, b, torch.randn(*shape).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", [LigerPolyNormFunction.apply, liger_poly_norm, ut.poly_norm],
                         ids=["Function", "liger_poly_norm", "ut.poly_norm"])
def test_function(fn, shape, dtype):
    x, w, b, dy = inputs(shape, dtype)
    y = fn(x, w, b, EPS)
    y.backward(dy)
    check((y, x.grad, w.grad, b.grad), reference(x, w, b, dy), dtype, shape, "poly_norm")


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "out-of-place"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_module(dtype, in_place):
    """LigerPolyNorm as Liger's test_correctness builds it: PolyCom's
    initial weight (1/3 each) and bias (1, a 0-dimensional parameter)"""
    m = LigerPolyNorm(eps=EPS, in_place=in_place).to(dtype)
    assert torch.equal(m.weight, torch.full((3,), 1 / 3).to(dtype)) and m.bias.shape == () and m.bias.item() == 1
    assert m.variance_epsilon == EPS and m.in_place == in_place
    x, dy = torch.randn(2, 128, 512).to(dtype).requires_grad_(), torch.randn(2, 128, 512).to(dtype)
    g = dy.clone()
    y = m(x)
    y.backward(g)
    assert torch.equal(g, dy), "the caller's gradient was overwritten"
    assert m.weight.grad.shape == (3,) and m.bias.grad.shape == ()
    check((y, x.grad, m.weight.grad, m.bias.grad), reference(x, m.weight, m.bias, dy), dtype, x.shape,
          "LigerPolyNorm")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_in_place_backward_writes_dx_over_a_private_gradient(dtype):
    """in_place=True (Liger's default): where autograd gives the gradient to
    this backward alone, dX is written over it (no new buffer) and is right"""
    x, w, b, dy = inputs((3, 5, 64), dtype)
    y = ut.poly_norm(x, w, b, EPS, in_place=True)
    given = []
    y.register_hook(lambda g: given.append(g.data_ptr()))
    (y * dy).sum().backward()  # y's gradient: mul's fresh dy * 1
    assert (x.grad.data_ptr() == given[0]) == (_util._PRIVATE is not None)
    check((y, x.grad, w.grad, b.grad), reference(x, w, b, dy), dtype, x.shape, "in place")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_mixed_parameter_dtype(dtype):
    """float32 parameters with a 16-bit input run in the input's dtype; their
    gradients come back in their own dtype"""
    x = torch.randn(4, 96, dtype=dtype)
    w, b = torch.tensor([0.3, 0.4, 0.3], requires_grad=True), torch.tensor(0.1, requires_grad=True)
    y = ut.poly_norm(x, w, b)
    assert y.dtype == dtype
    y.backward(torch.ones_like(y))
    assert w.grad.dtype == torch.float32 and b.grad.dtype == torch.float32 and b.grad.shape == ()


def test_bad_inputs_are_refused():
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match="3 elements"):
        ut.poly_norm(x, torch.ones(4), torch.ones(()))
    with pytest.raises(ValueError, match="one element"):
        ut.poly_norm(x, torch.ones(3), torch.ones(2))
    with pytest.raises(TypeError, match="float64"):
        ut.poly_norm(x.double(), torch.ones(3), torch.ones(()))
    with pytest.raises(ValueError, match="shape"):
        ut.poly_norm(x, torch.ones(3, 1), torch.ones(()))
    with pytest.raises(ValueError, match="eps"):
        ut.poly_norm(x, torch.ones(3), torch.ones(()), float("nan"))

"""DyT (ubgen.torch's DyTFunction / dyt / DyT and Liger's LigerDyTFunction,
LigerDyT, liger_dyt) against gamma * tanh(alpha * x) + beta in float64,
forward and backward through autograd, over the shapes of Liger-Kernel's
test_dyt.py plus rows longer than a whole-row variant holds, with and
without beta; Liger's f32 tolerance (1e-5), and 2e-2 in bf16 (Liger's own
bf16 test compares two of its runs; against float64 a bf16 output is
within its rounding), f16 1e-2."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerDyT, LigerDyTFunction, liger_dyt

import _ref
from _ref import DTYPE_IDS, DTYPES

TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}
SHAPES = [(2, 8, 4096), (4, 16, 2048), (1, 1, 1023), (3, 7, 256), (2, 20000)]


def reference(x, alpha, gamma, beta, dy):
    xr, ar, gr = _ref.leaf(x), _ref.leaf(alpha), _ref.leaf(gamma)
    br = None if beta is None else _ref.leaf(beta)
    y = gr * torch.tanh(ar * xr) + (0 if br is None else br)
    y.backward(dy.to(torch.float64))
    return y, xr.grad, ar.grad, gr.grad, None if br is None else br.grad


def check(got, want, dtype, what):
    atol, rtol = TOL[dtype]
    for g, w, name in zip(got, want, ("y", "dx", "dalpha", "dgamma", "dbeta")):
        if w is None:
            assert g is None, name
            continue
        assert g.dtype == dtype, (name, g.dtype)
        _ref.assert_close(g, w, atol, rtol, "%s %s" % (what, name))


def inputs(shape, dtype, beta):
    H = shape[-1]
    x = torch.randn(*shape).to(dtype).requires_grad_()
    alpha = torch.randn(1).to(dtype).requires_grad_()
    gamma = torch.randn(H).to(dtype).requires_grad_()
    b = torch.randn(H).to(dtype).requires_grad_() if beta else None
    return x, alpha, gamma, b, torch.randn(*shape).to(dtype)


@pytest.mark.parametrize("beta", [False, True], ids=["no_beta", "beta"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", [LigerDyTFunction.apply, liger_dyt, ut.dyt], ids=["Function", "liger_dyt", "ut.dyt"])
def test_function(fn, shape, dtype, beta):
    x, alpha, gamma, b, dy = inputs(shape, dtype, beta)
    y = fn(x, alpha, gamma, b)
    y.backward(dy)
    check((y, x.grad, alpha.grad, gamma.grad, None if b is None else b.grad), reference(x, alpha, gamma, b, dy),
          dtype, "dyt")


@pytest.mark.parametrize("beta", [False, True], ids=["no_beta", "beta"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_module(dtype, beta):
    m = LigerDyT(1024, beta=beta).to(dtype)
    assert m.alpha.item() == 0.5 and torch.equal(m.gamma, torch.ones(1024, dtype=dtype))
    assert (m.beta is None) == (not beta)
    with torch.no_grad():
        m.alpha.fill_(0.8), m.gamma.normal_()
    x, dy = torch.randn(3, 5, 1024).to(dtype).requires_grad_(), torch.randn(3, 5, 1024).to(dtype)
    y = m(x)
    y.backward(dy)
    check((y, x.grad, m.alpha.grad, m.gamma.grad, None if m.beta is None else m.beta.grad),
          reference(x, m.alpha, m.gamma, m.beta, dy), dtype, "LigerDyT")


def test_bad_inputs_are_refused():
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match="last dimension is 8"):
        ut.dyt(x, torch.ones(1), torch.ones(9))
    with pytest.raises(ValueError, match="one element"):
        ut.dyt(x, torch.ones(2), torch.ones(8))
    with pytest.raises(TypeError, match="float64"):
        ut.dyt(x.double(), torch.ones(1), torch.ones(8))
    with pytest.raises(ValueError, match="shape"):
        ut.dyt(x, torch.ones(1), torch.ones(8, 1))

"""LayerNorm (ubgen.torch's LayerNormFunction / layer_norm / LayerNorm and
Liger's LigerLayerNormFunction, LigerLayerNorm, liger_layer_norm) against
torch.nn.functional.layer_norm in float64, forward and backward through
autograd, over the shapes of Liger-Kernel's test_layer_norm.py plus rows
longer than a whole-row variant holds, with Liger's tolerances (f32 1e-5,
bf16 2e-2; f16 between them)."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerLayerNorm, LigerLayerNormFunction, liger_layer_norm

import _ref
from _ref import DTYPE_IDS, DTYPES

F64 = torch.float64
TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}
EPS = 1e-6
SHAPES = [(2, 8, 64), (4, 16, 128), (1, 1, 1023), (3, 7, 256), (1, 1, 1500), (3, 512, 128), (2, 20000)]


def reference(x, w, b, dy):
    xr, wr, br = _ref.leaf(x), _ref.leaf(w), _ref.leaf(b)
    y = torch.nn.functional.layer_norm(xr, (x.shape[-1],), wr, br, EPS)
    y.backward(dy.to(F64))
    return y, xr.grad, wr.grad, br.grad


def check(got, want, dtype, what):
    atol, rtol = TOL[dtype]
    for g, w, name in zip(got, want, ("y", "dx", "dw", "db")):
        assert g.dtype == dtype, (name, g.dtype)
        _ref.assert_close(g, w, atol, rtol, "%s %s" % (what, name))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", [LigerLayerNormFunction.apply, liger_layer_norm, ut.layer_norm],
                         ids=["Function", "liger_layer_norm", "ut.layer_norm"])
def test_function(fn, shape, dtype):
    H = shape[-1]
    x = (torch.randn(*shape) * 2 + 0.5).to(dtype).requires_grad_()
    w = torch.randn(H).to(dtype).requires_grad_()
    b = torch.randn(H).to(dtype).requires_grad_()
    dy = torch.randn(*shape).to(dtype)
    y = fn(x, w, b, EPS)
    y.backward(dy)
    check((y, x.grad, w.grad, b.grad), reference(x, w, b, dy), dtype, "layer_norm")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES[:5], ids=lambda s: "x".join(map(str, s)))
def test_module_against_torch_layer_norm(shape, dtype):
    H = shape[-1]
    ln = LigerLayerNorm(H, eps=EPS, bias=True).to(dtype)
    x = torch.randn(*shape).to(dtype).requires_grad_()
    dy = torch.randn(*shape).to(dtype)
    y = ln(x)
    y.backward(dy)
    check((y, x.grad, ln.weight.grad, ln.bias.grad), reference(x, ln.weight, ln.bias, dy), dtype, "LigerLayerNorm")


def test_liger_layer_norm_module_options():
    ln = LigerLayerNorm(16)
    assert torch.equal(ln.weight, torch.ones(16)) and torch.equal(ln.bias, torch.zeros(16))
    assert isinstance(ln.bias, torch.nn.Parameter) and ln.variance_epsilon == 1e-6
    assert torch.equal(LigerLayerNorm(16, init_fn="zeros").weight, torch.zeros(16))
    with pytest.raises(AssertionError):
        LigerLayerNorm(16, init_fn="twos")
    assert repr(ln) == "LigerLayerNorm(16, eps=1e-06)"
    m = ut.LayerNorm(32)
    x = torch.randn(3, 32)
    _ref.assert_close(m(x), torch.nn.functional.layer_norm(x.double(), (32,), eps=1e-6), 1e-5, 1e-5, "ut.LayerNorm")


def test_bad_inputs_are_refused():
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match="last dimension is 8"):
        ut.layer_norm(x, torch.ones(9), torch.zeros(9))
    with pytest.raises(TypeError, match="float64"):
        ut.layer_norm(x.double(), torch.ones(8), torch.zeros(8))
    with pytest.raises(ValueError, match="eps"):
        ut.layer_norm(x, torch.ones(8), torch.zeros(8), float("nan"))

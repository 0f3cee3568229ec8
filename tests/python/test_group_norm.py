"""GroupNorm (ubgen.torch's GroupNormFunction / group_norm / GroupNorm and
Liger's LigerGroupNormFunction, LigerGroupNorm, liger_group_norm) against
torch.nn.functional.group_norm in float64, forward and backward through
autograd, over the shapes of Liger-Kernel's test_group_norm.py plus a 4-D
input and a row longer than a whole-row variant holds; Liger's f32
tolerance (1e-4), f16 1e-2 and bf16 2e-2 (Liger tests f32 only)."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerGroupNorm, LigerGroupNormFunction, liger_group_norm

import _ref
from _ref import DTYPE_IDS, DTYPES

F64 = torch.float64
TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}
EPS = 1e-6
# (x's shape, groups): Liger's (batch, channels, groups, hidden) cases, then [B, C, H, W] and 20,000 per row
SHAPES = [((1, 1, 3), 1), ((1, 32, 4), 32), ((16, 32, 4096), 1), ((2, 63, 2163), 21), ((16, 48, 8192), 12),
          ((2, 6, 5, 7), 3), ((3, 4, 10000), 2)]


def reference(x, w, b, groups, dy):
    xr, wr, br = _ref.leaf(x), _ref.leaf(w), _ref.leaf(b)
    y = torch.nn.functional.group_norm(xr, groups, wr, br, EPS)
    y.backward(dy.to(F64))
    return y, xr.grad, wr.grad, br.grad


def check(got, want, dtype, what):
    atol, rtol = TOL[dtype]
    for g, w, name in zip(got, want, ("y", "dx", "dw", "db")):
        assert g.dtype == dtype, (name, g.dtype)
        _ref.assert_close(g, w, atol, rtol, "%s %s" % (what, name))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,groups", SHAPES, ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else
                         "g%d" % s)
@pytest.mark.parametrize("fn", [LigerGroupNormFunction.apply, liger_group_norm, ut.group_norm],
                         ids=["Function", "liger_group_norm", "ut.group_norm"])
def test_function(fn, shape, groups, dtype):
    C = shape[1]
    x = (torch.randn(*shape) * 2 + 0.5).to(dtype).requires_grad_()
    w = torch.randn(C).to(dtype).requires_grad_()
    b = torch.randn(C).to(dtype).requires_grad_()
    dy = torch.randn(*shape).to(dtype)
    y = fn(x, w, b, C, groups, EPS)
    y.backward(dy)
    check((y, x.grad, w.grad, b.grad), reference(x, w, b, groups, dy), dtype, "group_norm")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,groups", SHAPES[:5], ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple)
                         else "g%d" % s)
def test_module_against_torch_group_norm(shape, groups, dtype):
    """Liger's test: LigerGroupNorm beside torch.nn.GroupNorm with the same parameters"""
    C = shape[1]
    gn = LigerGroupNorm(C, groups, eps=EPS, bias=True).to(dtype)
    x = torch.randn(*shape).to(dtype).requires_grad_()
    dy = torch.randn(*shape).to(dtype)
    y = gn(x)
    y.backward(dy)
    check((y, x.grad, gn.weight.grad, gn.bias.grad), reference(x, gn.weight, gn.bias, groups, dy), dtype,
          "LigerGroupNorm")


def test_liger_group_norm_module_options():
    gn = LigerGroupNorm(16, 4)
    assert torch.equal(gn.weight, torch.ones(16)) and torch.equal(gn.bias, torch.zeros(16))
    assert isinstance(gn.bias, torch.nn.Parameter) and gn.variance_epsilon == 1e-6
    assert torch.equal(LigerGroupNorm(16, 4, init_fn="zeros").weight, torch.zeros(16))
    with pytest.raises(AssertionError):
        LigerGroupNorm(16, 4, init_fn="twos")
    with pytest.raises(AssertionError):
        LigerGroupNorm(16, 3)
    with pytest.raises(AssertionError):
        gn(torch.randn(2, 16))
    assert repr(gn) == "LigerGroupNorm(num_channels=16, num_groups=4, eps=1e-06)"
    m = ut.GroupNorm(32, 8)
    x = torch.randn(3, 32, 5)
    _ref.assert_close(m(x), torch.nn.functional.group_norm(x.double(), 8, eps=1e-6), 1e-5, 1e-5, "ut.GroupNorm")


def test_empty_batch():
    x = torch.randn(0, 4, 3, requires_grad=True)
    w, b = torch.ones(4, requires_grad=True), torch.zeros(4, requires_grad=True)
    y = ut.group_norm(x, w, b, 4, 2)
    y.sum().backward()
    assert y.shape == (0, 4, 3) and torch.equal(w.grad, torch.zeros(4)) and torch.equal(b.grad, torch.zeros(4))


def test_bad_inputs_are_refused():
    x = torch.randn(2, 8, 5)
    with pytest.raises(ValueError, match="X has 8 channels"):
        ut.group_norm(x, torch.ones(9), torch.zeros(9), 8, 2)
    with pytest.raises(ValueError, match="num_channels = 6"):
        ut.group_norm(x, torch.ones(8), torch.zeros(8), 6, 2)
    with pytest.raises(ValueError, match="num_groups = 3"):
        ut.group_norm(x, torch.ones(8), torch.zeros(8), 8, 3)
    with pytest.raises(TypeError, match="float64"):
        ut.group_norm(x.double(), torch.ones(8), torch.zeros(8), 8, 2)
    with pytest.raises(ValueError, match="eps"):
        ut.group_norm(x, torch.ones(8), torch.zeros(8), 8, 2, float("nan"))

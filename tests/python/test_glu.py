"""SwiGLU and GEGLU (ubgen.torch's SiLUMulFunction / GELUMulFunction and the
MLPs, Liger's LigerSiLUMulFunction, LigerGELUMulFunction, LigerSwiGLUMLP,
LigerGEGLUMLP, liger_swiglu, liger_geglu) against float64 torch
references, forward and backward through autograd, over the shapes of
Liger-Kernel's test_swiglu.py and test_geglu.py plus float16.

Tolerances: the activation alone with Liger's (test_swiglu's multiplier
test: f32 1e-3 / 1e-5, bf16 1e-1 / 1e-2; f16 between them); a whole MLP is
compared with the same MLP in torch at the input's dtype, as Liger's MLP
tests do, with their tolerances (f32 1e0 / 1e-5, bf16 1e4 / 1e-2, which
mostly measure torch's own bf16 GEMMs)."""
import types

import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import (LigerGEGLUMLP, LigerGELUMulFunction, LigerSiLUMulFunction, LigerSwiGLUMLP, liger_geglu,
                         liger_swiglu)

import _ref
from _ref import DTYPE_IDS, DTYPES

F64 = torch.float64
TOL = {torch.float32: (1e-3, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (1e-1, 1e-2)}
MLP_TOL = {torch.float32: (1e0, 1e-5), torch.bfloat16: (1e4, 1e-2)}


def silu_mul(a, b, gm, dm, dtype):
    """the float64 reference, with the roundings Liger's kernel has"""
    x = a * gm
    c = _ref.st_round(x * torch.sigmoid(x), dtype) * b
    return c if dm == 1 else _ref.st_round(c, dtype) * dm


def gelu_mul(a, b, dtype):
    return _ref.st_round(torch.nn.functional.gelu(a, approximate="tanh"), dtype) * b


def run_both(fn, ref, a, b, dtype):
    """(c, da, db) from fn on dtype tensors and from ref in float64, for the
    same upstream gradient"""
    a, b = a.to(dtype).requires_grad_(), b.to(dtype).requires_grad_()
    c = fn(a, b)
    dc = torch.randn_like(c)
    c.backward(dc)
    ar, br = _ref.leaf(a), _ref.leaf(b)
    cr = ref(ar, br)
    cr.backward(dc.to(F64))
    return (c, a.grad, b.grad), (cr, ar.grad, br.grad)


def check(got, want, dtype, what):
    atol, rtol = TOL[dtype]
    for g, w, name in zip(got, want, ("c", "da", "db")):
        assert g.dtype == dtype and g.shape == w.shape
        _ref.assert_close(g, w, atol, rtol, "%s %s" % (what, name))


SHAPES = [(2, 8, 8), (9, 7, 41), (1, 4097), (3, 20000)]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", [LigerSiLUMulFunction.apply, liger_swiglu, ut.swiglu], ids=["Function", "liger_swiglu",
                                                                                             "ut.swiglu"])
def test_swiglu(fn, shape, dtype):
    a, b = torch.randn(*shape) * 4, torch.randn(*shape)
    got, want = run_both(fn, lambda x, y: silu_mul(x, y, 1.0, 1.0, dtype), a, b, dtype)
    check(got, want, dtype, "swiglu")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("gm, dm", [(0.7, 1.3), (1.5, 0.5), (1.0, 1.0)])
@pytest.mark.parametrize("shape", [(2, 8, 8), (9, 7, 41)], ids=lambda s: "x".join(map(str, s)))
def test_swiglu_multipliers(shape, gm, dm, dtype):
    a, b = torch.randn(*shape), torch.randn(*shape)
    got, want = run_both(lambda x, y: LigerSiLUMulFunction.apply(x, y, gm, dm),
                         lambda x, y: silu_mul(x, y, torch.tensor(gm, dtype=torch.float32).item(),
                                               torch.tensor(dm, dtype=torch.float32).item(), dtype), a, b, dtype)
    check(got, want, dtype, "swiglu gm=%g dm=%g" % (gm, dm))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn", [LigerGELUMulFunction.apply, liger_geglu, ut.geglu], ids=["Function", "liger_geglu",
                                                                                          "ut.geglu"])
def test_geglu(fn, shape, dtype):
    a, b = torch.randn(*shape) * 4, torch.randn(*shape)
    got, want = run_both(fn, lambda x, y: gelu_mul(x, y, dtype), a, b, dtype)
    check(got, want, dtype, "geglu")


def torch_mlp(mlp, x, act):
    return mlp.down_proj(act(mlp.gate_proj(x)) * mlp.up_proj(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])  # torch 1.13: no f16 matmul on the CPU
@pytest.mark.parametrize("bsz, seq, hidden, inter", [(2, 256, 256, 512), (6, 42, 123, 431)])
@pytest.mark.parametrize("kind", ["swiglu", "geglu"])
def test_mlp_against_the_same_mlp_in_torch(kind, bsz, seq, hidden, inter, dtype):
    config = types.SimpleNamespace(hidden_size=hidden, intermediate_size=inter,
                                   hidden_act="silu" if kind == "swiglu" else "gelu_pytorch_tanh")
    mlp = (LigerSwiGLUMLP if kind == "swiglu" else LigerGEGLUMLP)(config).to(dtype)
    act = torch.nn.functional.silu if kind == "swiglu" else (
        lambda t: torch.nn.functional.gelu(t, approximate="tanh"))
    x = torch.randn(bsz, seq, hidden, dtype=dtype)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    y1 = mlp(x1)
    dy = torch.randn_like(y1)
    y1.backward(dy)
    g1 = [p.grad.clone() for p in mlp.parameters()]
    mlp.zero_grad()
    y2 = torch_mlp(mlp, x2, act)
    y2.backward(dy)
    atol, rtol = MLP_TOL[dtype]
    _ref.assert_close(y1, y2, atol, rtol, "y")
    _ref.assert_close(x1.grad, x2.grad, atol, rtol, "dx")
    for g, p, name in zip(g1, mlp.parameters(), ("gate", "up", "down")):
        _ref.assert_close(g, p.grad, atol, rtol, "d" + name)


def test_swiglu_mlp_refuses_another_activation():
    with pytest.raises(ValueError, match="gelu"):
        LigerSwiGLUMLP(types.SimpleNamespace(hidden_size=8, intermediate_size=16, hidden_act="gelu"))


def test_modules_of_ubgen_torch():
    for cls, act in ((ut.SwiGLUMLP, torch.nn.functional.silu),
                     (ut.GEGLUMLP, lambda t: torch.nn.functional.gelu(t, approximate="tanh"))):
        mlp = cls(64, 96)
        x = torch.randn(3, 64)
        _ref.assert_close(mlp(x), torch_mlp(mlp, x, act), 1e-4, 1e-4, cls.__name__)


def test_bad_inputs_are_refused():
    a = torch.randn(4, 8)
    with pytest.raises(ValueError, match="same"):
        ut.swiglu(a, torch.randn(4, 9))
    with pytest.raises(TypeError, match="float64"):
        ut.geglu(a.double(), a.double())
    with pytest.raises(ValueError, match="gate_multiplier"):
        ut.swiglu(a, a, float("inf"))


def test_empty_and_noncontiguous_inputs():
    a = torch.randn(0, 8)
    assert ut.swiglu(a, a).shape == (0, 8)
    a, b = torch.randn(8, 6).t(), torch.randn(8, 6).t()
    _ref.assert_close(ut.geglu(a, b), gelu_mul(a.double(), b.double(), torch.float32), 1e-5, 1e-5, "geglu of a.t()")


def _family_mlps():
    """(Liger's class for a family, its forward in torch over the same parameters)"""
    from ubgen.liger.transformers import (LigerBlockSparseTop2MLP, LigerFalconH1SwiGLUMLP, LigerGEGLUMLPForGemma4,
                                          LigerPhi3SwiGLUMLP)
    silu, gelu = torch.nn.functional.silu, lambda t: torch.nn.functional.gelu(t, approximate="tanh")

    def phi3(m, x):
        gate, up = m.gate_up_proj(x).chunk(2, dim=-1)
        return m.down_proj(silu(gate) * up)

    def falcon(m, x):
        return m.down_proj(silu(m.gate_proj(x) * m.gate_multiplier) * m.up_proj(x)) * m.down_multiplier

    return [(LigerPhi3SwiGLUMLP, {}, phi3),
            (LigerBlockSparseTop2MLP, {}, lambda m, x: m.w2(silu(m.w1(x)) * m.w3(x))),
            (LigerFalconH1SwiGLUMLP, {"mlp_multipliers": [0.7, 1.3]}, falcon),
            (LigerGEGLUMLPForGemma4, {}, lambda m, x: m.down_proj(gelu(m.gate_proj(x)) * m.up_proj(x)))]


@pytest.mark.parametrize("index", range(4), ids=["phi3", "block_sparse_top2", "falcon_h1", "gemma4"])
def test_family_mlps_against_their_torch_forward(index):
    cls, extra, forward = _family_mlps()[index]
    config = types.SimpleNamespace(hidden_size=48, intermediate_size=80, hidden_act="silu", **extra)
    mlp = cls(config)
    x = torch.randn(3, 7, 48)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    dy = torch.randn(3, 7, 48)
    mlp(x1).backward(dy)
    got = [p.grad.clone() for p in mlp.parameters()]
    mlp.zero_grad()
    y = forward(mlp, x2)
    y.backward(dy)
    _ref.assert_close(mlp(x), y, 1e-5, 1e-5, "y")
    _ref.assert_close(x1.grad, x2.grad, 1e-5, 1e-5, "dx")
    for g, p in zip(got, mlp.parameters()):
        _ref.assert_close(g, p.grad, 1e-5, 1e-5, "d" + str(tuple(p.shape)))


def test_gemma4_mlp_is_double_wide_where_the_kv_cache_is_reused():
    from ubgen.liger.transformers import LigerGEGLUMLPForGemma4
    by_modes = types.SimpleNamespace(hidden_size=8, intermediate_size=16, use_double_wide_mlp=True,
                                     kv_sharing_modes=["own", "own", "reuse"])
    by_count = types.SimpleNamespace(hidden_size=8, intermediate_size=16, use_double_wide_mlp=True,
                                     num_hidden_layers=4, num_kv_shared_layers=1)
    assert [LigerGEGLUMLPForGemma4(by_modes, i).intermediate_size for i in range(3)] == [16, 16, 32]
    assert [LigerGEGLUMLPForGemma4(by_count, i).intermediate_size for i in range(4)] == [16, 16, 16, 32]
    assert LigerGEGLUMLPForGemma4(by_count).up_proj.out_features == 16

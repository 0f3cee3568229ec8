"""Fused MoE (ubgen.torch's FusedMoEFunction / fused_moe, Liger's
LigerFusedMoEFunction and LigerExperts) against a float64 reference through
autograd (the plain loop over the experts, transformers 5's stock one):
the output and every gradient (x, gate_up_proj, down_proj, top_k_weights),
at Liger-Kernel's test_fused_moe.py shapes (T, E, H, I, K from 7 x 4 x 64 x
32 x 2 to 512 tokens, odd H and I, prime E, K = 1, K = E), its inputs
(randn x, weights times 0.02, softmaxed top-k of random logits) and
tolerances (f32 1e-3 / 1e-4 forward, 3e-3 / 1e-2 gradients; bf16 1e-1 /
1e-2 forward), its edge cases (every token on expert 0, one token, K = E);
the gradients in bf16 and f16 too, within 2% of the largest; an expert
index outside [0, E) is refused by name."""
import pytest
import torch
import torch.nn as nn

import ubgen.torch as ut
from ubgen.liger import LigerFusedMoEFunction
from ubgen.liger.transformers import LigerExperts

LIGER_SHAPES = [(7, 4, 64, 32, 2), (512, 8, 256, 128, 2), (512, 8, 97, 47, 2), (512, 7, 128, 64, 3),
                (512, 8, 256, 64, 1), (128, 8, 256, 64, 8)]
FWD_TOL = {torch.float32: (1e-3, 1e-4), torch.bfloat16: (1e-1, 1e-2), torch.float16: (1e-2, 1e-2)}
GRAD_TOL = (3e-3, 1e-2)  # Liger's, f32
HALF_GRAD = 2e-2  # f16 and bf16 gradients: of the largest reference value


def moe_ref(x, gate_up_proj, down_proj, top_k_index, top_k_weights):
    """the stock loop over the experts that have tokens (Liger's reference, transformers' MixtralExperts)"""
    E = gate_up_proj.shape[0]
    out = torch.zeros_like(x)
    mask = nn.functional.one_hot(top_k_index.long(), num_classes=E).permute(2, 1, 0)
    for e in torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero():
        slot, token = torch.where(mask[e[0]])
        gate, up = nn.functional.linear(x[token], gate_up_proj[e[0]]).chunk(2, dim=-1)
        y = nn.functional.linear(nn.functional.silu(gate) * up, down_proj[e[0]])
        out.index_add_(0, token, y * top_k_weights[token, slot, None])
    return out


def inputs(T, E, H, I, K, dtype, seed=42):
    """Liger's: randn x, randn weights times 0.02, top-k of random logits softmaxed"""
    torch.manual_seed(seed)
    x = torch.randn(T, H, dtype=dtype)
    gup = torch.randn(E, 2 * I, H, dtype=dtype) * 0.02
    down = torch.randn(E, H, I, dtype=dtype) * 0.02
    logits = torch.randn(T, E)
    idx = torch.topk(logits, K, dim=-1).indices.to(torch.int32)
    w = torch.softmax(torch.gather(logits, 1, idx.long()), dim=-1).to(dtype)
    return x, gup, down, idx, w


def run_both(fn, x, gup, down, idx, w, seed=7):
    """fn's output and gradients for a random dout, and the float64 reference's"""
    ours = [t.clone().requires_grad_() for t in (x, gup, down, w)]
    refs = [t.double().requires_grad_() for t in (x, gup, down, w)]
    out = fn(ours[0], ours[1], ours[2], idx, ours[3])
    ref = moe_ref(refs[0], refs[1], refs[2], idx, refs[3])
    dout = torch.randn(ref.shape, generator=torch.Generator().manual_seed(seed)).to(x.dtype)
    out.backward(dout)
    ref.backward(dout.double())
    return out, ref, [t.grad for t in ours], [t.grad for t in refs]


def check(out, ref, grads, ref_grads, dtype):
    atol, rtol = FWD_TOL[dtype]
    torch.testing.assert_close(out.double(), ref.detach(), atol=atol, rtol=rtol)
    for name, g, r in zip(("dx", "dgate_up_proj", "ddown_proj", "dtop_k_weights"), grads, ref_grads):
        assert g.dtype == dtype and g.shape == r.shape, name
        if dtype == torch.float32:
            torch.testing.assert_close(g.double(), r, atol=GRAD_TOL[0], rtol=GRAD_TOL[1], msg=lambda m: name + ": " + m)
        else:
            err = (g.double() - r).abs().max().item()
            assert err <= HALF_GRAD * r.abs().max().item(), "%s: off by %g, largest %g" % (name, err, r.abs().max())


@pytest.mark.parametrize("T, E, H, I, K", LIGER_SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
def test_against_float64(T, E, H, I, K, dtype):
    check(*run_both(LigerFusedMoEFunction.apply, *inputs(T, E, H, I, K, dtype)), dtype)


@pytest.mark.parametrize("case", ["one_expert", "one_token", "k_equals_e", "experts_unused"])
def test_edge_cases(case):
    T, E, H, I, K = {"one_expert": (32, 8, 64, 32, 2), "one_token": (1, 4, 32, 16, 2), "k_equals_e": (16, 4, 32, 16, 4),
                     "experts_unused": (24, 16, 48, 24, 2)}[case]
    x, gup, down, idx, w = inputs(T, E, H, I, K, torch.float32)
    if case == "one_expert":  # Liger's: every slot on expert 0, weights 1 / K
        idx, w = torch.zeros(T, K, dtype=torch.int32), torch.ones(T, K) / K
    if case == "experts_unused":
        idx = (idx % 3).to(torch.int32)  # experts 3.. get no token (and a token may hit one twice)
    check(*run_both(ut.fused_moe, x, gup, down, idx, w), torch.float32)


def test_liger_experts_module():
    """LigerExperts(config) of a transformers 5 MoE config: [B, S, H] in, the
    stock loop's result out (a slot of another rank's expert skipped), its
    parameters' gradients"""
    class Config:
        num_local_experts, intermediate_size, hidden_size, hidden_act = 6, 24, 32, "silu"

    torch.manual_seed(0)
    experts = LigerExperts(Config())
    with torch.no_grad():
        experts.gate_up_proj.normal_(0, 0.1), experts.down_proj.normal_(0, 0.1)
    x = torch.randn(2, 5, 32)
    idx = torch.randint(0, 6, (2, 5, 2))
    idx[0, 3, 1] = 6  # transformers 5's index of an expert on another rank: skipped, as the stock loop does
    w = torch.rand(2, 5, 2)
    out = experts(x, idx, w)
    away = idx.view(-1, 2) == 6
    ref = moe_ref(x.view(-1, 32).double(), experts.gate_up_proj.double(), experts.down_proj.double(),
                  idx.view(-1, 2).masked_fill(away, 0), w.view(-1, 2).double().masked_fill(away, 0))
    assert out.shape == x.shape
    torch.testing.assert_close(out.view(-1, 32).double(), ref, atol=1e-5, rtol=1e-5)
    out.sum().backward()
    assert experts.gate_up_proj.grad is not None and experts.down_proj.grad is not None


def test_refusals():
    x, gup, down, idx, w = inputs(4, 3, 8, 4, 2, torch.float32)
    idx[2, 1] = 3
    with pytest.raises(ValueError, match=r"top_k_index\[5\] = 3"):
        LigerFusedMoEFunction.apply(x, gup, down, idx, w)
    with pytest.raises(ValueError, match="holds 4294967296"):  # not wrapped into [0, E) by the int32 cast
        LigerFusedMoEFunction.apply(x, gup, down, idx.long() + 2 ** 32 - 3, w)
    idx[2, 1] = 0
    with pytest.raises(ValueError, match="down_proj has shape"):
        LigerFusedMoEFunction.apply(x, gup, down[:, :, :3], idx, w)
    with pytest.raises(ValueError, match="top_k_weights has shape"):
        LigerFusedMoEFunction.apply(x, gup, down, idx, w[:, :1])

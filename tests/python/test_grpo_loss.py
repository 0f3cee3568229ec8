"""GRPO loss (ubgen.liger's triton_grpo_loss, GrpoLossFunction and
fused_selective_log_softmax) against float64 autograd of the per-token
losses written out here, forward outputs and the logits' gradient: every
loss_type, token and sequence importance sampling, delta, the KL term with
and without bias correction, vLLM's importance ratio, reduce on and off.
Liger-Kernel's test_grpo_loss.py shapes and tolerances: (2, 128, 1000)
bf16 atol 5e-2 rtol 5e-1, and f32 and f16 tighter; its larger shapes (1,
1024, 151936) run under -m large (not in make test or CI). The reference's gradients are
Liger's kernels': CISPO's clipped ratio and VESPO's phi detached, the
bias-corrected KL's gradient beta coef_1 (logp - ref_logp)."""
import math

import pytest
import torch

from ubgen.liger.ops.grpo_loss import GrpoLossFunction, fused_selective_log_softmax
from ubgen.liger.transformers.grpo_loss import triton_grpo_loss

import _ref

TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (2e-2, 2e-2), torch.bfloat16: (5e-2, 5e-1)}
LOSS_TYPES = ["grpo", "dapo", "bnpo", "dr_grpo", "luspo", "cispo", "sapo", "vespo"]


def _surrogate(value, grad_of):
    """value in the forward, and the gradient of grad_of in the backward"""
    return value.detach() + grad_of - grad_of.detach()


def reference(logits, old, ref, ids, adv, mask, T, beta, el, eh, loss_type, level, delta, bias_kl, ratio, phi,
              sapo=(1.0, 1.05)):
    """float64 (per_token_loss, kl, is_clipped), masked, from logits [B, L + 1, V] float64"""
    logp = torch.log_softmax(logits[:, :-1] / T, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    old = logp.detach() if old is None else old.double()
    A = adv.double().unsqueeze(1)
    if level == "sequence":
        c1 = torch.exp(((logp - old) * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1))
    else:
        c1 = torch.exp(logp - old)
    clipped = torch.zeros_like(logp)
    if loss_type in ("cispo", "sapo", "vespo"):
        if loss_type == "cispo":
            c2 = c1.clamp(max=eh).detach()
            loss = -c2 * A * logp
            clipped = ((c1 > eh) & (A > 0)).double().expand_as(logp)
        elif loss_type == "sapo":
            tau = torch.where(A > 0, sapo[0], sapo[1])
            loss = -torch.sigmoid(tau * (c1 - 1)) * 4 / tau * A
        else:
            loss = -phi.double().reshape(-1, 1) * A * logp
    else:
        c2 = c1.clamp(1 - el, 1 + eh)
        clipped = (((c1 < 1 - el) & (A < 0)) | ((c1 > 1 + eh) & (A > 0))).double().expand_as(logp)
        c1d = c1 if delta is None else c1.clamp(max=delta)
        loss = -torch.minimum(c1d * A, c2 * A)
    if ratio is not None and loss_type != "vespo":
        loss = loss * ratio.double().reshape(ratio.shape[0], -1)
    kl = None
    if beta != 0.0:
        d = ref.double() - logp
        kl = torch.exp(d) - d - 1
        if bias_kl:
            c1k = c1.detach()
            kl = _surrogate(kl * c1k, c1k * 0.5 * (logp - ref.double()) ** 2)
        loss = loss + beta * kl
        kl = kl * mask
    return loss * mask, kl, clipped * mask


def reduce_ref(loss, mask, loss_type, max_len=None):
    B, L = loss.shape
    if loss_type in ("grpo", "sapo"):
        return ((loss * mask).sum(-1) / mask.sum(-1).clamp(min=1)).mean()
    if loss_type == "bnpo":
        return (loss * mask).sum() / mask.sum().clamp(min=1)
    if loss_type == "dr_grpo":
        return (loss * mask).sum() / (B * (max_len or L))
    if loss_type in ("dapo", "cispo", "vespo"):
        return (loss * mask).sum() / mask.sum().clamp(min=1)
    return (loss * mask.sum(-1, keepdim=True)).mean()


def vespo_phi(logits, old, ids, adv, mask, T, ratio=None, k=(2.0, 3.0), lam=(3.0, 2.0)):
    """VESPO's gamma weight from float64 log-probabilities"""
    with torch.no_grad():
        logp = torch.log_softmax(logits[:, :-1] / T, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        lr = torch.zeros_like(logp) if old is None else logp - old.double()
        lw = (lr.clamp(-20, 20) * mask).sum(-1, keepdim=True)
        if ratio is not None:
            lw = lw + torch.log(ratio.double()).clamp(math.log(1e-8), 20).expand_as(logp).sum(-1, keepdim=True)
        lw = lw.clamp(math.log(1e-8), 20)
        pos = adv.double().unsqueeze(-1) >= 0
        kk, ll = torch.where(pos, k[0], k[1]), torch.where(pos, lam[0], lam[1])
        return torch.exp(ll + kk * lw - ll * torch.exp(lw))


def inputs(B, T, V, dtype, beta, iters, seed=0, pad=20):
    torch.manual_seed(seed)
    x = torch.randn(B, T + 1, V, dtype=dtype)
    ids = torch.randint(0, V - 1, (B, T))
    mask = torch.ones(B, T, dtype=torch.int32)
    mask[:, T - pad:] = 0
    ref = torch.randn(B, T) if beta != 0.0 else None
    old = torch.randn(B, T) if iters > 1 else None
    adv = torch.randn(B)
    return x, ids, mask, ref, old, adv


CASES = ([dict(loss_type=t) for t in LOSS_TYPES]
         + [dict(loss_type=t, level="sequence") for t in ("grpo", "dapo", "bnpo", "dr_grpo", "luspo")]
         + [dict(loss_type=t, delta=1.5) for t in ("grpo", "dapo")]
         + [dict(loss_type="grpo", level="sequence", delta=1.5), dict(loss_type="dapo", bias_kl=True),
            dict(loss_type="grpo", level="sequence", bias_kl=True)]
         + [dict(loss_type=t, ratio="BL") for t in ("grpo", "cispo", "sapo", "vespo")]
         + [dict(loss_type="dapo", ratio="B1")]
         + [dict(loss_type="grpo", level="sequence", ratio="BL")])


def _ratio(kind, B, T):
    if kind is None:
        return None
    return torch.rand(B, T if kind == "BL" else 1) * 0.5 + 0.75


@pytest.mark.parametrize("iters, beta", [(1, 0.0), (5, 0.04)], ids=["on_policy", "old_logp_kl"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join("%s" % v for v in c.values()))
@pytest.mark.parametrize("dtype, reduce", [(torch.float32, False), (torch.bfloat16, False), (torch.bfloat16, True)],
                         ids=["f32-per_token", "bf16-per_token", "bf16-reduced"])
def test_grpo_loss(case, iters, beta, reduce, dtype):
    B, T, V, temp = 2, 128, 1000, 0.7
    loss_type, level = case["loss_type"], case.get("level", "token")
    delta, bias_kl = case.get("delta"), case.get("bias_kl", False)
    if bias_kl and beta == 0.0:
        beta = 0.04
    x, ids, mask, ref, old, adv = inputs(B, T, V, dtype, beta, iters)
    ratio = _ratio(case.get("ratio"), B, T)
    logits = x.clone().requires_grad_(True)
    out = triton_grpo_loss(logits, old, ref, ids, adv, mask, temperature=temp, beta=beta, eps_low=0.2, eps_high=0.4,
                           inplace=False, loss_type=loss_type, importance_sampling_level=level, reduce=reduce,
                           vllm_is_ratio=ratio, delta=delta, use_bias_correction_kl=bias_kl)
    x64 = _ref.leaf(x)
    m = mask.double()
    phi = vespo_phi(x64, old, ids, adv, m, temp, ratio) if loss_type == "vespo" else None
    want_loss, want_kl, want_clip = reference(x64, old, ref, ids, adv, m, temp, beta, 0.2, 0.4, loss_type, level,
                                              delta, bias_kl, ratio, phi)
    atol, rtol = TOL[dtype]
    if reduce:
        loss, metrics = out
        want = reduce_ref(want_loss, m, loss_type)
        _ref.assert_close(loss, want, atol, rtol, "loss")
        assert len(metrics) == (2 if beta != 0.0 else 1)
        if beta != 0.0:
            _ref.assert_close(metrics[0], want_kl.sum() / m.sum(), atol, rtol, "kl_mean")
        _ref.assert_close(metrics[-1], want_clip.sum() / m.sum(), 1e-6, 0, "clip_ratio")
        g = torch.tensor(1.5)
        loss.backward(g)
        want.backward(g.double())
    else:
        loss, kl, clip = out
        assert loss.dtype == torch.float32 and loss.shape == (B, T)
        _ref.assert_close(loss, want_loss, atol, rtol, "per_token_loss")
        assert (kl is None) == (beta == 0.0)
        if kl is not None:
            _ref.assert_close(kl, want_kl, atol, rtol, "kl")
        _ref.assert_close(clip, want_clip, 1e-6, 0, "is_clipped")
        g = torch.randn(B, T)
        loss.backward(g)
        want_loss.backward(g.double())
    assert logits.grad.dtype == dtype and logits.grad.shape == x.shape
    _ref.assert_close(logits.grad, x64.grad, atol, rtol, "dlogits")
    assert torch.equal(logits.grad[:, -1], torch.zeros_like(logits.grad[:, -1]))


def test_inplace_writes_the_gradient_over_the_logits():
    x, ids, mask, ref, old, adv = inputs(2, 16, 300, torch.float32, 0.04, 5)
    a = x.clone().requires_grad_(True)
    b = x.clone().requires_grad_(True)
    la, _, _ = triton_grpo_loss(a, old, ref, ids, adv, mask, inplace=False)
    lb, _, _ = triton_grpo_loss(b, old, ref, ids, adv, mask, inplace=True)
    g = torch.randn(2, 16)
    la.backward(g)
    lb.backward(g)
    assert torch.equal(a.grad, b.grad)
    assert torch.equal(b.detach(), b.grad)  # Liger's inplace: the logits hold their gradient afterwards


@pytest.mark.parametrize("dtype", _ref.DTYPES, ids=_ref.DTYPE_IDS)
@pytest.mark.parametrize("B, T, V, temp", [(2, 128, 1000, 0.9), (1, 33, 4097, 0.7)])
def test_selective_log_softmax(B, T, V, temp, dtype):
    torch.manual_seed(0)
    x = torch.randn(B, T + 1, V, dtype=dtype)
    ids = torch.randint(0, V - 1, (B, 100 + T))  # a prompt of 100 and T completion tokens, as Liger's test
    got = fused_selective_log_softmax(x, ids, temp)
    want = torch.log_softmax(x[:, :-1].double() / temp, -1).gather(-1, ids[:, -T:].unsqueeze(-1)).squeeze(-1)
    assert got.dtype == torch.float32 and got.shape == (B, T)
    _ref.assert_close(got, want, 1e-5, 1e-5, "logp")
    mask = torch.ones(B, 100 + T, dtype=torch.int64)
    mask[:, -5:] = 0
    masked = fused_selective_log_softmax(x, ids, temp, mask)
    assert torch.equal(masked[:, :-5], got[:, :-5]) and torch.equal(masked[:, -5:], torch.zeros(B, 5))


def test_refusals_name_the_argument():
    x, ids, mask, ref, old, adv = inputs(2, 8, 32, torch.float32, 0.04, 5, pad=2)
    args = (x, old, ref, ids, adv, mask, 0.9, 0.04, 0.2, 0.4, False)
    with pytest.raises(ValueError, match="loss_type='ppo'"):
        GrpoLossFunction.apply(*args, "ppo")
    with pytest.raises(ValueError, match="delta"):
        GrpoLossFunction.apply(*args, "cispo", None, True, "token", 1.0, 1.05, None, 2.0)
    with pytest.raises(ValueError, match="Sequence-level"):
        GrpoLossFunction.apply(*args, "sapo", None, True, "sequence")
    with pytest.raises(ValueError, match="sapo_temperature_pos"):
        GrpoLossFunction.apply(*args, "sapo", None, True, "token", 0.0)
    with pytest.raises(ValueError, match="phi_seq"):
        GrpoLossFunction.apply(*args, "vespo")
    with pytest.raises(ValueError, match="ref_logp"):
        GrpoLossFunction.apply(x, old, None, ids, adv, mask, 0.9, 0.04, 0.2, 0.4, False)
    with pytest.raises(ValueError, match="temperature"):
        fused_selective_log_softmax(x, ids, 0.0)
    with pytest.raises(ValueError, match="vllm_is_ratio"):
        triton_grpo_loss(x, old, ref, ids, adv, mask, vllm_is_ratio=torch.ones(3))
    bad = ids.clone()
    bad[1, 3] = 32
    with pytest.raises(Exception, match="ids"):
        fused_selective_log_softmax(x, bad, 0.9)


@pytest.mark.large
@pytest.mark.parametrize("loss_type", ["grpo", "cispo", "sapo"])
def test_liger_large_shape(loss_type):
    """Liger's (1, 1024, 151936) bf16 at 5e-2 / 5e-1"""
    B, T, V, temp = 1, 1024, 151936, 0.7
    x, ids, mask, ref, old, adv = inputs(B, T, V, torch.bfloat16, 0.04, 5, pad=100)
    logits = x.clone().requires_grad_(True)
    loss, kl, _ = triton_grpo_loss(logits, old, ref, ids, adv, mask, temperature=temp, eps_high=0.4,
                                   loss_type=loss_type, inplace=False)
    x64 = _ref.leaf(x)
    want, want_kl, _ = reference(x64, old, ref, ids, adv, mask.double(), temp, 0.04, 0.2, 0.4, loss_type, "token",
                                 None, False, None, None)
    _ref.assert_close(loss, want, 5e-2, 5e-1, "loss")
    _ref.assert_close(kl, want_kl, 5e-2, 5e-1, "kl")
    g = torch.randn(B, T)
    loss.backward(g)
    want.backward(g.double())
    _ref.assert_close(logits.grad, x64.grad, 5e-2, 5e-1, "dlogits")

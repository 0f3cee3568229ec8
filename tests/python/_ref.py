"""Torch references for the ubgen Python tests: plain torch ops in float64
with autograd, and the comparison helpers.

Each reference takes float64 leaves and the storage dtype of the op under
test; where the op's definition rounds an intermediate to that dtype
(docs/semantics.md "What each kernel computes"), the reference rounds the value and lets the
gradient pass straight through (`st_round`).
"""
import torch
import torch.nn.functional as F

F64 = torch.float64
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DTYPE_IDS = ("f32", "f16", "bf16")


def st_round(t, dtype):
    """t's value rounded to dtype; the gradient passes straight through"""
    if dtype == t.dtype:
        return t
    return t + (t.detach().to(dtype).to(t.dtype) - t.detach())


def leaf(t, dtype=F64):
    """a fresh leaf copy of t in dtype that requires grad"""
    return t.detach().to(dtype).clone().requires_grad_(True)


def assert_close(actual, expected, atol, rtol, what="", extra=None):
    """|actual - expected| <= atol + rtol |expected| (+ extra, elementwise,
    where given) everywhere (torch.allclose with expected as `other`), NaN
    and Inf matching; shapes must agree. The message names the worst
    element."""
    assert actual is not None, "%s: got None" % what
    assert tuple(actual.shape) == tuple(expected.shape), "%s: shape %s, expected %s" % (
        what, tuple(actual.shape), tuple(expected.shape))
    a = actual.detach().to(F64)
    e = expected.detach().to(F64)
    fin = torch.isfinite(e)
    bad_special = ~fin & ~((a == e) | (torch.isnan(a) & torch.isnan(e)))
    assert not bad_special.any(), "%s: non-finite values differ" % what
    diff = torch.where(fin, (a - e).abs(), torch.zeros_like(a))
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    tol = atol + rtol * e.abs() + (0 if extra is None else extra.to(F64))
    excess = torch.where(fin, diff - tol, torch.full_like(diff, -1.0))
    if a.numel() and excess.max() > 0:
        i = int(excess.reshape(-1).argmax())
        n = int((excess > 0).sum())
        raise AssertionError("%s: %d of %d elements outside atol=%g rtol=%g; worst at flat index %d: "
                             "got %r, expected %r (|diff| %.3g > %.3g)" % (
                                 what, n, a.numel(), atol, rtol, i, a.reshape(-1)[i].item(),
                                 e.reshape(-1)[i].item(), diff.reshape(-1)[i].item(), tol.reshape(-1)[i].item()))


# ---------------------------------------------------------------- RMSNorm
def rms_norm(x, w, eps, offset, casting_mode, dtype):
    """x [..., H] and w [H] (or None) float64: y float64 (before the final
    rounding to dtype). llama rounds x*rstd and offset+w to dtype, gemma
    works in full precision, none rounds rstd as well (docs/semantics.md)."""
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    if casting_mode == "none":
        rstd = st_round(rstd, dtype)
    if w is None:
        return x * rstd
    if casting_mode == "gemma":
        return x * rstd * (offset + w)
    return st_round(x * rstd, dtype) * st_round(offset + w, dtype)


# ---------------------------------------------------------------- Embedding
def embedding(weight, indices, padding_idx=None):
    """weight [V, D] float64 leaf: out [..., D]; the padding row gets no gradient"""
    out = weight[indices.reshape(-1)]
    if padding_idx is not None:
        keep = (indices.reshape(-1) != padding_idx).to(weight.dtype).unsqueeze(-1)
        out = out * keep + (out * (1 - keep)).detach()  # same value, no gradient to the padding row
    return out.reshape(*indices.shape, weight.shape[1])


# ---------------------------------------------------------------- AttnRes
def attn_res(V, w_query, w_norm, eps, dtype):
    """V [N, ..., D] float64: h [..., D]; k = rnd(v * rstd) * w_norm as in
    Liger's reference, the rest in full precision"""
    rstd = torch.rsqrt(V.pow(2).mean(-1, keepdim=True) + eps)
    k = st_round(V * rstd, dtype) * w_norm
    scores = (k * w_query).sum(-1)
    alpha = torch.softmax(scores, dim=0)
    return (alpha.unsqueeze(-1) * V).sum(0)


# ---------------------------------------------------------------- cross entropy
def cross_entropy(logits, target, ce_weight=None, ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0,
                  reduction="mean", softcap=None, use_token_scaling=False):
    """Liger's cross entropy of float64 logits [BT, V]: returns (loss, z_loss)
    reduced like each other ([] for mean and sum, [BT] for none).

    z = softcap * tanh(logits / softcap) when softcap is set; the CE part is
    torch.nn.functional.cross_entropy (class weights, ignore_index, label
    smoothing); the z-loss is lse_square_scale * logsumexp(z)^2 on the rows
    not ignored, summed, and for mean divided by the number of those rows
    (not by the class weights); the loss includes the z-loss. Token scaling
    multiplies each row's CE and z-loss by softmax(z)[target], detached."""
    z = softcap * torch.tanh(logits / softcap) if softcap else logits
    mask = target != ignore_index
    w = None if ce_weight is None else ce_weight.detach().to(F64)
    ce = F.cross_entropy(z, target, weight=w, ignore_index=ignore_index, label_smoothing=label_smoothing,
                         reduction="none")
    lse = torch.logsumexp(z, dim=-1)
    zl = torch.where(mask, lse_square_scale * lse * lse, torch.zeros_like(lse))
    if use_token_scaling:
        safe = torch.where(mask, target, torch.zeros_like(target))
        p = torch.softmax(z.detach(), dim=-1).gather(1, safe.unsqueeze(1)).squeeze(1)
        ce, zl = ce * p, zl * p
    if reduction == "none":
        return ce + zl, zl
    if reduction == "sum":
        return ce.sum() + zl.sum(), zl.sum()
    n = mask.sum().clamp(min=1)
    denom = n if w is None else w[target[mask]].sum()
    return ce.sum() / denom + zl.sum() / n, zl.sum() / n


def flce(x, weight, target, bias=None, **opts):
    """fused linear cross entropy: logits = x @ weight.T (+ bias) in float64"""
    logits = x @ weight.t()
    if bias is not None:
        logits = logits + bias
    return cross_entropy(logits, target, **opts)


def with_ignored(target, ignore_index, gen=None):
    """target with a random number (1 .. BT/2) of random rows set to ignore_index, as Liger's tests do"""
    t = target.clone()
    bt = t.shape[0]
    k = int(torch.randint(1, max(bt // 2, 2), (1,), generator=gen).item())
    t[torch.randperm(bt, generator=gen)[:k]] = ignore_index
    return t


def opt_id(o):
    """a test id for a dict of options"""
    return ",".join("%s=%s" % (k, v) for k, v in o.items()) or "defaults"


def class_weights(kind, V):
    """None; "rand": uniform in [0, 1); "signed": in [0.5, 1.5), a fifth negated"""
    if kind is None:
        return None
    w = torch.rand(V)
    if kind == "signed":
        w = w + 0.5
        w[torch.randperm(V)[: V // 5]] *= -1
    return w


def rope(q, k, cos, sin, unsqueeze_dim=1):
    """transformers' apply_rotary_pos_emb (rotate-half), q and k rotated
    by cos and sin on their first cos.shape[-1] columns"""
    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    if cos.dim() == 2:  # a [T, R] table: one batch
        cos, sin = cos[None], sin[None]
    cos, sin, R = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim), cos.shape[-1]
    out = []
    for x in (q, k):
        rot = x[..., :R] * cos + rotate_half(x[..., :R]) * sin
        out.append(torch.cat((rot, x[..., R:]), dim=-1))
    return tuple(out)


# tolerances of a rotation (RoPE, M-RoPE, Llama 4's) against float64: products
# and a sum in f32, one rounding
ROPE_TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 1e-2)}


def check_rotated(q, k, out, reference, dtype):
    """out = (q_out, k_out), a rotation of the leaves q and k in dtype, and
    the gradients it gives q and k for random incoming ones, within
    ROPE_TOL of reference(q64, k64): the same rotation of float64 copies,
    with autograd"""
    q_out, k_out = out
    q64, k64 = leaf(q), leaf(k)
    rq, rk = reference(q64, k64)
    atol, rtol = ROPE_TOL[dtype]
    assert q_out.dtype == dtype and q_out.shape == q.shape and k_out.shape == k.shape
    assert_close(q_out, rq, atol, rtol, "q_out")
    assert_close(k_out, rk, atol, rtol, "k_out")
    gq, gk = torch.randn(q.shape).to(dtype), torch.randn(k.shape).to(dtype)
    torch.autograd.backward((q_out, k_out), (gq, gk))
    torch.autograd.backward((rq, rk), (gq.double(), gk.double()))
    assert_close(q.grad, q64.grad, atol, rtol, "dq")
    assert_close(k.grad, k64.grad, atol, rtol, "dk")

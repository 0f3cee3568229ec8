"""ubgen.torch against PyTorch eager (the same math in torch ops, as
Liger's benchmarks do) at Liger's benchmark shapes scaled to this machine,
every dtype: speed of forward, backward and both (full), and the peak
memory of a full step; then the Python overhead of a call on a tiny shape.

    bench_ops.py [--out FILE] [--reps N] [--quick] [--ops rms_norm,embedding,attn_res,fused_linear_cross_entropy,cross_entropy,swiglu,geglu,layer_norm,rope,qwen2vl_mrope,llama4_rope,dyt,relu_squared,softmax,neighborhood_attention,mhc_coeffs,mhc_pre,mhc_post_res,grpo_loss,tvd,kl_div,jsd,fused_linear_jsd,fused_moe,poly_norm,sparsemax,modulated_rms_norm,group_norm,fused_add_rms_norm,overhead]

Both providers run in this process with the same threads (torch's and the
library's: the machine's cores), interleaved repetition by repetition, with
the process's allocator as PyTorch leaves it (glibc's malloc: a large
tensor gets fresh pages from the kernel; ubgen.torch keeps its outputs'
mappings for reuse, docs/python.md).
Speed: the median (and 20th, 80th percentiles) of the per-repetition
times, in ms; the ratio torch / ubgen per point is printed and stored in
extra_benchmark_config_str. Memory, measured after every timing: the resident
memory a full step adds at its peak (MB), with every large block fresh
from the kernel and returned to it (no reuse by either provider), and for
FLCE that less the gradients' own bytes (dx, dW), which both must hold. Writes Liger's JSON format.
"""
import argparse
import ctypes
import os
import sys
import time

import torch
import torch.nn.functional as F

import common

sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "..", "python"))
import ubgen  # noqa: E402
import ubgen.torch as ut  # noqa: E402
from ubgen import _lib  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


# ---- the ops, each as a provider: inputs -> {mode: seconds} ------------------------

def step(forward, grads_of, g_like):
    """one forward and backward, timed apart; grads reset after"""
    t0 = time.perf_counter()
    y = forward()
    t1 = time.perf_counter()
    torch.autograd.backward(y, g_like(y))  # y a tensor or a tuple of them
    t2 = time.perf_counter()
    for t in grads_of:
        t.grad = None
    return {"forward": t1 - t0, "backward": t2 - t1, "full": t2 - t0}


def torch_rms_norm(x, w, eps=1e-6):
    """HuggingFace's LlamaRMSNorm, as Liger's benchmark runs it"""
    dt = x.dtype
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(dt)


def row_copies(nbytes, forward=1.0, backward=1.5):
    """the bytes an op must move, as copies of forward and backward times
    nbytes into buffers already faulted in: its bandwidth ceiling. The
    defaults are a row-wise op of one nbytes tensor (forward: x read, y
    written; backward: x and dy read, dx written, as 1.5 tensors copied)"""
    fwd, total = int(nbytes * forward), int(nbytes * (forward + backward))
    size = max(fwd, total - fwd)
    src, dst = torch.ones(size, dtype=torch.uint8), torch.zeros(size, dtype=torch.uint8)

    def copy():
        t0 = time.perf_counter()
        dst[:fwd].copy_(src[:fwd])
        t1 = time.perf_counter()
        dst[:total - fwd].copy_(src[:total - fwd])
        t2 = time.perf_counter()
        return {"forward": t1 - t0, "backward": t2 - t1, "full": t2 - t0}
    return copy


def rms_norm_case(M, H, dt):
    x = torch.randn(M, H, dtype=dt, requires_grad=True)
    w = torch.ones(H, dtype=dt, requires_grad=True)
    g = torch.randn(M, H, dtype=dt)
    return {
        "ubgen": lambda: step(lambda: ut.rms_norm(x, w, 1e-6, 0.0, "llama", False), (x, w), lambda y: g),
        "torch": lambda: step(lambda: torch_rms_norm(x, w), (x, w), lambda y: g),
        "copy": row_copies(M * H * x.element_size()),
    }, None


def embedding_case(V, D, n, dt):
    w = torch.randn(V, D, dtype=dt, requires_grad=True)
    ids = torch.randint(0, V, (n,))
    g = torch.randn(n, D, dtype=dt)
    out, dtable = torch.empty(n, D, dtype=dt), torch.zeros(V, D, dtype=dt)

    def copy():
        """the bytes the op must move, as copies into buffers already
        faulted in: its bandwidth ceiling (forward: a row read and written
        per token; backward: dout read, the table zeroed and rows written)"""
        t0 = time.perf_counter()
        out.copy_(g)
        t1 = time.perf_counter()
        dtable.zero_()
        dtable[:n].copy_(g) if n <= V else dtable.copy_(g[:V])
        t2 = time.perf_counter()
        return {"forward": t1 - t0, "backward": t2 - t1, "full": t2 - t0}

    return {
        "ubgen": lambda: step(lambda: ut.embedding(ids, w), (w,), lambda y: g),
        "torch": lambda: step(lambda: F.embedding(ids, w), (w,), lambda y: g),
        "copy": copy,
    }, None


def torch_attn_res(V, wq, wn, eps=1e-6):
    """Liger's reference math: RMSNorm keys, softmax over the blocks"""
    Vf = V.float()
    rms = torch.sqrt(Vf.pow(2).mean(-1, keepdim=True) + eps)
    K = (Vf / rms).to(V.dtype) * wn
    alpha = torch.einsum("d,n...d->n...", wq.float(), K.float()).softmax(dim=0)
    return torch.einsum("n...,n...d->...d", alpha, Vf).to(V.dtype)


def attn_res_case(N, T, D, dt):
    V = torch.randn(N, 1, T, D, dtype=dt, requires_grad=True)
    wq = (torch.randn(D) * 0.02).to(dt).requires_grad_()
    wn = torch.ones(D, dtype=dt, requires_grad=True)
    g = torch.randn(1, T, D, dtype=dt)
    return {
        "ubgen": lambda: step(lambda: ut.attn_res(V, wq, wn), (V, wq, wn), lambda y: g),
        "torch": lambda: step(lambda: torch_attn_res(V, wq, wn), (V, wq, wn), lambda y: g),
    }, None


def flce_case(BT, H, V, dt):
    x = (torch.randn(BT, H) / H ** 0.5).to(dt).requires_grad_()
    W = (torch.randn(V, H) / H ** 0.5).to(dt).requires_grad_()
    t = torch.randint(0, V, (BT,))
    one = torch.tensor(1.0)
    grads = (BT * H + V * H) * x.element_size()  # dx and dW, which both must hold
    return {
        "ubgen": lambda: step(lambda: ut.fused_linear_cross_entropy(x, W, t), (x, W), lambda y: one),
        "torch": lambda: step(lambda: F.cross_entropy((x @ W.t()).float(), t), (x, W), lambda y: one),
    }, grads


def cross_entropy_case(BT, V, dt):
    """Liger's benchmark_cross_entropy: logits [BT, V] given, the loss and
    its gradient through autograd"""
    x = torch.randn(BT, V, dtype=dt, requires_grad=True)
    t = torch.randint(0, V, (BT,))
    one = torch.tensor(1.0)
    return {
        "ubgen": lambda: step(lambda: ut.cross_entropy(x, t), (x,), lambda y: one),
        "torch": lambda: step(lambda: F.cross_entropy(x, t), (x,), lambda y: one),
    }, None


def glu_case(kind, T, I, dt):
    """the activation alone (the MLP's GEMMs are torch's for both), as
    Liger's benchmark_swiglu / benchmark_geglu time it within LLaMA's MLP"""
    a = torch.randn(T, I, dtype=dt, requires_grad=True)
    b = torch.randn(T, I, dtype=dt, requires_grad=True)
    g = torch.randn(T, I, dtype=dt)
    if kind == "swiglu":
        ours, theirs = ut.swiglu, lambda x, y: F.silu(x) * y
    else:
        ours, theirs = ut.geglu, lambda x, y: F.gelu(x, approximate="tanh") * y
    return {
        "ubgen": lambda: step(lambda: ours(a, b), (a, b), lambda y: g),
        "torch": lambda: step(lambda: theirs(a, b), (a, b), lambda y: g),
    }, None


def layer_norm_case(M, H, dt):
    x = torch.randn(M, H, dtype=dt, requires_grad=True)
    w = torch.ones(H, dtype=dt, requires_grad=True)
    b = torch.zeros(H, dtype=dt, requires_grad=True)
    g = torch.randn(M, H, dtype=dt)
    return {
        "ubgen": lambda: step(lambda: ut.layer_norm(x, w, b, 1e-6), (x, w, b), lambda y: g),
        "torch": lambda: step(lambda: F.layer_norm(x, (H,), w, b, 1e-6), (x, w, b), lambda y: g),
    }, None


def dyt_case(BT, H, dt):
    """Liger's benchmark_dyt: LigerDyT(H) against gamma * tanh(alpha * x) + beta"""
    x = torch.randn(BT, H, dtype=dt, requires_grad=True)
    alpha = torch.full((1,), 0.5, dtype=dt, requires_grad=True)
    gamma = torch.ones(H, dtype=dt, requires_grad=True)
    beta = torch.zeros(H, dtype=dt, requires_grad=True)
    g = torch.randn(BT, H, dtype=dt)
    return {
        "ubgen": lambda: step(lambda: ut.dyt(x, alpha, gamma, beta), (x, alpha, gamma, beta), lambda y: g),
        "torch": lambda: step(lambda: gamma * torch.tanh(alpha * x) + beta, (x, alpha, gamma, beta), lambda y: g),
        "copy": row_copies(BT * H * x.element_size()),
    }, None


def unary_case(ours, theirs, BT, H, dt):
    """an op of one [BT, H] tensor (Liger's benchmark_relu_squared,
    benchmark_softmax and benchmark_sparsemax): ours(x) against theirs(x),
    torch eager"""
    x = torch.randn(BT, H, dtype=dt, requires_grad=True)
    g = torch.randn(BT, H, dtype=dt)
    return {
        "ubgen": lambda: step(lambda: ours(x), (x,), lambda y: g),
        "torch": lambda: step(lambda: theirs(x), (x,), lambda y: g),
        "copy": row_copies(BT * H * x.element_size()),
    }, None


def neighborhood_attention_case(N, dt, B=2, H=8, D=64, kernel_size=7, dilation=1):
    """Liger's benchmark_fused_neighborhood_attention (its small config: 8
    heads of 64, kernel 7, batch 2) on the op: query, key, value [B, H, N,
    D] against the eager masked attention of Liger's test (the N x N scores,
    the window's mask, softmax, times value; the mask made once, outside
    the timing); the copy baseline moves q, k, v, out forward and dout, q,
    k, v, out, dq, dk, dv backward"""
    q, k, v = (torch.randn(B, H, N, D, dtype=dt, requires_grad=True) for _ in range(3))
    g = torch.randn(B, H, N, D, dtype=dt)
    i, j = torch.arange(N)[:, None], torch.arange(N)[None, :]
    outside = ((j - i).abs() > kernel_size // 2 * dilation) | ((j - i) % dilation != 0)

    def eager():
        scores = (q @ k.transpose(-2, -1) * D ** -0.5).masked_fill(outside, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v
    return {
        "ubgen": lambda: step(lambda: ut.neighborhood_attention(q, k, v, kernel_size, dilation), (q, k, v),
                              lambda y: g),
        "torch": lambda: step(eager, (q, k, v), lambda y: g),
        "copy": row_copies(q.nbytes, 4.0, 8.0),
    }, None


MHC_CFG = dict(tmax=20, rms_eps=1e-6, pre_eps=0.0, sinkhorn_eps=1e-6, post_mult=2.0)  # Liger's benchmark defaults


def torch_mhc_coeffs(x, phi, b, a_pre, a_post, a_res, tmax, rms_eps, pre_eps, sinkhorn_eps, post_mult):
    """Liger's test_mhc mhc_coeffs_ref: float32 torch ops"""
    HC, C = x.shape[-2:]
    xm = x.reshape(-1, HC * C).float()
    mix = (xm @ phi.float()) * torch.rsqrt(xm.pow(2).mean(dim=-1, keepdim=True) + rms_eps)
    h_pre = torch.sigmoid(mix[:, :HC] * a_pre + b[:HC]) + pre_eps
    h_post = torch.sigmoid(mix[:, HC:2 * HC] * a_post + b[HC:2 * HC]) * post_mult
    mat = torch.softmax(mix[:, 2 * HC:].reshape(-1, HC, HC) * a_res + b[2 * HC:].reshape(HC, HC), dim=-1) + sinkhorn_eps
    mat = mat / (mat.sum(dim=-2, keepdim=True) + sinkhorn_eps)
    for _ in range(tmax - 1):
        mat = mat / (mat.sum(dim=-1, keepdim=True) + sinkhorn_eps)
        mat = mat / (mat.sum(dim=-2, keepdim=True) + sinkhorn_eps)
    return h_pre, h_post, mat


def mhc_case(sub, T, dt, B=4, HC=4, C=4096):
    """Liger's benchmark_mhc (B 4, HC 4, C 4096: Llama 3 8B's hidden size, tmax 20), one sub-kernel against its
    torch eager reference; x and phi in the dtype (float32 with allow_fp32). The copy baseline moves the bytes
    each pass must: coeffs reads x (forward) and reads it twice and writes dx (backward); pre reads x and writes
    [.., C] (forward), reads it, x and writes dx (backward); post_res reads x, f_out, writes x_out, and back"""
    K, M = HC * C, HC * HC + 2 * HC
    x = torch.randn(B, T, HC, C, dtype=dt, requires_grad=True)
    phi = (torch.randn(K, M) * 0.02).to(dt).requires_grad_()
    b = torch.zeros(M, requires_grad=True)
    alphas = [torch.tensor(1.0, requires_grad=True) for _ in range(3)]
    params = [x, phi, b] + alphas
    with torch.no_grad():
        h_pre, h_post, h_res = (h.requires_grad_() for h in ut.mhc_coeffs(*params, allow_fp32=True, **MHC_CFG))
    f_out = torch.randn(B, T, C, dtype=dt, requires_grad=True)
    nbytes, inv = x.numel() * x.element_size(), 1.0 / HC
    if sub == "coeffs":
        ours = lambda: ut.mhc_coeffs(*params, allow_fp32=True, **MHC_CFG)  # noqa: E731
        theirs = lambda: torch_mhc_coeffs(*params, **MHC_CFG)  # noqa: E731
        grads, copies = params, (0.5, 1.5)
    elif sub == "pre":
        ours = lambda: ut.mhc_pre(x, h_pre)  # noqa: E731
        theirs = lambda: (x.float() * h_pre.unsqueeze(-1)).sum(dim=-2)  # noqa: E731
        grads, copies = (x, h_pre), ((1 + inv) / 2, (2 + inv) / 2)
    else:
        ours = lambda: ut.mhc_post_res(x, f_out, h_post, h_res)  # noqa: E731
        theirs = lambda: (torch.einsum("...oi,...ic->...oc", h_res, x.float())  # noqa: E731
                          + h_post.unsqueeze(-1) * f_out.float().unsqueeze(-2))
        grads, copies = (x, f_out, h_post, h_res), ((2 + inv) / 2, (3 + 2 * inv) / 2)

    def g_like(y):
        return tuple(torch.ones_like(t) for t in y) if isinstance(y, tuple) else torch.ones_like(y)
    return {
        "ubgen": lambda: step(ours, grads, g_like),
        "torch": lambda: step(theirs, grads, g_like),
        "copy": row_copies(nbytes, *copies),
    }, None


def torch_grpo_loss(logits, old_logp, ref_logp, ids, adv, mask, temperature, beta, eps_low=0.2, eps_high=0.2):
    """Liger's benchmark_grpo_loss_kernel TorchGRPOLoss: token-level PPO
    clipping with the KL term, per-token losses averaged over the mask"""
    logp = torch.log_softmax(logits[:, :-1].float() / temperature, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    coef_1 = torch.exp(logp - old_logp)
    coef_2 = torch.clamp(coef_1, 1 - eps_low, 1 + eps_high)
    a = adv.unsqueeze(-1)
    loss = -torch.minimum(coef_1 * a, coef_2 * a)
    kl = torch.exp(ref_logp - logp) - (ref_logp - logp) - 1
    loss = loss + beta * kl
    return (loss * mask).sum() / mask.sum().clamp(min=1.0)


def grpo_loss_case(B, T, V, dt):
    """Liger's benchmark_grpo_loss_kernel (token level): GrpoLossFunction
    (loss_type "bnpo", the masked mean as its torch baseline) against
    TorchGRPOLoss, logits [B, T + 1, V], beta 0.1; the copy baseline: the
    logits read twice (forward), read and dlogits written (backward)"""
    logits = torch.randn(B, T + 1, V, dtype=dt, requires_grad=True)
    ids = torch.randint(0, V, (B, T))
    old, ref, adv, mask = torch.randn(B, T), torch.randn(B, T), torch.randn(B), torch.ones(B, T)
    ours = lambda: ut.GrpoLossFunction.apply(logits, old, ref, ids, adv, mask, 1.0, 0.1, 0.2, 0.2, False, "bnpo")[0]
    one = torch.tensor(1.0)
    return {
        "ubgen": lambda: step(ours, (logits,), lambda y: one),
        "torch": lambda: step(lambda: torch_grpo_loss(logits, old, ref, ids, adv, mask, 1.0, 0.1), (logits,),
                              lambda y: one),
        "copy": row_copies(logits.nbytes, 1.0, 1.0),
    }, None


def tvd_case(BT, V, dt):
    """Liger's benchmark_tvd: LigerTVDLoss (batchmean) against its
    TorchTVDLoss, p and q softmaxes [BT, V]; the copy baseline moves p and q
    (forward) and p, q and dp (backward)"""
    p = torch.randn(BT, V).softmax(dim=-1).to(dt).requires_grad_()
    q = torch.randn(BT, V).softmax(dim=-1).to(dt)
    return {
        "ubgen": lambda: step(lambda: ut.tvd(p, q), (p,), torch.ones_like),
        "torch": lambda: step(lambda: torch.sum(torch.abs(p - q) / 2.0) / p.size(0), (p,), torch.ones_like),
        "copy": row_copies(BT * V * p.element_size()),
    }, None


def kl_div_case(BT, V, dt):
    """Liger's benchmark_kl_div: LigerKLDIVLoss against torch's nn.KLDivLoss,
    reduction "batchmean", y_pred a log_softmax and y_true a softmax [BT, V]"""
    y_pred = torch.randn(BT, V, dtype=dt).log_softmax(dim=-1).requires_grad_()
    y_true = torch.randn(BT, V, dtype=dt).softmax(dim=-1)
    ours, theirs = ut.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean")
    one = torch.tensor(1.0)
    return {
        "ubgen": lambda: step(lambda: ours(y_pred, y_true), (y_pred,), lambda y: one),
        "torch": lambda: step(lambda: theirs(y_pred, y_true), (y_pred,), lambda y: one),
        # forward: y_pred and y_true read; backward: y_true read, dy_pred written
        "copy": row_copies(y_pred.nbytes, 1.0, 1.0),
    }, None


def torch_jsd(log_q, log_p, beta=0.5):
    """Liger's benchmark and test TorchJSD: KLDivLoss(log_target=True) terms
    of the mixture in f32, summed over the vocab, averaged over the rows"""
    lq, lp = log_q.float(), log_p.float()
    log_m = torch.lerp(lq.exp(), lp.exp(), beta).log()
    kl = torch.nn.functional.kl_div
    loss = (beta * kl(log_m, lp, reduction="none", log_target=True).sum(-1) +
            (1 - beta) * kl(log_m, lq, reduction="none", log_target=True).sum(-1))
    return (loss / lq.shape[0]).sum().to(log_q.dtype)


def jsd_case(BT, V, dt):
    """Liger's benchmark_jsd: LigerJSD against TorchJSD on log_softmax(randn)
    rows, the student's gradient, grad_output 1 (the loss is the last layer)"""
    x = torch.randn(BT, V).log_softmax(dim=-1).to(dt).requires_grad_()
    target = torch.randn(BT, V).log_softmax(dim=-1).to(dt)
    return {
        "ubgen": lambda: step(lambda: ut.jsd(x, target), (x,), torch.ones_like),
        "torch": lambda: step(lambda: torch_jsd(x, target), (x,), torch.ones_like),
        "copy": row_copies(BT * V * x.element_size(), 1.5, 0.0),  # the forward reads log_q, log_p, writes dlog_q
    }, None


def fused_linear_jsd_case(BT, H, V, dt):
    """Liger's benchmark_fused_linear_jsd: LigerFusedLinearJSD against its
    TorchLMHeadJSD (both projections, log_softmax in f32, the JSD, autograd)
    on rand inputs and weights, the student's dx and dW; dx and dW are
    subtracted from the memory, as FLCE's"""
    xs = torch.rand(BT, H).to(dt).requires_grad_()
    ws = (torch.rand(V, H) / H).to(dt).requires_grad_()
    xt, wt = torch.rand(BT, H).to(dt), (torch.rand(V, H) / H).to(dt)
    one = torch.tensor(1.0)

    def eager():
        lq = torch.log_softmax((xs @ ws.t()).float(), dim=-1)
        lp = torch.log_softmax((xt @ wt.t()).float(), dim=-1)
        return torch_jsd(lq, lp)
    grads = (BT * H + V * H) * xs.element_size()
    return {
        "ubgen": lambda: step(lambda: ut.fused_linear_jsd(xs, ws, xt, wt), (xs, ws), lambda y: one),
        "torch": lambda: step(eager, (xs, ws), lambda y: one),
    }, grads


def torch_moe(x, gate_up_proj, down_proj, top_k_index, top_k_weights):
    """the stock loop over the experts that have tokens (transformers 5's
    MixtralExperts, Liger's benchmark_fused_moe reference)"""
    E = gate_up_proj.shape[0]
    out = torch.zeros_like(x)
    with torch.no_grad():
        mask = F.one_hot(top_k_index.long(), num_classes=E).permute(2, 1, 0)
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
    for e in hit:
        slot, token = torch.where(mask[e[0]])
        gate, up = F.linear(x[token], gate_up_proj[e[0]]).chunk(2, dim=-1)
        y = F.linear(F.silu(gate) * up, down_proj[e[0]]) * top_k_weights[token, slot, None]
        out.index_add_(0, token, y.to(out.dtype))
    return out


def fused_moe_case(T, E, H, I, K, dt):
    """Liger's benchmark_fused_moe: LigerFusedMoEFunction against the stock
    loop of torch matmuls over the experts, its inputs (randn, weights times
    0.02, softmaxed top-k of random logits); the gradients of x, both
    weights and top_k_weights, which are subtracted from the memory"""
    x = torch.randn(T, H, dtype=dt, requires_grad=True)
    gup = (torch.randn(E, 2 * I, H, dtype=dt) * 0.02).requires_grad_()
    down = (torch.randn(E, H, I, dtype=dt) * 0.02).requires_grad_()
    logits = torch.randn(T, E)
    idx = torch.topk(logits, K, dim=-1).indices.to(torch.int32)
    w = torch.softmax(torch.gather(logits, 1, idx.long()), dim=-1).to(dt).requires_grad_()
    g = torch.randn(T, H, dtype=dt)
    leaves = (x, gup, down, w)
    grads = sum(t.numel() for t in leaves) * x.element_size()
    return {
        "ubgen": lambda: step(lambda: ut.fused_moe(x, gup, down, idx, w), leaves, lambda y: g),
        "torch": lambda: step(lambda: torch_moe(x, gup, down, idx, w), leaves, lambda y: g),
    }, grads


def poly_norm_case(T, H, dt):
    """Liger's benchmark_poly_norm: LigerPolyNorm against its NaivePolyNorm
    (PolyCom's formula in f32, float32 weight and bias, output in x's dtype)"""
    x = torch.randn(T, H, dtype=dt, requires_grad=True)
    w = torch.full((3,), 1 / 3, requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)
    g = torch.randn(T, H, dtype=dt)

    def naive():
        x32 = x.float()
        norm = [u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + 1e-6) for u in (x32 ** 3, x32 ** 2, x32)]
        return (w[0] * norm[0] + w[1] * norm[1] + w[2] * norm[2] + b).to(dt)

    return {
        "ubgen": lambda: step(lambda: ut.poly_norm(x, w, b, 1e-6), (x, w, b), lambda y: g),
        "torch": lambda: step(naive, (x, w, b), lambda y: g),
        "copy": row_copies(T * H * x.element_size()),
    }, None


def torch_sparsemax(x):
    """sparsemax over the last dimension by a sort, as Liger's benchmark_sparsemax"""
    z = torch.sort(x, dim=-1, descending=True).values
    j = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    support = 1 + j * z > z.cumsum(-1)
    tau = ((z * support).sum(-1, keepdim=True) - 1) / support.sum(-1, keepdim=True)
    return torch.clamp(x - tau, min=0)


def modulated_rms_norm_case(BT, H, dt):
    """Liger's benchmark_modulated_rms_norm: LigerModulatedRMSNorm(H,
    in_place=False) with per-token scale and shift against its test's
    reference, (1 + scale) * LlamaRMSNorm(x) + shift"""
    x = torch.randn(BT, H, dtype=dt, requires_grad=True)
    w = torch.ones(H, dtype=dt, requires_grad=True)
    scale = (torch.randn(BT, H, dtype=dt) * 0.1).requires_grad_()
    shift = (torch.randn(BT, H, dtype=dt) * 0.1).requires_grad_()
    g = torch.randn(BT, H, dtype=dt)
    ours = lambda: ut.modulated_rms_norm(x, w, scale, shift, 1e-6, 0.0, "llama", False)
    return {
        "ubgen": lambda: step(ours, (x, w, scale, shift), lambda y: g),
        "torch": lambda: step(lambda: torch_rms_norm(x, w) * (1 + scale) + shift, (x, w, scale, shift), lambda y: g),
        # forward: x, scale, shift read and y written; backward: dy, x, scale read and dx, dscale, dshift written
        "copy": row_copies(2 * BT * H * x.element_size()),
    }, None


def fused_add_rms_norm_case(BT, H, dt):
    """Liger's benchmark_fused_add_rms_norm: LigerFusedAddRMSNorm(H) against
    s = x + r, then HuggingFace's LlamaRMSNorm of s; the copy baseline moves
    two tensors' bytes (x, r in and y, s out; dy, ds, s in and dx out)"""
    x = torch.randn(BT, H, dtype=dt, requires_grad=True)
    r = torch.randn(BT, H, dtype=dt, requires_grad=True)
    w = torch.ones(H, dtype=dt, requires_grad=True)
    gy, gs = torch.randn(BT, H, dtype=dt), torch.randn(BT, H, dtype=dt)

    def eager():
        s = x + r
        return torch_rms_norm(s, w), s

    return {
        "ubgen": lambda: step(lambda: ut.fused_add_rms_norm(x, r, w), (x, r, w), lambda y: (gy, gs)),
        "torch": lambda: step(eager, (x, r, w), lambda y: (gy, gs)),
        "copy": row_copies(2 * BT * H * x.element_size()),
    }, None


def group_norm_case(BT, dt, C=4096, channels_per_group=4, H=512):
    """Liger's benchmark_group_norm: x [BT / H, C, H] in groups of 4 channels,
    LigerGroupNorm against torch.nn.GroupNorm (weight ones, bias zeros)"""
    x = torch.randn(max(1, BT // H), C, H, dtype=dt, requires_grad=True)
    w = torch.ones(C, dtype=dt, requires_grad=True)
    b = torch.zeros(C, dtype=dt, requires_grad=True)
    g = torch.randn(x.shape, dtype=dt)
    G = C // channels_per_group
    return {
        "ubgen": lambda: step(lambda: ut.group_norm(x, w, b, C, G, 1e-6), (x, w, b), lambda y: g),
        "torch": lambda: step(lambda: F.group_norm(x, G, w, b, 1e-6), (x, w, b), lambda y: g),
        "copy": row_copies(x.numel() * x.element_size()),
    }, None


def rope_case(T, dt, Hq=32, Hk=8, D=128):
    """Liger's benchmark_rope: q, k the transposed views of [1, T, H, D]
    projections, cos and sin [1, T, D]; torch is transformers' formula"""
    from ubgen.torch.rope import rope
    q = torch.randn(1, T, Hq, D, dtype=dt).transpose(1, 2).requires_grad_()
    k = torch.randn(1, T, Hk, D, dtype=dt).transpose(1, 2).requires_grad_()
    angle = torch.randn(1, T, D // 2)
    cos, sin = torch.cat((angle, angle), -1).cos().to(dt), torch.cat((angle, angle), -1).sin().to(dt)

    def half(x):
        return torch.cat((-x[..., D // 2:], x[..., :D // 2]), dim=-1)

    def torch_rope():
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        return q * c + half(q) * s, k * c + half(k) * s

    gq, gk = torch.randn(q.shape, dtype=dt), torch.randn(k.shape, dtype=dt)
    return {
        "ubgen": lambda: step(lambda: rope(q, k, cos, sin), (q, k), lambda y: (gq, gk)),
        "torch": lambda: step(torch_rope, (q, k), lambda y: (gq, gk)),
    }, None


def mrope_case(T, dt, Hq=32, Hk=8, D=128):
    """Liger's benchmark_qwen2vl_mrope: q, k as rope_case's, cos and sin [3,
    1, T, D] of three position streams, mrope_section as Liger's (D 128: 16,
    24, 24); torch is transformers 4's apply_multimodal_rotary_pos_emb"""
    hw = D * 3 // 16
    sections = [D // 2 - 2 * hw, hw, hw]
    q = torch.randn(1, T, Hq, D, dtype=dt).transpose(1, 2).requires_grad_()
    k = torch.randn(1, T, Hk, D, dtype=dt).transpose(1, 2).requires_grad_()
    angle = torch.randn(3, 1, T, D // 2)
    cos, sin = torch.cat((angle, angle), -1).cos().to(dt), torch.cat((angle, angle), -1).sin().to(dt)

    def half(x):
        return torch.cat((-x[..., D // 2:], x[..., :D // 2]), dim=-1)

    def torch_mrope():
        c, s = (torch.cat([m[i % 3] for i, m in enumerate(t.split(sections * 2, dim=-1))], -1).unsqueeze(1)
                for t in (cos, sin))
        return q * c + half(q) * s, k * c + half(k) * s

    gq, gk = torch.randn(q.shape, dtype=dt), torch.randn(k.shape, dtype=dt)
    return {
        "ubgen": lambda: step(lambda: ut.mrope(q, k, cos, sin, sections), (q, k), lambda y: (gq, gk)),
        "torch": lambda: step(torch_mrope, (q, k), lambda y: (gq, gk)),
        "copy": row_copies(T * (Hq + Hk) * D * q.element_size()),
    }, None


def llama4_rope_case(T, dt, Hq=32, Hk=8, D=128):
    """Liger's benchmark_llama4_rope: q [1, T, Hq, D], k [1, T, Hk, D],
    freqs_cis [1, T, D/2] complex; torch is transformers' apply_rotary_emb"""
    q = torch.randn(1, T, Hq, D, dtype=dt, requires_grad=True)
    k = torch.randn(1, T, Hk, D, dtype=dt, requires_grad=True)
    angle = torch.randn(1, T, D // 2)
    freqs = torch.polar(torch.ones_like(angle), angle)

    def torch_rope():
        out = []
        for x in (q, k):
            xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
            out.append(torch.view_as_real(xc * freqs[:, :, None, :]).flatten(3).type_as(x))
        return tuple(out)

    gq, gk = torch.randn(q.shape, dtype=dt), torch.randn(k.shape, dtype=dt)
    return {
        "ubgen": lambda: step(lambda: ut.llama4_rope(q, k, freqs), (q, k), lambda y: (gq, gk)),
        "torch": lambda: step(torch_rope, (q, k), lambda y: (gq, gk)),
        "copy": row_copies(T * (Hq + Hk) * D * q.element_size()),
    }, None


OPS = {
    # name: (case(x, dtype), x_name, x_label, x values, quick x values, fixed shape, dtypes)
    "rms_norm": (lambda H, dt: rms_norm_case(2048, H, dt), "H", "hidden size", [1024, 2048, 4096, 8192], [4096],
                 {"M": 2048}, ["f32", "f16", "bf16"]),
    "embedding": (lambda V, dt: embedding_case(V, 768, 16384, dt), "V", "vocab size", [1024, 8192, 32768, 131072],
                  [32768], {"B": 32, "T": 512, "D": 768}, ["f32", "f16", "bf16"]),
    "attn_res": (lambda T, dt: attn_res_case(8, T, 4096, dt), "T", "tokens", [1024, 2048, 4096], [1024],
                 {"N": 8, "bsz": 1, "D": 4096}, ["f32", "f16", "bf16"]),
    "fused_linear_cross_entropy": (lambda BT, dt: flce_case(BT, 1024, 32768, dt), "BT", "B x T", [1024, 2048, 4096,
                                                                                                       8192],
                                   [4096], {"H": 1024, "V": 32768}, ["f32", "bf16"]),
    "cross_entropy": (lambda V, dt: cross_entropy_case(4096, V, dt), "V", "vocab size", [4096, 16384, 65536, 131072],
                      [32768], {"BT": 4096}, ["f32", "bf16"]),
    "swiglu": (lambda T, dt: glu_case("swiglu", T, 14336, dt), "T", "tokens", [1024, 2048, 4096], [1024],
               {"bsz": 1, "I": 14336}, ["f32", "bf16"]),
    "geglu": (lambda T, dt: glu_case("geglu", T, 14336, dt), "T", "tokens", [1024, 2048, 4096], [1024],
              {"bsz": 1, "I": 14336}, ["f32", "bf16"]),
    "layer_norm": (lambda H, dt: layer_norm_case(4096, H, dt), "H", "hidden size", [1024, 2048, 4096, 8192], [4096],
                   {"M": 4096}, ["f32", "bf16"]),
    "rope": (rope_case, "T", "tokens", [1024, 2048, 4096, 8192], [2048], {"bsz": 1, "Hq": 32, "Hk": 8, "D": 128},
             ["f32", "bf16"]),
    "qwen2vl_mrope": (mrope_case, "T", "tokens", [1024, 2048, 4096, 8192], [2048],
                      {"bsz": 1, "Hq": 32, "Hk": 8, "D": 128}, ["f32", "bf16"]),
    "llama4_rope": (llama4_rope_case, "T", "tokens", [1024, 2048, 4096, 8192], [2048],
                    {"bsz": 1, "Hq": 32, "Hk": 8, "D": 128}, ["f32", "bf16"]),
    "dyt": (lambda BT, dt: dyt_case(BT, 4096, dt), "BT", "B x T", [1024, 2048, 4096, 8192, 16384], [4096],
            {"H": 4096}, ["f32", "bf16"]),
    "relu_squared": (lambda BT, dt: unary_case(ut.relu_squared, lambda x: torch.square(torch.relu(x)), BT, 4096, dt),
                     "BT", "B x T", [1024, 2048, 4096, 8192, 16384], [4096], {"H": 4096}, ["f32", "bf16"]),
    "softmax": (lambda BT, dt: unary_case(ut.softmax, lambda x: torch.softmax(x, dim=-1), BT, 4096, dt),
                "BT", "B x T", [1024, 2048, 4096, 8192, 16384], [4096], {"D": 4096}, ["f32", "bf16"]),
    "neighborhood_attention": (neighborhood_attention_case, "N", "sequence length", [512, 1024, 2048, 4096], [1024],
                               {"B": 2, "H": 8, "D": 64, "kernel_size": 7}, ["f32", "bf16"]),
    "mhc_coeffs": (lambda T, dt: mhc_case("coeffs", T, dt), "T", "Sequence Length (T)", [128, 256, 512, 1024], [256],
                   {"B": 4, "HC": 4, "C": 4096}, ["f32", "bf16"]),
    "mhc_pre": (lambda T, dt: mhc_case("pre", T, dt), "T", "Sequence Length (T)", [128, 256, 512, 1024], [256],
                {"B": 4, "HC": 4, "C": 4096}, ["f32", "bf16"]),
    "mhc_post_res": (lambda T, dt: mhc_case("post_res", T, dt), "T", "Sequence Length (T)", [128, 256, 512, 1024],
                     [256], {"B": 4, "HC": 4, "C": 4096}, ["f32", "bf16"]),
    "grpo_loss": (lambda B, dt: grpo_loss_case(B, 512, 32000, dt), "B", "batch size", [2, 4, 8, 16], [2],
                  {"T": 512, "V": 32000}, ["f32", "bf16"]),
    "tvd": (lambda BT, dt: tvd_case(BT, 32000, dt), "BT", "B x T", [512, 1024, 2048, 4096], [1024], {"V": 32000},
            ["f32", "bf16"]),
    "kl_div": (lambda BT, dt: kl_div_case(BT, 32000, dt), "BT", "B x T", [256, 512, 1024, 2048], [256],
               {"V": 32000}, ["f32", "bf16"]),
    "jsd": (lambda BT, dt: jsd_case(BT, 32000, dt), "BT", "B x T", [1024, 2048, 4096], [1024], {"V": 32000},
            ["f32", "bf16"]),
    "fused_linear_jsd": (lambda BT, dt: fused_linear_jsd_case(BT, 1024, 32768, dt), "BT", "B x T", [1024, 2048, 4096],
                         [1024], {"H": 1024, "V": 32768}, ["f32", "bf16"]),
    # Liger's Qwen3-MoE-30B dimensions and its expert sweep at T 512 (its T sweep starts at E 128: minutes a
    # step for the stock loop here, whose backward zeroes a whole [E, 2I, H] gradient per expert)
    "fused_moe": (lambda E, dt: fused_moe_case(512, E, 2048, 768, 8, dt), "E", "experts", [8, 16, 32, 64, 128], [8],
                  {"T": 512, "H": 2048, "I": 768, "K": 8}, ["f32", "bf16"]),
    "poly_norm": (lambda T, dt: poly_norm_case(T, 4096, dt), "T", "tokens", [1024, 2048, 4096, 8192, 16384], [4096],
                  {"H": 4096}, ["f32", "bf16"]),
    "sparsemax": (lambda BT, dt: unary_case(ut.sparsemax, torch_sparsemax, BT, 4096, dt),
                  "BT", "B x T", [1024, 2048, 4096, 8192, 16384], [4096], {"D": 4096}, ["f32", "bf16"]),
    "modulated_rms_norm": (lambda BT, dt: modulated_rms_norm_case(BT, 4096, dt), "BT", "B x T",
                           [1024, 2048, 4096, 8192, 16384], [4096], {"H": 4096}, ["f32", "bf16"]),
    "group_norm": (group_norm_case, "BT", "B x T", [1024, 2048, 4096, 8192, 16384], [4096],
                   {"C": 4096, "channels_per_group": 4, "H": 512}, ["f32", "bf16"]),
    "fused_add_rms_norm": (lambda BT, dt: fused_add_rms_norm_case(BT, 4096, dt), "BT", "B x T",
                           [1024, 2048, 4096, 8192, 16384], [4096], {"H": 4096}, ["f32", "bf16"]),
}


def speed_op(name, reps, quick, records):
    case, x_name, x_label, xs, quick_xs, fixed, dtypes = OPS[name]
    xs = quick_xs if quick else xs
    for dname in dtypes:
        dt = DTYPES[dname]
        speed = {}  # provider -> mode -> [(p50, p20, p80)]
        ratios = []
        for x in xs:
            cases, _ = case(x, dt)
            r = max(3, reps // 3) if name in ("fused_linear_cross_entropy", "fused_linear_jsd", "fused_moe") else reps
            got = common.interleaved(cases, r)
            for prov, modes in got.items():
                for mode, ms in modes.items():
                    speed.setdefault(prov, {}).setdefault(mode, []).append(common.percentiles(ms))
            ratio = {m: speed["torch"][m][-1][0] / speed["ubgen"][m][-1][0] for m in ("forward", "backward", "full")}
            ratios.append(ratio)
            ceiling = ""
            if "copy" in speed:  # the most any kernel could be faster than torch here
                cp = speed["copy"]["full"][-1][0]
                ceiling = "; copy of the bytes %.2f ms: ubgen at %.0f%% of its bandwidth, torch/copy %.1fx" % (
                    cp, 100 * cp / speed["ubgen"]["full"][-1][0], speed["torch"]["full"][-1][0] / cp)
            print("%-28s %-4s %s=%-6d torch/ubgen: %s   full: ubgen %.2f ms, torch %.2f ms%s" % (
                name, dname, x_name, x, "  ".join("%s %.2fx" % (m, ratio[m]) for m in ratio),
                speed["ubgen"]["full"][-1][0], speed["torch"]["full"][-1][0], ceiling), flush=True)
        extra = dict(fixed, dtype=dname, threads=torch.get_num_threads(),
                     torch_over_ubgen=[{m: round(v, 3) for m, v in r.items()} for r in ratios])
        for prov in speed:
            for mode, ys in speed[prov].items():
                records.append(common.entry(name, prov, mode, "speed", "ms", x_name, x_label, xs, ys, extra))


def memory_op(name, quick, records):
    """the peak of a full step; after every timing (common.memory_mode)"""
    case, x_name, x_label, xs, quick_xs, fixed, dtypes = OPS[name]
    xs = quick_xs if quick else xs
    for dname in dtypes:
        mem = {}
        for x in xs:
            cases, grad_bytes = case(x, DTYPES[dname])
            cases.pop("copy", None)
            for fn in cases.values():  # once each first: compiled, warmed up
                fn()
            for prov, fn in cases.items():
                mem.setdefault(prov, []).append(common.peak_extra_bytes(fn) / 2 ** 20)
            line = "ubgen %.1f MB, torch %.1f MB" % (mem["ubgen"][-1], mem["torch"][-1])
            if grad_bytes:  # what both must hold: the gradients dx and dW themselves
                beyond = [max(mem[p][-1] - grad_bytes / 2 ** 20, 0) for p in ("ubgen", "torch")]
                line += "; beyond the gradients %.1f MB vs %.1f MB: %.1f%% of torch's" % (
                    beyond[0], beyond[1], 100 * beyond[0] / beyond[1] if beyond[1] else 0)
            print("%-28s %-4s %s=%-6d peak memory of a full step: %s" % (name, dname, x_name, x, line), flush=True)
        extra = dict(fixed, dtype=dname, allocation="glibc M_MMAP_THRESHOLD 256 KiB, no ubgen.torch pool")
        for prov in mem:
            records.append(common.entry(name, prov, "full", "memory", "MB", x_name, x_label, xs,
                                        [(m, m, m) for m in mem[prov]], extra))


def overhead(records, reps=2000):
    """ubgen.torch.rms_norm on 1 x 64 against the same C call from ctypes
    with the buffers ready: what the Python layer adds per call"""
    x = torch.randn(1, 64)
    w = torch.ones(64)
    y = torch.empty(1, 64)
    rstd = torch.empty(1)
    ctx = ubgen.context()
    # the C API's typed entry, declared here: the package reaches C through
    # the generic launch alone
    fwd = _lib.lib.ubg_rms_norm_fwd
    fwd.restype = ctypes.c_int
    fwd.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.c_float, ctypes.c_float, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    args = (ctx.handle, _lib.dtype_code("f32"), 1, 64, x.data_ptr(), w.data_ptr(), 1e-6, 0.0, 0, y.data_ptr(),
            rstd.data_ptr())

    def raw():
        fwd(*args)

    def wrapped():
        ut.rms_norm(x, w)

    with torch.no_grad():
        got = common.interleaved({"c_call": lambda: {"forward": common.timed(raw)},
                                  "ubgen.torch": lambda: {"forward": common.timed(wrapped)}}, reps, warmup=50)
    c = common.percentiles(got["c_call"]["forward"])
    p = common.percentiles(got["ubgen.torch"]["forward"])
    diffs = sorted(b - a for a, b in zip(got["c_call"]["forward"], got["ubgen.torch"]["forward"]))
    over_us = diffs[len(diffs) // 2] * 1e3
    print("python overhead: rms_norm fwd 1 x 64: C call from ctypes %.1f us, ubgen.torch %.1f us: +%.1f us median "
          "(target <= 15 us)" % (c[0] * 1e3, p[0] * 1e3, over_us), flush=True)
    extra = {"rows": 1, "cols": 64, "dtype": "f32", "overhead_us": round(over_us, 2)}
    for name, ys in (("c_call", c), ("ubgen.torch", p)):
        records.append(common.entry("python_overhead", name, "forward", "speed", "us", "cols", "cols", [64],
                                    [tuple(v * 1e3 for v in ys)], extra))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench_torch.json")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--quick", action="store_true", help="one shape per op")
    ap.add_argument("--ops", default=",".join(list(OPS) + ["overhead"]))
    a = ap.parse_args()
    common.set_threads(len(os.sched_getaffinity(0)))  # the CPUs this process may run on (taskset -c 0,1: two)
    print("threads: torch %d, ubgen %s; library %s" % (torch.get_num_threads(), ubgen.context().settings["threads"]
                                                        or "all", ubgen.LIB_PATH), flush=True)
    records = []
    ops = a.ops.split(",")
    for name in ops:
        if name not in OPS and name != "overhead":
            sys.exit("bench_ops: --ops %s: not one of %s, overhead" % (name, ", ".join(OPS)))
    for name in ops:
        if name == "overhead":
            overhead(records)
        else:
            speed_op(name, a.reps, a.quick, records)
    common.memory_mode()
    for name in ops:
        if name != "overhead":
            memory_op(name, a.quick, records)
    common.write_json(a.out, records)
    print("wrote %s" % a.out)


if __name__ == "__main__":
    main()

"""GRPO loss (Liger's GrpoLossFunction, triton_grpo_loss and
fused_selective_log_softmax), forward and backward in one place
(specs/grpo_loss.json):

    logits [B, L + 1, V] T, completion_ids [B, L], advantages [B]
    the kernels, a sweep over the vocab per token, in f32:
        fwd: lse = logsumexp(logits / t), logp = logits[ids] / t - lse   [B, L] f32
        bwd: dlogits = dlogp / t (onehot(ids) - exp(logits / t - lse)),   0 at position L
    here, on [B, L] f32 scalars (a 1/V of the kernels' work): each loss_type's
    per-token loss and its derivative dloss/dlogp (_token_terms), and the
    reductions over tokens with their gradients (_reduce, _dloss)
"""
import math

import torch

from . import _util

# loss_type -> the per-token loss it takes (Liger's _str_to_loss_type); the
# PPO-clipped ones differ only in their reduction
LOSS_TYPES = {"grpo": "ppo", "dapo": "ppo", "bnpo": "ppo", "dr_grpo": "ppo", "luspo": "ppo",
              "cispo": "cispo", "sapo": "sapo", "vespo": "vespo"}
LEVELS = ("token", "sequence")


def _sweep(logits, ids, temperature):
    """(logp, lse) [B, L] f32 of each completion token (the forward kernel)"""
    B, L1, V = logits.shape
    L = L1 - 1
    logp = _util.empty((B, L), torch.float32)
    lse = _util.empty((B, L), torch.float32)
    if B * L:
        _util.launch("grpo_loss", "fwd", logits.dtype, logits=logits, ids=ids, logp=logp, lse=lse, batch=B,
                     seq=L, vocab=V, temperature=_util.f32(temperature))
    return logp, lse


def _inputs(logits, ids):
    """logits [B, L + 1, V] (checked) and the last L columns of ids as int64"""
    x = _util.tensor("logits", logits, ndim=3)
    _util.dtype_code("logits", x)
    if x.shape[1] < 1:
        raise ValueError("logits has shape %s; [B, L + 1, V] with L + 1 >= 1 is needed" % (tuple(x.shape),))
    L = x.shape[1] - 1
    i = _util.indices("completion_ids", ids)
    if i.dim() != 2 or i.shape[0] != x.shape[0] or i.shape[1] < L:
        raise ValueError("completion_ids has shape %s; [%d, >= %d] is needed for logits of shape %s"
                         % (tuple(i.shape), x.shape[0], L, tuple(x.shape)))
    return x, i[:, i.shape[1] - L:].contiguous()


def _check_temperature(temperature):
    if not temperature > 0:
        raise ValueError("temperature=%r must be positive" % (temperature,))


@torch.no_grad()
def fused_selective_log_softmax(logits, input_ids, temperature=0.9, mask=None):
    """log_softmax(logits[:, :-1] / temperature) at input_ids[:, -L:],
    [B, L] f32; 0 where mask[:, -L:] is 0 (Liger's)"""
    _check_temperature(temperature)
    x, ids = _inputs(logits, input_ids)
    logp, _ = _sweep(x, ids, temperature)
    if mask is not None:
        logp = torch.where(mask[:, mask.shape[1] - logp.shape[1]:] != 0, logp, 0.0)
    return logp


def _token_terms(o, logp, old_logp, ref_logp, adv, mask, ratio, phi):
    """The per-token scalars of loss_type o.kind at level o.level, in f32
    (Liger's _grpo_loss_fwd_kernel(_seq) and _grpo_loss_bwd_kernel(_seq)):
    (loss, kl or None, is_clipped, g_tok, g_seq), every [B, L] or [B, 1],
    where dloss/dlogp_t = g_tok_t dloss_t + g_seq sum_t' dloss_t' ratio_t'.
    adv, phi [B, 1]; mask [B, L]; ratio [B, L] or [B, 1] or None."""
    old = logp if old_logp is None else old_logp
    zero = torch.zeros((), dtype=torch.float32)
    g_seq = zero
    if o.level == "sequence":  # one importance ratio per sequence, from its mean log-ratio
        seq_lens = mask.sum(-1, keepdim=True).clamp(min=1.0)
        coef_1 = torch.exp(((logp - old) * mask).sum(-1, keepdim=True) / seq_lens)
    else:
        coef_1 = torch.exp(logp - old)
    if o.kind == "ppo":
        coef_2 = coef_1.clamp(1 - o.eps_low, 1 + o.eps_high)
        is_clipped = (((coef_1 < 1 - o.eps_low) & (adv < 0)) | ((coef_1 > 1 + o.eps_high) & (adv > 0))).float()
        c1 = coef_1 if o.delta is None else torch.minimum(coef_1, torch.tensor(o.delta, dtype=torch.float32))
        loss = -torch.minimum(c1 * adv, coef_2 * adv)
        g = -coef_1 * adv * (coef_2 * adv >= c1 * adv)  # the unclipped branch's; the clipped one is constant
        if o.delta is not None:
            g = g * (coef_1 <= o.delta)
        if o.level == "sequence":  # through the sequence's mean: d coef_1 / d logp_t = coef_1 / seq_len
            g_seq, g = g / seq_lens, zero
    elif o.kind == "cispo":  # the clipped ratio is detached: the loss is linear in logp
        coef_2 = torch.clamp(coef_1, max=o.eps_high)
        loss = -coef_2 * adv * logp
        is_clipped = ((coef_1 > o.eps_high) & (adv > 0)).float()
        g = -coef_2 * adv
    elif o.kind == "sapo":  # a sigmoid gate sigmoid(tau (coef_1 - 1)) 4 / tau, tau by the advantage's sign
        tau = torch.where(adv > 0, o.sapo_temperature_pos, o.sapo_temperature_neg).float()
        s = torch.sigmoid(tau * (coef_1 - 1.0))
        loss = -(s * 4.0 / tau) * adv
        is_clipped = torch.zeros_like(logp)
        g = -adv * (4.0 * s * (1.0 - s)) * coef_1
    else:  # vespo: the sequence's detached gamma weight phi on logp
        loss = -phi * adv * logp
        is_clipped = torch.zeros_like(logp)
        g = -phi * adv
    if ratio is not None and o.kind != "vespo":  # vLLM's importance ratio, before the KL term (VESPO has it in phi)
        loss = loss * ratio
        g = g * ratio
    kl = None
    if o.beta != 0.0:
        d = ref_logp - logp
        kl = torch.exp(d) - d - 1
        if o.use_bias_correction_kl:  # kl times the importance ratio (before delta), detached in the gradient
            kl = kl * coef_1
            g = g + o.beta * coef_1 * (logp - ref_logp)
        else:
            g = g + o.beta * (1 - torch.exp(d))
        loss = loss + o.beta * kl
    on = mask != 0  # a masked token has no loss, KL, clip or gradient (Liger's kernels skip it)
    loss = torch.where(on, loss.expand_as(logp), 0.0)
    kl = None if kl is None else torch.where(on, kl, 0.0)
    is_clipped = torch.where(on, is_clipped.expand_as(logp), 0.0)
    return loss, kl, is_clipped, g, g_seq


def _dapo_normalizer(mask, num_items_in_batch):
    """the active tokens per process (Liger's _compute_dapo_normalizer):
    num_items_in_batch, else the mask's sum over every process, / world size"""
    dist = torch.distributed
    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    if num_items_in_batch is not None:
        n = torch.as_tensor(num_items_in_batch, dtype=torch.float32).clone()
    else:
        n = mask.sum()
        if world > 1:
            dist.all_reduce(n, op=dist.ReduceOp.SUM)
    return torch.clamp(n / world, min=1.0)


def _reduce(loss, mask, o):
    """loss [B, L] reduced over tokens by loss_type o.name (Liger's _reduce_loss)"""
    B, L = loss.shape
    if o.name in ("grpo", "sapo"):
        return ((loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if o.name == "bnpo":
        return (loss * mask).sum() / mask.sum().clamp(min=1.0)
    if o.name == "dr_grpo":
        return (loss * mask).sum() / (B * (o.max_completion_length or L))
    if o.name in ("dapo", "cispo", "vespo"):
        return (loss * mask).sum() / _dapo_normalizer(mask, o.num_items_in_batch)
    return (loss * mask.sum(-1, keepdim=True)).mean()  # luspo


def _dloss(grad, mask, o):
    """d _reduce / d loss [B, L] times the upstream grad (Liger's backward)"""
    B, L = mask.shape
    if o.name in ("grpo", "sapo"):
        return grad * mask / (mask.sum(-1, keepdim=True).clamp(min=1.0) * B)
    if o.name == "bnpo":
        return grad * mask / mask.sum().clamp(min=1.0)
    if o.name == "dr_grpo":
        return grad * mask / (B * (o.max_completion_length or L))
    if o.name in ("dapo", "cispo", "vespo"):
        return grad * mask / _dapo_normalizer(mask, o.num_items_in_batch)
    return grad * mask * mask.sum(-1, keepdim=True) / (B * L)  # luspo


class _Options:
    """the scalar arguments of one call, checked as Liger's GrpoLossFunction does"""

    def __init__(self, temperature, beta, eps_low, eps_high, loss_type, max_completion_length, level,
                 sapo_temperature_pos, sapo_temperature_neg, delta, use_bias_correction_kl, num_items_in_batch):
        if loss_type not in LOSS_TYPES:
            raise ValueError("loss_type=%r is not one of %s" % (loss_type, ", ".join(map(repr, LOSS_TYPES))))
        if level not in LEVELS:
            raise ValueError("importance_sampling_level must be 'token' or 'sequence', got %r" % (level,))
        kind = LOSS_TYPES[loss_type]
        if delta is not None and kind != "ppo":
            raise ValueError("delta (two-sided clipping) is not supported for loss_type=%r" % (loss_type,))
        if level == "sequence" and kind != "ppo":
            raise ValueError("Sequence-level importance sampling is not supported for loss_type=%r; use "
                             "importance_sampling_level='token'" % (loss_type,))
        if kind == "sapo" and not (sapo_temperature_pos > 0 and sapo_temperature_neg > 0):
            raise ValueError("sapo_temperature_pos=%r and sapo_temperature_neg=%r must be positive"
                             % (sapo_temperature_pos, sapo_temperature_neg))
        _check_temperature(temperature)
        self.name, self.kind, self.level = loss_type, kind, level
        self.temperature, self.beta, self.eps_low, self.eps_high = temperature, beta, eps_low, eps_high
        self.max_completion_length, self.delta = max_completion_length, None if delta is None else float(delta)
        self.sapo_temperature_pos, self.sapo_temperature_neg = sapo_temperature_pos, sapo_temperature_neg
        self.use_bias_correction_kl, self.num_items_in_batch = use_bias_correction_kl, num_items_in_batch


def _f32(name, t, shape):
    """t as f32 viewed as shape (None stays None)"""
    if t is None:
        return None
    t = _util.tensor(name, t)
    if t.numel() != math.prod(shape):
        raise ValueError("%s has shape %s; %s is needed" % (name, tuple(t.shape), tuple(shape)))
    return t.float().reshape(shape)


def _ratio(vllm_is_ratio, B, L):
    """vLLM's importance ratio as [B, L] or [B, 1] f32 (None stays None)"""
    if vllm_is_ratio is None:
        return None
    r = _util.tensor("vllm_is_ratio", vllm_is_ratio)
    if not (r.shape == (B,) or r.shape == (B, 1) or r.shape == (B, L)):
        raise ValueError("vllm_is_ratio has shape %s; (%d,), (%d, 1) or (%d, %d) is needed"
                         % (tuple(r.shape), B, B, B, L))
    return r.float().reshape(B, -1)


class GrpoLossFunction(torch.autograd.Function):
    """Liger's GrpoLossFunction: apply(logits, old_logp, ref_logp,
    completion_ids, advantages, completion_mask, temperature, beta, eps_low,
    eps_high, inplace, loss_type="grpo", max_completion_length=None,
    reduce=True, importance_sampling_level="token", sapo_temperature_pos=1.0,
    sapo_temperature_neg=1.05, vllm_is_ratio=None, delta=None,
    use_bias_correction_kl=False, num_items_in_batch=None, phi_seq=None) ->
    (loss, kl_mean or None, clip_ratio) reduced, or per token (loss, kl, is_clipped)"""

    @staticmethod
    def forward(ctx, logits, old_logp, ref_logp, completion_ids, advantages, completion_mask, temperature, beta,
                eps_low, eps_high, inplace, loss_type="grpo", max_completion_length=None, reduce=True,
                importance_sampling_level="token", sapo_temperature_pos=1.0, sapo_temperature_neg=1.05,
                vllm_is_ratio=None, delta=None, use_bias_correction_kl=False, num_items_in_batch=None,
                phi_seq=None):
        o = _Options(temperature, beta, eps_low, eps_high, loss_type, max_completion_length,
                     importance_sampling_level, sapo_temperature_pos, sapo_temperature_neg, delta,
                     use_bias_correction_kl, num_items_in_batch)
        x, ids = _inputs(logits, completion_ids)
        B, L = ids.shape
        if beta != 0.0 and ref_logp is None:
            raise ValueError("ref_logp is needed when beta=%r is not 0" % (beta,))
        if o.kind == "vespo" and phi_seq is None:
            raise ValueError("loss_type='vespo' needs phi_seq (triton_grpo_loss computes it)")
        old = _f32("old_logp", old_logp, (B, L))
        ref = _f32("ref_logp", ref_logp, (B, L)) if beta != 0.0 else None
        adv = _f32("advantages", advantages, (B, 1))
        phi = _f32("phi_seq", phi_seq, (B, 1)) if o.kind == "vespo" else None
        ratio = _ratio(vllm_is_ratio, B, L)
        mask = torch.ones(B, L) if completion_mask is None else _f32("completion_mask", completion_mask, (B, L))
        logp, lse = _sweep(x, ids, temperature)
        loss, kl, is_clipped, g_tok, g_seq = _token_terms(o, logp, old, ref, adv, mask, ratio, phi)
        ctx.save_for_backward(x, ids, lse, mask, g_tok, g_seq, ratio)
        # inplace: dlogits over the caller's logits (Liger's logits.data), not over a copy made for contiguity
        ctx.o, ctx.reduce, ctx.inplace = o, reduce, inplace and x is logits
        if not reduce:
            return loss, kl, is_clipped
        count = mask.sum().clamp(min=1.0)
        kl_mean = None if kl is None else (kl * mask).sum() / count
        return _reduce(loss, mask, o), kl_mean, (is_clipped * mask).sum() / count

    @staticmethod
    def backward(ctx, grad, *unused):
        x, ids, lse, mask, g_tok, g_seq, ratio = ctx.saved_tensors
        o = ctx.o
        B, L = ids.shape
        g = grad.float() * mask if not ctx.reduce else _dloss(grad.float(), mask, o)
        dlogp = g_tok * g
        if o.level == "sequence":
            dlogp = dlogp + g_seq * (g if ratio is None else g * ratio).sum(-1, keepdim=True)
        dlogp = torch.where(mask != 0, dlogp, 0.0).contiguous()
        dlogits = x.detach() if ctx.inplace else _util.empty(tuple(x.shape), x.dtype)
        if x.numel():
            _util.launch("grpo_loss", "bwd", x.dtype, logits=x, ids=ids, lse=lse, dlogp=dlogp, dlogits=dlogits,
                         batch=B, seq=L, vocab=x.shape[2], temperature=_util.f32(o.temperature))
        return (dlogits,) + (None,) * 21


def gamma_weights(advantages, log_ratio_per_token, mask, importance_sampling_ratio=None, k_pos=2.0,
                  lambda_pos=3.0, k_neg=3.0, lambda_neg=2.0):
    """VESPO's detached sequence weight phi(w) = e^lambda w^k e^(-lambda w)
    [B, 1] of w = the sequence's importance ratio, in log space (TRL's and
    Liger's get_gamma_weights); k, lambda by the advantage's sign"""
    with torch.no_grad():
        floor = math.log(1e-8)
        log_w = (log_ratio_per_token.clamp(-20.0, 20.0) * mask).sum(-1, keepdim=True)
        if importance_sampling_ratio is not None:
            log_w = log_w + torch.log(importance_sampling_ratio).clamp(floor, 20.0).sum(-1, keepdim=True)
        log_w = log_w.clamp(floor, 20.0)
        nonneg = advantages.unsqueeze(-1) >= 0
        k = torch.where(nonneg, k_pos, k_neg)
        lam = torch.where(nonneg, lambda_pos, lambda_neg).clamp(min=1e-4)
        return torch.exp(lam + k * log_w - lam * torch.exp(log_w)).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)


def grpo_loss(logits, old_logp, ref_logp, completion_ids, advantages, completion_mask=None, temperature=0.9,
              beta=0.04, eps_low=0.2, eps_high=0.4, inplace=True, loss_type="dapo", max_completion_length=None,
              importance_sampling_level="token", reduce=False, sapo_temperature_pos=1.0, sapo_temperature_neg=1.05,
              vllm_is_ratio=None, delta=None, use_bias_correction_kl=False, num_items_in_batch=None,
              vespo_k_pos=2.0, vespo_lambda_pos=3.0, vespo_k_neg=3.0, vespo_lambda_neg=2.0):
    """Liger's triton_grpo_loss: GrpoLossFunction with its defaults, VESPO's
    phi_seq computed here; reduce=True gives (loss, [kl_mean,] [clip_ratio]),
    else (per_token_loss, per_token_kl, is_clipped)"""
    phi_seq = None
    if loss_type == "vespo":
        if importance_sampling_level == "sequence":
            raise ValueError("loss_type='vespo' requires importance_sampling_level='token'")
        logp = fused_selective_log_softmax(logits, completion_ids, temperature, completion_mask)
        log_ratio = torch.zeros_like(logp) if old_logp is None else logp - old_logp
        mask = torch.ones_like(logp) if completion_mask is None else completion_mask
        r = vllm_is_ratio
        if r is not None and (r.dim() == 1 or r.shape[1] == 1):
            r = r.reshape(-1, 1).expand_as(logp)
        phi_seq = gamma_weights(advantages, log_ratio, mask, r, vespo_k_pos, vespo_lambda_pos, vespo_k_neg,
                                vespo_lambda_neg)
        vllm_is_ratio = None  # in phi_seq already
    out = GrpoLossFunction.apply(logits, old_logp, ref_logp, completion_ids, advantages, completion_mask, temperature,
                                 beta, eps_low, eps_high, inplace, loss_type, max_completion_length, reduce,
                                 importance_sampling_level, sapo_temperature_pos, sapo_temperature_neg, vllm_is_ratio,
                                 delta, use_bias_correction_kl, num_items_in_batch, phi_seq)
    if not reduce:
        return out
    loss, kl_mean, clip_ratio = out
    return loss, ([kl_mean] if beta != 0.0 and kl_mean is not None else []) + [clip_ratio]

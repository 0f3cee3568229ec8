"""liger_kernel.transformers.model.<family>.lce_forward: one causal-LM
forward for every family ubgen patches. In training with labels the loss
is the fused linear cross entropy on the hidden states and no logits are
made; otherwise the stock computation (lm_head, the family's final logit
soft-capping, its loss_function). The base model's outputs are carried
over by field name, so the forward follows the installed transformers."""
import dataclasses
import sys

import torch

from ...utils import PEFT_AVAILABLE
from .loss_utils import LigerForCausalLMLoss, unpack_cross_entropy_result
from .output_classes import LigerCausalLMOutputWithPast, LigerMoeCausalLMOutputWithPast

_OWN = ("loss", "aux_loss", "logits", "token_accuracy", "predicted_tokens")


def _kept(self, hidden_states, logits_to_keep):
    """the positions whose logits (or loss) are wanted: transformers' rule
    where the model's module has it, else the last logits_to_keep (0: all)"""
    slice_of = getattr(sys.modules[type(self).__module__], "slice_logits_to_keep", None)
    if slice_of is not None:
        return slice_of(hidden_states, logits_to_keep)
    index = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
    return hidden_states[:, index, :]


def _lm_head(self):
    """the output projection, unwrapped where PEFT keeps a trainable copy"""
    head = self.lm_head
    if PEFT_AVAILABLE:
        from peft.utils.other import ModulesToSaveWrapper
        if isinstance(head, ModulesToSaveWrapper):
            head = head.modules_to_save.default
    return head


def _aux_loss(self, outputs, attention_mask):
    """a mixture of experts' load-balancing loss, as the family's forward adds it"""
    balance = getattr(sys.modules[type(self).__module__], "load_balancing_loss_func")
    return balance(outputs.router_logits, self.num_experts, self.num_experts_per_tok, attention_mask)


def lce_forward(self, input_ids=None, attention_mask=None, labels=None, logits_to_keep=0, skip_logits=None,
                return_dict=None, **kwargs):
    """input_ids [B, T], labels [B, T] (or shift_labels [B, T] in kwargs);
    kwargs go to the base model and to the loss (num_items_in_batch,
    return_token_accuracy, return_predicted_tokens, ...), as the stock
    forward passes them"""
    config = self.config.get_text_config()  # a vision-language model's hidden_size and vocab_size are its text's
    shift_labels = kwargs.pop("shift_labels", None)
    moe = hasattr(config, "output_router_logits") and hasattr(self, "router_aux_loss_coef")
    if moe and kwargs.get("output_router_logits") is None:
        kwargs["output_router_logits"] = config.output_router_logits
    outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    hidden_states = outputs[0]
    kept = _kept(self, hidden_states, logits_to_keep)
    if getattr(config, "pretraining_tp", 1) > 1:
        raise ValueError("ubgen.liger does not support pretraining_tp > 1 (config.pretraining_tp = %d)"
                         % config.pretraining_tp)
    if skip_logits and labels is None and shift_labels is None:
        raise ValueError("skip_logits is True, but labels and shift_labels are None")
    if skip_logits is None:
        skip_logits = self.training and (labels is not None or shift_labels is not None)
    softcap = getattr(config, "final_logit_softcapping", None)

    logits = loss = token_accuracy = predicted_tokens = None
    if skip_logits:
        result = LigerForCausalLMLoss(hidden_states=kept, lm_head_weight=_lm_head(self).weight, labels=labels,
                                      hidden_size=config.hidden_size, shift_labels=shift_labels,
                                      final_logit_softcapping=softcap, **kwargs)
        loss, _, token_accuracy, predicted_tokens = unpack_cross_entropy_result(result)
    else:
        logits = self.lm_head(kept)
        if softcap is not None:
            logits = torch.tanh(logits / softcap) * softcap
        if labels is not None or shift_labels is not None:
            loss = self.loss_function(logits=logits, labels=labels, shift_labels=shift_labels,
                                      vocab_size=config.vocab_size, **kwargs)

    aux_loss = None
    if moe and kwargs["output_router_logits"]:
        aux_loss = _aux_loss(self, outputs, attention_mask)
        if loss is not None:
            loss = loss + self.router_aux_loss_coef * aux_loss.to(loss.device)

    if return_dict is False:
        out = (logits,) + tuple(outputs[1:])
        out = ((loss,) if loss is not None else ()) + out
        return out + tuple(t for t in (token_accuracy, predicted_tokens) if t is not None)
    cls = LigerMoeCausalLMOutputWithPast if moe else LigerCausalLMOutputWithPast
    carried = {f.name: getattr(outputs, f.name, None) for f in dataclasses.fields(cls) if f.name not in _OWN}
    extra = {"aux_loss": aux_loss} if moe else {}
    return cls(loss=loss, logits=logits, token_accuracy=token_accuracy, predicted_tokens=predicted_tokens,
               **extra, **carried)

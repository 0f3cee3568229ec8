"""liger_kernel.transformers.auto_model: AutoModelForCausalLM that patches
the model's family before making it."""
import inspect

from transformers import AutoConfig, AutoModelForCausalLM

from .monkey_patch import MODEL_TYPE_TO_APPLY_LIGER_FN, _apply_liger_kernel


_FLAGS = set().union(*(inspect.signature(fn).parameters for fn in MODEL_TYPE_TO_APPLY_LIGER_FN.values()))


def _model_kwargs(model_type, kwargs):
    """kwargs less those the family's apply function takes (any family's,
    for the config, whose family is not known yet)"""
    fn = MODEL_TYPE_TO_APPLY_LIGER_FN.get(model_type)
    taken = inspect.signature(fn).parameters if fn else _FLAGS
    return {k: v for k, v in kwargs.items() if k not in taken}


class AutoLigerKernelForCausalLM(AutoModelForCausalLM):
    """AutoModelForCausalLM with ubgen's kernels patched in where the
    model's family has them; apply-function flags (rope=, swiglu=, ...)
    may be passed with the model's own arguments"""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, **kwargs):
        model_type = AutoConfig.from_pretrained(pretrained_model_name_or_path, **_model_kwargs(None, kwargs)).model_type
        _apply_liger_kernel(model_type, **kwargs)
        return super().from_pretrained(pretrained_model_name_or_path, *model_args, **_model_kwargs(model_type, kwargs))

    @classmethod
    def from_config(cls, config, **kwargs):
        model_type = getattr(config, "model_type", None)
        _apply_liger_kernel(model_type, **kwargs)
        return super().from_config(config, **_model_kwargs(model_type, kwargs))

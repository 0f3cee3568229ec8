"""liger_kernel.transformers.monkey_patch: apply_liger_kernel_to_<family>,
which puts ubgen's modules in place of a Hugging Face model family's own,
with Liger's names, signatures and defaults.

Called before the model is made, a function replaces what the family's
transformers module names (its RMSNorm, its MLP or experts,
apply_rotary_pos_emb, the causal LM's forward); given model=, it also
rebinds the forward of the modules that model already has, keeping their
weights (inside a PEFT ModulesToSaveWrapper, both its copies, as Liger
does: the walk over the model's modules reaches each). One table, FAMILIES, says for each family what is replaced; the
functions are made from it."""
import importlib
import inspect
import logging
from dataclasses import dataclass, field
from types import MethodType
from typing import Optional

from . import rms_norm as norms
from . import swiglu as mlps
from .functional import liger_cross_entropy
from .geglu import LigerGEGLUMLP
from .layer_norm import LigerLayerNorm
from .llama4_rope import liger_llama4_text_rotary_pos_emb, liger_llama4_vision_rotary_pos_emb
from .model.causal_lm import lce_forward
from .rope import liger_rotary_pos_emb

logger = logging.getLogger(__name__)

_KEEP_DY = {"in_place": False}
_GEMMA_NORM = {"offset": 1.0, "casting_mode": "gemma"}
_GEMMA2_NORM = {"offset": 1.0, "casting_mode": "gemma", "in_place": False}


@dataclass(frozen=True)
class Family:
    """What apply_liger_kernel_to_<name> replaces in transformers.models.<module>"""
    module: str
    prefix: str                      # the classes' prefix: Llama -> LlamaRMSNorm, LlamaMLP, LlamaForCausalLM
    norm_cls: type = norms.LigerRMSNorm
    norm_kw: dict = field(default_factory=dict)      # an existing norm's settings when model= is patched
    mlp: str = "swiglu"              # the flag that replaces the MLP: swiglu or geglu
    mlp_name: str = "MLP"            # the class replaced: <prefix><mlp_name>
    mlp_cls: type = mlps.LigerSwiGLUMLP
    defaults: dict = field(default_factory=dict)     # flags whose default differs from Liger's usual
    no_flce: Optional[str] = None    # why fused_linear_cross_entropy cannot apply
    no_rope: Optional[str] = None    # why rope cannot apply even in Liger
    mlp_class: str = ""              # the MLP class replaced, where not <prefix><mlp_name>
    lm_class: str = ""               # the class whose forward the fused loss replaces, where not <prefix>ForCausalLM
    rope_fns: tuple = (("apply_rotary_pos_emb", liger_rotary_pos_emb),)  # (module's function, replacement)
    layer_norm: Optional[str] = None  # the LayerNorm a layer_norm flag replaces, by the module's name for it;
                                      # "nn.LayerNorm": torch's, made directly, so replaced on instances alone
    params: tuple = ()               # Liger's parameter order, where not rope, the losses, rms_norm, mlp, model

    @property
    def stock_norm(self):
        return self.prefix + "RMSNorm"

    @property
    def stock_mlp(self):
        return self.mlp_class or self.prefix + self.mlp_name

    @property
    def stock_lm(self):
        return self.lm_class or self.prefix + "ForCausalLM"


FAMILIES = {
    "llama": Family("llama", "Llama"),
    "mistral": Family("mistral", "Mistral"),
    "ministral": Family("ministral", "Ministral"),
    "mixtral": Family("mixtral", "Mixtral", mlp_name="Experts", mlp_cls=mlps.LigerExperts),
    "qwen2": Family("qwen2", "Qwen2"),
    "qwen3": Family("qwen3", "Qwen3"),
    "qwen3_moe": Family("qwen3_moe", "Qwen3Moe", mlp_name="Experts", mlp_cls=mlps.LigerExperts),
    "qwen3_next": Family("qwen3_next", "Qwen3Next", norms.LigerRMSNormForQwen3Next, _GEMMA2_NORM, mlp_name="Experts",
                         mlp_cls=mlps.LigerExperts, defaults={"rope": False},
                         no_rope="Qwen3-Next rotates part of each head (partial_rotary_factor)"),
    "qwen3_5_moe": Family("qwen3_5_moe", "Qwen3_5Moe", norms.LigerRMSNormForQwen3Next, _GEMMA2_NORM,
                          mlp_name="Experts", mlp_cls=mlps.LigerExperts, defaults={"rope": False},
                          no_rope="Qwen3.5-MoE rotates part of each head (partial_rotary_factor)"),
    "qwen3_vl_moe": Family("qwen3_vl_moe", "Qwen3VLMoeText", mlp_name="Experts", mlp_cls=mlps.LigerExperts,
                           lm_class="Qwen3VLMoeForConditionalGeneration"),
    "glm4v_moe": Family("glm4v_moe", "Glm4vMoeText", norms.LigerRMSNormForGlm4, _KEEP_DY, mlp_name="Experts",
                        mlp_cls=mlps.LigerExperts, lm_class="Glm4vMoeForConditionalGeneration",
                        defaults={"rope": False}, no_rope="Glm4 rotates half of each head, interleaved"),
    "hunyuan_v1_moe": Family("hunyuan_v1_moe", "HunYuanMoEV1", mlp_name="Experts", mlp_cls=mlps.LigerExperts),
    "smollm3": Family("smollm3", "SmolLM3"),
    "granite": Family("granite", "Granite", defaults={"cross_entropy": True, "fused_linear_cross_entropy": False},
                      no_flce="GraniteForCausalLM scales its logits, which the fused loss does not"),
    "phi3": Family("phi3", "Phi3", mlp_cls=mlps.LigerPhi3SwiGLUMLP),
    "gemma": Family("gemma", "Gemma", norms.LigerRMSNormForGemma, _GEMMA_NORM, mlp="geglu", mlp_cls=LigerGEGLUMLP),
    "gemma2": Family("gemma2", "Gemma2", norms.LigerRMSNormForGemma2, _GEMMA2_NORM, mlp="geglu",
                     mlp_cls=LigerGEGLUMLP),
    "gemma3_text": Family("gemma3", "Gemma3", norms.LigerRMSNormForGemma3, _GEMMA2_NORM, mlp="geglu",
                          mlp_cls=LigerGEGLUMLP),
    "olmo2": Family("olmo2", "Olmo2", norms.LigerRMSNormForOlmo2, _KEEP_DY),
    "olmo3": Family("olmo3", "Olmo3", norms.LigerRMSNormForOlmo2, _KEEP_DY),
    "glm4": Family("glm4", "Glm4", norms.LigerRMSNormForGlm4, _KEEP_DY, mlp_cls=mlps.LigerPhi3SwiGLUMLP,
                   defaults={"rope": False}, no_rope="Glm4 rotates half of each head, interleaved"),
    "falcon_h1": Family("falcon_h1", "FalconH1", mlp_cls=mlps.LigerFalconH1SwiGLUMLP),
    "exaone4": Family("exaone4", "Exaone4", norms.LigerRMSNormForGlm4, _KEEP_DY),
    # transformers 5's Qwen2-VL rotary embedding picks the M-RoPE sections
    # itself and hands apply_rotary_pos_emb a [B, T, D] cos (Liger's target,
    # apply_multimodal_rotary_pos_emb, is gone there)
    "qwen2_vl": Family("qwen2_vl", "Qwen2VL", mlp_class="Qwen2MLP", lm_class="Qwen2VLForConditionalGeneration",
                       layer_norm="LayerNorm", params=("rope", "cross_entropy", "fused_linear_cross_entropy",
                                                       "rms_norm", "layer_norm", "swiglu", "model")),
    "qwen2_5_vl": Family("qwen2_5_vl", "Qwen2_5_VL", mlp_class="Qwen2MLP",
                         lm_class="Qwen2_5_VLForConditionalGeneration"),
    "llama4": Family("llama4", "Llama4Text", lm_class="Llama4ForCausalLM",
                     rope_fns=(("apply_rotary_emb", liger_llama4_text_rotary_pos_emb),
                               ("vision_apply_rotary_emb", liger_llama4_vision_rotary_pos_emb)),
                     layer_norm="nn.LayerNorm", params=("rope", "cross_entropy", "fused_linear_cross_entropy",
                                                        "rms_norm", "swiglu", "model", "layer_norm")),
}

def _bind_method_to_module(module, method_name, new_method):
    """new_method as this module's own method (the class left alone)"""
    module.__dict__[method_name] = new_method.__get__(module, module.__class__)


def _rebind(module, liger_cls, **attrs):
    """module runs liger_cls's forward from now on, with attrs set"""
    for name, value in attrs.items():
        setattr(module, name, value)
    _bind_method_to_module(module, "forward", liger_cls.forward)
    if "extra_repr" in vars(liger_cls):
        _bind_method_to_module(module, "extra_repr", liger_cls.extra_repr)
    _bind_method_to_module(module, "_get_name", lambda self: liger_cls.__name__)


def _patch_rms_norm_module(module, offset=0.0, eps=1e-6, casting_mode="llama", in_place=True, row_mode=None):
    eps = getattr(module, "variance_epsilon", None) or getattr(module, "eps", None) or eps
    _rebind(module, norms.LigerRMSNorm, offset=offset, casting_mode=casting_mode, variance_epsilon=eps,
            in_place=in_place, row_mode=row_mode)


def _patch_layer_norm_module(module, eps=1e-6):
    eps = getattr(module, "variance_epsilon", None) or getattr(module, "eps", None) or eps
    _rebind(module, LigerLayerNorm, variance_epsilon=eps, hidden_size=module.weight.shape[0])


def _apply(model_type, model=None, **flags):
    fam = FAMILIES[model_type]
    if flags.get("cross_entropy") and flags.get("fused_linear_cross_entropy"):
        raise AssertionError("cross_entropy and fused_linear_cross_entropy cannot both be True.")
    modeling = importlib.import_module("transformers.models.%s.modeling_%s" % (fam.module, fam.module))
    if flags.get("rope"):
        if fam.no_rope:
            raise NotImplementedError("liger_rotary_pos_emb is not available for %s models: %s" % (fam.prefix,
                                                                                                   fam.no_rope))
        for name, fn in fam.rope_fns:
            setattr(modeling, name, fn)
    if flags.get("rms_norm"):
        setattr(modeling, fam.stock_norm, fam.norm_cls)
    if flags.get(fam.mlp):
        setattr(modeling, fam.stock_mlp, fam.mlp_cls)
    if flags.get("layer_norm") and model is None and "." not in fam.layer_norm:  # Liger's condition
        setattr(modeling, fam.layer_norm, LigerLayerNorm)
    if flags.get("cross_entropy"):
        from transformers.loss.loss_utils import nn
        nn.functional.cross_entropy = liger_cross_entropy
    if flags.get("fused_linear_cross_entropy"):
        if fam.no_flce:
            raise NotImplementedError("LigerFusedLinearCrossEntropy is not available for %s models: %s"
                                      % (fam.prefix, fam.no_flce))
        lm = getattr(modeling, fam.stock_lm)
        if isinstance(model, lm):
            model.forward = MethodType(lce_forward, model)
        else:  # before the model is made, or a model that holds one (Llama 4's conditional generation)
            lm.forward = lce_forward
    if model is None:
        return
    # every module of the replaced classes, wherever it sits (q_norm and
    # k_norm too, as a model made after the class patch would have them)
    for module in list(model.modules()):
        kind = type(module).__name__
        if flags.get("rms_norm") and kind == fam.stock_norm:
            _patch_rms_norm_module(module, **fam.norm_kw)
        elif flags.get(fam.mlp) and kind == fam.stock_mlp:
            _rebind(module, fam.mlp_cls)
        elif flags.get("layer_norm") and kind == fam.layer_norm.split(".")[-1]:
            _patch_layer_norm_module(module)


def _make(model_type):
    """apply_liger_kernel_to_<model_type> with Liger's signature and defaults"""
    fam = FAMILIES[model_type]
    defaults = {"rope": True, "cross_entropy": False, "fused_linear_cross_entropy": True, "rms_norm": True,
                fam.mlp: True, **({"layer_norm": True} if fam.layer_norm else {}), **fam.defaults}
    order = fam.params or tuple(defaults) + ("model",)
    params = [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None) if k == "model" else
              inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=defaults[k], annotation=bool)
              for k in order]

    def apply(*args, **kwargs):
        bound = inspect.Signature(params).bind(*args, **kwargs)
        bound.apply_defaults()
        _apply(model_type, **bound.arguments)

    apply.__name__ = apply.__qualname__ = "apply_liger_kernel_to_" + model_type
    apply.__signature__ = inspect.Signature(params, return_annotation=None)
    apply.__doc__ = ("Apply ubgen's kernels to Hugging Face %s models (transformers.models.%s), as Liger's function "
                     "of this name: rms_norm, %s and the fused linear cross entropy (or cross_entropy) replace the "
                     "stock ones; given model=, that model's modules are patched in place too." %
                     (fam.prefix, fam.module, fam.mlp))
    return apply


apply_liger_kernel_to_llama = _make("llama")
apply_liger_kernel_to_mistral = _make("mistral")
apply_liger_kernel_to_ministral = _make("ministral")
apply_liger_kernel_to_mixtral = _make("mixtral")
apply_liger_kernel_to_qwen2 = _make("qwen2")
apply_liger_kernel_to_qwen3 = _make("qwen3")
apply_liger_kernel_to_qwen3_moe = _make("qwen3_moe")
apply_liger_kernel_to_hunyuan_v1_moe = _make("hunyuan_v1_moe")
apply_liger_kernel_to_qwen3_next = _make("qwen3_next")
apply_liger_kernel_to_qwen3_5_moe = _make("qwen3_5_moe")
apply_liger_kernel_to_qwen3_vl_moe = _make("qwen3_vl_moe")
apply_liger_kernel_to_glm4v_moe = _make("glm4v_moe")
apply_liger_kernel_to_smollm3 = _make("smollm3")
apply_liger_kernel_to_granite = _make("granite")
apply_liger_kernel_to_phi3 = _make("phi3")
apply_liger_kernel_to_gemma = _make("gemma")
apply_liger_kernel_to_gemma2 = _make("gemma2")
apply_liger_kernel_to_gemma3_text = _make("gemma3_text")
apply_liger_kernel_to_olmo2 = _make("olmo2")
apply_liger_kernel_to_olmo3 = _make("olmo3")
apply_liger_kernel_to_glm4 = _make("glm4")
apply_liger_kernel_to_falcon_h1 = _make("falcon_h1")
apply_liger_kernel_to_exaone4 = _make("exaone4")
apply_liger_kernel_to_qwen2_vl = _make("qwen2_vl")
apply_liger_kernel_to_qwen2_5_vl = _make("qwen2_5_vl")
apply_liger_kernel_to_llama4 = _make("llama4")

MODEL_TYPE_TO_APPLY_LIGER_FN = {t: globals()["apply_liger_kernel_to_" + t] for t in FAMILIES}
# the text models' own config types, as Liger maps them
MODEL_TYPE_TO_APPLY_LIGER_FN.update({t + "_text": MODEL_TYPE_TO_APPLY_LIGER_FN[t] for t in
                                     ("qwen2_vl", "qwen2_5_vl", "llama4", "qwen3_5_moe",
                                                                           "qwen3_vl_moe")})


def _applicable(model_type, kwargs, missing):
    """the family's function and the kwargs it takes; None (logged) where
    model_type is empty or has no function"""
    if not model_type:
        logger.info("%s No Liger kernels will be applied.", missing)
        return None, None
    if model_type not in MODEL_TYPE_TO_APPLY_LIGER_FN:
        logger.info("There are currently no Liger kernels supported for model type: %s.", model_type)
        return None, None
    fn = MODEL_TYPE_TO_APPLY_LIGER_FN[model_type]
    kw = {k: v for k, v in kwargs.items() if k in inspect.signature(fn).parameters}
    logger.info("Applying Liger kernels for model type: %s with kwargs: %s", model_type, kw)
    return fn, kw


def _apply_liger_kernel(model_type: str, **kwargs) -> None:
    """the family's function for model_type (a config's model_type), with the
    kwargs it takes; before the model is made"""
    fn, kw = _applicable(model_type, kwargs, "Model type was not provided.")
    if fn:
        fn(**kw)


def _apply_liger_kernel_to_instance(model, **kwargs) -> None:
    """the family's function for this model's config.model_type, on the model"""
    model_type = getattr(model, "config", None) and getattr(model.config, "model_type", None)
    fn, kw = _applicable(model_type, kwargs, "Model type could not be determined from model config.")
    if fn:
        fn(model=model, **kw)

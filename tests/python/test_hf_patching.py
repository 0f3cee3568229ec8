"""ubgen.liger.transformers' patching of Hugging Face model families, as
Liger proves its own (test/convergence, test_monkey_patch.py): for each
family a mini model (random init, two layers), stock against patched on
the same weights, trained with AdamW on fixed tokens; every step's loss,
the final top-k log-probabilities and every final parameter within
Liger's tolerances. Patching an instance (model=) and patching the
classes before the model is made are both checked, and the fused-loss
forward's options against the stock forward's. The 32-step runs are
marked `integration` (make test-integration, a CI stage of its own).

Qwen2-VL, Qwen2.5-VL and Qwen3-VL-MoE train as their
ForConditionalGeneration on text alone (a one-block vision tower is made,
patched, and left unused: transformers then gives the three M-RoPE
position streams the same positions); Llama 4 trains as its text model, Llama4ForCausalLM, which is
what apply_liger_kernel_to_llama4's fused loss replaces. Their vision
parts are checked in test_vision_parts_are_patched."""
import copy
import importlib
import inspect

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText  # noqa: E402

from ubgen.liger.transformers import AutoLigerKernelForCausalLM  # noqa: E402
from ubgen.liger.transformers import monkey_patch as mp  # noqa: E402

MINI = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=8, max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
            eos_token_id=2)
MINI_EXTRA = {
    "mixtral": dict(num_local_experts=4, num_experts_per_tok=2),
    "qwen3_moe": dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, decoder_sparse_step=1,
                      mlp_only_layers=[]),
    "qwen3_vl_moe": dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, decoder_sparse_step=1),
    "glm4v_moe": dict(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, first_k_dense_replace=0,
                      partial_rotary_factor=1.0),  # the whole head rotated: MROPE's sections fit it
    "hunyuan_v1_moe": dict(num_experts=4, moe_topk=2),
    "qwen3_next": dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                       shared_expert_intermediate_size=32, linear_key_head_dim=8, linear_value_head_dim=8,
                       linear_num_key_heads=2, linear_num_value_heads=4,
                       layer_types=["linear_attention", "full_attention"]),
    "qwen3_5_moe_text": dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                             shared_expert_intermediate_size=32, linear_key_head_dim=8, linear_value_head_dim=8,
                             linear_num_key_heads=2, linear_num_value_heads=4,
                             layer_types=["linear_attention", "full_attention"]),
    "gemma2": dict(final_logit_softcapping=30.0, attn_logit_softcapping=50.0, sliding_window=16),
    "gemma3_text": dict(final_logit_softcapping=30.0, sliding_window=16),
    "falcon_h1": dict(mamba_d_ssm=16, mamba_n_heads=4, mamba_d_head=4, mamba_n_groups=1, mamba_d_state=8,
                      mamba_d_conv=2, mamba_expand=2, mamba_chunk_size=8),
    "llama4": dict(intermediate_size_mlp=64, num_local_experts=2, interleave_moe_layer_step=2),
}
# the vision-language families: a one-block vision tower, and M-RoPE sections of the head (8: 2 + 1 + 1 pairs)
VL = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl_moe", "glm4v_moe")
MINI_VISION = dict(depth=1, embed_dim=16, hidden_size=32, num_heads=2, intermediate_size=32, out_hidden_size=32,
                   patch_size=2, spatial_merge_size=1, temporal_patch_size=1)
VISION = {"qwen3_vl_moe": dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=32, out_hidden_size=32,
                               patch_size=2, spatial_merge_size=1, temporal_patch_size=1, num_position_embeddings=16,
                               deepstack_visual_indexes=[0]),
          "glm4v_moe": dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=32, out_hidden_size=32,
                            patch_size=2, spatial_merge_size=1, temporal_patch_size=1, image_size=8)}
MROPE = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]}
FAMILIES = sorted(mp.FAMILIES)
# Liger's convergence tolerances: (atol, rtol) of the losses, the top-k log-probabilities and the parameters
TOL = {torch.float32: dict(loss=(1e-8, 2e-5), logprobs=(1e-4, 1e-4), params=(5e-3, 1e-5)),
       torch.bfloat16: dict(loss=(1e-2, 5e-2), logprobs=(1e-1, 1e-2), params=(1e-2, 1e-2))}
STEPS, BATCH, SEQ = 32, 2, 16


def mini_config(model_type):
    if model_type in VL:
        return AutoConfig.for_model(model_type, text_config=dict(MINI, rope_parameters=MROPE,
                                                                 **MINI_EXTRA.get(model_type, {})),
                                    vision_config=VISION.get(model_type, MINI_VISION))
    if model_type in ("llama4", "qwen3_5_moe"):  # its causal LM is the text model's
        model_type += "_text"
    return AutoConfig.for_model(model_type, **MINI, **MINI_EXTRA.get(model_type, {}))


def make(model_type, dtype):
    torch.manual_seed(0)
    auto = AutoModelForImageTextToText if model_type in VL else AutoModelForCausalLM
    return auto.from_config(mini_config(model_type)).to(dtype)


@pytest.fixture
def restore_transformers():
    """what a class patch replaces, put back after the test: the family
    modules' attributes, the causal LMs' forward, F.cross_entropy"""
    saved = {}
    for fam in mp.FAMILIES.values():
        mod = importlib.import_module("transformers.models.%s.modeling_%s" % (fam.module, fam.module))
        saved[mod] = dict(vars(mod))
        causal = getattr(mod, fam.stock_lm)
        saved[causal] = {"forward": causal.__dict__["forward"]}
    cross_entropy = torch.nn.functional.cross_entropy
    yield
    for owner, attrs in saved.items():
        for name, value in attrs.items():
            setattr(owner, name, value)
    torch.nn.functional.cross_entropy = cross_entropy


def train(model, steps=STEPS):
    """losses of `steps` AdamW steps on fixed tokens; then the model"""
    torch.manual_seed(1)
    ids = torch.randint(3, MINI["vocab_size"], (BATCH, SEQ))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)  # Liger's convergence tests' rate
    model.train()
    losses = []
    for _ in range(steps):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach().float())
    return torch.stack(losses)


def topk_logprobs(model, k=10):
    torch.manual_seed(2)
    ids = torch.randint(3, MINI["vocab_size"], (BATCH, SEQ))
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=ids).logits.float()
    return torch.topk(torch.log_softmax(logits, -1), k).values


def assert_converge(stock, patched, dtype, patch=None, steps=STEPS):
    """stock trained, then patch() (patching the family's module, which
    stock shares), then patched trained from the same weights"""
    tol = TOL[dtype]
    want_losses, want_logprobs = train(stock, steps), topk_logprobs(stock)
    if patch:
        patch()
    torch.testing.assert_close(train(patched, steps), want_losses, atol=tol["loss"][0], rtol=tol["loss"][1])
    torch.testing.assert_close(topk_logprobs(patched), want_logprobs, atol=tol["logprobs"][0],
                               rtol=tol["logprobs"][1])
    want = dict(stock.named_parameters())
    for name, p in patched.named_parameters():
        torch.testing.assert_close(p.float(), want[name].float(), atol=tol["params"][0], rtol=tol["params"][1],
                                   msg=lambda m, name=name: "parameter %s: %s" % (name, m))


def liger_modules(model):
    return {m._get_name() for m in model.modules() if m._get_name().startswith("Liger")}


def stock_left(model, fam):
    """modules of the family's norm, MLP or LayerNorm class that still run their stock forward"""
    classes = (fam.stock_norm, fam.stock_mlp, (fam.layer_norm or "").split(".")[-1])
    return [type(m).__name__ for m in model.modules()
            if type(m).__name__ in classes and not m._get_name().startswith("Liger")]


@pytest.mark.integration
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("model_type", FAMILIES)
def test_instance_patch_converges_with_stock(model_type, dtype, restore_transformers):
    stock = make(model_type, dtype)
    patched = copy.deepcopy(stock)
    fam = mp.FAMILIES[model_type]

    def patch():
        mp._apply_liger_kernel_to_instance(patched)
        assert stock_left(patched, fam) == []
        assert {"LigerRMSNorm", fam.mlp_cls.__name__} <= liger_modules(patched)
        assert liger_modules(stock) == set()
        modeling = importlib.import_module("transformers.models.%s.modeling_%s" % (fam.module, fam.module))
        assert all(getattr(modeling, name) is fn for name, fn in fam.rope_fns) == (fam.no_rope is None)

    assert_converge(stock, patched, dtype, patch)


@pytest.mark.parametrize("model_type", FAMILIES)
def test_class_patch_makes_liger_modules_with_stock_weights(model_type, restore_transformers):
    stock = make(model_type, torch.float32)
    initial = {k: v.clone() for k, v in stock.state_dict().items()}
    fam = mp.FAMILIES[model_type]
    made = {}

    def patch():
        mp.MODEL_TYPE_TO_APPLY_LIGER_FN[model_type](**({"rope": False} if fam.no_rope else {}))
        made["model"] = make(model_type, torch.float32)

    want_losses = train(stock, 4)
    patch()
    patched = made["model"]
    assert isinstance(_first(patched, fam.norm_cls), fam.norm_cls)
    assert isinstance(_first(patched, fam.mlp_cls), fam.mlp_cls)
    for name, value in patched.state_dict().items():
        assert torch.equal(value, initial[name]), name
    if model_type != "granite":  # granite keeps its forward (it scales the logits)
        assert type(patched).forward is mp.lce_forward
    tol = TOL[torch.float32]["loss"]
    torch.testing.assert_close(train(patched, 4), want_losses, atol=tol[0], rtol=tol[1])


def _first(model, cls):
    return next((m for m in model.modules() if isinstance(m, cls)), None)


def _grads_match(patched, stock):
    for (name, a), (_, b) in zip(patched.named_parameters(), stock.named_parameters()):
        assert (a.grad is None) == (b.grad is None), name
        if a.grad is not None:
            torch.testing.assert_close(a.grad, b.grad, atol=1e-5, rtol=1e-4, msg=lambda m, name=name: name + ": " + m)


@pytest.mark.parametrize("model_type", ["qwen2_vl", "qwen2_5_vl", "llama4"])
def test_vision_parts_are_patched(model_type, restore_transformers):
    """the vision towers the text-only convergence runs leave unused: an
    instance patch replaces their LayerNorms (Qwen2-VL's, Llama 4's) and
    Llama 4's vision RoPE; with images Qwen2-VL's three M-RoPE position
    streams differ. The loss (Qwen2-VL, Qwen2.5-VL) or the vision tower's
    output (Llama 4, whose stock conditional-generation forward fails in
    transformers 5.24) and every gradient match the stock model's."""
    torch.manual_seed(0)
    ids = torch.randint(7, MINI["vocab_size"], (BATCH, SEQ))
    if model_type in VL:
        config = AutoConfig.for_model(model_type, text_config=dict(MINI, rope_parameters=MROPE),
                                      vision_config=MINI_VISION, image_token_id=3, video_token_id=4,
                                      vision_start_token_id=5, vision_end_token_id=6)
        ids[:, 2], ids[:, 3:7], ids[:, 7] = 5, 3, 6  # a 2 x 2 image of patches 2 x 2 after each start token
        kw = dict(input_ids=ids, labels=ids, mm_token_type_ids=(ids == 3).int(), pixel_values=torch.randn(8, 12),
                  image_grid_thw=torch.tensor([[1, 2, 2]] * BATCH))
        run = lambda m: m(**kw).loss  # noqa: E731
    else:
        vision = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=128, image_size=8,
                      patch_size=2, vision_output_dim=32, projector_input_dim=32, projector_output_dim=32)
        config = AutoConfig.for_model(model_type, text_config=dict(MINI, **MINI_EXTRA["llama4"]),
                                      vision_config=vision)
        pixels = torch.randn(BATCH, 3, 8, 8)
        run = lambda m: m.vision_model(pixels).last_hidden_state.square().sum()  # noqa: E731
    stock = AutoModelForImageTextToText.from_config(config)
    patched = copy.deepcopy(stock)
    stock.train(), patched.train()
    want = run(stock)
    want.backward()
    mp._apply_liger_kernel_to_instance(patched)
    assert stock_left(patched, mp.FAMILIES[model_type]) == []
    got = run(patched)
    got.backward()
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    _grads_match(patched, stock)


def test_peft_modules_to_save_are_patched_on_both_copies(restore_transformers):
    """PEFT's ModulesToSaveWrapper keeps a trained copy of a module beside
    its original. The instance patch, on the PEFT model's base as
    transformers' Trainer applies it, patches both copies of every wrapped
    norm (Liger's rule), and the fused-loss forward projects with
    lm_head's trained copy (which it names; peft 0.21's wrapper also
    answers .weight with it): the patched model trains as the stock one,
    the trained copies included."""
    peft = pytest.importorskip("peft")
    from peft.utils.other import ModulesToSaveWrapper
    config = peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], modules_to_save=["lm_head", "norm"])
    stock = peft.get_peft_model(make("llama", torch.float32), config)
    patched = copy.deepcopy(stock)
    wrapped = [m for m in patched.modules() if isinstance(m, ModulesToSaveWrapper)]
    wrapped_norms = [m for m in wrapped if type(m.original_module).__name__ == "LlamaRMSNorm"]
    assert len(wrapped_norms) == 2 * MINI["num_hidden_layers"] + 1 and len(wrapped) == len(wrapped_norms) + 1
    head_before = patched.get_base_model().lm_head.modules_to_save.default.weight.detach().clone()

    def patch():
        mp._apply_liger_kernel_to_instance(patched.get_base_model())
        for w in wrapped_norms:
            assert [m._get_name() for m in (w.modules_to_save.default, w.original_module)] == ["LigerRMSNorm"] * 2
        assert patched.get_base_model().forward.__func__ is mp.lce_forward

    assert_converge(stock, patched, torch.float32, patch, steps=4)
    assert not torch.equal(patched.get_base_model().lm_head.modules_to_save.default.weight, head_before)


def test_signatures_and_defaults_are_ligers():
    for model_type, fn in mp.MODEL_TYPE_TO_APPLY_LIGER_FN.items():
        params = inspect.signature(fn).parameters
        fam = mp.FAMILIES.get(model_type) or mp.FAMILIES[model_type[:-len("_text")]]
        order = {"qwen2_vl": ["rms_norm", "layer_norm", "swiglu", "model"],
                 "llama4": ["rms_norm", "swiglu", "model", "layer_norm"]}
        order = order.get(fam.module, ["rms_norm", fam.mlp, "model"])
        assert list(params) == ["rope", "cross_entropy", "fused_linear_cross_entropy"] + order, model_type
        no_rope = ("glm4", "glm4v_moe", "qwen3_next", "qwen3_5_moe")  # Liger's default rope=False
        want = {"rope": fam.module not in no_rope, "cross_entropy": model_type == "granite",
                "fused_linear_cross_entropy": model_type != "granite", "rms_norm": True, fam.mlp: True, "model": None}
        want.update({"layer_norm": True} if fam.layer_norm else {})
        assert {k: p.default for k, p in params.items()} == want, model_type
    import ubgen.liger as liger
    assert liger.apply_liger_kernel_to_llama is mp.apply_liger_kernel_to_llama
    assert liger.AutoLigerKernelForCausalLM is AutoLigerKernelForCausalLM


def test_what_cannot_apply_says_why(restore_transformers):
    with pytest.raises(AssertionError, match="cannot both be True"):
        mp.apply_liger_kernel_to_llama(cross_entropy=True, fused_linear_cross_entropy=True)
    with pytest.raises(NotImplementedError, match="Granite"):
        mp.apply_liger_kernel_to_granite(cross_entropy=False, fused_linear_cross_entropy=True)
    with pytest.raises(NotImplementedError, match="Glm4"):
        mp.apply_liger_kernel_to_glm4(rope=True)
    with pytest.raises(NotImplementedError, match="Glm4"):
        mp._apply_liger_kernel("glm4", rope=True)


def test_unknown_model_type_patches_nothing(restore_transformers):
    mp._apply_liger_kernel("no_such_family", rope=False)
    mp._apply_liger_kernel("", rope=False)
    model = make("llama", torch.float32)
    model.config.model_type = "no_such_family"
    mp._apply_liger_kernel_to_instance(model)
    assert liger_modules(model) == set()


def test_apply_by_model_type_filters_kwargs(restore_transformers):
    """kwargs the family's function does not take are dropped (geglu for llama)"""
    mp._apply_liger_kernel("llama", rope=False, geglu=False, swiglu=False)
    from transformers.models.llama import modeling_llama
    assert modeling_llama.LlamaRMSNorm is mp.FAMILIES["llama"].norm_cls
    assert modeling_llama.LlamaMLP.__module__ == "transformers.models.llama.modeling_llama"


def test_auto_model_from_config_patches_and_trains(restore_transformers):
    stock = make("qwen3", torch.float32)
    want_losses = train(stock, 4)
    torch.manual_seed(0)
    patched = AutoLigerKernelForCausalLM.from_config(mini_config("qwen3"))
    assert {"LigerRMSNorm", "LigerSwiGLUMLP"} <= {type(m).__name__ for m in patched.modules()}
    tol = TOL[torch.float32]["loss"]
    torch.testing.assert_close(train(patched, 4), want_losses, atol=tol[0], rtol=tol[1])


def _patched_llama():
    stock = make("llama", torch.float32)
    patched = copy.deepcopy(stock)
    mp.apply_liger_kernel_to_llama(rope=False, model=patched)
    return stock, patched


def test_fused_forward_options_match_stock(restore_transformers):
    stock, patched = _patched_llama()
    torch.manual_seed(3)
    ids = torch.randint(3, MINI["vocab_size"], (BATCH, SEQ))
    labels = ids.clone()
    labels[0, :5] = -100
    shift = torch.nn.functional.pad(labels, (0, 1), value=-100)[:, 1:]
    for m in (stock, patched):
        m.train()
    cases = [(dict(labels=labels), {}), (dict(labels=labels, num_items_in_batch=7), {}),
             (dict(labels=labels), dict(shift_labels=shift))]
    for stock_kw, kw in cases:
        kw = kw or stock_kw
        want = stock(input_ids=ids, **stock_kw).loss
        out = patched(input_ids=ids, **kw)
        assert out.logits is None, kw  # training with labels: no logits made
        torch.testing.assert_close(out.loss, want, atol=1e-6, rtol=1e-5, msg=lambda m, kw=kw: "%s: %s" % (kw, m))
    # skip_logits=False: the stock path, logits and loss
    out = patched(input_ids=ids, labels=labels, skip_logits=False)
    ref = stock(input_ids=ids, labels=labels)
    torch.testing.assert_close(out.logits, ref.logits)
    torch.testing.assert_close(out.loss, ref.loss)
    # a tuple without return_dict, the loss first; token accuracy after the outputs
    out = patched(input_ids=ids, labels=labels, return_dict=False, return_token_accuracy=True)
    assert isinstance(out, tuple) and out[1] is None
    torch.testing.assert_close(out[0], ref.loss, atol=1e-6, rtol=1e-5)
    valid = shift != -100
    pred = ref.logits.argmax(-1)
    torch.testing.assert_close(out[-1], (pred == shift)[valid].float().mean())
    with pytest.raises(ValueError, match="skip_logits"):
        patched(input_ids=ids, skip_logits=True)
    # evaluation: logits, as the stock model
    patched.eval(), stock.eval()
    with torch.no_grad():
        torch.testing.assert_close(patched(input_ids=ids).logits, stock(input_ids=ids).logits)
        last = patched(input_ids=ids, logits_to_keep=6).logits
        assert last.shape == (BATCH, 6, MINI["vocab_size"])
        torch.testing.assert_close(last, stock(input_ids=ids, logits_to_keep=6).logits)


def test_final_logit_softcapping_is_applied(restore_transformers):
    """Gemma 2's soft-capped logits: the fused loss caps them as the stock forward does"""
    stock = make("gemma2", torch.float32)
    patched = copy.deepcopy(stock)
    mp.apply_liger_kernel_to_gemma2(rope=False, model=patched)
    for m in (stock, patched):
        m.config.final_logit_softcapping = 0.5  # small enough to change the loss a lot
        m.train()
    ids = torch.randint(3, MINI["vocab_size"], (BATCH, SEQ))
    torch.testing.assert_close(patched(input_ids=ids, labels=ids).loss, stock(input_ids=ids, labels=ids).loss,
                               atol=1e-6, rtol=1e-5)


def test_moe_aux_loss_is_added(restore_transformers):
    stock = make("mixtral", torch.float32)
    patched = copy.deepcopy(stock)
    mp.apply_liger_kernel_to_mixtral(rope=False, model=patched)
    ids = torch.randint(3, MINI["vocab_size"], (BATCH, SEQ))
    for m in (stock, patched):
        m.train()
    want = stock(input_ids=ids, labels=ids, output_router_logits=True)
    got = patched(input_ids=ids, labels=ids, output_router_logits=True)
    torch.testing.assert_close(got.aux_loss, want.aux_loss)
    torch.testing.assert_close(got.loss, want.loss, atol=1e-6, rtol=1e-5)

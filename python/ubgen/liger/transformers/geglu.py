"""liger_kernel.transformers.geglu"""
from ...torch.glu import GEGLUMLP


class LigerGEGLUMLP(GEGLUMLP):
    """Gemma's MLP from a config with hidden_size and intermediate_size:
    down_proj(gelu_tanh(gate_proj(x)) * up_proj(x)) (GELU's tanh
    approximation whatever hidden_act says, as Liger's)"""

    def __init__(self, config):
        super().__init__(config.hidden_size, config.intermediate_size)
        self.config = config


def _kv_shared(config, layer_idx):
    """whether layer layer_idx reuses another layer's KV cache: transformers'
    kv_sharing_modes where the config has them, else the last
    num_kv_shared_layers layers (Liger's rule)"""
    modes = getattr(config, "kv_sharing_modes", None)
    if modes is not None:
        return modes[layer_idx] == "reuse"
    shared = getattr(config, "num_kv_shared_layers", 0)
    return shared > 0 and layer_idx >= getattr(config, "num_hidden_layers", 0) - shared


class LigerGEGLUMLPForGemma4(LigerGEGLUMLP):
    """Gemma 4's MLP, Gemma4TextMLP's (config, layer_idx): twice as wide in
    the layers that reuse another's KV cache when config.use_double_wide_mlp"""

    def __init__(self, config, layer_idx=None):
        wide = layer_idx is not None and getattr(config, "use_double_wide_mlp", False) and \
            _kv_shared(config, layer_idx)
        GEGLUMLP.__init__(self, config.hidden_size, config.intermediate_size * (2 if wide else 1))
        self.config = config

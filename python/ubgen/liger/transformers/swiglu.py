"""liger_kernel.transformers.swiglu"""
from ...torch.glu import SwiGLUMLP


class LigerSwiGLUMLP(SwiGLUMLP):
    """LLaMA's MLP from a config with hidden_size, intermediate_size and
    hidden_act ("silu" or "swish"): down_proj(silu(gate_proj(x)) * up_proj(x))"""

    def __init__(self, config):
        super().__init__(config.hidden_size, config.intermediate_size)
        self.config = config
        if config.hidden_act not in ["silu", "swish"]:
            raise ValueError(f"Activation function {config.hidden_act} not supported.")

"""liger_kernel.transformers.geglu"""
from ...torch.glu import GEGLUMLP


class LigerGEGLUMLP(GEGLUMLP):
    """Gemma's MLP from a config with hidden_size and intermediate_size:
    down_proj(gelu_tanh(gate_proj(x)) * up_proj(x)) (GELU's tanh
    approximation whatever hidden_act says, as Liger's)"""

    def __init__(self, config):
        super().__init__(config.hidden_size, config.intermediate_size)
        self.config = config

"""liger_kernel.transformers.swiglu: the SwiGLU MLPs of the model families,
each with the parameter names of the module it replaces, so that a patched
model loads the same checkpoints."""
import torch
import torch.nn as nn

from ...torch.fused_moe import FusedMoEFunction
from ...torch.glu import SiLUMulFunction, SwiGLUMLP


def _silu_only(config):
    if config.hidden_act not in ["silu", "swish"]:
        raise ValueError(f"Activation function {config.hidden_act} not supported.")


class LigerSwiGLUMLP(SwiGLUMLP):
    """LLaMA's MLP from a config with hidden_size, intermediate_size and
    hidden_act ("silu" or "swish"): down_proj(silu(gate_proj(x)) * up_proj(x))"""

    def __init__(self, config):
        super().__init__(config.hidden_size, config.intermediate_size)
        self.config = config
        _silu_only(config)


class LigerQwen3MoeSwiGLUMLP(SwiGLUMLP):
    """Qwen3-MoE's dense MLP (intermediate_size may differ from the config's)"""

    def __init__(self, config, intermediate_size=None):
        super().__init__(config.hidden_size, intermediate_size or config.intermediate_size)
        self.config = config
        _silu_only(config)


class LigerBlockSparseTop2MLP(nn.Module):
    """Mixtral's expert before transformers 5: w2(silu(w1(x)) * w3(x))"""

    def __init__(self, config):
        super().__init__()
        self.ffn_dim, self.hidden_dim = config.intermediate_size, config.hidden_size
        self.w1 = nn.Linear(self.hidden_dim, self.ffn_dim, bias=False)
        self.w2 = nn.Linear(self.ffn_dim, self.hidden_dim, bias=False)
        self.w3 = nn.Linear(self.hidden_dim, self.ffn_dim, bias=False)
        _silu_only(config)

    def forward(self, x):
        return self.w2(SiLUMulFunction.apply(self.w1(x), self.w3(x)))


class LigerPhi3SwiGLUMLP(nn.Module):
    """Phi-3's (and GLM-4's) MLP, gate and up in one projection:
    gate, up = gate_up_proj(x).chunk(2); down_proj(silu(gate) * up)"""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.hidden_size, self.intermediate_size = config.hidden_size, config.intermediate_size
        self.gate_up_proj = nn.Linear(self.hidden_size, 2 * self.intermediate_size, bias=False)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=False)
        _silu_only(config)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(SiLUMulFunction.apply(gate, up))


class LigerFalconH1SwiGLUMLP(nn.Module):
    """Falcon-H1's MLP: down_proj(silu(gate_proj(x) gm) * up_proj(x)) dm, the
    multipliers from config.mlp_multipliers"""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.hidden_size, self.intermediate_size = config.hidden_size, config.intermediate_size
        bias = getattr(config, "mlp_bias", False)
        self.gate_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=bias)
        self.up_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=bias)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=bias)
        _silu_only(config)
        self.gate_multiplier, self.down_multiplier = (float(m) for m in config.mlp_multipliers)

    def forward(self, x):
        return self.down_proj(SiLUMulFunction.apply(self.gate_proj(x), self.up_proj(x), float(self.gate_multiplier),
                                                    float(self.down_multiplier)))


class LigerExperts(nn.Module):
    """The experts of a mixture-of-experts block in transformers 5 (Mixtral,
    Qwen3-MoE and the other MoE families): weights as 3D tensors,
    gate_up_proj [E, 2I, H] and down_proj [E, H, I], run by ubgen's fused
    MoE (routing, grouped GEMMs, SwiGLU and the top-k sum in one call)."""

    def __init__(self, config):
        super().__init__()
        self.num_experts = getattr(config, "num_experts", None) or config.num_local_experts
        self.intermediate_dim = getattr(config, "moe_intermediate_size", None) or config.intermediate_size
        self.hidden_dim = config.hidden_size
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * self.intermediate_dim, self.hidden_dim))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim, self.intermediate_dim))
        _silu_only(config)

    def forward(self, hidden_states, top_k_index, top_k_weights):
        """hidden_states [..., H], top_k_index and top_k_weights [..., K] -> [..., H]"""
        shape = hidden_states.shape
        x = hidden_states.reshape(-1, self.hidden_dim)
        top_k_index = top_k_index.reshape(-1, top_k_index.shape[-1]).to(torch.int32)
        top_k_weights = top_k_weights.reshape(-1, top_k_weights.shape[-1])
        away = top_k_index >= self.num_experts  # transformers 5's index of an expert on another rank: skipped
        if away.any():
            top_k_index, top_k_weights = top_k_index.masked_fill(away, 0), top_k_weights.masked_fill(away, 0)
        out = FusedMoEFunction.apply(x, self.gate_up_proj, self.down_proj, top_k_index, top_k_weights)
        return out.reshape(shape)

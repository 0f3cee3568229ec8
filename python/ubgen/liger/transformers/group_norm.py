"""liger_kernel.transformers.group_norm"""
import torch

from ...torch.group_norm import GroupNormFunction


class LigerGroupNorm(torch.nn.Module):
    def __init__(self, num_channels, num_groups, eps=1e-6, bias=False, init_fn="ones"):
        super().__init__()
        assert init_fn in ["ones", "zeros"], f"init_fn must be either 'ones' or 'zeros', got {init_fn}"
        assert num_channels % num_groups == 0, (
            f"Number of channels {num_channels} must be divisible by num_groups {num_groups}")
        self.num_channels = num_channels
        self.num_groups = num_groups
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(num_channels) if init_fn == "ones" else torch.zeros(num_channels))
        self.bias = torch.nn.Parameter(torch.randn(num_channels) if bias else torch.zeros(num_channels))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        """hidden_states: [batch, num_channels, *]"""
        assert hidden_states.dim() >= 3, f"Input must have atleast 3 dimensions, got {hidden_states.dim()}"
        assert hidden_states.size(1) == self.num_channels, (
            f"Input tensor must have {self.num_channels} channels, got {hidden_states.size(1)}")
        return GroupNormFunction.apply(hidden_states, self.weight, self.bias, self.num_channels, self.num_groups,
                                       self.variance_epsilon)

    def extra_repr(self):
        """Liger's names self.hidden_size, which the module lacks (its repr raises); the others here"""
        return f"num_channels={self.num_channels}, num_groups={self.num_groups}, eps={self.eps}"

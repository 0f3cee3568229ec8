"""liger_kernel.ops.llama4_rope"""
from ...torch.llama4_rope import Llama4RopeFunction


class LigerLlama4RopeFunction(Llama4RopeFunction):
    """Liger's signature: BLOCK_SIZE, a Triton tile, is accepted and unused
    (ubgen picks or tunes its own variant)"""

    @staticmethod
    def forward(ctx, q, k, freqs_cis, BLOCK_SIZE: int = None):
        return Llama4RopeFunction.forward(ctx, q, k, freqs_cis)

    @staticmethod
    def backward(ctx, dq, dk):
        return Llama4RopeFunction.backward(ctx, dq, dk) + (None,)


__all__ = ["LigerLlama4RopeFunction"]

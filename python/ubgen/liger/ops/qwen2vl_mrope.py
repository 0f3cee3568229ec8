"""liger_kernel.ops.qwen2vl_mrope"""
from ...torch.rope import MRopeFunction as LigerQwen2VLMRopeFunction

__all__ = ["LigerQwen2VLMRopeFunction"]

"""liger_kernel.transformers.experimental"""
from .embedding import LigerEmbedding

__all__ = ["LigerEmbedding"]

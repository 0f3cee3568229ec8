"""liger_kernel.transformers.experimental.embedding"""
from typing import Optional

import torch

from ....torch.embedding import EmbeddingFunction


class LigerEmbedding(torch.nn.Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx: Optional[int] = None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = torch.nn.Parameter(torch.randn(num_embeddings, embedding_dim))
        if padding_idx is not None:
            with torch.no_grad():
                self.weight[padding_idx].fill_(0)

    def forward(self, indices):
        embedded = EmbeddingFunction.apply(self.weight, indices, self.padding_idx)
        if self.padding_idx is not None:  # as Liger: padded positions are zero whatever the row holds
            embedded = embedded.masked_fill((indices == self.padding_idx).unsqueeze(-1), 0)
        return embedded

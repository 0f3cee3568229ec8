"""Embedding (ubgen.torch.Embedding / embedding / EmbeddingFunction and
LigerEmbedding) against torch, over the shapes and padding_idx of
Liger-Kernel's test_embedding.py (without its 30522 x 768 tables), in every
dtype. The forward copies rows, so it must be exact; the backward sums the
gradient rows of each index in f32 and rounds once, so it is held to Liger's
1e-6/1e-5 plus half an ulp of the dtype."""
import pytest
import torch

import ubgen.torch as ut
from ubgen.liger import LigerEmbedding
from ubgen.liger.transformers.experimental.embedding import LigerEmbedding as ExperimentalLigerEmbedding

import _ref
from _ref import DTYPE_IDS, DTYPES

# Liger: f32 atol 1e-6, rtol 1e-5; a 16-bit result is one rounding of the f32 sum
TOL = {torch.float32: (1e-6, 1e-5), torch.float16: (1e-6, 2 ** -11 + 1e-5), torch.bfloat16: (1e-6, 2 ** -8 + 1e-5)}

SHAPES = [(100, 64, None), (1000, 128, None), (100, 60, None), (1000, 120, None), (1000, 500, None),
          (100, 64, 0), (1000, 128, 50), (3000, 96, 1)]


def make_ids(num_embeddings, padding_idx):
    ids = torch.randint(0, num_embeddings, (32 * 10,))
    if padding_idx is not None:
        ids[torch.randint(0, 32 * 10, (32 * 10 // 10,))] = padding_idx
    return ids


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("num_embeddings, embedding_dim, padding_idx", SHAPES)
@pytest.mark.parametrize("module", [LigerEmbedding, ut.Embedding], ids=["LigerEmbedding", "ut.Embedding"])
def test_module_correctness(module, num_embeddings, embedding_dim, padding_idx, dtype):
    ref = torch.nn.Embedding(num_embeddings, embedding_dim, padding_idx=padding_idx).to(dtype)
    emb = module(num_embeddings, embedding_dim, padding_idx=padding_idx).to(dtype)
    if padding_idx is not None:
        assert torch.count_nonzero(emb.weight[padding_idx]) == 0  # zeroed at init, as torch's
    with torch.no_grad():
        emb.weight.copy_(ref.weight)
    ids = make_ids(num_embeddings, padding_idx)

    out_ref = ref(ids).view(32, 10, -1)
    out = emb(ids).view(32, 10, -1)
    assert out.dtype == dtype
    assert torch.equal(out, out_ref)  # rows copied: exact in every dtype

    dout = torch.randn(32, 10, embedding_dim, dtype=dtype)
    out.backward(dout)
    w64 = _ref.leaf(ref.weight)
    _ref.embedding(w64, ids, padding_idx).backward(dout.view(-1, embedding_dim).to(torch.float64))
    atol, rtol = TOL[dtype]
    assert emb.weight.grad.dtype == dtype
    _ref.assert_close(emb.weight.grad, w64.grad, atol, rtol, "dweight")
    if padding_idx is not None:
        assert torch.count_nonzero(emb.weight.grad[padding_idx]) == 0
    unused = torch.ones(num_embeddings, dtype=torch.bool)
    unused[ids] = False
    assert torch.count_nonzero(emb.weight.grad[unused]) == 0  # rows nobody indexes get exact zeros


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("padding_idx", [None, 3, -2])
def test_functional_against_torch(dtype, padding_idx):
    """ubgen.torch.embedding(indices, weight, padding_idx) as
    torch.nn.functional.embedding, 2-D int32 indices included"""
    weight = torch.randn(40, 24, dtype=dtype)
    ids = torch.randint(0, 40, (6, 7), dtype=torch.int32)
    ids[0, :3] = 3
    ids[1, :2] = 38
    w1 = weight.clone().requires_grad_(True)
    out = ut.embedding(ids, w1, padding_idx=padding_idx)
    assert out.shape == (6, 7, 24)
    w2 = weight.to(torch.float64).requires_grad_(True)
    out_ref = torch.nn.functional.embedding(ids.long(), w2, padding_idx=padding_idx)
    assert torch.equal(out, out_ref.to(dtype))
    dout = torch.randn(6, 7, 24, dtype=dtype)
    out.backward(dout)
    out_ref.backward(dout.to(torch.float64))
    atol, rtol = TOL[dtype]
    _ref.assert_close(w1.grad, w2.grad, atol, rtol, "dweight")


def test_repeated_index_gradient_sums_in_order():
    """all tokens on one row: the f32 sum of their gradients, in token order"""
    weight = torch.zeros(4, 3, requires_grad=True)
    ids = torch.tensor([2, 2, 2, 2])
    dout = torch.tensor([[1e8, 1.0, 0.5], [1.0, 2.0, 0.25], [-1e8, 3.0, 0.125], [1.0, 4.0, 0.0625]])
    ut.embedding(ids, weight).backward(dout)
    expect = torch.zeros(4, 3)
    acc = torch.zeros(3)
    for r in dout:  # f32, in increasing token position
        acc = acc + r
    expect[2] = acc
    assert torch.equal(weight.grad, expect)
    assert weight.grad[2, 0].item() == 1.0  # (1e8 + 1) - 1e8 + 1 in f32: the 1 is absorbed


def test_liger_embedding_masks_padding_rows():
    """as Liger's: positions holding padding_idx embed to zeros whatever the
    padding row holds"""
    emb = LigerEmbedding(10, 4, padding_idx=2)
    with torch.no_grad():
        emb.weight[2] = 7.0
    out = emb(torch.tensor([1, 2, 3]))
    assert torch.count_nonzero(out[1]) == 0
    assert torch.equal(out[0], emb.weight[1].detach()) and torch.equal(out[2], emb.weight[3].detach())
    assert ExperimentalLigerEmbedding is LigerEmbedding


def test_module_repr_and_negative_padding():
    m = ut.Embedding(10, 4, padding_idx=-1, dtype=torch.float16)
    assert m.padding_idx == 9 and m.weight.dtype == torch.float16
    assert torch.count_nonzero(m.weight[9]) == 0
    assert repr(m) == "Embedding(10, 4, padding_idx=9)"

#!/usr/bin/env python3
"""The torch side of tests/test_flce.c: cross entropy of x @ W.T + b in
float64 with autograd, on the inputs the test wrote.

  python3 tests/flce_torch.py DIR...

Each DIR holds meta.txt ("bt hidden vocab ignore_index label_smoothing
reduction has_weight has_bias"), x.bin [bt, hidden], w.bin [vocab, hidden],
t.bin [bt] (int64), cw.bin [vocab] and b.bin [vocab] when present, all
little-endian float64 but t.bin. Writes loss.bin ([1], or [bt] for
"none"), dx.bin, dw.bin and, with a bias, db.bin (float64): the loss of
torch.nn.functional.cross_entropy and the gradients of its sum.
"""
import array
import os
import sys

import torch
import torch.nn.functional as F


def load(d, name, typecode, n):
    a = array.array(typecode)
    with open(os.path.join(d, name), "rb") as f:
        a.fromfile(f, n)
    return list(a)


def store(d, name, t):
    a = array.array("d", t.detach().reshape(-1).tolist())
    with open(os.path.join(d, name), "wb") as f:
        a.tofile(f)


def run(d):
    with open(os.path.join(d, "meta.txt")) as f:
        meta = f.read().split()
    bt, hidden, vocab, ignore_index = (int(v) for v in meta[:4])
    ls, reduction, has_w, has_b = float(meta[4]), meta[5], meta[6] == "1", meta[7] == "1"
    f64 = torch.float64
    x = torch.tensor(load(d, "x.bin", "d", bt * hidden), dtype=f64).reshape(bt, hidden).requires_grad_()
    w = torch.tensor(load(d, "w.bin", "d", vocab * hidden), dtype=f64).reshape(vocab, hidden).requires_grad_()
    t = torch.tensor(load(d, "t.bin", "q", bt), dtype=torch.int64)
    cw = torch.tensor(load(d, "cw.bin", "d", vocab), dtype=f64) if has_w else None
    b = torch.tensor(load(d, "b.bin", "d", vocab), dtype=f64).requires_grad_() if has_b else None
    logits = x @ w.T
    if b is not None:
        logits = logits + b
    loss = F.cross_entropy(logits, t, weight=cw, ignore_index=ignore_index, label_smoothing=ls,
                           reduction=reduction)
    loss.sum().backward()
    store(d, "loss.bin", loss.reshape(-1))
    store(d, "dx.bin", x.grad)
    store(d, "dw.bin", w.grad)
    if b is not None:
        store(d, "db.bin", b.grad)


if __name__ == "__main__":
    for d in sys.argv[1:]:
        run(d)

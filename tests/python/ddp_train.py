"""A mini Llama patched by apply_liger_kernel_to_llama, trained a few SGD
steps on a fixed global batch: in one process, or under torchrun with
DistributedDataParallel (gloo), each rank on its equal share of the batch.
Writes {"losses": [global mean loss per step], "grads": first step's
gradients, "params": the final parameters} to --out (rank 0).
tests/python/test_ddp.py runs both and compares them.

    python ddp_train.py --out FILE
    torchrun --nproc-per-node 2 ddp_train.py --out FILE
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from transformers import LlamaConfig, LlamaForCausalLM

from ubgen.liger.transformers import apply_liger_kernel_to_llama

GLOBAL_BATCH, SEQ, STEPS = 4, 16, 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, pad_token_id=0)
    model = LlamaForCausalLM(cfg).train()
    apply_liger_kernel_to_llama(model=model)
    ids = torch.randint(3, 128, (GLOBAL_BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    share = GLOBAL_BATCH // world
    mine = ids[rank * share:(rank + 1) * share]
    net = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    losses, grads = [], None
    for step in range(STEPS):
        loss = net(input_ids=mine, labels=mine).loss  # the mean over this rank's tokens (equal counts)
        loss.backward()
        if step == 0:
            grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        opt.step()
        opt.zero_grad()
        mean = loss.detach().clone()
        if world > 1:
            dist.all_reduce(mean)
            mean /= world
        losses.append(mean.item())
    if rank == 0:
        torch.save({"losses": losses, "grads": grads,
                    "params": {n: p.detach().clone() for n, p in model.named_parameters()}}, out)
    if world > 1:
        # Every rank's collectives done and rank 0's file written, then out
        # without tearing the process group down: there torch 2.13 can
        # deadlock (seen in CI: the main thread, holding the GIL, joins a
        # gloo thread that waits for the GIL to free a finished work's
        # tensors, in ~ProcessGroupGloo under DDP's Reducer).
        dist.barrier()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()

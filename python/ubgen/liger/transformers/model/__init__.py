"""liger_kernel.transformers.model: the causal-LM forward with the fused
linear cross entropy, which the apply_liger_kernel_to_* functions put in
place of a model family's own."""

"""liger_kernel.ops.utils, as far as code run on the CPU asks it"""


def is_hip():
    """no ROCm here: the CPU"""
    return False

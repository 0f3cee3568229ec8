"""liger_kernel.utils, as far as code run on the CPU asks it"""
import torch


def infer_device():
    """ubgen runs on the CPU"""
    return "cpu"


def infer_comm_backend():
    if torch.distributed.is_available() and torch.distributed.is_gloo_available():
        return "gloo"
    raise RuntimeError("There is no distributed backend available.")


def _available(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None


PEFT_AVAILABLE = _available("peft")

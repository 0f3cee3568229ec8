"""ubgen from Python: UB-budgeted fused training kernels (RMSNorm, embedding,
AttnRes, fused linear cross entropy) from libubgen.so, through ctypes.

    import ubgen.torch as ut       # autograd Functions and Modules
    import ubgen.liger             # Liger-Kernel's names and signatures

`ubgen.configure(backend=..., threads=..., ub_bytes=..., tuning_db=...)`
sets the process context the ops run on (docs/python.md).
"""
from ._context import Context, _dtype_code, configure, context, settings
from ._lib import LIB_PATH, OutOfBounds, UbgenError


def launch(kernel, pass_, dtype, **args):
    """Runs kernel.pass_ on the process context, arguments by their spec
    names (Context.launch): any kernel the library serves, a user's too."""
    context()._launch_args(kernel, pass_, _dtype_code(dtype), args)


def prepare(kernel, pass_, dtype, variant=None):
    """Compiles (or finds) a variant now, on the process context (Context.prepare)."""
    return context().prepare(kernel, pass_, dtype, variant)


__version__ = "0.1.0"
__all__ = ["Context", "configure", "context", "settings", "launch", "prepare", "LIB_PATH", "OutOfBounds", "UbgenError",
           "__version__"]

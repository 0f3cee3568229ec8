"""libubgen.so through ctypes: where it is, its C types, its functions.

The library is found, in order, at $UBGEN_LIB, at the path `make install`
recorded next to this package (_install.py), or in the build tree this
package sits in (python/ubgen -> build/lib). ctypes releases the GIL for
the length of every call, so several Python threads run kernels at once.
"""
import ctypes
import os
import struct

# The library's dtypes (ubg_dtype), by code: the name the library and its
# specs use, and torch's name for it. The one table of them in the package.
DTYPES = (("f32", "torch.float32"), ("f16", "torch.float16"), ("bf16", "torch.bfloat16"))
_DTYPE_CODES = {name: code for code, names in enumerate(DTYPES) for name in names}


# The element types of the specs' tensors (ubg_arg_info's names), by the
# name torch and numpy give them (torch.float32, numpy.float32; numpy's
# bfloat16 is ml_dtypes')
ELEMS = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i64": "int64", "i32": "int32", "u8": "uint8"}


def dtype_code(dtype):
    """the ubg_dtype of "f32", "f16", "bf16" or a torch dtype of one of
    them; None for anything else"""
    return _DTYPE_CODES.get(str(dtype))


OK, EINVAL, ERANGE, EUB, ENOMEM, ECOMPILE, ENOTFOUND, EIO = range(8)
BACKENDS = {"auto": 0, "aot": 1, "tcc": 2, "gcc": 3}


class Config(ctypes.Structure):
    """ubg_config"""
    _fields_ = [
        ("ub_bytes", ctypes.c_size_t),
        ("safety_margin", ctypes.c_double),
        ("threads", ctypes.c_int),
        ("backend", ctypes.c_int),
        ("tuning_db", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("spec_path", ctypes.c_char_p),
    ]


ARG_PTR, ARG_I64, ARG_F64 = 0, 1, 2


class ArgValue(ctypes.Union):
    """ubg_arg's v"""
    _fields_ = [("p", ctypes.c_void_p), ("i", ctypes.c_int64), ("f", ctypes.c_double)]


class Arg(ctypes.Structure):
    """ubg_arg: one named argument of ubg_launch"""
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int), ("v", ArgValue)]


def _arg_formats():
    """struct formats of one Arg at Arg's offsets: its head (name, kind and
    the padding up to v) and its value per kind (v and the tail padding)"""
    ptr = {4: "I", 8: "Q"}[ctypes.sizeof(ctypes.c_void_p)]

    def pad(n):
        return "%dx" % n if n else ""

    kind_end = Arg.kind.offset + ctypes.sizeof(ctypes.c_int)
    head = ptr + pad(Arg.kind.offset - ctypes.sizeof(ctypes.c_void_p)) + "i" + pad(Arg.v.offset - kind_end)
    tail = pad(ctypes.sizeof(Arg) - Arg.v.offset - 8)
    return head, {ARG_PTR: ptr + tail, ARG_I64: "q" + tail, ARG_F64: "d" + tail}


ARG_HEAD_FORMAT, ARG_VALUE_FORMATS = _arg_formats()
_names = {}


def name_address(name):
    """the address of name's UTF-8 bytes, kept for the life of the process
    (a spec's argument names are few)"""
    entry = _names.get(name)
    if entry is None:
        b = name.encode()
        entry = _names.setdefault(name, (b, ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value))
    return entry[1]


def arg_head(name, kind):
    """the packed head of an Arg: what is the same in every call that
    passes name as this kind"""
    return struct.pack("=" + ARG_HEAD_FORMAT, name_address(name), kind)


def args_struct(kinds):
    """a struct.Struct that packs an Arg array of these kinds from the
    values head 1, value 1, head 2, value 2, ... (heads from arg_head)"""
    size = struct.calcsize("=" + ARG_HEAD_FORMAT)
    return struct.Struct("=" + "".join("%ds%s" % (size, ARG_VALUE_FORMATS[kind]) for kind in kinds))


def _candidates():
    env = os.environ.get("UBGEN_LIB")
    if env:
        return [env]
    found = []
    try:
        from . import _install  # written by `make install`

        found.append(_install.LIB)
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    found.append(os.path.join(here, "..", "..", "build", "lib", "libubgen.so"))
    return found


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return ctypes.CDLL(os.path.abspath(path)), os.path.abspath(path)
        tried.append(path)
    raise ImportError(
        "ubgen: libubgen.so not found (tried %s); build it with `make`, install it with `make install`, "
        "or set UBGEN_LIB to its path" % ", ".join(tried)
    )


lib, LIB_PATH = _load()

_p = ctypes.c_void_p
_int = ctypes.c_int


def _proto(name, args, res=ctypes.c_int):
    fn = getattr(lib, name)
    fn.argtypes = args
    fn.restype = res
    return fn


ctx_create = _proto("ubg_ctx_create", [ctypes.POINTER(Config), ctypes.POINTER(_p)])
ctx_destroy = _proto("ubg_ctx_destroy", [_p], None)
ctx_error = _proto("ubg_ctx_error", [_p], ctypes.c_char_p)
ctx_last_variant = _proto("ubg_ctx_last_variant", [_p], ctypes.c_char_p)
status_str = _proto("ubg_status_str", [_int], ctypes.c_char_p)
set_variant = _proto("ubg_set_variant", [_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p])
prepare = _proto("ubg_prepare", [_p, ctypes.c_char_p, ctypes.c_char_p, _int, ctypes.c_char_p])
# args and nbytes: packed Arg and int64 arrays (bytes, which the library only reads)
launch_sized = _proto("ubg_launch_sized", [_p, ctypes.c_char_p, ctypes.c_char_p, _int, ctypes.c_char_p,
                                           ctypes.c_size_t, ctypes.c_char_p])
arg_info = _proto("ubg_arg_info", [_p, ctypes.c_char_p, ctypes.c_char_p, _int, _int, ctypes.POINTER(ctypes.c_char_p),
                                   ctypes.POINTER(_int), ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_int)])


def args_of(handle, kernel, pass_, code):
    """{name: (element type name or None, written)} of kernel.pass_'s
    arguments in dtype code (ubg_arg_info); {} for an unknown kernel or
    pass, which the launch then names"""
    out, i = {}, 0
    name, kind, elem, written = ctypes.c_char_p(), _int(), ctypes.c_char_p(), _int()
    while arg_info(handle, kernel, pass_, code, i, name, kind, elem, written) == OK:
        out[name.value.decode()] = (elem.value.decode() if elem.value else None, bool(written.value))
        i += 1
    return out


class UbgenError(RuntimeError):
    """A failure of the library that is not the caller's input: a kernel
    that did not compile, a file it could not read."""


class OutOfBounds(ValueError, AssertionError):
    """An index or target outside its range. A ValueError, and an
    AssertionError whose message says "out of bounds", as Liger's kernels
    raise one: code written for Liger that catches it keeps working."""


def raise_for(status, handle):
    """The exception for a non-OK status, with the library's message (the
    calling thread's last failure on this context)."""
    msg = ctx_error(handle)
    text = msg.decode("utf-8", "replace") if msg else status_str(status).decode()
    if status == ERANGE:
        raise OutOfBounds(text + " (out of bounds)")
    if status in (EINVAL, EUB):
        raise ValueError(text)
    if status == ENOMEM:
        raise MemoryError(text)
    raise UbgenError(text)

"""Every ctypes structure of the package against its C type in
runtime/include/ubgen.h: a small C program, compiled here with the C
compiler, prints each type's size and each field's offset and size, and the
ctypes classes must agree field by field. A field moved, added or retyped
on either side fails here, not as a corrupted call."""
import ctypes
import importlib
import os
import pkgutil
import shutil
import struct
import subprocess

import pytest

import ubgen
from ubgen import _lib

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# each ctypes class of the package -> the C type it stands for (an
# expression gcc's __typeof__ takes, for a union inside a struct)
C_TYPES = {
    "Config": "ubg_config",
    "Arg": "ubg_arg",
    "ArgValue": "__typeof__(((ubg_arg *)0)->v)",
}


def _package_structures():
    """every ctypes Structure and Union class defined in a module of ubgen"""
    found = {}
    modules = [ubgen] + [importlib.import_module(m.name)
                         for m in pkgutil.walk_packages(ubgen.__path__, "ubgen.") if not m.name.endswith("_install")]
    for mod in modules:
        for value in vars(mod).values():
            if (isinstance(value, type) and issubclass(value, (ctypes.Structure, ctypes.Union))
                    and value.__module__ == mod.__name__):
                found[value.__module__ + "." + value.__name__] = value
    return found


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory):
    """{(C type, field or None): (offset, size)} from the compiled program"""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to read the C layout with")
    lines = []
    for ctype_name, c_type in ((cls.__name__, C_TYPES.get(cls.__name__)) for cls in _package_structures().values()):
        if c_type is None:
            continue
        lines.append('  printf("%s - 0 %%zu\\n", sizeof(%s));' % (ctype_name, c_type))
        for field in getattr(_lib, ctype_name)._fields_:
            lines.append('  printf("%s %s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                         % (ctype_name, field[0], c_type, field[0], c_type, field[0]))
    work = tmp_path_factory.mktemp("layout")
    (work / "layout.c").write_text("#include <stddef.h>\n#include <stdio.h>\n#include \"ubgen.h\"\nint main(void) {\n"
                                   + "\n".join(lines) + "\n  return 0;\n}\n")
    build = subprocess.run([cc, "-std=gnu11", "-I", os.path.join(SRC, "runtime", "include"), "layout.c", "-o",
                            "layout"], cwd=str(work), capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    out = subprocess.run([str(work / "layout")], capture_output=True, text=True, check=True).stdout
    layout = {}
    for line in out.splitlines():
        name, field, a, b = line.split()
        layout[(name, None if field == "-" else field)] = (int(a), int(b)) if field != "-" else (0, int(b))
    return layout


def test_every_structure_has_a_c_type():
    """a ctypes class added to the package without its C type named here
    is caught, so none goes unchecked"""
    found = _package_structures()
    assert found, "no ctypes structures found in the package"
    for qualname, cls in found.items():
        assert cls.__name__ in C_TYPES, "%s has no C type in C_TYPES" % qualname
        assert getattr(_lib, cls.__name__) is cls, "%s: the C types are declared in ubgen._lib" % qualname


def test_sizes_and_offsets_match_the_c_header(c_layout):
    checked = 0
    for cls in _package_structures().values():
        name = cls.__name__
        assert ctypes.sizeof(cls) == c_layout[(name, None)][1], "sizeof(%s)" % C_TYPES[name]
        for field in cls._fields_:
            fname, ftype = field[0], field[1]
            offset, size = c_layout[(name, fname)]
            assert getattr(cls, fname).offset == offset, "offsetof(%s, %s)" % (C_TYPES[name], fname)
            assert ctypes.sizeof(ftype) == size, "sizeof(%s.%s)" % (C_TYPES[name], fname)
            checked += 1
    assert checked >= 13  # ubg_config's 7, ubg_arg's 3, its union's 3


def test_packed_arguments_sit_at_the_c_offsets(c_layout):
    """an array of packed ubg_args, one of each kind (what Context.launch
    passes), puts each one's name, kind and value where the C struct has
    them, one sizeof(ubg_arg) after another"""
    size = c_layout[("Arg", None)][1]
    name_at, kind_at, v_at = (c_layout[("Arg", f)][0] for f in ("name", "kind", "v"))
    args = ((_lib.ARG_PTR, "p", 0x1122334455667788, "Q"), (_lib.ARG_I64, "i", -5, "q"), (_lib.ARG_F64, "f", 0.1, "d"))
    flat = []
    for kind, name, value, _ in args:
        flat += (_lib.arg_head(name, kind), value)
    packed = _lib.args_struct([kind for kind, _, _, _ in args]).pack(*flat)
    assert len(packed) == len(args) * size
    for i, (kind, name, value, code) in enumerate(args):
        assert struct.unpack_from("=Q", packed, i * size + name_at)[0] == _lib.name_address(name)
        assert struct.unpack_from("=i", packed, i * size + kind_at)[0] == kind
        assert struct.unpack_from("=" + code, packed, i * size + v_at)[0] == value

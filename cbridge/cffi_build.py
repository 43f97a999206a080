"""cffi builder for `logb._cbridge` (out-of-line API mode).

Used by host/setup.py (`cffi_modules`), so a plain `pip install host` (or
`pip install -e host`) compiles the kernels into the package; there is no
separate build step. Run directly (`python cbridge/cffi_build.py`) it builds
the module into the current directory, for poking at it.

The cdef is logb_cbridge.h itself, filtered to what cffi's parser accepts
(`cdef_from_header`): no comments, no preprocessor lines but the constants,
whose values cffi takes from the real header when it compiles the module
(`#define NAME ...`). So the header is the one copy of the API.
"""

import os
import pathlib
import re
import sysconfig

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
HEADER = "logb_cbridge.h"
SOURCES = ["crc32c.c", "crc32c_hw.c", "bits.c", "transpose.c", "tails.c", "scan.c", "decode.c", "zstdframe.c"]

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_CONSTANT = re.compile(r"#\s*define\s+(\w+)\s+\S")


def cdef_from_header(text):
    """The declarations of a C header as a cffi cdef.

    Constants (`#define NAME value`) become `#define NAME ...`; every other
    preprocessor line goes, and so does whatever sits inside an
    `#ifdef __cplusplus` block (the `extern "C"` braces)."""
    out, skipping = [], []  # one entry per open #if: is it a __cplusplus block?
    for line in _COMMENT.sub("", text).splitlines():
        directive = line.strip()
        if directive.startswith("#"):
            word = (directive[1:].split() or [""])[0]
            if word in ("if", "ifdef", "ifndef"):
                skipping.append("__cplusplus" in directive)
            elif word == "endif":
                skipping.pop()
            elif not any(skipping) and _CONSTANT.match(directive):
                out.append(f"#define {_CONSTANT.match(directive).group(1)} ...")
            continue
        if not any(skipping) and directive:
            out.append(line)
    return "\n".join(out) + "\n"


CDEF = cdef_from_header((HERE / HEADER).read_text())


def _compile_args():
    if sysconfig.get_platform().startswith("win"):
        return ["/O2"]
    # -O3: the specialised field loops rely on it (load merging, vectorisation); C99 like firmware.
    return ["-O3", "-std=c99", "-Wall", "-Wextra"] + (
        ["-Werror"] if os.environ.get("LOGB_CBRIDGE_WERROR") else [])


def _rel(name):
    # setuptools wants paths relative to setup.py's directory (the cwd of a build).
    return os.path.relpath(HERE / name).replace(os.sep, "/")


ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "logb._cbridge",
    f'#include "{HEADER}"',
    sources=[_rel(s) for s in SOURCES],
    include_dirs=[_rel(".")],
    extra_compile_args=_compile_args(),
    depends=[_rel(HEADER), _rel("crc32c_tables.h")],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)

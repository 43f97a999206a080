"""Which backend runs the hot paths: the C kernels or pure Python.

A backend is one object with the kernel API of logb._kernels:
`_pykernels.PyKernels` (numpy and crcmod; the reference) or
`_ckernels.CKernels` (cbridge/, portable C99, the same files a firmware build
compiles, reached through cffi as `logb._cbridge`, built by the ordinary
`pip install` of the package). Every hot function calls `_backend.active`,
so switching is immediate and total.

- `logb.backend` is "c" or "python".
- `LOGB_BACKEND=python` (or `c`) in the environment forces one at import;
  with `python` the C extension is not even imported. Forcing `c` when the
  extension cannot load raises BackendUnavailable (an ImportError).
- Unforced, a C backend that fails to load is a RuntimeWarning naming the
  error — never a silent fall back to something far slower.
- `use("c" | "python")` switches at run time (the test suite runs every test
  under both); `using(name)` does it for a `with` block.
- CRC-32C uses the CPU's CRC instruction (SSE4.2 / ARMv8) when it has one;
  `LOGB_CRC=sw` or `set_crc("sw")` forces the C backend's portable
  slice-by-8 code (the Python backend's CRC is crcmod's, in either mode).
"""

import contextlib
import os
import sys
import warnings

from ._ckernels import CRC_ENV, CKernels
from ._kernels import BackendUnavailable
from ._pykernels import PyKernels

ENV = "LOGB_BACKEND"
NAMES = ("c", "python")


PY = PyKernels()
C = None  # the loaded CKernels, or None
load_error = None  # why the C backend could not be loaded
active = PY  # the kernels in use: C or PY
current = "python"  # what logb.backend says


def load_c():
    """Load the C backend once; returns it or None (load_error says why)."""
    global C, load_error
    if C is None:
        try:
            from . import _cbridge
        except ImportError as exc:  # not built, or built for another interpreter
            load_error = exc
            return None
        C = CKernels(_cbridge.ffi, _cbridge.lib, os.environ.get(CRC_ENV, "auto"))
        load_error = None
    return C


def use(name):
    """Switch every hot path to the "c" or "python" backend."""
    global active, current
    if name not in NAMES:
        raise ValueError(f"backend {name!r}: expected one of {NAMES}")
    if name == "c":
        if load_c() is None:
            raise BackendUnavailable(f"the C backend (logb._cbridge) cannot be loaded: {load_error}")
        active = C
    else:
        active = PY
    current = name
    pkg = sys.modules.get(__package__)
    if pkg is not None:
        pkg.backend = name
    return name


@contextlib.contextmanager
def using(name):
    before = current
    use(name)
    try:
        yield name
    finally:
        use(before)


def set_crc(mode):
    """Choose the C backend's CRC: 'auto', 'hw' or 'sw' (see CKernels.set_crc)."""
    if load_c() is None:
        raise BackendUnavailable(f"the C backend (logb._cbridge) cannot be loaded: {load_error}")
    C.set_crc(mode)


def info():
    """A dict describing the backends, for `logb --version`-style reports and benchmarks."""
    return {"backend": current, "c_available": C is not None, "crc": active.crc_impl,
            "load_error": str(load_error) if load_error else None}


def _initial():
    wanted = os.environ.get(ENV, "").strip().lower()
    if wanted not in ("", "auto", *NAMES):
        raise ValueError(f"{ENV}={wanted!r}: expected 'c' or 'python'")
    if wanted == "python":
        return use("python")
    if load_c() is None:
        if wanted == "c":
            raise BackendUnavailable(
                f"{ENV}=c but the C backend (logb._cbridge) cannot be loaded: {load_error}") from load_error
        warnings.warn(
            f"logb: the C backend (logb._cbridge) failed to load ({load_error}); using the pure-Python "
            f"backend, which is many times slower. Reinstall the package with a C compiler available "
            f"(pip install -e host), or set {ENV}=python to choose the pure-Python backend knowingly.",
            RuntimeWarning, stacklevel=3)
        return use("python")
    return use("c")


_initial()

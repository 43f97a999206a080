"""Which implementation runs the hot paths: the C kernels or pure Python.

The C kernels live in cbridge/ (portable C99, the same files a firmware build
compiles) and reach Python through cffi as `logb._cbridge`, built by the
ordinary `pip install` of the package. The pure-Python implementations stay
beside each call site (crc.py, fields.py, codecs.py, batch.py); a hot function
asks `_backend.active` — the C kernels, or None for Python — on every call, so
switching is immediate and total.

- `logb.backend` is "c" or "python".
- `LOGB_BACKEND=python` (or `c`) in the environment forces one at import.
  Forcing `c` when the extension cannot load raises ImportError.
- Unforced, a C backend that fails to load is a RuntimeWarning naming the
  error — never a silent fall back to something far slower.
- `use("c" | "python")` switches at run time (the test suite runs every test
  under both); `using(name)` does it for a `with` block.
- CRC-32C uses the CPU's CRC instruction (SSE4.2 / ARMv8) when it has one;
  `LOGB_CRC=sw` or `set_crc("sw")` forces the portable slice-by-8 code.
"""

import contextlib
import os
import sys
import warnings

ENV = "LOGB_BACKEND"
CRC_ENV = "LOGB_CRC"
NAMES = ("c", "python")


class BackendUnavailable(ImportError):
    """The C backend was asked for but cannot be loaded."""


class CKernels:
    """Thin, checked wrappers around the cffi module: every pointer handed to
    C is bounds-checked here first, so no Python input can make C read or
    write outside its buffers."""

    name = "c"

    def __init__(self, ffi, lib):
        self.ffi, self.lib = ffi, lib
        self.hw_name = ffi.string(lib.logb_crc32c_hw_name()).decode()
        self.hw_available = bool(lib.logb_crc32c_hw_available())
        self.set_crc(os.environ.get(CRC_ENV, "auto"))
        import numpy

        self._np = numpy

    # ---------------------------------------------------------------- CRC-32C
    def set_crc(self, mode):
        """'auto' (hardware when the CPU has it), 'hw' (required) or 'sw' (slice-by-8)."""
        mode = (mode or "auto").lower()
        if mode not in ("auto", "hw", "sw"):
            raise ValueError(f"{CRC_ENV}={mode!r}: expected auto, hw or sw")
        if mode == "hw" and not self.hw_available:
            raise BackendUnavailable("no CRC-32C instruction on this CPU (or not compiled in)")
        if mode != "sw" and self.hw_available:
            self._crc, self.crc_impl = self.lib.logb_crc32c_hw, self.hw_name
        else:
            self._crc, self.crc_impl = self.lib.logb_crc32c_sw, "slice-by-8"
        self.crc_mode = mode

    def crc32c(self, data, crc=0):
        with self.ffi.from_buffer("uint8_t[]", data) as p:
            return self._crc(crc, p, len(p))

    def crc32c_range(self, buf, start, end):
        with self.ffi.from_buffer("uint8_t[]", buf) as p:
            if not 0 <= start <= end <= len(p):
                raise ValueError(f"CRC range [{start}, {end}) outside a buffer of {len(p)} bytes")
            return self._crc(0, p + start, end - start)

    # ---------------------------------------------------------------- numpy plumbing
    def _ptr(self, a, offset=0, ctype="uint8_t *"):
        # (the address stays valid while the caller holds `a`)
        return self.ffi.cast(ctype, a.__array_interface__["data"][0] + offset)

    def records(self, records, writable=False):
        """(array, n, rs, bs) of an (N, S) uint8 array of any non-negative strides."""
        np = self._np
        if not isinstance(records, np.ndarray) or records.dtype != np.uint8 or records.ndim != 2:
            raise TypeError("records must be a 2-D uint8 numpy array")
        if writable and not records.flags.writeable:
            raise ValueError("assignment destination is read-only")
        rs, bs = records.strides
        if not records.size:  # nothing is read or written: any strides will do
            return records, records.shape[0], 0, 0
        if rs < 0 or bs < 0:
            if writable:
                raise ValueError("records with negative strides cannot be written in place")
            records = np.ascontiguousarray(records)
            rs, bs = records.strides
        return records, records.shape[0], rs, bs

    @staticmethod
    def _check_field(records, offset, width):
        if offset < 0 or width < 1 or width > 64 or offset + width > 8 * records.shape[1]:
            raise ValueError(f"field at bit {offset}, {width} bits, does not fit a "
                             f"{records.shape[1]}-byte record")

    def extract(self, records, offset, width, big, kind, out, out_offset=0):
        """Extract into `out` (1-D, len N), element `kind` at byte `out_offset` of each item."""
        records, n, rs, bs = self.records(records)
        self._check_field(records, offset, width)
        if out.ndim != 1 or out.shape[0] != n or out.strides[0] < 0 or not out.flags.writeable:
            raise ValueError("out must be a writable 1-D array of one item per record")
        if out_offset + (kind & 15) > out.itemsize:
            raise ValueError("element does not fit the output item")
        if not n:
            return out
        rc = self.lib.logb_extract(self._ptr(records), n, rs, bs, offset, width, 1 if big else 0, kind,
                                   self._ptr(out, out_offset), out.strides[0])
        if rc:
            raise ValueError(f"logb_extract: invalid field (bit {offset}, {width} bits, kind {kind:#x})")
        return out

    def pack(self, records, offset, width, big, kind, values, in_offset=0):
        """Store `values` (1-D, len N; element `kind` at byte `in_offset` of each item) into a field."""
        records, n, rs, bs = self.records(records, writable=True)
        self._check_field(records, offset, width)
        if values.ndim != 1 or values.shape[0] != n or values.strides[0] < 0:
            raise ValueError("values must be a 1-D array of one item per record")
        if in_offset + (kind & 15) > values.itemsize:
            raise ValueError("element does not fit the input item")
        if not n:
            return
        rc = self.lib.logb_pack(self._ptr(records), n, rs, bs, offset, width, 1 if big else 0, kind,
                                self._ptr(values, in_offset), values.strides[0])
        if rc:
            raise ValueError(f"logb_pack: invalid field (bit {offset}, {width} bits, kind {kind:#x})")

    def gather(self, records, byte0, nbytes, out=None):
        """(N, nbytes) uint8 copy of bytes [byte0, byte0 + nbytes) of every record."""
        records, n, rs, bs = self.records(records)
        if byte0 < 0 or nbytes < 0 or byte0 + nbytes > records.shape[1]:
            raise ValueError("byte range outside the record")
        if out is None:
            out = self._np.empty((n, nbytes), self._np.uint8)
        elif out.shape != (n, nbytes) or out.dtype != self._np.uint8 or not out.flags.c_contiguous \
                or not out.flags.writeable:
            raise ValueError(f"out must be a writable C-contiguous ({n}, {nbytes}) uint8 array")
        if n and nbytes:
            self.lib.logb_gather(self._ptr(records), n, rs, bs, byte0, nbytes, self._ptr(out))
        return out

    # ---------------------------------------------------------------- transpose
    def _transpose(self, fn, data, count, size):
        total = count * size
        out = self._np.empty(total, self._np.uint8)
        with self.ffi.from_buffer("uint8_t[]", data) as src:
            if len(src) < total:
                raise ValueError(f"{len(src)} bytes, {count} records of {size} need {total}")
            fn(src, self._ptr(out), count, size)
        return out.tobytes()

    def transpose(self, data, count, size):
        return self._transpose(self.lib.logb_transpose, data, count, size)

    def untranspose(self, data, count, size):
        return self._transpose(self.lib.logb_untranspose, data, count, size)

    # ---------------------------------------------------------------- tails
    def walk_tails(self, data, pos, n, v):
        """(code, position reached, offsets (n*v uint64), lengths (n*v uint32))."""
        np = self._np
        offs = np.empty(n * v, np.uint64)
        lens = np.empty(n * v, np.uint32)
        end = self.ffi.new("size_t *")
        with self.ffi.from_buffer("uint8_t[]", data) as p:
            rc = self.lib.logb_walk_tails(p, len(p), pos, n, v, self._ptr(offs, 0, "uint64_t *"),
                                          self._ptr(lens, 0, "uint32_t *"), end)
        return rc, end[0], offs, lens


C = None  # the loaded CKernels, or None
load_error = None  # why the C backend could not be loaded
active = None  # the kernels in use: C, or None for pure Python
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
        C = CKernels(_cbridge.ffi, _cbridge.lib)
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
        active = None
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
    return {"backend": current, "c_available": C is not None,
            "crc": (C.crc_impl if active is C and C is not None else "crcmod" if _has_crcmod() else "pure"),
            "load_error": str(load_error) if load_error else None}


def _has_crcmod():
    from . import crc

    return crc.crc32c_python is not crc.crc32c_pure


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

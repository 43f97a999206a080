"""What every subcommand shares: the documented exit statuses, opening a file
(--recover), writing an output safely, JSON value conversion, and a progress
bar on stderr.

A command returns EXIT_OK or EXIT_DAMAGED for what it found, and raises for
what stops it; main.py turns the error into its exit status (README "Exit
status")."""

import json
import math
import os
import shutil
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager

import numpy as np

from ..errors import LogbError, NotLogbError, UnreadableInputError, UsageError
from ..reader import LogbFile
from ..tables import AxisKind, AxisMode, ByteOrder, ConversionType, DataType

EXIT_OK, EXIT_DAMAGED, EXIT_NOT_LOGB, EXIT_UNSUPPORTED, EXIT_USAGE = 0, 1, 2, 3, 64
EXIT_NO_DEVICE = 69  # EX_UNAVAILABLE: no logger answers (pull, tail)
EXIT_INTERRUPTED = 130  # 128 + SIGINT: Ctrl-C stopped a pull


@contextmanager
def about(path):
    """A Logb error raised inside goes on, its message now naming `path`."""
    try:
        yield
    except LogbError as exc:
        exc.args = (f"{path}: {exc}",)
        raise


def add_recover(p):
    p.add_argument("--recover", action="store_true",
                   help="read an input whose start is missing or damaged (a file cut from the middle, "
                        "a headerless dump) from its first SYNC frame")


@contextmanager
def opening(path):
    """Errors opening the input `path` name it; one that is not Logb from its
    start says how to read it anyway (recovery resyncs instead of raising)."""
    with about(path):
        try:
            yield
        except NotLogbError as exc:
            raise NotLogbError(f"{exc}; --recover reads it from its first SYNC frame") from None


@contextmanager
def open_logb(path, recover=False, **kwargs):
    """The LogbFile of `path` ("-": standard input), closed after the block."""
    with opening(path):
        f = _open_logb(path, recover=recover, **kwargs)
    try:
        yield f
    except BaseException as exc:
        # Views of the mapped input held by the frames of an error on its way
        # out would make closing the map fail (BufferError), hiding the error.
        traceback.clear_frames(exc.__traceback__)
        raise
    finally:
        f.close()


def _open_logb(path, **kwargs):
    if path != "-" and sys.stderr.isatty():
        bar = Progress(os.path.getsize(path), "scan")
        f = LogbFile(path, progress=lambda off: bar.advance(off - bar.done), **kwargs)
        bar.close()
        return f
    return LogbFile(sys.stdin.buffer if path == "-" else path, **kwargs)


@contextmanager
def dbc_errors(path):
    """cantools' parse errors (they have no common base class) as UnreadableInputError."""
    try:
        yield
    except Exception as exc:
        cantools = sys.modules.get("cantools")  # not loaded: the error is not one of its
        if cantools is None or not isinstance(exc, (cantools.database.errors.Error,
                                                    cantools.database.UnsupportedDatabaseFormatError)):
            raise
        raise UnreadableInputError(f"{path}: cannot parse the DBC: {exc}") from None


def _identity(path):
    """(device, inode) of a path ("-": standard input), or None if there is none."""
    try:
        st = os.fstat(sys.stdin.fileno()) if path == "-" else os.stat(path)
    except (OSError, ValueError, AttributeError):  # no such file; stdin closed, replaced or absent
        return None
    return st.st_dev, st.st_ino


@contextmanager
def output(path, inputs=()):
    """Write the file `path` so that nothing is destroyed: yields a temporary
    path in the target's folder (same extension, for writers that go by it)
    that replaces the target only when the block succeeds, and is removed when
    it fails. An output that is one of `inputs` (whatever the path: symlinks,
    hard links) is a usage error, raised before anything is read or written."""
    mine = _identity(path)
    for src in inputs:
        if src is not None and mine is not None and _identity(src) == mine:
            raise UsageError(f"{path}: the output is the input {src}; write it elsewhere")
    target = os.path.realpath(path)  # through a symlink: replace the file it names, keep the link
    folder, name = os.path.split(target)
    if os.path.isdir(target):
        raise UsageError(f"{path}: is a directory")
    if not os.path.isdir(folder):
        raise UsageError(f"{path}: no such directory {os.path.dirname(path)}")
    try:
        # A private folder beside the target holds the file under the target's own
        # name: writers that go by the extension, or write the name into the file
        # (a TRC header), see the real one, and the rename stays in one filesystem.
        scratch = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=folder)
    except OSError as exc:  # e.g. a folder not writable: name the output, not the temporary
        raise OSError(exc.errno, exc.strerror, path) from None
    tmp = os.path.join(scratch, name)
    try:
        yield tmp
        os.chmod(tmp, _new_file_mode(target))
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # the data is on disk before the name points at it
        finally:
            os.close(fd)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _new_file_mode(target):
    """The mode the replaced file had, else what open() would give a new one."""
    try:
        return os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def value(v):
    """One raw or physical value as JSON: bytes as hex, complex as [re, im],
    missing as null, integers exact."""
    if v is None or v is np.ma.masked:
        return None
    if isinstance(v, (np.ndarray, bytes, bytearray, memoryview)):
        return bytes(np.asarray(v, np.uint8).tobytes() if isinstance(v, np.ndarray) else v).hex()
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (complex, np.complexfloating)):
        return [float(v.real), float(v.imag)]
    if isinstance(v, (float, np.floating)):
        return float(v)
    return str(v)


def column_values(col):
    """JSON values of a whole column (masked entries → null)."""
    if isinstance(col, np.ma.MaskedArray):
        data, mask = col.data, np.ma.getmaskarray(col)
        return [None if m else float(x) for x, m in zip(data.tolist(), mask.tolist())]
    if col.ndim == 2:  # fixed bytes
        return [bytes(row).hex() for row in col]
    if col.dtype.kind in "biu":
        return col.tolist()
    if col.dtype.kind == "f":
        return [float(x) for x in col.tolist()]
    return [value(x) for x in col]


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def conversion_json(c):
    t = ConversionType(c.type).name
    out = {"type": t}
    if c.coeffs:
        out["coeffs"] = list(c.coeffs)
    if c.entries:
        out["entries"] = [list(e) for e in c.entries]
    if t in ("value_to_text", "range_to_text"):
        out["default"] = c.default
    return out


def schema_json(s):
    return {
        "record_bits": s.record_bits,
        "axis": {
            "kind": AxisKind(s.axis_kind).name,
            "mode": AxisMode(s.axis_mode).name,
            "exp": s.axis_exp if s.is_time else None,
            "unit": s.axis_unit,
            "step": s.axis_step,
            "scale": s.axis_scale if s.axis_mode == AxisMode.explicit else None,
            "field": s.fields[s.axis_field].name if s.axis_mode == AxisMode.explicit else None,
        },
        "fields": [
            {
                "name": f.name,
                "type": DataType(f.data_type).name,
                "bit_offset": f.bit_offset,
                "bit_width": f.bit_width,
                "byte_order": ByteOrder(f.byte_order).name,
                "variable": f.variable,
                "unit": f.unit,
                "description": f.description,
                "conversion": conversion_json(f.conversion),
            }
            for f in s.fields
        ],
        "meta": dict(s.meta),
    }


class Progress:
    """A one-line progress bar on stderr, shown only when stderr is a terminal."""

    def __init__(self, total, label, enabled=None):
        self.total = max(int(total), 1)
        self.label = label
        self.done = 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self._last = 0.0

    def advance(self, n):
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            frac = min(self.done / self.total, 1.0)
            rate = self.done / max(now - self.start, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else math.inf
            bar = "#" * int(frac * 30)
            sys.stderr.write(f"\r{self.label} [{bar:<30}] {frac:5.1%} {rate / 1e6:7.1f} MB/s ETA {eta:5.1f}s")
            sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")

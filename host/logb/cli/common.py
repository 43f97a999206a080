"""What every subcommand shares: the documented exit statuses, opening a file,
JSON value conversion, and a progress bar on stderr.

A command returns EXIT_OK or EXIT_DAMAGED for what it found, and raises for
what stops it; main.py turns the error into its exit status (README "Exit
status")."""

import json
import math
import os
import sys
import time
from contextlib import contextmanager

import numpy as np

from ..errors import LogbError
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


def open_logb(path, **kwargs):
    with about(path):
        if path != "-" and sys.stderr.isatty():
            bar = Progress(os.path.getsize(path), "scan")
            f = LogbFile(path, progress=lambda off: bar.advance(off - bar.done), **kwargs)
            bar.close()
            return f
        return LogbFile(sys.stdin.buffer if path == "-" else path, **kwargs)


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

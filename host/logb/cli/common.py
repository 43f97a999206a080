"""What every subcommand shares: the documented exit statuses, opening an input
(a Logb file, --recover, or a CAN trace imported on the fly), writing an output
safely, the time options (--time, --window), the CAN id filter (--id), JSON
value conversion, and a progress bar on stderr.

A command returns EXIT_OK or EXIT_DAMAGED for what it found, and raises for
what stops it; main.py turns the error into its exit status (README "Exit
status")."""

import argparse
import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from ..errors import LogbError, NotLogbError, OutsideRecordingError, UnreadableInputError, UsageError
from ..reader import LogbFile
from ..tables import AxisKind, AxisMode, ByteOrder, ConversionType, DataType

EXIT_OK, EXIT_DAMAGED, EXIT_NOT_LOGB, EXIT_UNSUPPORTED, EXIT_USAGE = 0, 1, 2, 3, 64
EXIT_NO_DEVICE = 69  # EX_UNAVAILABLE: no logger answers (pull, tail)
EXIT_BUSY = 75  # EX_TEMPFAIL: another run holds the lake's lock (lake)
EXIT_INTERRUPTED = 130  # 128 + SIGINT: Ctrl-C stopped a pull


@contextmanager
def about(path):
    """A Logb error raised inside goes on, its message now naming `path`."""
    try:
        yield
    except LogbError as exc:
        if not getattr(exc, "names_its_input", False):  # a DBC's error names the DBC, not `path`
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


TABLE_EXTENSIONS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def table_format(fmt, path, also=""):
    """csv or parquet: `fmt` (--format), else `path`'s extension; any other extension is a
    UsageError (a CSV named .xlsx would be a surprise later). `also`: what else the command
    writes, for that message."""
    if fmt:
        return fmt
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in TABLE_EXTENSIONS:
        raise UsageError(f"{path}: cannot tell the output format from {ext or 'no extension'!r}; name it .csv or "
                         f".parquet{also}, or give --format")
    return TABLE_EXTENSIONS[ext]


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
        err = UnreadableInputError(f"{path}: cannot parse the DBC: {exc}")
        err.names_its_input = True
        raise err from None


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


# ---------------------------------------------------------------- inputs: Logb files and CAN traces

def input_help(what="a .logb file"):
    """The help of an input positional that `open_input` opens."""
    return f"{what}, or a CAN trace (candump -L .log, Vector ASC/BLF, PEAK TRC, MDF4 bus logging; told by its content)"


@contextmanager
def open_input(path, recover=False):
    """The LogbFile of `path`: a Logb file ("-": standard input), or a CAN trace
    imported on the fly, in memory (nothing is written beside it). A trace is
    told by its content (formats.sniff), whatever its extension; what is
    neither raises NotLogbError saying what would be read."""
    from ..can import formats

    kind = "logb" if path == "-" or recover else formats.sniff(path)
    if kind == "logb":
        with open_logb(path, recover=recover) as f:
            yield f
        return
    if kind is None:
        with opening(path):  # names the path, and how a Logb file cut from its start reads
            raise NotLogbError("neither a Logb file nor a CAN trace (candump -L, Vector ASC/BLF, PEAK TRC, MDF4)")
    trace = formats.read_as(path, kind)  # (its errors name the path)
    with about(path):
        buf = io.BytesIO()
        formats.write_logb(trace, buf, source=path)
    for note in trace.left_out:  # what the trace has and the command will not see
        print(f"logb: {path}: {note}", file=sys.stderr)
    f = LogbFile(buf.getvalue())
    try:
        yield f
    finally:
        f.close()


# ---------------------------------------------------------------- time: --time and --window

TIME_BASES = ("utc", "relative", "device")
TIME_HELP = ("utc: ISO-8601 UTC (dated recordings); relative: seconds after the recording's start; "
             "device: seconds on the logger's own axis (since boot when monotonic). "
             "Default: utc when the recording is dated, else relative")
WINDOW_HELP = ("only records from T0 to T1 (inclusive): `T0 T1`, `T0:T1` (either side may be empty) "
               "or `T0/T1`. A number is seconds after the recording's start (as --time relative "
               "shows), an ISO-8601 time (2025-03-18T23:06:50Z; no offset: UTC) an absolute one")


def add_time_arguments(p, window=True):
    """--time (args.time: None or one of TIME_BASES) and, with `window`, --window
    (args.window: a Window or None), the same on every command that shows time."""
    p.add_argument("--time", choices=TIME_BASES, help=TIME_HELP)
    if window:
        p.add_argument("--window", nargs="+", metavar="T", action=_WindowAction, help=WINDOW_HELP)


class _WindowAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, parse_window(values))
        except UsageError as exc:
            parser.error(str(exc))


def parse_time_point(text):
    """('s', seconds after the start) for a number, ('utc', ns) for an ISO-8601 time."""
    try:
        s = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(s):
            raise UsageError(f"--window {text!r}: not a finite number of seconds")
        return ("s", s)
    try:
        dt = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--window {text!r}: neither seconds nor an ISO-8601 time "
                         f"(e.g. 12.5 or 2025-03-18T23:06:50Z)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return ("utc", (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000)


@dataclass(frozen=True)
class Window:
    """T0..T1 of --window; each end None (open), ('s', seconds after the start) or ('utc', ns)."""

    lo: object
    hi: object
    text: str


def parse_window(values):
    """A Window from --window's one or two values; a reversed one is a usage error."""
    if isinstance(values, str):
        values = [values]
    if len(values) == 2:
        parts = list(values)
    elif len(values) == 1 and "/" in values[0]:  # the ISO-8601 interval separator
        parts = values[0].split("/", 1)
    elif len(values) == 1 and values[0].count(":") == 1:  # numbers only: ISO times hold colons
        parts = values[0].split(":")
    else:
        raise UsageError(f"--window {' '.join(values)!r}: expected T0 T1, T0:T1 or T0/T1")
    lo, hi = (parse_time_point(x) if x.strip() else None for x in parts)
    text = " ".join(values)
    if lo is not None and hi is not None and lo[0] == hi[0] and lo[1] > hi[1]:
        raise UsageError(f"--window {text}: T0 is after T1 (reversed?)")
    return Window(lo, hi, text)


def utc_text(ns, digits=6):
    """ISO-8601 UTC strings of integer nanoseconds, `digits` decimals of the second."""
    ns = np.asarray(ns, np.int64)
    unit = {0: "s", 3: "ms", 6: "us"}.get(digits, "ns")
    return np.char.add(np.datetime_as_string(ns.astype("datetime64[ns]"), unit=unit), "Z")


def _seconds_text(s):
    return f"{s:.6f}".rstrip("0").rstrip(".")


class Timeline:
    """The times of a set of rows, in every base --time offers, and --window over them.

    device_s: float seconds on the recording's axis, per row; wall_ns: int64 UTC
    nanoseconds per row, or None when the rows are undated; origin_s: the
    recording's start on that axis (relative time 0; default: the first row), so
    that relative times do not move with --id or --messages; axis_exp: the
    tick, for how many decimals UTC times show."""

    def __init__(self, device_s, wall_ns=None, origin_s=None, axis_exp=-6):
        self.device_s = np.asarray(device_s, np.float64)
        self.wall_ns = None if wall_ns is None else np.asarray(wall_ns, np.int64)
        if origin_s is None:
            origin_s = float(self.device_s.min()) if len(self.device_s) else 0.0
        self.origin_s = origin_s
        self.digits = min(max(-axis_exp, 0), 9)

    @property
    def dated(self):
        return self.wall_ns is not None

    @property
    def relative_s(self):
        return self.device_s - self.origin_s

    def basis(self, choice):
        """The base to show (--time `choice`, None: utc when dated, else relative)."""
        if choice is None:
            return "utc" if self.dated else "relative"
        if choice == "utc" and not self.dated:
            raise UsageError("--time utc: these records are undated (no unix time base or anchor; "
                             "use --time relative or device)")
        return choice

    def column(self, basis):
        """(name, values) of the time column: time_utc (int64 ns), time_s (relative) or device_time_s."""
        if basis == "utc":
            return "time_utc", self.wall_ns
        # rounded to the tick: float seconds since 1970 carry noise below it
        if basis == "relative":
            return "time_s", np.round(self.relative_s, self.digits)
        return "device_time_s", np.round(self.device_s, self.digits)

    def texts(self, basis):
        """The time column as the strings a person reads."""
        name, values = self.column(basis)
        if basis == "utc":
            return utc_text(values, self.digits)
        return [f"{v:.{self.digits}f}" for v in values.tolist()]

    def span(self):
        """The rows' first to last time, in words (for errors that say what exists)."""
        if not len(self.device_s):
            return "no records"
        rel = self.relative_s
        text = f"{_seconds_text(rel.min())} to {_seconds_text(rel.max())} s after the start"
        if self.dated:
            first, last = utc_text([self.wall_ns.min(), self.wall_ns.max()], self.digits)
            text += f", {first} to {last}"
        return text

    def _bound(self, point):
        kind, v = point
        if kind == "s":
            return self.relative_s, v
        if not self.dated:
            raise UsageError(f"--window: {utc_text([v])[0]} is a UTC time and these records are undated; "
                             f"give seconds after the start")
        return self.wall_ns, v

    def select(self, window, what="the recording"):
        """A bool mask of the rows inside `window` (None: every row). A window that
        keeps none of them raises OutsideRecordingError naming `what` spans."""
        keep = np.ones(len(self.device_s), bool)
        if window is None:
            return keep
        if window.lo is not None:
            col, v = self._bound(window.lo)
            keep &= col >= v
        if window.hi is not None:
            col, v = self._bound(window.hi)
            keep &= col <= v
        if len(keep) and not keep.any():
            raise OutsideRecordingError(f"--window {window.text} holds no record of {what}, "
                                        f"which spans {self.span()}")
        return keep


def file_origin_s(f):
    """The recording's start on its axis, in seconds: the earliest DATA frame's axis base
    of any time stream (None when it has none)."""
    starts = []
    for s in f.streams.values():
        if s.schema is not None and s.schema.is_time and s.frames:
            base = s.frames[0].header.axis_base(True)
            starts.append(base * 10.0 ** s.schema.axis_exp)
    return min(starts) if starts else None


def file_timeline(f, axis, axis_exp, session=None):
    """The Timeline of rows of `f` with integer `axis` ticks of 10**axis_exp s, in
    `session` (an index or an array of them; None: rows of unknown session, dated
    only when that cannot matter: one session, or every session unix)."""
    from ..can.formats import wall_ns_of

    axis = np.asarray(axis, np.int64)
    device_s = axis.astype(np.float64) * 10.0 ** axis_exp
    wall = None
    if session is None:
        if len(f.sessions) == 1 or all(s.time_base == "unix" for s in f.sessions):
            session = 0
    if session is not None and f.sessions:
        ns, ok = wall_ns_of(f, axis, axis_exp, session)
        wall = ns if ok else None
    return Timeline(device_s, wall, file_origin_s(f), axis_exp)


# ---------------------------------------------------------------- CAN ids: --id

ID_HELP = ("only these CAN ids, in hex (0x optional, as candump): a list of `123`, ranges "
           "`0x100-0x1FF` and id/mask pairs `0x700/0x7F0` (kept when id & mask = 0x700 & mask), "
           "e.g. --id 0x123,0x100-0x1FF,0x700/0x7F0; repeatable. The 29-bit value is compared, "
           "so 0x123 matches a standard and an extended 0x123")
_ID_TERM = re.compile(r"(?:0x)?([0-9a-f]{1,8})(?:([-/])(?:0x)?([0-9a-f]{1,8}))?", re.I)


class IdFilter:
    """The CAN ids --id keeps: (lo, hi) ranges (an id is a range of one) and
    (value, mask) pairs, over the 29-bit id."""

    def __init__(self, ranges=(), masks=(), text=""):
        self.ranges, self.masks, self.text = list(ranges), list(masks), text

    def __add__(self, other):
        return IdFilter(self.ranges + other.ranges, self.masks + other.masks, f"{self.text},{other.text}")

    def mask(self, ids):
        """A bool array: which of `ids` (any integer array) are kept."""
        ids = np.asarray(ids, np.uint32) & np.uint32(0x1FFFFFFF)
        keep = np.zeros(len(ids), bool)
        for lo, hi in self.ranges:
            keep |= (ids >= lo) & (ids <= hi)
        for v, m in self.masks:
            keep |= (ids & np.uint32(m)) == (v & m)
        return keep

    def require(self, ids, what="the input"):
        """Raise NotFoundError, listing the ids there are, when none of `ids` is kept."""
        ids = np.asarray(ids)
        if len(ids) and self.mask(ids).any():
            return
        seen = np.unique(ids & 0x1FFFFFFF)
        shown = ", ".join(f"0x{int(i):X}" for i in seen[:40]) + (" ..." if len(seen) > 40 else "")
        from ..errors import NotFoundError
        raise NotFoundError(f"--id {self.text} matches no frame of {what}; "
                            f"its ids: {shown or 'none (no frames)'}")


def parse_id_filter(text):
    """An IdFilter from one --id value (argparse type)."""
    ranges, masks = [], []
    for term in (t.strip() for t in text.split(",")):
        m = _ID_TERM.fullmatch(term)
        if not m:
            raise argparse.ArgumentTypeError(f"{term!r} is not a hex id, id range lo-hi or id/mask")
        a, op, b = int(m[1], 16), m[2], int(m[3], 16) if m[3] else None
        if max(a, b or 0) > 0x1FFFFFFF:
            raise argparse.ArgumentTypeError(f"{term!r}: a CAN id has 29 bits (at most 0x1FFFFFFF)")
        if op == "-":
            if b < a:
                raise argparse.ArgumentTypeError(f"{term!r}: the range is reversed")
            ranges.append((a, b))
        elif op == "/":
            masks.append((a, b))
        else:
            ranges.append((a, a))
    return IdFilter(ranges, masks, text)


class _IdAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        before = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, values if before is None else before + values)


def add_id_filter(p):
    """--id (args.ids: an IdFilter, or None for every id)."""
    p.add_argument("--id", dest="ids", type=parse_id_filter, action=_IdAction, metavar="IDS", help=ID_HELP)


def hex_id(ident, extended):
    """A CAN id as candump writes it: 3 hex digits standard, 8 extended."""
    return f"{ident:08X}" if extended else f"{ident:03X}"


def device_window(f, window):
    """--window as (T0, T1) seconds on the recording's axis (what the readers' window
    arguments take), or None. Relative seconds count from file_origin_s; a UTC end is
    mapped through the session's time base (unix, or its anchors), which needs one
    session unless every session is unix. An open end reaches 1e9 s (about 32
    years) past the start: far enough, and in int64 ticks at ns."""
    if window is None:
        return None
    origin = file_origin_s(f) or 0.0
    ends = []
    for point, far in ((window.lo, origin - 1e9), (window.hi, origin + 1e9)):
        if point is None:
            ends.append(far)
        elif point[0] == "s":
            ends.append(origin + point[1])
        else:
            ends.append(_axis_s_of_wall(f, point[1]))
    if ends[0] > ends[1]:
        raise UsageError(f"--window {window.text}: T0 is after T1 (reversed?)")
    return tuple(ends)


def _axis_s_of_wall(f, ns):
    """The axis seconds of UTC nanoseconds `ns` (the inverse of the sessions' clock)."""
    sessions = f.sessions
    if sessions and all(s.time_base == "unix" for s in sessions):
        return ns / 1e9
    dated = [s for s in sessions if s.basis != "undated"]
    if not dated or len(sessions) > 1:
        why = "undated" if not dated else "of several writer sessions, not all unix"
        raise UsageError(f"--window {utc_text([ns])[0]}: this recording is {why}; give seconds after its start")
    anchors = sorted(dated[0].anchors, key=lambda a: a.axis_ns)
    walls = np.array([a.wall_ns for a in anchors], np.float64)
    axes = np.array([a.axis_ns for a in anchors], np.float64)
    if len(anchors) == 1 or ns <= walls[0]:
        return (ns - walls[0] + axes[0]) / 1e9
    if ns >= walls[-1]:
        return (ns - walls[-1] + axes[-1]) / 1e9
    return float(np.interp(ns, walls, axes)) / 1e9

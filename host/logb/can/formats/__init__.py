"""CAN trace formats in and out of Logb: candump `-L` .log, Vector ASC and BLF,
PEAK TRC (python-can reads and writes them) and MDF4 in the ASAM CAN
bus-logging layout (asammdf reads and writes it).

Everything goes through one in-memory, columnar form, `Trace` (trace.py). Each
format is one module exposing NAME, EXTENSIONS, REQUIRES (the optional module it
imports, in logb[can]), LOSSES (what python-can would lose and how it is kept),
read(path) -> Trace (None when the format is written only) and
write(trace, out) -> warnings; REGISTRY below lists them, and `logb import`,
`logb export` and the tests take every format from it. Where python-can would
lose something, a small, documented fix sits next to the call (see LOSSES).
Nothing here parses a format from scratch.

Time: ticks are integers of 10**axis_exp s — µs (-6) for candump, ASC and TRC,
ns (-9) for BLF unless every BLF timestamp is a whole µs. Dated traces (candump
epoch stamps, a BLF header start, an ASC/TRC start date) keep absolute Unix
ticks and import with time base "unix"; the rest import as "relative".
"""

import importlib
import os
import re

from ...errors import FormatMismatchError, UnreadableInputError, UsageError
from . import asc, blf, candump, mdf4, trc
from .logbfile import raw_bus_streams, read_logb, wall_ns_of, write_logb
from .trace import Bus, Trace, payload_len

__all__ = ["REGISTRY", "READERS", "LOSSES", "Bus", "Trace", "payload_len", "for_path", "format_for",
           "sniff", "read_as", "read_trace", "write_trace", "import_trace", "export_trace", "read_logb", "write_logb",
           "raw_bus_streams", "wall_ns_of"]

REGISTRY = {m.NAME: m for m in (candump, asc, blf, trc, mdf4)}
READERS = {name: m for name, m in REGISTRY.items() if m.read is not None}

# What python-can loses and what the format modules do about it (printed by `logb import --help`).
LOSSES = "\n".join(m.LOSSES for m in REGISTRY.values() if m.LOSSES)


def for_path(path):
    """The format module whose extension `path` has, or None."""
    ext = os.path.splitext(str(path))[1].lower()
    return next((m for m in REGISTRY.values() if ext in m.EXTENSIONS), None)


_LOGB_MAGIC = b"\x89LOGB\r\n\x1a"
_CANDUMP_LINE = re.compile(rb"\(\d+(\.\d+)?\)\s+\S+\s+[0-9A-Fa-f]+#")
_ASC_HEAD = re.compile(rb"(date|base|internal events|no internal events|//|begin triggerblock)\b", re.I)


def sniff(path):
    """What `path` holds, from its first bytes: "logb", a format module, or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    if head.startswith(_LOGB_MAGIC) or _LOGB_MAGIC.startswith(head):  # (a file cut inside its magic is Logb's)
        return "logb"
    if head.startswith(b"LOGG"):
        return blf
    if head.startswith(b"MDF     "):
        return mdf4
    lines = [ln.strip() for ln in head.splitlines()[:-1] or head.splitlines()]  # the last may be cut
    first = next((ln for ln in lines if ln), b"")
    if first.startswith(b";$FILEVERSION") or (first.startswith(b";") and b"PCAN" in head):
        return trc
    if _CANDUMP_LINE.match(first):
        return candump
    if _ASC_HEAD.match(first):
        return asc
    return None


def read_as(path, fmt):
    """`path` read as the format module `fmt` into a Trace; what does not parse, or a
    format Logb only writes, raises UnreadableInputError."""
    if fmt.read is None:
        raise UnreadableInputError(f"{path}: a {fmt.NAME} file; logb writes {fmt.NAME} but does not read it")
    importlib.import_module(fmt.REQUIRES)  # missing: the CLI gives the pip hint
    try:
        return fmt.read(path)
    except Exception as exc:  # python-can's parse errors have no common base class
        raise UnreadableInputError(f"{path}: cannot read as {fmt.NAME}: {exc}") from None


def format_for(path, fmt=None, reading=False):
    """The format module named `fmt` (--format), else the one of `path`'s extension;
    `reading`: only formats that can be read, and the content decides: a `fmt`
    that names another format than the content is raises FormatMismatchError."""
    known = READERS if reading else REGISTRY
    if fmt and fmt not in known:
        raise UsageError(f"unknown CAN trace format {fmt!r} (know: {', '.join(known)})")
    if reading and os.path.isfile(path):
        found = sniff(path)
        if found == "logb":
            raise FormatMismatchError(f"{path}: already a Logb file, not a {fmt or 'CAN'} trace")
        if found is not None:
            if fmt and found.NAME != fmt:
                raise FormatMismatchError(f"{path}: --format {fmt}, but its content is {found.NAME}")
            return found
    if fmt:
        return known[fmt]
    m = for_path(path)
    if m is None or m.NAME not in known:
        raise UsageError(f"cannot tell the trace format of {path!r} from its content or extension; use --format "
                         f"({', '.join(known)})")
    return m


def read_trace(path, fmt=None):
    """Read a trace file into a Trace."""
    return read_as(path, format_for(path, fmt, reading=True))


def write_trace(trace, out, fmt=None):
    """Write a Trace to a trace file. Returns a list of warnings."""
    return format_for(out, fmt).write(trace, out)


def import_trace(src, out, fmt=None, dbc=None, device="logb"):
    """Read a trace and write it as Logb; returns (trace, DBC problems)."""
    trace = read_trace(src, fmt)
    problems = write_logb(trace, out, dbc=dbc, device=device, source=src)
    return trace, problems


def export_trace(f, out, fmt=None, streams=None):
    """A LogbFile's CAN buses (every frame, whatever the routing) to a trace file;
    returns (trace, warnings)."""
    trace = read_logb(f, streams)
    return trace, write_trace(trace, out, fmt)

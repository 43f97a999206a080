"""A unit of lake work, as a Dask task runs it: open the source, decode its byte range,
write its parts. Specs and results are plain data, so they cross process boundaries."""

import fnmatch
import io
import os
from dataclasses import dataclass, field

from ..errors import LogbError, NotLogbError, UsageError
from .parts import UnitWriter
from .tables import decode_range


@dataclass
class DbcRule:
    """--dbc [DEVICE/][BUS=]FILE: fnmatch patterns over the device and the bus name."""

    device: str
    bus: str
    path: str

    @classmethod
    def parse(cls, text):
        if os.path.isfile(text):
            return cls("*", "*", text)
        head, sep, path = text.rpartition("=")
        device, bus = "*", "*"
        if sep:
            device, slash, bus = head.rpartition("/")
            device = device if slash else "*"
        else:
            path = text
        if not os.path.isfile(path):
            raise UsageError(f"--dbc {text}: no such file {path!r}")
        return cls(device or "*", bus or "*", path)

    def matches(self, device, bus):
        return fnmatch.fnmatchcase(device, self.device) and fnmatch.fnmatchcase(bus, self.bus)


@dataclass
class UnitSpec:
    lake: str
    source_id: str
    path: str
    kind: str  # "logb" or a trace format's NAME
    device: str
    lo: int
    hi: object  # the end of the range; None: to the end (a trace: offsets of its conversion)
    dbc: list  # DbcRule
    records: int


@dataclass
class UnitResult:
    lo: int
    ingested_to: int = 0  # where the next ingest of a growing source starts
    records: int = 0
    rows: dict = field(default_factory=dict)
    written: list = field(default_factory=list)  # (dataset, partition dir, name, rows, bytes)
    sessions: list = field(default_factory=list)
    report: dict = field(default_factory=dict)
    error: str = ""


def run_unit(spec):
    out = UnitResult(spec.lo)
    try:
        f = _open(spec)
    except (LogbError, OSError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
        return out
    try:
        writer = UnitWriter(spec.lake, spec.source_id, spec.lo)
        try:
            hi = f.report.size if spec.hi is None else spec.hi
            sink = decode_range(f, spec.lo, hi, spec.path, spec.device, Dbcs(spec.dbc), writer,
                                spec.records)
            writer.close()
        except BaseException:
            writer.abort()
            raise
    except (LogbError, OSError, ValueError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
        return out
    finally:
        f.close()
    rep = f.report
    intact = rep.truncated_at if rep.truncated and rep.truncated_at is not None else rep.size
    out.ingested_to = min(hi, intact)
    out.records = sink.records
    out.rows = {k: v for k, v in sink.rows.items() if v}
    out.written = writer.written
    out.sessions = [s.id for s in f.sessions if s.id]
    out.report = {"skipped": [[s.start, s.end, s.cause] for s in rep.skipped if s.start < hi and s.end > spec.lo],
                  "truncated": bool(rep.truncated and (rep.truncated_at is None or rep.truncated_at < hi)),
                  "rejected": sum(st.rejected for st in f.streams.values())}
    return out


def _open(spec):
    from ..reader import LogbFile

    if spec.kind == "logb":
        try:
            return LogbFile(spec.path)
        except NotLogbError:
            return LogbFile(spec.path, recover=True)  # its header was hit: read from its first SYNC
    from ..can import formats

    fmt = formats.REGISTRY[spec.kind]
    trace = formats.read_as(spec.path, fmt)
    buf = io.BytesIO()
    # the session named after the source: the same rows whichever run converts it
    formats.write_logb(trace, buf, source=spec.path, session=spec.source_id.ljust(32, "0"))
    return LogbFile(buf.getvalue())


class Dbcs:
    """The DBCs of one unit, each compiled once: --dbc rules (the first matching a device
    and bus), and the DBCs attached to the file."""

    def __init__(self, rules):
        self.rules = rules
        self._cache = {}

    def rule(self, device, bus):
        rule = next((r for r in self.rules if r.matches(device, bus)), None)
        return None if rule is None else self._compile(rule.path, bus)

    def compiled(self, text, bus):
        return self._compile(text, bus)

    def _compile(self, source, bus):
        key = (source, bus)
        if key not in self._cache:
            from ..can.dbc import compile_dbc

            self._cache[key] = compile_dbc(source, bus=bus)
        return self._cache[key]

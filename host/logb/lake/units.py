"""A unit of lake work, as a Dask task runs it: open each source, decode its byte range,
write the unit's parts. Specs and results are plain data, so they cross process boundaries."""

import fnmatch
import gc
import io
import os
from dataclasses import dataclass, field

from ..errors import LogbError, NotLogbError, UsageError
from ..framing import FILE_HEADER_SIZE
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
class Piece:
    """One source's byte range in a unit."""

    source_id: str
    path: str
    kind: str  # "logb" or a trace format's NAME
    device: str
    lo: int
    hi: object  # the end of the range; None: to the end (a trace: offsets of its conversion)
    window: object = None  # a range of a large file: pipeline._ranges' window (read only that)


@dataclass
class UnitSpec:
    """A task: one range of a large source, or a bundle of small ones. Its parts are named
    after `uid`, so that they can be found (and deleted) whatever rows they hold."""

    lake: str
    uid: str
    pieces: list  # Piece
    dbc: list  # DbcRule
    records: int


@dataclass
class PieceResult:
    source_id: str
    lo: int
    ingested_to: int = 0  # where the next ingest of a growing source starts
    records: int = 0
    rows: dict = field(default_factory=dict)
    sessions: list = field(default_factory=list)
    report: dict = field(default_factory=dict)
    error: str = ""


@dataclass
class UnitResult:
    uid: str
    pieces: list  # PieceResult, one per Piece
    written: list = field(default_factory=list)  # (dataset, partition dir, name, rows, bytes)


_FAILURES = (LogbError, OSError, ValueError)  # what a damaged or hostile source can raise


def run_unit(spec):
    """Decode every piece into the unit's parts. A piece whose source cannot be opened gives
    an error and no rows; one that fails midway would leave some of its rows in parts it
    shares, so the unit is then written again without it."""
    failed = {}
    while True:
        result = _attempt(spec, failed)
        if result is not None:
            # a reader's objects refer to each other (a stream to its file): collected now, the
            # window's bytes and tables go before the next task, not whenever the collector
            # next runs (a pool worker grew 195 -> 365 MB over 18 tasks without this)
            gc.collect()
            return result


def _attempt(spec, failed):
    writer = UnitWriter(spec.lake, spec.uid)
    dbcs = Dbcs(spec.dbc)
    done = []
    try:
        for i, piece in enumerate(spec.pieces):
            if i in failed:
                done.append(PieceResult(piece.source_id, piece.lo, error=failed[i]))
                continue
            try:
                f = _open(piece)
            except _FAILURES as exc:
                failed[i] = f"{type(exc).__name__}: {exc}"
                done.append(PieceResult(piece.source_id, piece.lo, error=failed[i]))
                continue
            try:
                done.append(_decode(f, piece, dbcs, writer, spec.records))
            except _FAILURES as exc:
                failed[i] = f"{type(exc).__name__}: {exc}"
                writer.abort()
                return None
            finally:
                f.close()
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return UnitResult(spec.uid, done, writer.written)


def _decode(f, piece, dbcs, writer, records):
    # offsets in `f` are the window's when the piece has one: shift = real - window offset
    shift = piece.window["start"] - FILE_HEADER_SIZE if piece.window else 0
    lo = piece.lo - shift
    hi = f.report.size if piece.hi is None else piece.hi - shift
    names = adopt(f, piece.window, piece.path, shift) if piece.window else None
    sink = decode_range(f, lo, hi, piece.path, piece.device, dbcs, writer, records, names)
    rep = f.report
    intact = rep.truncated_at if rep.truncated and rep.truncated_at is not None else rep.size
    return PieceResult(
        piece.source_id, piece.lo, ingested_to=min(hi, intact) + shift, records=sink.records,
        rows={k: v for k, v in sink.rows.items() if v}, sessions=[s.id for s in f.sessions if s.id],
        report={"skipped": [[s.start + shift, s.end + shift, s.cause] for s in rep.skipped
                            if s.start < hi and s.end > lo and s.start >= FILE_HEADER_SIZE],
                "truncated": bool(rep.truncated and (rep.truncated_at is None or rep.truncated_at < hi)),
                "rejected": sum(st.rejected for st in f.streams.values())})


def window_file(path, window, hi):
    """A LogbFile of the file's header and its bytes [window start, hi): a range task
    holds its range's frame table, not the whole file's."""
    from ..reader import LogbFile

    with open(path, "rb") as fh:
        head = fh.read(FILE_HEADER_SIZE)
        fh.seek(window["start"])
        body = fh.read(hi - window["start"])
    try:
        return LogbFile(head + body)
    except NotLogbError:
        return LogbFile(head + body, recover=True)


def adopt(f, window, path, shift):
    """Give a window's sessions what the whole file says of them (their anchors, which may
    come after the window, SPEC §5.5; their index in the whole file) and the DBCs attached
    outside it. Returns {window session index: the session's name in the lake}."""
    from ..can.dbc import MEDIA_TYPE
    from ..reader import Attachment
    from ..tables import Codec
    from ..timebase import Anchor

    names = {}
    for ws in f.sessions:
        first = ws.first_offset + shift
        whole = next((x for x in window["sessions"] if first in x["offsets"]), None)
        if whole is None:
            continue
        ws.anchors = [Anchor(**a) for a in whole["anchors"]]
        ws.__dict__.pop("clock", None)  # built from the anchors: rebuilt from these
        names[ws.index] = whole["id"] or f"{path}#{whole['index']}"
    have = {a.name for a in f.attachments if a.media_type == MEDIA_TYPE}
    for name, data in window["dbcs"]:
        if name not in have:
            f.attachments.append(Attachment(-1, name, MEDIA_TYPE, Codec.none, len(data), data))
    for st in f.streams.values():
        name = window["dbc_names"].get(st.uuid.hex())
        if name and "logb.can.dbc" not in st.meta:
            st.meta["logb.can.dbc"] = name
    return names


def _open(piece):
    from ..reader import LogbFile

    if piece.window is not None:
        return window_file(piece.path, piece.window, piece.hi)
    if piece.kind == "logb":
        try:
            return LogbFile(piece.path)
        except NotLogbError:
            return LogbFile(piece.path, recover=True)  # its header was hit: read from its first SYNC
    from ..can import formats

    trace = formats.read_as(piece.path, formats.REGISTRY[piece.kind])
    buf = io.BytesIO()
    # the session named after the source: the same rows whichever run converts it
    formats.write_logb(trace, buf, source=piece.path, session=piece.source_id.ljust(32, "0"))
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

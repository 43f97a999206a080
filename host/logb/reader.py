"""Reading a Logb file: segments, sessions, streams, runs, anchors, and the
recovery report (SPEC §3–§10).

`LogbFile(src)` scans the input once, checking every frame's CRC and parsing
the small control frames, and keeps only where each DATA frame is; records are
decompressed and decoded when a stream's columns are asked for.
"""

from dataclasses import dataclass, field

import numpy as np

from . import convert
from . import fields as fieldsmod
from .batch import decode_batch, frame_axis_span
from .errors import (
    InvalidSchemaError,
    LogbError,
    MalformedPayloadError,
    UnsupportedCodecError,
    UnsupportedFilterError,
)
from .framing import FRAME_OVERHEAD
from .records import Attach, DataHeader, End, Index, Meta, Run, Sync, pack_axis
from .scan import Report, check_header, iter_frames
from .schema import Schema, partial_identity
from .source import open_source
from .tables import AxisMode, Codec, DataType, Filter, FrameType, TIME_BASES
from .timebase import Clock, parse_anchor, ticks_to_ns
from . import codecs

# Columns.decoded preallocates when the decoded columns would take at most
# this many bytes, or this multiple of the file size (else frame by frame).
_PREALLOC_MIN = 64 << 20
_PREALLOC_RATIO = 64
# Zero-byte records are free to store but not to decode (8 bytes of axis each).
ZERO_SIZE_RECORD_LIMIT = 1 << 20

_FILE_SCOPE = {FrameType.SYNC, FrameType.ATTACH, FrameType.RUN, FrameType.INDEX, FrameType.END}


@dataclass
class FrameLoc:
    """Where an accepted DATA frame is, and its 28-byte header."""

    offset: int
    payload_len: int
    header: DataHeader
    segment: int

    @property
    def stored_slice(self):
        start = self.offset + 8 + 28
        return start, self.offset + 8 + self.payload_len


@dataclass
class Segment:
    offset: int
    seq: int
    wall_time_ns: int
    end_before: bool
    session_id: object = None
    time_base: object = None
    meta: dict = field(default_factory=dict)
    anchors: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    session: int = -1
    data_seen: bool = False  # session facts are the META keys before the first DATA


@dataclass
class Session:
    index: int
    id: object
    first_offset: int
    time_base: object = None
    meta: dict = field(default_factory=dict)
    anchors: list = field(default_factory=list)
    runs: dict = field(default_factory=dict)
    segments: list = field(default_factory=list)
    ended: bool = False

    @property
    def clock(self):
        return Clock(self.time_base, self.anchors)

    @property
    def basis(self):
        if self.time_base == "unix":
            return "unix"
        if self.time_base == "monotonic" and self.anchors:
            return "anchored"
        return "undated"


@dataclass
class Attachment:
    offset: int
    name: str
    media_type: str
    codec: int
    raw_size: int
    stored: bytes
    problem: object = None

    def data(self):
        if self.problem:
            raise LogbError(f"attachment {self.name!r}: {self.problem}")
        return codecs.decompress(self.stored, self.codec, self.raw_size)


@dataclass
class _Binding:
    stream: object  # Stream or None when the uuid could not be read
    status: str  # ok | rejected | conflict | duplicate
    reason: str
    payload: bytes


class Stream:
    """One logical stream (one stream_uuid) across segments, sessions and files."""

    def __init__(self, owner, uuid, name):
        self._file = owner
        self.uuid = uuid
        self.name = name
        self.schema = None  # the canonical (first valid) schema
        self.schema_payload = None
        self.frames = []
        self.rejected = 0
        self.rejections = []
        self.meta = {}
        self.bound_segments = []  # indices of the segments whose SCHEMA bound this stream (status ok)

    def __repr__(self):
        return f"<Stream {self.name!r} {self.uuid.hex()} {self.records} records>"

    @property
    def records(self):
        return sum(f.header.record_count for f in self.frames)

    def reject(self, offset, count, reason):
        self.rejected += count
        self.rejections.append((offset, count, reason))
        self._file.report.note(offset, "rejected", f"stream {self.name!r}: {count} records: {reason}")

    def _frames_in(self, window):
        if window is None:
            return list(self.frames)
        lo, hi = window
        s = self.schema
        out = []
        for fl in self.frames:
            span = frame_axis_span(s, fl.header)
            if span is not None and (span[1] < lo or span[0] > hi):
                continue
            if span is None and s.axis_mode == AxisMode.explicit and fl.header.record_count:
                af = s.fields[s.axis_field]
                if af.data_type == DataType.uint and s.axis_scale >= 0:
                    if fl.header.axis_base(s.is_time) > hi:  # every value is >= the base
                        continue
            out.append(fl)
        return out

    def batches(self, window=None, fields=None):
        """Yield (FrameLoc, Batch) in file order, decoding each frame now.
        A frame that fails to decode is rejected (reported) and skipped."""
        if self.schema is None:
            return
        for fl in self._frames_in(window):
            batch = self.decode_frame(fl, fields)
            if batch is None:
                continue
            if window is not None:
                keep = (batch.axis >= window[0]) & (batch.axis <= window[1])
                if not keep.all():
                    batch.raw = {k: v[keep] for k, v in batch.raw.items()}
                    batch.axis = batch.axis[keep]
                    batch.count = int(keep.sum())
            yield fl, batch

    def decode_frame(self, fl, fields=None, out=None):
        """Decode one accepted frame; None (and the frame rejected) if it fails.
        `out`: preallocated column slices to decode into (batch.decode_batch)."""
        start, end = fl.stored_slice
        try:
            # a view, not a copy, of the (mmapped) stored bytes; nothing decoded keeps it
            stored = memoryview(self._file.buf)[start:end]
            batch = decode_batch(self.schema, fl.header, stored, fields, out)
        except (LogbError, ValueError) as exc:
            self._drop(fl, str(exc))
            return None
        claimed = self._file._index_axes.get(fl.offset)
        if claimed is not None and batch.count and pack_axis(batch.axis[0], self.schema.is_time) != claimed:
            self._file._index_disagrees(fl.offset)
        return batch

    def _drop(self, fl, reason):
        if fl in self.frames:
            self.frames.remove(fl)
            self.reject(fl.offset, fl.header.record_count, reason)

    def columns(self, fields=None, window=None):
        """Decode to numpy columns. `window=(lo, hi)` in axis units (ticks for
        time axes) reads only frames that can overlap it."""
        if self.schema is None:
            raise InvalidSchemaError(
                f"stream {self.name!r} has no valid schema; its {self.rejected} records cannot be decoded")
        if window is None:
            return Columns.decoded(self, fields)
        parts = list(self.batches(window, fields))
        return Columns(self, parts)

    def session_of(self, fl):
        return self._file.sessions[self._file.segments[fl.segment].session]


class Columns:
    """A stream's records as columns: raw values, physical values, axis, runs."""

    def __init__(self, stream, parts):
        self.stream = stream
        self.schema = stream.schema
        names = [f.name for f in self.schema.fields]
        if parts:
            names = [n for n in names if n in parts[0][1].raw]
        self.raw = {n: _concat([b.raw[n] for _, b in parts], self.schema.field_named(n)) for n in names}
        axis_dtype = np.int64 if self.schema.is_time else np.float64
        self.axis = np.concatenate([b.axis for _, b in parts]) if parts else np.zeros(0, axis_dtype)
        self.run_id = np.concatenate(
            [np.full(b.count, b.run_id, np.uint32) for _, b in parts]) if parts else np.zeros(0, np.uint32)
        self.session = np.concatenate(
            [np.full(b.count, stream.session_of(fl).index, np.int32) for fl, b in parts]
        ) if parts else np.zeros(0, np.int32)
        self._phys = {}

    @classmethod
    def decoded(cls, stream, fields=None):
        """Every frame of `stream` decoded straight into preallocated columns:
        no per-frame arrays to concatenate (one copy and about half the peak
        memory less). The same columns as Columns(stream, batches)."""
        schema = stream.schema
        frames = list(stream.frames)
        total = sum(fl.header.record_count for fl in frames)
        names = [f.name for f in schema.fields if fields is None or f.name in fields]
        shapes = {}
        per_record = 16  # axis, run_id, session
        for name in names:
            dtype, extra = fieldsmod.column_dtype(schema.field_named(name))
            shapes[name] = dtype, extra
            per_record += dtype.itemsize * int(np.prod(extra, dtype=np.int64))
        # Record counts are only claims until each frame decodes: preallocate
        # for what a real file can hold, else decode frame by frame (a hostile
        # header then costs a rejected frame, not a huge allocation).
        if not total or total * per_record > max(_PREALLOC_MIN, _PREALLOC_RATIO * len(stream._file.buf)):
            return cls(stream, list(stream.batches(None, fields)))
        raw = {name: np.empty((total, *extra), dtype) for name, (dtype, extra) in shapes.items()}
        axis = np.empty(total, np.int64 if schema.is_time else np.float64)
        run_id = np.empty(total, np.uint32)
        session = np.empty(total, np.int32)
        pos = 0
        for fl in frames:
            n = fl.header.record_count
            out = ({k: v[pos:pos + n] for k, v in raw.items()}, axis[pos:pos + n])
            if stream.decode_frame(fl, fields, out) is None:
                continue  # rejected (reported); the next frame reuses the slots
            run_id[pos:pos + n] = fl.header.run_id
            session[pos:pos + n] = stream.session_of(fl).index
            pos += n
        if not pos:
            return cls(stream, [])
        if pos != total:
            raw = {k: v[:pos].copy() for k, v in raw.items()}
            axis, run_id, session = axis[:pos].copy(), run_id[:pos].copy(), session[:pos].copy()
        self = cls.__new__(cls)
        self.stream, self.schema = stream, schema
        self.raw, self.axis, self.run_id, self.session = raw, axis, run_id, session
        self._phys = {}
        return self

    def __len__(self):
        return len(self.axis)

    @property
    def axis_exp(self):
        return self.schema.axis_exp

    def phys(self, name):
        if name not in self._phys:
            self._phys[name] = convert.physical(self.schema.field_named(name).conversion, self.raw[name])
        return self._phys[name]

    def seconds(self):
        """The axis in seconds (float64) — only on request; ticks stay exact in .axis."""
        if not self.schema.is_time:
            raise ValueError("seconds() is for time axes")
        return self.axis.astype(np.float64) * 10.0 ** self.schema.axis_exp

    def wall(self, i):
        """WallTime of record i."""
        if not self.schema.is_time:
            from .timebase import WallTime, UNDATED
            return WallTime(None, UNDATED)
        session = self.stream._file.sessions[int(self.session[i])]
        return session.clock.wall(int(self.axis[i]), self.schema.axis_exp)


def _concat(chunks, f):
    if not chunks:
        return _empty_column(f)
    return np.concatenate(chunks)


def _empty_column(f):
    """A zero-length raw column with the dtype fields.extract gives that field."""
    dt, w = f.data_type, f.bit_width
    if f.variable or dt == DataType.string:
        return np.zeros(0, object)
    if dt == DataType.bytes:
        return np.zeros((0, w // 8), np.uint8)
    dtype = {DataType.uint: np.uint64, DataType.sint: np.int64, DataType.bool: bool,
             DataType.float: {16: np.float16, 32: np.float32}.get(w, np.float64),
             DataType.complex: np.complex64 if w == 64 else np.complex128}[dt]
    return np.zeros(0, dtype)


class LogbFile:
    """A scanned Logb input. `strict` raises at the first damage; `recover`
    accepts an input whose file header is missing or damaged by resyncing at
    its first SYNC frame. `progress(offset)` is called after each frame."""

    def __init__(self, src, strict=False, recover=False, progress=None):
        self.source = open_source(src)
        self.buf = self.source.buf
        self.report = Report(size=len(self.buf))
        self.segments = []
        self.sessions = []
        self.streams = {}
        self.attachments = []
        self.indexes = []  # (offset, Index, segment index or None)
        self.ends = []  # (offset, End)
        self.unknown_frames = []  # (offset, type)
        self._bindings = {}
        self._cur = None
        self._end_since_segment = False
        self._data_offsets = {}  # offset -> (stream or None, DataHeader)
        self._run_state = {}
        self._schema_cache = {}  # SCHEMA payload -> (schema | None, uuid, name, error)
        self._index_axes = {}  # DATA offset -> first_axis an INDEX claims (checked on decode)
        self.strict = strict
        start = check_header(self.buf, self.report, recover)
        if start is not None:
            damage = len(self.report.skipped)
            for fr in iter_frames(self.buf, self.report, start, strict):
                if len(self.report.skipped) != damage:  # damage closes the open segment
                    damage = len(self.report.skipped)
                    self._close_segment()
                self._frame(fr)
                if progress is not None:
                    progress(fr.end)
        self._resolve_sessions()
        self._check_index_and_end()

    # context management
    def close(self):
        self.source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # lookup
    def stream(self, key):
        """A stream by name, uuid hex, or uuid bytes."""
        if isinstance(key, bytes) and key in self.streams:
            return self.streams[key]
        for s in self.streams.values():
            if s.uuid.hex() == str(key).replace("-", "").lower() or s.name == key:
                return s
        raise KeyError(f"no stream {key!r}")

    def data_frames(self, streams=None):
        """(stream, FrameLoc) for every accepted DATA frame, in file order."""
        chosen = streams if streams is not None else self.streams.values()
        pairs = [(fl.offset, s, fl) for s in chosen for fl in s.frames]
        pairs.sort(key=lambda p: p[0])
        return [(s, fl) for _, s, fl in pairs]

    def validate(self):
        """Decode every frame once so record counts and rejections are final."""
        for s in self.streams.values():
            # Everything that can reject a frame is still checked (codec, filter,
            # raw_size, tails, the axis range, UTF-8 of every string field);
            # other fixed fields cannot fail to extract, so they are not.
            checked = [f.name for f in s.schema.fields if f.data_type == DataType.string] if s.schema else None
            for _ in s.batches(fields=checked):
                pass
        return self.report

    # scanning
    def _note(self, offset, kind, message):
        self.report.note(offset, kind, message)

    def _fail(self, error, offset, kind, message):
        """Damage-like conditions: raised in strict mode, reported otherwise."""
        if self.strict:
            raise error(f"{message} (offset {offset})")
        self._note(offset, kind, message)

    def _close_segment(self):
        self._cur = None
        self._bindings = {}

    def _frame(self, fr):
        t = fr.type
        if t in _FILE_SCOPE and fr.stream_id:
            self._note(fr.offset, "ignored-stream-id",
                       f"{FrameType(t).name} frame carries stream_id {fr.stream_id}; ignored")
        if t == FrameType.SIGN:
            self._note(fr.offset, "skipped-frame", "SIGN frame (reserved, undefined in v0.1) skipped")
            return
        if t not in FrameType._value2member_map_:
            self.unknown_frames.append((fr.offset, t))
            self._note(fr.offset, "skipped-frame", f"unknown frame type 0x{t:02x} skipped")
            return
        payload = fr.payload(self.buf)
        if t == FrameType.SYNC:
            return self._sync(fr, payload)
        if t == FrameType.END:
            return self._end(fr, payload)
        if t == FrameType.INDEX:
            return self._index(fr, payload)
        if self._cur is None:
            self._note(fr.offset, "outside-segment",
                       f"{FrameType(t).name} frame outside any segment (no SYNC before it); ignored")
            return
        if t in (FrameType.SCHEMA, FrameType.DATA) and fr.stream_id == 0:
            self._note(fr.offset, "no-stream-id", f"{FrameType(t).name} frame with stream_id 0; ignored")
            return
        {FrameType.SCHEMA: self._schema, FrameType.META: self._meta, FrameType.ATTACH: self._attach,
         FrameType.RUN: self._run, FrameType.DATA: self._data}[t](fr, payload)

    def _sync(self, fr, payload):
        self._bindings = {}
        try:
            sync = Sync.decode(payload)
        except MalformedPayloadError as exc:
            self._cur = None
            self._fail(MalformedPayloadError, fr.offset, "malformed", f"SYNC: {exc}; no segment starts here")
            return
        self._cur = Segment(fr.offset, sync.segment_seq, sync.wall_time_ns, self._end_since_segment)
        self._end_since_segment = False
        self.segments.append(self._cur)

    def _end(self, fr, payload):
        try:
            end = End.decode(payload)
        except MalformedPayloadError as exc:
            self._fail(MalformedPayloadError, fr.offset, "malformed", f"END: {exc}")
            return
        self.ends.append((fr.offset, end))
        self._end_since_segment = True
        self._close_segment()  # a writer closed here; the next segment must start with SYNC

    def _index(self, fr, payload):
        try:
            idx = Index.decode(payload)
        except MalformedPayloadError as exc:
            self._fail(MalformedPayloadError, fr.offset, "malformed", f"INDEX: {exc}")
            return
        self.indexes.append((fr.offset, idx, len(self.segments) - 1 if self.segments else None))

    def _stream_for(self, uuid, name):
        s = self.streams.get(uuid)
        if s is None:
            s = self.streams[uuid] = Stream(self, uuid, name or "")
        return s

    def _schema(self, fr, payload):
        sid, payload = fr.stream_id, bytes(payload)
        known = self._bindings.get(sid)
        if known is not None:
            if known.payload != payload:
                self._note(fr.offset, "schema-rebind",
                           f"a second, different SCHEMA for stream_id {sid} in this segment; the first stands")
            return
        # Every segment restates every schema: decode each distinct payload once.
        cached = self._schema_cache.get(payload)
        if cached is None:
            try:
                schema = Schema.decode(payload).validate()
                cached = (schema, schema.uuid, schema.name, None)
            except (MalformedPayloadError, InvalidSchemaError) as exc:
                cached = (None, *partial_identity(payload), str(exc))
            self._schema_cache[payload] = cached
        schema, uuid, name, error = cached
        stream = self._stream_for(uuid, name) if uuid is not None else None
        if schema is None:
            status, reason = "rejected", f"invalid schema: {error}"
        elif any(b.stream is stream for b in self._bindings.values()):
            status, reason = "duplicate", f"stream uuid already bound to another stream_id in this segment"
        elif stream.schema_payload is None:
            stream.schema, stream.schema_payload, stream.name = schema, payload, schema.name
            status, reason = "ok", ""
        elif stream.schema_payload == payload:
            status, reason = "ok", ""
        else:
            status, reason = "conflict", "schema conflict: differs from this stream's earlier schema"
        if status != "ok":
            who = f"stream {name!r}" if name is not None else f"stream_id {sid}"
            if status == "rejected":
                self._fail(InvalidSchemaError, fr.offset, "invalid-schema", f"{who}: {reason}")
            else:
                self._note(fr.offset, status, f"{who}: {reason}")
        elif len({k for k, _ in schema.meta}) != len(schema.meta):
            self._note(fr.offset, "duplicate-key", f"stream {name!r}: repeated SCHEMA meta key; the last wins")
        if status == "ok":
            stream.bound_segments.append(len(self.segments) - 1)
        self._bindings[sid] = _Binding(stream, status, reason, payload)

    def _meta(self, fr, payload):
        try:
            meta = Meta.decode(payload)
        except MalformedPayloadError as exc:
            self._fail(MalformedPayloadError, fr.offset, "malformed", f"META: {exc}")
            return
        for key in meta.duplicate_keys():
            self._note(fr.offset, "duplicate-key", f"META key {key!r} repeated; the last value wins")
        d = meta.as_dict()
        if fr.stream_id:
            b = self._bindings.get(fr.stream_id)
            if b is None or b.stream is None:
                self._note(fr.offset, "unbound", f"stream META for unbound stream_id {fr.stream_id}; ignored")
            elif b.status != "ok":
                self._note(fr.offset, "rejected", f"stream META for a rejected binding of stream_id {fr.stream_id}; ignored")
            else:
                b.stream.meta.update(d)
            return
        seg = self._cur
        if seg.data_seen and ("logb.session" in d or "logb.time_base" in d):
            self._note(fr.offset, "late-session-fact",
                       "logb.session/logb.time_base after the segment's first DATA frame; ignored")
            d = {k: v for k, v in d.items() if k not in ("logb.session", "logb.time_base")}
        if "logb.session" in d and seg.session_id is None:
            seg.session_id = d["logb.session"]
        if "logb.time_base" in d:
            if seg.time_base is None:
                seg.time_base = d["logb.time_base"]
            elif seg.time_base != d["logb.time_base"]:
                self._note(fr.offset, "time-base", "a second, different time base in one segment; ignored")
        if any(k.startswith("logb.anchor.") for k in d):
            try:
                anchor, problem = parse_anchor(d, fr.offset)
            except ValueError as exc:
                self._note(fr.offset, "malformed-anchor", f"anchor ignored: {exc}")
            else:
                if problem:
                    self._note(fr.offset, "malformed-anchor", problem)
                seg.anchors.append(anchor)
        else:
            seg.meta.update(d)

    def _attach(self, fr, payload):
        try:
            a = Attach.decode(payload)
        except MalformedPayloadError as exc:
            self._fail(MalformedPayloadError, fr.offset, "malformed", f"ATTACH: {exc}")
            return
        problem = None
        if a.codec not in Codec._value2member_map_:
            problem = f"unknown codec {a.codec}; data unavailable"
            self._note(fr.offset, "unsupported-codec", f"attachment {a.name!r}: {problem}")
        else:
            try:
                codecs.decompress(a.stored, a.codec, a.raw_size)
            except LogbError as exc:
                self._fail(MalformedPayloadError, fr.offset, "malformed", f"ATTACH {a.name!r}: {exc}")
                return
        self.attachments.append(Attachment(fr.offset, a.name, a.media_type, a.codec, a.raw_size, a.stored, problem))

    def _run(self, fr, payload):
        try:
            run = Run.decode(payload)
        except MalformedPayloadError as exc:
            self._fail(MalformedPayloadError, fr.offset, "malformed", f"RUN: {exc}")
            return
        if len({k for k, _ in run.params}) != len(run.params):
            self._note(fr.offset, "duplicate-key", f"RUN {run.run_id}: repeated parameter key; the last wins")
        self._cur.runs.append((fr.offset, run))

    def _data(self, fr, payload):
        b = self._bindings.get(fr.stream_id)
        self._cur.data_seen = True
        if b is None:
            self._note(fr.offset, "unbound", f"DATA for stream_id {fr.stream_id}, which no SCHEMA in this segment binds")
            return
        try:
            header = DataHeader.decode(payload)
        except MalformedPayloadError as exc:
            if b.stream is not None:
                b.stream.reject(fr.offset, 0, str(exc))
            return
        self._data_offsets[fr.offset] = (b.stream, header)
        if b.status != "ok":
            if b.stream is not None:
                b.stream.reject(fr.offset, header.record_count, b.reason)
            else:
                self._note(fr.offset, "rejected", f"DATA for stream_id {fr.stream_id}: {b.reason}")
            return
        stream = b.stream
        reason = _precheck(stream.schema, header, fr.payload_len)
        if reason:
            if self.strict:
                raise {"codec": UnsupportedCodecError, "filter": UnsupportedFilterError}.get(
                    reason.split()[1], MalformedPayloadError)(f"{reason} (offset {fr.offset})")
            stream.reject(fr.offset, header.record_count, reason)
            return
        key = (len(self.segments), fr.stream_id)
        last, closed = self._run_state.get(key, (None, set()))
        if last is not None and header.run_id != last:
            if header.run_id in closed:
                self._note(fr.offset, "run-order",
                           f"stream {stream.name!r}: run {header.run_id} reappears after another run in one segment")
            closed.add(last)
        self._run_state[key] = (header.run_id, closed)
        stream.frames.append(FrameLoc(fr.offset, fr.payload_len, header, len(self.segments) - 1))

    # after the scan
    def _resolve_sessions(self):
        prev = None
        for i, seg in enumerate(self.segments):
            cur = self.sessions[-1] if self.sessions else None
            if cur is None:
                new = True
            else:
                new = ((seg.session_id is not None and prev.session_id is not None
                        and seg.session_id != prev.session_id)
                       or seg.end_before or seg.seq == 0 or seg.seq < prev.seq)
                if not new and seg.seq == prev.seq:
                    self._note(seg.offset, "segment-seq", f"segment_seq {seg.seq} repeated")
            if new:
                cur = Session(len(self.sessions), seg.session_id, seg.offset)
                self.sessions.append(cur)
            elif cur.id is None:
                cur.id = seg.session_id
            seg.session = cur.index
            cur.segments.append(i)
            self._merge_segment(cur, seg)
            prev = seg
        for off, _end in self.ends:
            for s in reversed(self.sessions):
                if s.first_offset < off:
                    s.ended = True
                    break

    def _merge_segment(self, session, seg):
        if seg.time_base is not None:
            if session.time_base is None:
                session.time_base = seg.time_base
                if seg.time_base not in TIME_BASES:
                    self._note(seg.offset, "time-base", f"unknown time base {seg.time_base!r}: undated")
            elif session.time_base != seg.time_base:
                self._note(seg.offset, "time-base",
                           f"segment declares time base {seg.time_base!r}, its session {session.time_base!r}; ignored")
        session.meta.update(seg.meta)
        for anchor in seg.anchors:
            if any(a.axis_ns == anchor.axis_ns for a in session.anchors):
                self._note(anchor.offset, "anchor", "anchor at an axis time already anchored; the first stands")
                continue
            session.anchors.append(anchor)
            ordered = sorted(session.anchors, key=lambda a: a.axis_ns)
            i = ordered.index(anchor)
            if (i and ordered[i - 1].wall_ns > anchor.wall_ns) or (
                    i + 1 < len(ordered) and ordered[i + 1].wall_ns < anchor.wall_ns):
                self._note(anchor.offset, "anchor", "anchor wall time goes backwards; used as given")
        for off, run in seg.runs:
            known = session.runs.get(run.run_id)
            if known is None:
                session.runs[run.run_id] = run
            elif known != run:
                self._note(off, "run-restated", f"RUN {run.run_id} restated with different parameters; the first stands")

    def _check_index_and_end(self):
        sync_offsets = {s.offset for s in self.segments}
        index_offsets = {off for off, _, _ in self.indexes}
        for off, end in self.ends:
            if end.index_back_offset and off - end.index_back_offset not in index_offsets:
                self._note(off, "end", "END points to no INDEX frame")
            if off - end.session_bytes not in sync_offsets:
                self._note(off, "end", "END session_bytes does not lead to a SYNC frame (session start lost?)")
        self.index_valid = {}
        for off, idx, seg in self.indexes:
            problem = self._index_problem(off, idx, seg)
            self.index_valid[off] = problem is None
            if problem:
                self._note(off, "corrupt-index", f"INDEX disagrees with the frames: {problem}; the frames stand")

    def _index_problem(self, off, idx, seg):
        """Why an INDEX disagrees with the frames it covers (SPEC §9.1), or None."""
        if seg is None:
            return "no segment precedes it"
        session = self.sessions[self.segments[seg].session]
        start = session.first_offset
        covered = {}
        for uuid, entries in idx.streams:
            stream = self.streams.get(uuid)
            if stream is None or stream.schema is None:
                continue  # an unreadable stream's entries mean nothing
            last = -1
            for e in entries:
                target = off - e.back_offset
                if not start <= target < off or target <= last:
                    return "an entry points outside its session or out of file order"
                last = target
                found = self._data_offsets.get(target)
                if (found is None or found[0] is not stream or found[1].record_count != e.record_count
                        or found[1].run_id != e.run_id):
                    return f"no matching DATA frame at offset {target}"
                s = stream.schema
                if (s.axis_mode != AxisMode.explicit or not e.record_count) and \
                        found[1].axis_base_raw != e.first_axis_raw:
                    return f"first_axis of the frame at offset {target}"
                covered[target] = e.first_axis_raw
        for target, (stream, _h) in self._data_offsets.items():
            if (start <= target < off and stream is not None and stream.schema is not None
                    and target not in covered and self.segments[self._segment_at(target)].session == session.index):
                return f"the DATA frame at offset {target} is missing"
        self._index_axes.update(covered)
        return None

    def _index_disagrees(self, data_offset):
        for off, idx, _seg in self.indexes:
            if self.index_valid.get(off):
                self.index_valid[off] = False
                self._note(off, "corrupt-index",
                           f"INDEX first_axis disagrees with the DATA frame at {data_offset}; the frames stand")

    def _segment_at(self, offset):
        lo, hi = 0, len(self.segments) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.segments[mid].offset <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo


def _precheck(schema, header, payload_len):
    """Reasons to reject a DATA frame that its 28-byte header already shows."""
    if header.codec not in Codec._value2member_map_:
        return f"unknown codec {header.codec}"
    if header.filter not in Filter._value2member_map_:
        return f"unknown filter {header.filter}"
    n, size = header.record_count, schema.record_size
    minimum = n * size + 4 * n * len(schema.variable_fields)
    if header.raw_size < minimum or (not schema.variable_fields and header.raw_size != minimum):
        return f"raw_size {header.raw_size} does not fit {n} records of {size} bytes"
    if not size and not schema.variable_fields and n > ZERO_SIZE_RECORD_LIMIT:
        return f"{n} zero-size records beyond the reader limit of {ZERO_SIZE_RECORD_LIMIT}"
    if header.codec == Codec.none and header.raw_size != payload_len - 28:
        return f"raw_size {header.raw_size} but {payload_len - 28} bytes stored"
    return None


def open(src, **kwargs):  # noqa: A001 - mirrors builtins.open for this format
    return LogbFile(src, **kwargs)

"""The CPython writer (SPEC §3, §8, §9): append-only, never seeks, so the sink
may be a pipe. Segments rotate by size and by time and each restates every
schema, run and the time base; close() writes an INDEX and an END. With
bind_used, for bulk conversion: each segment is built in memory and written
whole, binding only the streams with frames in it."""

import os
import struct
import time
import uuid as uuidlib

import numpy as np

from . import codecs, fields, limits
from .batch import axis_column, check_range
from .errors import EncodeError, InvalidDataError
from .framing import encode_file_header
from .frames import Attach, Data, DataHeader, End, Index, IndexEntry, Meta, Run, SchemaFrame, Sync, pack_axis
from .schema import Schema
from .tables import AxisMode, Codec, Filter

_U32 = struct.Struct("<I")


def encode_records(schema, columns, count):
    """The decoded records region: fixed portions, then the tails."""
    size = schema.record_size
    fixed = np.zeros((count, size), np.uint8)
    tails = []
    for f in schema.fields:
        if not f.variable:
            values = columns[f.name]
            if len(values) != count:
                raise EncodeError(f"column {f.name!r} has {len(values)} values, expected {count}")
            try:
                fields.pack(fixed, f, values)
            except ValueError as exc:  # values the field cannot hold
                raise EncodeError(str(exc)) from None
    var = schema.variable_fields
    if var:
        cols = [columns[f.name] for f in var]
        for i in range(count):
            for col in cols:
                v = col[i]
                data = v.encode("utf-8") if isinstance(v, str) else bytes(v)
                tails.append(_U32.pack(len(data)))
                tails.append(data)
    return fixed.tobytes(), b"".join(tails)


class StreamWriter:
    def __init__(self, writer, stream_id, schema, codec, transpose, level=None):
        self.level = level
        self.writer = writer
        self.stream_id = stream_id
        self.schema = schema
        try:
            self.codec = Codec(codec)
        except ValueError:
            raise EncodeError(f"unknown codec {codec!r}") from None
        self.filter = Filter.transpose if transpose else Filter.none
        self.index = []  # (absolute position, first_axis_raw, record_count, run_id)
        self.schema_frame = _frame_of(SchemaFrame(schema), stream_id)  # every segment restates it: it must encode
        self.column_bytes = limits.column_bytes(schema)  # what a reader budgets per decoded record

    def write_batch(self, columns, axis_base=0, run_id=0, count=None):
        """Write one DATA frame of raw values (one array-like per field).
        `count` is needed only for a stream without fields (records of nothing
        but their axis)."""
        s = self.schema
        if count is None:
            count = len(next(iter(columns.values()))) if columns else 0
        fixed, tail = encode_records(s, columns, count)
        self._write(fixed, tail, count, axis_base, run_id)

    def write_records(self, records, axis_base=0, run_id=0, tails=b""):
        """Write one DATA frame of pre-built records: an (N, record_size) uint8
        array (or bytes of N whole records) laid out per the schema, plus the
        encoded tail region when the schema has variable-length fields."""
        s = self.schema
        fixed = np.ascontiguousarray(records, np.uint8).tobytes() if not isinstance(records, bytes) else records
        if s.record_size:
            if len(fixed) % s.record_size:
                raise EncodeError(f"{len(fixed)} bytes is not a whole number of {s.record_size}-byte records")
            count = len(fixed) // s.record_size
        else:
            raise EncodeError("a stream with zero-size records takes write_batch(..., count=N)")
        if s.variable_fields and not tails:
            raise EncodeError("this schema has variable-length fields: pass their tail region")
        self._write(fixed, tails, count, axis_base, run_id)

    def _write(self, fixed, tail, count, axis_base, run_id):
        s = self.schema
        # The whole frame is checked and encoded before anything is written, so
        # a refused batch leaves the file as it was. A time axis that overflows
        # i64 makes a frame invalid (SPEC §5.2): refused here rather than
        # emitted for every reader to reject.
        try:
            base_raw = pack_axis(axis_base, s.is_time)
            header = DataHeader(base_raw, count, run_id, self.codec, self.filter, len(fixed) + len(tail))
            first = base_raw  # INDEX first_axis: the first record's axis (axis_base when implicit or empty)
            if count and s.axis_mode == AxisMode.explicit:
                rows = np.frombuffer(fixed, np.uint8, count * s.record_size).reshape(count, s.record_size)
                first = pack_axis(axis_column(s, header, rows)[0].item(), s.is_time)
            elif count and s.is_time:
                check_range(int(axis_base) + (count - 1) * int(s.axis_step))
        except (InvalidDataError, struct.error) as exc:
            raise EncodeError(f"stream {s.name!r}: {exc}") from None
        # Every reader may refuse a frame past these (SPEC §8.3): split the batch instead.
        if header.raw_size > limits.FRAME_RAW_MIN or count * self.column_bytes > limits.FRAME_COLUMNS_MIN:
            raise EncodeError(f"stream {s.name!r}: a DATA frame of {count} records ({header.raw_size} bytes) is "
                              f"beyond the reader limits (SPEC §8.3); write smaller batches")
        if self.filter == Filter.transpose:
            fixed = codecs.transpose(fixed, count, s.record_size)
        frame = _frame_of(Data(header, codecs.compress(fixed + tail, self.codec, self.level)), self.stream_id)
        self.writer._before_data(self)
        self.writer._emit(frame, self, (first, count, run_id))


class Writer:
    """Write a Logb file to a path or any object with write().

    time_base: "unix", "monotonic", "relative" or None (unknown).
    segment_bytes / segment_seconds: rotate segments when either is reached
    (a segment ends at most one frame past segment_bytes).
    bind_used: hold each segment in memory and write it whole when it ends
    (SYNC, the SCHEMAs of only the streams with DATA or META in it, RUNs,
    session META, its frames), so a segment restates no schema it does not
    use. A crash then loses the segment being built: for bulk conversion
    (`logb import`), not for live recording.
    """

    def __init__(self, sink, time_base="unix", session=None, clock_source="clock_gettime(CLOCK_REALTIME)",
                 segment_bytes=8 << 20, segment_seconds=60.0, meta=None, wall_clock=time.time_ns,
                 monotonic=time.monotonic, header=True, bind_used=False):
        if isinstance(sink, (str, os.PathLike)):
            self._sink, self._owns = open(sink, "wb"), True
        else:
            self._sink, self._owns = sink, False
        self.session = session or os.urandom(16).hex()
        self.time_base = time_base
        self.clock_source = clock_source
        self.extra_meta = dict(meta or {})
        self.segment_bytes = segment_bytes
        self.segment_seconds = segment_seconds
        self._wall = wall_clock
        self._mono = monotonic
        self._pos = 0
        self._seq = -1
        self._segment_start = None
        self._session_start = None
        self._segment_opened_at = 0.0
        self._streams = []
        self._runs = []
        self._closed = False
        self.bind_used = bind_used
        self._held = None  # bind_used: the open segment's (frame, stream, index entry), not yet written
        self._bound = {}  # bind_used: stream_id -> StreamWriter with frames in the open segment
        self._held_size = 0  # bind_used: the open segment's size once written
        self._sync = b""  # bind_used: the open segment's SYNC frame
        if header:
            self._write(encode_file_header())

    # plumbing
    def _write(self, data):
        self._sink.write(data)
        self._pos += len(data)

    def _emit(self, frame, stream=None, entry=None):
        """Write one encoded frame, or hold it in the open segment (bind_used).
        stream: the StreamWriter a DATA or stream META frame belongs to; entry:
        a DATA frame's INDEX entry (first_axis_raw, record_count, run_id)."""
        if self._held is not None:
            if stream is not None and stream.stream_id not in self._bound:
                self._bound[stream.stream_id] = stream
                self._held_size += len(stream.schema_frame)
            self._held.append((frame, stream, entry))
            self._held_size += len(frame)
            return
        if entry is not None:
            stream.index.append((self._pos, *entry))
        self._write(frame)

    def _session_meta(self):
        pairs = [("logb.session", self.session), ("logb.clock_source", self.clock_source)]
        if self.time_base is not None:
            pairs.insert(0, ("logb.time_base", self.time_base))
        pairs += list(self.extra_meta.items())
        return Meta(tuple(pairs))

    def _start_segment(self):
        self._seal()
        self._seq += 1
        self._segment_start = self._pos
        if self._session_start is None:
            self._session_start = self._pos
        self._segment_opened_at = self._mono()
        sync = Sync(self._seq, self._wall() if self.time_base == "unix" else 0).frame()
        if self.bind_used:
            self._held, self._bound, self._sync = [], {}, sync
            self._held_size = len(sync) + sum(len(run.frame()) for run in self._runs)
            self._held_size += len(self._session_meta().frame())
            return
        self._emit(sync)
        for sw in self._streams:
            self._emit(sw.schema_frame)
        for run in self._runs:
            self._emit(run.frame())
        self._emit(self._session_meta().frame())

    def _seal(self):
        """bind_used: write the open segment. A segment without stream frames
        (a file of no records) binds every stream, so the file still names them."""
        if self._held is None:
            return
        bound = [self._bound[k] for k in sorted(self._bound)] or self._streams
        head = [self._sync, *(sw.schema_frame for sw in bound), *(run.frame() for run in self._runs),
                self._session_meta().frame()]
        pos = self._pos + sum(map(len, head))
        for frame, stream, entry in self._held:
            if entry is not None:
                stream.index.append((pos, *entry))
            pos += len(frame)
        self._write(b"".join(head + [frame for frame, _, _ in self._held]))
        self._held = None

    def _segment_size(self):
        return self._held_size if self._held is not None else self._pos - self._segment_start

    def _before_data(self, stream=None):
        """Before a DATA, META or ATTACH frame (of `stream`, if stream-scoped):
        start a segment when none is open or the open one is full."""
        if self._closed:
            raise EncodeError("writer is closed")
        binds = 0
        if self._held is not None and stream is not None and stream.stream_id not in self._bound:
            binds = len(stream.schema_frame)  # the SCHEMA its first frame in the segment brings
        if (self._segment_start is None
                or self._segment_size() + binds >= self.segment_bytes
                or self._mono() - self._segment_opened_at >= self.segment_seconds):
            self._start_segment()

    # public API
    def add_stream(self, schema, codec=Codec.zstd, transpose=True, level=None):
        """Declare a stream; its SCHEMA goes into this and every later segment.
        `level` is the codec's compression level (zstd 1..22, deflate 0..9)."""
        if not isinstance(schema, Schema):
            raise EncodeError("add_stream takes a Schema")
        schema.validate()
        if any(sw.schema.uuid == schema.uuid for sw in self._streams):
            raise EncodeError(f"stream uuid {schema.uuid.hex()} declared twice")
        sw = StreamWriter(self, len(self._streams) + 1, schema, codec, transpose, level)
        self._streams.append(sw)
        if self._segment_start is not None and self._held is None:
            self._emit(sw.schema_frame)
        return sw

    def add_run(self, run_id, index=0, params=()):
        run = Run(run_id, index, tuple((str(k), str(v)) for k, v in dict(params).items()))
        frame = _frame_of(run)  # every segment restates it: it must encode
        self._runs.append(run)
        if self._held is not None:  # restated at the head of the open segment when it is written
            self._held_size += len(frame)
        elif self._segment_start is not None:
            self._emit(frame)
        return run

    def meta(self, pairs, stream=None):
        """A META frame: file-scope, or stream-scope when `stream` is a StreamWriter."""
        self._before_data(stream)
        items = tuple((str(k), str(v)) for k, v in dict(pairs).items())
        self._emit(Meta(items).frame(stream.stream_id if stream else 0), stream)

    def anchor(self, axis_ns, wall_ns, source="manual", uncertainty_ns=None):
        """Bind the axis clock to wall time (G7): written after the records it dates."""
        pairs = {"logb.anchor.axis_ns": int(axis_ns), "logb.anchor.wall_ns": int(wall_ns),
                 "logb.anchor.source": source}
        if uncertainty_ns is not None:
            pairs["logb.anchor.uncertainty_ns"] = int(uncertainty_ns)
        self.meta(pairs)

    def attach(self, name, media_type, data, codec=Codec.zstd):
        self._before_data()
        attachment = Attach(name, media_type, int(codec), len(data), codecs.compress(data, codec))
        self._emit(attachment.frame())

    def close(self, index=True):
        """Write INDEX (optional) and END; close the sink if this writer opened it."""
        if self._closed:
            return
        if self._segment_start is None:
            self._start_segment()
        self._seal()
        index_pos = None
        if index:
            streams = []
            index_pos = self._pos
            for sw in self._streams:
                entries = tuple(IndexEntry(index_pos - pos, base, n, run) for pos, base, n, run in sw.index)
                streams.append((sw.schema.uuid, entries))
            self._emit(Index(tuple(streams)).frame())
        end_pos = self._pos
        end = End(end_pos - index_pos if index_pos is not None else 0, end_pos - self._session_start)
        self._emit(end.frame())
        self._closed = True
        flush = getattr(self._sink, "flush", None)
        if flush:
            flush()
        if self._owns:
            self._sink.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _frame_of(frame, stream_id=0):
    """frame.frame(stream_id), refusing a value its fields cannot hold (struct's
    range errors) as the caller's EncodeError."""
    try:
        return frame.frame(stream_id)
    except struct.error as exc:
        raise EncodeError(f"{type(frame).__name__} frame: {exc}") from None


def stream_uuid(device, name):
    """UUIDv5 over (device, stream name): equal across files of one device (SPEC §6.6)."""
    return uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"logb:{device}/{name}").bytes

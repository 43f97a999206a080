"""Reading a Logb file (SPEC §3–§10): `LogbFile`, its `Stream`s and their
`Columns` — the package's reading API.

`LogbFile(src)` scans the input once, checking every frame's CRC and parsing
the small control frames, and keeps only where each DATA frame is; records are
decompressed and decoded when a stream's columns are asked for. Each frame
type is taken by its row of FRAME_RULES (one decode, one handler); segments
and writer sessions are segments.py's, the INDEX and END checks seal.py's.
"""

import functools
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from . import batch as batchmod
from . import codecs, convert
from . import fields as fieldsmod
from .batch import decode_batch, frame_axis_span, header_problem
from .errors import (
    InvalidDataError,
    InvalidSchemaError,
    LogbError,
    MalformedPayloadError,
    NotFoundError,
    UnsupportedCodecError,
    UnsupportedFilterError,
    did_you_mean,
)
from .limits import Budget
from .frames import Attach, DataHeader, End, Index, Meta, Run, Sync, new_data_header, pack_axis
from .framing import FRAME_HEADER_SIZE, FRAME_OVERHEAD
from .scan import FrameRef, Report, check_header, iter_frames, iter_source_frames
from .schema import Schema, partial_identity
from .seal import DataTable, end_problems, index_problem
from .segments import Segment, resolve_sessions
from .source import SourceReader, open_source
from .tables import FILE, FRAME_SCOPE, LOST_BUFFER, LOST_CONTROLLER, LOST_INVALID, STREAM, AxisMode, Codec, \
    DataType, FrameType
from .timebase import UNDATED, WallTime

# Columns.decoded preallocates when the decoded columns would take at most
# this many bytes, or this multiple of the file size (else frame by frame).
_PREALLOC_MIN = 64 << 20
_PREALLOC_RATIO = 64

@dataclass(slots=True)
class FrameLoc:
    """Where an accepted DATA frame is, and its 28-byte header (slotted: one per DATA frame)."""

    offset: int
    payload_len: int
    header: DataHeader
    segment: int
    dropped: bool = False  # rejected when decoded (Stream._drop)

    @property
    def stored_slice(self):
        start = self.offset + 8 + 28
        return start, self.offset + 8 + self.payload_len


class DataBlock:
    """Accepted DATA frames of one stream, one after another in a run of the scan, that
    repeat the shape of the frame before them (LogbFile._frames_run): the scan kernel's
    rows for them (`table`, FRAME_DTYPE; `heads`, HEAD_DTYPE), and no object per frame
    until one is asked for (`frame_locs`). They share every header field but axis_base
    (and, compressed, the payload length)."""

    __slots__ = ("table", "heads", "segment", "raw_size", "record_count", "run_id", "codec", "filter")

    def __init__(self, table, heads, segment):
        self.table, self.heads, self.segment = table, heads, segment
        self.raw_size, _axis, self.record_count, self.run_id, self.codec, self.filter, _r, _p = heads[0].tolist()

    def __len__(self):
        return len(self.table)

    @property
    def offsets(self):
        return self.table["offset"]

    @property
    def end(self):
        """Where the block's last frame ends."""
        last = self.table[-1]
        return int(last["offset"]) + FRAME_OVERHEAD + int(last["payload_len"])

    def frame_locs(self):
        count, run_id, codec, filt, raw_size, segment = (self.record_count, self.run_id, self.codec, self.filter,
                                                         self.raw_size, self.segment)
        return [FrameLoc(offset, plen, new_data_header(axis, count, run_id, codec, filt, raw_size), segment)
                for offset, plen, axis in zip(self.table["offset"].tolist(), self.table["payload_len"].tolist(),
                                              self.heads["axis_base"].tolist())]


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


_LOST_KEYS = {LOST_CONTROLLER, LOST_BUFFER, LOST_INVALID}
_DATA = int(FrameType.DATA)
_HEADER_PROBLEMS_HELD = 1024


def _like_after(table, heads):
    """(the rows of a scan kernel run that are not like the row before them, and for
    each how many rows right after it are), where a row is like the one before it when
    both are DATA frames with a parsed header, of one stream_id, of one shape: raw_size,
    record_count, run_id, codec, filter, and for codec none the payload length."""
    n = len(table)
    if n < 2:
        return np.arange(n), [0] * n
    data = (table["type"] == _DATA) & (table["stream_id"] != 0) & (heads["present"] != 0)
    like = data[1:] & data[:-1]
    like &= table["stream_id"][1:] == table["stream_id"][:-1]
    for column in (heads["raw_size"], heads["record_count"], heads["run_id"], heads["codec"], heads["filter"],
                   np.where(heads["codec"] == 0, table["payload_len"], 0)):
        like &= column[1:] == column[:-1]
    at = np.flatnonzero(np.concatenate(([True], ~like)))
    return at, (np.diff(at, append=n) - 1).tolist()


class Stream:
    """One logical stream (one stream_uuid) across segments, sessions and files."""

    def __init__(self, owner, uuid, name):
        self._file = owner
        self.uuid = uuid
        self.name = name
        self.schema = None  # the canonical (first valid) schema
        self.schema_payload = None
        self._list = []  # accepted DATA frames (FrameLoc) but those still in _blocks, file order
        self._blocks = []  # (position in _list, DataBlock): frames not yet made FrameLocs, file order
        self._dropped = 0  # frames marked dropped but still in _list
        self.rejected = 0
        self.rejections = []
        self.meta = {}
        self._counters = []  # (Segment, {loss counter key: int}) of each stream META frame with one
        self.bound_segments = []  # indices of the segments whose SCHEMA bound this stream (status ok)

    def __repr__(self):
        return f"<Stream {self.name!r} {self.uuid.hex()} {self.records} records>"

    @property
    def frames(self):
        """The accepted DATA frames (FrameLoc), file order."""
        self._compact()
        return self._frames

    @property
    def _frames(self):
        """Every accepted DATA frame as a FrameLoc (the blocks made FrameLocs now), dropped ones too."""
        if self._blocks:
            out, at = [], 0
            for pos, block in self._blocks:
                out += self._list[at:pos]
                out += block.frame_locs()
                at = pos
            out += self._list[at:]
            self._list[:] = out  # in place: the scan may hold this list
            self._blocks = []
        return self._list

    @_frames.setter
    def _frames(self, frames):
        self._list, self._blocks = frames, []

    def _compact(self):
        """Leave out the dropped frames (once after any number of rejections, not once each)."""
        if not self._dropped:
            return
        if self._blocks:  # each block's position counts the frames kept before it
            kept = [0]
            for fl in self._list:
                kept.append(kept[-1] + (not fl.dropped))
            self._blocks = [(kept[pos], block) for pos, block in self._blocks]
        self._list = [fl for fl in self._list if not fl.dropped]
        self._dropped = 0

    def _pieces(self):
        """The accepted frames, file order, as lists of FrameLocs and DataBlocks (nothing made)."""
        self._compact()
        at = 0
        for pos, block in self._blocks:
            if pos > at:
                yield self._list[at:pos]
            yield block
            at = pos
        if at < len(self._list):
            yield self._list[at:]

    def _last_end(self):
        """Where the stored bytes of the last accepted frame end (0: there is none)."""
        self._compact()
        if self._blocks and self._blocks[-1][0] == len(self._list):
            last = self._blocks[-1][1].table[-1]
            return int(last["offset"]) + FRAME_HEADER_SIZE + int(last["payload_len"])
        return self._list[-1].stored_slice[1] if self._list else 0

    def _add_block(self, block):
        self._blocks.append((len(self._list), block))

    @property
    def records(self):
        self._compact()
        return (sum(f.header.record_count for f in self._list)
                + sum(len(block) * block.record_count for _pos, block in self._blocks))

    @property
    def lost(self):
        """The loss counters (SPEC G13: logb.lost.controller, .buffer, .invalid) the file states
        for this stream: per key, the last value of each writer session, summed over sessions
        ({} when it states none)."""
        last = {}
        for seg, counters in self._counters:
            for key, value in counters.items():
                last[(seg.session, key)] = value
        total = {}
        for (_, key), value in last.items():
            total[key] = total.get(key, 0) + value
        return total

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

    def batches(self, window=None, fields=None, wide=False):
        """Yield (FrameLoc, Batch) in file order, decoding each frame now: memory
        bounded by one frame, whatever the file. A frame that fails to decode is
        rejected (reported) and skipped. `wide`: 64-bit integer columns
        (fields.int_dtype) instead of native widths."""
        if self.schema is None:
            return
        for fl in self._frames_in(window):
            batch = self.decode_frame(fl, fields, wide=wide)
            if batch is None:
                continue
            if window is not None:
                keep = (batch.axis >= window[0]) & (batch.axis <= window[1])
                if not keep.all():
                    batch.raw = {k: v[keep] for k, v in batch.raw.items()}
                    batch.axis = batch.axis[keep]
                    batch.count = int(keep.sum())
            yield fl, batch

    def decode_frame(self, fl, fields=None, out=None, wide=False):
        """Decode one accepted frame; None (and the frame rejected) if it fails.
        `out`: preallocated column slices to decode into (batch.decode_batch)."""
        start, end = fl.stored_slice
        try:
            # a view of the stored bytes (or, unheld, one read of them); nothing decoded keeps it
            stored = self._file._stored(start, end)
            batch = decode_batch(self.schema, fl.header, stored, fields, out, wide)
        except (LogbError, ValueError) as exc:
            if self._file.strict:  # SPEC §10.5: a strict reader raises for a DATA frame it rejects
                raise MalformedPayloadError(f"DATA frame at offset {fl.offset}: {exc}") from exc
            self._drop(fl, str(exc))
            return None
        if batch.count:
            self._check_index(fl, batch.axis[0])
        return batch

    def _check_index(self, fl, first_axis):
        """Compare a decoded frame's first axis value with what an INDEX claims for it."""
        claimed = self._file._index_axes.get(fl.offset)
        if claimed is not None and pack_axis(first_axis, self.schema.is_time) != claimed:
            self._file._index_disagrees(fl.offset)

    def _drop(self, fl, reason):
        if not fl.dropped:
            fl.dropped = True
            self._dropped += 1
            self.reject(fl.offset, fl.header.record_count, reason)

    def columns(self, fields=None, window=None, wide=False):
        """Decode to numpy columns. `window=(lo, hi)` in axis units (ticks for
        time axes) reads only frames that can overlap it. Integer columns are at
        their fields' native widths (uint8..uint64, int8..int64: fields.int_dtype);
        `wide=True` gives uint64 / int64 columns."""
        if self.schema is None:
            raise InvalidSchemaError(
                f"stream {self.name!r} has no valid schema; its {self.rejected} records cannot be decoded")
        return Columns.decoded(self, fields, window, wide)

    def session_of(self, fl):
        return self._file.sessions[self._file.segments[fl.segment].session]


class Columns:
    """A stream's records as columns: raw values, physical values, axis, runs.

    `run_id` and `session` (a value per record) are constant over each
    frame's records: they are kept as one (count, run_id, session) per frame
    and spread out when first read."""

    def __init__(self, stream, parts, wide=False):
        self.stream = stream
        self.schema = stream.schema
        names = [f.name for f in self.schema.fields]
        if parts:
            names = [n for n in names if n in parts[0][1].raw]
        self.raw = {n: _concat([b.raw[n] for _, b in parts], self.schema.field_named(n), wide) for n in names}
        axis_dtype = np.int64 if self.schema.is_time else np.float64
        self.axis = np.concatenate([b.axis for _, b in parts]) if parts else np.zeros(0, axis_dtype)
        self._set_spans([(b.count, b.run_id, stream.session_of(fl).index) for fl, b in parts])
        self._phys = {}

    def _set_spans(self, spans):
        """[(records, run_id, session index)] of each frame, in record order."""
        self._spans = (np.array([n for n, _, _ in spans], np.int64), np.array([r for _, r, _ in spans], np.uint32),
                       np.array([s for _, _, s in spans], np.int32))
        self._run_id = self._session = None

    @property
    def run_id(self):
        """The run_id of each record (uint32)."""
        if self._run_id is None:
            self._run_id = np.repeat(self._spans[1], self._spans[0])
        return self._run_id

    @property
    def session(self):
        """The index into LogbFile.sessions of each record's writer session (int32)."""
        if self._session is None:
            self._session = np.repeat(self._spans[2], self._spans[0])
        return self._session

    @classmethod
    def decoded(cls, stream, fields=None, window=None, wide=False):
        """Every frame of `stream` (those that can overlap `window`) decoded
        straight into columns preallocated for the frames' record counts: no
        per-frame arrays to concatenate, so the peak is the result plus one
        frame's scratch. Records outside `window` are compacted away in place
        and the columns shrunk in place at the end (ndarray.resize: realloc)."""
        schema = stream.schema
        frames = stream._frames_in(window)
        total = sum(fl.header.record_count for fl in frames)
        names = [f.name for f in schema.fields if fields is None or f.name in fields]
        shapes = {}
        per_record = 16  # axis, and run_id and session once read
        for name in names:
            dtype, extra = fieldsmod.column_dtype(schema.field_named(name), wide)
            shapes[name] = dtype, extra
            per_record += dtype.itemsize * int(np.prod(extra, dtype=np.int64))
        # Record counts are only claims until each frame decodes: preallocate
        # for what a real file can hold, else decode frame by frame (a hostile
        # header then costs a rejected frame, not a huge allocation).
        if not total or total * per_record > max(_PREALLOC_MIN, _PREALLOC_RATIO * stream._file.report.size):
            return cls(stream, list(stream.batches(window, fields, wide)), wide)
        raw = {name: np.empty((total, *extra), dtype) for name, (dtype, extra) in shapes.items()}
        axis = np.empty(total, np.int64 if schema.is_time else np.float64)
        columns = [*raw.values(), axis]
        spans = []  # (records kept, run_id, session) of each frame decoded
        # Frames are decoded a run at a time, one kernel call each (batch.decode_run): uncompressed
        # ones of a held file where they lie, others decompressed (RUN_BYTES at a time); a frame
        # the run cannot take, or whose bytes do not decompress, alone (decode_frame).
        fast = batchmod.run_plan(schema, fields, wide)
        if fast is not None and any(extra and fieldsmod.as_items(raw[f.name]) is None for f, _, _, extra in fast.order):
            fast = None
        held = stream._file._held

        def place(fl, at, pos, n):
            """The frame decoded into rows [at, at + n): its records in `window`
            moved down to `pos`, its run and session noted. The rows now filled."""
            kept = n
            if window is not None:
                keep = (axis[at:at + n] >= window[0]) & (axis[at:at + n] <= window[1])
                if not keep.all() or at != pos:
                    kept = int(keep.sum())
                    for col in columns:
                        col[pos:pos + kept] = col[at:at + n][keep]
            spans.append((kept, fl.header.run_id, stream.session_of(fl).index))
            return pos + kept

        def flush(pos):
            """Decode the pending run at `pos`; the rows then filled."""
            m = sum(fl.header.record_count for fl in run)
            batchmod.decode_run(schema, fast, records, [fl.header for fl in run],
                                {k: v[pos:pos + m] for k, v in raw.items()}, axis[pos:pos + m])
            at = pos
            for fl in run:
                n = fl.header.record_count
                if n:
                    stream._check_index(fl, axis[at])
                pos = place(fl, at, pos, n)
                at += n
            run.clear()
            records.clear()
            return pos

        pos, run, records, owned = 0, [], [], 0  # the pending run: its frames, their records, the bytes it holds
        for fl in frames:
            h = fl.header
            if fast is not None and batchmod.joins_run(schema, fast, h, fl.payload_len):
                if owned + h.raw_size > batchmod.RUN_BYTES and run:
                    pos, owned = flush(pos), 0
                try:
                    records.append(batchmod.frame_records(h, stream._file._stored(*fl.stored_slice)))
                except (LogbError, ValueError):
                    pass  # decoded alone below, which rejects it as it would have
                else:
                    run.append(fl)
                    owned += h.raw_size if held is None or h.codec != Codec.none else 0
                    continue
            if run:
                pos, owned = flush(pos), 0
            n = fl.header.record_count
            out = ({k: v[pos:pos + n] for k, v in raw.items()}, axis[pos:pos + n])
            ok = stream.decode_frame(fl, fields, out, wide) is not None
            del out  # no view of the columns may outlive the loop: they are resized below
            if ok:  # else rejected (reported); the next frame reuses the slots
                pos = place(fl, pos, pos, n)
        if run:
            pos = flush(pos)
        if not pos:
            return cls(stream, [], wide)
        if pos != total:
            for col in columns:
                col.resize((pos, *col.shape[1:]), refcheck=False)
        self = cls.__new__(cls)
        self.stream, self.schema = stream, schema
        self.raw, self.axis = raw, axis
        self._set_spans(spans)
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
            return WallTime(None, UNDATED)
        session = self.stream._file.sessions[int(self.session[i])]
        return session.clock.wall(int(self.axis[i]), self.schema.axis_exp)


def _concat(chunks, f, wide=False):
    if not chunks:
        return _empty_column(f, wide)
    return np.concatenate(chunks)


def _empty_column(f, wide=False):
    """A zero-length raw column with the dtype fields.extract gives that field."""
    dtype, extra = fieldsmod.column_dtype(f, wide)
    return np.zeros((0, *extra), dtype)


class LogbFile(SourceReader):
    """A scanned Logb input. `strict` raises at the first damage; `recover`
    accepts an input whose file header is missing or damaged by resyncing at
    its first SYNC frame. `progress(offset)` is called after each frame.
    `on_data(stream, FrameLoc, payload)` is called for each DATA frame the
    scan accepts, with a view of its payload valid until the end of the run
    of frames it came in, when `on_data.run_end(view, base)` is called if
    there is one, with a view of the bytes the run lies in and their file
    offset (logb.verify checks frames while their bytes are in memory).
    `readahead`: a file read by window is read and walked (CRCs, frame
    table) on a thread a few windows ahead of the scan; the scan's own CPU time
    halves, but on a shared 2-core machine the wall time did not improve (the
    thread waits for the GIL a few times a window), so nothing turns it on yet.

    A file larger than source.HOLD_MAX is not held: the scan reads it by
    window and each DATA frame is read again when decoded (source.py), so
    memory is bounded by what is in use. `buf` is the whole input all the
    same, read (and then held) when asked for."""

    def __init__(self, src, strict=False, recover=False, progress=None, on_data=None, readahead=False):
        self.source = open_source(src)
        self._held = self.source.held  # the whole input, or None: read by window
        self.report = Report(size=self.source.size if self._held is None else len(self._held))
        self._budget = Budget(self.report.size)
        self.segments = []
        self.sessions = []
        self.streams = {}
        self.attachments = []
        self.indexes = []  # (offset, Index, segment index or None)
        self.ends = []  # (offset, End)
        self.unknown_frames = []  # (offset, type)
        self._bindings = {}
        self._bound = {}
        self._cur = None
        self._end_since_segment = False
        self._data_offsets = {}  # offset -> (stream or None, DataHeader), but for the DataBlocks' frames
        self._data_blocks = []  # (stream, DataBlock) of the frames accepted as blocks, file order
        self._run_state = {}
        self._schema_cache = {}  # SCHEMA payload -> (schema | None, uuid, name, error)
        self._index_axes = {}  # DATA offset -> first_axis an INDEX claims (checked on decode)
        self._header_problems = {}  # (id(schema), codec, filter, count, raw_size, payload_len) -> header_problem
        self.strict = strict
        self._on_data = on_data
        run_end = getattr(on_data, "run_end", None)  # the views on_data was given go stale
        breaks = None
        for run, view, base in self._scan(recover, strict, readahead):
            # damage the scanner resumed past inside the segment keeps it (SPEC §10.3, G17)
            if self.report.segment_breaks != breaks:
                if breaks is not None:
                    self._close_segment()
                breaks = self.report.segment_breaks
            self._frames_run(run, view, base, progress)
            if run_end is not None:
                run_end(view, base)
        self.sessions = resolve_sessions(self.segments, [off for off, _end in self.ends], self._note)
        self._check_index_and_end()
        self._data_offsets = self._data_blocks = None  # read last by the INDEX check: not held open

    @property
    def buf(self):
        """The whole input (read now, and held, when the file was read by window)."""
        return self._held if self._held is not None else self.source.buf

    def _scan(self, recover, strict, readahead=False):
        """(scan.Run, a view of the bytes it lies in, the view's offset) for
        every run of CRC-valid frames, damage recorded in the report: in place
        in the held input, else by window."""
        if self._held is None:
            yield from iter_source_frames(self.source, self.report, recover, strict, runs=True, readahead=readahead)
            return
        start = check_header(self._held, self.report, recover)
        if start is None:
            return
        with memoryview(self._held) as view:  # payloads are parsed in place, not copied out
            for run in iter_frames(self._held, self.report, start, strict, runs=True):
                yield run, view, 0

    def _frames_run(self, run, view, base, progress):
        """Every frame of a run, in order: a DATA frame inside a segment from
        the header the scan kernel parsed (the hot path), any other through _frame.

        A DATA frame shaped as the last one _data accepted for its stream_id
        (raw_size, record_count, codec, filter, run_id, and for codec none its
        payload length) meets what that one met: the same
        header_problem (none), no run change, the same charge. It is accepted
        here at once while the budget holds. What it repeats holds only until
        the next frame of another type (which may bind or close), so `same`
        is kept for this run alone. The like frames right after such a frame
        (_like_after) are accepted all at once, as a DataBlock: no object per
        frame, and on_data.block(stream, block, view, base) instead of a call each."""
        on_data = self._on_data
        same = {}  # stream_id -> (shape, stream, its frame list, charge, segment): see above
        budget, data_offsets = self._budget, self._data_offsets
        table, heads = run.table, run.heads
        at, like = _like_after(table, heads)
        todo = list(zip(table[at].tolist(), heads[at].tolist(), like, at.tolist()))
        t = 0
        while t < len(todo):
            (offset, plen, sid, ftype, flags), head, like, k = todo[t]
            t += 1
            i = offset - base + FRAME_HEADER_SIZE
            if ftype == _DATA and self._cur is not None and sid and head[7]:
                header = new_data_header(head[1], head[2], head[3], head[4], head[5], head[0])
                # header_problem reads payload_len for codec none alone (stored bytes are raw_size)
                shape = head[0], head[2], head[3], head[4], head[5], None if head[4] else plen
                last = same.get(sid)
                if last is not None and last[0] == shape and last[3] <= budget.file_left:
                    _shape, stream, frames, charge, segment = last
                    budget.file_left -= charge
                    data_offsets[offset] = (stream, header)
                    fl = FrameLoc(offset, plen, header, segment)
                    frames.append(fl)
                    if on_data is not None:
                        on_data(stream, fl, view[i : i + plen])
                else:
                    payload = view[i : i + plen] if on_data is not None else None
                    accepted = self._data(offset, sid, plen, header, payload)
                    if accepted is not None:
                        last = same[sid] = shape, *accepted
                if like:  # the like frames after this one: accepted at once while the budget holds
                    taken = 0
                    if last is not None and last[0] == shape:
                        _shape, stream, frames, charge, segment = last
                        taken = like if not charge else min(like, budget.file_left // charge)
                    if taken:
                        budget.file_left -= charge * taken
                        block = DataBlock(table[k + 1 : k + 1 + taken], heads[k + 1 : k + 1 + taken], segment)
                        stream._add_block(block)
                        self._data_blocks.append((stream, block))
                        if on_data is not None:
                            on_data.block(stream, block, view, base)
                    if taken < like:  # the rest one by one (the budget rejects them)
                        rest = slice(k + 1 + taken, k + 1 + like)
                        todo[t:t] = zip(table[rest].tolist(), heads[rest].tolist(), [0] * (like - taken),
                                        range(rest.start, rest.stop))
                    elif progress is not None:
                        progress(block.end)
                        continue
            else:
                same.clear()
                self._frame(FrameRef(offset, ftype, flags, sid, plen), view[i : i + plen])
            if progress is not None:
                progress(offset + FRAME_OVERHEAD + plen)

    def _stored(self, start, end):
        """The stored bytes of a DATA frame: a view of the held input, or one read."""
        if self._held is not None:
            return memoryview(self._held)[start:end]
        data = self.source.read_at(start, end - start)
        if len(data) != end - start:
            raise InvalidDataError(f"the file is {len(data) + start} bytes now: it shrank after it was read")
        return data

    # lookup
    def stream(self, key):
        """A stream by name, uuid hex, or uuid bytes."""
        if isinstance(key, bytes) and key in self.streams:
            return self.streams[key]
        for s in self.streams.values():
            if s.uuid.hex() == str(key).replace("-", "").lower() or s.name == key:
                return s
        names = sorted(s.name for s in self.streams.values() if s.records)
        listing = ", ".join(names[:20]) + (f" … ({len(names)} in all)" if len(names) > 20 else "")
        raise NotFoundError(f"no stream {key!r}{did_you_mean(key, names)}; the streams with records: "
                            f"{listing or 'none'}")

    def data_frames(self, streams=None):
        """(stream, FrameLoc) for every accepted DATA frame, in file order."""
        chosen = streams if streams is not None else self.streams.values()
        pairs = [(fl.offset, s, fl) for s in chosen for fl in s.frames]
        pairs.sort(key=lambda p: p[0])
        return [(s, fl) for _, s, fl in pairs]

    @contextmanager
    def only_frames(self, lo, hi):
        """Within the block, the file reads as if its only DATA frames were those starting
        in [lo, hi): what a reader decoding one byte range (a segment, the new tail of a
        growing file) needs. Schemas, sessions and anchors stay those of the whole file."""
        kept = {s: s._frames for s in self.streams.values()}
        try:
            for s, frames in kept.items():
                s._frames = [fl for fl in frames if lo <= fl.offset < hi]
            yield self
        finally:
            for s, frames in kept.items():
                s._frames = frames
                s._dropped = int(any(fl.dropped for fl in frames))  # rejected in the block: compacted next

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
        self._bound = {}  # id(stream) -> the stream_id binding it in this segment

    def _frame(self, fr, payload):
        """Dispatch one CRC-valid frame through FRAME_RULES: the scope checks,
        then the one guarded decode, then the frame type's handler."""
        t = fr.type
        if t == _DATA and self._cur is not None and fr.stream_id:
            # the hot path (one per DATA frame): FRAME_RULES' DATA row with its
            # checks (stream scope, inside a segment) already known to pass
            try:
                header = DataHeader.decode(payload)
            except MalformedPayloadError as exc:
                self._data_malformed(fr, exc)
                return
            self._data(fr.offset, fr.stream_id, fr.payload_len, header, payload)
            return
        rule = FRAME_RULES.get(t)
        if rule is None:
            self.unknown_frames.append((fr.offset, t))
            self._note(fr.offset, "skipped-frame", f"unknown frame type 0x{t:02x} skipped")
            return
        if rule.decode is None:  # reserved: not read at all
            rule.handle(self, fr, None)
            return
        scope = FRAME_SCOPE[t]
        if scope == FILE and fr.stream_id:
            self._note(fr.offset, "ignored-stream-id",
                       f"{FrameType(t).name} frame carries stream_id {fr.stream_id}; ignored")
        if rule.in_segment and self._cur is None:
            self._note(fr.offset, "outside-segment",
                       f"{FrameType(t).name} frame outside any segment (no SYNC before it); ignored")
            return
        if scope == STREAM and fr.stream_id == 0:
            self._note(fr.offset, "no-stream-id", f"{FrameType(t).name} frame with stream_id 0; ignored")
            return
        try:
            decoded = rule.decode(payload)  # a view: each decoder copies what it keeps
        except MalformedPayloadError as exc:
            rule.malformed(self, fr, exc)
            return
        rule.handle(self, fr, decoded)

    def _malformed(self, fr, exc):
        self._fail(MalformedPayloadError, fr.offset, "malformed", f"{FrameType(fr.type).name}: {exc}")

    def _reserved(self, fr, _nothing):
        self._note(fr.offset, "skipped-frame",
                   f"{FrameType(fr.type).name} frame (reserved, undefined in v0.1) skipped")

    def _sync(self, fr, sync):
        self._bindings, self._bound = {}, {}
        self._cur = Segment(fr.offset, sync.segment_seq, sync.wall_time_ns, self._end_since_segment)
        self._end_since_segment = False
        self.segments.append(self._cur)

    def _sync_malformed(self, fr, exc):
        self._close_segment()
        self._fail(MalformedPayloadError, fr.offset, "malformed", f"SYNC: {exc}; no segment starts here")

    def _end(self, fr, end):
        self.ends.append((fr.offset, end))
        self._end_since_segment = True
        self._close_segment()  # a writer closed here; the next segment must start with SYNC

    def _index(self, fr, idx):
        self.indexes.append((fr.offset, idx, len(self.segments) - 1 if self.segments else None))

    def _stream_for(self, uuid, name):
        s = self.streams.get(uuid)
        if s is None:
            s = self.streams[uuid] = Stream(self, uuid, name or "")
        return s

    def _schema(self, fr, payload):
        sid = fr.stream_id
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
        elif id(stream) in self._bound:
            status, reason = "duplicate", "stream uuid already bound to another stream_id in this segment"
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
        if stream is not None:
            self._bound[id(stream)] = sid
        self._bindings[sid] = _Binding(stream, status, reason, payload)

    def _meta(self, fr, meta):
        for key in meta.duplicate_keys():
            self._note(fr.offset, "duplicate-key", f"META key {key!r} repeated; the last value wins")
        if not fr.stream_id:
            self._cur.take_meta(meta.as_dict(), fr.offset, self._note)
            return
        b = self._bindings.get(fr.stream_id)
        if b is None or b.stream is None:
            self._note(fr.offset, "unbound", f"stream META for unbound stream_id {fr.stream_id}; ignored")
        elif b.status != "ok":
            self._note(fr.offset, "rejected",
                       f"stream META for a rejected binding of stream_id {fr.stream_id}; ignored")
        else:
            pairs = meta.as_dict()
            b.stream.meta.update(pairs)
            counters = {}
            for key in _LOST_KEYS & pairs.keys():
                if pairs[key].isascii() and pairs[key].isdigit():
                    counters[key] = int(pairs[key])
                else:
                    self._note(fr.offset, "bad-counter", f"stream {b.stream.name!r}: {key}={pairs[key]!r} is no "
                               f"decimal count; ignored")
            if counters:
                b.stream._counters.append((self._cur, counters))

    def _attach(self, fr, a):
        problem = None
        if a.codec not in Codec._value2member_map_:
            problem = f"unknown codec {a.codec}; data unavailable"
            self._note(fr.offset, "unsupported-codec", f"attachment {a.name!r}: {problem}")
        elif (beyond := self._budget.charge_attachment(a.raw_size)) is not None:
            problem = f"{beyond}; data unavailable"
            self._note(fr.offset, "reader-limit", f"attachment {a.name!r}: {problem}")
        else:
            try:
                codecs.decompress(a.stored, a.codec, a.raw_size)
            except LogbError as exc:
                self._fail(MalformedPayloadError, fr.offset, "malformed", f"ATTACH {a.name!r}: {exc}")
                return
        self.attachments.append(Attachment(fr.offset, a.name, a.media_type, a.codec, a.raw_size, a.stored, problem))

    def _run(self, fr, run):
        if len({k for k, _ in run.params}) != len(run.params):
            self._note(fr.offset, "duplicate-key", f"RUN {run.run_id}: repeated parameter key; the last wins")
        self._cur.runs.append((fr.offset, run))

    def _data_binding(self, offset, sid):
        """The binding a DATA frame's stream_id names in this segment, or None (noted)."""
        self._cur.data_seen = True
        b = self._bindings.get(sid)
        if b is None:
            self._note(offset, "unbound", f"DATA for stream_id {sid}, which no SCHEMA in this segment binds")
        return b

    def _data_malformed(self, fr, exc):
        b = self._data_binding(fr.offset, fr.stream_id)
        if b is not None and b.stream is not None:
            b.stream.reject(fr.offset, 0, str(exc))

    def _data_rule(self, fr, header):
        self._data(fr.offset, fr.stream_id, fr.payload_len, header, None)

    def _data(self, offset, sid, payload_len, header, payload):
        """An accepted DATA frame's FrameLoc, or its rejection; `payload` (a view,
        or None when on_data is not asked for) goes to on_data. Returns, for a
        frame accepted whose like _frames_run may accept at once, (stream, its
        frame list, the charge of each, segment); else None."""
        b = self._data_binding(offset, sid)
        if b is None:
            return
        stream = b.stream
        self._data_offsets[offset] = (stream, header)
        if b.status != "ok":
            if stream is not None:
                stream.reject(offset, header.record_count, b.reason)
            else:
                self._note(offset, "rejected", f"DATA for stream_id {sid}: {b.reason}")
            return
        schema = stream.schema
        # what header_problem says depends on these alone, and a file repeats them frame after frame
        key = (id(schema), header.codec, header.filter, header.record_count, header.raw_size, payload_len)
        reason = self._header_problems.get(key, False)
        if reason is False:
            if len(self._header_problems) >= _HEADER_PROBLEMS_HELD:  # hostile headers all differ: stay bounded
                self._header_problems.clear()
            reason = self._header_problems[key] = header_problem(schema, header, payload_len)
        reason = reason or self._budget.charge(schema, header)
        if reason:
            if self.strict:
                raise {"codec": UnsupportedCodecError, "filter": UnsupportedFilterError}.get(
                    reason.split()[1], MalformedPayloadError)(f"{reason} (offset {offset})")
            stream.reject(offset, header.record_count, reason)
            return
        segment, run_id = len(self.segments) - 1, header.run_id
        state = self._run_state.get((segment, sid))  # [the last run_id, the runs closed before it]
        if state is None:
            self._run_state[segment, sid] = [run_id, set()]
        elif run_id != state[0]:
            if run_id in state[1]:
                self._note(offset, "run-order",
                           f"stream {stream.name!r}: run {run_id} reappears after another run in one segment")
            state[1].add(state[0])
            state[0] = run_id
        fl = FrameLoc(offset, payload_len, header, segment)
        stream._list.append(fl)  # nothing is dropped while scanning
        if self._on_data is not None:
            self._on_data(stream, fl, payload)
        charge = self._budget.repeat_charge(schema, header)
        return None if charge is None else (stream, stream._list, charge, segment)

    # after the scan
    def _check_index_and_end(self):
        sync_offsets = {s.offset for s in self.segments}
        index_offsets = {off for off, _, _ in self.indexes}
        for off, end in self.ends:
            for problem in end_problems(off, end, sync_offsets, index_offsets):
                self._note(off, "end", problem)
        self.index_valid = {}
        table = self._data_table() if self.indexes else None
        checked = set()  # sessions whose INDEX was checked: each DATA frame is compared once
        for off, idx, seg in self.indexes:
            session = self.segments[seg].session if seg is not None else None
            if seg is None:
                problem = "no segment precedes it"
            elif session in checked:
                problem = "a second INDEX in one writer session"
            else:
                checked.add(session)
                start = self.sessions[session].first_offset
                problem, covered = index_problem(off, idx, start, self.streams, table, table.between(start, off))
                self._index_axes.update(covered)
            self.index_valid[off] = problem is None
            if problem:
                self._note(off, "corrupt-index", f"INDEX disagrees with the frames: {problem}; the frames stand")

    def _data_table(self):
        """Every DATA frame a SCHEMA bound (accepted or rejected), file order: a seal.DataTable."""
        streams, index = [], {}
        def number(stream):
            if id(stream) not in index:
                index[id(stream)] = len(streams)
                streams.append(stream)
            return index[id(stream)]
        singles = self._data_offsets
        headers = [h for _s, h in singles.values()]
        parts = [(np.fromiter(singles, np.int64, len(singles)),
                  np.array([-1 if s is None else number(s) for s, _h in singles.values()], np.int64),
                  np.array([h.record_count for h in headers], np.int64),
                  np.array([h.run_id for h in headers], np.int64),
                  np.frombuffer(b"".join(h.axis_base_raw for h in headers), "<u8"))]
        for stream, block in self._data_blocks:
            heads = block.heads
            parts.append((block.offsets.astype(np.int64), np.full(len(block), number(stream), np.int64),
                          heads["record_count"].astype(np.int64), heads["run_id"].astype(np.int64),
                          heads["axis_base"].view("<u8")))
        columns = [np.concatenate(c) for c in zip(*parts)]
        order = np.argsort(columns[0], kind="stable")  # the blocks' frames lie among the others'
        return DataTable(*(c[order] for c in columns), streams)

    def _index_disagrees(self, data_offset):
        self._index_axes = {}  # the index is discarded: nothing more to compare
        for off, valid in self.index_valid.items():
            if valid:
                self.index_valid[off] = False
                self._note(off, "corrupt-index",
                           f"INDEX first_axis disagrees with the DATA frame at {data_offset}; the frames stand")


@functools.lru_cache(maxsize=256)
def _meta_of(payload):
    return Meta.decode(payload)


def _decode_meta(payload):
    """Meta.decode, once per distinct small payload: a writer restates its META frames
    every segment, mostly unchanged (a Meta is frozen: one can stand for many)."""
    return _meta_of(bytes(payload)) if len(payload) <= 4096 else Meta.decode(payload)


@dataclass(frozen=True)
class FrameRule:
    """How the scan reads one frame type (its stream_id's meaning is tables.FRAME_SCOPE)."""

    decode: object  # payload view -> what `handle` takes, or MalformedPayloadError; None: reserved, not read
    handle: object  # LogbFile method: (self, FrameRef, decoded)
    in_segment: bool = True  # ignored (noted) outside a segment
    malformed: object = LogbFile._malformed  # (self, FrameRef, exc) when `decode` refuses the payload


# The reader's one frame-type table. A new frame type is a row here and its
# handler above, its payload class in frames.py, its id and scope in tables.py.
FRAME_RULES = {
    FrameType.SYNC: FrameRule(Sync.decode, LogbFile._sync, in_segment=False, malformed=LogbFile._sync_malformed),
    # SCHEMA payloads repeat every segment: the handler decodes each distinct one once
    FrameType.SCHEMA: FrameRule(bytes, LogbFile._schema),
    FrameType.META: FrameRule(_decode_meta, LogbFile._meta),
    FrameType.ATTACH: FrameRule(Attach.decode, LogbFile._attach),
    FrameType.RUN: FrameRule(Run.decode, LogbFile._run),
    # DATA: the 28-byte header only; the records are decoded when asked for
    FrameType.DATA: FrameRule(DataHeader.decode, LogbFile._data_rule, malformed=LogbFile._data_malformed),
    FrameType.INDEX: FrameRule(Index.decode, LogbFile._index, in_segment=False),
    FrameType.END: FrameRule(End.decode, LogbFile._end, in_segment=False),
    FrameType.SIGN: FrameRule(None, LogbFile._reserved, in_segment=False),
}


def open(src, **kwargs):  # noqa: A001 - mirrors builtins.open for this format
    return LogbFile(src, **kwargs)

"""The seal a clean close writes, INDEX then END (SPEC §9): its checks
against the frames, and a sealed file opened from its END. The seal only ever
accelerates: whatever disagrees with the frames is reported (the scan) or
refused (the END-open path) and the frames stand.

The scan (reader.LogbFile) checks every END and INDEX it met with
end_problems() and index_problem(). IndexedFile opens a sealed file from its
END (SPEC §9.2) without scanning it: it follows the same pointers
(end_targets, entry_offset) and checks each entry against the DATA frame it
reaches (entry_problem) before using it.
"""

import numpy as np

from .batch import decode_batch, header_problem
from .errors import (IndexUnavailableError, InvalidSchemaError, LogbError, MalformedPayloadError, NotFoundError,
                     NotLogbError)
from .framing import FILE_HEADER_SIZE, FRAME_HEADER, FRAME_HEADER_SIZE, FRAME_OVERHEAD, decode_file_header
from .frames import DATA_HEADER_SIZE, END_PAYLOAD_SIZE, DataHeader, End, Index, Sync, axis_value, pack_axis
from .limits import Budget
from .scan import Frame, FrameScanner, frame_at
from .schema import Schema
from .source import SourceReader, open_source
from .tables import AxisMode, FrameType

END_FRAME_SIZE = FRAME_OVERHEAD + END_PAYLOAD_SIZE  # the last 28 bytes of a sealed file


def end_targets(end_offset, end):
    """(offset of the session's INDEX or None, offset of its first SYNC) that
    the END frame at `end_offset` points back to (SPEC §9.2)."""
    index_offset = end_offset - end.index_back_offset if end.index_back_offset else None
    return index_offset, end_offset - end.session_bytes


def end_problems(end_offset, end, sync_offsets, index_offsets):
    """What the END frame at `end_offset` points to that is not there."""
    index_offset, session_start = end_targets(end_offset, end)
    problems = []
    if index_offset is not None and index_offset not in index_offsets:
        problems.append("END points to no INDEX frame")
    if session_start not in sync_offsets:
        problems.append("END session_bytes does not lead to a SYNC frame (session start lost?)")
    return problems


def entry_offset(index_offset, entry):
    """Where the DATA frame an INDEX entry names starts."""
    return index_offset - entry.back_offset


def entry_problem(entry, header, schema):
    """How an INDEX entry disagrees with the header of the DATA frame it points
    to (worded to go before "at offset N"), or None. An explicit axis's first
    value is known only once the frame is decoded: that comparison is the
    decoder's."""
    if header.record_count != entry.record_count or header.run_id != entry.run_id:
        return "no matching DATA frame"
    if (schema.axis_mode != AxisMode.explicit or not entry.record_count) and \
            header.axis_base_raw != entry.first_axis_raw:
        return "first_axis of the frame"
    return None


class DataTable:
    """DATA frames the scan found, file order, as arrays: `offset`; `stream`, an index
    into `streams` (their Stream, or None when the uuid could not be read); and from
    each header `count` (record_count), `run_id` and `axis` (axis_base, as uint64)."""

    __slots__ = ("offset", "stream", "count", "run_id", "axis", "streams")

    def __init__(self, offset, stream, count, run_id, axis, streams):
        self.offset, self.stream, self.count, self.run_id, self.axis = offset, stream, count, run_id, axis
        self.streams = streams

    def between(self, lo, hi):
        """The rows whose offsets are in [lo, hi): a slice."""
        return slice(*np.searchsorted(self.offset, [lo, hi]).tolist())


_ENTRY_DTYPE = np.dtype([("back_offset", "<u8"), ("first_axis", "<u8"), ("record_count", "<u4"), ("run_id", "<u4")])
# what index_problem says of an entry (worded to go before "at offset N")
_ORDER, _NO_MATCH, _FIRST_AXIS = 1, 2, 3
_ENTRY_PROBLEMS = {_NO_MATCH: "no matching DATA frame", _FIRST_AXIS: "first_axis of the frame"}


def _entries(entries):
    """An INDEX's entries of one stream as an _ENTRY_DTYPE array."""
    out = np.empty(len(entries), _ENTRY_DTYPE)
    out["back_offset"] = [e.back_offset for e in entries]
    out["first_axis"] = np.frombuffer(b"".join(e.first_axis_raw for e in entries), "<u8")
    out["record_count"] = [e.record_count for e in entries]
    out["run_id"] = [e.run_id for e in entries]
    return out


def index_problem(index_offset, index, session_start, streams, table, rows):
    """Why the INDEX at `index_offset` disagrees with the frames it covers
    (SPEC §9.1), or None; with it the first_axis it claims per DATA offset.
    Each entry is checked as entry_problem checks it, all of a stream's at once.

    `streams`: uuid -> the scan's stream (with .schema; None when unreadable);
    `table[rows]` (a DataTable and a slice of it): every DATA frame the scan
    found in this session before the INDEX."""
    offsets, owner = table.offset[rows], table.stream[rows]
    index_of = {id(s): i for i, s in enumerate(table.streams)}
    covered = {}
    for uuid, entries in index.streams:
        stream = streams.get(uuid)
        if stream is None or stream.schema is None or not entries:
            continue  # an unreadable stream's entries mean nothing
        ent = _entries(entries)
        back = ent["back_offset"]
        # the target (index_offset - back) in [session_start, index_offset), each after the one before
        problem = np.where((back == 0) | (back > index_offset - session_start), _ORDER, 0)
        problem[1:][back[1:] >= back[:-1]] = _ORDER
        target = index_offset - np.minimum(back, index_offset).astype(np.int64)
        at = np.minimum(np.searchsorted(offsets, target), max(len(offsets) - 1, 0))
        if len(offsets):
            found = (offsets[at] == target) & (owner[at] == index_of.get(id(stream), -2))
            same = found & (table.count[rows][at] == ent["record_count"]) & (table.run_id[rows][at] == ent["run_id"])
            axis_checked = np.ones(len(ent), bool) if stream.schema.axis_mode != AxisMode.explicit \
                else ent["record_count"] == 0
            axis_bad = same & axis_checked & (table.axis[rows][at] != ent["first_axis"])
        else:
            same = axis_bad = np.zeros(len(ent), bool)
        problem[(problem == 0) & ~same] = _NO_MATCH
        problem[(problem == 0) & axis_bad] = _FIRST_AXIS
        bad = np.flatnonzero(problem)
        if len(bad):
            code = int(problem[bad[0]])
            if code == _ORDER:
                return "an entry points outside its session or out of file order", {}
            return f"{_ENTRY_PROBLEMS[code]} at offset {int(target[bad[0]])}", {}
        covered.update(zip(target.tolist(), [e.first_axis_raw for e in entries]))
    readable = np.array([s is not None and s.schema is not None for s in table.streams] + [False], bool)
    claimed = np.fromiter(covered, np.int64, len(covered))
    missing = np.flatnonzero(readable[owner] & ~np.isin(offsets, claimed))
    if len(missing):
        return f"the DATA frame at offset {int(offsets[missing[0]])} is missing", {}
    return None, covered


# ---------------------------------------------------------------- opened from the END
_SCAN_CHUNK = 1 << 16


class IndexedStream:
    """One stream of an IndexedFile: its INDEX entries, read on demand."""

    def __init__(self, owner, schema, entries):
        self._owner = owner
        self.schema = schema
        self.uuid = schema.uuid
        self.name = schema.name
        self.entries = entries  # (frame offset, first axis value, IndexEntry), file order

    @property
    def records(self):
        return sum(e.record_count for _, _, e in self.entries)

    def _candidates(self, lo, hi):
        """(rows that can hold records in [lo, hi], the row whose first_axis
        claim ended the selection or None)."""
        firsts = [first for _, first, _ in self.entries]
        if any(b < a for a, b in zip(firsts, firsts[1:])):
            return list(self.entries), None  # not monotonic: the index cannot narrow anything
        out, boundary = [], None
        for i, row in enumerate(self.entries):
            nxt = firsts[i + 1] if i + 1 < len(firsts) else None
            if row[1] > hi:
                boundary = row  # every later row claims to start past hi too
                break
            if nxt is not None and nxt < lo:
                continue
            out.append(row)
        return out, boundary

    def _read(self, offset, entry):
        """The DATA frame an entry names, CRC-checked and decoded, its first_axis checked."""
        schema = self.schema
        payload = self._owner._payload(offset, FrameType.DATA, self._owner.index_offset)
        header = DataHeader.decode(payload)
        problem = entry_problem(entry, header, schema)
        if problem:
            raise IndexUnavailableError(f"INDEX entry disagrees with the DATA frame: {problem} at offset {offset}")
        try:
            b = decode_batch(schema, header, payload[DATA_HEADER_SIZE:])
        except (LogbError, ValueError) as exc:
            raise IndexUnavailableError(f"the DATA frame at offset {offset} does not decode: {exc}") from None
        # the decoder's half of the first_axis check (explicit axes: SPEC §9.1)
        if b.count and pack_axis(b.axis[0], schema.is_time) != entry.first_axis_raw:
            raise IndexUnavailableError(f"INDEX entry disagrees with the DATA frame: first_axis of the "
                                        f"frame at offset {offset}")
        return b

    def window(self, lo, hi):
        """Batches whose records fall in [lo, hi], reading only candidate frames.
        Assumes the stream's axis is non-decreasing in file order (a logger's
        clock); when the index shows it is not, every frame is read. The frame
        whose first_axis claim ends the selection is read too, so a false
        claim there cannot hide records."""
        rows, boundary = self._candidates(lo, hi)
        if boundary is not None and self.schema.axis_mode == AxisMode.explicit:
            self._read(boundary[0], boundary[2])  # raises if the claim is false
        for offset, _first, entry in rows:
            b = self._read(offset, entry)
            keep = (b.axis >= lo) & (b.axis <= hi)
            b.raw = {k: v[keep] for k, v in b.raw.items()}
            b.axis, b.count = b.axis[keep], int(keep.sum())
            yield offset, b


class IndexedFile(SourceReader):
    """The last writer session of a sealed file, opened from its END (SPEC
    §9.2): END -> INDEX, and the session's first segment for the schemas,
    reading only those frames and each indexed DATA frame's header (no scan,
    nothing mapped). Every entry is checked against the frame it names before
    anything is returned: a DATA frame inside the session that ends before the
    INDEX, of the stream_id the first segment binds to the entry's uuid, with
    the entry's record_count, run_id and (implicit axes, empty frames)
    first_axis, within the reader limits, no two entries on one frame. Anything
    that disagrees raises IndexUnavailableError; the caller then scans
    (reader.LogbFile)."""

    def __init__(self, src):
        self.source = open_source(src)
        self.size = self.source.size
        try:
            decode_file_header(self.source.read_at(0, FILE_HEADER_SIZE))
            end_pos = self.size - END_FRAME_SIZE
            end = End.decode(self._payload(end_pos, FrameType.END, self.size))
            index_pos, self.session_start = end_targets(end_pos, end)
            if index_pos is None:
                raise IndexUnavailableError("the END frame records no INDEX")
            self.index_offset = index_pos
            index = Index.decode(self._payload(index_pos, FrameType.INDEX, end_pos))
            bound = self._first_segment_bindings(self.session_start, index_pos)
            self.streams = self._checked_streams(index, index_pos, bound)
        except (MalformedPayloadError, InvalidSchemaError, NotLogbError, ValueError) as exc:
            raise IndexUnavailableError(str(exc)) from None

    @property
    def buf(self):
        return self.source.buf

    def _frame_head(self, pos, limit):
        """(type, stream_id, payload_len) of the frame at `pos`, which must end by `limit`."""
        head = self.source.read_at(pos, FRAME_HEADER_SIZE) if FILE_HEADER_SIZE <= pos else b""
        if len(head) < FRAME_HEADER_SIZE:
            raise IndexUnavailableError(f"no frame at offset {pos}")
        plen, ftype, _flags, sid = FRAME_HEADER.unpack_from(head, 0)
        if pos + FRAME_OVERHEAD + plen > limit:
            raise IndexUnavailableError(f"the frame at offset {pos} runs past offset {limit}")
        return ftype, sid, plen

    def _payload(self, pos, expect_type, limit):
        """The payload of the CRC-valid frame of `expect_type` at `pos`, ending by `limit`."""
        ftype, _sid, plen = self._frame_head(pos, limit)
        data = self.source.read_at(pos, FRAME_OVERHEAD + plen) if ftype == expect_type else b""
        fr = frame_at(data, 0)
        if fr is None or fr.type != expect_type:
            raise IndexUnavailableError(f"no CRC-valid {FrameType(expect_type).name} frame at offset {pos}")
        return fr.payload(data)

    def _first_segment_bindings(self, pos, limit):
        """uuid -> (stream_id, schema) that the session's first segment binds before its first DATA frame."""
        Sync.decode(self._payload(pos, FrameType.SYNC, limit))
        bound, sids = {}, {}
        scanner = FrameScanner(pos, header=False)
        at = pos
        while at < limit:
            chunk = self.source.read_at(at, min(_SCAN_CHUNK, limit - at))
            events = scanner.feed(chunk) if chunk else scanner.close()
            at += len(chunk)
            for ev in events:
                if type(ev) is not Frame:  # damage before the first DATA frame
                    raise IndexUnavailableError(f"the session's first segment is damaged at offset {ev.start}")
                if ev.type == FrameType.DATA or (ev.type == FrameType.SYNC and ev.offset > pos):
                    return bound
                if ev.type == FrameType.SCHEMA:
                    schema = Schema.decode(ev.payload()).validate()
                    if sids.setdefault(ev.stream_id, schema.uuid) != schema.uuid or \
                            bound.setdefault(schema.uuid, (ev.stream_id, schema))[0] != ev.stream_id:
                        raise IndexUnavailableError("the session's first segment binds a stream twice")
            if not chunk:
                break
        return bound

    def _checked_streams(self, index, index_pos, bound):
        budget = Budget(self.size)
        streams, claimed = {}, []
        for uuid, entries in index.streams:
            if uuid not in bound:
                raise IndexUnavailableError(f"INDEX names stream {uuid.hex()}, which the session's first segment "
                                            f"does not declare")
            if uuid in streams:
                raise IndexUnavailableError(f"INDEX lists stream {uuid.hex()} twice")
            sid, schema = bound[uuid]
            rows, last = [], -1
            for e in entries:
                pos = entry_offset(index_pos, e)
                if not self.session_start <= pos < index_pos or pos <= last:
                    raise IndexUnavailableError("an INDEX entry points outside its session or out of file order")
                last = pos
                rows.append((pos, axis_value(e.first_axis_raw, schema.is_time), e))
                claimed.append((pos, sid, schema, e))
            streams[uuid] = IndexedStream(self, schema, rows)
        claimed.sort(key=lambda c: c[0])
        end = -1
        for pos, sid, schema, e in claimed:
            if pos < end:  # a second entry on one frame, or inside another entry's frame
                raise IndexUnavailableError(f"INDEX entries overlap at offset {pos}")
            ftype, frame_sid, plen = self._frame_head(pos, index_pos)
            end = pos + FRAME_OVERHEAD + plen
            head = self.source.read_at(pos + FRAME_HEADER_SIZE, DATA_HEADER_SIZE)
            if ftype != FrameType.DATA or frame_sid != sid or len(head) < DATA_HEADER_SIZE:
                raise IndexUnavailableError(f"INDEX entry names no DATA frame of its stream at offset {pos}")
            header = DataHeader.decode(head)
            problem = entry_problem(e, header, schema) or header_problem(schema, header, plen) or \
                budget.charge(schema, header)
            if problem:
                raise IndexUnavailableError(f"INDEX entry at offset {pos}: {problem}")
        return streams

    def stream(self, key):
        for s in self.streams.values():
            if key in (s.name, s.uuid, s.uuid.hex()):
                return s
        raise NotFoundError(f"no stream {key!r}")

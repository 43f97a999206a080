"""Opening a sealed file from its tail (SPEC §9.2): END → INDEX → the frames.

For random access on a file a writer closed cleanly, without scanning it:
read the last 28 bytes (the END frame), follow `index_back_offset` to the
INDEX and `session_bytes` to the session's first SYNC, whose segment restates
every schema. Every INDEX entry is checked against the frame it points to
(CRC, type, record count, run id, axis base) before it is used; anything that
disagrees raises IndexUnavailableError, and the caller scans instead
(LogbFile). The index only ever accelerates: it is never trusted over the
frames. Frames are checked by logb.scan, the reader's own frame walker.
"""

from . import batch as batchmod
from .errors import IndexUnavailableError, MalformedPayloadError
from .framing import FILE_HEADER_SIZE, FRAME_OVERHEAD, decode_file_header
from .frames import END_PAYLOAD_SIZE, DataHeader, End, Index, Sync, axis_value
from .scan import FrameRef, FrameScanner, frame_at
from .schema import Schema
from .source import open_source
from .tables import FrameType

_END_FRAME = FRAME_OVERHEAD + END_PAYLOAD_SIZE


def _frame_at(buf, pos, expect_type):
    fr = frame_at(buf, pos) if FILE_HEADER_SIZE <= pos < len(buf) else None
    if fr is None or fr.type != expect_type:
        raise IndexUnavailableError(f"no CRC-valid {FrameType(expect_type).name} frame at offset {pos}")
    return fr.stream_id, fr.payload(buf)


class IndexedStream:
    def __init__(self, owner, schema, entries):
        self._owner = owner
        self.schema = schema
        self.uuid = schema.uuid
        self.name = schema.name
        self.entries = entries  # (frame offset, first_axis, record_count, run_id), file order

    @property
    def records(self):
        return sum(e[2] for e in self.entries)

    def _candidates(self, lo, hi):
        firsts = [e[1] for e in self.entries]
        if any(b < a for a, b in zip(firsts, firsts[1:])):
            return list(self.entries)  # not monotonic: the index cannot narrow anything
        out = []
        for i, e in enumerate(self.entries):
            nxt = firsts[i + 1] if i + 1 < len(firsts) else None
            if e[1] > hi or (nxt is not None and nxt < lo):
                continue
            out.append(e)
        return out

    def window(self, lo, hi):
        """Batches whose records fall in [lo, hi], reading only candidate frames.
        Assumes the stream's axis is non-decreasing in file order (a logger's
        clock); when the index shows it is not, every frame is read."""
        buf = self._owner.buf
        for offset, _first, count, run_id in self._candidates(lo, hi):
            sid, payload = _frame_at(buf, offset, FrameType.DATA)
            header = DataHeader.decode(payload)
            if header.record_count != count or header.run_id != run_id:
                raise IndexUnavailableError(f"INDEX entry disagrees with the DATA frame at {offset}")
            b = batchmod.decode_batch(self.schema, header, payload[28:])
            keep = (b.axis >= lo) & (b.axis <= hi)
            b.raw = {k: v[keep] for k, v in b.raw.items()}
            b.axis, b.count = b.axis[keep], int(keep.sum())
            yield offset, b


class IndexedFile:
    """The last writer session of a sealed file, reached from its tail."""

    def __init__(self, src):
        self.source = open_source(src)
        buf = self.buf = self.source.buf
        try:
            decode_file_header(buf[:FILE_HEADER_SIZE])
            end_pos = len(buf) - _END_FRAME
            _sid, payload = _frame_at(buf, end_pos, FrameType.END)
            end = End.decode(payload)
            if not end.index_back_offset:
                raise IndexUnavailableError("the END frame records no INDEX")
            index_pos = end_pos - end.index_back_offset
            _sid, payload = _frame_at(buf, index_pos, FrameType.INDEX)
            index = Index.decode(payload)
            self.session_start = end_pos - end.session_bytes
            schemas = self._first_segment_schemas(self.session_start, index_pos)
        except (MalformedPayloadError, ValueError) as exc:
            raise IndexUnavailableError(str(exc)) from None
        self.streams = {}
        for uuid, entries in index.streams:
            schema = schemas.get(uuid)
            if schema is None:
                raise IndexUnavailableError(f"INDEX names stream {uuid.hex()}, which the session's first segment "
                                            f"does not declare")
            rows = []
            for e in entries:
                pos = index_pos - e.back_offset
                if not self.session_start <= pos < index_pos:
                    raise IndexUnavailableError("an INDEX entry points outside its session")
                first = axis_value(e.first_axis_raw, schema.is_time)
                rows.append((pos, first, e.record_count, e.run_id))
            self.streams[uuid] = IndexedStream(self, schema, rows)

    def _first_segment_schemas(self, pos, limit):
        """The schemas the session's first segment declares before its first DATA frame."""
        _sid, payload = _frame_at(self.buf, pos, FrameType.SYNC)
        Sync.decode(payload)
        schemas = {}
        for ev in FrameScanner(pos, header=False).scan(self.buf):
            if type(ev) is not FrameRef:  # damage before the first DATA frame
                raise IndexUnavailableError(f"the session's first segment is damaged at offset {ev.start}")
            if ev.offset >= limit or ev.type == FrameType.DATA or (ev.type == FrameType.SYNC and ev.offset > pos):
                break
            if ev.type == FrameType.SCHEMA:
                schema = Schema.decode(ev.payload(self.buf)).validate()
                schemas.setdefault(schema.uuid, schema)
        return schemas

    def stream(self, key):
        for s in self.streams.values():
            if key in (s.name, s.uuid, s.uuid.hex()):
                return s
        raise KeyError(f"no stream {key!r}")

    def close(self):
        self.source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

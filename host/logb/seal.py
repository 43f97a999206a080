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

from .batch import decode_batch
from .errors import IndexUnavailableError, MalformedPayloadError, NotFoundError
from .framing import FILE_HEADER_SIZE, FRAME_OVERHEAD, decode_file_header
from .frames import DATA_HEADER_SIZE, END_PAYLOAD_SIZE, DataHeader, End, Index, Sync, axis_value, pack_axis
from .scan import FrameRef, FrameScanner, frame_at
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


def index_problem(index_offset, index, session_start, streams, data_frames):
    """Why the INDEX at `index_offset` disagrees with the frames it covers
    (SPEC §9.1), or None; with it the first_axis it claims per DATA offset.

    `streams`: uuid -> the scan's stream (with .schema; None when unreadable);
    `data_frames`: DATA offset -> (stream or None, DataHeader), every DATA
    frame the scan found in this session before the INDEX."""
    covered = {}
    for uuid, entries in index.streams:
        stream = streams.get(uuid)
        if stream is None or stream.schema is None:
            continue  # an unreadable stream's entries mean nothing
        last = -1
        for e in entries:
            target = entry_offset(index_offset, e)
            if not session_start <= target < index_offset or target <= last:
                return "an entry points outside its session or out of file order", {}
            last = target
            found = data_frames.get(target)
            problem = "no matching DATA frame" if found is None or found[0] is not stream else \
                entry_problem(e, found[1], stream.schema)
            if problem:
                return f"{problem} at offset {target}", {}
            covered[target] = e.first_axis_raw
    for target, (stream, _header) in data_frames.items():
        if stream is not None and stream.schema is not None and target not in covered:
            return f"the DATA frame at offset {target} is missing", {}
    return None, covered


# ---------------------------------------------------------------- opened from the END
def _payload_at(buf, pos, expect_type):
    fr = frame_at(buf, pos) if FILE_HEADER_SIZE <= pos < len(buf) else None
    if fr is None or fr.type != expect_type:
        raise IndexUnavailableError(f"no CRC-valid {FrameType(expect_type).name} frame at offset {pos}")
    return fr.payload(buf)


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
        firsts = [first for _, first, _ in self.entries]
        if any(b < a for a, b in zip(firsts, firsts[1:])):
            return list(self.entries)  # not monotonic: the index cannot narrow anything
        out = []
        for i, row in enumerate(self.entries):
            nxt = firsts[i + 1] if i + 1 < len(firsts) else None
            if row[1] > hi or (nxt is not None and nxt < lo):
                continue
            out.append(row)
        return out

    def window(self, lo, hi):
        """Batches whose records fall in [lo, hi], reading only candidate frames.
        Assumes the stream's axis is non-decreasing in file order (a logger's
        clock); when the index shows it is not, every frame is read."""
        buf, schema = self._owner.buf, self.schema
        for offset, _first, entry in self._candidates(lo, hi):
            payload = _payload_at(buf, offset, FrameType.DATA)
            header = DataHeader.decode(payload)
            problem = entry_problem(entry, header, schema)
            if problem:
                raise IndexUnavailableError(f"INDEX entry disagrees with the DATA frame: {problem} at offset {offset}")
            b = decode_batch(schema, header, payload[DATA_HEADER_SIZE:])
            # the decoder's half of the first_axis check (explicit axes: SPEC §9.1)
            if b.count and pack_axis(b.axis[0], schema.is_time) != entry.first_axis_raw:
                raise IndexUnavailableError(f"INDEX entry disagrees with the DATA frame: first_axis of the "
                                            f"frame at offset {offset}")
            keep = (b.axis >= lo) & (b.axis <= hi)
            b.raw = {k: v[keep] for k, v in b.raw.items()}
            b.axis, b.count = b.axis[keep], int(keep.sum())
            yield offset, b


class IndexedFile(SourceReader):
    """The last writer session of a sealed file, opened from its END (SPEC
    §9.2): END -> INDEX, and the session's first segment for the schemas.
    Anything that disagrees raises IndexUnavailableError; the caller then
    scans (reader.LogbFile)."""

    def __init__(self, src):
        self.source = open_source(src)
        buf = self.buf = self.source.buf
        try:
            decode_file_header(buf[:FILE_HEADER_SIZE])
            end_pos = len(buf) - END_FRAME_SIZE
            end = End.decode(_payload_at(buf, end_pos, FrameType.END))
            index_pos, self.session_start = end_targets(end_pos, end)
            if index_pos is None:
                raise IndexUnavailableError("the END frame records no INDEX")
            index = Index.decode(_payload_at(buf, index_pos, FrameType.INDEX))
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
                pos = entry_offset(index_pos, e)
                if not self.session_start <= pos < index_pos:
                    raise IndexUnavailableError("an INDEX entry points outside its session")
                rows.append((pos, axis_value(e.first_axis_raw, schema.is_time), e))
            self.streams[uuid] = IndexedStream(self, schema, rows)

    def _first_segment_schemas(self, pos, limit):
        """The schemas the session's first segment declares before its first DATA frame."""
        Sync.decode(_payload_at(self.buf, pos, FrameType.SYNC))
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
        raise NotFoundError(f"no stream {key!r}")


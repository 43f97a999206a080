"""Frame scanning with recovery (SPEC §10): every CRC-valid frame in order,
and an honest account of every byte that was not one.

A frame whose CRC fails, or whose length runs past the end, is damage: the
scanner resynchronises at the next CRC-valid SYNC frame (rule 3) and records
the skipped range with its cause. If no SYNC follows, the input was cut
inside the frame or the damage: that is truncation, a report and never an
exception. Strict mode raises CorruptFrameError at the first damage instead.
"""

from dataclasses import dataclass, field

from .errors import CorruptFrameError, NotLogbError, UnsupportedVersionError
from .framing import (
    FILE_HEADER_SIZE,
    FRAME_HEADER,
    FRAME_HEADER_SIZE,
    FRAME_OVERHEAD,
    MAGIC,
    VERSION_MAJOR,
    SYNC_PATTERN,
    decode_file_header,
    frame_crc_ok,
    is_file_header,
)
from .tables import FrameType

SYNC_PAYLOAD_MIN = 32
# Resync only believes SYNC frames of plausible size, so hostile input full of
# sync patterns with huge lengths cannot make every candidate a full-file CRC.
SYNC_PAYLOAD_MAX = 1 << 16


@dataclass(frozen=True)
class Skip:
    start: int
    end: int  # exclusive
    cause: str

    def as_json(self):
        return {"start": self.start, "end": self.end, "cause": self.cause}


@dataclass(frozen=True)
class Note:
    """Something a reader met and dealt with: a rejected frame, an ignored
    field, a rule a writer broke. Not byte damage (that is a Skip)."""

    offset: int
    kind: str
    message: str

    def as_json(self):
        return {"offset": self.offset, "kind": self.kind, "message": self.message}


@dataclass
class Report:
    size: int = 0
    header: object = None  # FileHeader, or None when read in recovery mode
    skipped: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    truncated: bool = False
    truncated_at: object = None  # offset where the incomplete frame or damage began
    frames: int = 0

    @property
    def clean(self):
        return not self.skipped and not self.truncated

    def note(self, offset, kind, message):
        self.notes.append(Note(offset, kind, message))


@dataclass(frozen=True)
class FrameRef:
    offset: int
    type: int
    flags: int
    stream_id: int
    payload_len: int

    @property
    def payload_offset(self):
        return self.offset + FRAME_HEADER_SIZE

    @property
    def end(self):
        return self.offset + FRAME_OVERHEAD + self.payload_len

    def payload(self, buf):
        return buf[self.payload_offset : self.payload_offset + self.payload_len]


def check_header(buf, report, recover=False):
    """Validate the file header. Returns the offset of the first frame, or
    None when there is nothing to read. Raises NotLogbError /
    UnsupportedVersionError unless `recover` asks to resync instead."""
    size = len(buf)
    if size < FILE_HEADER_SIZE and bytes(buf[: min(size, 8)]) == MAGIC[: min(size, 8)]:
        # A cut inside the header: an empty file that lost its tail. Zero
        # bytes is such a cut too (power lost before the header was written).
        if size:
            report.skipped.append(Skip(0, size, "truncated"))
        report.truncated, report.truncated_at = True, 0
        return None
    try:
        report.header = decode_file_header(buf[:FILE_HEADER_SIZE])
        return FILE_HEADER_SIZE
    except NotLogbError:  # an unknown major version stays an error in every mode (SPEC §2.4)
        if not recover:
            raise
    first = find_sync(buf, 0)
    end = size if first is None else first
    if end:
        report.skipped.append(Skip(0, end, "bad file header"))
    if first is None:
        report.truncated, report.truncated_at = True, 0
    else:
        report.note(first, "resync", f"resynchronised at the SYNC frame at offset {first}")
    return first


def find_sync(buf, start):
    """Offset of the first CRC-valid, well-formed SYNC frame starting after `start`."""
    size = len(buf)
    i = start + FRAME_HEADER_SIZE
    while True:
        i = buf.find(SYNC_PATTERN, i)
        if i < 0:
            return None
        c = i - FRAME_HEADER_SIZE
        if c > start or (c == start and start == 0):
            plen, ftype, _flags, _sid = FRAME_HEADER.unpack_from(buf, c)
            if (ftype == FrameType.SYNC and SYNC_PAYLOAD_MIN <= plen <= SYNC_PAYLOAD_MAX
                    and c + FRAME_OVERHEAD + plen <= size and frame_crc_ok(buf, c, plen)):
                return c
        i += 1


def iter_frames(buf, report, start, strict=False):
    """Yield every CRC-valid frame from `start`, recording damage in `report`."""
    size = len(buf)
    pos = start
    while pos is not None and pos < size:
        if size - pos < FRAME_HEADER_SIZE:
            _truncate(report, pos, size, strict)
            return
        plen, ftype, flags, sid = FRAME_HEADER.unpack_from(buf, pos)
        end = pos + FRAME_OVERHEAD + plen
        if end <= size and frame_crc_ok(buf, pos, plen):
            report.frames += 1
            yield FrameRef(pos, ftype, flags, sid, plen)
            pos = end
            continue
        if is_file_header(buf, pos):
            major = int.from_bytes(buf[pos + 8 : pos + 10], "little")
            if major != VERSION_MAJOR:  # another format generation: nothing after it is ours to read
                if strict:
                    raise UnsupportedVersionError(f"embedded file header of major version {major} at {pos}")
                report.skipped.append(Skip(pos, size, "unsupported version"))
                return
            _damage(report, pos, pos + FILE_HEADER_SIZE, "embedded file header", strict)
            pos += FILE_HEADER_SIZE
            continue
        nxt = find_sync(buf, pos)
        if nxt is None:
            _truncate(report, pos, size, strict, "truncated" if end > size else "crc mismatch")
            return
        _damage(report, pos, nxt, "length past end" if end > size else "crc mismatch", strict)
        report.note(nxt, "resync", f"resynchronised at the SYNC frame at offset {nxt}")
        pos = nxt


def _damage(report, start, end, cause, strict):
    if strict:
        raise CorruptFrameError(f"{cause} at offset {start}")
    report.skipped.append(Skip(start, end, cause))


def _truncate(report, start, size, strict, cause="truncated"):
    if strict and cause != "truncated":
        raise CorruptFrameError(f"{cause} at offset {start}")
    report.skipped.append(Skip(start, size, cause))
    report.truncated, report.truncated_at = True, start

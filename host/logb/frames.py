"""One payload class per frame type: each knows its payload layout (SPEC §4, §8, §9).

`encode()` returns the payload and `frame(stream_id)` the whole frame;
`decode(payload)` parses one, raising MalformedPayloadError for anything short
or malformed. Frame types that a later minor version may extend (SYNC, SCHEMA,
RUN, INDEX, END) ignore trailing bytes; the others reject them. ("Records" are
the rows a DATA frame carries.)
"""

import struct
from dataclasses import dataclass
from itertools import starmap

from .binary import Builder, Cursor
from .errors import MalformedPayloadError
from .framing import SYNC_PATTERN, encode_frame
from .schema import Schema
from .tables import FrameType

_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")


def axis_value(raw8, is_time):
    """Interpret 8 stored axis bytes: i64 ticks for time axes, f64 otherwise."""
    return (_I64 if is_time else _F64).unpack(raw8)[0]


def pack_axis(value, is_time):
    return _I64.pack(int(value)) if is_time else _F64.pack(float(value))


def _no_leftovers(cur, what):
    if cur.remaining:
        raise MalformedPayloadError(f"{cur.remaining} unexpected bytes after the {what} payload")


def _pairs(cur, what):
    n = cur.u32(what + " count")
    cur.need(8 * n, what)
    return tuple((cur.string(what + " key"), cur.string(what + " value")) for _ in range(n))


def _put_pairs(b, pairs):
    b.u32(len(pairs))
    for k, v in pairs:
        b.string(k).string(v)


class _Frame:
    TYPE = None  # its tables.FrameType

    def frame(self, stream_id=0):
        """The whole frame: envelope, this payload, CRC."""
        return encode_frame(self.TYPE, self.encode(), stream_id)


@dataclass(frozen=True)
class Sync(_Frame):
    TYPE = FrameType.SYNC
    segment_seq: int
    wall_time_ns: int = 0

    def encode(self):
        return SYNC_PATTERN + struct.pack("<Qq", self.segment_seq, self.wall_time_ns)

    @classmethod
    def decode(cls, payload):
        if len(payload) < 32 or bytes(payload[:16]) != SYNC_PATTERN:
            raise MalformedPayloadError("SYNC frame without the sync pattern or too short")
        seq, wall = struct.unpack_from("<Qq", payload, 16)
        return cls(seq, wall)


@dataclass(frozen=True)
class SchemaFrame(_Frame):
    TYPE = FrameType.SCHEMA
    schema: Schema

    def encode(self):
        return self.schema.encode()

    @classmethod
    def decode(cls, payload):
        return cls(Schema.decode(payload))


@dataclass(frozen=True)
class Meta(_Frame):
    TYPE = FrameType.META
    pairs: tuple  # (key, value) in stored order; duplicates kept for reporting

    def encode(self):
        b = Builder()
        _put_pairs(b, self.pairs)
        return b.bytes()

    @classmethod
    def decode(cls, payload):
        cur = Cursor(payload)
        pairs = _pairs(cur, "META")
        _no_leftovers(cur, "META")
        return cls(pairs)

    def as_dict(self):
        return dict(self.pairs)

    def duplicate_keys(self):
        seen, dups = set(), []
        for k, _ in self.pairs:
            if k in seen:
                dups.append(k)
            seen.add(k)
        return dups


@dataclass(frozen=True)
class Attach(_Frame):
    TYPE = FrameType.ATTACH
    name: str
    media_type: str
    codec: int
    raw_size: int
    stored: bytes  # as stored (compressed per codec)

    def encode(self):
        b = Builder().string(self.name).string(self.media_type)
        b.u8(self.codec).u8(0).u8(0).u8(0).u64(self.raw_size).raw(self.stored)
        return b.bytes()

    @classmethod
    def decode(cls, payload):
        cur = Cursor(payload)
        name = cur.string("attachment name")
        media = cur.string("media type")
        codec = cur.u8("codec")
        cur.raw(3, "reserved")
        raw_size = cur.u64("raw_size")
        return cls(name, media, codec, raw_size, cur.rest())


@dataclass(frozen=True)
class Run(_Frame):
    TYPE = FrameType.RUN
    run_id: int
    index: int = 0
    params: tuple = ()

    def encode(self):
        b = Builder().u32(self.run_id).u32(self.index)
        _put_pairs(b, self.params)
        return b.bytes()

    @classmethod
    def decode(cls, payload):
        cur = Cursor(payload)
        return cls(cur.u32("run_id"), cur.u32("index"), _pairs(cur, "RUN param"))


DATA_HEADER = struct.Struct("<8sIIBBHQ")
DATA_HEADER_SIZE = DATA_HEADER.size  # 28


@dataclass(frozen=True, slots=True)
class DataHeader:
    """The fixed 28 bytes that open a DATA payload; the records follow.
    Slotted: a file holds one per DATA frame (80 bytes, not 330 with a __dict__)."""

    axis_base_raw: bytes
    record_count: int
    run_id: int
    codec: int
    filter: int
    raw_size: int

    def axis_base(self, is_time):
        return axis_value(self.axis_base_raw, is_time)

    @classmethod
    def decode(cls, payload):
        if len(payload) < DATA_HEADER_SIZE:
            raise MalformedPayloadError(f"DATA payload of {len(payload)} bytes is shorter than its 28-byte header")
        base, count, run_id, codec, filt, _reserved, raw_size = DATA_HEADER.unpack_from(payload, 0)
        return new_data_header(base, count, run_id, codec, filt, raw_size)


class _DataHeaderSlots:
    """DataHeader's layout, mutable: built by a plain __init__, then made a DataHeader."""

    __slots__ = DataHeader.__slots__

    def __init__(self, axis_base_raw, record_count, run_id, codec, filt, raw_size):
        self.axis_base_raw = axis_base_raw
        self.record_count = record_count
        self.run_id = run_id
        self.codec = codec
        self.filter = filt
        self.raw_size = raw_size


def new_data_header(axis_base_raw, record_count, run_id, codec, filt, raw_size):
    """DataHeader(...) at a quarter of its cost: the frozen __init__'s object.__setattr__
    per field is most of a DATA frame's cost at open; the same slots set plainly, then
    the class swapped (the layouts are one: Python refuses the swap otherwise), is not."""
    header = _DataHeaderSlots(axis_base_raw, record_count, run_id, codec, filt, raw_size)
    header.__class__ = DataHeader
    return header


@dataclass(frozen=True)
class Data(_Frame):
    TYPE = FrameType.DATA
    header: DataHeader
    stored: bytes  # the records region as stored (filtered, compressed)

    def encode(self):
        h = self.header
        return DATA_HEADER.pack(h.axis_base_raw, h.record_count, h.run_id, h.codec, h.filter,
                                0, h.raw_size) + self.stored

    @classmethod
    def decode(cls, payload):
        return cls(DataHeader.decode(payload), bytes(payload[DATA_HEADER_SIZE:]))


_INDEX_ENTRY = struct.Struct("<Q8sII")


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One INDEX entry (slotted: an INDEX holds one per DATA frame of its session)."""

    back_offset: int
    first_axis_raw: bytes
    record_count: int
    run_id: int


class _IndexEntrySlots:
    """IndexEntry's layout, mutable: new_index_entry's way past the frozen __init__ (as _DataHeaderSlots)."""

    __slots__ = IndexEntry.__slots__

    def __init__(self, back_offset, first_axis_raw, record_count, run_id):
        self.back_offset = back_offset
        self.first_axis_raw = first_axis_raw
        self.record_count = record_count
        self.run_id = run_id


def new_index_entry(back_offset, first_axis_raw, record_count, run_id):
    """IndexEntry(...) at half its cost (an INDEX is decoded entry by entry at open)."""
    entry = _IndexEntrySlots(back_offset, first_axis_raw, record_count, run_id)
    entry.__class__ = IndexEntry
    return entry


@dataclass(frozen=True)
class Index(_Frame):
    TYPE = FrameType.INDEX
    streams: tuple  # (uuid, (IndexEntry, ...)) pairs

    def encode(self):
        b = Builder().u32(len(self.streams))
        for uuid, entries in self.streams:
            b.raw(uuid).u32(len(entries))
            for e in entries:
                b.u64(e.back_offset).raw(e.first_axis_raw).u32(e.record_count).u32(e.run_id)
        return b.bytes()

    @classmethod
    def decode(cls, payload):
        cur = Cursor(payload)
        n = cur.u32("stream_count")
        cur.need(20 * n, "INDEX streams")
        streams = []
        for _ in range(n):
            uuid = cur.raw(16, "stream_uuid")
            count = cur.u32("entry_count")
            # every entry in one pass over one slice (one entry per DATA frame); short: the same error
            entries = tuple(starmap(new_index_entry, _INDEX_ENTRY.iter_unpack(cur.raw(24 * count, "INDEX entries"))))
            streams.append((uuid, entries))
        return cls(tuple(streams))


END_PAYLOAD_SIZE = 16


@dataclass(frozen=True)
class End(_Frame):
    TYPE = FrameType.END
    index_back_offset: int
    session_bytes: int

    def encode(self):
        return struct.pack("<QQ", self.index_back_offset, self.session_bytes)

    @classmethod
    def decode(cls, payload):
        if len(payload) < END_PAYLOAD_SIZE:
            raise MalformedPayloadError("END payload shorter than 16 bytes")
        return cls(*struct.unpack_from("<QQ", payload, 0))


# Which class parses which frame type (every type but the reserved SIGN).
FRAME_CLASSES = {cls.TYPE: cls for cls in (Sync, SchemaFrame, Meta, Attach, Run, Data, Index, End)}

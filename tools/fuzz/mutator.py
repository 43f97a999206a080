"""A structure-aware mutator: inputs are parsed into frames, mutated as a
hostile writer would (fields, lengths, payloads, order, duplicates, bombs,
lying seals) and re-encoded with valid CRCs, so the reader's decoders, not
its CRC check, are what the mutations reach. A few operators still do raw
damage (a flipped byte, a cut) so the resync paths stay covered.
"""

import dataclasses
import functools
import struct
import zlib

import lz4.block
import zstandard

from logb.errors import LogbError
from logb.frames import DATA_HEADER, DATA_HEADER_SIZE, End, Index, IndexEntry
from logb.framing import FRAME_OVERHEAD, encode_frame
from logb.scan import FrameRef, FrameScanner
from logb.schema import Conversion, Schema
from logb.tables import Codec, ConversionType, DataType, FrameType

MAX_SIZE = 1 << 20  # the limits hold for inputs up to 1 MB

INTERESTING = (0, 1, 2, 7, 8, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0xFFFF, 1 << 20, (1 << 20) + 1, 0x7FFFFFFF,
               0x80000000, 0xFFFFFFFF, 1 << 32, 1 << 53, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)
WIDTHS = (1, 2, 4, 8)
KNOWN_TYPES = tuple(int(t) for t in FrameType)

# Fields a hostile writer lies in, per frame type: (payload offset, width).
# DATA: axis_base, record_count, run_id, codec, filter, reserved, raw_size
# (frames.DATA_HEADER); SYNC: segment_seq, wall_time; RUN: run_id, index, count;
# END: index_back_offset, session_bytes.
FIELDS = {
    FrameType.DATA: ((0, 8), (8, 4), (12, 4), (16, 1), (17, 1), (18, 2), (20, 8)),
    FrameType.SYNC: ((16, 8), (24, 8)),
    FrameType.RUN: ((0, 4), (4, 4), (8, 4)),
    FrameType.END: ((0, 8), (8, 8)),
    FrameType.INDEX: ((0, 4), (20, 4), (24, 8), (32, 8), (40, 4), (44, 4)),
}


@dataclasses.dataclass
class Piece:
    """One frame of an input (re-encoded with a valid CRC), or raw bytes
    (a file header, damage) kept as they are."""

    type: int = 0
    flags: int = 0
    sid: int = 0
    payload: bytes = b""
    raw: bytes = None

    def encode(self):
        return self.raw if self.raw is not None else encode_frame(self.type, self.payload, self.sid, self.flags)

    @property
    def size(self):
        return len(self.raw) if self.raw is not None else len(self.payload) + FRAME_OVERHEAD


def parse(data):
    """The input as pieces: every CRC-valid frame, and the bytes between them raw."""
    pieces, pos = [], 0
    try:
        events = FrameScanner(recover=True).scan(data)
        for ev in events:
            if type(ev) is not FrameRef:
                continue
            if ev.offset > pos:
                pieces.append(Piece(raw=bytes(data[pos:ev.offset])))
            pieces.append(Piece(ev.type, ev.flags, ev.stream_id, bytes(ev.payload(data))))
            pos = ev.end
    except LogbError:  # an unsupported version: nothing after it is a frame to this scanner
        pass
    if pos < len(data):
        pieces.append(Piece(raw=bytes(data[pos:])))
    return pieces


def encode(pieces):
    return b"".join(p.encode() for p in pieces)


# ---------------------------------------------------------------- bombs
@functools.lru_cache(maxsize=None)
def bomb(codec, size):
    """`size` zero bytes compressed by `codec`: a tiny payload that claims a lot."""
    zeros = bytes(size)
    if codec == Codec.zstd:
        return zstandard.ZstdCompressor(level=19, write_content_size=False).compress(zeros)
    if codec == Codec.lz4:
        return lz4.block.compress(zeros, mode="high_compression", store_size=False)
    if codec == Codec.deflate:
        return zlib.compress(zeros, 9)
    return zeros


BOMB_SIZES = (1 << 16, 1 << 22, 1 << 26)
BOMB_CODECS = (Codec.zstd, Codec.lz4, Codec.deflate)


# ---------------------------------------------------------------- helpers
def _interesting(rng, width):
    bits = 8 * width
    if rng.random() < 0.7:
        v = rng.choice(INTERESTING)
    else:
        v = rng.getrandbits(bits)
    if rng.random() < 0.2:
        v += rng.choice((-1, 1))
    return v % (1 << bits)


def _put(payload, off, width, value):
    if off + width > len(payload):
        return payload
    return payload[:off] + value.to_bytes(width, "little") + payload[off + width:]


def _frames(pieces, *types):
    return [i for i, p in enumerate(pieces) if p.raw is None and (not types or p.type in types)]


def _room(pieces, max_size):
    return max_size - sum(p.size for p in pieces)


def _schema_of(piece):
    try:
        return Schema.decode(piece.payload)
    except (LogbError, ValueError, UnicodeDecodeError):
        return None


# ---------------------------------------------------------------- operators
# Each takes (pieces, rng, ctx) and changes `pieces` in place; it may do nothing.
def op_field(pieces, rng, ctx):
    """A lie in a header field a decoder trusts: a count, a size, an offset."""
    idx = _frames(pieces, *FIELDS)
    if not idx:
        return
    p = pieces[rng.choice(idx)]
    off, width = rng.choice(FIELDS[p.type])
    if p.type == FrameType.INDEX and off >= 20 and len(p.payload) > 20:
        off += 24 * rng.randrange(max(1, (len(p.payload) - 20) // 24))  # any entry, not just the first
    p.payload = _put(p.payload, off, width, _interesting(rng, width))


def op_int(pieces, rng, ctx):
    """An interesting integer anywhere in a payload (string lengths, counts, widths)."""
    idx = [i for i in _frames(pieces) if pieces[i].payload]
    if not idx:
        return
    p = pieces[rng.choice(idx)]
    width = rng.choice(WIDTHS)
    off = rng.randrange(len(p.payload))
    p.payload = _put(p.payload, off, width, _interesting(rng, width))


def op_bytes(pieces, rng, ctx):
    """A few random bytes of a payload changed (the CRC then recomputed)."""
    idx = [i for i in _frames(pieces) if pieces[i].payload]
    if not idx:
        return
    p = pieces[rng.choice(idx)]
    b = bytearray(p.payload)
    for _ in range(rng.randint(1, 8)):
        b[rng.randrange(len(b))] = rng.getrandbits(8)
    p.payload = bytes(b)


def op_resize(pieces, rng, ctx):
    """A payload grown or shrunk: bytes inserted, removed, or the tail cut."""
    idx = _frames(pieces)
    if not idx:
        return
    p = pieces[rng.choice(idx)]
    n = len(p.payload)
    at = rng.randint(0, n)
    kind = rng.random()
    if kind < 0.4 and n:
        p.payload = p.payload[:at]
    elif kind < 0.7 and n:
        p.payload = p.payload[:at] + p.payload[at + rng.randint(1, 64):]
    else:
        k = min(rng.choice((1, 4, 8, 64, 1024)), max(0, _room(pieces, ctx.max_size)))
        p.payload = p.payload[:at] + bytes(rng.getrandbits(8) for _ in range(min(k, 64))) + bytes(max(0, k - 64)) \
            + p.payload[at:]


def op_envelope(pieces, rng, ctx):
    """Another type, stream_id or flags for a frame."""
    idx = _frames(pieces)
    if not idx:
        return
    p = pieces[rng.choice(idx)]
    r = rng.random()
    if r < 0.4:
        p.type = rng.choice(KNOWN_TYPES) if rng.random() < 0.9 else rng.getrandbits(8)
    elif r < 0.8:
        sids = sorted({q.sid for q in pieces if q.raw is None})
        p.sid = rng.choice(sids) if sids and rng.random() < 0.5 else _interesting(rng, 2)
    else:
        p.flags = rng.getrandbits(8)


def op_order(pieces, rng, ctx):
    """Frames dropped, duplicated, swapped or moved."""
    idx = _frames(pieces)
    if not idx:
        return
    i = rng.choice(idx)
    r = rng.random()
    if r < 0.3:
        del pieces[i]
    elif r < 0.6:
        if pieces[i].size <= _room(pieces, ctx.max_size):
            pieces.insert(rng.randint(0, len(pieces)), dataclasses.replace(pieces[i]))
    elif r < 0.8:
        j = rng.choice(idx)
        pieces[i], pieces[j] = pieces[j], pieces[i]
    else:
        pieces.insert(rng.randint(0, len(pieces) - 1), pieces.pop(i))


def op_repeat(pieces, rng, ctx):
    """One frame repeated many times: amplification (anchors, schemas, zero-size records)."""
    idx = _frames(pieces)
    if not idx:
        return
    i = rng.choice(idx)
    size = pieces[i].size
    n = min(rng.choice((10, 100, 1000, 10000, 100000)), _room(pieces, ctx.max_size) // max(size, 1))
    pieces[i + 1:i + 1] = [dataclasses.replace(pieces[i]) for _ in range(max(0, n))]


def op_bomb(pieces, rng, ctx):
    """A DATA or ATTACH frame whose stored bytes decompress to far more than it claims."""
    idx = _frames(pieces, FrameType.DATA, FrameType.ATTACH)
    if not idx:
        return
    p = pieces[rng.choice(idx)]
    codec, size = rng.choice(BOMB_CODECS), rng.choice(BOMB_SIZES)
    stored = bomb(codec, size)
    if len(stored) > _room(pieces, ctx.max_size) + len(p.payload):
        return
    if p.type == FrameType.DATA:
        if len(p.payload) < DATA_HEADER_SIZE:
            return
        base, count, run_id, _codec, _filt, _res, raw_size = DATA_HEADER.unpack_from(p.payload)
        if rng.random() < 0.5:
            raw_size = size
        p.payload = DATA_HEADER.pack(base, count, run_id, codec, 0, 0, raw_size) + stored
    else:
        a = _attach_fields(p.payload)
        if a is None:
            return
        name_media, raw_size = a
        if rng.random() < 0.5:
            raw_size = size
        p.payload = name_media + struct.pack("<B3xQ", codec, raw_size) + stored


def _attach_fields(payload):
    """(the name and media type strings as stored, raw_size) of an ATTACH payload, or None."""
    pos = 0
    for _ in range(2):
        if pos + 4 > len(payload):
            return None
        pos += 4 + int.from_bytes(payload[pos:pos + 4], "little")
    if pos + 12 > len(payload):
        return None
    return payload[:pos], int.from_bytes(payload[pos + 4:pos + 12], "little")


def op_schema(pieces, rng, ctx):
    """A SCHEMA decoded, changed as a hostile writer would, and re-encoded."""
    idx = _frames(pieces, FrameType.SCHEMA)
    if not idx:
        return
    p = pieces[rng.choice(idx)]
    s = _schema_of(p)
    if s is None:
        return
    r = rng.random()
    fields = list(s.fields)
    if r < 0.15:
        s = dataclasses.replace(s, record_bits=_interesting(rng, 4))
    elif r < 0.25:
        s = dataclasses.replace(s, axis_step=_signed(rng), axis_scale=_signed(rng), axis_exp=rng.randint(-128, 127)) \
            if s.is_time else dataclasses.replace(s, axis_step=rng.choice(_FLOATS), axis_scale=rng.choice(_FLOATS))
    elif r < 0.35:
        s = dataclasses.replace(s, axis_kind=rng.randrange(7), axis_mode=rng.randrange(4),
                                axis_field=rng.randrange(max(1, len(fields) + 1)))
    elif r < 0.6 and fields:
        i = rng.randrange(len(fields))
        f = fields[i]
        choice = rng.random()
        if choice < 0.3:
            f = dataclasses.replace(f, bit_width=rng.choice((0, 1, 7, 8, 16, 32, 64, 65, 128, 1 << 20, 0xFFFFFFFF)))
        elif choice < 0.5:
            f = dataclasses.replace(f, bit_offset=_interesting(rng, 4))
        elif choice < 0.8:
            f = dataclasses.replace(f, data_type=rng.randrange(8), flags=rng.getrandbits(2),
                                    byte_order=rng.randrange(3))
        else:  # a zero-width text field: free to store, maybe not to decode
            f = dataclasses.replace(f, data_type=rng.choice((DataType.string, DataType.bytes)), bit_width=0)
        fields[i] = f
        s = dataclasses.replace(s, fields=tuple(fields))
    elif r < 0.8 and fields:
        i = rng.randrange(len(fields))
        n = rng.choice((2, 100, 5000, 30000))
        budget = _room(pieces, ctx.max_size) // 40
        fields[i] = dataclasses.replace(fields[i], conversion=_big_conversion(rng, min(n, max(budget, 1))))
        s = dataclasses.replace(s, fields=tuple(fields))
    elif fields:  # many fields
        n = min(rng.choice((10, 1000, 60000)), _room(pieces, ctx.max_size) // 40)
        f = rng.choice(fields)
        extra = [dataclasses.replace(f, name=f"{f.name}{k}") for k in range(max(0, n))]
        s = dataclasses.replace(s, fields=tuple(fields + extra)[:0xFFFF])
    try:
        p.payload = s.encode()
    except (LogbError, ValueError, OverflowError, struct.error, TypeError):
        pass


_FLOATS = (0.0, -0.0, 1.0, -1.0, 1e-300, 1e300, float("inf"), float("-inf"), float("nan"), 0.5, 2.0)


def _signed(rng):
    return _interesting(rng, 8) - (1 << 63)


def _big_conversion(rng, n):
    kind = rng.choice((ConversionType.table, ConversionType.table_interp, ConversionType.value_to_text,
                       ConversionType.range_to_text))
    keys = [float(k) for k in range(n)]
    if rng.random() < 0.3:
        rng.shuffle(keys)
    if kind in (ConversionType.table, ConversionType.table_interp):
        return Conversion.table([(k, k) for k in keys], interpolate=kind == ConversionType.table_interp)
    if kind == ConversionType.value_to_text:
        return Conversion.value_to_text([(k, "x") for k in keys], "d")
    return Conversion.range_to_text([(k, k + 0.5, "x") for k in keys], "d")


def op_reseal(pieces, rng, ctx):
    """A fresh INDEX and END for the last session, so the END-open path is
    reached after every other change; sometimes with one lie in an entry."""
    while pieces and pieces[-1].raw is None and pieces[-1].type in (FrameType.END, FrameType.INDEX):
        pieces.pop()
    offsets, pos = [], 0
    for p in pieces:
        offsets.append(pos)
        pos += p.size
    syncs = _frames(pieces, FrameType.SYNC)
    if not syncs:
        return
    ends = _frames(pieces, FrameType.END)
    start = next((i for i in syncs if not ends or i > ends[-1]), syncs[-1])
    uuids, streams = {}, {}
    for i in range(start, len(pieces)):
        p = pieces[i]
        if p.raw is not None:
            continue
        if p.type == FrameType.SYNC:
            uuids = {}
        elif p.type == FrameType.SCHEMA:
            s = _schema_of(p)
            if s is not None:
                uuids.setdefault(p.sid, s.uuid)
        elif p.type == FrameType.DATA and p.sid in uuids and len(p.payload) >= DATA_HEADER_SIZE:
            base, count, run_id = DATA_HEADER.unpack_from(p.payload)[:3]
            streams.setdefault(uuids[p.sid], []).append((offsets[i], base, count, run_id))
    index_pos = pos
    table = [[uuid, [IndexEntry(index_pos - o, base, n, run) for o, base, n, run in rows]]
             for uuid, rows in streams.items()]
    if table and rng.random() < 0.5:
        _lie(table, rng)
    index = Piece(FrameType.INDEX, 0, 0, Index(tuple((u, tuple(e)) for u, e in table)).encode())
    end_pos = index_pos + index.size
    end = End(end_pos - index_pos, end_pos - offsets[start])
    pieces += [index, Piece(FrameType.END, 0, 0, end.encode())]


def _lie(table, rng):
    entries = rng.choice(table)[1]
    r = rng.random()
    if r < 0.25 and entries:
        entries += [entries[-1]] * rng.choice((1, 100, 10000))  # duplicated entries
    elif r < 0.5 and entries:
        i = rng.randrange(len(entries))
        entries[i] = dataclasses.replace(entries[i], record_count=_interesting(rng, 4))
    elif r < 0.75 and entries:
        i = rng.randrange(len(entries))
        entries[i] = dataclasses.replace(entries[i], first_axis_raw=_interesting(rng, 8).to_bytes(8, "little"))
    elif len(table) > 1:  # another stream's frames
        a, b = rng.sample(range(len(table)), 2)
        table[a][1], table[b][1] = table[b][1], table[a][1]


def op_splice(pieces, rng, ctx):
    """Frames from another seed, inserted (the crossover)."""
    if not ctx.others:
        return
    other = parse(rng.choice(ctx.others))
    idx = _frames(other)
    if not idx:
        return
    a = rng.choice(idx)
    b = min(len(other), a + rng.randint(1, 8))
    chunk = [q for q in other[a:b] if q.raw is None]
    if sum(q.size for q in chunk) <= _room(pieces, ctx.max_size):
        at = rng.randint(0, len(pieces))
        pieces[at:at] = chunk


def op_damage(pieces, rng, ctx):
    """Raw damage a CRC catches: one flipped byte in a frame, or the input cut."""
    if not pieces:
        return
    i = rng.randrange(len(pieces))
    data = bytearray(pieces[i].encode())
    if not data:
        return
    if rng.random() < 0.5:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        pieces[i] = Piece(raw=bytes(data))
    else:
        pieces[i] = Piece(raw=bytes(data[:rng.randrange(len(data))]))
        del pieces[i + 1:]


OPERATORS = ((op_field, 5), (op_int, 4), (op_bytes, 3), (op_resize, 2), (op_envelope, 2), (op_order, 3),
             (op_repeat, 1), (op_bomb, 1), (op_schema, 4), (op_reseal, 2), (op_splice, 1), (op_damage, 1))


@dataclasses.dataclass
class Context:
    others: tuple = ()  # other inputs to splice from
    max_size: int = MAX_SIZE


def mutate(data, rng, ctx=Context()):
    """1 to 4 operators applied to `data`; the result is at most ctx.max_size bytes."""
    pieces = parse(data)
    ops, weights = zip(*OPERATORS)
    for op in rng.choices(ops, weights, k=rng.choice((1, 1, 2, 3, 4))):
        op(pieces, rng, ctx)
    out = encode(pieces)
    return out[:ctx.max_size]

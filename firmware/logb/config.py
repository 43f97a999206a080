"""The device config (LBCF, docs/SPEC.md §13.7), as the host's DBC compiler
writes it (`logb dbc compile FILE.dbc -o OUT.lbcf`). All little-endian:

    b"LBCF", u16 version = 1, u16 entry_count, then per entry:
    u32 match_id (bit 31 = extended), u32 match_mask, u8 kind, u8 payload_len,
    u16 record_size, u32 schema_len, schema_len bytes = the SCHEMA payload.

Entry i becomes stream_id i + 1. Entry 0 is the raw bus stream; its schema
states the routing in its meta `logb.can.routing` (`exclusive` from the
compiler; the writer switches it for `mirror`, see raw_routing). Loading
happens once at boot and may allocate; routing afterwards does not: every
id is kept as a small integer key `id | extended << 29` (below 2**30).
"""

import struct

KIND_RAW = 0
KIND_MESSAGE = 1
KIND_BRANCH = 2

_SELECT_KEY = b"\x0f\x00\x00\x00logb.can.select"
_ROUTING_KEY = b"\x10\x00\x00\x00logb.can.routing"
MIRROR = "mirror"
EXCLUSIVE = "exclusive"
_EXACT = 0x9FFFFFFF  # a match mask keeping the whole id and its format (SPEC §13.4)


class Entry:
    """One config entry, with what routing needs precomputed."""

    def __init__(self, index, match_id, mask, kind, payload_len, record_size, schema, offset=0):
        self.index = index
        self.offset = offset  # where the schema payload starts in the config file
        self.match_id = match_id
        self.mask = mask
        self.kind = kind
        self.payload_len = payload_len
        self.record_size = record_size
        self.schema = schema
        # Small-int key space: bit 31 (extended) moves to bit 29; bits 29/30 of a
        # real key are always 0, so an entry that requires them never matches.
        self.reachable = (match_id & ~mask) == 0 and (match_id & mask & 0x60000000) == 0
        self.key = (match_id & 0x1FFFFFFF) | ((match_id >> 31) << 29)
        self.kmask = (mask & 0x1FFFFFFF) | ((mask >> 31) << 29)
        self.select = parse_select(schema) if kind == KIND_BRANCH else ()

    def exact_key(self):
        """The one key this entry matches (its mask keeps the whole id and its format),
        or -1 when its mask leaves a choice (a J1939 PGN match)."""
        if not self.reachable or self.mask & _EXACT != _EXACT:
            return -1
        return self.key

    def exclusive(self):
        """May a frame go to this entry alone (SPEC §13.4)? A plain message of one
        whole id and at most 8 bytes: its record and schema meta rebuild the frame."""
        return self.kind == KIND_MESSAGE and self.exact_key() >= 0 and self.payload_len <= 8


def parse_select(schema):
    """The selector of a branch entry: the text after the last `logb.can.select`
    key of the schema's inline meta, as tuples (big, byte0, nbytes, shift, mask, value)."""
    i = schema.rfind(_SELECT_KEY) if hasattr(schema, "rfind") else bytes(schema).rfind(_SELECT_KEY)
    if i < 0:
        raise ValueError("branch entry without logb.can.select")
    i += len(_SELECT_KEY)
    (n,) = struct.unpack_from("<I", schema, i)
    text = bytes(schema[i + 4:i + 4 + n]).decode()
    out = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        words = part.split()
        order = words[0]
        off, width, value = int(words[1]), int(words[2]), int(words[3])
        if not 1 <= width <= 16:
            raise ValueError("selector width %d not supported on the device" % width)
        byte0 = off // 8
        nbytes = (off + width - 1) // 8 - byte0 + 1
        if order == "big":
            shift = 8 * nbytes - (off % 8) - width
        else:
            shift = off % 8
        out.append((order == "big", byte0, nbytes, shift, (1 << width) - 1, value))
    return tuple(out)


def selects(sel, data, plen) -> bool:
    """Does the payload, zero-padded to plen bytes, satisfy every condition of
    a branch selector? (as the host's `Mux.selects` on the padded payload)"""
    n = len(data)
    for big, byte0, nbytes, shift, mask, value in sel:
        if byte0 + nbytes > plen:
            return False
        v = 0
        if big:
            for j in range(byte0, byte0 + nbytes):
                v = (v << 8) | (data[j] if j < n else 0)
        else:
            for j in range(byte0 + nbytes - 1, byte0 - 1, -1):
                v = (v << 8) | (data[j] if j < n else 0)
        if (v >> shift) & mask != value:
            return False
    return True


def flip_uuid(schema):
    """The schema's uuid with its last bit inverted: the raw bus stream's uuid of the
    other routing (SPEC §13.1)."""
    return bytes(schema[0:15]) + bytes([schema[15] ^ 1])


def raw_routing(schema, routing):
    """A raw bus stream schema payload declaring `routing` ("mirror" or "exclusive"):
    (schema, changed). The value of its `logb.can.routing` key is replaced and its uuid
    moved to that routing's; (None, True) when the schema has no such key (a config
    from before the key; the caller builds the schema, schema.raw_schema)."""
    i = bytes(schema).rfind(_ROUTING_KEY)
    if i < 0:
        return None, True
    i += len(_ROUTING_KEY)
    n = _u32(schema, i)
    old = bytes(schema[i + 4:i + 4 + n]).decode()
    if old == routing:
        return schema, False
    uuid = bytes(schema[0:16])
    if (old == EXCLUSIVE) != (routing == EXCLUSIVE):  # an unknown value counts as mirror
        uuid = flip_uuid(schema)
    new = routing.encode()
    return (uuid + bytes(schema[16:i]) + len(new).to_bytes(4, "little") + new
            + bytes(schema[i + 4 + n:])), True


def _u16(b, o):
    return b[o] | (b[o + 1] << 8)


def _u32(b, o):
    return b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)


def parse(data):
    """LBCF bytes → list of Entry. ValueError when malformed."""
    if len(data) < 8 or bytes(data[0:4]) != b"LBCF":
        raise ValueError("not an LBCF config")
    if _u16(data, 4) != 1:
        raise ValueError("LBCF version %d not supported" % _u16(data, 4))
    count = _u16(data, 6)
    pos = 8
    out = []
    for i in range(count):
        if pos + 16 > len(data):
            raise ValueError("LBCF entry %d runs past the end" % i)
        match_id = _u32(data, pos)
        mask = _u32(data, pos + 4)
        kind = data[pos + 8]
        plen = data[pos + 9]
        rsize = _u16(data, pos + 10)
        n = _u32(data, pos + 12)
        pos += 16
        if pos + n > len(data):
            raise ValueError("LBCF entry %d's schema runs past the end" % i)
        out.append(Entry(i, match_id, mask, kind, plen, rsize, bytes(data[pos:pos + n]), pos))
        pos += n
    if pos != len(data):
        raise ValueError("%d bytes after the last LBCF entry" % (len(data) - pos))
    if not out or out[0].kind != KIND_RAW:
        raise ValueError("LBCF entry 0 must be the raw bus stream")
    return out


def read(src):
    """Read an LBCF config from a path, a file object or bytes."""
    if isinstance(src, str):
        with open(src, "rb") as f:
            return parse(f.read())
    if hasattr(src, "read"):
        return parse(src.read())
    return parse(src)


def check_schema(schema, record_size):
    """The device writes `t` (u32 ticks since the frame's axis_base, µs) at byte 0
    of every record: the schema must say exactly that. Returns the stream name."""
    (n,) = struct.unpack_from("<I", schema, 16)
    name = bytes(schema[20:20 + n]).decode()
    p = 20 + n
    record_bits, kind, mode, exp = struct.unpack_from("<IBBb", schema, p)
    p += 8
    (n,) = struct.unpack_from("<I", schema, p)
    p += 4 + n
    scale_lo, scale_hi, axis_field = struct.unpack_from("<IiH", schema, p + 8)
    if kind != 0 or mode != 1 or exp != -6 or scale_lo != 1 or scale_hi != 0 or axis_field != 0:
        raise ValueError("stream %r: the device needs an explicit µs time axis on field 0 "
                         "(axis_kind time, mode explicit, exp -6, scale 1)" % name)
    if (record_bits + 7) // 8 != record_size:
        raise ValueError("stream %r: record_size %d but record_bits %d" % (name, record_size, record_bits))
    return name

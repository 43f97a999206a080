"""SCHEMA payloads (docs/SPEC.md §6.1) built on the device for simple sensor
streams, byte-identical to what the host's `logb.Schema.encode()` gives for
the same declaration. Runs once per stream at start-up (allocates).

Every device stream has the CAN streams' time axis: field 0 `t`, u32 µs
ticks since the DATA frame's axis_base (explicit, exp -6, scale 1).
"""

import struct

# struct code -> (data_type, bit width); little-endian, packed in order after `t`
_TYPES = {
    "b": (1, 8), "B": (0, 8), "h": (1, 16), "H": (0, 16), "i": (1, 32), "I": (0, 32),
    "l": (1, 32), "L": (0, 32), "q": (1, 64), "Q": (0, 64), "f": (2, 32), "d": (2, 64),
}
_BYTES = {"b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "l": 4, "L": 4, "q": 8, "Q": 8, "f": 4, "d": 8}
T_DESCRIPTION = "ticks since the frame's axis_base"


def _s(text):
    b = text.encode()
    return struct.pack("<I", len(b)) + b


def _field(name, offset, width, dtype, unit="", desc="", conv=None):
    out = _s(name) + struct.pack("<IIBBB", offset, width, dtype, 0, 0) + _s(unit) + _s(desc)
    if conv is None:
        return out + b"\x00"
    return out + b"\x01" + struct.pack("<dd", float(conv[0]), float(conv[1]))


def sensor_schema(name, fields, uuid=None, device=""):
    """(schema payload, struct format of the fields, record size in bytes).

    fields: (name, struct code, unit[, offset, factor]); a factor/offset pair
    becomes a `linear` conversion (physical = offset + factor * raw).
    uuid: 16 bytes, default UUIDv5 of (device, name) as logb.stream_uuid."""
    if uuid is None:
        uuid = stream_uuid(device, name)
    if len(uuid) != 16:
        raise ValueError("uuid must be 16 bytes")
    parts = [_field("t", 0, 32, 0, "", T_DESCRIPTION)]
    fmt = "<"
    bit = 32
    for f in fields:
        fname, code, unit = f[0], f[1], f[2]
        if code not in _TYPES:
            raise ValueError("field %r: struct code %r not supported" % (fname, code))
        dtype, width = _TYPES[code]
        conv = (f[3], f[4]) if len(f) >= 5 else None
        parts.append(_field(fname, bit, width, dtype, unit, "", conv))
        fmt += code
        bit += 8 * _BYTES[code]
    size = bit // 8
    head = (bytes(uuid) + _s(name) + struct.pack("<IBBbB", bit, 0, 1, -6, 0) + _s("s")
            + struct.pack("<qqHH", 0, 1, 0, len(parts)))
    return head + b"".join(parts) + struct.pack("<I", 0), fmt, size


_RAW_FLAGS = ("extended", "remote", "error", "fd", "brs", "esi", "tx")


def raw_schema(uuid, name, fd, routing):
    """The raw bus stream's SCHEMA payload (docs/SPEC.md §13.1), byte-identical to the
    host's `logb.can.layout.raw_bus_schema(uuid, name, fd, routing=routing)`: for a
    config whose raw bus entry predates the `logb.can.routing` key."""
    payload = 64 if fd else 8
    parts = [_field("t", 0, 32, 0, "", T_DESCRIPTION), _field("id", 32, 29, 0, "", "CAN identifier"),
             _field("flags", 64, 8, 0, "", "bit0 extended, 1 remote, 2 error, 3 FD, 4 BRS, 5 ESI, 6 tx")]
    for i, n in enumerate(_RAW_FLAGS):
        parts.append(_field(n, 64 + i, 1, 3))
    parts.append(_field("dlc", 72, 8, 0, "", "DLC code as on the wire"))
    parts.append(_field("data", 80, 8 * payload, 4, "", "payload, zero-padded"))
    bits = 80 + 8 * payload
    head = (bytes(uuid) + _s(name) + struct.pack("<IBBbB", bits, 0, 1, -6, 0) + _s("s")
            + struct.pack("<qqHH", 0, 1, 0, len(parts)))
    meta = struct.pack("<I", 2) + _s("logb.can.layout") + _s("raw-fd" if fd else "raw") + \
        _s("logb.can.routing") + _s(routing)
    return head + b"".join(parts) + meta


# ---------------------------------------------------------------- UUIDv5
_NAMESPACE_URL = b"\x6b\xa7\xb8\x11\x9d\xad\x11\xd1\x80\xb4\x00\xc0\x4f\xd4\x30\xc8"


def stream_uuid(device, name):
    """UUIDv5 over "logb:{device}/{name}" in the URL namespace: the host's
    `logb.stream_uuid`, so device and host agree on a stream's identity."""
    digest = sha1(_NAMESPACE_URL + ("logb:%s/%s" % (device, name)).encode())
    u = bytearray(digest[:16])
    u[6] = (u[6] & 0x0F) | 0x50
    u[8] = (u[8] & 0x3F) | 0x80
    return bytes(u)


def sha1(data):
    try:
        import hashlib

        return hashlib.sha1(data).digest()  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        return _sha1(data)


def _rol(x, n):
    return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF


def _sha1(data):
    """Plain SHA-1 for ports without hashlib.sha1 (start-up only)."""
    h = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0]
    n = len(data)
    msg = bytes(data) + b"\x80" + bytes((55 - n) % 64) + struct.pack(">Q", 8 * n)
    for pos in range(0, len(msg), 64):
        w = list(struct.unpack(">16I", msg[pos:pos + 64]))
        for i in range(16, 80):
            w.append(_rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1))
        a, b, c, d, e = h
        for i in range(80):
            if i < 20:
                f, k = (b & c) | (~b & d), 0x5A827999
            elif i < 40:
                f, k = b ^ c ^ d, 0x6ED9EBA1
            elif i < 60:
                f, k = (b & c) | (b & d) | (c & d), 0x8F1BBCDC
            else:
                f, k = b ^ c ^ d, 0xCA62C1D6
            a, b, c, d, e = (_rol(a, 5) + (f & 0xFFFFFFFF) + e + k + w[i]) & 0xFFFFFFFF, a, _rol(b, 30), c, d
        h = [(x + y) & 0xFFFFFFFF for x, y in zip(h, (a, b, c, d, e))]
    return b"".join(struct.pack(">I", x) for x in h)

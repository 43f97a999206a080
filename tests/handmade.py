"""Logb bytes built by hand with struct, straight from docs/SPEC.md's layouts —
deliberately not through logb's own encoders, so the reader is checked against
the spec rather than against the writer's habits."""

import struct

import crcmod

_crc = crcmod.mkCrcFun(0x11EDC6F41, rev=True, initCrc=0, xorOut=0xFFFFFFFF)

MAGIC = b"\x89LOGB\r\n\x1a"
PATTERN = bytes.fromhex("4C4F474253594E43A73E91D25C680BF4")


def header(major=0, minor=1):
    head = MAGIC + struct.pack("<HH", major, minor)
    return head + struct.pack("<I", _crc(head))


def frame(ftype, payload, sid=0, flags=0):
    head = struct.pack("<IBBH", len(payload), ftype, flags, sid)
    return head + payload + struct.pack("<I", _crc(head + payload))


def s(text):
    data = text.encode()
    return struct.pack("<I", len(data)) + data


def sync(seq, wall=0):
    return frame(0x01, PATTERN + struct.pack("<Qq", seq, wall))


def meta(pairs, sid=0):
    return frame(0x11, struct.pack("<I", len(pairs)) + b"".join(s(k) + s(v) for k, v in pairs), sid)


def field(name, off, width, dtype, order=0, flags=0, unit="", desc="", conv=b"\x00"):
    return s(name) + struct.pack("<IIBBB", off, width, dtype, order, flags) + s(unit) + s(desc) + conv


def schema(uuid, name, record_bits, fields, kind=0, mode=0, exp=-6, unit="s", step=1, scale=1,
           axis_field=0, meta_pairs=()):
    ax = struct.pack("<qq", step, scale) if kind == 0 else struct.pack("<dd", step, scale)
    body = (uuid + s(name) + struct.pack("<IBBbB", record_bits, kind, mode, exp, 0) + s(unit) + ax
            + struct.pack("<HH", axis_field, len(fields)) + b"".join(fields)
            + struct.pack("<I", len(meta_pairs)) + b"".join(s(k) + s(v) for k, v in meta_pairs))
    return body


def data(sid, records, count, base=0, run_id=0, codec=0, filt=0, raw_size=None, base_f64=None):
    b = struct.pack("<d", base_f64) if base_f64 is not None else struct.pack("<q", base)
    raw_size = len(records) if raw_size is None else raw_size
    return frame(0x20, b + struct.pack("<IIBBHQ", count, run_id, codec, filt, 0, raw_size) + records, sid)


def end(index_back=0, session_bytes=0):
    return frame(0x40, struct.pack("<QQ", index_back, session_bytes))

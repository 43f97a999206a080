"""Independent frame surgery for tests: walk, patch and build frames with
struct and crcmod only (no logb code), so damage is made the way a disk or a
hostile writer would make it."""

import struct

from handmade import MAGIC, frame, header  # noqa: F401 - re-exported for the recovery tests
from handmade import _crc as crc32c


def walk(data, start=16):
    """[(offset, type, stream_id, payload_len)] of an intact file."""
    out, pos = [], start
    while pos < len(data):
        plen, ftype, _flags, sid = struct.unpack_from("<IBBH", data, pos)
        out.append((pos, ftype, sid, plen))
        pos += 12 + plen
    assert pos == len(data), "not an intact file"
    return out


def refit_crc(data, offset):
    """Recompute the CRC of the frame at `offset` (after a deliberate patch)."""
    data = bytearray(data)
    plen = struct.unpack_from("<I", data, offset)[0]
    end = offset + 8 + plen
    data[end : end + 4] = struct.pack("<I", crc32c(bytes(data[offset:end])))
    return bytes(data)


def patch(data, offset, rel, new, fix_crc=True):
    """Overwrite bytes at frame `offset` + `rel` and (by default) refit the CRC."""
    data = bytearray(data)
    data[offset + rel : offset + rel + len(new)] = new
    return refit_crc(data, offset) if fix_crc else bytes(data)


# DATA payload field positions (frame-relative: 8-byte frame header first)
DATA_AXIS_BASE, DATA_COUNT, DATA_RUN, DATA_CODEC, DATA_FILTER, DATA_RAW_SIZE = 8, 16, 20, 24, 25, 28

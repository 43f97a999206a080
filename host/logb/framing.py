"""Byte-level framing: the file header, the 12-byte frame envelope, detection.

Nothing here knows what a payload means; frames.py does.
"""

import struct
from dataclasses import dataclass

from .crc import crc32c, crc32c_range
from .errors import NotLogbError, UnsupportedVersionError

MAGIC = b"\x89LOGB\r\n\x1a"
VERSION_MAJOR = 0
VERSION_MINOR = 1
FILE_HEADER_SIZE = 16
FRAME_HEADER_SIZE = 8
FRAME_OVERHEAD = 12  # header + trailing CRC
SYNC_PATTERN = bytes.fromhex("4C4F4742 53594E43 A73E91D2 5C680BF4".replace(" ", ""))

_FILE_HEADER = struct.Struct("<8sHHI")
FRAME_HEADER = struct.Struct("<IBBH")
_CRC = struct.Struct("<I")


def encode_file_header(major=VERSION_MAJOR, minor=VERSION_MINOR):
    head = MAGIC + struct.pack("<HH", major, minor)
    return head + _CRC.pack(crc32c(head))


@dataclass(frozen=True)
class FileHeader:
    major: int
    minor: int


def decode_file_header(buf):
    """Parse 16 header bytes; raise NotLogbError / UnsupportedVersionError."""
    if len(buf) < FILE_HEADER_SIZE:
        raise NotLogbError(f"input is {len(buf)} bytes, a file header needs 16")
    magic, major, minor, crc = _FILE_HEADER.unpack_from(buf, 0)
    if magic != MAGIC:
        raise NotLogbError("bad magic: not a Logb file")
    if crc32c(bytes(buf[:12])) != crc:
        raise NotLogbError("file header CRC mismatch: not (or no longer) a Logb file")
    if major != VERSION_MAJOR:
        raise UnsupportedVersionError(
            f"Logb version {major}.{minor} is not supported (this reader knows {VERSION_MAJOR}.x)"
        )
    return FileHeader(major, minor)


def is_file_header(buf, offset=0):
    """True if a CRC-valid file header (any version) starts at `offset`."""
    if len(buf) - offset < FILE_HEADER_SIZE or bytes(buf[offset : offset + 8]) != MAGIC:
        return False
    (crc,) = _CRC.unpack_from(buf, offset + 12)
    return crc32c(bytes(buf[offset : offset + 12])) == crc


def encode_frame(frame_type, payload, stream_id=0, flags=0):
    head = FRAME_HEADER.pack(len(payload), frame_type, flags, stream_id)
    crc = crc32c(payload, crc32c(head))
    return b"".join((head, payload, _CRC.pack(crc)))


def frame_crc_ok(buf, start, payload_len):
    """Check the CRC of the frame at `start` whose bytes are all inside `buf`."""
    end = start + FRAME_HEADER_SIZE + payload_len
    (stored,) = _CRC.unpack_from(buf, end)
    return crc32c_range(buf, start, end) == stored  # no copy of the frame


YES, NO, MAYBE = "yes", "no", "maybe"


def detect(prefix):
    """Answer whether `prefix` (the first bytes of some input) is Logb: yes / no / maybe.

    yes: a complete, CRC-valid header of a major version this reader knows.
    no: the bytes contradict the magic, the header CRC, or the version.
    maybe: too short to tell, and consistent with a Logb header so far.
    """
    prefix = bytes(prefix[:FILE_HEADER_SIZE])
    if MAGIC[: len(prefix)] != prefix[: len(MAGIC)]:
        return NO
    if len(prefix) < FILE_HEADER_SIZE:
        return MAYBE
    try:
        decode_file_header(prefix)
    except (NotLogbError, UnsupportedVersionError):
        return NO
    return YES

"""The Logb serial link's wire format (docs/LINK.md), host side.

A message: 12-byte header — magic `A7 4C`, type (u8), tag (u8), payload
length (u32), CRC-32C of those 8 bytes (u32) — then the payload, then a
CRC-32C (u32). For DATA the trailing CRC is the running CRC-32C of every
byte the stream has carried so far (the register continues from the
previous DATA message of the same tag), so the last one is the device's CRC
of the whole range; for every other message it is the CRC of its payload.
The device side is firmware/logb/link.py; the constants mirror it.
"""

import struct

from ..crc import POLY, crc32c, crc32c_range
from ..errors import EncodeError

MAGIC = b"\xa7L"
HEAD = 12
ESCAPE = b"\x1b[LOGB-LINK]"
VERSION = 1
MAX_PAYLOAD = 1 << 20  # nothing longer is believed (a damaged header could claim anything)
ROOM = 256 << 10  # the receive buffer: many reads' worth of messages between moves of the held bytes
READ_MIN = 64 << 10  # the least room a read is given (a pty hands over at most a few KiB per read)

T_HELLO, T_PING, T_LIST, T_STAT, T_READ, T_TAIL, T_HASH, T_DELETE, T_CANCEL, T_BYE = range(1, 11)
R_HELLO, R_LIST, R_STAT, R_DATA, R_END, R_TICK, R_HASH, R_OK = range(0x81, 0x89)
R_ERR = 0x8F
E_REQUEST, E_NOENT, E_BUSY, E_REFUSED, E_MISMATCH, E_IO, E_CRC = range(1, 8)
ERROR_NAMES = {E_REQUEST: "bad request", E_NOENT: "no such recording", E_BUSY: "busy",
               E_REFUSED: "refused", E_MISMATCH: "mismatch", E_IO: "device I/O error", E_CRC: "request CRC"}
S_COMPLETE, S_SHORT, S_CLOSED = 0, 1, 2
F_ACTIVE = 1

_HEAD = struct.Struct("<2sBBI")
_U32 = struct.Struct("<I")


def encode(typ, tag, payload=b""):
    head = _HEAD.pack(MAGIC, typ, tag, len(payload))
    return head + _U32.pack(crc32c(head)) + payload + _U32.pack(crc32c(payload))


def pack_str(s):
    b = s.encode()
    if len(b) > 255:
        raise EncodeError(f"name too long (over 255 bytes): {s!r}")
    return struct.pack("<H", len(b)) + b


def unpack_str(buf, pos):
    (n,) = struct.unpack_from("<H", buf, pos)
    return bytes(buf[pos + 2:pos + 2 + n]).decode("utf-8", "replace"), pos + 2 + n


# ---------------------------------------------------------------- CRC-32C combine


def _multmodp(a, b):
    """a * b modulo the CRC-32C polynomial (reflected bit order)."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                break
        m >>= 1
        b = (b >> 1) ^ POLY if b & 1 else b >> 1
    return p


def _x2n_table():
    t, p = [], 1 << 30  # x^1
    for _ in range(32):
        t.append(p)
        p = _multmodp(p, p)
    return t


_X2N = _x2n_table()


def _x8nmodp(n):
    """x^(8n) modulo the polynomial."""
    p, k = 1 << 31, 3  # x^0
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


def crc32c_combine(crc1, crc2, len2):
    """CRC-32C of A + B from crc(A), crc(B) and len(B) (zlib's crc32_combine)."""
    return _multmodp(_x8nmodp(len2), crc1) ^ crc2


# ---------------------------------------------------------------- receiving
class Message:
    __slots__ = ("type", "tag", "payload", "crc")

    def __init__(self, typ, tag, payload, crc):
        self.type, self.tag, self.payload, self.crc = typ, tag, payload, crc

    def __repr__(self):
        return f"<Message 0x{self.type:02x} tag {self.tag} {len(self.payload)} bytes>"


class Parser:
    """Splits received bytes into messages. Non-DATA messages are checked
    here; DATA messages are yielded with their CRC for the stream that asked
    for them to check (their CRC runs across the stream). Bytes that are no
    message (console text, damage) are skipped and counted in `noise`.

    The bytes are held in one buffer that the port reads into (room(),
    filled()): no copy per read and no join. It grows only to hold the
    message at hand, which MAX_PAYLOAD bounds, so a damaged length costs at
    most that much."""

    def __init__(self, size=ROOM):
        self.buf = bytearray(size)
        self.pos = 0  # the next byte to parse
        self.end = 0  # bytes held: buf[pos:end]
        self._need = 0  # buf[pos] heads a checked header whose message ends here (0: none)
        self.noise = 0
        self.bad = 0  # messages whose header or payload CRC failed

    def room(self):
        """A writable view of the free space after the held bytes (at least
        READ_MIN bytes, and the whole of a message being waited for); release
        it (`with`) before the next call."""
        buf, pos, held = self.buf, self.pos, self.end - self.pos
        want = max(READ_MIN, self._need - self.end)
        if len(buf) - self.end < want:
            if pos:  # the bytes before pos are parsed: move what is held to the front
                with memoryview(buf) as mv:
                    mv[:held] = mv[pos:self.end]  # a memmove: the ranges may overlap
                self.pos, self.end = 0, held
                if self._need:
                    self._need -= pos
            if len(buf) - held < want:
                buf.extend(bytes(want + held - len(buf)))
        return memoryview(buf)[self.end:]

    def filled(self, n):
        """`n` bytes were written at the start of the view room() gave."""
        self.end += n

    def feed(self, data):
        with memoryview(data) as src:
            done = 0
            while done < len(src):
                with self.room() as view:
                    k = min(len(src) - done, len(view))
                    view[:k] = src[done:done + k]
                self.filled(k)
                done += k

    def pending(self):
        """Bytes held that are not yet a whole message."""
        return self.end - self.pos

    def skip_one(self):
        """Give up on what starts at the current position (a message whose
        rest never came, or that the stream found damaged): rescan after it."""
        if self.pos < self.end:
            self.pos += 1
            self._need = 0
            self.noise += 1
            self.bad += 1

    def next(self):
        """The next whole message, or None when more bytes are needed."""
        if self._need > self.end:
            return None  # still waiting for the rest of a checked header's message
        buf, end = self.buf, self.end
        while True:
            pos = self.pos
            i = buf.find(MAGIC, pos, end)
            if i < 0:
                keep = end - 1 if end > pos and buf[end - 1] == MAGIC[0] else end
                self.noise += keep - pos
                self.pos = keep
                self._need = 0
                return None
            if i > pos:
                self.noise += i - pos
                self.pos = i
            if end - i < HEAD:
                self._need = 0
                return None
            _m, typ, tag, n = _HEAD.unpack_from(buf, i)
            if _U32.unpack_from(buf, i + 8)[0] != crc32c_range(buf, i, i + 8) or n > MAX_PAYLOAD:
                self._reject(i)
                continue
            stop = i + HEAD + n
            if end < stop + 4:
                self._need = stop + 4
                return None
            self._need = 0
            (crc,) = _U32.unpack_from(buf, stop)
            if typ != R_DATA and crc32c_range(buf, i + HEAD, stop) != crc:
                self._reject(i)
                continue
            self._last = i
            self.pos = stop + 4
            return Message(typ, tag, bytes(memoryview(buf)[i + HEAD:stop]), crc)

    def _reject(self, i):
        self.pos = i + 1
        self._need = 0
        self.noise += 1
        self.bad += 1

    def reject_last(self):
        """The DATA message just returned failed its stream's CRC: rescan from
        the byte after its magic (its length may have swallowed good messages)."""
        self.noise += self.pos - self._last - 1
        self.bad += 1
        self.pos = self._last + 1
        self._need = 0

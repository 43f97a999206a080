"""Bounds-checked little-endian reading and writing of the format's own structures.

Every short read raises MalformedPayloadError, so struct.error, IndexError and
UnicodeDecodeError never reach a caller.
"""

import struct

from .errors import MalformedPayloadError

_U8 = struct.Struct("<B")
_I8 = struct.Struct("<b")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")


class Cursor:
    """Reads a payload front to back; every read is checked against its end."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf, pos=0, end=None):
        self.buf = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
        self.pos = pos
        self.end = len(self.buf) if end is None else end

    @property
    def remaining(self):
        return self.end - self.pos

    def need(self, n, what="field"):
        if n < 0 or self.pos + n > self.end:
            raise MalformedPayloadError(
                f"payload too short for {what}: need {n} bytes at offset {self.pos}, "
                f"{self.end - self.pos} left"
            )

    def _unpack(self, st, what):
        self.need(st.size, what)
        (value,) = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return value

    def u8(self, what="u8"):
        return self._unpack(_U8, what)

    def i8(self, what="i8"):
        return self._unpack(_I8, what)

    def u16(self, what="u16"):
        return self._unpack(_U16, what)

    def u32(self, what="u32"):
        return self._unpack(_U32, what)

    def u64(self, what="u64"):
        return self._unpack(_U64, what)

    def i64(self, what="i64"):
        return self._unpack(_I64, what)

    def f64(self, what="f64"):
        return self._unpack(_F64, what)

    def raw(self, n, what="bytes"):
        self.need(n, what)
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def blob(self, what="blob"):
        """u32 length + bytes."""
        return self.raw(self.u32(what + " length"), what)

    def string(self, what="string"):
        """u32 length + UTF-8."""
        data = self.blob(what)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedPayloadError(f"invalid UTF-8 in {what}: {exc.reason}") from None

    def rest(self):
        return bytes(self.buf[self.pos : self.end])


class Builder:
    """Appends the format's little-endian structures to one bytearray."""

    __slots__ = ("out",)

    def __init__(self):
        self.out = bytearray()

    def u8(self, v):
        self.out += _U8.pack(v)
        return self

    def i8(self, v):
        self.out += _I8.pack(v)
        return self

    def u16(self, v):
        self.out += _U16.pack(v)
        return self

    def u32(self, v):
        self.out += _U32.pack(v)
        return self

    def u64(self, v):
        self.out += _U64.pack(v)
        return self

    def i64(self, v):
        self.out += _I64.pack(v)
        return self

    def f64(self, v):
        self.out += _F64.pack(v)
        return self

    def raw(self, data):
        self.out += data
        return self

    def blob(self, data):
        self.u32(len(data))
        self.out += data
        return self

    def string(self, text):
        return self.blob(text.encode("utf-8"))

    def bytes(self):
        return bytes(self.out)

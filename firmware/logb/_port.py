"""What differs between MicroPython and CPython, and between ports, in one place.

On a board: `time.ticks_us`/`ticks_diff`/`ticks_add` (a wrapping counter of
TICKS_PERIOD, 2**30 on 32-bit ports), `time.sleep_ms`, `deflate`,
`os.urandom`, streams whose `write(buf, off, n)` and `readinto(buf, n)` take
a range instead of a copied slice, `micropython.kbd_intr`. Under CPython
(tests, host tools) the same names are emulated (the ticks with a 2**30
period), so the writer produces the same bytes on both for the same clock
readings.
"""

try:
    from time import ticks_add, ticks_diff, ticks_us  # type: ignore[attr-defined]

    MICROPYTHON = True
except ImportError:  # CPython
    import time as _time

    MICROPYTHON = False
    _MASK = (1 << 30) - 1
    _HALF = 1 << 29

    # (type: ignore: these CPython stand-ins redefine the MicroPython stubs' names)
    def ticks_us() -> int:  # type: ignore[misc]
        return (_time.monotonic_ns() // 1000) & _MASK  # type: ignore[attr-defined]

    def ticks_diff(a: int, b: int) -> int:  # type: ignore[misc]
        return ((a - b + _HALF) & _MASK) - _HALF

    def ticks_add(a: int, d: int) -> int:  # type: ignore[misc]
        return (a + d) & _MASK

if MICROPYTHON:
    from time import sleep_ms  # type: ignore[attr-defined]
else:
    def sleep_ms(ms: int) -> None:  # type: ignore[misc]
        _time.sleep(ms / 1000)


if MICROPYTHON:
    from gc import collect as gc_collect
else:
    def gc_collect() -> None:  # type: ignore[misc]
        """CPython's heap does not fragment the way a board's does: nothing to do."""


if MICROPYTHON:
    from struct import pack_into
else:
    from struct import pack_into as _pack_into

    def pack_into(fmt, buf, offset, *values):  # type: ignore[misc]
        """CPython's 's' wants bytes; MicroPython's takes any buffer, uncopied."""
        return _pack_into(fmt, buf, offset, *[bytes(v) if isinstance(v, (bytearray, memoryview)) else v
                                                for v in values])


def range_writer(sink, scratch=0):
    """A function (buf, off, n) writing buf[off:off + n] to `sink`: the sink's own
    write when it takes that range (MicroPython streams, BlockSink, link.Recorder:
    nothing copied, nothing allocated). A sink whose write() takes one buffer
    (a UART, a user class, a CPython file) gets a memoryview slice, which costs
    an allocation per call on MicroPython; with `scratch` (bytes, a power of two)
    on MicroPython it gets Pieces instead: copies, but allocates nothing."""
    write = sink.write
    try:
        write(b"", 0, 0)
        return write
    except TypeError:
        if MICROPYTHON and scratch:
            return Pieces(write, scratch)

        def write_slice(buf, off, n):
            return write(memoryview(buf)[off:off + n])

        return write_slice


class Pieces:
    """write(buf, off, n) for a sink whose write() takes one buffer, without
    allocating: buf[off:off + n] goes out in power-of-two pieces, each copied
    into its own region [k, 2k) of a scratch buffer whose views are made once
    (a view per range would be an allocation per write). The copy is a Python
    loop: fine for the partial pages of durability flushes, slow for bulk."""

    def __init__(self, write, size):
        self.write = write
        self.scratch = bytearray(size)
        mv = memoryview(self.scratch)
        sizes = []
        k = size // 2
        while k:
            sizes.append(k)
            k //= 2
        self.sizes = tuple(sizes)  # largest first
        self.views = tuple(mv[k:2 * k] for k in sizes)

    def __call__(self, buf, off, n):
        if off == 0 and n == len(buf):
            self.write(buf)
            return n
        dst = self.scratch
        done = n
        i = 0
        while n:
            k = self.sizes[i]
            if k > n:
                i += 1
                continue
            for j in range(k):
                dst[k + j] = buf[off + j]
            self.write(self.views[i])
            off += k
            n -= k
        return done


if MICROPYTHON:
    def readinto(f, buf, n):
        """Read up to n bytes of file f into the start of buf; returns the count (or None)."""
        return f.readinto(buf, n)  # MicroPython streams take the count: no slice of buf to allocate
else:
    def readinto(f, buf, n):  # type: ignore[misc]
        return f.readinto(memoryview(buf)[:n])


def keyboard_interrupt(on):
    """Let Ctrl-C on the console raise KeyboardInterrupt (on) or pass as a plain
    byte (off: binary data on the port). Nothing where there is no such switch."""
    if MICROPYTHON:
        import micropython

        switch = getattr(micropython, "kbd_intr", None)
        if switch is not None:
            switch(3 if on else -1)


# The wrap period of the ticks counter: 2**30 on every 32-bit port (and in
# the CPython emulation), 2**62 on 64-bit ports.
TICKS_PERIOD_M1 = ticks_add(0, -1)
TICKS_PERIOD = TICKS_PERIOD_M1 + 1
# True when a tick count splits into (wraps, ticks) with 2**30 per wrap, the
# case the writer packs without ever making an integer of 2**30 or more.
PERIOD_30 = TICKS_PERIOD == 1 << 30


def random_bytes(n: int) -> bytes:
    """n random bytes for the session id: os.urandom where the port has it."""
    try:
        import os

        return os.urandom(n)
    except (ImportError, AttributeError, NotImplementedError):
        import random

        return bytes(random.getrandbits(8) for _ in range(n))


def hexlify(data: bytes) -> str:
    import binascii

    return binascii.hexlify(data).decode()


class Deflater:
    """Raw DEFLATE (SPEC §8.2 codec 3) of a buffer region into another buffer.

    MicroPython: `deflate.DeflateIO(stream, deflate.RAW, wbits)` over a
    preallocated `io.BytesIO`; CPython: `zlib` with wbits=-15. The two
    compressors differ, so deflated frames are not byte-identical across them
    (the host reader decodes both). Compression allocates its window and
    hash state on every frame: it is not part of the zero-allocation path.
    """

    def __init__(self, capacity: int, wbits: int = 10) -> None:
        self.wbits = wbits
        if MICROPYTHON:  # (CPython may have an unrelated PyPI package named deflate)
            import deflate  # type: ignore[import-not-found]
            import io

            self._mod = deflate
            self._bio = io.BytesIO(capacity)
            self._zlib = None  # type: ignore[assignment]
        else:
            import zlib  # type: ignore[import-not-found]  # CPython only

            self._mod = None  # type: ignore[assignment]
            self._zlib = zlib

    def compress(self, src, start: int, end: int, dst, dst_view, dst_off: int, limit: int) -> int:
        """Compress src[start:end] into dst at dst_off (dst_view = memoryview(dst)[dst_off:]).
        Returns the compressed size, or -1 when it would not be smaller than `limit`."""
        if self._mod is not None:
            bio = self._bio
            bio.seek(0)
            z = self._mod.DeflateIO(bio, self._mod.RAW, self.wbits)
            z.write(memoryview(src)[start:end])  # type: ignore[attr-defined]  # (missing from the stub)
            z.close()
            m = bio.tell()
            if m >= limit:
                return -1
            bio.seek(0)
            bio.readinto(dst_view, m)
            return m
        assert self._zlib is not None
        c = self._zlib.compressobj(6, self._zlib.DEFLATED, -self.wbits)
        data = c.compress(bytes(memoryview(src)[start:end])) + c.flush()
        m = len(data)
        if m >= limit:
            return -1
        dst[dst_off:dst_off + m] = data
        return m

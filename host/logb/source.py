"""Byte sources for the readers: a path, a bytes-like object or a binary file
object becomes one Source, with random reads (`read_at`, `readinto_at`) that
load nothing else, and the whole input as one immutable buffer (`buf`, read
when first asked for).

A file is read, never mapped: a mapped file that another process truncates
kills the reader with SIGBUS on the next page it touches, and Python cannot
catch that. Read bytes are the reader's own, so a file that shrinks or grows
while it is open changes nothing already read; one that shrinks during the
read reads as the shorter (truncated) input it has become, a report and never
a crash. Once `buf` is read, the reads slice it.

Bounded memory: `held` is the whole input when it is in memory or small
enough to be (bytes given, or a file of at most HOLD_MAX bytes, read whole
as before); for a larger file it is None and the reader reads it a window at
a time (scan.iter_source_frames, then one pread per DATA frame decoded), so
what it holds is bounded by what is in use, not by the file.
"""

import io
import os
import stat

# Files up to this size are read whole (one read, then slices); larger ones by window.
HOLD_MAX = 64 << 20
_PREADV = hasattr(os, "preadv")  # not on every platform


class Source:
    def __init__(self, buf=None, file=None, closers=(), name=None):
        self._buf = buf
        self._file = file  # a seekable binary file, read when `buf` or `read_at` asks
        self.name = name
        self._closers = list(closers)

    @property
    def buf(self):
        """The whole input (bytes)."""
        if self._buf is None:
            self._file.seek(0)
            self._buf = self._file.read()
        return self._buf

    @property
    def size(self):
        """The input's length: the file's current size until `buf` is read."""
        if self._buf is not None:
            return len(self._buf)
        return os.fstat(self._file.fileno()).st_size

    @property
    def held(self):
        """The whole input, read now if it is small enough to hold (HOLD_MAX),
        else None: read it by window (`readinto_at`)."""
        if self._buf is None and self.size > HOLD_MAX:
            return None
        return self.buf

    def read_at(self, pos, n):
        """Up to `n` bytes from offset `pos` (fewer at the end of the input)."""
        if self._buf is not None:
            return self._buf[pos : pos + n]
        if pos < 0 or n < 0:
            return b""
        return os.pread(self._file.fileno(), n, pos)

    def readinto_at(self, pos, view):
        """Fill the writable buffer `view` from offset `pos`; returns the bytes
        read (fewer only at the end of the input)."""
        with memoryview(view) as mv:
            if self._buf is not None:
                part = self._buf[pos : pos + mv.nbytes] if pos >= 0 else b""
                mv[: len(part)] = part
                return len(part)
            done, fd = 0, self._file.fileno()
            while done < mv.nbytes:  # a read may return less than asked before the end
                if _PREADV:  # straight into the buffer
                    got = os.preadv(fd, [mv[done:]], pos + done)
                else:
                    part = os.pread(fd, mv.nbytes - done, pos + done)
                    got = len(part)
                    mv[done : done + got] = part
                if not got:
                    break
                done += got
            return done

    def close(self):
        for c in reversed(self._closers):
            c()
        self._closers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SourceReader:
    """Base of the readers that own a Source: closing the reader closes it."""

    source: Source

    def close(self):
        self.source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _regular(f):
    """True for a file object on a regular file (seekable, pread-able)."""
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode)
    except (AttributeError, OSError, io.UnsupportedOperation):
        return False


def open_source(src):
    """Accept a path, bytes-like object, or binary file object."""
    if isinstance(src, Source):
        return src
    if isinstance(src, (bytes, bytearray, memoryview)):
        return Source(bytes(src))
    if isinstance(src, (str, os.PathLike)):
        f = open(src, "rb")
        if _regular(f):
            return Source(file=f, closers=[f.close], name=os.fspath(src))
        try:  # e.g. a FIFO: read it like any stream
            return Source(f.read(), closers=[f.close], name=os.fspath(src))
        except BaseException:
            f.close()
            raise
    if isinstance(src, io.BytesIO):
        return Source(src.getvalue())
    name = getattr(src, "name", None)
    if _regular(src):
        return Source(file=src, name=name)
    return Source(src.read(), name=name)

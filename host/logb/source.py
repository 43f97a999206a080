"""Byte sources for the readers: a path, a bytes-like object or a binary file
object becomes one Source, with the whole input as one immutable buffer
(`buf`, read when first asked for) and random reads (`read_at`) that load
nothing else.

A file is read, never mapped: a mapped file that another process truncates
kills the reader with SIGBUS on the next page it touches, and Python cannot
catch that. Read bytes are the reader's own, so a file that shrinks or grows
while it is open changes nothing already read; one that shrinks during the
read reads as the shorter (truncated) input it has become, a report and never
a crash. Once `buf` is read, `read_at` slices it.
"""

import io
import os
import stat


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

    def read_at(self, pos, n):
        """Up to `n` bytes from offset `pos` (fewer at the end of the input)."""
        if self._buf is not None:
            return self._buf[pos : pos + n]
        if pos < 0 or n < 0:
            return b""
        return os.pread(self._file.fileno(), n, pos)

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

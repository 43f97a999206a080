"""Byte sources for the reader: a path or a binary file object becomes one
buffer with find() and slicing, without loading a file into memory (mmap;
in-memory inputs stay bytes; a non-seekable stream is spooled to a temporary
file and mapped)."""

import io
import mmap
import os
import shutil
import tempfile


class Source:
    def __init__(self, buf, closers=(), name=None):
        self.buf = buf
        self.size = len(buf)
        self.name = name
        self._closers = list(closers)

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


def _map_file(f, closers, name):
    try:
        size = os.fstat(f.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):
        return None
    if size == 0:
        return Source(b"", closers, name)
    try:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    return Source(m, [m.close, *closers], name)


def open_source(src):
    """Accept a path, bytes-like object, or binary file object."""
    if isinstance(src, Source):
        return src
    if isinstance(src, (bytes, bytearray, memoryview)):
        return Source(bytes(src))
    if isinstance(src, (str, os.PathLike)):
        f = open(src, "rb")
        mapped = _map_file(f, [f.close], os.fspath(src))
        if mapped is None:  # e.g. a FIFO: read it like any stream
            return _spool(f, [f.close], os.fspath(src))
        return mapped
    if isinstance(src, io.BytesIO):
        return Source(src.getvalue())
    name = getattr(src, "name", None)
    seekable = getattr(src, "seekable", lambda: False)()
    if seekable:
        mapped = _map_file(src, [], name)
        if mapped is not None:
            return mapped
    return _spool(src, [], name)


def _spool(stream, closers, name):
    tmp = tempfile.TemporaryFile()
    shutil.copyfileobj(stream, tmp, 1 << 20)
    tmp.flush()
    mapped = _map_file(tmp, [tmp.close, *closers], name)
    return mapped

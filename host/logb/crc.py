"""CRC-32C (Castagnoli, reflected 0x82F63B78, init and final xor 0xFFFFFFFF).

`crc32c` is the one function every CRC in the package goes through (and
`crc32c_range` its no-copy form for a slice of a large buffer such as an
mmap); both are the active backend's (logb._backend): cbridge's hardware or
slice-by-8 CRC, or crcmod's compiled CRC engine. `crc32c_pure` is the
dependency-free table implementation that documents the algorithm and backs
crcmod up.
"""

from . import _backend
from ._pykernels import POLY
from ._pykernels import crc32c_pure

__all__ = ["POLY", "crc32c", "crc32c_pure", "crc32c_range"]


def crc32c(data, crc=0):
    """CRC-32C of a bytes-like `data`, continuing from a previous result `crc`."""
    return _backend.active.crc32c(data, crc)


def crc32c_range(buf, start, end):
    """CRC-32C of buf[start:end] without copying the slice (buf: bytes, mmap, ...)."""
    return _backend.active.crc32c_range(buf, start, end)

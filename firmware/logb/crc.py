"""CRC-32C (Castagnoli) for the device, allocating nothing.

`binascii.crc32` is CRC-32 (another polynomial), and on a 32-bit port every
integer of 2**30 or more is a heap object, so the textbook table CRC
allocates on every byte. Here the 32-bit register never exists as one
integer: it lives as its low 24 bits and its high 8 bits, both small ints,
in a 2-element `array('I')` state that the caller preallocates:

    st = crc.state()            # once
    crc.begin(st)               # per frame: register = 0xFFFFFFFF
    crc.update(buf, 0, n, st)   # any number of pieces
    crc.store(st, buf, n)       # final xor, 4 bytes little-endian at buf[n]

`update` is the fastest implementation this board has, chosen at import:

1. the native module `logbc` (cbridge/micropython/: the cbridge C kernels
   built into a custom firmware, or `logbc.mpy`) and its
   `crc32c_update(buf, start, end, st)`: this module's `update`, in C, with
   the same state array updated in place, allocating nothing;
2. `crc_viper.update`, `@micropython.viper` (ports with the native emitter);
3. `_update_pure`: slicing-by-4 over 24+8-bit halves (5 KiB of tables).

`select("pure" | "viper" | "c" | callable)` overrides the choice.
"""

from array import array

try:
    from micropython import const
except ImportError:  # CPython
    from ._const import const

_POLY = const(0x82F63B78)
_LO = const(0xFFFFFF)
_HI = const(0xFF)


def _tables():
    base = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (_POLY if c & 1 else 0)
        base.append(c)
    tabs = [base]
    for _ in range(3):
        prev = tabs[-1]
        tabs.append([(prev[n] >> 8) ^ base[prev[n] & 0xFF] for n in range(256)])
    lows = [array("I", [v & 0xFFFFFF for v in t]) for t in tabs]
    highs = [bytes([v >> 24 for v in t]) for t in tabs]
    return base, lows, highs


_BASE, _LOWS, _HIGHS = _tables()
_T0L, _T1L, _T2L, _T3L = _LOWS
_T0H, _T1H, _T2H, _T3H = _HIGHS


def state():
    """A CRC register: [low 24 bits, high 8 bits]."""
    return array("I", [_LO, _HI])


def begin(st) -> None:
    st[0] = _LO
    st[1] = _HI


def store(st, out, off: int) -> None:
    """Write the finished CRC (final xor applied) little-endian at out[off:off+4]."""
    lo = st[0] ^ _LO
    out[off] = lo & 0xFF
    out[off + 1] = (lo >> 8) & 0xFF
    out[off + 2] = lo >> 16
    out[off + 3] = st[1] ^ _HI


def _update_pure(buf, start: int, end: int, st) -> None:
    """Continue the register `st` over buf[start:end]. Slicing-by-4: four table
    lookups per 4 bytes on each half; every value stays below 2**24."""
    lo = st[0]
    hi = st[1]
    t0l = _T0L
    t1l = _T1L
    t2l = _T2L
    t3l = _T3L
    t0h = _T0H
    t1h = _T1H
    t2h = _T2H
    t3h = _T3H
    stop = end - ((end - start) & 3)
    for i in range(start, stop, 4):
        a = (lo ^ buf[i]) & 0xFF
        b = ((lo >> 8) ^ buf[i + 1]) & 0xFF
        c = (lo >> 16) ^ buf[i + 2]
        d = hi ^ buf[i + 3]
        lo = t3l[a] ^ t2l[b] ^ t1l[c] ^ t0l[d]
        hi = t3h[a] ^ t2h[b] ^ t1h[c] ^ t0h[d]
    for i in range(stop, end):
        a = (lo ^ buf[i]) & 0xFF
        lo = ((hi << 16) | (lo >> 8)) ^ t0l[a]
        hi = t0h[a]
    st[0] = lo
    st[1] = hi


update = _update_pure
backend = "pure"


def _viper():
    from .crc_viper import update as f  # SyntaxError/ValueError where there is no native emitter

    return f


def _native():
    import logbc  # type: ignore[import-not-found]  # cbridge/micropython (a build without it: AttributeError)

    return logbc.crc32c_update


def select(which="auto"):
    """Choose the CRC implementation: "auto", "c", "viper", "pure" or a callable
    with update's signature. Returns the name of the one in use."""
    global update, backend
    if callable(which):
        update, backend = which, "custom"
        return backend
    order = ("c", "viper", "pure") if which == "auto" else (which,)
    for name in order:
        try:
            f = _native() if name == "c" else _viper() if name == "viper" else _update_pure
        except Exception:  # ImportError, or a compile error where viper is missing
            if which != "auto":
                raise
            continue
        update, backend = f, name
        return name
    raise ValueError("unknown CRC backend %r" % (which,))


select()


def crc32c(data, crc: int = 0) -> int:
    """CRC-32C of `data` continuing from a previous result (allocates; not for hot paths)."""
    raw = crc ^ 0xFFFFFFFF
    st = array("I", [raw & 0xFFFFFF, raw >> 24])
    update(data, 0, len(data), st)
    return ((st[1] ^ _HI) << 24) | (st[0] ^ _LO)

"""The bit model (SPEC §6.2): extract and pack fields of fixed-size records.

Bit numbering follows the field's byte order. Little-endian: bit k is bit
k%8 (LSB = 0) of byte k//8, and the field runs upward from its LSB.
Big-endian: bit k is bit 7-k%8 of byte k//8 (MSB first), and the field runs
from its MSB. Both are contiguous in their own numbering, so a field is always
a window of whole bytes read in its byte order and shifted once.

`get_bits`/`put_bits` are the scalar reference; `extract`/`pack` do the same
for a whole (N, S) uint8 record array: with the C backend (logb._backend)
through cbridge's bits.c, which also reads and writes strided views such as
the (N, S) view `.T` of a transposed frame's (S, N) rows; with the
pure-Python backend with numpy.
"""

import numpy as np

from . import _backend
from .errors import InvalidDataError
from .tables import ByteOrder, DataType

_U64 = np.uint64


def _window(offset, width, big):
    """First byte, byte count and right shift of a field's byte window."""
    last = offset + width - 1
    first_byte, last_byte = offset // 8, last // 8
    shift = 7 - last % 8 if big else offset % 8
    return first_byte, last_byte - first_byte + 1, shift


def get_bits(record, offset, width, big):
    """Unsigned value of one field of one record (bytes-like)."""
    b0, k, shift = _window(offset, width, big)
    window = int.from_bytes(bytes(record[b0 : b0 + k]), "big" if big else "little")
    return (window >> shift) & ((1 << width) - 1)


def put_bits(record, offset, width, big, value):
    """Store an unsigned value into one field of a writable record."""
    b0, k, shift = _window(offset, width, big)
    order = "big" if big else "little"
    mask = ((1 << width) - 1) << shift
    window = int.from_bytes(bytes(record[b0 : b0 + k]), order)
    window = (window & ~mask) | ((value << shift) & mask)
    record[b0 : b0 + k] = window.to_bytes(k, order)


def sign_extend(value, width):
    sign = 1 << (width - 1)
    return (value ^ sign) - sign


def extract_uint(records, offset, width, big):
    """uint64 column of one field from an (N, S) uint8 array."""
    k = _backend.active
    if k is not None:
        return k.extract(records, offset, width, big, 8, np.empty(records.shape[0], _U64))
    n, stride = records.shape
    if not n:  # (the strided view below cannot start past the end of an empty buffer)
        return np.zeros(0, _U64)
    b0, k, shift = _window(offset, width, big)
    order = ">" if big else "<"
    if shift == 0 and k in (1, 2, 4, 8) and records.flags.c_contiguous and width == 8 * k:
        col = np.ndarray((n,), f"{order}u{k}", records.data, b0, (stride,))
        return col.astype(_U64)
    if k <= 8:
        tmp = np.zeros((n, 8), np.uint8)
        if big:
            tmp[:, 8 - k :] = records[:, b0 : b0 + k]
        else:
            tmp[:, :k] = records[:, b0 : b0 + k]
        v = tmp.view(f"{order}u8")[:, 0].astype(_U64)
        v >>= _U64(shift)
    else:  # a 58..64-bit field spread over 9 bytes
        tmp = np.ascontiguousarray(records[:, b0 : b0 + 8])
        head = tmp.view(f"{order}u8")[:, 0].astype(_U64)
        extra = records[:, b0 + 8].astype(_U64)
        if big:
            v = (head << _U64(8 - shift)) | (extra >> _U64(shift))
        else:
            v = (head >> _U64(shift)) | (extra << _U64(64 - shift))
    if width < 64:
        v &= _U64((1 << width) - 1)
    return v


def pack_uint(records, offset, width, big, values):
    """Store a uint64 column into one field of a writable (N, S) uint8 array."""
    k = _backend.active
    if k is not None and _c_pack_int(k, records, offset, width, big, values, _U64, astype=True):
        return
    v = np.asarray(values).astype(_U64, copy=False)
    if width < 64:
        v = v & _U64((1 << width) - 1)
    for j in range(offset // 8, (offset + width - 1) // 8 + 1):
        lo = max(0, 8 * j - offset)
        hi = min(width - 1, 8 * j + 7 - offset)
        nbits = hi - lo + 1
        if big:
            part = v >> _U64(width - 1 - hi)
            pos = 7 - (offset + hi - 8 * j)
        else:
            part = v >> _U64(lo)
            pos = offset + lo - 8 * j
        part = (part & _U64((1 << nbits) - 1)).astype(np.uint8) << np.uint8(pos)
        keep = np.uint8(0xFF ^ (((1 << nbits) - 1) << pos))
        records[:, j] = (records[:, j] & keep) | part


def _to_signed(v, width):
    if width == 64:
        return v.view(np.int64)
    sign = _U64(1 << (width - 1))
    return ((v ^ sign) - sign).view(np.int64)


_FLOATS = {16: (np.uint16, np.float16), 32: (np.uint32, np.float32), 64: (np.uint64, np.float64)}


def _float(v, width):
    ut, ft = _FLOATS[width]
    return v.astype(ut).view(ft)


def extract(records, field, out=None):
    """Raw column of a fixed field: uint64, int64, float16/32/64, bool,
    complex64/128, (N, n) uint8 for bytes, object array of str for string.

    `out`, an array of exactly that dtype and shape (say a slice of a larger
    column), receives the values instead of a new array and is returned."""
    k = _backend.active
    if k is not None:
        return _extract_c(k, records, field, out)
    col = _extract_py(records, field)
    if out is None:
        return col
    out[...] = col
    return out


def _extract_py(records, field):
    dt, off, w = field.data_type, field.bit_offset, field.bit_width
    big = field.byte_order == ByteOrder.big
    if dt == DataType.bytes:
        return np.array(records[:, off // 8 : (off + w) // 8], np.uint8)
    if dt == DataType.string:
        rows = records[:, off // 8 : (off + w) // 8]
        return decode_strings(bytes(r) for r in rows)
    if dt == DataType.complex:
        half = w // 2
        re = _float(extract_uint(records, off, half, big), half)
        im = _float(extract_uint(records, off + half, half, big), half)
        out = np.empty(len(re), np.complex64 if half == 32 else np.complex128)
        out.real, out.imag = re, im
        return out
    v = extract_uint(records, off, w, big)
    if dt == DataType.uint:
        return v
    if dt == DataType.sint:
        return _to_signed(v, w)
    if dt == DataType.float:
        return _float(v, w)
    if dt == DataType.bool:
        return v.astype(bool)
    raise InvalidDataError(f"cannot extract data_type {dt}")


def decode_strings(chunks):
    out = []
    for chunk in chunks:
        try:
            out.append(chunk.decode("utf-8"))
        except UnicodeDecodeError:
            raise InvalidDataError("invalid UTF-8 in a string field") from None
    arr = np.empty(len(out), object)
    arr[:] = out
    return arr


def _float_bits(values, width):
    ut, ft = _FLOATS[width]
    return np.asarray(values, ft).view(ut).astype(_U64)


def pack(records, field, values):
    """Store a column of raw values into a fixed field (the inverse of extract)."""
    dt, off, w = field.data_type, field.bit_offset, field.bit_width
    big = field.byte_order == ByteOrder.big
    k = _backend.active
    if k is not None and _pack_c(k, records, field, values, big):
        return
    if dt in (DataType.bytes, DataType.string):
        n, start = w // 8, off // 8
        if isinstance(values, np.ndarray) and values.dtype == np.uint8 and values.ndim == 2:
            if values.shape[1] != n:
                raise ValueError(f"field {field.name!r} holds {n} bytes, got rows of {values.shape[1]}")
            records[:, start : start + n] = values
            return
        chunks = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
        if any(len(c) != n for c in chunks):
            raise ValueError(f"field {field.name!r} holds exactly {n} bytes per record")
        if chunks and n:
            records[:, start : start + n] = np.frombuffer(b"".join(chunks), np.uint8).reshape(-1, n)
        return
    if dt == DataType.complex:
        half = w // 2
        z = np.asarray(values, np.complex64 if half == 32 else np.complex128)
        pack_uint(records, off, half, big, _float_bits(z.real, half))
        pack_uint(records, off + half, half, big, _float_bits(z.imag, half))
        return
    if dt == DataType.float:
        bits = _float_bits(values, w)
    elif dt == DataType.sint:
        bits = np.asarray(values, np.int64).view(_U64)
    elif dt == DataType.bool:
        bits = np.asarray(values, bool).astype(_U64)
    else:
        bits = np.asarray(values, _U64)
    pack_uint(records, off, w, big, bits)


# ---------------------------------------------------------------- C backend
# Same results, bit for bit and dtype for dtype, as the numpy code above
# (tests/test_backend.py compares them); only the work moves to bits.c.

_SIGNED = 0x10
_BOOL = 0x20
_FLOAT_DTYPES = {16: np.float16, 32: np.float32, 64: np.float64}


def _target(out, shape, dtype):
    if out is None:
        return np.empty(shape, dtype)
    if out.shape != shape or out.dtype != dtype:
        # TypeError, not ValueError: a caller's bug, never a reason to reject a frame
        raise TypeError(f"out must be {dtype} of shape {shape}, not {out.dtype} {out.shape}")
    return out


def _extract_c(k, records, field, out=None):
    dt, off, w = field.data_type, field.bit_offset, field.bit_width
    big = field.byte_order == ByteOrder.big
    n = records.shape[0]
    if dt == DataType.bytes:
        return k.gather(records, off // 8, w // 8, _target(out, (n, w // 8), np.uint8))
    if dt == DataType.string:
        nb = w // 8
        flat = k.gather(records, off // 8, nb).tobytes()
        col = decode_strings(flat[i : i + nb] for i in range(0, n * nb, nb)) if nb else \
            decode_strings(b"" for _ in range(n))
        if out is None:
            return col
        out[...] = col
        return out
    if dt == DataType.complex:
        half = w // 2
        col = _target(out, (n,), np.complex64 if half == 32 else np.complex128)
        k.extract(records, off, half, big, half // 8, col, 0)
        k.extract(records, off + half, half, big, half // 8, col, half // 8)
        return col
    if dt == DataType.uint:
        return k.extract(records, off, w, big, 8, _target(out, (n,), _U64))
    if dt == DataType.sint:
        return k.extract(records, off, w, big, 8 | _SIGNED, _target(out, (n,), np.int64))
    if dt == DataType.float:
        return k.extract(records, off, w, big, w // 8, _target(out, (n,), _FLOAT_DTYPES[w]))
    if dt == DataType.bool:
        return k.extract(records, off, w, big, 1 | _BOOL, _target(out, (n,), bool))
    raise InvalidDataError(f"cannot extract data_type {dt}")


def column_dtype(field):
    """(dtype, extra shape) of the raw column `extract` gives a fixed field
    (object for strings and variable-length fields)."""
    dt, w = field.data_type, field.bit_width
    if field.variable or dt == DataType.string:
        return np.dtype(object), ()
    if dt == DataType.bytes:
        return np.dtype(np.uint8), (w // 8,)
    if dt == DataType.float:
        return np.dtype(_FLOAT_DTYPES.get(w, np.float64)), ()
    if dt == DataType.complex:
        return np.dtype(np.complex64 if w == 64 else np.complex128), ()
    return np.dtype({DataType.uint: _U64, DataType.sint: np.int64, DataType.bool: bool}.get(dt, _U64)), ()


def _c_pack_int(k, records, offset, width, big, values, dtype, astype=False):
    """Pack an integer-like column with the C kernel; False to leave it to numpy.

    Integer and bool arrays go in at their own width (signed ones
    sign-extended, which is what numpy's cast to 64 bits does); anything else
    is first converted exactly as the numpy path converts it."""
    if not isinstance(records, np.ndarray) or records.ndim != 2 or records.dtype != np.uint8:
        return False
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iub" \
            and values.itemsize in (1, 2, 4, 8):
        arr = values
    else:
        arr = np.asarray(values).astype(dtype, copy=False) if astype else np.asarray(values, dtype)
        if arr.ndim != 1:
            return False
    if arr.shape[0] != records.shape[0]:
        return False  # numpy broadcasts (or raises) exactly as before
    kind = arr.itemsize | (_SIGNED if arr.dtype.kind == "i" else 0)
    k.pack(records, offset, width, big, kind, arr)
    return True


def _pack_c(k, records, field, values, big):
    dt, off, w = field.data_type, field.bit_offset, field.bit_width
    if dt in (DataType.bytes, DataType.string):
        return False  # a strided numpy assignment; nothing to gain
    if not isinstance(records, np.ndarray) or records.ndim != 2 or records.dtype != np.uint8:
        return False
    n = records.shape[0]
    if dt == DataType.complex:
        half = w // 2
        z = np.asarray(values, np.complex64 if half == 32 else np.complex128)
        if z.ndim != 1 or z.shape[0] != n:
            return False
        k.pack(records, off, half, big, half // 8, z, 0)
        k.pack(records, off + half, half, big, half // 8, z, half // 8)
        return True
    if dt == DataType.float:
        arr = np.asarray(values, _FLOAT_DTYPES[w])
        if arr.ndim != 1 or arr.shape[0] != n:
            return False
        k.pack(records, off, w, big, w // 8, arr)
        return True
    if dt == DataType.bool:
        arr = np.asarray(values, bool)
        if arr.ndim != 1 or arr.shape[0] != n:
            return False
        k.pack(records, off, w, big, 1, arr)
        return True
    return _c_pack_int(k, records, off, w, big, values, np.int64 if dt == DataType.sint else _U64)

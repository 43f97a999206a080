"""The bit model (SPEC §6.2): extract and pack fields of fixed-size records.

Bit numbering follows the field's byte order. Little-endian: bit k is bit
k%8 (LSB = 0) of byte k//8, and the field runs upward from its LSB.
Big-endian: bit k is bit 7-k%8 of byte k//8 (MSB first), and the field runs
from its MSB. Both are contiguous in their own numbering, so a field is always
a window of whole bytes read in its byte order and shifted once.

`get_bits`/`put_bits` are the scalar reference; `extract`/`pack` do the same
for a whole (N, S) uint8 record array through the active backend's field
kernels (logb._backend: cbridge's bits.c or numpy), which also read and write
strided views such as the (N, S) view `.T` of a transposed frame's (S, N)
rows. This module is the part both backends share: which element of which
dtype each data type becomes.

Integer columns come back at the narrowest native width that holds every
value the field can hold (its bit width decides, never the values seen):
uint8/16/32/64 for uint fields of up to 8/16/32/64 bits, int8/16/32/64 for
sint, so one stream's column has one dtype in every frame and file. `wide=True`
gives the 64-bit columns (uint64 / int64) instead. Arithmetic on a narrow
column wraps at its width: convert first (convert.physical computes in
float64; cast with .astype(np.int64) for integer sums and differences).
"""

import sys

import numpy as np

from . import _backend
from ._kernels import KIND_BOOL, KIND_SIGNED, field_window
from .errors import EncodeError, InvalidDataError
from .tables import ByteOrder, DataType

_U64 = np.uint64
_LITTLE = sys.byteorder == "little"


def get_bits(record, offset, width, big):
    """Unsigned value of one field of one record (bytes-like)."""
    b0, k, shift = field_window(offset, width, big)
    window = int.from_bytes(bytes(record[b0 : b0 + k]), "big" if big else "little")
    return (window >> shift) & ((1 << width) - 1)


def put_bits(record, offset, width, big, value):
    """Store an unsigned value into one field of a writable record."""
    b0, k, shift = field_window(offset, width, big)
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
    return _backend.active.extract(records, offset, width, big, 8, np.empty(records.shape[0], _U64))


def pack_uint(records, offset, width, big, values):
    """Store a uint64 column into one field of a writable (N, S) uint8 array."""
    _pack_int(records, offset, width, big, values, lambda v: np.asarray(v).astype(_U64, copy=False))


_FLOAT_DTYPES = {16: np.float16, 32: np.float32, 64: np.float64}


def _target(out, shape, dtype):
    if out is None:
        return np.empty(shape, dtype)
    if out.shape != shape or out.dtype != dtype:
        # TypeError, not ValueError: a caller's bug, never a reason to reject a frame
        raise TypeError(f"out must be {dtype} of shape {shape}, not {out.dtype} {out.shape}")
    return out


_UINTS = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))
_SINTS = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64))


def int_dtype(width, signed, wide=False):
    """The column dtype of a `width`-bit integer field: the narrowest of
    8/16/32/64 bits that holds it, or 64 bits when `wide`."""
    size = 3 if wide or width > 32 else 2 if width > 16 else 1 if width > 8 else 0
    return (_SINTS if signed else _UINTS)[size]


def extract(records, field, out=None, wide=False):
    """Raw column of a fixed field: uint8..uint64 / int8..int64 at the field's
    width (int_dtype; `wide`: always uint64 / int64), float16/32/64, bool,
    complex64/128, (N, n) uint8 for bytes, object array of str for string.

    `out`, an array of exactly that dtype and shape (say a slice of a larger
    column), receives the values instead of a new array and is returned."""
    k = _backend.active
    dt, off, w = field.data_type, field.bit_offset, field.bit_width
    big = field.byte_order == ByteOrder.big
    n = records.shape[0]
    if dt in (DataType.uint, DataType.sint):
        signed = dt == DataType.sint
        dtype = int_dtype(w, signed, wide)
        return k.extract(records, off, w, big, dtype.itemsize | (KIND_SIGNED if signed else 0),
                         _target(out, (n,), dtype))
    if dt == DataType.float:  # the float's bits into an element of its size
        return k.extract(records, off, w, big, w // 8, _target(out, (n,), _FLOAT_DTYPES[w]))
    if dt == DataType.bool:
        return k.extract(records, off, w, big, 1 | KIND_BOOL, _target(out, (n,), bool))
    if dt == DataType.bytes:
        return k.gather(records, off // 8, w // 8, _target(out, (n, w // 8), np.uint8))
    if dt == DataType.string:
        nb = w // 8
        if nb:
            flat = k.gather(records, off // 8, nb).tobytes()
            col = decode_strings(flat[i : i + nb] for i in range(0, n * nb, nb))
        else:  # a zero-width string is "" in every record: no work per record
            col = np.full(n, "", object)
        if out is None:
            return col
        out[...] = col
        return out
    if dt == DataType.complex:  # the real part's bits, then the imaginary part's
        half = w // 2
        col = _target(out, (n,), np.complex64 if half == 32 else np.complex128)
        k.extract(records, off, half, big, half // 8, col, 0)
        k.extract(records, off + half, half, big, half // 8, col, half // 8)
        return col
    raise InvalidDataError(f"cannot extract data_type {dt}")


class ManyPlan:
    """extract_many's work for a list of fields, done once (plan_many): each field's column
    (dtype, extra shape) and whether the field kernels fill it, and the kernel's checked
    FieldPlan per record size."""

    __slots__ = ("fields", "wide", "columns", "specs", "kernels")

    def __init__(self, fields, wide=False):
        self.fields, self.wide = tuple(fields), wide
        self.columns, self.specs, self.kernels = [], [], {}
        for f in self.fields:
            spec = kernel_spec(f, wide)
            self.columns.append((spec is not None, *column_dtype(f, wide)))
            if spec is not None:
                self.specs.append((*spec, 0))

    def kernel(self, size):
        plan = self.kernels.get(size)
        if plan is None:  # the size checks every planned field against the record
            plan = self.kernels[size] = _backend.active.plan(size, self.specs)
        return plan


def plan_many(fields, wide=False):
    """A ManyPlan of `fields` for extract_many (reusable for any records that hold them)."""
    return ManyPlan(fields, wide)


def extract_many(records, fields, wide=False):
    """[extract(records, f, wide=wide) for f in fields], with the fields the field
    kernels take (kernel_spec) filled by one extract_many call: one pass of Python
    checks for all of them (a CAN message's signals), the others one by one.
    `fields` may be a ManyPlan (plan_many), which then says `wide`."""
    plan = fields if isinstance(fields, ManyPlan) else ManyPlan(fields, wide)
    records = _backend.active.records(records)
    n = records.shape[0]
    cols, items = [], []
    for f, (planned, dtype, extra) in zip(plan.fields, plan.columns):
        if planned:
            col = np.empty((n, *extra), dtype)
            items.append(as_items(col))  # a new bytes column of 1, 2, 4 or 8: always one item per row
        else:
            col = extract(records, f, wide=plan.wide)
        cols.append(col)
    if items:
        _backend.active.extract_many(records, plan.kernel(records.shape[1]), items)
    return cols


def kernel_spec(field, wide=False):
    """(offset, width, big, kind) of a fixed field whose column `extract` fills
    with one field-kernel call (Kernels.plan, extract_many: integers, floats,
    bools, and bytes of 1, 2, 4 or 8 on a little-endian host, whose
    little-endian window is the bytes themselves), else None. A bytes column
    (N, n) is then handed to the kernel as its 1-D view (as_items)."""
    dt, off, w = field.data_type, field.bit_offset, field.bit_width
    if field.variable:
        return None
    big = field.byte_order == ByteOrder.big
    if dt in (DataType.uint, DataType.sint):
        signed = dt == DataType.sint
        return off, w, big, int_dtype(w, signed, wide).itemsize | (KIND_SIGNED if signed else 0)
    if dt == DataType.float:
        return off, w, big, w // 8
    if dt == DataType.bool:
        return off, w, big, 1 | KIND_BOOL
    if dt == DataType.bytes and w in (8, 16, 32, 64) and off % 8 == 0 and _LITTLE:
        return off, w, False, w // 8
    return None


def as_items(col):
    """A column as the 1-D array of one item per record that kernel_spec's call fills
    (a bytes column's rows as one unsigned integer each), or None when it cannot be."""
    if col.ndim == 1:
        return col
    if not col.flags.c_contiguous:
        return None
    items = col.view(_UINTS[col.shape[1].bit_length() - 1])[:, 0]
    return items if items.flags.aligned else None


def new_column(field, n, out=None, wide=False):
    """The array `extract` fills for n records of `field`: `out`, checked to have its
    dtype and shape (TypeError otherwise), or a new one."""
    dtype, extra = column_dtype(field, wide)
    return _target(out, (n, *extra), dtype)


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


def column_dtype(field, wide=False):
    """(dtype, extra shape) of the raw column `extract` gives a fixed field
    (object for strings and variable-length fields)."""
    dt, w = field.data_type, field.bit_width
    if dt in (DataType.uint, DataType.sint):  # never variable-length
        return int_dtype(w, dt == DataType.sint, wide), ()
    if field.variable or dt == DataType.string:
        return np.dtype(object), ()
    if dt == DataType.bytes:
        return np.dtype(np.uint8), (w // 8,)
    if dt == DataType.float:
        return np.dtype(_FLOAT_DTYPES.get(w, np.float64)), ()
    if dt == DataType.complex:
        return np.dtype(np.complex64 if w == 64 else np.complex128), ()
    return np.dtype(bool if dt == DataType.bool else _U64), ()


def pack(records, field, values):
    """Store a column of raw values into a fixed field (the inverse of extract)."""
    k = _backend.active
    dt, off, w = field.data_type, field.bit_offset, field.bit_width
    big = field.byte_order == ByteOrder.big
    if dt in (DataType.bytes, DataType.string):
        _pack_bytes(records, field, values)
    elif dt == DataType.complex:
        half = w // 2
        z = _one_per_record(np.asarray(values, np.complex64 if half == 32 else np.complex128), records)
        k.pack(records, off, half, big, half // 8, z, 0)
        k.pack(records, off + half, half, big, half // 8, z, half // 8)
    elif dt == DataType.float:
        k.pack(records, off, w, big, w // 8, _one_per_record(np.asarray(values, _FLOAT_DTYPES[w]), records))
    elif dt == DataType.bool:
        k.pack(records, off, w, big, 1, _one_per_record(np.asarray(values, bool), records))
    else:
        dtype = np.int64 if dt == DataType.sint else _U64
        _pack_int(records, off, w, big, values, lambda v: np.asarray(v, dtype))


def _pack_bytes(records, field, values):
    # fixed bytes are never byte-swapped: a plain (strided) numpy assignment
    n, start = field.bit_width // 8, field.bit_offset // 8
    if isinstance(values, np.ndarray) and values.dtype == np.uint8 and values.ndim == 2:
        if values.shape[1] != n:
            raise EncodeError(f"field {field.name!r} holds {n} bytes, got rows of {values.shape[1]}")
        records[:, start : start + n] = values
        return
    chunks = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
    if any(len(c) != n for c in chunks):
        raise EncodeError(f"field {field.name!r} holds exactly {n} bytes per record")
    if chunks and n:
        records[:, start : start + n] = np.frombuffer(b"".join(chunks), np.uint8).reshape(-1, n)


def _one_per_record(arr, records):
    """`arr` as one item per record, broadcast as numpy would (a scalar fills every record)."""
    if arr.ndim == 1 and arr.shape[0] == records.shape[0]:
        return arr
    return np.broadcast_to(arr, records.shape[:1])


def _pack_int(records, offset, width, big, values, convert):
    """Pack an integer-like column: integer and bool arrays go to the kernel
    at their own width (signed ones sign-extended, which is what numpy's cast
    to 64 bits does); anything else is first `convert`ed."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iub" \
            and values.itemsize in (1, 2, 4, 8) and values.dtype.isnative:
        arr = values
    else:
        arr = _one_per_record(convert(values), records)
    kind = arr.itemsize | (KIND_SIGNED if arr.dtype.kind == "i" else 0)
    _backend.active.pack(records, offset, width, big, kind, arr)

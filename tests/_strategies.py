"""Hypothesis strategies shared by the test modules: valid schemas whose fixed
fields do not overlap (so every field can be written and read back), and
columns of raw values that fit them."""

import math

import numpy as np
from hypothesis import strategies as st

from logb import AxisKind, AxisMode, ByteOrder, Conversion, ConversionType, DataType, Field, Schema

FLOAT_DT = {16: (np.float16, np.uint16), 32: (np.float32, np.uint32), 64: (np.float64, np.uint64)}
NUMERIC = (DataType.uint, DataType.sint, DataType.float, DataType.bool, DataType.complex)

short_text = st.text(max_size=8)
finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def conversions(draw, dt):
    if dt in (DataType.bytes, DataType.string):
        return Conversion()
    kinds = [ConversionType.identity, ConversionType.linear, ConversionType.rational]
    if dt != DataType.complex:
        kinds += [ConversionType.table, ConversionType.table_interp,
                  ConversionType.value_to_text, ConversionType.range_to_text]
    kind = draw(st.sampled_from(kinds))
    if kind == ConversionType.identity:
        return Conversion()
    if kind == ConversionType.linear:
        return Conversion.linear(draw(finite), draw(finite))
    if kind == ConversionType.rational:
        return Conversion.rational(*draw(st.lists(finite, min_size=6, max_size=6)))
    if kind == ConversionType.table:
        return Conversion.table(draw(st.lists(st.tuples(finite, finite), max_size=4)))
    if kind == ConversionType.table_interp:
        keys = sorted(draw(st.lists(finite, min_size=1, max_size=4, unique=True)))
        return Conversion.table([(k, draw(finite)) for k in keys], interpolate=True)
    if kind == ConversionType.value_to_text:
        return Conversion.value_to_text(draw(st.lists(st.tuples(finite, short_text), max_size=3)), draw(short_text))
    return Conversion.range_to_text(draw(st.lists(st.tuples(finite, finite, short_text), max_size=3)),
                                    draw(short_text))


FIELD_KINDS = ["uint", "sint", "float", "bool", "bytes", "string", "complex", "var_bytes", "var_string"]


@st.composite
def schemas(draw, max_fields=6, with_conversions=True, axis_kinds=None):
    n_fields = draw(st.integers(0, max_fields))
    names = draw(st.lists(st.text(min_size=1, max_size=6), min_size=n_fields, max_size=n_fields, unique=True))
    cursor = 0
    prev_order = None
    fields = []
    for name in names:
        kind = draw(st.sampled_from(FIELD_KINDS))
        order = draw(st.sampled_from([ByteOrder.little, ByteOrder.big]))
        flags, off = 0, None
        if kind.startswith("var_"):
            dt = DataType.bytes if kind == "var_bytes" else DataType.string
            width, flags, off = 0, 1, 0
        else:
            dt = getattr(DataType, kind)
            if dt in (DataType.uint, DataType.sint):
                width = draw(st.integers(1, 64))
            elif dt == DataType.float:
                width = draw(st.sampled_from([16, 32, 64]))
            elif dt == DataType.complex:
                width = draw(st.sampled_from([64, 128]))
            elif dt == DataType.bool:
                width = 1
            else:
                width = 8 * draw(st.integers(0, 6))
            cursor += draw(st.integers(0, 11))
            # Little- and big-endian numberings differ inside a byte, so a
            # field whose order differs from the previous one starts on a
            # fresh byte: that keeps every field's physical bits disjoint.
            if dt in (DataType.bytes, DataType.string) or order != prev_order:
                cursor = (cursor + 7) // 8 * 8
            prev_order = order
            off = cursor
            cursor += width
        conv = draw(conversions(dt)) if with_conversions else Conversion()
        fields.append(Field(name, off, width, dt, order, flags, draw(short_text), draw(short_text), conv))
    record_bits = cursor + draw(st.integers(0, 12))
    kinds = axis_kinds or list(AxisKind)
    kind = draw(st.sampled_from(kinds))
    is_time = kind == AxisKind.time
    allowed = (DataType.uint, DataType.sint) if is_time else (DataType.uint, DataType.sint, DataType.float)
    axis_candidates = [i for i, f in enumerate(fields) if not f.variable and f.data_type in allowed]
    modes = [AxisMode.implicit] + ([AxisMode.explicit] if axis_candidates else [])
    if not is_time:
        modes.append(AxisMode.implicit_log)
    mode = draw(st.sampled_from(modes))
    axis_field, scale, step = 0, 0, 0
    if is_time:
        exp = draw(st.integers(-18, 3))
        if mode == AxisMode.implicit:
            step = draw(st.integers(-(10 ** 6), 10 ** 9))
        else:
            axis_field = draw(st.sampled_from(axis_candidates))
            scale = draw(st.integers(-1000, 10 ** 6))
    else:
        exp = 0
        if mode == AxisMode.implicit:
            step = draw(st.floats(-1e6, 1e6))
        elif mode == AxisMode.implicit_log:
            step = draw(st.floats(0.01, 100).filter(lambda r: r != 1.0))
        else:
            axis_field = draw(st.sampled_from(axis_candidates))
            scale = draw(st.floats(-1e6, 1e6))
    meta = tuple(draw(st.lists(st.tuples(short_text, short_text), max_size=3, unique_by=lambda kv: kv[0])))
    return Schema(draw(st.binary(min_size=16, max_size=16)), draw(short_text), record_bits, kind, mode,
                  exp, draw(short_text), step, scale, axis_field, tuple(fields), meta)


def _fixed_string(draw, size):
    chars = st.sampled_from(["a", "\x00", "é", "€", "𝄞", "Z"])
    out = ""
    for c in draw(st.lists(chars, max_size=size)):
        if len((out + c).encode()) <= size:
            out += c
    return out + "a" * (size - len(out.encode()))


@st.composite
def column_values(draw, field, n, small=False):
    """n raw values for `field`, as the writer accepts them."""
    dt, w = field.data_type, field.bit_width
    if field.variable:
        if dt == DataType.bytes:
            return draw(st.lists(st.binary(max_size=10), min_size=n, max_size=n))
        return draw(st.lists(st.text(max_size=6), min_size=n, max_size=n))
    if dt == DataType.uint:
        hi = (1 << w) - 1
        if small:
            hi = min(hi, 1000)
        return np.array(draw(st.lists(st.integers(0, hi), min_size=n, max_size=n)), np.uint64)
    if dt == DataType.sint:
        lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
        if small:
            lo, hi = max(lo, -1000), min(hi, 1000)
        return np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), np.int64)
    if dt == DataType.float:
        ft = FLOAT_DT[w][0]
        vals = st.floats(-1e3, 1e3, width=w) if small else st.floats(width=w)
        return np.array(draw(st.lists(vals, min_size=n, max_size=n)), ft)
    if dt == DataType.complex:
        h = w // 2
        ct = np.complex64 if h == 32 else np.complex128
        return np.array(draw(st.lists(st.builds(complex, st.floats(width=h), st.floats(width=h)),
                                      min_size=n, max_size=n)), ct)
    if dt == DataType.bool:
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    if dt == DataType.bytes:
        return draw(st.lists(st.binary(min_size=w // 8, max_size=w // 8), min_size=n, max_size=n))
    return [_fixed_string(draw, w // 8) for _ in range(n)]


def raw_equal(field, got, want):
    """Compare a raw column read back with the values written (bit patterns for floats)."""
    dt, w = field.data_type, field.bit_width
    if field.variable:
        return list(got) == list(want)
    if dt == DataType.float:
        ft, ut = FLOAT_DT[w]
        return got.dtype == ft and got.view(ut).tolist() == np.asarray(want, ft).view(ut).tolist()
    if dt == DataType.complex:
        h = w // 2
        ft, ut = FLOAT_DT[h]
        want = np.asarray(want)
        return (got.real.astype(ft).view(ut).tolist() == want.real.astype(ft).view(ut).tolist()
                and got.imag.astype(ft).view(ut).tolist() == want.imag.astype(ft).view(ut).tolist())
    if dt == DataType.bytes:
        return got.dtype == np.uint8 and [bytes(r) for r in got] == list(want)
    if dt == DataType.string:
        return list(got) == list(want)
    if dt in (DataType.uint, DataType.sint):  # the narrowest native width that holds the field
        bits = next(b for b in (8, 16, 32, 64) if w <= b)
        want_dtype = np.dtype(f"{'i' if dt == DataType.sint else 'u'}{bits // 8}")
        return got.dtype == want_dtype and got.tolist() == np.asarray(want).tolist()
    return got.dtype == bool and got.tolist() == np.asarray(want).tolist()


def is_nan(x):
    return isinstance(x, float) and math.isnan(x)

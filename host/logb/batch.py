"""Decode one DATA frame's records against its schema into columns (SPEC §5, §6.4, §8)."""

import struct
from dataclasses import dataclass

import numpy as np

from . import codecs, fields
from .errors import InvalidDataError
from .tables import AxisMode, DataType, Filter

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
_U32 = struct.Struct("<I")


@dataclass
class Batch:
    """The records of one DATA frame: raw columns by field name and the axis."""

    count: int
    run_id: int
    raw: dict
    axis: np.ndarray


def records_region(schema, header, stored):
    """Decoded records region (fixed portions untransposed, then tails)."""
    codecs.check_filter(header.filter)
    n, size = header.record_count, schema.record_size
    fixed_bytes = n * size
    minimum = fixed_bytes + 4 * n * len(schema.variable_fields)
    if header.raw_size < minimum or (not schema.variable_fields and header.raw_size != minimum):
        raise InvalidDataError(
            f"raw_size {header.raw_size} does not fit {n} records of {size} bytes")
    data = codecs.decompress(stored, header.codec, header.raw_size)
    if header.filter == Filter.transpose:
        data = codecs.untranspose(data[:fixed_bytes], n, size) + bytes(data[fixed_bytes:])
    return data


def decode_batch(schema, header, stored, only=None):
    """Decode a DATA frame. `only` limits which raw columns are extracted."""
    data = records_region(schema, header, stored)
    n, size = header.record_count, schema.record_size
    fixed = np.frombuffer(data, np.uint8, n * size).reshape(n, size)
    tails = _walk_tails(schema, data, n * size, n) if schema.variable_fields else {}
    raw = {}
    for f in schema.fields:
        if only is not None and f.name not in only:
            continue
        raw[f.name] = tails[f.name] if f.variable else fields.extract(fixed, f)
    return Batch(n, header.run_id, raw, axis_column(schema, header, fixed))


def _walk_tails(schema, data, pos, n):
    var = schema.variable_fields
    chunks = {f.name: [] for f in var}
    end = len(data)
    mv = memoryview(data)
    for _ in range(n):
        for f in var:
            if pos + 4 > end:
                raise InvalidDataError("tail region ends inside a length prefix")
            (length,) = _U32.unpack_from(mv, pos)
            pos += 4
            if pos + length > end:
                raise InvalidDataError("tail runs past raw_size")
            chunks[f.name].append(bytes(mv[pos : pos + length]))
            pos += length
    if pos != end:
        raise InvalidDataError(f"{end - pos} bytes left over after the tails")
    out = {}
    for f in var:
        if f.data_type == DataType.string:
            out[f.name] = fields.decode_strings(chunks[f.name])
        else:
            col = np.empty(n, object)
            col[:] = chunks[f.name]
            out[f.name] = col
    return out


def axis_column(schema, header, fixed):
    """The axis values of a frame's records: int64 ticks for time, float64 otherwise."""
    n = header.record_count
    base = header.axis_base(schema.is_time)
    mode = schema.axis_mode
    if schema.is_time:
        if mode == AxisMode.implicit:
            step = schema.axis_step
            _check_range(base, base + (n - 1) * step if n else base)
            idx = np.arange(n, dtype=np.uint64)
            return (idx * np.uint64(step % (1 << 64)) + np.uint64(base % (1 << 64))).view(np.int64)
        raw = fields.extract(fixed, schema.fields[schema.axis_field])
        if n:
            lo, hi = int(raw.min()), int(raw.max())
            _check_range(base + lo * schema.axis_scale, base + hi * schema.axis_scale)
        scale = np.uint64(schema.axis_scale % (1 << 64))
        return (raw.view(np.uint64) * scale + np.uint64(base % (1 << 64))).view(np.int64)
    idx = np.arange(n, dtype=np.float64)
    if mode == AxisMode.implicit:
        return base + idx * schema.axis_step
    if mode == AxisMode.implicit_log:
        with np.errstate(all="ignore"):
            return base * np.power(schema.axis_step, idx)
    raw = fields.extract(fixed, schema.fields[schema.axis_field])
    return base + raw.astype(np.float64) * schema.axis_scale


def _check_range(*values):
    for v in values:
        if not I64_MIN <= v <= I64_MAX:
            raise InvalidDataError(f"time axis value {v} overflows i64 ticks")


def frame_axis_span(schema, header):
    """(first, last) axis of an implicit-axis frame from its header alone, else None."""
    n = header.record_count
    if schema.axis_mode != AxisMode.implicit or not n:
        return None
    base = header.axis_base(schema.is_time)
    last = base + (n - 1) * schema.axis_step
    return (min(base, last), max(base, last))

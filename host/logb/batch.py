"""Decode one DATA frame's records against its schema into columns (SPEC §5, §6.4, §8)."""

from dataclasses import dataclass

import numpy as np

from . import _backend, codecs, fields
from ._kernels import KIND_SIGNED, TAIL_LEFTOVER, TAIL_PAST_END, TAIL_PREFIX
from .errors import InvalidDataError
from .frames import DATA_HEADER_SIZE
from .tables import AxisMode, ByteOrder, Codec, DataType, Filter

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class Batch:
    """The records of one DATA frame: raw columns by field name and the axis."""

    count: int
    run_id: int
    raw: dict
    axis: np.ndarray


def _region(schema, header, stored):
    """(decoded records region, its fixed records as an (N, S) uint8 array).

    When the backend's field kernels read planar rows in place (the C
    backend's do), a transposed frame is not untransposed: the fixed records
    are the strided view `.T` of its S rows of N bytes (the tails follow the
    fixed region either way)."""
    codecs.check_filter(header.filter)
    n, size = header.record_count, schema.record_size
    fixed_bytes = n * size
    minimum = fixed_bytes + 4 * n * len(schema.variable_fields)
    if header.raw_size < minimum or (not schema.variable_fields and header.raw_size != minimum):
        raise InvalidDataError(
            f"raw_size {header.raw_size} does not fit {n} records of {size} bytes")
    data = codecs.decompress(stored, header.codec, header.raw_size)
    if header.filter == Filter.transpose:
        if _backend.active.reads_planar:
            return data, np.frombuffer(data, np.uint8, fixed_bytes).reshape(size, n).T
        data = codecs.untranspose(data[:fixed_bytes], n, size) + bytes(data[fixed_bytes:])
    return data, np.frombuffer(data, np.uint8, fixed_bytes).reshape(n, size)


def decode_batch(schema, header, stored, only=None, out=None, wide=False):
    """Decode a DATA frame. `only` limits which raw columns are extracted;
    integer columns are at their field's native width unless `wide`
    (fields.int_dtype).

    `out`, if given, is ({name: array}, axis array): slices of preallocated
    columns (dtype and shape as extract gives them) that receive this frame's
    values in place of new arrays; the Batch then holds those slices."""
    data, fixed = _region(schema, header, stored)
    n, size = header.record_count, schema.record_size
    tails = _walk_tails(schema, data, n * size, n) if schema.variable_fields else {}
    dest = out[0] if out is not None else {}
    plan = _plan(schema, only, wide)
    if plan.kernel.specs:
        batch = _decode_planned(schema, header, fixed, tails, dest, out, plan, n, wide)
        if batch is not None:
            return batch
    raw = {}
    for f in schema.fields:
        if only is not None and f.name not in only:
            continue
        if f.variable:
            col = tails[f.name]
            if f.name in dest:
                dest[f.name][...] = col
                col = dest[f.name]
            raw[f.name] = col
        else:
            raw[f.name] = fields.extract(fixed, f, dest.get(f.name), wide)
    axis_field = schema.fields[schema.axis_field] if schema.axis_mode == AxisMode.explicit else None
    known = raw.get(axis_field.name) if axis_field is not None and not axis_field.variable else None
    axis = axis_column(schema, header, fixed, out=out[1] if out is not None else None, axis_raw=known)
    return Batch(n, header.run_id, raw, axis)


@dataclass
class _Plan:
    """How decode_batch reads a schema's fixed fields: one field-kernel call for
    those `fields.kernel_spec` takes (and the time axis when its field is an
    integer whose scaled values, plus any base within i64, cannot overflow)."""

    order: list  # (field, True when the kernel call fills its column, column dtype, extra shape) in schema order
    kernel: object  # the FieldPlan: the planned fields, then the axis field if `axis_bounds`
    axis_bounds: tuple = None  # (lowest, highest) raw value * axis_scale


_PLANS = {}  # (id(schema), only, wide) -> (schema, _Plan); the schema is kept so the id stays its own
_PLAN_CACHE = 256


def _plan(schema, only, wide):
    key = (id(schema), None if only is None else frozenset(only), wide)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    order, specs = [], []
    for f in schema.fields:
        if only is not None and f.name not in only:
            continue
        spec = fields.kernel_spec(f, wide)
        dtype, extra = fields.column_dtype(f, wide)
        order.append((f, spec is not None, dtype, extra))
        if spec is not None:
            specs.append((*spec, 0))
    bounds = None
    if schema.is_time and schema.axis_mode == AxisMode.explicit:
        af = schema.fields[schema.axis_field]
        w, signed = af.bit_width, af.data_type == DataType.sint
        if not af.variable and (af.data_type == DataType.uint and w <= 63 or signed):
            lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
            lo, hi = sorted((lo * schema.axis_scale, hi * schema.axis_scale))
            bounds = (lo, hi)
            specs.append((af.bit_offset, w, af.byte_order == ByteOrder.big, 8 | (KIND_SIGNED if signed else 0), 0))
    plan = _Plan(order, _backend.active.plan(schema.record_size, specs), bounds)
    if len(_PLANS) >= _PLAN_CACHE:
        _PLANS.clear()
    _PLANS[key] = (schema, plan)
    return plan


def _decode_planned(schema, header, fixed, tails, dest, out, plan, n, wide):
    """decode_batch through one extract_many call; None when a destination cannot be
    handed to the kernel as one item per record (the caller then extracts field by field)."""
    raw, items = {}, []
    for f, planned, dtype, extra in plan.order:
        if f.variable:
            col = tails[f.name]
            if f.name in dest:
                dest[f.name][...] = col
                col = dest[f.name]
        elif planned:
            col = dest.get(f.name)
            if col is None:
                col = np.empty((n, *extra), dtype)
            elif col.shape != (n, *extra) or col.dtype != dtype:
                col = fields.new_column(f, n, col, wide)  # raises the TypeError of extract
            view = fields.as_items(col) if extra else col
            if view is None:
                return None
            items.append(view)
        else:
            col = fields.extract(fixed, f, dest.get(f.name), wide)
        raw[f.name] = col
    axis = out[1] if out is not None else None
    base = header.axis_base(schema.is_time)
    direct = plan.axis_bounds is not None and I64_MIN <= base + plan.axis_bounds[0] \
        and base + plan.axis_bounds[1] <= I64_MAX
    if plan.axis_bounds is not None:
        if axis is None:
            axis = np.empty(n, np.int64)
        items.append(axis)
    _backend.active.extract_many(fixed, plan.kernel, items)
    if direct:  # the axis field's value went straight into the axis: scale and add the base in place
        u = axis.view(np.uint64)
        if schema.axis_scale != 1:
            np.multiply(u, np.uint64(schema.axis_scale % (1 << 64)), out=u)
        np.add(u, np.uint64(base % (1 << 64)), out=u)
    else:
        af = schema.fields[schema.axis_field] if schema.axis_mode == AxisMode.explicit else None
        axis = axis_column(schema, header, fixed, out=axis, axis_raw=raw.get(af.name) if af else None)
    return Batch(n, header.run_id, raw, axis)


# decode_run's decompressed frames, held until the call, take at most about this much
RUN_BYTES = 512 << 10


def run_plan(schema, only, wide=False):
    """The _Plan with which decode_run decodes many of `schema`'s frames in one
    kernel call, or None when it cannot: a variable-length field (its tails
    are walked and checked frame by frame), a field the field kernels do not
    fill, or an axis that is not a time axis held in an integer field."""
    plan = _plan(schema, only, wide)
    if schema.variable_fields or plan.axis_bounds is None or not all(planned for _, planned, _, _ in plan.order):
        return None
    return plan


def joins_run(schema, plan, header, payload_len):
    """Can decode_run take this accepted frame? Its time axis within i64
    whatever its records hold, and exactly its records stored: then only its
    decompression could reject it (frame_records)."""
    if header.raw_size != header.record_count * schema.record_size \
            or (header.codec == Codec.none and header.raw_size != payload_len - DATA_HEADER_SIZE):
        return False
    base = header.axis_base(True)
    return I64_MIN <= base + plan.axis_bounds[0] and base + plan.axis_bounds[1] <= I64_MAX


def frame_records(header, stored):
    """A run for decode_run: (buffer, start, count, planar) of the records of a
    frame that joins_run takes, from its stored bytes: in place when stored
    uncompressed, else decompressed (InvalidDataError and the like as
    decode_batch would raise them)."""
    codecs.check_filter(header.filter)
    data = stored if header.codec == Codec.none else codecs.decompress(stored, header.codec, header.raw_size)
    return data, 0, header.record_count, header.filter == Filter.transpose


def decode_run(schema, plan, runs, headers, dest, axis):
    """decode_batch of several frames (their frame_records and headers) by one
    kernel call: `dest` {name: column slice} and `axis` receive all their
    records, frame after frame."""
    bases = np.fromiter((h.axis_base(True) % (1 << 64) for h in headers), np.uint64, len(headers))
    items = [fields.as_items(dest[f.name]) if extra else dest[f.name] for f, _, _, extra in plan.order]
    items.append(axis)
    _backend.active.extract_frames(runs, plan.kernel, items, schema.axis_scale, bases)


def _walk_tails(schema, data, pos, n):
    var = schema.variable_fields
    v = len(var)
    code, reached, starts, ends = _backend.active.walk_tails(data, pos, n, v)
    if code == TAIL_PREFIX:
        raise InvalidDataError("tail region ends inside a length prefix")
    if code == TAIL_PAST_END:
        raise InvalidDataError("tail runs past raw_size")
    if code == TAIL_LEFTOVER:
        raise InvalidDataError(f"{len(data) - reached} bytes left over after the tails")
    raw = data if isinstance(data, bytes) else bytes(data)
    out = {}
    for j, f in enumerate(var):
        chunks = [raw[s:e] for s, e in zip(starts[j::v], ends[j::v])]
        if f.data_type == DataType.string:
            out[f.name] = fields.decode_strings(chunks)
        else:
            out[f.name] = np.empty(n, object)
            out[f.name][:] = chunks
    return out


def axis_column(schema, header, fixed, out=None, axis_raw=None):
    """The axis values of a frame's records: int64 ticks for time, float64 otherwise.

    `out` receives them (an int64 / float64 array of N); `axis_raw` is the
    axis field's raw column when the caller already extracted it."""
    n = header.record_count
    base = header.axis_base(schema.is_time)
    mode = schema.axis_mode
    if schema.is_time:
        if out is None:
            out = np.empty(n, np.int64)
        u = out.view(np.uint64)
        if mode == AxisMode.implicit:
            step = schema.axis_step
            check_range(base, base + (n - 1) * step if n else base)
            np.multiply(np.arange(n, dtype=np.uint64), np.uint64(step % (1 << 64)), out=u)
            np.add(u, np.uint64(base % (1 << 64)), out=u)
            return out
        raw = axis_raw if axis_raw is not None else fields.extract(fixed, schema.fields[schema.axis_field])
        if n:
            lo, hi = int(raw.min()), int(raw.max())
            check_range(base + lo * schema.axis_scale, base + hi * schema.axis_scale)
        # widened into `out` first (sign-extended for sint), then scaled in
        # place: wrap-around uint64 arithmetic, exact since check_range passed
        if raw.dtype.kind == "u":
            u[...] = raw
        else:
            out[...] = raw
        if schema.axis_scale != 1:
            np.multiply(u, np.uint64(schema.axis_scale % (1 << 64)), out=u)
        np.add(u, np.uint64(base % (1 << 64)), out=u)
        return out
    idx = np.arange(n, dtype=np.float64)
    # IEEE binary64 as SPEC §5.2 says: an overflow is inf (and inf - inf NaN), a value, not a warning
    with np.errstate(all="ignore"):
        if mode == AxisMode.implicit:
            col = base + idx * schema.axis_step
        elif mode == AxisMode.implicit_log:
            col = base * np.power(schema.axis_step, idx)
        else:
            raw = axis_raw if axis_raw is not None else fields.extract(fixed, schema.fields[schema.axis_field])
            col = base + raw.astype(np.float64) * schema.axis_scale
    if out is None:
        return col
    out[...] = col
    return out


def check_range(*values):
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


def header_problem(schema, header, payload_len):
    """Why a DATA frame must be rejected that its 28-byte header already shows (SPEC §8.3 steps 3–4), or None."""
    if header.codec not in Codec._value2member_map_:
        return f"unknown codec {header.codec}"
    if header.filter not in Filter._value2member_map_:
        return f"unknown filter {header.filter}"
    n, size = header.record_count, schema.record_size
    minimum = n * size + 4 * n * len(schema.variable_fields)
    if header.raw_size < minimum or (not schema.variable_fields and header.raw_size != minimum):
        return f"raw_size {header.raw_size} does not fit {n} records of {size} bytes"
    if header.codec == Codec.none and header.raw_size != payload_len - 28:
        return f"raw_size {header.raw_size} but {payload_len - 28} bytes stored"
    return None

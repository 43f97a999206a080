"""Checking every DATA frame of a scanned file without building its columns
(`logb verify`), on several cores at once.

A frame is checked as far as anything can reject it, exactly as
LogbFile.validate decodes it: decompress, untranspose, the raw_size and tail
checks, UTF-8 of every string field, the time axis range, and the first axis
value an INDEX claims. What cannot fail is skipped: no other field is
extracted, and the axis range is proved from the axis field's width when it
can be (extracted only when the width alone allows an overflow). A frame
stored as is (codec none, no filter) with nothing a record can get wrong is
not read at all (header_problem matched its sizes at open); an INDEX claim
on it reads its first record.

The checks run in a thread pool when there is decompression to share out
(zstd, the C kernels and pread release the GIL); their outcomes are applied
in validate's order (stream by stream, file order within one), so every
report is the serial one.
"""

import dataclasses
import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import fields
from ._kernels import field_window
from .batch import I64_MAX, I64_MIN, _region, _walk_tails, axis_column, check_range
from .errors import LogbError, MalformedPayloadError
from .frames import pack_axis
from .tables import AxisMode, ByteOrder, Codec, DataType, Filter

# Frames per task: enough that a task's overhead is small against its frames.
_CHUNK = 16


def default_jobs():
    return os.cpu_count() or 1


def _field_bounds(f):
    """The least and greatest raw value of an integer field, else None."""
    w = f.bit_width
    if f.data_type == DataType.uint:
        return 0, (1 << w) - 1
    if f.data_type == DataType.sint:
        return -(1 << (w - 1)), (1 << (w - 1)) - 1
    return None


class _Plan:
    """What checking one stream's frames takes, worked out once per stream."""

    def __init__(self, schema):
        self.schema = schema
        # nothing but the axis can reject a record of a stored-as-is frame (header_problem matched its sizes)
        self.plain = not schema.variable_fields and all(f.data_type != DataType.string for f in schema.fields)
        self.offsets = None  # explicit time axis of an integer field: every axis offset from the base it can give
        self.axis_int = None  # ... and that field, its first value read as a Python int
        if schema.is_time and schema.axis_mode != AxisMode.implicit:
            f = schema.fields[schema.axis_field]
            bounds = _field_bounds(f)
            if bounds is not None:
                self.offsets = tuple(b * schema.axis_scale for b in bounds)
                self.axis_int = f if f.bit_width else None

    def axis_proved(self, header):
        """True when no record of the frame can put the time axis out of i64 range."""
        if self.offsets is None:
            return False
        base = header.axis_base(True)
        return all(I64_MIN <= base + o <= I64_MAX for o in self.offsets)


def check_frame(plan, stream, fl, claimed, lazy=True):
    """What decoding `fl` would raise (None if nothing), and its first axis
    value when `claimed` (an INDEX states it), else None. Reads only, and
    when `lazy` nothing of a frame that only its header can reject."""
    schema, header = plan.schema, fl.header
    start, end = fl.stored_slice
    n = header.record_count
    implicit = schema.is_time and schema.axis_mode == AxisMode.implicit
    try:
        if (lazy and plan.plain and header.codec == Codec.none and header.filter == Filter.none
                and (implicit or not schema.is_time or plan.axis_proved(header))):
            if implicit and n:
                _implicit_range(schema, header)
            if not (claimed and n):
                return None, None
            first = stream._file._stored(start, start + schema.record_size)
            return None, _first_axis(plan, header, np.frombuffer(first, np.uint8).reshape(1, -1))
        data, fixed = _region(schema, header, stream._file._stored(start, end))
        if schema.variable_fields:
            _walk_tails(schema, data, n * schema.record_size, n)  # also UTF-8 of variable strings
        for f in schema.fields:
            if f.data_type == DataType.string and not f.variable:
                fields.extract(fixed, f)  # UTF-8
        if implicit and n:
            _implicit_range(schema, header)
        elif schema.is_time and n and not plan.axis_proved(header):  # as axis_column checks it
            raw = fields.extract(fixed, schema.fields[schema.axis_field])
            base, scale = header.axis_base(True), schema.axis_scale
            check_range(base + int(raw.min()) * scale, base + int(raw.max()) * scale)
        return None, _first_axis(plan, header, fixed) if claimed and n else None
    except (LogbError, ValueError) as exc:
        return exc, None


def _implicit_range(schema, header):
    base = header.axis_base(True)
    check_range(base, base + (header.record_count - 1) * schema.axis_step)


def _int_field(record, f):
    """An integer field's value in one record (bytes), as fields.extract reads it (SPEC §6.2)."""
    big = f.byte_order == ByteOrder.big
    b0, k, shift = field_window(f.bit_offset, f.bit_width, big)
    v = int.from_bytes(record[b0 : b0 + k], "big" if big else "little") >> shift & (1 << f.bit_width) - 1
    if f.data_type == DataType.sint and v >> (f.bit_width - 1):
        v -= 1 << f.bit_width
    return v


def _first_axis(plan, header, fixed):
    """The frame's first axis value, as axis_column gives it (its range is checked)."""
    schema = plan.schema
    if schema.is_time:
        base = header.axis_base(True)
        if schema.axis_mode == AxisMode.implicit:
            return base
        if plan.axis_int is not None:  # one value: Python ints beat a kernel call on a 1-row array
            return base + _int_field(fixed[0].tobytes(), plan.axis_int) * schema.axis_scale
        return base + int(fields.extract(fixed[:1], schema.fields[schema.axis_field])[0]) * schema.axis_scale
    return axis_column(schema, dataclasses.replace(header, record_count=1), fixed[:1])[0]  # float arithmetic as is


def _check_chunk(task, lazy=True):
    return [check_frame(plan, stream, fl, claimed, lazy) for plan, stream, fl, claimed in task]


def _still_holds(f, work):
    """The input still holds every frame. A file can shrink after the scan:
    then every frame is read in full, as validate reads it, so each one past
    the new end reports the shrink."""
    end = max((fl.stored_slice[1] for _p, _s, fl, _c in work), default=0)
    return not end or len(f.source.read_at(end - 1, 1)) == 1


def verify(f, jobs=1):
    """LogbFile.validate without the columns: every accepted DATA frame
    checked, its rejection reported (raised when strict), with `jobs` threads.
    Returns the report."""
    claims = f._index_axes
    plans = {id(s): _Plan(s.schema) for s in f.streams.values() if s.schema is not None}
    work = [(plans[id(s)], s, fl, fl.offset in claims) for s in f.streams.values() if id(s) in plans for fl in s.frames]
    chunks = [work[i : i + _CHUNK] for i in range(0, len(work), _CHUNK)]
    check = functools.partial(_check_chunk, lazy=_still_holds(f, work))
    # Threads pay only where a check runs outside the GIL (decompression); an
    # uncompressed frame's check is a few µs of Python that threads would only contend for.
    if jobs > 1 and len(chunks) > 1 and any(fl.header.codec != Codec.none for _p, _s, fl, _c in work):
        pool = ThreadPoolExecutor(min(jobs, len(chunks)))
        try:
            _apply(f, work, (r for part in pool.map(check, chunks) for r in part))
        finally:
            pool.shutdown(cancel_futures=True)  # a strict error stops the checks still queued
    else:
        _apply(f, work, (r for part in map(check, chunks) for r in part))
    return f.report


def _apply(f, work, results):
    """Stream.decode_frame's consequences of each outcome, in order."""
    for (_plan, stream, fl, _claimed), (exc, first) in zip(work, results):
        if exc is not None:
            if f.strict:
                raise MalformedPayloadError(f"DATA frame at offset {fl.offset}: {exc}") from exc
            stream._drop(fl, str(exc))
            continue
        claimed = f._index_axes.get(fl.offset)  # gone once an earlier frame disproved the INDEX
        if claimed is not None and first is not None and pack_axis(first, stream.schema.is_time) != claimed:
            f._index_disagrees(fl.offset)

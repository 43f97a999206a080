"""Checking every DATA frame of a scanned file without building its columns
(`logb verify`), on several cores at once.

A frame is checked as far as anything can reject it, exactly as
LogbFile.validate decodes it: decompress, untranspose, the raw_size and tail
checks, UTF-8 of every string field, the time axis range, and the first axis
value an INDEX claims. What cannot fail is skipped: no other field is
extracted, and the axis range is proved from the axis field's width when it
can be (extracted only when the width alone allows an overflow).

The checks run in a thread pool when there is decompression to share out
(zstd, the C kernels and pread release the GIL); their outcomes are applied in validate's order (stream by stream, file
order within one), so every report is the serial one.
"""

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor

from . import fields
from .batch import I64_MAX, I64_MIN, _region, _walk_tails, axis_column, check_range
from .errors import LogbError, MalformedPayloadError
from .frames import pack_axis
from .tables import AxisMode, Codec, DataType

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


def _axis_proved(schema, header):
    """True when no record of the frame can put the time axis out of i64 range."""
    bounds = _field_bounds(schema.fields[schema.axis_field])
    if bounds is None:
        return False
    base = header.axis_base(True)
    return all(I64_MIN <= base + b * schema.axis_scale <= I64_MAX for b in bounds)


def check_frame(stream, fl, claimed):
    """What decoding `fl` would raise (None if nothing), and its first axis
    value when `claimed` (an INDEX states it), else None. Reads only."""
    schema, header = stream.schema, fl.header
    start, end = fl.stored_slice
    try:
        data, fixed = _region(schema, header, stream._file._stored(start, end))
        n = header.record_count
        if schema.variable_fields:
            _walk_tails(schema, data, n * schema.record_size, n)  # also UTF-8 of variable strings
        for f in schema.fields:
            if f.data_type == DataType.string and not f.variable:
                fields.extract(fixed, f)  # UTF-8
        if schema.is_time and n:
            if schema.axis_mode == AxisMode.implicit:
                base = header.axis_base(True)
                check_range(base, base + (n - 1) * schema.axis_step)
            elif not _axis_proved(schema, header):  # as axis_column checks it
                raw = fields.extract(fixed, schema.fields[schema.axis_field])
                base, scale = header.axis_base(True), schema.axis_scale
                check_range(base + int(raw.min()) * scale, base + int(raw.max()) * scale)
        return None, _first_axis(schema, header, fixed) if claimed and n else None
    except (LogbError, ValueError) as exc:
        return exc, None


def _first_axis(schema, header, fixed):
    """The frame's first axis value, as axis_column gives it (its range is checked)."""
    if schema.is_time:
        base = header.axis_base(True)
        if schema.axis_mode == AxisMode.implicit:
            return base
        return base + int(fields.extract(fixed[:1], schema.fields[schema.axis_field])[0]) * schema.axis_scale
    return axis_column(schema, dataclasses.replace(header, record_count=1), fixed[:1])[0]  # float arithmetic as is


def _check_chunk(task):
    return [check_frame(stream, fl, claimed) for stream, fl, claimed in task]


def verify(f, jobs=1):
    """LogbFile.validate without the columns: every accepted DATA frame
    checked, its rejection reported (raised when strict), with `jobs` threads.
    Returns the report."""
    claims = f._index_axes
    work = [(s, fl, fl.offset in claims) for s in f.streams.values() if s.schema is not None for fl in s.frames]
    chunks = [work[i : i + _CHUNK] for i in range(0, len(work), _CHUNK)]
    # Threads pay only where a check runs outside the GIL (decompression); an
    # uncompressed frame's check is a few µs of Python that threads would only contend for.
    if jobs > 1 and len(chunks) > 1 and any(fl.header.codec != Codec.none for _s, fl, _c in work):
        pool = ThreadPoolExecutor(min(jobs, len(chunks)))
        try:
            _apply(f, work, (r for part in pool.map(_check_chunk, chunks) for r in part))
        finally:
            pool.shutdown(cancel_futures=True)  # a strict error stops the checks still queued
    else:
        _apply(f, work, (r for part in map(_check_chunk, chunks) for r in part))
    return f.report


def _apply(f, work, results):
    """Stream.decode_frame's consequences of each outcome, in order."""
    for (stream, fl, _claimed), (exc, first) in zip(work, results):
        if exc is not None:
            if f.strict:
                raise MalformedPayloadError(f"DATA frame at offset {fl.offset}: {exc}") from exc
            stream._drop(fl, str(exc))
            continue
        claimed = f._index_axes.get(fl.offset)  # gone once an earlier frame disproved the INDEX
        if claimed is not None and first is not None and pack_axis(first, stream.schema.is_time) != claimed:
            f._index_disagrees(fl.offset)

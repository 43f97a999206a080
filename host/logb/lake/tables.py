"""One unit of lake work: a byte range of one source, decoded segment by segment into
Arrow record batches, one per partition they belong to.

Three datasets, hive-partitioned (docs/LAKE.md):

- `signals/device=/message=/date=`  CAN signals, one row per decoded frame;
- `frames/device=/bus=/date=`       raw CAN frames;
- `streams/device=/stream=/date=`   every other (sensor) stream, one row per record.

Every row carries `timestamp` (timestamp[ns, UTC]: the wall time where its session is
dated, else the device time — `dated` is then false), `device_time_ns` (the logger's own
axis), `session` (its uuid, or file#index where none is written), `segment` (the
session's segment_seq), `run` (the segment's run id; null where one segment holds
several), `source` (the file). A segment is the unit of decoding because segments are
self-contained (SPEC §3.2): session, segment and run are then one value per batch, and a
large file's ranges are independent tasks.
"""

import datetime as dt
import json

import numpy as np

from .. import convert
from ..can.bus import RAW_FIELDS, buses, frame_chunks, frames_columns, group_frames, is_message_stream, \
    is_raw_bus_stream
from ..can.dbc import signals_of
from ..can.decode import bus_batches, decode_batches, embedded_dbc
from ..can.formats import wall_ns_of
from ..can.layout import FLAG_NAMES
from ..errors import InvalidDataError, NothingToDecodeError
from ..schema import Conversion
from ..tables import ConversionType
from ..timebase import ticks_to_ns

UNDATED = "undated"  # the date partition of rows whose session has no wall time
_NS_PER_DAY = 86_400 * 10**9
_CONVERSION_NAMES = {int(v): v.name for v in ConversionType}


def _pa():
    import pyarrow as pa  # the lake's own dependency (host/pyproject.toml `lake` extra)

    return pa


class Context:
    """What every row of one segment shares."""

    def __init__(self, f, source, device, seg_index, names=None):
        seg = f.segments[seg_index]
        session = f.sessions[seg.session]
        self.f = f
        self.source = source
        self.session_index = seg.session
        named = None if names is None else names.get(seg.session)
        self.session = named or session.id or f"{source}#{seg.session}"
        self.device = str(session.meta.get("logb.device") or device)
        self.segment = seg.seq
        self.run = None

    def times(self, axis, axis_exp):
        """(timestamp ns, dated, device ns) of int64 ticks."""
        axis = np.asarray(axis, np.int64)
        try:
            device = ticks_to_ns(axis, axis_exp)
        except OverflowError:
            raise InvalidDataError("device times past int64 nanoseconds") from None
        wall, ok = wall_ns_of(self.f, axis, axis_exp, self.session_index) if len(axis) else (None, False)
        return (wall if ok else device), ok, device

    def columns(self, axis, axis_exp):
        """The leading columns of a batch, and each row's date partition."""
        pa = _pa()
        ts, dated, device = self.times(axis, axis_exp)
        n = len(ts)
        cols = {
            "timestamp": pa.array(ts, pa.timestamp("ns", tz="UTC")),
            "dated": pa.array(np.full(n, dated)),
            "device_time_ns": pa.array(device, pa.int64()),
            "session": constant(pa, self.session, n),
            "segment": pa.array(np.full(n, self.segment, np.int64)),
            "run": pa.nulls(n, pa.int64()) if self.run is None else pa.array(np.full(n, self.run, np.int64)),
            "source": constant(pa, self.source, n),
        }
        days = ts // _NS_PER_DAY if dated else None
        return cols, days


def constant(pa, text, n):
    """A dictionary column of one string, n times (one dictionary entry, int32 zeros)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([text], pa.string()))


def _dates(days):
    """{date text: row selection} of day numbers since 1970 (None: every row undated)."""
    if days is None:
        return {UNDATED: None}
    uniq = np.unique(days)
    if len(uniq) == 1:
        return {_day(uniq[0]): None}
    return {_day(d): days == d for d in uniq}


def _day(d):
    return (dt.date(1970, 1, 1) + dt.timedelta(days=int(d))).isoformat()


def _conversion_text(conv):
    if conv is None or conv.type == ConversionType.identity:
        return None
    out = {"type": _CONVERSION_NAMES.get(int(conv.type), str(conv.type))}
    if conv.type == ConversionType.linear:
        out["offset"], out["factor"] = conv.coeffs
    elif conv.coeffs:
        out["coeffs"] = list(conv.coeffs)
    if conv.entries:
        out["entries"] = [list(e) for e in conv.entries]
    return json.dumps(out)


def _field(pa, name, arr, unit="", conversion=None, description=""):
    meta = {k: v for k, v in (("unit", unit), ("conversion", conversion), ("description", description)) if v}
    return pa.field(name, arr.type, metadata={k.encode(): str(v).encode() for k, v in meta.items()} or None)


def _values(pa, col):
    """An Arrow array of a numpy column: masked cells are nulls, object columns strings or bytes."""
    if isinstance(col, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(col)
        return pa.array(np.ma.getdata(col), mask=mask if mask.any() else None)
    col = np.asarray(col)
    if col.dtype == object:  # labels (str), variable-length bytes fields (bytes), None
        return pa.array(col.tolist())
    if col.dtype.kind == "u" and col.dtype.itemsize == 8:
        return pa.array(col, pa.uint64())
    if col.ndim > 1:  # a fixed array field: one list per row
        return pa.FixedSizeListArray.from_arrays(pa.array(col.reshape(-1)), int(np.prod(col.shape[1:])))
    return pa.array(col)


def _labels(pa, texts):
    """Value-table labels as a dictionary column (None where the table has no entry)."""
    return pa.array(list(texts), pa.string()).dictionary_encode()


class Sink:
    """Collects (dataset, partition values, record batch) pieces; `emit` is given them."""

    def __init__(self, emit):
        self.emit = emit
        self.rows = {"signals": 0, "frames": 0, "streams": 0}
        self.records = 0

    def put(self, dataset, device, name, ctx_cols, days, fields, arrays):
        pa = _pa()
        head = [pa.field(k, v.type) for k, v in ctx_cols.items()]
        schema = pa.schema(head + fields)
        table = pa.Table.from_arrays(list(ctx_cols.values()) + arrays, schema=schema)
        for date, sel in _dates(days).items():
            part = table if sel is None else table.filter(pa.array(sel))
            if part.num_rows:
                self.rows[dataset] += part.num_rows
                self.emit(dataset, {"device": device, _NAME_KEY[dataset]: name, "date": date}, part)


_NAME_KEY = {"signals": "message", "frames": "bus", "streams": "stream"}


def decode_range(f, lo, hi, source, device, dbcs, emit, records=1 << 16, names=None):
    """Decode the DATA frames of `f` starting in [lo, hi), segment by segment, into `emit`.
    `dbcs` (units.Dbcs): `rule(device, bus)`, the CompiledDbc the caller chose for a bus or
    None (the file's attached DBC, else its per-message streams), and `compiled(text, bus)`,
    an attached DBC compiled once. `names`: {session index: its name}, for a window of a
    file (units.adopt). Returns the Sink (row counts)."""
    sink = Sink(emit)
    starts = [s.offset for s in f.segments]
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else f.report.size
        a, b = max(lo, start), min(hi, end)
        if a >= b:
            continue
        with f.only_frames(a, b):
            if not any(s._frames for s in f.streams.values()):
                continue
            ctx = Context(f, source, device, i, names)
            ctx.run = _single_run(f)
            _signals(f, ctx, dbcs, sink, records)
            _frames(f, ctx, sink, records)
            _streams(f, ctx, sink, records)
    return sink


def _single_run(f):
    runs = {fl.header.run_id for s in f.streams.values() for fl in s._frames}
    return runs.pop() if len(runs) == 1 else None


# ------------------------------------------------------------------ CAN signals
def _signals(f, ctx, dbcs, sink, records):
    groups = buses(f)
    chosen = {g.name: dbcs.rule(ctx.device, g.name) for g in groups}
    attached = {g.name: embedded_dbc(f, g.streams[0]) for g in groups}
    # One source of signals per file, whatever its state: a growing file's ingests must split
    # one set of DATA frames by offset. A file whose buses are all `mirror` with a DBC attached
    # is decoded from its raw bus streams (decode_batches would switch a cut one to them, and
    # back to its per-message streams once it is whole); --dbc rules decode their buses.
    raw = bool(groups) and not any(g.exclusive_segments() for g in groups) and all(attached.values())
    if raw or any(c is not None for c in chosen.values()):
        parts = []
        for g in groups:
            compiled = chosen[g.name]
            if compiled is None and attached[g.name] is not None:
                compiled = dbcs.compiled(attached[g.name], g.streams[0].name)
            if compiled is not None:  # else its frames are in `frames` only
                parts.append((compiled, bus_batches(f, g, compiled, records=records)))
    else:
        parts = [(None, decode_batches(f, records=records))]
    try:
        for compiled, batches in parts:
            for batch in batches:
                for d in batch:
                    _put_decoded(f, ctx, compiled, d, sink)
    except NothingToDecodeError:
        return  # no CAN streams, or raw ones without a DBC: frames and streams still go in


def _signal_meta(f, compiled, d):
    """{signal: SignalField} of a Decoded's message: from its stream's schema (per-message
    streams), or the DBC entry it was decoded with."""
    schema = None
    if compiled is not None:
        schema = next((e.schema for e in compiled.entries if e.name == d.stream), None)
    else:
        try:
            schema = f.stream(d.stream).schema
        except LookupError:
            schema = None
    return {} if schema is None else {s.name: s for s in signals_of(schema)}


def _put_decoded(f, ctx, compiled, d, sink):
    if not len(d):
        return
    pa = _pa()
    head, days = ctx.columns(d.axis, d.axis_exp)
    n = len(d)
    head["bus"] = constant(pa, d.bus, n)
    if d.mux:
        head["mux"] = constant(pa, d.mux, n)
    meta = _signal_meta(f, compiled, d)
    fields, arrays = [], []
    for name, col in d.phys.items():
        arr = _values(pa, col)
        sf = meta.get(name)
        fields.append(_field(pa, name, arr, d.units.get(name, ""), _conversion_text(sf.numeric if sf else None)))
        arrays.append(arr)
        if name in d.text:
            labels = _labels(pa, d.text[name])
            fields.append(_field(pa, f"{name}.text", labels, conversion=_conversion_text(
                sf.text if sf else None)))
            arrays.append(labels)
    sink.put("signals", ctx.device, d.message if not d.mux else d.stream, head, days, fields, arrays)


# ------------------------------------------------------------------ raw frames
def _frames(f, ctx, sink, records):
    pa = _pa()
    for g in buses(f):
        if len(g.streams) > 1 or g.exclusive_segments():
            b = group_frames(f, g)  # merged across routings: the whole bus of the segment
            pieces = [(b.t, b.axis_exp, b.id, b.flags, b.dlc, b.data)]
        else:
            s = g.streams[0]
            pieces = ((axis, s.schema.axis_exp, c["id"], c["flags"], c["dlc"], c["data"]) for axis, _s, c in
                      (frames_columns(s, chunk, RAW_FIELDS) for chunk in frame_chunks(s, None, records)))
        for axis, exp, ids, flags, dlc, data in pieces:
            if not len(axis):
                continue
            head, days = ctx.columns(axis, exp)
            flags = np.asarray(flags, np.uint8)
            arrays = [pa.array(np.asarray(ids, np.uint32)), pa.array(np.asarray(dlc, np.uint8))]
            names = ["id", "dlc"]
            for bit, flag in enumerate(FLAG_NAMES):
                arrays.append(pa.array((flags >> bit) & 1 == 1))
                names.append(flag)
            arrays.append(_payloads(pa, np.asarray(data), np.asarray(dlc), flags))
            names.append("data")
            fields = [pa.field(n, a.type) for n, a in zip(names, arrays)]
            sink.records += len(axis)
            sink.put("frames", ctx.device, g.name, head, days, fields, arrays)


def _payloads(pa, data, dlc, flags):
    """Each frame's payload as its wire length of bytes (the DLC's length; none for remote frames)."""
    from ..can.layout import FLAG_REMOTE, frame_lengths

    lengths = np.minimum(frame_lengths(dlc, flags), data.shape[1]).astype(np.int64)
    lengths[(flags & FLAG_REMOTE) != 0] = 0
    keep = np.arange(data.shape[1]) < lengths[:, None]
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.BinaryArray.from_buffers(pa.binary(), len(lengths), [None, pa.py_buffer(offsets),
                                                                   pa.py_buffer(data[keep].tobytes())])


# ------------------------------------------------------------------ sensor streams
def _streams(f, ctx, sink, records):
    for s in f.streams.values():
        if s.schema is None or not s._frames or is_raw_bus_stream(s) or is_message_stream(s):
            continue
        if not s.schema.is_time:
            continue  # rows of a lake are points in time; an axis of another kind stays in the file
        pending, count = [], 0
        for _fl, batch in s.batches():
            pending.append(batch)
            count += batch.count
            if count >= records:
                _put_stream(ctx, s, pending, sink)
                pending, count = [], 0
        if pending:
            _put_stream(ctx, s, pending, sink)


def _put_stream(ctx, s, batches, sink):
    pa = _pa()
    axis = np.concatenate([b.axis for b in batches])
    head, days = ctx.columns(axis, s.schema.axis_exp)
    fields, arrays = [], []
    for fd in s.schema.fields:
        if fd.name not in batches[0].raw:
            continue
        raw = np.concatenate([b.raw[fd.name] for b in batches])
        conv = fd.conversion if isinstance(fd.conversion, Conversion) else None
        col = convert.physical(conv, raw) if conv is not None else raw
        arr = _values(pa, col)
        fields.append(_field(pa, fd.name, arr, fd.unit, _conversion_text(conv), fd.description))
        arrays.append(arr)
    sink.records += len(axis)
    sink.put("streams", ctx.device, s.name, head, days, fields, arrays)

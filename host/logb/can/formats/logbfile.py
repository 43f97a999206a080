"""A Trace into a Logb file (CanRecorder: one raw bus stream per bus, per-message
streams and the DBC with one) and back out (every frame of each bus, whatever the
routing: logb.can.bus.all_bus_frames)."""

import os

import numpy as np

from ...errors import InvalidDataError
from .trace import Bus, Trace

_I64_MAX = 2**63 - 1

SEGMENT_BYTES = 1 << 20  # `logb import` segments: a lost one costs seconds of a busy bus (docs/CAN.md)
FLUSH_S = 1.0  # per-message records wait at most this long (of trace time) for their DATA frame


def write_logb(trace, out, dbc=None, device="logb", source=None, batch=4096, codec=None,
               segment_bytes=SEGMENT_BYTES, flush_s=FLUSH_S, session=None):
    """Write a Trace as a Logb file with CanRecorder: one raw bus stream per bus, plus the
    per-message streams and the DBC attachment when `dbc` (a path, DBC text or bytes) is
    given. Written like a logger: DATA frames of all buses and of the per-message streams
    interleaved in time (a per-message stream's records go out once the oldest is `flush_s`
    seconds of trace time old), segments of at most `segment_bytes` (+ one frame) or 60 s of
    trace time, each binding only the streams with data in it (Writer bind_used); a bus's
    refused frames (Bus.invalid) as its raw bus stream's logb.lost.invalid. `session`: the
    writer session's logb.session (32 hex digits; default random). Returns
    the DBC's problems (a list of (name, reason)), empty without a DBC."""
    import logb
    from logb import tables
    from logb.tables import Codec

    from ..dbc import compile_dbc
    from ..record import CanRecorder

    codec = Codec.zstd if codec is None else codec
    unit_ns = 10 ** (9 + trace.axis_exp)
    bounds = trace.time_bounds()
    meta = {"can.import.format": trace.source_format}
    if source:
        meta["can.import.source"] = os.path.basename(str(source))
    if trace.dated and trace.start is not None:
        meta["can.import.start_ns"] = str(trace.start * unit_ns)
    start = trace.start if trace.start is not None else (bounds[0] if bounds else 0)
    wall = start * unit_ns if trace.dated else 0
    dbc_source = None
    if dbc is not None:
        dbc_source = dbc if not isinstance(dbc, os.PathLike) else os.fspath(dbc)
    problems = []
    sink = str(out) if isinstance(out, (str, os.PathLike)) else out
    now = [(bounds[0] if bounds else 0) * 10.0 ** trace.axis_exp]  # trace time (s), not the conversion's
    with logb.Writer(sink, time_base="unix" if trace.dated else "relative", meta=meta, session=session,
                     clock_source=f"imported from {trace.source_format}", wall_clock=lambda: wall,
                     monotonic=lambda: now[0], segment_bytes=segment_bytes, bind_used=True) as w:
        jobs, recorders = [], []
        for name in sorted(trace.buses):
            b = trace.buses[name]
            compiled = None
            if dbc_source is not None:
                compiled = compile_dbc(dbc_source, bus=name, device=device, axis_exp=trace.axis_exp)
                if not problems:
                    problems = list(compiled.problems)
            # one DBC attachment per file, not one per bus
            rec = CanRecorder(w, compiled, bus=name, fd=b.fd, device=device, codec=codec, batch=batch,
                              axis_exp=trace.axis_exp, attach=not recorders, flush_s=flush_s)
            recorders.append(rec)
            jobs += [(int(b.t[lo:lo + batch].min()), rec, b, lo) for lo in range(0, len(b), batch)]
        jobs.sort(key=lambda j: j[0])  # buses interleaved in time, DATA frame by DATA frame
        for first, rec, b, lo in jobs:
            now[0] = first * 10.0 ** trace.axis_exp
            hi = lo + batch
            rec.add(b.t[lo:hi], b.id[lo:hi], b.flags[lo:hi], b.dlc[lo:hi], b.data[lo:hi])
        for rec in recorders:
            rec.flush()
            refused = trace.buses[rec.bus].invalid
            if refused:  # the session's total (SPEC G13), as a live writer's last counter
                w.meta({tables.LOST_INVALID: refused}, stream=rec.raw)
    return problems


def raw_bus_streams(f):
    """The raw bus streams of an open LogbFile (a bus's frames: logb.can.bus.bus_frames)."""
    return [s for s in f.streams.values()
            if s.schema is not None and s.schema.meta_dict().get("logb.can.layout") in ("raw", "raw-fd")]


def read_logb(f, streams=None):
    """A Trace from an open LogbFile's CAN buses (all, or those whose bus or raw bus stream
    name or uuid is in `streams`): every frame of each bus, whatever the routing
    (logb.can.bus.bus_frames), and the file's DBC as its attachment. Ticks are Unix ticks
    when every frame is dated (unix or anchored sessions), else the session's own axis ticks."""
    from ..bus import all_bus_frames
    from ..dbc import MEDIA_TYPE

    chosen = all_bus_frames(f, streams)
    exp = min((b.axis_exp for b in chosen.values()), default=-6)
    parts, dated = [], True
    for name, b in chosen.items():
        ns, ok = wall_ns_of(f, b.t, b.axis_exp, b.session)
        parts.append((name, b, ns, ok))
        dated &= ok
    buses = {}
    for name, b, ns, ok in parts:
        ticks = ns if dated else _ticks_ns(b.t, b.axis_exp)
        ticks = _ns_to_ticks(ticks, exp)
        buses[name] = Bus(name, ticks, b.id, b.flags, b.dlc, b.data)
    start = None
    meta = f.sessions[0].meta if f.sessions else {}
    if dated and "can.import.start_ns" in meta:
        try:
            start = _ns_to_ticks(np.array([int(meta["can.import.start_ns"])]), exp)[0].item()
        except (ValueError, InvalidDataError):
            start = None
    dbcs = [a for a in f.attachments if a.media_type == MEDIA_TYPE and not a.problem]
    return Trace(buses, exp, dated, start, meta.get("can.import.format", "logb"),
                 attachments=[(dbcs[-1].name, dbcs[-1].data())] if dbcs else [])


def _ticks_ns(axis, exp):
    if exp >= -9:
        scale = 10 ** (exp + 9)
        # numpy wraps silently: an axis whose ns do not fit int64 is refused, not wrapped
        if len(axis) and max(int(axis.max()), -int(axis.min())) > _I64_MAX // scale:
            raise InvalidDataError(f"times scaled by 10^{exp + 9} are past int64")
        return axis * scale if len(axis) else np.asarray(axis, np.int64)
    div = 10 ** (-9 - exp)
    if div > _I64_MAX:  # every tick is below a nanosecond: floor division's result, without an int past int64
        return np.where(np.asarray(axis) < 0, -1, 0).astype(np.int64)
    return axis // div


def _ns_to_ticks(ns, exp):
    return _ticks_ns(ns, -18 - exp)  # the same scaling the other way: 10**(9+exp) ns per tick


def wall_ns_of(f, axis, axis_exp, session):
    """Vectorised Clock.wall over arrays of axis ticks and session indices: exact for unix
    sessions and a single anchor; between two anchors within a nanosecond or so of
    Clock.wall's exact rounding. (None, False) if any record is undated."""
    try:
        axis = _ticks_ns(np.asarray(axis, np.int64), axis_exp)
    except InvalidDataError:
        return None, False  # no wall time in ns for these ticks
    session = np.broadcast_to(np.asarray(session), axis.shape)
    out = np.empty(len(axis), np.int64)
    for idx in np.unique(session):
        sess = f.sessions[int(idx)]
        sel = session == idx
        a = axis[sel]
        if sess.time_base == "unix":
            out[sel] = a
            continue
        anchors = sess.clock.anchors
        if sess.time_base != "monotonic" or not anchors:
            return None, False
        if len(anchors) == 1:
            out[sel] = a + (anchors[0].wall_ns - anchors[0].axis_ns)
            continue
        keys = np.array([x.axis_ns for x in anchors], np.int64)
        j = np.clip(np.searchsorted(keys, a, side="right") - 1, 0, len(anchors) - 2)
        lo_axis, hi_axis = keys[j], keys[j + 1]
        walls = np.array([x.wall_ns for x in anchors], np.int64)
        slope = (walls[j + 1] - walls[j]).astype(np.float64) / (hi_axis - lo_axis).astype(np.float64)
        out[sel] = walls[j] + np.rint((a - lo_axis).astype(np.float64) * slope).astype(np.int64)
    return out, True

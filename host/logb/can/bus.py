"""The whole bus of a CAN recording, whatever its routing (docs/SPEC.md §13.4).

A writer routes frames one of two ways and says which in the raw bus stream's
schema meta `logb.can.routing`:

- `mirror` (host writers: CanRecorder, `logb import`): every frame is in the raw
  bus stream; matching data frames are in their per-message stream too. The bus
  is the raw bus stream.
- `exclusive` (the device default): a classic data frame whose exact per-message
  stream (one whole id, not a PGN match or a multiplexer branch) reconstructs it
  — id and format from the stream's `logb.can.id`/`logb.can.extended`, no other
  flag, DLC = its length = the stream's `payload_len` — is only in that stream;
  every other frame is in the raw bus stream. The bus is the raw bus stream
  merged with those exact streams' records of the same writer sessions.

`bus_frames(f, bus)` returns the bus as columns either way (the same columns for
the same frames), and is what `logb stats`, `logb export --format
candump|asc|blf|trc|mdf4` and `logb decode` with a DBC read. Raw bus streams of
one bus that differ only in routing (their uuids differ in the last bit,
`layout.routing_uuid`) are one bus.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from .. import fields as bits
from ..errors import NotFoundError, did_you_mean
from . import layout
from .dbc import EXT_BITS, EXTENDED, Mux, MuxCondition, is_exact_mask, parse_select
from .rows import gather, pad
from ..tables import ByteOrder

RAW_FIELDS = ("id", "flags", "dlc", "data")


def is_raw_bus_stream(stream):
    return stream.schema is not None and stream.schema.meta_dict().get("logb.can.layout") in ("raw", "raw-fd")


def is_message_stream(stream):
    return stream.schema is not None and stream.schema.meta_dict().get("logb.can.layout") == "message"


def window_ticks(window_s, axis_exp):
    """(T0, T1) seconds → inclusive (lo, hi) ticks of 10**axis_exp s."""
    lo, hi = window_s
    scale = 10.0 ** (-axis_exp)
    return math.ceil(lo * scale - 1e-9), math.floor(hi * scale + 1e-9)


def rescale(ticks, from_exp, to_exp):
    """Integer ticks of 10**from_exp s as ticks of 10**to_exp s (exact when to_exp <= from_exp)."""
    if from_exp == to_exp:
        return ticks
    if from_exp > to_exp:
        return ticks * np.int64(10 ** (from_exp - to_exp))
    return ticks // np.int64(10 ** (to_exp - from_exp))


# ---------------------------------------------------------------- per-message streams' routing

@dataclass
class Route:
    """How a writer routed frames to one per-message stream, from its schema meta
    alone; shaped like a CompiledDbc entry for decode.route_rows."""

    stream: object
    bus: str
    match_id: int
    match_mask: int
    payload_len: int
    can_id: int  # logb.can.id
    extended: bool  # logb.can.extended
    mux: object = None  # a dbc.Mux built from logb.can.select, or None
    exact: bool = False  # exclusive routing may put frames here alone (SPEC §13.4)

    @property
    def name(self):
        return self.stream.name


def route_of(stream):
    """The Route of a per-message stream, or None when its meta does not say how frames
    reach it (no `logb.can.match`, or a malformed one)."""
    meta = stream.schema.meta_dict()
    try:
        mid, _, mask = meta["logb.can.match"].partition("/")
        match_id, match_mask = int(mid, 16), int(mask, 16)
        can_id = int(meta.get("logb.can.id", "0"), 16)
        select = parse_select(meta.get(layout.SELECT_KEY, ""))
    except (KeyError, ValueError):
        return None
    extended = meta.get("logb.can.extended", "0") == "1"
    payload_len = layout.payload_len_of(stream.schema)
    mux = None
    if select or "logb.can.mux" in meta:
        mux = Mux(tuple(MuxCondition("", bits, ByteOrder.big if big else ByteOrder.little, off, width)
                        for big, off, width, bits in select))
    key = (can_id & EXT_BITS) | (EXTENDED if extended else 0)
    exact = (mux is None and is_exact_mask(match_mask) and (key & match_mask) == match_id
             and 0 <= payload_len <= layout.CLASSIC_PAYLOAD)
    return Route(stream, meta.get("logb.can.bus", ""), match_id, match_mask, payload_len, can_id & EXT_BITS,
                 extended, mux, exact)


def message_routes(f, bus_name):
    """The Routes of a bus's per-message streams (`logb.can.bus` = bus_name) in the order a
    writer tries them: most mask bits first, then file order (the config's entry order)."""
    routes = [r for r in (route_of(s) for s in f.streams.values() if is_message_stream(s))
              if r is not None and r.bus == bus_name]
    return sorted(routes, key=lambda r: -bin(r.match_mask).count("1"))  # stable: file order within a class


# ---------------------------------------------------------------- buses

@dataclass
class BusGroup:
    """One bus of a file: its raw bus streams (one per routing seen)."""

    name: str  # unique in the file: the stream name, `can0-1a2b3c4d` when two buses share it
    streams: list
    base_uuid: bytes  # the `mirror` uuid

    @property
    def routings(self):
        return sorted({layout.routing_of(s.schema) for s in self.streams})

    def exclusive_segments(self):
        """Indices of the segments whose raw bus stream of this bus says `exclusive`."""
        return {seg for s in self.streams if layout.routing_of(s.schema) == layout.EXCLUSIVE
                for seg in s.bound_segments}


def buses(f):
    """The file's buses (BusGroup), in the order their raw bus streams appear."""
    groups = {}
    for s in f.streams.values():
        if not is_raw_bus_stream(s):
            continue
        base = layout.routing_uuid(s.uuid, layout.routing_of(s.schema))
        g = groups.get(base)
        if g is None:
            groups[base] = BusGroup(s.name, [s], base)
        else:
            g.streams.append(s)
    out, taken = [], set()
    for g in groups.values():
        if g.name in taken:
            g.name = f"{g.name}-{g.base_uuid.hex()[:8]}"  # two devices' can0
        taken.add(g.name)
        out.append(g)
    return out


def select_buses(f, wanted=None):
    """The BusGroups named in `wanted` (bus names, raw stream names or uuid hex), or all.
    NotFoundError for a name no bus has."""
    groups = buses(f)
    if not wanted:
        return groups
    wanted = [str(w).replace("-", "").lower() if _hexlike(w) else w for w in wanted]
    out, found = [], set()
    for g in groups:
        keys = {g.name} | {s.name for s in g.streams} | {s.uuid.hex() for s in g.streams} | {g.base_uuid.hex()}
        hit = keys.intersection(wanted)
        if hit:
            out.append(g)
            found |= hit
    missing = [w for w in wanted if w not in found]
    if missing:
        names = [g.name for g in groups]
        raise NotFoundError(f"no raw CAN bus stream {missing[0]!r}{did_you_mean(missing[0], names)}; the buses: "
                            f"{', '.join(names) or 'none'}")
    return out


def _hexlike(w):
    t = str(w).replace("-", "")
    return len(t) == 32 and all(c in "0123456789abcdefABCDEF" for c in t)


# ---------------------------------------------------------------- the frames

@dataclass
class BusFrames:
    """Every frame of one bus, as columns in the raw bus stream's terms."""

    name: str
    axis_exp: int
    t: np.ndarray  # int64 ticks of 10**axis_exp s (each session's own axis)
    session: np.ndarray  # int32 session index per frame
    id: np.ndarray  # uint32, 29 bits
    flags: np.ndarray  # uint8, layout.FLAG_*
    dlc: np.ndarray  # uint8, the wire DLC code
    data: np.ndarray  # uint8 (n, 8) or (n, 64), zero-padded
    routing: str = layout.MIRROR  # mirror | exclusive | mixed (sessions routed differently)
    streams: list = field(default_factory=list)  # the raw bus streams read
    from_messages: int = 0  # frames that came from exclusive per-message streams

    @property
    def fd(self):
        return self.data.shape[1] == layout.FD_PAYLOAD

    def __len__(self):
        return len(self.t)


def _collect(stream, names, window_s, frames=None):
    """(axis, session, {name: column}) of a stream's accepted frames (all, or those at
    the file offsets in `frames`)."""
    exp = stream.schema.axis_exp
    ticks = None if window_s is None else window_ticks(window_s, exp)
    if frames is None:  # decoded into preallocated columns
        cols = stream.columns(fields=list(names), window=ticks)
        return cols.axis, cols.session, cols.raw
    chosen = stream._frames_in(ticks)
    if frames is not None:
        chosen = [fl for fl in chosen if fl.offset in frames]
    return frames_columns(stream, chosen, names, ticks)


# Record counts are only claims until each frame decodes: columns are preallocated for what a
# real file can hold (the reader's rule for Columns), else decoded frame by frame.
_PREALLOC_MIN, _PREALLOC_RATIO = 64 << 20, 64


def frames_columns(stream, chosen, names, ticks=None):
    """(axis, session, {name: column}) of the frames `chosen` (FrameLoc, in order) of a
    stream, records outside the inclusive tick window `ticks` left out; decoded straight
    into columns preallocated for the frames' record counts (nothing to concatenate)."""
    names = list(names)
    schema = stream.schema
    total = sum(fl.header.record_count for fl in chosen)
    shapes = {n: bits.column_dtype(schema.field_named(n)) for n in names}
    per_record = 12 + sum(dtype.itemsize * int(np.prod(extra, dtype=np.int64)) for dtype, extra in shapes.values())
    if not total or total * per_record > max(_PREALLOC_MIN, _PREALLOC_RATIO * stream._file.report.size):
        return _frames_columns_each(stream, chosen, names, ticks)
    raw = {n: np.empty((total, *extra), dtype) for n, (dtype, extra) in shapes.items()}
    axis = np.empty(total, np.int64 if schema.is_time else np.float64)
    session = np.empty(total, np.int32)
    pos = 0
    for fl in chosen:
        n = fl.header.record_count
        out = ({k: v[pos:pos + n] for k, v in raw.items()}, axis[pos:pos + n])
        ok = stream.decode_frame(fl, names, out) is not None
        del out
        if not ok:
            continue  # rejected (reported); the next frame reuses the slots
        session[pos:pos + n] = stream.session_of(fl).index
        if ticks is not None:
            keep = (axis[pos:pos + n] >= ticks[0]) & (axis[pos:pos + n] <= ticks[1])
            if not keep.all():
                k = int(np.count_nonzero(keep))
                for col in (axis, session, *raw.values()):
                    col[pos:pos + k] = col[pos:pos + n][keep]
                n = k
        pos += n
    if not pos:
        return _no_frames(stream, names)
    return axis[:pos], session[:pos], {k: v[:pos] for k, v in raw.items()}


def _frames_columns_each(stream, chosen, names, ticks):
    """frames_columns frame by frame, concatenated."""
    parts = []
    for fl in chosen:
        b = stream.decode_frame(fl, names)
        if b is None:
            continue
        axis, raw = b.axis, b.raw
        if ticks is not None:
            keep = (axis >= ticks[0]) & (axis <= ticks[1])
            if not keep.all():
                axis, raw = axis[keep], {k: v[keep] for k, v in raw.items()}
        parts.append((axis, np.full(len(axis), stream.session_of(fl).index, np.int32), raw))
    if not parts:
        return _no_frames(stream, names)
    if len(parts) == 1:
        return parts[0]
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            {n: np.concatenate([p[2][n] for p in parts]) for n in names})


def _no_frames(stream, names):
    none = np.zeros((0, stream.schema.record_size), np.uint8)
    return (np.zeros(0, np.int64), np.zeros(0, np.int32),
            {n: bits.extract(none, stream.schema.field_named(n)) for n in names})


def frame_chunks(stream, ticks, records):
    """The stream's frames that can overlap `ticks`, in lists of about `records` records
    (whole frames; a frame larger than `records` is a list of its own)."""
    chunk, count = [], 0
    for fl in stream._frames_in(ticks):
        chunk.append(fl)
        count += fl.header.record_count
        if count >= records:
            yield chunk
            chunk, count = [], 0
    if chunk:
        yield chunk


def group_frames(f, group, window=None):
    """BusFrames of one BusGroup; `window` = (T0, T1) seconds of the axis, inclusive."""
    raws = [s for s in group.streams if s.schema is not None]
    exp = min(s.schema.axis_exp for s in raws)
    width = max(s.schema.field_named("data").bit_width // 8 for s in raws)
    parts = []  # (axis at exp, session, id, flags, dlc, data)
    for s in raws:
        axis, session, cols = _collect(s, RAW_FIELDS, window)
        parts.append((rescale(axis, s.schema.axis_exp, exp), session, cols["id"].astype(np.uint32, copy=False),
                      cols["flags"].astype(np.uint8, copy=False), cols["dlc"].astype(np.uint8, copy=False),
                      pad(cols["data"], width)))
    excl = group.exclusive_segments()
    routings = set(group.routings)
    from_messages = 0
    if excl:
        for r in message_routes(f, group.streams[0].name):
            if not r.exact:
                continue  # its frames are in the raw bus stream too
            frames = {fl.offset for fl in r.stream.frames if fl.segment in excl}
            if not frames:
                continue
            s = r.stream
            axis, session, cols = _collect(s, ("data",), window, frames)
            n = len(axis)
            from_messages += n
            flags = np.uint8(layout.FLAG_EXTENDED if r.extended else 0)
            parts.append((rescale(axis, s.schema.axis_exp, exp), session, np.full(n, r.can_id, np.uint32),
                          np.full(n, flags, np.uint8), np.full(n, r.payload_len, np.uint8),
                          pad(cols["data"][:, :width], width)))
    nraw = len(raws)
    t, session, ids, flags, dlc, data = (np.concatenate([p[k] for p in parts]) if len(parts) > 1 else parts[0][k]
                                         for k in range(6))
    t = np.asarray(t, np.int64)
    session = np.asarray(session, np.int32)
    base = sum(len(p[0]) for p in parts[:nraw])
    order = None
    if nraw > 1:  # one raw bus stream per routing: group by session, each keeps its order
        order = np.argsort(session[:base], kind="stable")
    if base < len(t):  # exclusive sessions: the per-message streams' frames merged in by time
        b = np.arange(base) if order is None else order
        order = merge_order(session[b], t[b], session[base:], t[base:], b)
    if order is not None:
        t, session, ids, flags, dlc, data = t[order], session[order], ids[order], flags[order], dlc[order], \
            gather(data, order)
    routing = routings.pop() if len(routings) == 1 else "mixed"
    return BusFrames(group.name, exp, t, np.asarray(session, np.int32), ids, flags, dlc,
                     np.ascontiguousarray(data), routing, raws, from_messages)


def merge_order(base_session, base_t, add_session, add_t, base_index=None):
    """The order that merges added records into base records by time (indices into
    concat(base, add); base_index maps base positions to indices, default 0..n-1).
    The base keeps its own order, even where its ticks go back (a bus as it arrived):
    an added record goes after every base record of its session whose ticks, or any
    earlier ones of the session, are <= its own; added records are taken in (session,
    ticks) order, stably. Sessions must be grouped in the base (as in file order)."""
    n, m = len(base_t), len(add_t)
    base_index = np.arange(n) if base_index is None else np.asarray(base_index)
    add = np.lexsort((add_t, add_session))
    if not m:
        return base_index
    if n and np.any(np.diff(base_session) < 0):  # sessions interleaved: plain (session, ticks) order
        s = np.concatenate([base_session, add_session])
        t = np.concatenate([base_t, add_t])
        idx = np.concatenate([base_index, n + np.arange(m)])
        return idx[np.lexsort((t, s))]
    pos = np.empty(m, np.int64)
    a_sess = add_session[add]
    a_t = add_t[add]
    for sess in np.unique(a_sess).tolist():
        lo, hi = np.searchsorted(base_session, sess, "left"), np.searchsorted(base_session, sess, "right")
        run = np.maximum.accumulate(base_t[lo:hi]) if hi > lo else base_t[lo:hi]
        sel = a_sess == sess
        pos[sel] = lo + np.searchsorted(run, a_t[sel], "right")
    return np.insert(base_index, pos, n + add)


def bus_frames(f, bus=None, window=None):
    """Every frame of one bus of a LogbFile as columns (BusFrames: t ticks, id, flags,
    dlc, data, session), from the raw bus stream of `mirror` sessions and the raw bus
    stream merged with the exact per-message streams of `exclusive` ones (SPEC §13.4),
    in time order within each session. `bus`: a bus or raw bus stream name or uuid hex;
    None for the file's only bus. `window`: (T0, T1) seconds, inclusive."""
    groups = buses(f) if bus is None else select_buses(f, [bus])
    if not groups:
        raise NotFoundError("no raw CAN bus stream in this file")
    if len(groups) > 1:
        raise NotFoundError(f"{len(groups)} CAN buses in this file ({', '.join(g.name for g in groups)}): name one")
    return group_frames(f, groups[0], window)


def all_bus_frames(f, wanted=None, window=None):
    """{bus name: BusFrames} of every bus (or those `wanted` names, see select_buses)."""
    return {g.name: group_frames(f, g, window) for g in select_buses(f, wanted)}

"""logb decode: CAN signals to CSV or Parquet."""

import csv
import math
import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import NotFoundError, OutsideRecordingError, UnknownSignalError, UsageError, did_you_mean
from .common import (EXIT_DAMAGED, EXIT_OK, Timeline, about, add_id_filter, add_recover, add_time_arguments,
                     dbc_errors, device_window, file_origin_s, file_timeline, input_help, open_input, output,
                     table_format, utc_text)

HELP = "decode CAN signals (per-message streams, or raw frames with a DBC) to CSV or Parquet"
DESCRIPTION = """\
Decode the CAN signals of FILE (a Logb file, or a CAN trace read directly) to
a table, every frame once. Without --dbc, the file's per-message streams are
decoded (no DBC needed: the signals are fields of the file), with — where a
logger routed `exclusive` (docs/SPEC.md §13.4) — the raw bus frames its exact
message streams could not hold; a file with only raw bus streams is decoded
with the DBC attached to it. --dbc decodes every bus's frames with that DBC
instead; several --dbc files merge (the first given wins a message name or
id another file defines again: each such conflict is listed), and
--dbc can1=body.dbc applies to bus can1 only (a bus with none of its own
takes the --dbc files given without a bus, else the attached DBC).

Wide layout (default): one row per decoded frame, in time order: the time,
bus, message, then one column per signal, `Message.Signal` (the scaled value,
as cantools gives with decode_choices=False), plus `Message.Signal.text` for
signals with a value table (the label, empty where the table has none).
Cells of other messages' signals are empty, and so are those of signals a
frame did not carry (a frame shorter than its DBC message lacks every signal
with a bit past its data: missing, never 0; the summary counts such frames per
message). --layout long gives one row per signal value: the time, bus,
message, signal, value, text, unit.

The time column is `time_utc` (ISO-8601; in Parquet a UTC timestamp) when the
recording is dated, else `time_s`, seconds after the recording's start;
--time chooses (`device_time_s`: the logger's own axis). --window takes the
same seconds, or ISO-8601 times:

  logb decode rec.logb -o signals.parquet
  logb decode drive.blf --dbc vehicle.dbc --messages EngineData \\
      --signals EngineSpeed --window 10 20 -o engine.csv
  logb decode rec.logb --dbc pt.dbc --dbc can1=body.dbc \\
      --window 2025-03-18T23:06:50Z/2025-03-18T23:07:00Z -o both.csv

Nothing is silent: a message or signal name the DBC or file does not have,
--id or a window that keeps no frame, a DBC that matches no frame of the bus
are errors that list what there is (exit 64).

Exit status: 0 decoded, 1 damaged input or nothing to decode with, 2 not
Logb nor a trace, 64 usage error."""


def add_arguments(p):
    p.add_argument("file", help=input_help())
    p.add_argument("--dbc", action="append", metavar="[BUS=]X.dbc",
                   help="decode the raw bus frames with this DBC (repeatable: merged; BUS= for one bus only)")
    p.add_argument("--messages", nargs="+", metavar="M", help="only these messages (or stream names)")
    p.add_argument("--signals", nargs="+", metavar="S", help="only these signals (Signal or Message.Signal)")
    add_id_filter(p)
    add_time_arguments(p)
    p.add_argument("--layout", choices=("wide", "long"), default="wide")
    p.add_argument("--raw", action="store_true", help="raw (unscaled) values instead of scaled ones")
    p.add_argument("--format", choices=("csv", "parquet"), help="default: from the output's extension")
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    add_recover(p)


def dbc_specs(values):
    """{bus or None (every bus): [paths]} from --dbc [BUS=]FILE values, each checked to exist."""
    specs = {}
    for v in values or ():
        bus, sep, path = v.partition("=")
        if not sep or os.path.exists(v):  # a path holding "=" is still a path
            bus, path = None, v
        if not os.path.isfile(path):
            raise UsageError(f"--dbc {v}: {'is a directory' if os.path.isdir(path) else 'no such file'}")
        specs.setdefault(bus, []).append(path)
    return specs


def compile_for(specs, bus):
    """(CompiledDbc or None, conflicts) of the --dbc files for `bus`."""
    from ..can.dbc import compile_dbc, merge_compiled

    paths = specs.get(bus) or specs.get(None)
    if not paths:
        return None, []
    named = []
    for path in paths:
        with dbc_errors(path):
            named.append((os.path.basename(path), compile_dbc(path, bus=bus)))
    return merge_compiled(named)


def _dbc_buses(f, specs):
    """The file's buses (BusGroups) to decode with --dbc; NotFoundError for a BUS= that is
    not one of them, NothingToDecodeError when there is none."""
    from ..can.bus import buses
    from ..errors import NothingToDecodeError

    groups = buses(f)
    unknown = sorted(set(specs) - {None} - {g.name for g in groups})
    if unknown:
        raise NotFoundError(f"--dbc {unknown[0]}=…: no bus {unknown[0]!r}; the buses: "
                            f"{', '.join(g.name for g in groups) or 'none'}")
    if not groups:
        raise NothingToDecodeError("no raw CAN bus stream to decode with --dbc")
    return groups


def _decode_with_dbcs(f, specs, messages, signals, window):
    """Every bus's frames decoded with its --dbc files (else the attached DBC): (decoded,
    {bus: CompiledDbc}, conflicts)."""
    from ..can.decode import bus_batches, embedded_dbc
    from ..can.dbc import compile_dbc

    groups = _dbc_buses(f, specs)
    decoded, compiled, conflicts = [], {}, []
    for g in groups:
        c, clash = compile_for(specs, g.name)
        conflicts += clash
        if c is None:
            attached = embedded_dbc(f, g.streams[0])
            if attached is None:
                continue  # a bus no DBC covers: named in the summary
            with dbc_errors("the DBC attached to the file"):
                c = compile_dbc(attached, bus=g.name)
        compiled[g.name] = c
        for part in bus_batches(f, g, c, messages, signals, window, bus=g.name):  # one part: the whole bus
            decoded += part
    return decoded, compiled, conflicts


def catalog(f, compiled):
    """{message: (CAN id, {signals})} of what can be decoded: the DBCs' messages, else
    the file's per-message streams (by message and stream name)."""
    from ..can.bus import is_message_stream
    from ..can.dbc import signals_of

    out = {}
    if compiled:
        for c in compiled.values():
            for e in c.entries:
                entry = out.setdefault(e.message, (e.frame_id, set()))
                entry[1].update(e.signals)
                out.setdefault(e.name, entry)
        return out
    for s in f.streams.values():
        if is_message_stream(s):
            meta = s.schema.meta_dict()
            ident = int(meta.get("logb.can.id", "0"), 16)
            entry = out.setdefault(meta.get("logb.can.message", s.name), (ident, set()))
            entry[1].update(g.name for g in signals_of(s.schema))
            out.setdefault(s.name, entry)
    return out


def _listing(names, limit=30):
    names = sorted(names)
    return ", ".join(names[:limit]) + (f" … ({len(names)} in all)" if len(names) > limit else "")


def check_names(cat, messages, signals, ids):
    """The messages to decode (None: all) after --messages and --id; unknown names raise
    UnknownSignalError naming what exists."""
    if messages:
        missing = [m for m in messages if m not in cat]
        if missing:
            guess = "".join(did_you_mean(m, cat) for m in missing)
            raise UnknownSignalError(f"no message {', '.join(map(repr, missing))}{guess}; the messages: "
                                     f"{_listing(cat)}")
    if signals:
        scope = messages or cat
        known = {sig for m in scope for sig in cat[m][1]} | {f"{m}.{sig}" for m in scope for sig in cat[m][1]}
        missing = [x for x in signals if x not in known]
        if missing:
            where = f" in {', '.join(messages)}" if messages else ""
            full = {f"{m}.{sig}" for m in scope for sig in cat[m][1]}
            guess = "".join(did_you_mean(x, full) for x in missing)
            raise UnknownSignalError(f"no signal {', '.join(map(repr, missing))}{where}{guess}; the signals: "
                                     f"{_listing(full)}")
    if ids is None:
        return messages
    scope = messages or list(cat)
    kept = [m for m in scope if ids.mask(np.array([cat[m][0]]))[0]]
    if not kept:
        raise NotFoundError(f"--id {ids.text} matches none of the messages' ids: "
                            f"{_listing({f'{m} 0x{cat[m][0]:X}' for m in scope})}")
    return kept


def run(args, out):
    from ..can.decode import decode_file  # noqa: F401 (cantools missing: main.py gives the pip hint)

    fmt = table_format(args.format, args.output)
    specs = dbc_specs(args.dbc)
    inputs = [args.file] + [p for paths in specs.values() for p in paths]
    with output(args.output, inputs) as tmp, open_input(args.file, recover=args.recover) as f:
        window = device_window(f, args.window)
        with about(args.file):  # NothingToDecodeError: the input falls short (exit 1)
            plan = _plan(f, specs)
        cat = catalog(f, plan.shown)
        wanted = check_names(cat, args.messages, args.signals, args.ids)
        chosen = set(wanted) if wanted else None
        sigs = set(args.signals) if args.signals else None
        # pass one: what there is to write (nothing kept), then the table batch by batch
        with about(args.file):
            sv = _survey(f, plan, chosen, sigs, window, args.raw)
            everything = sv
            selective = chosen is not None or sigs is not None or window is not None
            if selective and (not sv.rows() or any(all(k.bus != bus for k in sv.kinds.values())
                                                   for bus in plan.shown)):
                everything = _survey(f, plan, None, None, None, args.raw)
        every = _survey_decoded(everything)
        for bus, c in plan.shown.items():
            if not any(d.bus == bus for d in every):
                files = ", ".join(os.path.basename(x) for x in specs.get(bus) or specs.get(None) or [c.name])
                raise NotFoundError(f"{files} matches no frame of bus {bus}: its messages are "
                                    f"{_listing(f'{e.message} 0x{e.frame_id:X}' for e in c.entries)}")
        decoded = _survey_decoded(sv)
        basis = Timeline(np.zeros(0), np.zeros(0) if sv.dated else None).basis(args.time) if decoded else \
            (args.time or "relative")
        if not sv.rows():
            _nothing(f, args, every, chosen)
        clean = f.report.clean
        if sv.ordered[1 if basis == "utc" else 0]:
            names, rows = _stream(tmp, fmt, f, plan, sv, chosen, sigs, window, args, basis)
        else:  # some source goes back in time (sessions, clock steps): sorted whole
            names, rows = _whole(tmp, fmt, f, specs, chosen, sigs, window, args, basis)
    print(f"wrote {args.output}: {rows} rows, {len(names)} columns from "
          f"{sum(len(d) for d in decoded)} frames of {len(decoded)} streams; time {names[0]}", file=out)
    for what, reason in plan.conflicts:
        print(f"  dbc conflict: {what}: {reason}", file=out)
    absent = sorted((chosen or set()) - {d.message for d in decoded} - {d.stream for d in decoded})
    if absent:
        print(f"  no frame{' in the window' if window else ''}: {', '.join(absent)}", file=out)
    for message, (short, frames) in short_frames(decoded).items():
        print(f"  {message}: {short} of {frames} frames shorter than the message (their signals past "
              f"the data are missing)", file=out)
    return EXIT_OK if clean else EXIT_DAMAGED


def _whole(path, fmt, f, specs, chosen, sigs, window, args, basis):
    """Write the table from the whole decode at once, sorted by time; (column names, rows)."""
    from ..can.decode import decode_file

    if specs:
        decoded = _decode_with_dbcs(f, specs, chosen, sigs, window)[0]
    else:
        decoded = decode_file(f, messages=chosen, signals=sigs, window=window)
    timeline = _timeline(f, decoded)
    names, data, meta = (_long if args.layout == "long" else _wide)(decoded, args.raw, timeline, basis)
    if fmt == "csv":
        _csv(path, names, data, timeline.digits)
    else:
        _parquet(path, names, data, meta)
    return names, len(data[0])


def _nothing(f, args, everything, chosen):
    """Raise the error that says why nothing was decoded."""
    scope = [d for d in everything if chosen is None or d.message in chosen or d.stream in chosen]
    if not any(len(d) for d in scope):
        what = ", ".join(sorted(chosen)) if chosen else "any message"
        raise NotFoundError(f"no frame of {what} in {args.file}; the messages on the bus: "
                            f"{_listing({d.message for d in everything if len(d)}) or 'none'}")
    tl = _span_timeline(f, scope)
    raise OutsideRecordingError(f"--window {args.window.text} holds no frame of the chosen messages, which "
                                f"span {tl.span()}")


def short_frames(decoded):
    """{message: (short frames, frames)} of the messages that had frames shorter than the DBC."""
    out = {}
    for d in decoded:
        if d.short:
            short, frames = out.get(d.message, (0, 0))
            out[d.message] = (short + d.short, frames + len(d))
    return out


def _timeline(f, decoded):
    """One Timeline over every decoded row, stream after stream."""

    parts = [file_timeline(f, d.axis, d.axis_exp) for d in decoded]
    exp = min((d.axis_exp for d in decoded), default=-6)
    if not parts:
        return Timeline(np.zeros(0), None, None, exp)
    dated = all(p.dated for p in parts)
    return Timeline(np.concatenate([p.device_s for p in parts]),
                    np.concatenate([p.wall_ns for p in parts]) if dated else None, parts[0].origin_s, exp)


def _time_column(timeline, basis):
    """(name, values, meta) of the time column; UTC as datetime64[ns]."""
    name, values = timeline.column(basis)
    if basis == "utc":
        return name, values.astype("datetime64[ns]"), {"time": "utc"}
    return name, values, {"unit": "s", "time": basis}


def _order(timeline, basis):
    """The time column in time order and the output position of each input row."""
    name, values, meta = _time_column(timeline, basis)
    order = np.argsort(values, kind="stable")
    pos = np.empty(len(values), np.int64)
    pos[order] = np.arange(len(values))
    return name, values[order], meta, pos


def _labels(decoded, pos, attr):
    out = np.empty(len(pos), object)
    o = 0
    for d in decoded:
        out[pos[o:o + len(d)]] = getattr(d, attr)
        o += len(d)
    return out


def _wide(decoded, raw, timeline, basis):
    tname, times, tmeta, pos = _order(timeline, basis)
    n = len(times)
    cols, units = {}, {}
    o = 0
    for d in decoded:
        rows = pos[o:o + len(d)]
        o += len(d)
        for sig, values in (d.raw if raw else d.phys).items():
            name = f"{d.message}.{sig}"
            cols.setdefault(name, []).append((rows, values))
            units[name] = d.units.get(sig, "")
            if sig in d.text:
                cols.setdefault(name + ".text", []).append((rows, d.text[sig]))
    names = [tname, "bus", "message"]
    data = [times, _labels(decoded, pos, "bus"), _labels(decoded, pos, "message")]
    meta = [tmeta, {}, {}]
    for name, parts in cols.items():
        data.append(_sparse(n, parts))
        names.append(name)
        meta.append({"unit": units.get(name, "")})
    return names, data, meta


def _sparse(n, parts):
    """A column of n cells from (rows, values) parts: a masked array (missing = masked)."""
    kinds = {p[1].dtype.kind for p in parts}
    if "O" in kinds:
        col = np.full(n, None, object)
        for rows, values in parts:
            col[rows] = values
        return col
    if kinds <= {"b", "u"} and all(p[1].dtype.kind != "b" for p in parts):
        dtype = np.uint64
    elif kinds <= {"b", "i", "u"} and not ("u" in kinds and "i" in kinds):
        dtype = np.int64
    else:
        dtype = np.float64
    values = np.zeros(n, dtype)
    mask = np.ones(n, bool)
    for rows, v in parts:
        values[rows] = np.ma.getdata(v)
        mask[rows] = np.ma.getmaskarray(v)  # a signal the frame did not carry stays missing
    return np.ma.masked_array(values, mask)


def _long(decoded, raw, timeline, basis):
    tname, times, tmeta = _time_column(timeline, basis)
    names = [tname, "bus", "message", "signal", "value", "text", "unit"]
    t, bus, msg, sig, val, text, unit = [], [], [], [], [], [], []
    o = 0
    for d in decoded:
        k = len(d)
        rows = times[o:o + k]
        o += k
        for s, values in (d.raw if raw else d.phys).items():
            t.append(rows)
            bus.append(np.full(k, d.bus, object))
            msg.append(np.full(k, d.message, object))
            sig.append(np.full(k, s, object))
            val.append(_objects(values))
            text.append(d.text[s] if s in d.text else np.full(k, None, object))
            unit.append(np.full(k, d.units.get(s, ""), object))
    if not t:
        return names, [times[:0]] + [np.zeros(0, object)] * 6, [tmeta] + [{}] * 6
    cat = [np.concatenate(x) for x in (t, bus, msg, sig, val, text, unit)]
    order = np.argsort(cat[0], kind="stable")
    return names, [c[order] for c in cat], [tmeta] + [{}] * 6


def _objects(values):
    """Values as Python objects, None where masked (missing)."""
    out = np.ma.getdata(values).astype(object)
    if isinstance(values, np.ma.MaskedArray):
        out[np.ma.getmaskarray(values)] = None
    return out


def _cells(col, digits):
    if col.dtype.kind == "M":  # UTC time
        return utc_text(col.astype(np.int64), digits).tolist()
    if isinstance(col, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(col).tolist()
        vals = col.data.tolist()
        return ["" if m else v for v, m in zip(vals, mask)]
    return ["" if v is None else v for v in col.tolist()]


def _csv(path, names, data, digits):
    columns = [_cells(c, digits) for c in data]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        w.writerows(zip(*columns))


def _parquet(path, names, data, meta):
    import pyarrow as pa  # missing: main.py gives the pip hint
    import pyarrow.parquet as pq
    fields, arrays = [], []
    for name, col, md in zip(names, data, meta):
        if isinstance(col, np.ma.MaskedArray):
            arr = pa.array(col.data, mask=np.ma.getmaskarray(col))
        elif col.dtype.kind == "M":
            arr = pa.array(col).cast(pa.timestamp("ns", tz="UTC"))
        elif col.dtype == object:
            vals = col.tolist()
            arr = pa.array(vals if any(isinstance(v, str) for v in vals) or not vals else
                           [None if v is None else float(v) for v in vals])
        else:
            arr = pa.array(col)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type, metadata={k: str(v) for k, v in md.items()}))
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path)


# ---------------------------------------------------------------- streaming: batch by batch

# Rows decoded at a time over all sources together (split between them), and cells of the
# table built at a time (a wide table's rows are as many as its columns allow): what bounds memory.
BATCH_ROWS = 1 << 16
WRITE_CELLS = 1 << 20
# pyarrow's ParquetWriter keeps ~2 KB of metadata per column chunk until it closes (measured,
# pyarrow 26), against ~20 bytes per cell of a row group being built: rows per row group of
# sqrt(rows * 2000 / 20) balance the two (memory then grows as the square root of the rows).
GROUP_BYTES_PER_CELL = 100


@dataclass
class _Plan:
    """What decodes the file: per-message streams, or buses with their DBCs."""

    streams: list  # per-message streams (no DBC), in file order; empty when buses decode
    compiled: dict  # {bus: CompiledDbc} of the buses that decode
    groups: list  # their BusGroups, in file order
    shown: dict  # the DBCs `catalog` lists (the --dbc ones; {} without --dbc, as decode_file)
    conflicts: list
    labels: dict = field(default_factory=dict)  # {bus: its Decoded.bus} (decode_file: the stream name)


def _plan(f, specs):
    """The _Plan of `logb decode`; the same errors as decoding everything would raise first."""
    from ..can.bus import buses, is_message_stream
    from ..can.dbc import compile_dbc
    from ..can.decode import damaged_mirror, embedded_dbc
    from ..errors import NothingToDecodeError

    if specs:
        groups = _dbc_buses(f, specs)
    else:
        groups = buses(f)
        per_message = [s for s in f.streams.values() if is_message_stream(s)]
        if per_message and not damaged_mirror(f):
            return _Plan(per_message, {}, [], {}, [])
        if not groups:
            raise NothingToDecodeError("no CAN streams (raw bus or per-message) in this file")
    compiled, kept, conflicts, labels = {}, [], [], {}
    for g in groups:
        labels[g.name] = g.name if specs else g.streams[0].name
        c, clash = compile_for(specs, g.name)
        conflicts += clash
        if c is None:
            attached = embedded_dbc(f, g.streams[0])
            if attached is None:
                if specs:
                    continue  # a bus no DBC covers: named in the summary
                raise NothingToDecodeError(f"raw bus stream {g.streams[0].name!r}: no DBC given and none attached "
                                           f"to the file; give one with --dbc FILE.dbc")
            with dbc_errors("the DBC attached to the file"):
                c = compile_dbc(attached, bus=labels[g.name])
        compiled[g.name] = c
        kept.append(g)
    return _Plan([], compiled, kept, dict(compiled) if specs else {}, conflicts, labels)


def _sources(f, plan, messages, signals, window, records):
    """[(batches, {stream name: rank})]: one iterator of lists of Decoded per per-message
    stream or bus, each in its own time order; a Decoded's rank is its place in the whole
    decode's list (decode_file, _decode_with_dbcs), which breaks ties in time."""
    from ..can.decode import bus_batches, decode_batches

    out = []
    if plan.streams:
        for k, s in enumerate(plan.streams):
            part = decode_batches(f, None, {s.name}, signals, window, "messages", records)
            if messages is None or {s.name, s.schema.meta_dict().get("logb.can.message", s.name)} & messages:
                out.append((_only(part, s.name), {s.name: (k,)}))
        return out
    for k, g in enumerate(plan.groups):
        c = plan.compiled[g.name]
        ranks = {e.name: (k, i) for i, e in enumerate(c.entries)}
        out.append((bus_batches(f, g, c, messages, signals, window, records, bus=plan.labels[g.name]), ranks))
    return out


def _only(batches, stream):
    """The Decoded of `stream` in each batch (a selection by name may take another stream too)."""
    for part in batches:
        part = [d for d in part if d.stream == stream]
        if part:
            yield part


def _records(n_sources):
    return max(BATCH_ROWS // max(n_sources, 1), 1)


@dataclass
class _Kind:
    """What a pass over the decode learns of one Decoded kind (rank) before anything is written."""

    stream: str
    message: str
    bus: str
    signals: list  # [(name, has text)] in decode order
    units: dict
    rows: int = 0
    short: int = 0
    axis_exp: int = -6
    span: list = field(default_factory=list)  # per batch (min, max) device seconds and wall ns (or None)


@dataclass
class _Survey:
    """Pass one: every Decoded kind, the cells' types and whether each source is in time order."""

    kinds: dict = field(default_factory=dict)  # rank -> _Kind
    cells: dict = field(default_factory=dict)  # wide column -> set of dtype kinds
    strings: dict = field(default_factory=dict)  # object column -> [any str, any value]
    dated: bool = True
    ordered: list = field(default_factory=lambda: [True, True])  # device, wall time: each source non-decreasing

    def rows(self):
        return sum(k.rows for k in self.kinds.values())


def _survey(f, plan, messages, signals, window, raw):
    """Pass one over the decode (nothing kept): what _stream needs to write the first row."""
    sv = _Survey()
    for batches, ranks in _sources(f, plan, messages, signals, window, _records(1)):
        last = [-np.inf, None]  # the source's latest device seconds and wall ns
        for part in batches:
            lo = [np.inf, None]
            for d in part:
                rank = ranks[d.stream]
                values = d.raw if raw else d.phys
                k = sv.kinds.get(rank)
                if k is None:
                    k = sv.kinds[rank] = _Kind(d.stream, d.message, d.bus, [(s, s in d.text) for s in values],
                                               dict(d.units), axis_exp=d.axis_exp)
                k.rows += len(d)
                k.short += d.short
                tl = file_timeline(f, d.axis, d.axis_exp)
                sv.dated &= tl.dated
                w = (int(tl.wall_ns.min()), int(tl.wall_ns.max())) if tl.dated else None
                k.span.append((float(tl.device_s.min()), float(tl.device_s.max()), w))
                lo[0] = min(lo[0], k.span[-1][0])
                if w is not None:
                    lo[1] = w[0] if lo[1] is None else min(lo[1], w[0])
                for s, v in values.items():
                    name = f"{d.message}.{s}"
                    sv.cells.setdefault(name, set()).add(v.dtype.kind)
                    if v.dtype.kind == "O":
                        _strings(sv, name, v)
                        _strings(sv, "value", v)
                    elif len(v) and np.ma.count(v):
                        sv.strings.setdefault("value", [False, False])[1] = True
                    if s in d.text:
                        _strings(sv, name + ".text", d.text[s])
                        _strings(sv, "text", d.text[s])
            sv.ordered[0] &= lo[0] >= last[0]
            sv.ordered[1] &= lo[1] is None or last[1] is None or lo[1] >= last[1]
            for d in part:
                sp = sv.kinds[ranks[d.stream]].span[-1]
                last[0] = max(last[0], sp[1])
                if sp[2] is not None:
                    last[1] = sp[2][1] if last[1] is None else max(last[1], sp[2][1])
    return sv


def _strings(sv, name, values):
    seen = sv.strings.setdefault(name, [False, False])
    vals = [v for v in np.ma.getdata(values).tolist() if v is not None]
    seen[0] |= any(isinstance(v, str) for v in vals)
    seen[1] |= bool(vals)


def _survey_decoded(sv):
    """The survey's kinds as stand-ins for Decoded (stream, message, bus, short, len, a
    Timeline of their spans), in rank order: what the summary and _nothing read."""
    return [_Stand(k) for _, k in sorted(sv.kinds.items())]


class _Stand:
    def __init__(self, kind):
        self.stream, self.message, self.bus, self.short = kind.stream, kind.message, kind.bus, kind.short
        self.kind = kind

    def __len__(self):
        return self.kind.rows


def _span_timeline(f, stands):
    """A Timeline of the first and last times of the surveyed rows (for Timeline.span)."""

    spans = [sp for d in stands for sp in d.kind.span]
    dated = bool(spans) and all(sp[2] is not None for sp in spans)
    return Timeline(np.array([t for sp in spans for t in sp[:2]]),
                    np.array([t for sp in spans for t in sp[2]]) if dated else None, file_origin_s(f),
                    min((d.kind.axis_exp for d in stands), default=-6))


def _dtype(kinds):
    """The dtype of a wide column whose parts have these dtype kinds (as _sparse chooses)."""
    if "O" in kinds:
        return np.dtype(object)
    if kinds <= {"u"}:
        return np.dtype(np.uint64)
    if kinds <= {"b", "i", "u"} and not {"u", "i"} <= kinds:
        return np.dtype(np.int64)
    return np.dtype(np.float64)


class _Piece:
    """Rows of one Decoded waiting to be written: their time cells (the sort key) and values."""

    def __init__(self, rank, seq, d, times, values, text):
        self.rank, self.seq, self.d, self.times, self.values, self.text = rank, seq, d, times, values, text

    def cut(self, sel):
        return _Piece(self.rank, self.seq, self.d, self.times[sel], {k: v[sel] for k, v in self.values.items()},
                      {k: v[sel] for k, v in self.text.items()})


class _Label:
    __slots__ = ("bus", "message", "units")

    def __init__(self, bus, message, units):
        self.bus, self.message, self.units = bus, message, units


def _merged(f, sources, basis, tl_exp, origin, raw):
    """Lists of _Piece in output order chunk by chunk: every source read a batch at a time,
    a row written once no source can still yield an earlier one (the sources are each in
    time order: _Survey.ordered). Sorted by (rank, arrival), a chunk's pieces in a
    stable sort by time gives the whole decode's order (_chunk)."""

    iters = [(iter(b), ranks) for b, ranks in sources]
    frontier = [-np.inf] * len(iters)
    pending, seq = [], 0

    def pull(k):
        nonlocal seq
        it, ranks = iters[k]
        part = next(it, None)
        if part is None:
            frontier[k] = np.inf
            return
        for d in part:
            t = file_timeline(f, d.axis, d.axis_exp)
            _, cells = Timeline(t.device_s, t.wall_ns, origin, tl_exp).column(basis)
            # only what is written is kept: not the other of raw/phys, nor the axis
            label = _Label(d.bus, d.message, d.units)
            p = _Piece(ranks[d.stream], seq, label, cells, d.raw if raw else d.phys, d.text)
            seq += 1
            pending.append(p)
            if len(cells):
                frontier[k] = max(frontier[k], cells.max())

    for k in range(len(iters)):
        pull(k)
    while pending or any(fr != np.inf for fr in frontier):
        edge = min(frontier)
        out, keep = [], []
        for p in pending:
            if edge == np.inf:
                out.append(p)
                continue
            sel = p.times < edge
            if sel.all():
                out.append(p)
            elif sel.any():
                out.append(p.cut(sel))
                keep.append(p.cut(~sel))
            else:
                keep.append(p)
        pending = keep
        if out:
            yield out
        if edge != np.inf:
            pull(frontier.index(edge))


def _wide_chunk(pieces, columns, times_dtype):
    """(data) of the wide table's rows of `pieces`, in time order; `columns`: [(name, dtype)]."""
    times = np.concatenate([p.times for p in pieces]).astype(times_dtype)
    order = np.argsort(times, kind="stable")
    n = len(times)
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    bus, msg = np.empty(n, object), np.empty(n, object)
    parts = {}
    o = 0
    for p in pieces:
        rows = pos[o:o + len(p.times)]
        o += len(p.times)
        bus[rows], msg[rows] = p.d.bus, p.d.message
        for sig, values in p.values.items():
            name = f"{p.d.message}.{sig}"
            parts.setdefault(name, []).append((rows, values))
            if sig in p.text:
                parts.setdefault(name + ".text", []).append((rows, p.text[sig]))
    data = [times[order], bus, msg]
    for name, dtype in columns:
        if dtype.kind == "O":
            col = np.full(n, None, object)
            for rows, v in parts.get(name, ()):
                col[rows] = v
        else:
            values, mask = np.zeros(n, dtype), np.ones(n, bool)
            for rows, v in parts.get(name, ()):
                values[rows] = np.ma.getdata(v)
                mask[rows] = np.ma.getmaskarray(v)
            col = np.ma.masked_array(values, mask)
        data.append(col)
    return data


def _long_chunk(pieces, times_dtype):
    """The long table's rows of `pieces` in time order: signal blocks rank by rank, signal by
    signal, arrival by arrival, as the whole decode concatenates them."""
    blocks = []
    by_rank = {}
    for p in pieces:
        by_rank.setdefault(p.rank, []).append(p)
    for group in by_rank.values():
        for s in group[0].values:
            for p in group:
                k = len(p.times)
                d = p.d
                blocks.append((p.times, np.full(k, d.bus, object), np.full(k, d.message, object),
                               np.full(k, s, object), _objects(p.values[s]),
                               p.text[s] if s in p.text else np.full(k, None, object),
                               np.full(k, d.units.get(s, ""), object)))
    cat = [np.concatenate(x) for x in zip(*blocks)]
    cat[0] = cat[0].astype(times_dtype)
    order = np.argsort(cat[0], kind="stable")
    return [c[order] for c in cat]


_CSV_CELLS = 1 << 16


class _CsvOut:
    def __init__(self, path, names, digits):
        self.fh = open(path, "w", newline="")
        self.w = csv.writer(self.fh)
        self.w.writerow(names)
        self.digits = digits

    def write(self, data):
        step = max(_CSV_CELLS // len(data), 1)  # the cells as Python objects: a few rows at a time
        for lo in range(0, len(data[0]), step):
            self.w.writerows(zip(*[_cells(c[lo:lo + step], self.digits) for c in data]))

    def close(self):
        self.fh.close()


class _ParquetOut:
    def __init__(self, path, names, meta, dtypes, seen):
        import pyarrow as pa  # missing: main.py gives the pip hint
        import pyarrow.parquet as pq

        self.pa = pa
        self.types = types = [_arrow_type(pa, d, s) for d, s in zip(dtypes, seen)]
        self.schema = pa.schema([pa.field(n, t, metadata={k: str(v) for k, v in md.items()})
                                 for n, t, md in zip(names, types, meta)])
        self.w = pq.ParquetWriter(path, self.schema)

    def write(self, data):
        self.w.write_table(self.pa.Table.from_arrays([_arrow(self.pa, c, t) for c, t in zip(data, self.types)],
                                                     schema=self.schema))

    def close(self):
        self.w.close()


def _arrow_type(pa, dtype, seen):
    """The Arrow type _parquet gives a whole column: `seen` = [any str, any value] of an object one."""
    if dtype.kind == "O":
        return pa.string() if seen[0] else pa.float64() if seen[1] else pa.null()
    if dtype.kind == "M":
        return pa.timestamp("ns", tz="UTC")
    return pa.from_numpy_dtype(dtype)


def _arrow(pa, col, typ):
    if isinstance(col, np.ma.MaskedArray):
        return pa.array(col.data, mask=np.ma.getmaskarray(col), type=typ)
    if col.dtype.kind == "M":
        return pa.array(col).cast(typ)
    if col.dtype == object:
        if pa.types.is_null(typ):
            return pa.nulls(len(col))
        vals = col.tolist()
        return pa.array(vals if pa.types.is_string(typ) else [None if v is None else float(v) for v in vals], typ)
    return pa.array(col, typ)


def _stream(path, fmt, f, plan, sv, chosen, sigs, window, args, basis):
    """Write the table batch by batch; (column names, rows written)."""

    kinds = [k for _, k in sorted(sv.kinds.items())]
    exp = min(k.axis_exp for k in kinds)
    origin = file_origin_s(f)
    if origin is None:
        origin = min(sp[0] for k in kinds for sp in k.span)
    tname = {"utc": "time_utc", "relative": "time_s"}.get(basis, "device_time_s")
    tdtype = np.dtype("datetime64[ns]" if basis == "utc" else np.float64)
    tmeta = {"time": "utc"} if basis == "utc" else {"unit": "s", "time": basis}
    text = [True, True]
    if args.layout == "long":
        names = [tname, "bus", "message", "signal", "value", "text", "unit"]
        meta = [tmeta] + [{}] * 6
        dtypes = [tdtype] + [np.dtype(object)] * 6
        seen = [None, text, text, text, sv.strings.get("value", [False, False]),
                sv.strings.get("text", [False, False]), text]
        rows = sum(k.rows * len(k.signals) for k in kinds)
    else:
        columns, units = {}, {}
        for k in kinds:
            for s, has_text in k.signals:
                name = f"{k.message}.{s}"
                columns.setdefault(name, _dtype(sv.cells[name]))
                units[name] = k.units.get(s, "")
                if has_text:
                    columns.setdefault(name + ".text", np.dtype(object))
        names = [tname, "bus", "message", *columns]
        meta = [tmeta, {}, {}] + [{"unit": units.get(n, "")} for n in columns]
        dtypes = [tdtype, np.dtype(object), np.dtype(object), *columns.values()]
        seen = [None, text, text] + [sv.strings.get(n, [False, False]) for n in columns]
        rows = sv.rows()
    if fmt == "csv":
        out = _CsvOut(path, names, min(max(-exp, 0), 9))
    else:
        out = _ParquetOut(path, names, meta, dtypes, seen)
    sources = _sources(f, plan, chosen, sigs, window, _records(len(plan.streams) or len(plan.groups)))
    try:
        held, count = [], 0
        step = max(WRITE_CELLS // len(names), 1)
        if fmt != "csv":
            step = max(step, int(math.sqrt(GROUP_BYTES_PER_CELL * rows)))
        wide = list(columns.items()) if args.layout != "long" else None
        for pieces in _merged(f, sources, basis, exp, origin, args.raw):
            held += pieces
            count += sum(len(p.times) for p in pieces)
            if count >= step:
                for part in _slices(held, step):
                    out.write(_chunk(part, args.layout, wide, tdtype))
                held, count = [], 0
        for part in _slices(held, step):
            out.write(_chunk(part, args.layout, wide, tdtype))
    finally:
        out.close()
    return names, rows


def _slices(pieces, step):
    """`pieces` cut at times into lists of about `step` rows each (rows of one time stay together)."""
    if not pieces:
        return
    times = np.sort(np.concatenate([p.times for p in pieces]))
    for edge in np.unique(times[step::step]):
        yield [p.cut(p.times < edge) for p in pieces if (p.times < edge).any()]
        pieces = [p.cut(p.times >= edge) for p in pieces if (p.times >= edge).any()]
    yield pieces


def _chunk(pieces, layout, columns, tdtype):
    """The table of `pieces` (rows of consecutive _merged chunks: no time is in two of them)."""
    pieces.sort(key=lambda p: (p.rank, p.seq))
    return _long_chunk(pieces, tdtype) if layout == "long" else _wide_chunk(pieces, columns, tdtype)

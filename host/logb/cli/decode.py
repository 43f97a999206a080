"""logb decode: CAN signals to CSV or Parquet."""

import csv
import os

import numpy as np

from ..errors import NotFoundError, OutsideRecordingError, UnknownSignalError, UsageError, did_you_mean
from .common import (EXIT_DAMAGED, EXIT_OK, about, add_id_filter, add_recover, add_time_arguments, dbc_errors,
                     device_window, file_timeline, input_help, open_input, output, table_format, utc_text)

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


def _decode_with_dbcs(f, specs, messages, signals, window):
    """Every bus's frames decoded with its --dbc files (else the attached DBC): (decoded,
    {bus: CompiledDbc}, conflicts)."""
    from ..can.bus import buses, group_frames
    from ..can.decode import decode_frames, embedded_dbc
    from ..can.dbc import compile_dbc
    from ..errors import NothingToDecodeError

    groups = buses(f)
    unknown = sorted(set(specs) - {None} - {g.name for g in groups})
    if unknown:
        raise NotFoundError(f"--dbc {unknown[0]}=…: no bus {unknown[0]!r}; the buses: "
                            f"{', '.join(g.name for g in groups) or 'none'}")
    if not groups:
        raise NothingToDecodeError("no raw CAN bus stream to decode with --dbc")
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
        b = group_frames(f, g, window)
        decoded += decode_frames(c, b.t, b.id, b.flags, b.data, messages, signals, b.axis_exp, bus=g.name,
                                 dlc=b.dlc)
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
    from ..can.decode import decode_file  # cantools missing: main.py gives the pip hint

    fmt = table_format(args.format, args.output)
    specs = dbc_specs(args.dbc)
    inputs = [args.file] + [p for paths in specs.values() for p in paths]
    with output(args.output, inputs) as tmp, open_input(args.file, recover=args.recover) as f:
        window = device_window(f, args.window)
        with about(args.file):  # NothingToDecodeError: the input falls short (exit 1)
            if specs:
                decoded, compiled, conflicts = _decode_with_dbcs(f, specs, None, None, None)
            else:
                with dbc_errors("the DBC attached to the file"):
                    decoded, compiled, conflicts = decode_file(f), {}, []
        cat = catalog(f, compiled)
        wanted = check_names(cat, args.messages, args.signals, args.ids)
        for bus, c in compiled.items():
            if not any(d.bus == bus for d in decoded):
                files = ", ".join(os.path.basename(x) for x in specs.get(bus) or specs.get(None) or [c.name])
                raise NotFoundError(f"{files} matches no frame of bus {bus}: its messages are "
                                    f"{_listing(f'{e.message} 0x{e.frame_id:X}' for e in c.entries)}")
        # what was asked for, decoded again with its selection (and window) applied
        chosen = set(wanted) if wanted else None
        sigs = set(args.signals) if args.signals else None
        everything = decoded
        if chosen is not None or sigs is not None or window is not None:
            with about(args.file):
                if specs:
                    decoded = _decode_with_dbcs(f, specs, chosen, sigs, window)[0]
                else:
                    decoded = decode_file(f, messages=chosen, signals=sigs, window=window)
        timeline = _timeline(f, decoded)
        basis = timeline.basis(args.time) if decoded else (args.time or "relative")
        if not any(len(d) for d in decoded):
            _nothing(f, args, everything, chosen)
        clean = f.report.clean
        names, data, meta = (_long if args.layout == "long" else _wide)(decoded, args.raw, timeline, basis)
        if fmt == "csv":
            _csv(tmp, names, data, timeline.digits)
        else:
            _parquet(tmp, names, data, meta)
    rows = len(data[0]) if data else 0
    print(f"wrote {args.output}: {rows} rows, {len(names)} columns from "
          f"{sum(len(d) for d in decoded)} frames of {len(decoded)} streams; time {names[0]}", file=out)
    for what, reason in conflicts:
        print(f"  dbc conflict: {what}: {reason}", file=out)
    absent = sorted((chosen or set()) - {d.message for d in decoded} - {d.stream for d in decoded})
    if absent:
        print(f"  no frame{' in the window' if window else ''}: {', '.join(absent)}", file=out)
    for message, (short, frames) in short_frames(decoded).items():
        print(f"  {message}: {short} of {frames} frames shorter than the message (their signals past "
              f"the data are missing)", file=out)
    return EXIT_OK if clean else EXIT_DAMAGED


def _nothing(f, args, everything, chosen):
    """Raise the error that says why nothing was decoded."""
    scope = [d for d in everything if chosen is None or d.message in chosen or d.stream in chosen]
    if not any(len(d) for d in scope):
        what = ", ".join(sorted(chosen)) if chosen else "any message"
        raise NotFoundError(f"no frame of {what} in {args.file}; the messages on the bus: "
                            f"{_listing({d.message for d in everything if len(d)}) or 'none'}")
    tl = _timeline(f, scope)
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
    from .common import Timeline

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

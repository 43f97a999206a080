"""logb export: one stream to CSV or Parquet, or the CAN buses to a trace format."""

import csv
import importlib
import sys

import numpy as np

from ..can import formats
from ..errors import InvalidSchemaError, UsageError
from ..tables import AxisKind
from .common import (EXIT_DAMAGED, EXIT_OK, Timeline, add_id_filter, add_recover, add_time_arguments, column_values,
                     file_origin_s, file_timeline, input_help, open_input, output, table_format, utc_text)

HELP = "export one stream to CSV or Parquet, or CAN bus streams to candump/ASC/BLF/TRC/MDF4"
DESCRIPTION = """\
Write one stream as a table: run_id, the time, then every field's physical
value (identity fields keep their raw type). The time column is `time_utc`
(ISO-8601; in Parquet a UTC timestamp) when the recording is dated, else
`time_s`, seconds after the recording's start; --time chooses
(`device_time_s`: the logger's own axis). A stream whose axis is not time
has `axis_UNIT` instead. Parquet keeps each field's unit, description and
raw type in the Arrow field metadata.

A raw CAN bus stream reads as `logb dump` shows it: run_id, the time, id
(hex: 3 digits standard, 8 extended), dlc (the wire code), data (hex bytes,
as many as the DLC says; none for a remote frame) and flags (X extended,
R remote, E error, F FD, B BRS, S ESI, T sent by the logger). In Parquet, for
programs, id is uint32, flags the uint8 bit mask (bit 0 extended .. 6 sent,
in the field's metadata) and data binary: filters need no parsing and
nothing is lost (the stored zero padding past the DLC is no data; a file
whose padding is not zero is refused rather than cut).

  logb export rec.logb --stream can0 --format parquet -o can0.parquet
  logb export rec.logb --stream can0 --window 10 20 -o can0.csv

CAN formats (candump .log, asc, blf, trc, mdf4 .mf4) write the CAN buses back
as a trace (python-can) or an ASAM MDF4 bus-logging file (asammdf): every
frame of each bus, also those a logger routed to per-message streams alone
(`exclusive` routing, docs/SPEC.md §13.4); --stream then picks one bus
(default: all), --id the ids. FILE may itself be a trace (converted directly).
--window (seconds after the start, or ISO-8601) keeps a time range, in both
kinds of export.

  logb export rec.logb --format mdf4 -o rec.mf4
  logb export drive.blf --id 0x100-0x1FF --window 10 20 -o part.log

OUT is written to a temporary file beside it and renamed only when complete;
an OUT that is the input is refused. On success one line says what was
written.

Exit status: 0 exported, 1 damaged or truncated input (what it holds is
still exported), 2 not Logb, 64 usage error."""


def add_arguments(p):
    p.add_argument("file", help=input_help())
    p.add_argument("--stream", metavar="NAME|UUID", help="the stream to export (CAN formats: one bus; default all)")
    p.add_argument("--format", choices=("csv", "parquet") + tuple(formats.REGISTRY),
                   help="default: from the output's extension")
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    add_id_filter(p)
    add_time_arguments(p)
    add_recover(p)


def _table_format(args):
    """csv or parquet: --format, else the output's extension (no CAN format's)."""
    also = f" (one stream) or a CAN trace's ({', '.join(e for m in formats.REGISTRY.values() for e in m.EXTENSIONS)})"
    return table_format(args.format, args.output, also)


def _table(f, stream, args):
    """(names, data, meta) of one stream, its rows in --window (a raw CAN bus stream's
    columns as _can_columns makes them for the format)."""
    cols = stream.columns()
    s = stream.schema
    if s.axis_kind == AxisKind.time:
        timeline = file_timeline(f, cols.axis, s.axis_exp)
        basis = timeline.basis(args.time)
        keep = timeline.select(args.window, f"stream {stream.name!r}") if len(cols.axis) else None
        axis_name, axis = timeline.column(basis)
        if basis == "utc":
            axis = axis.astype("datetime64[ns]")
        axis_meta = {"time": basis, "tick_s": f"1e{s.axis_exp}"}
        if basis != "utc":
            axis_meta["unit"] = "s"
    else:
        if args.window is not None or args.time is not None:
            raise UsageError(f"stream {stream.name!r} has a {AxisKind(s.axis_kind).name} axis, not time: "
                             f"--window and --time do not apply")
        keep, axis_name, axis = None, f"axis_{s.axis_unit or 'value'}", cols.axis
        axis_meta = {"unit": s.axis_unit, "axis_kind": AxisKind(s.axis_kind).name}
    names = ["run_id", axis_name]
    data = [cols.run_id, axis]
    meta = [{}, axis_meta]
    if s.meta_dict().get("logb.can.layout") in ("raw", "raw-fd"):
        more = _can_columns(cols, _table_format(args) == "parquet")
    else:
        more = [(fd.name, cols.phys(fd.name), {"unit": fd.unit, "description": fd.description}) for fd in s.fields]
    for name, col, md in more:
        names.append(name)
        data.append(col)
        meta.append(md)
    if keep is not None:
        data = [c[keep] for c in data]
    return names, data, meta


FLAG_LETTERS = "XREFBST"  # layout.FLAG_NAMES bit by bit, as logb dump shows them
_FLAG_BITS = "bit0 extended, 1 remote, 2 error, 3 FD, 4 BRS, 5 ESI, 6 tx (sent by the logger)"


def _can_columns(cols, parquet):
    """[(name, column, meta)] of a raw CAN bus stream's frames after the time, as dump shows
    them: id (hex, 3 digits standard, 8 extended), dlc (the wire code), data (the bytes the
    DLC says: the stored zero padding is no data) and flags (dump's letters). Parquet keeps
    numbers a program filters on: id uint32, flags the uint8 bit mask, data binary."""
    from ..can.layout import FLAG_EXTENDED, FLAG_REMOTE, frame_lengths

    ids, flags, dlc, stored = cols.raw["id"], cols.raw["flags"], cols.raw["dlc"], cols.raw["data"]
    lengths = frame_lengths(dlc, flags)
    payloads = [bytes(row[:n]) for row, n in zip(stored, lengths.tolist())]
    beyond = np.arange(stored.shape[1])[None, :] >= lengths[:, None]
    if (stored[beyond] != 0).any():  # SPEC §13.1: zero-padded; say so rather than drop bytes silently
        raise InvalidSchemaError(f"{int((stored * beyond).any(axis=1).sum())} frames hold non-zero bytes past "
                                 f"their DLC's length: export --format candump or dump --json keeps them")
    dlc_meta = {"description": "DLC code as on the wire"}
    if parquet:
        return [("id", np.asarray(ids, np.uint32), {"description": "CAN identifier (29 bits)"}),
                ("dlc", np.asarray(dlc, np.uint8), dlc_meta),
                ("data", np.array(payloads, dtype=object), {"description": "the bytes the DLC says"}),
                ("flags", np.asarray(flags, np.uint8), {"description": _FLAG_BITS})]
    fl = np.asarray(flags, np.uint8)
    hexid = [f"{i:08X}" if f & FLAG_EXTENDED else f"{i:03X}" for i, f in zip(ids.tolist(), fl.tolist())]
    text = ["" if f & FLAG_REMOTE else " ".join(f"{b:02X}" for b in p) for p, f in zip(payloads, fl.tolist())]
    letters = ["".join(c for bit, c in enumerate(FLAG_LETTERS) if f >> bit & 1) for f in fl.tolist()]
    return [("id", np.array(hexid, dtype=object), {"description": "hex"}), ("dlc", np.asarray(dlc), dlc_meta),
            ("data", np.array(text, dtype=object), {"description": "hex bytes, as many as the DLC says"}),
            ("flags", np.array(letters, dtype=object), {"description": "X extended, R remote, E error, F FD, "
                                                                         "B BRS, S ESI, T sent by the logger"})]


def run(args, out):
    can_format = formats.REGISTRY.get(args.format) if args.format else formats.for_path(args.output)
    if can_format is not None:
        return run_can(args, can_format, out)
    fmt = _table_format(args)
    if args.ids is not None:
        raise UsageError("--id applies to the CAN formats (candump, asc, blf, trc, mdf4); "
                         "for a table of frames use `logb dump --format candump` or decode")
    with output(args.output, [args.file]) as tmp, open_input(args.file, recover=args.recover) as f:
        if args.stream is None:
            names = sorted(s.name for s in f.streams.values() if s.records)
            raise UsageError(f"--stream is required for {fmt}: one of {', '.join(names[:20]) or 'none'}"
                             f"{' …' if len(names) > 20 else ''} (decoded signals: `logb decode`; CAN buses as a "
                             f"trace: --format candump|asc|blf|trc|mdf4)")
        stream = f.stream(args.stream)
        if stream.schema is None:
            raise InvalidSchemaError(f"stream {stream.name!r} has no valid schema; nothing to export")
        names, data, meta = _table(f, stream, args)
        (_csv if fmt == "csv" else _parquet)(tmp, names, data, meta)
        damaged = not f.report.clean or stream.rejected
    rows = len(data[0]) if data else 0
    print(f"wrote {args.output}: {rows} rows, {len(names)} columns of stream {stream.name!r} as {fmt}; "
          f"time {names[1]}", file=out)
    return EXIT_DAMAGED if damaged else EXIT_OK


def run_can(args, fmt, out):
    """The raw bus streams (all, or the bus --stream names; every frame, whatever the routing)
    as a trace file of format module `fmt`, in --id and --window."""
    from ..can.formats.trace import select

    importlib.import_module(fmt.REQUIRES)  # missing: main.py gives the pip hint
    if args.time is not None:
        raise UsageError(f"--time: a {fmt.NAME} trace has its own time stamps (dated traces stay dated)")
    streams = [args.stream] if args.stream else None
    with output(args.output, [args.file]) as tmp, open_input(args.file, recover=args.recover) as f:
        trace = formats.read_logb(f, streams)  # NotFoundError: no such bus (exit 64)
        if not trace.buses:
            raise UsageError(f"{args.file}: no raw CAN bus stream to export")
        if args.ids is not None:
            args.ids.require(np.concatenate([b.id for b in trace.buses.values()]), args.file)
            trace = select(trace, lambda b: args.ids.mask(b.id))
        if args.window is not None:
            trace = select(trace, in_window(f, trace, args.window))
        warnings = fmt.write(trace, tmp)
        damaged = not f.report.clean
    for w in warnings:
        print(f"logb export: warning: {w}", file=sys.stderr)
    buses = ", ".join(f"{name} {len(b)}" for name, b in sorted(trace.buses.items()))
    print(f"wrote {args.output}: {trace.frames} frames as {fmt.NAME} ({buses})", file=out)
    return EXIT_DAMAGED if damaged else EXIT_OK


def trace_timeline(f, trace):
    """timeline(ticks): the Timeline of ticks of `trace` (formats.read_logb of `f`): relative
    time counts from the recording's start, or from the buses' first frame when the trace's
    ticks are wall time and the file's axis is not (anchored sessions); device seconds are the
    trace's own (the logger's axis only when the trace is undated or every session is unix)."""
    scale = 10.0 ** trace.axis_exp
    every = np.concatenate([b.t for b in trace.buses.values()])
    origin = file_origin_s(f)
    if trace.dated and not all(s.time_base == "unix" for s in f.sessions):
        origin = None
    if origin is None:
        origin = every.min() * scale if len(every) else 0.0

    def timeline(t):
        wall = t * 10 ** (9 + trace.axis_exp) if trace.dated and trace.axis_exp >= -9 else None
        return Timeline(t * scale, wall, origin, trace.axis_exp)

    return timeline


def in_window(f, trace, window):
    """keep(bus) for formats.trace.select: the frames inside `window`; raises
    OutsideRecordingError when none is."""
    timeline = trace_timeline(f, trace)
    timeline(np.concatenate([b.t for b in trace.buses.values()])).select(window, "the buses")  # none: the error
    return lambda b: timeline(b.t).select(window) if len(b) else np.zeros(0, bool)


def _csv(path, names, data, meta):
    columns = [utc_text(c.astype(np.int64), _digits(md)).tolist() if c.dtype.kind == "M" else column_values(c)
               for c, md in zip(data, meta)]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for row in zip(*columns):
            w.writerow(["" if v is None else v for v in row])


def _digits(md):
    """Decimals of the second a UTC column shows: those of its tick."""
    return min(max(-int(md["tick_s"][2:]), 0), 9)


def _parquet(path, names, data, meta):
    import pyarrow as pa  # missing: main.py gives the pip hint
    import pyarrow.parquet as pq
    fields, arrays = [], []
    for name, col, md in zip(names, data, meta):
        if isinstance(col, np.ma.MaskedArray):
            arr = pa.array(col.data, mask=np.ma.getmaskarray(col))
        elif col.ndim == 2:  # fixed bytes; Parquet has no zero-width fixed type, so those are variable
            arr = pa.array([bytes(r) for r in col], pa.binary(col.shape[1] or -1))
        elif col.dtype.kind == "M":
            arr = pa.array(col).cast(pa.timestamp("ns", tz="UTC"))
        elif col.dtype == object:
            arr = pa.array(list(col))
        elif np.iscomplexobj(col):  # Arrow has no complex type: [re, im] pairs
            parts = np.column_stack([col.real, col.imag]).astype(np.float64).ravel()
            arr = pa.FixedSizeListArray.from_arrays(pa.array(parts), 2)
        elif col.dtype == np.float16:
            arr = pa.array(col.astype(np.float32))
        else:
            arr = pa.array(col)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type, metadata={k: str(v) for k, v in md.items()}))
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path)

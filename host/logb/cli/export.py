"""logb export: one stream to CSV or Parquet, or the CAN buses to a trace format."""

import csv
import importlib
import sys

import numpy as np

from ..can import formats
from ..errors import InvalidSchemaError, UsageError
from ..tables import AxisKind
from .common import EXIT_DAMAGED, EXIT_OK, add_recover, column_values, open_logb, output

HELP = "export one stream to CSV or Parquet, or CAN bus streams to candump/ASC/BLF/TRC/MDF4"
DESCRIPTION = """\
Write one stream as a table: run_id, the axis (integer ticks for time axes,
with the tick 10^axis_exp s in the column name and metadata), then every
field's physical value (identity fields keep their raw type). Parquet keeps
each field's unit, description and raw type in the Arrow field metadata.

  logb export rec.logb --stream can0 --format parquet -o can0.parquet

CAN formats (candump .log, asc, blf, trc, mdf4 .mf4) write the CAN buses back
as a trace (python-can) or an ASAM MDF4 bus-logging file (asammdf): every
frame of each bus, also those a logger routed to per-message streams alone
(`exclusive` routing, docs/SPEC.md §13.4); --stream then picks one bus
(default: all).

  logb export rec.logb --format mdf4 -o rec.mf4

OUT is written to a temporary file beside it and renamed only when complete;
an OUT that is the input is refused.

Exit status: 0 exported, 1 damaged or truncated input (what it holds is
still exported), 2 not Logb, 64 usage error."""


def add_arguments(p):
    p.add_argument("file", help="a .logb file")
    p.add_argument("--stream", metavar="NAME|UUID", help="the stream to export (CAN formats: one bus; default all)")
    p.add_argument("--format", choices=("csv", "parquet") + tuple(formats.REGISTRY),
                   help="default: from the output's extension")
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    add_recover(p)


def _table(stream):
    cols = stream.columns()
    s = stream.schema
    axis_name = f"axis_ticks_1e{s.axis_exp}s" if s.axis_kind == AxisKind.time else f"axis_{s.axis_unit or 'value'}"
    names = ["run_id", axis_name]
    data = [cols.run_id, cols.axis]
    meta = [{}, {"unit": s.axis_unit, "axis_kind": AxisKind(s.axis_kind).name,
                 "axis_exp": str(s.axis_exp)}]
    for fd in s.fields:
        names.append(fd.name)
        data.append(cols.phys(fd.name))
        meta.append({"unit": fd.unit, "description": fd.description})
    return names, data, meta


def run(args, out):
    can_format = formats.REGISTRY.get(args.format) if args.format else formats.for_path(args.output)
    if can_format is not None:
        return run_can(args, can_format)
    fmt = args.format or ("parquet" if args.output.endswith((".parquet", ".pq")) else "csv")
    if args.stream is None:
        raise UsageError("--stream is required for csv and parquet")
    with output(args.output, [args.file]) as tmp, open_logb(args.file, recover=args.recover) as f:
        stream = f.stream(args.stream)
        if stream.schema is None:
            raise InvalidSchemaError(f"stream {stream.name!r} has no valid schema; nothing to export")
        names, data, meta = _table(stream)
        (_csv if fmt == "csv" else _parquet)(tmp, names, data, meta)
        damaged = not f.report.clean or stream.rejected
    return EXIT_DAMAGED if damaged else EXIT_OK


def run_can(args, fmt):
    """The raw bus streams (all, or the bus --stream names; every frame, whatever the routing)
    as a trace file of format module `fmt`."""
    importlib.import_module(fmt.REQUIRES)  # missing: main.py gives the pip hint
    streams = [args.stream] if args.stream else None
    with output(args.output, [args.file]) as tmp, open_logb(args.file, recover=args.recover) as f:
        trace = formats.read_logb(f, streams)  # NotFoundError: no such bus (exit 64)
        if not trace.buses:
            raise UsageError(f"{args.file}: no raw CAN bus stream to export")
        warnings = fmt.write(trace, tmp)
        damaged = not f.report.clean
    for w in warnings:
        print(f"logb export: warning: {w}", file=sys.stderr)
    return EXIT_DAMAGED if damaged else EXIT_OK


def _csv(path, names, data, _meta):
    columns = [column_values(c) for c in data]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for row in zip(*columns):
            w.writerow(["" if v is None else v for v in row])


def _parquet(path, names, data, meta):
    import pyarrow as pa  # missing: main.py gives the pip hint
    import pyarrow.parquet as pq
    fields, arrays = [], []
    for name, col, md in zip(names, data, meta):
        if isinstance(col, np.ma.MaskedArray):
            arr = pa.array(col.data, mask=np.ma.getmaskarray(col))
        elif col.ndim == 2:  # fixed bytes; Parquet has no zero-width fixed type, so those are variable
            arr = pa.array([bytes(r) for r in col], pa.binary(col.shape[1] or -1))
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

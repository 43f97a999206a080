"""logb decode: CAN signals to CSV or Parquet."""

import csv

import numpy as np

from ..errors import UnreadableInputError
from .common import EXIT_DAMAGED, EXIT_OK, about, add_recover, open_logb, output

HELP = "decode CAN signals (per-message streams, or raw frames with a DBC) to CSV or Parquet"
DESCRIPTION = """\
Decode the CAN signals of FILE to a table, every frame once. Without --dbc,
the file's per-message streams are decoded (no DBC needed: the signals are
fields of the file), with — where a logger routed `exclusive` (docs/SPEC.md
§13.4) — the raw bus frames its exact message streams could not hold; a file
with only raw bus streams is decoded with the DBC attached to it. --dbc
decodes every bus's frames with that DBC instead.

Wide layout (default): one row per decoded frame, in time order: time_s,
bus, message, then one column per signal, `Message.Signal` (the scaled value,
as cantools gives with decode_choices=False), plus `Message.Signal.text` for
signals with a value table (the label, empty where the table has none).
Cells of other messages' signals are empty, and so are those of signals a
frame did not carry (a frame shorter than its DBC message lacks every signal
with a bit past its data: missing, never 0; the summary counts such frames per
message). --layout long gives one row per signal value: time_s, bus, message,
signal, value, text, unit.

  logb decode rec.logb -o signals.parquet
  logb decode rec.logb --dbc vehicle.dbc --messages EngineData \\
      --signals EngineSpeed --window 10 20 -o engine.csv

time_s is the axis in seconds (since 1970 when the session is `unix`).
Exit status: 0 decoded, 1 damaged input or nothing to decode with, 2 not
Logb, 64 usage error."""


def add_arguments(p):
    p.add_argument("file", help="a .logb file")
    p.add_argument("--dbc", metavar="X.dbc", help="decode the raw bus streams with this DBC")
    p.add_argument("--messages", nargs="+", metavar="M", help="only these messages (or stream names)")
    p.add_argument("--signals", nargs="+", metavar="S", help="only these signals (Signal or Message.Signal)")
    p.add_argument("--window", nargs=2, type=float, metavar=("T0", "T1"), help="only T0 <= time_s <= T1")
    p.add_argument("--layout", choices=("wide", "long"), default="wide")
    p.add_argument("--raw", action="store_true", help="raw (unscaled) values instead of scaled ones")
    p.add_argument("--format", choices=("csv", "parquet"), help="default: from the output's extension")
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    add_recover(p)


def run(args, out):
    from ..can.decode import decode_file  # cantools missing: main.py gives the pip hint

    fmt = args.format or ("parquet" if args.output.endswith((".parquet", ".pq")) else "csv")
    with output(args.output, [args.file, args.dbc]) as tmp, open_logb(args.file, recover=args.recover) as f:
        try:
            with about(args.file):  # NothingToDecodeError: the input falls short (exit 1)
                decoded = decode_file(f, dbc=args.dbc, messages=args.messages, signals=args.signals,
                                      window=tuple(args.window) if args.window else None)
        except _dbc_errors() as exc:
            raise UnreadableInputError(f"cannot parse the DBC: {exc}") from None
        clean = f.report.clean
        names, data, meta = (_long if args.layout == "long" else _wide)(decoded, args.raw)
        if fmt == "csv":
            _csv(tmp, names, data)
        else:
            _parquet(tmp, names, data, meta)
    rows = len(data[0]) if data else 0
    print(f"wrote {args.output}: {rows} rows, {len(names)} columns from "
          f"{sum(len(d) for d in decoded)} frames of {len(decoded)} streams", file=out)
    for message, (short, frames) in short_frames(decoded).items():
        print(f"  {message}: {short} of {frames} frames shorter than the message (their signals past "
              f"the data are missing)", file=out)
    return EXIT_OK if clean else EXIT_DAMAGED


def short_frames(decoded):
    """{message: (short frames, frames)} of the messages that had frames shorter than the DBC."""
    out = {}
    for d in decoded:
        if d.short:
            short, frames = out.get(d.message, (0, 0))
            out[d.message] = (short + d.short, frames + len(d))
    return out


def _dbc_errors():
    import cantools

    return (cantools.database.errors.Error, cantools.database.UnsupportedDatabaseFormatError)


def _order(decoded):
    """Seconds of every record and the output position of each stream's records."""
    secs = np.concatenate([d.seconds() for d in decoded]) if decoded else np.zeros(0)
    order = np.argsort(secs, kind="stable")
    pos = np.empty(len(secs), np.int64)
    pos[order] = np.arange(len(secs))
    return secs[order], pos


def _labels(decoded, pos, attr):
    out = np.empty(len(pos), object)
    o = 0
    for d in decoded:
        out[pos[o:o + len(d)]] = getattr(d, attr)
        o += len(d)
    return out


def _wide(decoded, raw):
    secs, pos = _order(decoded)
    n = len(secs)
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
    names = ["time_s", "bus", "message"]
    data = [secs, _labels(decoded, pos, "bus"), _labels(decoded, pos, "message")]
    meta = [{"unit": "s"}, {}, {}]
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


def _long(decoded, raw):
    t, bus, msg, sig, val, text, unit = [], [], [], [], [], [], []
    for d in decoded:
        secs = d.seconds()
        for s, values in (d.raw if raw else d.phys).items():
            t.append(secs)
            k = len(d)
            bus.append(np.full(k, d.bus, object))
            msg.append(np.full(k, d.message, object))
            sig.append(np.full(k, s, object))
            val.append(_objects(values))
            text.append(d.text[s] if s in d.text else np.full(k, None, object))
            unit.append(np.full(k, d.units.get(s, ""), object))
    if not t:
        return ["time_s", "bus", "message", "signal", "value", "text", "unit"], [np.zeros(0)] + \
            [np.zeros(0, object)] * 6, [{"unit": "s"}] + [{}] * 6
    cat = [np.concatenate(x) for x in (t, bus, msg, sig, val, text, unit)]
    order = np.argsort(cat[0], kind="stable")
    cat = [c[order] for c in cat]
    return ["time_s", "bus", "message", "signal", "value", "text", "unit"], cat, [{"unit": "s"}] + [{}] * 6


def _objects(values):
    """Values as Python objects, None where masked (missing)."""
    out = np.ma.getdata(values).astype(object)
    if isinstance(values, np.ma.MaskedArray):
        out[np.ma.getmaskarray(values)] = None
    return out


def _cells(col):
    if isinstance(col, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(col).tolist()
        vals = col.data.tolist()
        return ["" if m else v for v, m in zip(vals, mask)]
    return ["" if v is None else v for v in col.tolist()]


def _csv(path, names, data):
    columns = [_cells(c) for c in data]
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
        elif col.dtype == object:
            vals = col.tolist()
            arr = pa.array(vals if any(isinstance(v, str) for v in vals) or not vals else
                           [None if v is None else float(v) for v in vals])
        else:
            arr = pa.array(col)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type, metadata={k: str(v) for k, v in md.items()}))
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path)

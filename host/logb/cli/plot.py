"""logb plot: chosen signals against time, as an image or an interactive HTML page."""

import os

import numpy as np

from ..errors import UsageError
from .common import (EXIT_DAMAGED, EXIT_OK, Timeline, add_recover, add_time_arguments, dbc_errors, file_origin_s,
                     file_timeline, input_help, open_input, output)

HELP = "plot signals against time: PNG, SVG, PDF, ... (matplotlib) or interactive HTML"
DESCRIPTION = """\
Plot signals against time. A signal is `Message.Signal` or `Signal` (CAN:
decoded from the per-message streams, or from the raw bus frames with --dbc
or the DBC attached to the file), or `STREAM.FIELD` for any stream with a
time axis. The input is a .logb file or a CAN trace (candump, ASC, BLF, TRC;
give --dbc with a trace).

  logb plot drive.logb EngineSpeed VehicleSpeed Gear -o speed.png --window 10 70
  logb plot drive.asc --dbc vehicle.dbc EngineSpeed -o speed.html

The format is the output's extension: .png, .svg, .pdf, .jpg and whatever
else this matplotlib writes, or .html: one self-contained page (the data and
its drawing code inline, nothing fetched) for zooming through long
recordings: wheel zooms the time axis, drag pans, double-click shows it all;
each redraw keeps the minimum and maximum of every pixel column, so no spike
is lost. A series of more than 200,000 points goes into the page as the
minimum and maximum of each of 100,000 equal time buckets; the page and this
command say which.

Panels (--panels): `unit` (default) puts signals of the same unit on one
panel, its y axis labelled with the unit; a signal without a unit gets a
panel of its own (a 0/1 flag beside a -2041 torque would show neither).
`signal`: one panel per signal. Legends sit right of the data.

Discrete signals are drawn as steps, holding each value until the next frame:
signals with a value table, single bits, and integers with at most 32
distinct values (gears, counters, states); the rest as lines.

The x axis (--time): UTC wall time when the recording is dated (time base
unix, or monotonic with anchors), else seconds after its start.

OUT is written to a temporary file beside it and renamed only when complete;
an OUT that is one of the inputs is refused.

Exit status: 0 written, 1 damaged input (still plotted) or a DBC that does
not parse, 64 usage error (an unknown signal: the message lists what the
file has; an unknown extension: the message lists the formats; a window
outside the recording: the message gives its span)."""


def add_arguments(p):
    p.add_argument("file", help=input_help())
    p.add_argument("signals", nargs="+", metavar="SIGNAL", help="Message.Signal, Signal or STREAM.FIELD")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="OUT.png, .svg, .pdf, .jpg, ... (matplotlib) or OUT.html (interactive)")
    p.add_argument("--dbc", metavar="FILE", help="decode the raw bus frames with this DBC")
    add_time_arguments(p)
    p.add_argument("--panels", choices=("unit", "signal"), default="unit",
                   help="one panel per unit (default; a signal without a unit alone) or per signal")
    p.add_argument("--title", help="a title above the plot")
    p.add_argument("--size", metavar="WxH", default="11x3",
                   help="inches: width x height per panel (default 11x3; images only)")
    add_recover(p)


def _size(text):
    try:
        w, h = (float(x) for x in text.split("x"))
    except ValueError:
        raise UsageError(f"--size {text!r}: expected WxH in inches, e.g. 11x3") from None
    if not (w > 0 and h > 0):
        raise UsageError(f"--size {text!r}: width and height must be positive")
    return w, h


def time_axis(f, series, time=None, window=None):
    """(basis, x per series) with --time and --window applied to `series` in place: the
    records outside the window are dropped; x is int64 UTC ns for "utc", else seconds."""
    lines = [file_timeline(f, s.axis, s.axis_exp, s.session) for s in series]
    dated = all(t.dated for t in lines)
    both = Timeline(np.concatenate([t.device_s for t in lines]),
                    np.concatenate([t.wall_ns for t in lines]) if dated else None,
                    file_origin_s(f), min(s.axis_exp for s in series))
    basis = both.basis(time)
    keep = np.split(both.select(window, what="these signals"), np.cumsum([len(s.axis) for s in series])[:-1])
    xs = []
    for s, t, k in zip(series, lines, keep):
        s.axis, s.values = s.axis[k], s.values[k]
        x = t.wall_ns if basis == "utc" else t.relative_s if basis == "relative" else t.device_s
        xs.append(x[k])
    return basis, xs


def run(args, out):
    import matplotlib  # noqa: F401 (before reading the file; missing: main.py gives the pip hint)

    from ..can import plot

    size = _size(args.size)
    if args.dbc and not os.path.exists(args.dbc):
        raise UsageError(f"{args.dbc}: no such file")
    with output(args.output, [args.file, args.dbc]) as tmp:  # first: an output that is an input says so
        fmt = plot.format_of(args.output)
        with open_input(args.file, recover=args.recover) as f, dbc_errors(args.dbc or "the DBC attached to the file"):
            # UnknownSignalError: a usage error (exit 64), its message lists what the file has
            series = plot.collect(f, args.signals, args.dbc)
            basis, xs = time_axis(f, series, args.time, args.window)
            info = plot.write(series, xs, basis, tmp, fmt, panels=args.panels, title=args.title, size=size)
            damaged = not f.report.clean
    labels = ", ".join(" + ".join(p) for p in info["panels"])
    out.write(f"{args.output}: {len(info['panels'])} panel(s): {labels} ({info['points']} points, "
              f"x: {info['xlabel']})\n")
    for label, kept in info["decimated"].items():
        out.write(f"  {label}: min/max per time bucket, {kept} of its points in the page\n")
    return EXIT_DAMAGED if damaged else EXIT_OK

"""logb plot: a PNG of chosen signals against time."""

import os

from ..errors import UsageError
from .common import EXIT_DAMAGED, EXIT_OK, add_recover, dbc_errors, open_logb, output

HELP = "plot signals against time to a PNG (matplotlib)"
DESCRIPTION = """\
Plot signals against time into a PNG. A signal is `Message.Signal` or
`Signal` (CAN: decoded from the per-message streams, or from the raw bus
streams with --dbc or the DBC attached to the file), or `STREAM.FIELD` for any
stream with a time axis. Signals with the same unit share a panel whose y axis
shows the unit. The x axis is UTC wall time when the recording is dated (time
base unix, or monotonic with anchors), else seconds of the recording's axis.

  logb plot drive.logb EngineSpeed VehicleSpeed -o speed.png --window 10:70

OUT.png is written to a temporary file beside it and renamed only when
complete; an OUT.png that is one of the inputs is refused.

Exit status: 0 written, 1 damaged input (still plotted) or a DBC that does
not parse, 64 usage error (including an unknown signal; the message lists
what the file has)."""


def add_arguments(p):
    p.add_argument("file", help="a .logb file")
    p.add_argument("signals", nargs="+", metavar="SIGNAL", help="Message.Signal, Signal or STREAM.FIELD")
    p.add_argument("-o", "--output", required=True, metavar="OUT.png")
    p.add_argument("--dbc", metavar="FILE", help="decode the raw bus streams with this DBC")
    p.add_argument("--window", metavar="T0:T1", help="seconds after the first plotted record")
    p.add_argument("--title", help="a title above the plot")
    p.add_argument("--size", metavar="WxH", default="11x3", help="inches: width x height per panel (default 11x3)")
    add_recover(p)


def _pair(text, what):
    try:
        a, b = (float(x) for x in text.replace("x", ":").split(":"))
    except ValueError:
        raise UsageError(f"{what} {text!r}: expected two numbers") from None
    return a, b


def run(args, out):
    import matplotlib  # noqa: F401 (before reading the file; missing: main.py gives the pip hint)

    from ..can import plot

    window = _pair(args.window, "--window") if args.window else None
    size = _pair(args.size, "--size")
    if args.dbc and not os.path.exists(args.dbc):
        raise UsageError(f"{args.dbc}: no such file")
    with (output(args.output, [args.file, args.dbc]) as tmp, open_logb(args.file, recover=args.recover) as f,
          dbc_errors(args.dbc or "the DBC attached to the file")):
        # UnknownSignalError: a usage error (exit 64), its message lists what the file has
        info = plot.plot(f, args.signals, tmp, dbc=args.dbc, window=window, title=args.title, size=size)
        damaged = not f.report.clean
    out.write(f"{args.output}: {', '.join(info['series'])} ({info['points']} points, "
              f"{'UTC' if info['time'] == 'utc' else 'axis seconds'})\n")
    return EXIT_DAMAGED if damaged else EXIT_OK

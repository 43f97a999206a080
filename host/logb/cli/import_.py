"""logb import: a candump/ASC/BLF/TRC trace into Logb (python-can reads it).
Also the CAN side of `logb export --format candump|asc|blf|trc|mdf4`."""

import os
import sys

from ..can.formats import LOSSES  # python-can itself is imported only when a trace is read
from .common import EXIT_DAMAGED, EXIT_OK, EXIT_USAGE, CliError, dumps, open_logb

HELP = "import a CAN trace (candump .log, Vector ASC/BLF, PEAK TRC) into a Logb file"
DESCRIPTION = """\
Read a CAN trace with python-can and write it as Logb: one raw bus stream per
bus (named after the channel: can0, can1, ... or the candump interface name),
every frame with its id, flags (extended, remote, error, FD, BRS, ESI, Tx), wire
DLC and payload. With --dbc, also one per-message stream per DBC message (every
signal a field, with units and conversions) and the DBC itself attached, so
`logb decode` and `logb plot` need nothing else.

Formats, by extension or --format: candump (.log, `candump -L`), asc, blf, trc.
Timestamps keep the source's resolution: µs ticks (candump, ASC, TRC), ns for
BLF unless every stamp is a whole µs. A trace with absolute time (candump epoch
stamps, a BLF header start, an ASC/TRC start date) imports with time base
"unix"; otherwise "relative". ASC dates are local time, read in this machine's
time zone. `logb export FILE --format blf -o out.blf` writes it back.

  logb import drive.blf -o drive.logb --dbc vehicle.dbc

Exit status: 0 imported, 1 the trace could not be read, 64 usage error.

What python-can would lose, and how it is kept:
"""


DESCRIPTION += LOSSES


def add_arguments(p):
    p.add_argument("trace", help="the trace file")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the Logb file to write")
    p.add_argument("--format", choices=("candump", "asc", "blf", "trc"), help="default: from the extension")
    p.add_argument("--dbc", metavar="FILE", help="also write per-message streams, and attach the DBC")
    p.add_argument("--device", default="logb", help="the device name stream uuids derive from (default logb)")
    p.add_argument("--json", action="store_true", help="print a summary as one JSON object")


def _formats():
    try:
        from ..can import formats
        import can  # noqa: F401
    except ImportError:
        raise CliError("CAN trace formats need python-can: pip install 'logb[can]'", EXIT_USAGE) from None
    return formats


def run(args, out):
    formats = _formats()
    try:
        fmt = formats.format_of(args.trace, args.format)
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if not os.path.exists(args.trace):
        raise CliError(f"{args.trace}: no such file", EXIT_USAGE)
    if args.dbc and not os.path.exists(args.dbc):
        raise CliError(f"{args.dbc}: no such file", EXIT_USAGE)
    try:
        trace = formats.read_trace(args.trace, fmt)
    except Exception as exc:  # python-can's parse errors have no common base class
        raise CliError(f"{args.trace}: cannot read as {fmt}: {exc}", EXIT_DAMAGED) from None
    problems = formats.write_logb(trace, args.output, dbc=args.dbc, device=args.device, source=args.trace)
    summary = {
        "source": args.trace, "format": fmt, "output": args.output, "frames": trace.frames,
        "time_base": "unix" if trace.dated else "relative", "axis_exp": trace.axis_exp,
        "buses": [{"name": b.name, "frames": len(b), "fd": b.fd} for b in trace.buses.values()],
        "dbc": args.dbc, "dbc_problems": [list(p) for p in problems], "size": os.path.getsize(args.output),
        "notes": list(trace.notes),
    }
    if args.json:
        out.write(dumps(summary) + "\n")
    else:
        buses = ", ".join(f"{b['name']} {b['frames']}{' FD' if b['fd'] else ''}" for b in summary["buses"])
        out.write(f"{args.output}: {trace.frames} frames from {fmt} ({buses or 'no frames'}); time base "
                  f"{summary['time_base']}, ticks of 1e{trace.axis_exp} s; {summary['size']} bytes\n")
        for note in trace.notes:
            out.write(f"  note: {note}\n")
        for name, reason in problems:
            out.write(f"  dbc: {name}: {reason}\n")
    return EXIT_OK


# ---------------------------------------------------------------- export side

CAN_FORMATS = ("candump", "asc", "blf", "trc", "mdf4")
CAN_EXTENSIONS = {".log": "candump", ".asc": "asc", ".blf": "blf", ".trc": "trc", ".mf4": "mdf4", ".mdf": "mdf4"}


def can_format_of(path):
    return CAN_EXTENSIONS.get(os.path.splitext(path)[1].lower())


def run_export(args, fmt, out):
    """`logb export FILE --format candump|asc|blf|trc|mdf4 -o OUT [--stream BUS]`: the raw bus
    streams (all, or the one named) as a python-can trace or an ASAM MDF4 bus-logging file."""
    streams = [args.stream] if args.stream else None
    with open_logb(args.file) as f:
        try:
            if fmt == "mdf4":
                try:
                    from ..can import mdf
                    import asammdf  # noqa: F401
                except ImportError:
                    raise CliError("MDF4 export needs asammdf: pip install 'logb[can]'", EXIT_USAGE) from None
                trace, written = mdf.export_mdf(f, args.output, streams)
                warnings = []
            else:
                trace, warnings = _formats().export_trace(f, args.output, fmt, streams)
        except KeyError as exc:
            raise CliError(str(exc.args[0]), EXIT_USAGE) from None
        if not trace.buses:
            raise CliError(f"{args.file}: no raw CAN bus stream to export", EXIT_USAGE)
        damaged = not f.report.clean
    for w in warnings:
        print(f"logb export: warning: {w}", file=sys.stderr)
    return EXIT_DAMAGED if damaged else EXIT_OK

"""logb import: a candump/ASC/BLF/TRC (python-can) or MDF4 (asammdf) trace into Logb."""

import argparse
import importlib
import os

from ..can import formats  # python-can itself is imported only when a trace is read
from ..can.formats.logbfile import SEGMENT_BYTES
from ..errors import UnreadableInputError, UsageError
from .common import EXIT_OK, dbc_errors, dumps, output

HELP = "import a CAN trace (candump .log, Vector ASC/BLF, PEAK TRC, MDF4) into a Logb file"
DESCRIPTION = """\
Read a CAN trace with python-can and write it as Logb: one raw bus stream per
bus (named after the channel: can0, can1, ... or the candump interface name),
every frame with its id, flags (extended, remote, error, FD, BRS, ESI, Tx), wire
DLC and payload. With --dbc, also one per-message stream per DBC message (every
signal a field, with units and conversions) and the DBC itself attached, so
`logb decode` and `logb plot` need nothing else.

Formats, told by the content (else the extension): candump (.log, `candump
-L`), asc, blf, trc, mdf4 (.mf4, ASAM bus logging); a --format the content
contradicts is an error. Timestamps keep the source's resolution: µs ticks (candump, ASC, TRC), ns for
BLF unless every stamp is a whole µs. A trace with absolute time (candump epoch
stamps, a BLF header start, an ASC/TRC start date) imports with time base
"unix"; otherwise "relative". ASC dates are local time, read in this machine's
time zone. `logb export FILE --format blf -o out.blf` writes it back.

  logb import drive.blf -o drive.logb --dbc vehicle.dbc

A frame no raw bus record holds as given (docs/SPEC.md §13.1: an 11-bit frame
with an id over 0x7FF, a DLC code over 15, a data length its DLC does not
give) is not imported altered: it is counted in its bus's logb.lost.invalid
(`logb info` shows it) and the summary says how many and why (--json:
"invalid", "left_out"), as `logb record` and can.Logger("x.logb") do. A last
line cut while the trace was written (no end of line, does not parse) is
left out with a note; the lines before it are imported.

OUT is laid out as a logger writes (docs/CAN.md): per-message DATA in time
with the raw bus frames, segments of at most --segment-bytes (default 1 MiB)
or 60 s of trace time, each binding only the streams with data in it.

OUT is written to a temporary file beside it and renamed only when complete:
a trace or DBC that does not parse leaves no OUT, and an OUT that is one of
the inputs is refused.

Exit status: 0 imported (refused frames included: they are counted), 1 the
trace or the DBC could not be read, 64 usage error.

What python-can would lose, and how it is kept:
"""


DESCRIPTION += formats.LOSSES


def add_arguments(p):
    p.add_argument("trace", help="the trace file")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the Logb file to write")
    p.add_argument("--format", choices=tuple(formats.READERS), help="default: told by the content, else the extension")
    p.add_argument("--dbc", metavar="FILE", help="also write per-message streams, and attach the DBC")
    p.add_argument("--device", default="logb", help="the device name stream uuids derive from (default logb)")
    p.add_argument("--segment-bytes", type=_positive, default=SEGMENT_BYTES, metavar="N",
                   help="end a segment once it holds N bytes (default 1 MiB; docs/CAN.md states the overhead)")
    p.add_argument("--json", action="store_true", help="print a summary as one JSON object")


def _positive(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of bytes")
    return n


def run(args, out):
    for path in (args.trace, args.dbc):
        if path is not None and (os.path.isdir(path) or not os.path.exists(path)):
            raise UsageError(f"{path}: {'is a directory' if os.path.isdir(path) else 'no such file'}")
    fmt = formats.format_for(args.trace, args.format, reading=True)
    importlib.import_module(fmt.REQUIRES)  # missing: main.py gives the pip hint
    with output(args.output, [args.trace, args.dbc]) as tmp:
        try:
            trace = fmt.read(args.trace)
        except Exception as exc:  # python-can's parse errors have no common base class
            raise UnreadableInputError(f"{args.trace}: cannot read as {fmt.NAME}: {exc}") from None
        with dbc_errors(args.dbc):
            problems = formats.write_logb(trace, tmp, dbc=args.dbc, device=args.device, source=args.trace,
                                          segment_bytes=args.segment_bytes)
    summary = {
        "source": args.trace, "format": fmt.NAME, "output": args.output, "frames": trace.frames,
        "time_base": "unix" if trace.dated else "relative", "axis_exp": trace.axis_exp,
        "buses": [{"name": b.name, "frames": len(b), "fd": b.fd} for b in trace.buses.values()],
        "dbc": args.dbc, "dbc_problems": [list(p) for p in problems], "size": os.path.getsize(args.output),
        "notes": list(trace.notes), "invalid": sum(b.invalid for b in trace.buses.values()),
        "left_out": list(trace.left_out),
    }
    if args.json:
        out.write(dumps(summary) + "\n")
    else:
        buses = ", ".join(f"{b['name']} {b['frames']}{' FD' if b['fd'] else ''}" for b in summary["buses"])
        out.write(f"{args.output}: {trace.frames} frames from {fmt.NAME} ({buses or 'no frames'}); time base "
                  f"{summary['time_base']}, ticks of 1e{trace.axis_exp} s; {summary['size']} bytes\n")
        for note in trace.notes:
            out.write(f"  note: {note}\n")
        for note in trace.left_out:
            out.write(f"  left out: {note}\n")
        for name, reason in problems:
            out.write(f"  dbc: {name}: {reason}\n")
    return EXIT_OK

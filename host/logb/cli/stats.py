"""logb stats: per-id timing of CAN frames and a bus load estimate."""

import numpy as np

from ..errors import UsageError
from .common import EXIT_DAMAGED, EXIT_OK, add_id_filter, add_recover, dumps, input_help, open_input

HELP = "per CAN id: count, mean period, jitter, gaps, DLC; bus load estimate"
DESCRIPTION = """\
For every CAN bus (or the one --stream names; every frame of it, whatever
the routing, docs/SPEC.md §13.4), per id and frame kind (data, remote, error): the count, mean period, jitter (standard
deviation of the intervals), min and max interval, gaps (intervals longer than
--gap-factor times the median interval) with the longest, and the DLC codes;
per message (of the file's per-message streams or attached DBC), the frames
shorter than the message, whose signals past the data are missing.

Bus load: frame lengths in bits by ISO 11898-1 (with the interframe space;
CAN FD data phases at --data-bitrate when BRS is set), summed as time over the
bus's span: once without stuff bits and once with the worst-case stuffing (the
true load lies between), and the peak over --window second windows. Error
frames are not counted in the load.

FILE may be a CAN trace (candump, ASC, BLF, TRC), read directly. --id keeps
only those ids (an --id that matches no frame is an error listing the ids
there are); the load then is theirs alone.

  logb stats drive.logb --bitrate 500000 --json
  logb stats durango-candump.log --id 0x100-0x1FF

Exit status: 0 done, 1 damaged input, 2 neither Logb nor a trace, 64 usage
error (no such bus, no matching id)."""


def add_arguments(p):
    p.add_argument("file", help=input_help("a .logb file, - for standard input"))
    p.add_argument("--stream", action="append", metavar="NAME|UUID", help="a raw bus stream (repeatable)")
    p.add_argument("--bitrate", type=float, default=500_000, help="nominal bit rate, bit/s (default 500000)")
    p.add_argument("--data-bitrate", type=float, default=2_000_000,
                   help="CAN FD data-phase bit rate, bit/s (default 2000000)")
    p.add_argument("--gap-factor", type=float, default=2.0,
                   help="an interval longer than this times the median interval is a gap (default 2)")
    p.add_argument("--window", type=float, default=0.1, help="peak-load window, s (default 0.1)")
    add_id_filter(p)
    p.add_argument("--json", action="store_true", help="one JSON object: {\"buses\": [...]}")
    add_recover(p)


def run(args, out):
    from ..can import formats, stats
    from ..can.formats.trace import select

    if args.bitrate <= 0 or args.data_bitrate <= 0 or args.window <= 0 or args.gap_factor <= 0:
        raise UsageError("--bitrate, --data-bitrate, --window and --gap-factor must be positive")
    with open_input(args.file, recover=args.recover) as f:
        trace = formats.read_logb(f, args.stream)  # NotFoundError: no such bus (exit 64)
        if not trace.buses:
            raise UsageError(f"{args.file}: no raw CAN bus stream")
        if args.ids is not None:
            args.ids.require(np.concatenate([b.id for b in trace.buses.values()]), args.file)
            trace = select(trace, lambda b: args.ids.mask(b.id))
        messages = {name: stats.message_entries(f, name) for name in trace.buses}
        result = stats.trace_stats(trace, messages, bitrate=args.bitrate, data_bitrate=args.data_bitrate,
                                   gap_factor=args.gap_factor, window=args.window)
        damaged = not f.report.clean
    if args.json:
        out.write(dumps({"file": args.file, "buses": result}) + "\n")
    else:
        out.write(stats.render(result) + "\n")
    return EXIT_DAMAGED if damaged else EXIT_OK

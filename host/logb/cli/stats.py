"""logb stats: per-id timing of CAN frames and a bus load estimate."""

import numpy as np

from ..errors import UsageError
from .common import (EXIT_DAMAGED, EXIT_OK, add_id_filter, add_recover, add_time_arguments, dumps, input_help,
                     open_input)

HELP = "per CAN id: count, mean period, jitter, gaps, DLC; bus load estimate"
DESCRIPTION = """\
For every CAN bus (or the one --stream names; every frame of it, whatever
the routing, docs/SPEC.md §13.4), per id and frame kind (data, remote, error): the count, mean period, jitter (standard
deviation of the intervals), min and max interval, gaps (intervals longer than
--gap-factor times the median interval) with the longest, and the DLC codes;
per message (of the file's per-message streams or attached DBC), the frames
shorter than the message, whose signals past the data are missing. The
bus line gives its first and last frame as --time says (default UTC when
the recording is dated, else seconds after its start).

Bus load: frame lengths in bits by ISO 11898-1 (with the interframe space;
CAN FD data phases at --data-bitrate when BRS is set), summed as time over the
bus's span: once without stuff bits and once with the worst-case stuffing (the
true load lies between), and the peak over consecutive --load-window
second windows (whole ones only). Error frames are not counted in the load.

FILE may be a CAN trace (candump, ASC, BLF, TRC, MF4), read directly. --id
keeps only those ids and --window a time range, as every command does (an
--id or --window that keeps no frame is an error saying what there is);
statistics and load are then of what is kept alone.

  logb stats drive.logb --bitrate 500000 --json
  logb stats durango-candump.log --id 0x100-0x1FF --window 10 20 --load-window 0.01

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
    p.add_argument("--load-window", type=float, default=0.1, metavar="S",
                   help="the peak load is the busiest of consecutive windows of S seconds (default 0.1)")
    add_id_filter(p)
    add_time_arguments(p)
    p.add_argument("--json", action="store_true", help="one JSON object: {\"buses\": [...]}")
    add_recover(p)


def run(args, out):
    from ..can import formats, stats
    from ..can.formats.trace import select
    from .export import in_window, trace_timeline

    if args.bitrate <= 0 or args.data_bitrate <= 0 or args.load_window <= 0 or args.gap_factor <= 0:
        raise UsageError("--bitrate, --data-bitrate, --load-window and --gap-factor must be positive")
    with open_input(args.file, recover=args.recover) as f:
        trace = formats.read_logb(f, args.stream)  # NotFoundError: no such bus (exit 64)
        if not trace.buses:
            raise UsageError(f"{args.file}: no raw CAN bus stream")
        if args.ids is not None:
            args.ids.require(np.concatenate([b.id for b in trace.buses.values()]), args.file)
            trace = select(trace, lambda b: args.ids.mask(b.id))
        timeline = trace_timeline(f, trace)
        basis = timeline(np.zeros(0, np.int64)).basis(args.time)  # utc of undated buses: a usage error
        if basis == "device" and trace.dated and not all(s.time_base == "unix" for s in f.sessions):
            raise UsageError("--time device: these buses are read on their UTC time (anchored sessions); "
                             "use --time utc or relative")
        if args.window is not None:
            trace = select(trace, in_window(f, trace, args.window))
        messages = {name: stats.message_entries(f, name) for name in trace.buses}
        result = stats.trace_stats(trace, messages, bitrate=args.bitrate, data_bitrate=args.data_bitrate,
                                   gap_factor=args.gap_factor, load_window=args.load_window)
        for b in result:  # the first and last frame, in the time --time shows
            bus = trace.buses[b["name"]]
            b["time"], b["start"], b["end"] = basis, None, None
            if len(bus):
                ends = timeline(np.array([bus.t.min(), bus.t.max()]))
                if basis == "utc":
                    b["start"], b["end"] = (str(x) for x in ends.texts("utc"))
                else:
                    b["start"], b["end"] = (float(x) for x in ends.column(basis)[1])
        damaged = not f.report.clean
    if args.json:
        out.write(dumps({"file": args.file, "buses": result}) + "\n")
    else:
        out.write(stats.render(result) + "\n")
    return EXIT_DAMAGED if damaged else EXIT_OK

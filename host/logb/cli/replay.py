"""logb replay: send a recording back onto a CAN bus, with its timing."""

import argparse
import threading
import time

from ..can.formats.logbfile import read_logb
from ..can.formats.pycan import messages
from ..errors import LinkError, NothingToDecodeError, NotFoundError
from .common import EXIT_INTERRUPTED, EXIT_OK, input_help, open_input
from .record import _Signals, add_bus_arguments, open_bus

HELP = "send a recording's CAN frames onto a bus (any python-can interface), with their timing"
DESCRIPTION = """\
Send every frame of one bus of FILE (a Logb recording, or a CAN trace read
directly) onto a python-can bus, spaced as they were recorded (divided by
--speed), whatever the routing the file was written with (mirror or a
logger's exclusive streams: the whole bus, as `logb export` gives it).
Remote frames and CAN FD frames go as they were; error frames cannot be
sent and are counted. Frames recorded as transmitted (Tx) are sent like the
others.

  logb replay drive.logb --interface socketcan --channel vcan0
  logb replay drive.logb -i pcan -c PCAN_USBBUS1 --bitrate 500000 --bus can1 --speed 2
  logb replay drive.logb -i virtual -c test --speed 0      # as fast as the bus takes them

Timing is kept against the start: a frame is never sent early, a late one
does not delay the rest (the summary says how late the latest was). A file
with several buses needs --bus (`logb info` lists them).

Exit status: 0 sent, 1 FILE damaged or without CAN frames, 2 not a Logb
file, 64 usage error, 69 the bus could not be opened or refused a frame,
130 interrupted (Ctrl-C or SIGTERM)."""


def add_arguments(p):
    p.add_argument("file", help=input_help("the Logb recording"))
    add_bus_arguments(p)
    p.add_argument("--bus", metavar="NAME", help="the bus of FILE to send (needed when it has several)")
    p.add_argument("--speed", type=_non_negative, default=1.0, metavar="X",
                   help="X times real time (default 1; 0: no waiting)")
    p.add_argument("--recover", action="store_true", help="also read a FILE whose start is missing")


def _non_negative(text):
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not v >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"{text!r} is not a number >= 0")
    return v


def run(args, out):
    with open_input(args.file, recover=args.recover) as f:
        trace = read_logb(f, [args.bus] if args.bus else None)
    if len(trace.buses) > 1:
        raise NotFoundError(f"{args.file} has {len(trace.buses)} buses ({', '.join(sorted(trace.buses))}); "
                            f"pick one with --bus")
    if not trace.frames:
        raise NothingToDecodeError(f"{args.file}: no CAN frames to send")
    import can

    bus = open_bus(args)
    stop = threading.Event()
    sent = skipped = 0
    late = 0.0
    per_s = 10 ** -trace.axis_exp
    first = last = None
    started = time.perf_counter()
    try:
        with _Signals(stop):
            for tick, msg in messages(trace):
                if first is None:
                    first = tick
                last = tick
                if msg.is_error_frame:
                    skipped += 1
                    continue
                if args.speed:
                    due = started + (tick - first) / per_s / args.speed
                    wait = due - time.perf_counter()
                    if wait > 0 and stop.wait(wait):
                        break
                    late = max(late, time.perf_counter() - due)
                if stop.is_set():
                    break
                msg.channel = None  # onto the channel opened, not the recorded bus's name
                try:
                    bus.send(msg)
                except can.CanError as exc:
                    raise LinkError(f"{args.interface} channel {args.channel} refused frame {sent + 1} "
                                    f"(id 0x{msg.arbitration_id:X}): {exc}") from None
                sent += 1
    finally:
        bus.shutdown()
    span = (last - first) / per_s if first is not None else 0.0
    out.write(f"sent {sent} of {trace.frames} frames of {next(iter(trace.buses))} in "
              f"{time.perf_counter() - started:.2f} s (recorded over {span:.2f} s"
              f"{f', at {args.speed:g}x' if args.speed else ', no waiting'}); latest {late * 1e3:.1f} ms late"
              f"{f'; {skipped} error frames not sent' if skipped else ''}\n")
    return EXIT_INTERRUPTED if stop.is_set() else EXIT_OK

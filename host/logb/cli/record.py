"""logb record: the host as a logger, from any python-can bus."""

import argparse
import os
import queue
import signal
import sys
import threading
import time

from ..can.pycan_record import DURABILITY, LiveRecorder
from ..errors import LinkError, UsageError
from .common import EXIT_OK, dbc_errors

HELP = "record a live CAN bus (any python-can interface) into a Logb file, as a logger writes it"
DESCRIPTION = """\
Record every frame a python-can bus receives into OUT, the way a Logb logger
writes: each bus's frames are sealed into a DATA frame every --flush-s seconds
(or 4096 frames) and written at once, so a crash, a kill or a pulled plug
loses at most the last --flush-s seconds and the file stays valid (rule 2).
With --dbc, every DBC message also gets its own stream (signals as fields,
units, conversions) and the DBC is attached, so `logb decode` needs nothing
else. Any python-can interface works: socketcan, pcan, vector, kvaser, slcan,
gs_usb, virtual, udp_multicast, or `logb` (a Logb logger's USB serial link).

  logb record --interface socketcan --channel can0 -o drive.logb --dbc vehicle.dbc
  logb record --interface pcan --channel PCAN_USBBUS1 --bitrate 500000 -o bench.logb \\
      --rotate-s 3600                                 # bench-0001.logb, bench-0002.logb, ...
  logb record -i kvaser -c 0 --bus-config data_bitrate=2000000 --fd -o fd.logb

Stop it with Ctrl-C or SIGTERM (or --count / --duration): frames already
received are written, then the last frame, the loss counters, INDEX and END,
and the exit status is 0. OUT must not exist unless --append (a new writer
session at its end) or --force (replace it).

Time: records carry the interface's timestamps (µs), time base "monotonic";
every --anchor-s the host's wall clock dates them (an anchor: the frame of
that interval received with the least delay, its stamp beside the host
clock), so readers give UTC whatever clock the interface stamps with.
--time-base unix takes the stamps as Unix time instead.

Nothing is lost without a count (SPEC G13), in the raw bus stream's META at
every segment and at close: logb.lost.buffer (frames dropped because the
writer fell --queue frames behind), logb.lost.invalid (frames no record holds
as given, SPEC §13.1: e.g. an 11-bit frame with a wider id; never written
altered). The raw layout is CAN FD's 64 bytes unless --classic (8 bytes:
about 1 % smaller files; wider payloads are then counted invalid).

Durability (logb.durability, --durability): frame (default: fsync after each
seal), segment (fsync at each segment start), close (1 MiB buffered, fsync
at close). A killed process loses only unsealed frames under frame and segment.

Exit status: 0 stopped (Ctrl-C, SIGTERM, count, duration), 1 the DBC could
not be read, 64 usage error, 69 the bus could not be opened or failed (the
file is still closed cleanly)."""

POLL_S = 0.1  # the main loop's longest wait: signals, --duration and sealing are checked this often


def add_bus_arguments(p):
    """The python-can bus options `logb record` and `logb replay` share."""
    p.add_argument("-i", "--interface", required=True,
                   help="python-can interface name (socketcan, pcan, vector, kvaser, virtual, logb, ...)")
    p.add_argument("-c", "--channel", required=True,
                   help="the interface's channel (can0, PCAN_USBBUS1, 0, /dev/ttyACM0, ...)")
    p.add_argument("-b", "--bitrate", type=_positive(int), metavar="B", help="bit rate, for interfaces that set it")
    p.add_argument("--fd", action="store_true", help="open the bus in CAN FD mode (interfaces that need it)")
    p.add_argument("--bus-config", action="append", default=[], metavar="KEY=VALUE",
                   help="more keyword arguments for can.Bus (e.g. data_bitrate=2000000); repeatable")


def add_arguments(p):
    add_bus_arguments(p)
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the Logb file to write")
    p.add_argument("--append", action="store_true", help="add a writer session to an existing OUT")
    p.add_argument("--force", action="store_true", help="replace an existing OUT")
    p.add_argument("--dbc", metavar="FILE", help="also write per-message streams, and attach the DBC")
    p.add_argument("--device", default="host", help="the device name stream uuids derive from (default host)")
    p.add_argument("--classic", action="store_true", help="8-byte raw records (payloads over 8 bytes are refused)")
    p.add_argument("--durability", choices=tuple(DURABILITY), default="frame", help="when to fsync (default frame)")
    p.add_argument("--flush-s", type=_positive(float), default=1.0, metavar="S",
                   help="seal a bus's frames at least every S seconds (default 1): what a crash can lose")
    p.add_argument("--segment-bytes", type=_positive(int), default=1 << 20, metavar="N",
                   help="start a segment (every schema restated) every N bytes (default 1 MiB)")
    p.add_argument("--rotate-bytes", type=_positive(int), metavar="N",
                   help="start a new file every N bytes: OUT's name + -0001, -0002, ...")
    p.add_argument("--rotate-s", type=_positive(float), metavar="S", help="start a new file every S seconds")
    p.add_argument("--time-base", choices=("monotonic", "unix"), default="monotonic",
                   help="monotonic (default: interface stamps, anchored to the host clock) or unix")
    p.add_argument("--anchor-s", type=_positive(float), default=10.0, metavar="S",
                   help="write a host-clock anchor every S seconds (default 10)")
    p.add_argument("--queue", type=_positive(int), default=100_000, metavar="N",
                   help="frames received but not yet written before new ones are dropped (and counted)")
    p.add_argument("--count", type=_positive(int), metavar="N", help="stop after N frames")
    p.add_argument("--duration", type=_positive(float), metavar="S", help="stop after S seconds")


def _positive(kind):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            v = 0
        if v <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
        return v
    return parse


def bus_kwargs(args):
    """can.Bus keyword arguments from --bitrate, --fd and --bus-config."""
    from can.util import cast_from_string

    kw = {}
    if args.bitrate:
        kw["bitrate"] = args.bitrate
    if getattr(args, "fd", False):
        kw["fd"] = True
    for item in args.bus_config:
        key, eq, val = item.partition("=")
        if not eq or not key:
            raise UsageError(f"--bus-config {item!r}: expected KEY=VALUE")
        kw[key.replace("-", "_")] = cast_from_string(val)
    return kw


def open_bus(args):
    """The python-can bus of --interface/--channel; LinkError when it cannot be opened."""
    import can
    from can.interfaces import VALID_INTERFACES

    if args.interface not in VALID_INTERFACES:
        known = ", ".join(sorted(VALID_INTERFACES))
        raise UsageError(f"unknown python-can interface {args.interface!r} (know: {known})")
    kw = bus_kwargs(args)
    if args.interface == "virtual":  # the usual first try: record in one terminal, replay in another
        print("logb: note: python-can's virtual bus joins buses of one process only: frames another process "
              "(logb record / replay, can.player) sends never arrive here; between processes use "
              "-i udp_multicast -c 239.74.163.2 (pip install msgpack)", file=sys.stderr)
    try:
        return can.Bus(interface=args.interface, channel=args.channel, **kw)
    except (can.CanError, OSError, ImportError, ValueError) as exc:  # what interfaces raise when opening fails
        raise LinkError(f"cannot open {args.interface} channel {args.channel}: {exc}") from None


class Receiver(threading.Thread):
    """bus.recv() into a bounded queue, stamped with the host's wall clock as it returns.
    It never waits for the writer (an fsync can take a while): when the queue is full a
    frame is dropped and counted per channel."""

    def __init__(self, bus, channel, size):
        super().__init__(name="logb-record-rx", daemon=True)
        self.bus, self.channel = bus, channel
        self.queue = queue.Queue(size)
        self.dropped = {}  # channel -> frames
        self.stop = threading.Event()
        self.error = None

    def run(self):
        import can

        while not self.stop.is_set():
            try:
                msg = self.bus.recv(timeout=POLL_S)
            except (can.CanError, OSError) as exc:
                self.error = exc
                break
            if msg is None:
                continue
            wall = time.time_ns()
            if msg.channel is None:
                msg.channel = self.channel
            try:
                self.queue.put_nowait((msg, wall))
            except queue.Full:
                self.dropped[msg.channel] = self.dropped.get(msg.channel, 0) + 1


class _Signals:
    """SIGINT and SIGTERM set `stop` while recording (only the main thread can take them)."""

    def __init__(self, stop):
        self.stop, self.saved = stop, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, lambda *_: self.stop.set())
        return self

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


def run(args, out):
    if args.append and args.force:
        raise UsageError("--append and --force exclude each other")
    rotating = args.rotate_bytes or args.rotate_s
    if rotating and args.append:
        raise UsageError("--append adds to one file; it does not go with --rotate-bytes / --rotate-s")
    if not rotating and os.path.exists(args.output) and not (args.append or args.force):
        raise UsageError(f"{args.output}: exists; --append adds a session to it, --force replaces it")
    if os.path.isdir(args.output):
        raise UsageError(f"{args.output}: is a directory")
    if args.dbc is not None and not os.path.isfile(args.dbc):
        raise UsageError(f"{args.dbc}: no such file")
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        raise UsageError(f"{args.output}: no such directory {folder}")
    bus = open_bus(args)  # first: a bus that does not open leaves OUT as it was
    files = []
    try:
        with dbc_errors(args.dbc):
            rec = LiveRecorder(args.output, dbc=args.dbc, fd=not args.classic, time_base=args.time_base,
                               durability=args.durability, flush_s=args.flush_s, segment_bytes=args.segment_bytes,
                               anchor_s=args.anchor_s, rotate_bytes=args.rotate_bytes or 0,
                               rotate_s=args.rotate_s or 0, device=args.device, append=args.append,
                               on_file=files.append,
                               meta={"logb.record.interface": args.interface, "logb.record.channel": args.channel})
    except BaseException:
        bus.shutdown()
        raise
    for name, reason in rec.problems:
        out.write(f"dbc: {name}: {reason}\n")
    rx = Receiver(bus, args.channel, args.queue)
    started = time.monotonic()
    frames, handed = 0, {}

    def hand_over_drops():  # the receiver's counts, handed to the recorder as deltas
        for ch, n in list(rx.dropped.items()):
            if n != handed.get(ch, 0):
                rec.lost(buffer=n - handed.get(ch, 0), channel=ch)
                handed[ch] = n

    def wanted():
        return not args.count or frames < args.count

    with _Signals(rx.stop):
        out.write(f"recording {args.interface} {args.channel} to {rec.paths[-1]}; Ctrl-C to stop\n")
        out.flush()
        rx.start()
        try:
            while not rx.stop.is_set() and rx.is_alive():
                try:
                    msg, wall = rx.queue.get(timeout=POLL_S)
                except queue.Empty:
                    rec.poll()
                else:
                    rec.add(msg, wall)
                    frames += 1
                hand_over_drops()
                if not wanted() or (args.duration and time.monotonic() - started >= args.duration):
                    rx.stop.set()
        finally:
            rx.stop.set()
            rx.join()
            while wanted():  # received before the stop: recorded, not dropped
                try:
                    rec.add(*rx.queue.get_nowait())
                except queue.Empty:
                    break
                frames += 1
            hand_over_drops()
            bus.shutdown()
            rec.close()
    elapsed = time.monotonic() - started
    for path in files:
        out.write(f"{path}: {os.path.getsize(path)} bytes\n")
    out.write(f"{rec.frames} frames in {elapsed:.1f} s; lost: {sum(rx.dropped.values())} (writer behind), "
              f"{rec.invalid} (invalid)\n")
    if rx.error is not None:
        raise LinkError(f"{args.interface} channel {args.channel} failed: {rx.error}; what it received is in "
                        f"{', '.join(files)}")
    return EXIT_OK

"""Vector BLF, through python-can's BLF reader and writer.

Stamps are ns ticks (µs when every stamp is a whole µs), read and written
relative to the header's start, which makes the trace dated."""

from .. import layout
from .pycan import EPOCH_MIN_S, Collector, channel_int, messages, start_for, ticks
from .trace import Trace

NAME = "blf"
EXTENSIONS = (".blf",)
REQUIRES = "can"  # python-can
LOSSES = """\
- BLF: python-can adds the header start to every stamp in float seconds (~0.2 µs steps at
  today's epoch); here stamps are read relative to the start and written the same way, exact
  to the ns while they lie within ~10^6 s of the start. Error frames in BLF carry no FD flag
  and no direction. Object types other than CAN messages and error frames are skipped."""


def dlc_code(msg):
    """The wire DLC code of a Message: classic, remote and error frames carry the raw code,
    CAN FD frames the length."""
    d = int(msg.dlc or 0)
    return layout.len_to_dlc(d) if msg.is_fd and not msg.is_error_frame else d


def read(path):
    from can.io.blf import BLFReader

    col = Collector()
    reader = BLFReader(str(path))
    start_s = reader.start_timestamp or 0.0  # the header's SYSTEMTIME, UTC, ms
    reader.start_timestamp = 0.0  # stamps relative to the start: float keeps every ns
    for msg in reader:
        col.add(msg.channel, ticks(msg.timestamp, -9), msg, dlc_code(msg))
    dated = start_s >= EPOCH_MIN_S
    start_ns = round(start_s * 1000) * 1_000_000 if dated else 0
    buses = col.buses()
    for b in buses.values():
        b.t += start_ns
    exp = -9
    if all(not (b.t % 1000).any() for b in buses.values()) and start_ns % 1000 == 0:
        exp = -6
        for b in buses.values():
            b.t //= 1000
    return Trace(buses, exp, dated, start_ns // 10 ** (9 + exp) if dated else None, NAME, left_out=col.notes())


def write(trace, out):
    from can.io.blf import BLFWriter

    per_ms = 10 ** (-3 - trace.axis_exp)
    start = start_for(trace, per_ms)
    w = BLFWriter(str(out))
    # python-can subtracts its start from absolute float stamps and truncates to ns; feeding
    # stamps relative to a zero start (+0.5 ns so truncation lands on the intended ns) keeps
    # them exact; the header start is set before stop() writes it.
    w.start_timestamp = 0.0
    half = 0.5e-9
    last = 0.0
    try:
        for _tick, msg in messages(trace, start=start):
            msg.channel = channel_int(msg.channel)
            last = msg.timestamp
            msg.timestamp += half
            w.on_message_received(msg)
    finally:
        start_s = start * 10.0 ** trace.axis_exp
        w.start_timestamp = start_s if trace.dated else None
        w.stop_timestamp = start_s + last if trace.dated else None
        w.stop()
    return []

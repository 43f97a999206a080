"""What the python-can formats (candump, ASC, BLF, TRC) share: python-can Messages
gathered into a Trace on the way in, and a Trace as python-can Messages on the way
out. python-can itself is imported only when a trace is read or written."""

import math

import numpy as np

from .. import layout
from ..layout import FLAG_BRS, FLAG_ERROR, FLAG_ESI, FLAG_EXTENDED, FLAG_FD, FLAG_REMOTE, FLAG_TX, refusal
from .trace import Bus, merged, payload_len, refused_note

EPOCH_MIN_S = 631152000  # 1990-01-01: earlier "absolute" stamps are taken as relative (as python-can does)


def ticks(seconds, exp):
    """Float seconds to integer ticks, exact for stamps that were decimal at 10**exp resolution:
    the integer second is split off so the fraction keeps all the float's precision."""
    s = math.floor(seconds)
    scale = 10 ** -exp
    return s * scale + round((seconds - s) * scale)


def bus_name(channel):
    """The Logb bus name of a python-can channel (0-based ints are canN)."""
    if channel is None:
        return "can0"
    if isinstance(channel, int):
        return f"can{channel}"
    return str(channel)


def length_dlc_code(msg):
    """The wire DLC code of a Message from a reader whose `dlc` is the payload length
    (remote frames: the code), as python-can's candump and ASC readers fill it."""
    d = int(msg.dlc or 0)
    return d if msg.is_remote_frame else layout.len_to_dlc(d)


# python-can Message attribute -> Logb CAN flag (layout.FLAG_*); `tx` is `not is_rx`
_MESSAGE_FLAGS = (("is_extended_id", FLAG_EXTENDED), ("is_remote_frame", FLAG_REMOTE),
                  ("is_error_frame", FLAG_ERROR), ("is_fd", FLAG_FD), ("bitrate_switch", FLAG_BRS),
                  ("error_state_indicator", FLAG_ESI))


def message_flags(msg):
    """The Logb CAN flags (layout.FLAG_*) of a python-can Message."""
    flags = 0 if msg.is_rx else FLAG_TX
    for attr, flag in _MESSAGE_FLAGS:
        if getattr(msg, attr):
            flags |= flag
    return flags


def frame_of(msg, width=layout.FD_PAYLOAD):
    """(id, flags, DLC code, data) of a live python-can Message as a raw bus record of
    `width` payload bytes holds it, or None when layout.refusal refuses it (the caller counts
    those in `logb.lost.invalid`). python-can's `dlc` is a length for CAN FD data frames
    (and the code otherwise); one that disagrees with the data is refused too."""
    flags = message_flags(msg)
    data = bytes(msg.data or b"")
    dlc = len(data) if msg.dlc is None else int(msg.dlc)
    code = dlc
    if flags & FLAG_FD and not flags & FLAG_ERROR:
        if not flags & FLAG_REMOTE and dlc != len(data):
            return None
        code = layout.len_to_dlc(dlc)
    elif not flags & (FLAG_REMOTE | FLAG_ERROR) and dlc != len(data) and not (len(data) == 8 and dlc > 8):
        return None
    if refusal(msg.arbitration_id, flags, code, len(data), width) is not None:
        return None
    return msg.arbitration_id, flags, code, data


class Collector:
    """Gathers python-can Messages per bus into Bus columns; a frame layout.refusal refuses is
    counted on its bus (Bus.invalid), with the first reason as a note (Trace.left_out)."""

    def __init__(self):
        self.rows = {}  # name -> lists
        self.invalid = {}  # name -> [count, the first one's id and reason]

    def add(self, channel, tick, msg, code, extra_flags=0):
        name = bus_name(channel)
        r = self.rows.get(name)
        if r is None:
            r = self.rows[name] = ([], [], [], [], [], [False])
        flags = extra_flags | message_flags(msg)
        data = bytes(msg.data or b"")
        why = refusal(msg.arbitration_id, flags, int(code), len(data))
        if why is not None:
            bad = self.invalid.setdefault(name, [0, msg.arbitration_id, why])
            bad[0] += 1
            return
        if msg.is_fd or len(data) > layout.CLASSIC_PAYLOAD:
            r[5][0] = True
        r[0].append(tick)
        r[1].append(msg.arbitration_id)
        r[2].append(flags)
        r[3].append(int(code))
        r[4].append(data.ljust(layout.FD_PAYLOAD, b"\0"))

    def buses(self):
        out = {}
        for name, (t, ids, flags, dlc, data, fd) in self.rows.items():
            payload = np.frombuffer(b"".join(data), np.uint8).reshape(-1, layout.FD_PAYLOAD)
            if not fd[0]:
                payload = payload[:, :layout.CLASSIC_PAYLOAD]
            out[name] = Bus(name, np.array(t, np.int64), np.array(ids, np.uint32), np.array(flags, np.uint8),
                            np.array(dlc, np.uint8), np.ascontiguousarray(payload),
                            self.invalid.get(name, [0])[0])
        return out

    def notes(self):
        """One note per bus with refused frames (trace.refused_note)."""
        return [refused_note(name, n, ident, why) for name, (n, ident, why) in sorted(self.invalid.items())]


class LineTap:
    """A text file that remembers the line python-can is parsing, for the fixes that read it."""

    def __init__(self, fh):
        self.fh = fh
        self.line = ""
        self.number = 0

    def __iter__(self):
        for self.number, line in enumerate(self.fh, 1):
            self.line = line
            yield line

    def close(self):
        self.fh.close()

    def messages(self, reader, notes):
        """The Messages of python-can's `reader` over this tap. A parse error on the last line
        when it has no end of line (a trace cut while being written) ends them with a note in
        `notes`, the frames before it kept; any other raises ValueError naming the line."""
        try:
            yield from reader
        except Exception as exc:  # python-can's parse errors have no common base class
            if self.line.endswith("\n") or not self.line.strip():
                raise ValueError(f"line {self.number} {self.line.strip()[:80]!r}: {exc}") from None
            notes.append(f"the last line has no end of line and does not parse (a cut file?); left out: "
                         f"{self.line.strip()[:80]!r}")


def messages(trace, start=None):
    """python-can Messages of every frame, all buses merged in time order, with timestamps
    in seconds relative to `start` ticks (absolute Unix seconds when start is None and the
    trace is dated). Yields (ticks, Message)."""
    import can

    m = merged(trace)
    per_s = 10 ** -trace.axis_exp  # int / int: the float nearest the exact stamp
    zero = 0 if start is None else int(start)
    for tick, bus, ident, fl, code, row in zip(m.t.tolist(), m.bus.tolist(), m.id.tolist(), m.flags.tolist(),
                                               m.dlc.tolist(), m.data):
        is_fd = bool(fl & FLAG_FD)
        msg = can.Message(
            timestamp=(tick - zero) / per_s,
            arbitration_id=ident, is_extended_id=bool(fl & FLAG_EXTENDED),
            is_remote_frame=bool(fl & FLAG_REMOTE), is_error_frame=bool(fl & FLAG_ERROR),
            is_fd=is_fd, bitrate_switch=bool(fl & FLAG_BRS), error_state_indicator=bool(fl & FLAG_ESI),
            is_rx=not fl & FLAG_TX, channel=m.names[bus],
            dlc=layout.dlc_to_len(code) if is_fd else code, data=row[:payload_len(fl, code)].tobytes(),
            check=False)
        yield tick, msg


def start_for(trace, resolution_ticks):
    """The measurement start to write: the source's (if any), else the first frame, floored
    to what the format's header can hold and never after the first frame."""
    bounds = trace.time_bounds()
    first = bounds[0] if bounds else 0
    s = first if trace.start is None else min(int(trace.start), first)
    if not trace.dated:
        return min(0, first)
    return (s // resolution_ticks) * resolution_ticks


def channel_int(name):
    """python-can's channel number of a bus name (0 when it has none)."""
    from can.util import channel2int

    c = channel2int(name)
    return 0 if c is None else c


def resolution_warning(trace, exp, fmt):
    """The warning when a format holding stamps to 10**exp s rounded finer ones."""
    if trace.axis_exp < exp:
        unit = 10 ** (exp - trace.axis_exp)
        if any((b.t % unit).any() for b in trace.buses.values()):
            return [f"{fmt} holds stamps to 1e{exp} s; finer stamps were rounded"]
    return []

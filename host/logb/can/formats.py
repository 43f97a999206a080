"""python-can's trace formats in and out of Logb: candump `-L` .log, Vector ASC
and BLF, PEAK TRC.

Everything goes through one in-memory, columnar form, `Trace` (one `Bus` of
numpy columns per channel, in the raw bus stream's terms: integer ticks, id,
FLAG_* flags, the wire DLC code, zero-padded payload). python-can reads and
writes the files; where it would lose something, a small, documented fix sits
next to the call (see `LOSSES`). Nothing here parses a format from scratch.

Time: ticks are integers of 10**axis_exp s — µs (-6) for candump, ASC and TRC,
ns (-9) for BLF unless every BLF timestamp is a whole µs. Dated traces (candump
epoch stamps, a BLF header start, an ASC/TRC start date) keep absolute Unix
ticks and import with time base "unix"; the rest import as "relative".
"""

import datetime
import math
import os
from dataclasses import dataclass, field

import numpy as np

from . import layout
from .layout import (FLAG_BRS, FLAG_ERROR, FLAG_ESI, FLAG_EXTENDED, FLAG_FD, FLAG_REMOTE, FLAG_TX)

FORMATS = {"candump": (".log",), "asc": (".asc",), "blf": (".blf",), "trc": (".trc",)}
DLC_LEN = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64], np.int64)
EPOCH_MIN_S = 631152000  # 1990-01-01: earlier "absolute" stamps are taken as relative (as python-can does)
CAN_ERR_FLAG = 0x20000000

# What python-can loses and what this module does about it (printed by `logb import --help`).
LOSSES = """\
- candump: python-can drops the channel, class bits and data of error frames and reads error
  frames without the bus-error bit as extended data frames; here the line itself supplies
  them. Its writer drops a remote frame's DLC and an error frame's class bits and data; here
  those two frame kinds are written by this module. Classic frames with DLC > 8 (the `_X`
  suffix) are not understood by python-can (read as 8 bytes).
- ASC: python-can reads every CANFD line as CAN FD and every CANFD line without data as a
  remote frame; here the line's Flags column decides (EDL 0x1000, RTR 0x10, as in BLF) for
  lines of up to 8 bytes. The start date is local time without a zone (python-can's choice:
  this machine's zone). python-can's writer restarts the measurement at the first frame and
  writes ErrorFrame lines without FD flag or direction; here the source's measurement start
  is kept and CAN FD error frames are written as `CANFD ... ErrorFrame` lines. Classic error
  frames have no direction in ASC. Error details (ECC, position, ...), statistics, J1939TP
  and other events are not frames; python-can skips them.
- BLF: python-can adds the header start to every stamp in float seconds (~0.2 µs steps at
  today's epoch); here stamps are read relative to the start and written the same way, exact
  to the ns while they lie within ~10^6 s of the start. Error frames in BLF carry no FD flag
  and no direction. Object types other than CAN messages and error frames are skipped.
- TRC: python-can's reader numbers buses from 1 while its writer adds 1 again; here buses are
  0-based in Logb like every other format. Its writer refuses remote and CAN FD frames; here
  they are written (types RR, FD/FB/FE/BI). Error frames cannot be written so that python-can
  reads them back; TRC export drops them with a warning. TRC 1.x stamps have 0.1 ms steps."""


# ------------------------------------------------------------------ in-memory form

@dataclass
class Bus:
    """One channel's frames, in arrival order."""

    name: str
    t: np.ndarray  # int64 ticks of 10**Trace.axis_exp s (absolute Unix ticks when dated)
    id: np.ndarray  # uint32, 29 bits
    flags: np.ndarray  # uint8, layout.FLAG_*
    dlc: np.ndarray  # uint8, the wire DLC code
    data: np.ndarray  # uint8 (n, 8) classic or (n, 64) CAN FD, zero-padded

    @property
    def fd(self):
        return self.data.shape[1] == layout.FD_PAYLOAD

    def __len__(self):
        return len(self.t)


@dataclass
class Trace:
    buses: dict  # name -> Bus
    axis_exp: int = -6
    dated: bool = False  # t are Unix ticks
    start: object = None  # ticks of the measurement start, when the source has one
    source_format: str = ""
    notes: list = field(default_factory=list)

    @property
    def frames(self):
        return sum(len(b) for b in self.buses.values())

    def time_bounds(self):
        ts = [b.t for b in self.buses.values() if len(b)]
        if not ts:
            return None
        return min(int(t.min()) for t in ts), max(int(t.max()) for t in ts)


def format_of(path, fmt=None):
    """The format name from --format or the file's extension."""
    if fmt:
        if fmt not in FORMATS:
            raise ValueError(f"unknown CAN trace format {fmt!r} (know: {', '.join(FORMATS)})")
        return fmt
    ext = os.path.splitext(str(path))[1].lower()
    for name, exts in FORMATS.items():
        if ext in exts:
            return name
    raise ValueError(f"cannot tell the trace format of {path!r} from its extension; use --format "
                     f"({', '.join(FORMATS)})")


def _ticks(seconds, exp):
    """Float seconds to integer ticks, exact for stamps that were decimal at 10**exp resolution:
    the integer second is split off so the fraction keeps all the float's precision."""
    s = math.floor(seconds)
    scale = 10 ** -exp
    return s * scale + round((seconds - s) * scale)


def _dlc_len(code):
    return int(DLC_LEN[min(int(code), 15)])


def _bus_name(channel):
    if channel is None:
        return "can0"
    if isinstance(channel, int):
        return f"can{channel}"
    return str(channel)


class _Collector:
    """Accumulates python-can Messages per bus."""

    def __init__(self):
        self.rows = {}  # name -> lists

    def add(self, channel, ticks, msg, code, extra_flags=0):
        name = _bus_name(channel)
        r = self.rows.get(name)
        if r is None:
            r = self.rows[name] = ([], [], [], [], [], [False])
        flags = extra_flags
        if msg.is_extended_id:
            flags |= FLAG_EXTENDED
        if msg.is_remote_frame:
            flags |= FLAG_REMOTE
        if msg.is_error_frame:
            flags |= FLAG_ERROR
        if msg.is_fd:
            flags |= FLAG_FD
        if msg.bitrate_switch:
            flags |= FLAG_BRS
        if msg.error_state_indicator:
            flags |= FLAG_ESI
        if not msg.is_rx:
            flags |= FLAG_TX
        data = bytes(msg.data or b"")[:64]
        if msg.is_remote_frame:
            data = b""
        if msg.is_fd or len(data) > 8:
            r[5][0] = True
        r[0].append(ticks)
        r[1].append(msg.arbitration_id & 0x1FFFFFFF)
        r[2].append(flags)
        r[3].append(min(int(code), 255))
        r[4].append(data.ljust(64, b"\0"))

    def buses(self):
        out = {}
        for name, (t, ids, flags, dlc, data, fd) in self.rows.items():
            payload = np.frombuffer(b"".join(data), np.uint8).reshape(-1, 64)
            if not fd[0]:
                payload = payload[:, :8]
            out[name] = Bus(name, np.array(t, np.int64), np.array(ids, np.uint32), np.array(flags, np.uint8),
                            np.array(dlc, np.uint8), np.ascontiguousarray(payload))
        return out


def _code(msg, fmt):
    """The wire DLC code of a python-can Message as each reader fills `dlc`."""
    d = int(msg.dlc or 0)
    if fmt in ("blf", "trc"):
        # BLF: classic/remote/error frames carry the raw code; FD frames the length.
        # TRC: python-can's reader puts the code in `dlc` for every frame kind.
        return _len2dlc(d) if (fmt == "blf" and msg.is_fd and not msg.is_error_frame) else d
    # candump, ASC: `dlc` is a length (ASC classic frames: dlc2len(code)); remote frames the code
    if msg.is_remote_frame:
        return d
    return _len2dlc(d)


def _len2dlc(length):
    if length <= 8:
        return length
    return int(np.searchsorted(DLC_LEN, length)) if length <= 64 else 15


# ------------------------------------------------------------------ reading

def read_trace(path, fmt=None):
    """Read a candump/ASC/BLF/TRC file into a Trace with python-can."""
    fmt = format_of(path, fmt)
    return {"candump": _read_candump, "asc": _read_asc, "blf": _read_blf, "trc": _read_trc}[fmt](path)


class _LineTap:
    """A text file that remembers the line python-can is parsing, for the candump fixes."""

    def __init__(self, fh):
        self.fh = fh
        self.line = ""

    def __iter__(self):
        for line in self.fh:
            self.line = line
            yield line

    def close(self):
        self.fh.close()


def _read_candump(path):
    from can.io.canutils import CanutilsLogReader

    col, dated, exp = _Collector(), True, -6
    with open(path, "r", encoding="ascii", errors="replace") as fh:
        tap = _LineTap(fh)
        for msg in CanutilsLogReader(tap):
            parts = tap.line.split()
            frame = parts[2] if len(parts) >= 3 else ""
            id_text, _, payload = frame.partition("#")
            channel = msg.channel if msg.channel is not None else (parts[1] if len(parts) >= 2 else None)
            raw_id = int(id_text, 16) if id_text else 0
            if len(id_text) == 8 and raw_id & CAN_ERR_FLAG:  # a SocketCAN error frame
                msg.is_error_frame, msg.is_remote_frame, msg.is_fd = True, False, False
                msg.arbitration_id = raw_id & 0x1FFFFFFF
                msg.data = bytearray.fromhex(payload[:16]) if payload else bytearray()
                msg.dlc = len(msg.data)
                msg.is_rx = True
            t = _ticks(msg.timestamp, exp)
            dated &= msg.timestamp >= EPOCH_MIN_S
            col.add(channel, t, msg, _code(msg, "candump"))
    return Trace(col.buses(), exp, dated, None, "candump")


ASC_EDL, ASC_BRS, ASC_ESI, ASC_RTR = 0x1000, 0x2000, 0x4000, 0x10  # CANFD line flags (as BLF's FD64)


def _asc_canfd_flags(line):
    """The Flags column of an ASC `CANFD` frame line, or None (error frames, short lines)."""
    tok = line.split()
    if len(tok) < 10 or tok[1].upper() != "CANFD" or tok[4].lower() == "errorframe":
        return None
    i = 5 if tok[5].isdigit() else 6  # an optional symbolic name after the id (python-can's rule)
    try:
        j = i + 4 + int(tok[i + 3]) + 2  # brs esi dlc length, data, duration, bit count, flags
        return int(tok[j], 16) if j < len(tok) else None
    except ValueError:
        return None


def _read_asc(path):
    from can.io.asc import ASCReader

    col, exp = _Collector(), -6
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        tap = _LineTap(fh)
        reader = ASCReader(tap, relative_timestamp=False)
        for msg in reader:
            flags = _asc_canfd_flags(tap.line) if msg.is_fd and not msg.is_error_frame else None
            if flags is not None and len(msg.data) <= 8:
                # python-can marks every CANFD line FD and every empty one remote; the Flags
                # column says which frames are CAN FD (EDL) and which remote (RTR). Lines with
                # more than 8 bytes are CAN FD whatever the column says.
                msg.is_fd = bool(flags & ASC_EDL)
                if not msg.is_fd:
                    msg.bitrate_switch = msg.error_state_indicator = False
                msg.is_remote_frame = not msg.data and not msg.is_fd and bool(flags & ASC_RTR)
            col.add(msg.channel, _ticks(msg.timestamp, exp), msg, _code(msg, "asc"))
    start_s = reader.start_time or 0.0
    dated = start_s >= EPOCH_MIN_S
    trace = Trace(col.buses(), exp, dated, _ticks(start_s, exp) if dated else None, "asc")
    trace.notes.append("ASC dates are local time; read in this machine's time zone")
    return trace


def _read_blf(path):
    from can.io.blf import BLFReader

    col = _Collector()
    reader = BLFReader(str(path))
    start_s = reader.start_timestamp or 0.0  # the header's SYSTEMTIME, UTC, ms
    reader.start_timestamp = 0.0  # stamps relative to the start: float keeps every ns
    rel = []
    for msg in reader:
        ns = _ticks(msg.timestamp, -9)
        rel.append(ns)
        col.add(msg.channel, ns, msg, _code(msg, "blf"))
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
    return Trace(buses, exp, dated, start_ns // 10 ** (9 + exp) if dated else None, "blf")


def _read_trc(path):
    from can.io.trc import TRCReader

    col, exp = _Collector(), -6
    reader = TRCReader(str(path))
    for msg in reader:
        ch = msg.channel - 1 if isinstance(msg.channel, int) else msg.channel  # TRC buses count from 1
        col.add(ch, _ticks(msg.timestamp, exp), msg, _code(msg, "trc"))
    start = reader.start_time  # an exact-µs datetime (UTC) or None
    dated = start is not None and start.timestamp() >= EPOCH_MIN_S
    start_us = (start - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // \
        datetime.timedelta(microseconds=1) if dated else None
    return Trace(col.buses(), exp, dated, start_us, "trc")


# ------------------------------------------------------------------ Logb in

def write_logb(trace, out, dbc=None, device="logb", source=None, batch=4096, codec=None):
    """Write a Trace as a Logb file with CanRecorder: one raw bus stream per bus, plus the
    per-message streams and the DBC attachment when `dbc` (a path, DBC text or bytes) is
    given. DATA frames of all buses are interleaved in time. Returns the DBC's problems
    (a list of (name, reason)), empty without a DBC."""
    import logb
    from logb.tables import Codec

    from .dbc import compile_dbc
    from .record import CanRecorder

    codec = Codec.zstd if codec is None else codec
    unit_ns = 10 ** (9 + trace.axis_exp)
    bounds = trace.time_bounds()
    meta = {"can.import.format": trace.source_format}
    if source:
        meta["can.import.source"] = os.path.basename(str(source))
    if trace.dated and trace.start is not None:
        meta["can.import.start_ns"] = str(trace.start * unit_ns)
    start = trace.start if trace.start is not None else (bounds[0] if bounds else 0)
    wall = start * unit_ns if trace.dated else 0
    dbc_source = None
    if dbc is not None:
        dbc_source = dbc if not isinstance(dbc, os.PathLike) else os.fspath(dbc)
    problems = []
    sink = str(out) if isinstance(out, (str, os.PathLike)) else out
    with logb.Writer(sink, time_base="unix" if trace.dated else "relative", meta=meta,
                     clock_source=f"imported from {trace.source_format}", wall_clock=lambda: wall) as w:
        jobs, recorders = [], []
        for name in sorted(trace.buses):
            b = trace.buses[name]
            compiled = None
            if dbc_source is not None:
                compiled = compile_dbc(dbc_source, bus=name, device=device, axis_exp=trace.axis_exp)
                if not problems:
                    problems = list(compiled.problems)
            # one DBC attachment per file, not one per bus
            rec = CanRecorder(w, compiled, bus=name, fd=b.fd, device=device, codec=codec, batch=batch,
                              axis_exp=trace.axis_exp, attach=not recorders)
            recorders.append(rec)
            jobs += [(int(b.t[lo:lo + batch].min()), rec, b, lo) for lo in range(0, len(b), batch)]
        jobs.sort(key=lambda j: j[0])  # buses interleaved in time, DATA frame by DATA frame
        for _, rec, b, lo in jobs:
            hi = lo + batch
            rec.add(b.t[lo:hi], b.id[lo:hi], b.flags[lo:hi], b.dlc[lo:hi], b.data[lo:hi])
        for rec in recorders:
            rec.flush()
    return problems


def import_trace(src, out, fmt=None, dbc=None, device="logb"):
    """Read a trace with python-can and write it as Logb; returns (trace, DBC problems)."""
    trace = read_trace(src, fmt)
    problems = write_logb(trace, out, dbc=dbc, device=device, source=src)
    return trace, problems


# ------------------------------------------------------------------ Logb out

def raw_bus_streams(f):
    """The raw bus streams of an open LogbFile (a bus's frames: logb.can.bus.bus_frames)."""
    return [s for s in f.streams.values()
            if s.schema is not None and s.schema.meta_dict().get("logb.can.layout") in ("raw", "raw-fd")]


def read_logb(f, streams=None):
    """A Trace from an open LogbFile's CAN buses (all, or those whose bus or raw bus stream
    name or uuid is in `streams`): every frame of each bus, whatever the routing
    (logb.can.bus.bus_frames). Ticks are Unix ticks when every frame is dated (unix or
    anchored sessions), else the session's own axis ticks."""
    from .bus import all_bus_frames

    chosen = all_bus_frames(f, streams)
    exp = min((b.axis_exp for b in chosen.values()), default=-6)
    parts, dated = [], True
    for name, b in chosen.items():
        ns, ok = wall_ns_of(f, b.t, b.axis_exp, b.session)
        parts.append((name, b, ns, ok))
        dated &= ok
    buses = {}
    for name, b, ns, ok in parts:
        ticks = ns if dated else _ticks_ns(b.t, b.axis_exp)
        ticks = _ns_to_ticks(ticks, exp)
        buses[name] = Bus(name, ticks, b.id, b.flags, b.dlc, b.data)
    start = None
    meta = f.sessions[0].meta if f.sessions else {}
    if dated and "can.import.start_ns" in meta:
        try:
            start = _ns_to_ticks(np.array([int(meta["can.import.start_ns"])]), exp)[0].item()
        except ValueError:
            start = None
    return Trace(buses, exp, dated, start, meta.get("can.import.format", "logb"))


def _ticks_ns(axis, exp):
    if exp >= -9:
        return axis * (10 ** (exp + 9))
    return axis // (10 ** (-9 - exp))


def _ns_to_ticks(ns, exp):
    return ns // (10 ** (9 + exp)) if exp > -9 else ns * (10 ** (-9 - exp))


def wall_ns(f, cols):
    """(int64 wall-clock ns per record, True) when every record of a Columns is dated,
    else (None, False)."""
    return wall_ns_of(f, cols.axis, cols.axis_exp, cols.session)


def wall_ns_of(f, axis, axis_exp, session):
    """Vectorised Clock.wall over arrays of axis ticks and session indices: exact for unix
    sessions and a single anchor; between two anchors within a nanosecond or so of
    Clock.wall's exact rounding. (None, False) if any record is undated."""
    axis = np.asarray(axis, np.int64)
    axis = axis * (10 ** (axis_exp + 9)) if axis_exp >= -9 else axis // (10 ** (-9 - axis_exp))
    session = np.broadcast_to(np.asarray(session), axis.shape)
    out = np.empty(len(axis), np.int64)
    for idx in np.unique(session):
        sess = f.sessions[int(idx)]
        sel = session == idx
        a = axis[sel]
        if sess.time_base == "unix":
            out[sel] = a
            continue
        anchors = sess.clock.anchors
        if sess.time_base != "monotonic" or not anchors:
            return None, False
        if len(anchors) == 1:
            out[sel] = a + (anchors[0].wall_ns - anchors[0].axis_ns)
            continue
        keys = np.array([x.axis_ns for x in anchors], np.int64)
        j = np.clip(np.searchsorted(keys, a, side="right") - 1, 0, len(anchors) - 2)
        lo_axis, hi_axis = keys[j], keys[j + 1]
        walls = np.array([x.wall_ns for x in anchors], np.int64)
        slope = (walls[j + 1] - walls[j]).astype(np.float64) / (hi_axis - lo_axis).astype(np.float64)
        out[sel] = walls[j] + np.rint((a - lo_axis).astype(np.float64) * slope).astype(np.int64)
    return out, True


def payload_len(flags, code):
    """Bytes of payload a frame carries on the wire (0 for remote frames)."""
    if flags & FLAG_REMOTE:
        return 0
    n = _dlc_len(code)
    return n if flags & FLAG_FD else min(n, 8)


def messages(trace, start=None):
    """python-can Messages of every frame, all buses merged in time order, with timestamps
    in seconds relative to `start` ticks (absolute Unix seconds when start is None and the
    trace is dated). Yields (ticks, Message)."""
    import can

    names = sorted(trace.buses)
    if not names:
        return
    t = np.concatenate([trace.buses[n].t for n in names])
    which = np.concatenate([np.full(len(trace.buses[n]), i, np.int32) for i, n in enumerate(names)])
    pos = np.concatenate([np.arange(len(trace.buses[n])) for n in names])
    order = np.argsort(t, kind="stable")
    per_s = 10 ** -trace.axis_exp  # int / int: the float nearest the exact stamp
    zero = 0 if start is None else int(start)
    cols = [(trace.buses[n], trace.buses[n].id.tolist(), trace.buses[n].flags.tolist(),
             trace.buses[n].dlc.tolist()) for n in names]
    for k in order.tolist():
        b, ids, flags, dlcs = cols[which[k]]
        i = int(pos[k])
        fl, code = flags[i], dlcs[i]
        n = payload_len(fl, code)
        tick = int(t[k])
        is_fd = bool(fl & FLAG_FD)
        msg = can.Message(
            timestamp=(tick - zero) / per_s,
            arbitration_id=ids[i], is_extended_id=bool(fl & FLAG_EXTENDED),
            is_remote_frame=bool(fl & FLAG_REMOTE), is_error_frame=bool(fl & FLAG_ERROR),
            is_fd=is_fd, bitrate_switch=bool(fl & FLAG_BRS), error_state_indicator=bool(fl & FLAG_ESI),
            is_rx=not fl & FLAG_TX, channel=b.name,
            dlc=_dlc_len(code) if is_fd else code, data=b.data[i, :n].tobytes(), check=False)
        yield tick, msg


def _start_for(trace, resolution_ticks):
    """The measurement start to write: the source's (if any), else the first frame, floored
    to what the format's header can hold and never after the first frame."""
    bounds = trace.time_bounds()
    first = bounds[0] if bounds else 0
    s = first if trace.start is None else min(int(trace.start), first)
    if not trace.dated:
        return min(0, first)
    return (s // resolution_ticks) * resolution_ticks


def write_trace(trace, out, fmt=None):
    """Write a Trace to candump/ASC/BLF/TRC. Returns a list of warnings."""
    fmt = format_of(out, fmt)
    return {"candump": _write_candump, "asc": _write_asc, "blf": _write_blf, "trc": _write_trc}[fmt](trace, out)


def export_trace(f, out, fmt=None, streams=None):
    """A LogbFile's CAN buses (every frame, whatever the routing) to a python-can format;
    returns (trace, warnings)."""
    trace = read_logb(f, streams)
    return trace, write_trace(trace, out, fmt)


def _channel_int(name):
    from can.util import channel2int

    c = channel2int(name)
    return 0 if c is None else c


def _write_candump(trace, out):
    from can.io.canutils import CanutilsLogWriter

    class Writer(CanutilsLogWriter):
        def on_message_received(self, msg):
            if not (msg.is_error_frame or (msg.is_remote_frame and msg.dlc)):
                return super().on_message_received(msg)
            line = f"({msg.timestamp:f}) {msg.channel}"
            if msg.is_error_frame:  # python-can would write fixed class bits and no data
                line += f" {CAN_ERR_FLAG | msg.arbitration_id:08X}#{bytes(msg.data).hex().upper()}\n"
            else:  # python-can would drop the DLC
                ident = f"{msg.arbitration_id:08X}" if msg.is_extended_id else f"{msg.arbitration_id:03X}"
                code = _len2dlc(msg.dlc) if msg.is_fd else msg.dlc
                line += f" {ident}#R{code}{' R' if msg.is_rx else ' T'}\n"
            self.file.write(line)

    scale = 10 ** -trace.axis_exp
    w = Writer(str(out))
    try:
        for tick, msg in messages(trace):
            msg.timestamp = tick / scale  # int / int: the float nearest the exact stamp
            w.on_message_received(msg)
    finally:
        w.stop()
    return _resolution_warning(trace, -6, "candump")


def _resolution_warning(trace, exp, fmt):
    if trace.axis_exp < exp:
        unit = 10 ** (exp - trace.axis_exp)
        if any((b.t % unit).any() for b in trace.buses.values()):
            return [f"{fmt} holds stamps to 1e{exp} s; finer stamps were rounded"]
    return []


def _write_asc(trace, out):
    from can.io.asc import ASCWriter
    from can.util import channel2int

    per_ms = 10 ** (-3 - trace.axis_exp)
    start = _start_for(trace, per_ms)
    start_s = start * 10.0 ** trace.axis_exp

    class Writer(ASCWriter):
        def _format_header_datetime(self, dt):
            return super()._format_header_datetime(datetime.datetime.fromtimestamp(start_s))

        def log_event(self, message, timestamp=None):
            # stamps arrive relative to the measurement start, which is the source's start
            if not self.header_written:
                self.header_written = True
                self.started = 0.0
                self.file.write(f"Begin Triggerblock {self._format_header_datetime(None)}\n")
                self.file.write(self.FORMAT_EVENT.format(timestamp=0.0, message="Start of measurement"))
            self.file.write(self.FORMAT_EVENT.format(timestamp=timestamp or 0.0, message=message))

        def on_message_received(self, msg):
            if msg.is_error_frame and msg.is_fd:  # keep FD flag and direction of CAN FD error frames
                ch = (channel2int(msg.channel) or 0) + 1
                return self.log_event(f"CANFD {ch:>3} {'Rx' if msg.is_rx else 'Tx':<4} ErrorFrame", msg.timestamp)
            return super().on_message_received(msg)

    w = Writer(str(out))
    try:
        for _tick, msg in messages(trace, start=start):
            msg.channel = _channel_int(msg.channel)
            w.on_message_received(msg)
    finally:
        w.stop()
    return _resolution_warning(trace, -6, "ASC")


def _write_blf(trace, out):
    from can.io.blf import BLFWriter

    per_ms = 10 ** (-3 - trace.axis_exp)
    start = _start_for(trace, per_ms)
    w = BLFWriter(str(out))
    # python-can subtracts its start from absolute float stamps and truncates to ns; feeding
    # stamps relative to a zero start (+0.5 ns so truncation lands on the intended ns) keeps
    # them exact; the header start is set before stop() writes it.
    w.start_timestamp = 0.0
    half = 0.5e-9
    last = 0.0
    try:
        for _tick, msg in messages(trace, start=start):
            msg.channel = _channel_int(msg.channel)
            last = msg.timestamp
            msg.timestamp += half
            w.on_message_received(msg)
    finally:
        start_s = start * 10.0 ** trace.axis_exp
        w.start_timestamp = start_s if trace.dated else None
        w.stop_timestamp = start_s + last if trace.dated else None
        w.stop()
    return []


def _write_trc(trace, out):
    from can.io.trc import TRCWriter
    from can.util import channel2int

    start = _start_for(trace, 1 if trace.axis_exp >= -6 else 10 ** (-6 - trace.axis_exp))
    start_s = start * 10.0 ** trace.axis_exp
    dropped = [0]

    class Writer(TRCWriter):
        def _format_message_by_format(self, msg, channel):
            line = super()._format_message_by_format(msg, channel)
            kind = "DT"
            if msg.is_remote_frame:
                kind = "RR"
            elif msg.is_fd:
                kind = {(False, False): "FD", (True, False): "FB", (True, True): "FE",
                        (False, True): "BI"}[(bool(msg.bitrate_switch), bool(msg.error_state_indicator))]
            return line.replace(" DT ", f" {kind} ", 1)

        def on_message_received(self, msg):
            if msg.is_error_frame:
                dropped[0] += 1
                return
            # python-can refuses remote and FD frames; its formatting handles them once typed
            channel = (channel2int(msg.channel) or 0) + 1
            self.msgnr += 1
            self.log_event(self._format_message(msg, channel), msg.timestamp)

    w = Writer(str(out))
    try:
        w.first_timestamp = 0.0
        w.write_header(start_s if trace.dated else 0.0)
        for _tick, msg in messages(trace, start=start):
            if msg.is_fd:
                msg.dlc = _len2dlc(msg.dlc)  # TRC's L column is the DLC code
            w.on_message_received(msg)
    finally:
        w.stop()
    warnings = _resolution_warning(trace, -6, "TRC")
    if dropped[0]:
        warnings.append(f"TRC export dropped {dropped[0]} error frames (python-can cannot read them back)")
    return warnings

"""The host as a logger: python-can Messages into Logb files as they arrive.

LiveRecorder is what `logb record` and the python-can `.logb` writer plugin
(`can.Logger("x.logb")`) write with. It writes like a device, not like a
conversion: each bus's records are sealed into DATA frames when `batch` are
buffered or the oldest is `flush_s` old (host clock; poll() or the ticker
thread seals a quiet bus), every frame goes to the OS as it is sealed (so a
killed process leaves a valid file holding all but the unsealed records),
segments restate every schema, and the file's `logb.durability` says when
bytes are fsync()ed. Per bus: the raw bus stream (mirror routing, SPEC §13.4)
and with a DBC its per-message streams and the DBC attached. Loss counters
(SPEC G13) go into each raw bus stream's META at every segment and at close:
`logb.lost.invalid` (frames no record holds as given, formats.pycan.frame_of),
`logb.lost.buffer` (frames the caller dropped: lost()), `logb.lost.controller`
(only once the caller reports one: python-can has no overrun counter).

Time: records carry the Message timestamps (µs). With time_base "monotonic"
(`logb record`) those are the interface's clock, whatever its origin, and the
host clock dates them through anchors (SPEC §5.5): every `anchor_s`, the frame
of the interval received with the least delay pairs its stamp with the host's
wall clock at receipt. "unix" takes the stamps as Unix time; "auto" (the
plugin: can.logconvert hands it old files) is "unix" when the first stamp is
after 1990, else "relative".
"""

import os
import threading
import time

import numpy as np

from .. import tables
from ..errors import UsageError
from ..frames import Meta
from ..writer import Writer
from .dbc import compile_dbc
from .formats.pycan import EPOCH_MIN_S, bus_name, frame_of, ticks
from .record import CanRecorder

AXIS_EXP = -6  # µs, as candump, ASC and TRC stamp
DURABILITY = {  # policy -> the `logb.durability` value (SPEC G12): when bytes reach the OS and the disk
    "frame": "frame;each frame written as sealed, fsync after each seal",
    "segment": "segment;each frame written as sealed, fsync at each SYNC",
    "close": "close;written in 1 MiB pieces, fsync at close",
}
TIME_BASES = ("monotonic", "unix", "auto")
_CLOSE_BUFFER = 1 << 20


class _Sink:
    """The file a recorder writes: unbuffered os.write (policies frame, segment), so
    every sealed frame survives the process, or 1 MiB pieces (close)."""

    def __init__(self, path, policy, append=False):
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
        self.fd = os.open(path, flags | getattr(os, "O_BINARY", 0), 0o666)
        self.size = os.fstat(self.fd).st_size if append else 0
        self.held = bytearray() if policy == "close" else None

    def write(self, data):
        self.size += len(data)
        if self.held is None:
            self._out(data)
            return
        self.held += data
        if len(self.held) >= _CLOSE_BUFFER:
            self._out(self.held)
            self.held.clear()

    def _out(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    def sync(self):
        if self.held:
            self._out(self.held)
            self.held.clear()
        os.fsync(self.fd)

    def close(self):
        try:
            self.sync()
        finally:
            os.close(self.fd)


class _StreamSink:
    """A binary file object as the sink (the plugin given one): flush() stands for fsync."""

    def __init__(self, fh):
        self.fh = fh
        self.size = 0

    def write(self, data):
        self.fh.write(data)
        self.size += len(data)

    def sync(self):
        getattr(self.fh, "flush", lambda: None)()

    def close(self):
        self.sync()


class _LiveWriter(Writer):
    """A Writer that lets the recorder act at every segment start (loss counters,
    fsync under the `segment` policy)."""

    def __init__(self, *args, on_segment, **kwargs):
        self._on_segment = on_segment
        super().__init__(*args, **kwargs)

    def _start_segment(self):
        self._on_segment(before=True)
        super()._start_segment()
        self._on_segment(before=False)

    def stream_meta(self, stream, pairs):
        """A stream META frame inside the segment just started (no segment check: the
        segment start itself is writing it)."""
        self._emit(Meta(tuple((k, str(v)) for k, v in pairs.items())).frame(stream.stream_id), stream)


class _Bus:
    def __init__(self, rec):
        self.rec = rec
        self.width = rec.width
        self.rows = []  # (tick, id, flags, dlc, data) not yet sealed
        self.oldest = 0.0  # host monotonic time the oldest of rows arrived
        # written at every segment and close; logb.lost.controller joins once reported (lost())
        self.lost = {tables.LOST_BUFFER: 0, tables.LOST_INVALID: 0}


class LiveRecorder:
    """Record python-can Messages into `out` (a path, or a binary file object).

    dbc: a DBC path or text (per-message streams, the DBC attached), or None.
    fd: the 64-byte raw layout (every frame fits; 1.3 % larger files than the
    8-byte one on a classic bus); False refuses payloads over 8 bytes (counted
    in logb.lost.invalid). durability: a key of DURABILITY. rotate_bytes /
    rotate_s: start a new file (a new writer session) when the current one
    reaches that size or age; the files are OUT's stem + `-0001`, `-0002`, …
    + its suffix. ticker: seal quiet buses from a thread of the recorder's own
    (else call poll() at least every flush_s). Thread-safe."""

    def __init__(self, out, dbc=None, fd=True, time_base="monotonic", durability="frame", flush_s=1.0,
                 batch=4096, segment_bytes=1 << 20, segment_s=60.0, anchor_s=10.0, rotate_bytes=0, rotate_s=0.0,
                 device="host", meta=None, append=False, ticker=False, on_file=None,
                 wall_clock=time.time_ns, monotonic=time.monotonic):
        if durability not in DURABILITY:
            raise UsageError(f"durability must be one of {', '.join(DURABILITY)}, not {durability!r}")
        if time_base not in TIME_BASES:
            raise UsageError(f"time base must be one of {', '.join(TIME_BASES)}, not {time_base!r}")
        if flush_s <= 0 or batch < 1:
            raise UsageError("flush_s must be > 0 and batch >= 1")
        if isinstance(out, (str, os.PathLike)):
            out = os.fspath(out)
        elif rotate_bytes or rotate_s:
            raise UsageError("rotation needs a path to name the files after")
        self.out = out
        self.fd = bool(fd)
        self.device = device
        self.dbc = dbc
        self._compiled = {}  # bus name -> CompiledDbc (uuids derive from the bus name)
        # compiled here, so a bad DBC fails before anything is recorded
        self.problems = list(self._compile("can0").problems) if dbc is not None else []
        self.time_base = time_base
        self.durability = durability
        self.flush_s = float(flush_s)
        self.batch = int(batch)
        self.segment_bytes = segment_bytes
        self.segment_s = segment_s
        self.anchor_s = anchor_s
        self.rotate_bytes = int(rotate_bytes or 0)
        self.rotate_s = float(rotate_s or 0)
        self.meta = dict(meta or {})
        self.on_file = on_file  # called with each file's path once it is closed
        self._wall = wall_clock
        self._mono = monotonic
        self._lock = threading.RLock()
        self._append = append
        self._base = None if time_base == "auto" else time_base  # "auto": decided by the first stamp
        self.paths = []  # every file written, in order
        self.frames = 0  # frames recorded, all files
        self.invalid = 0  # frames refused, all files
        self.closed = False
        self._error = None
        self._open()
        self._stop = threading.Event()
        self._thread = None
        if ticker:
            self._thread = threading.Thread(target=self._tick, name="logb-recorder", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------ files
    def _path(self, n):
        if not (self.rotate_bytes or self.rotate_s):
            return self.out
        stem, ext = os.path.splitext(self.out)
        return f"{stem}-{n:04d}{ext or '.logb'}"

    def _open(self):
        path = self._path(len(self.paths) + 1) if isinstance(self.out, str) else None
        if path is None:
            self.sink = _StreamSink(self.out)
        else:
            self.sink = _Sink(path, self.durability, append=self._append)
            self.paths.append(path)
        header = not (self._append and self.sink.size)  # appending a session: a concatenation (SPEC §3)
        self.buses = {}
        self._best = None  # (offset ns, axis ns) of the least-delayed frame since the last anchor
        self._anchored_at = None
        self._opened_at = self._mono()
        meta = {"logb.device": self.device, "logb.durability": DURABILITY[self.durability], **self.meta}
        self.writer = _LiveWriter(self.sink, time_base=self._base, meta=meta, header=header,
                                  clock_source="python-can Message.timestamp", segment_bytes=self.segment_bytes,
                                  segment_seconds=self.segment_s, wall_clock=self._wall, monotonic=self._mono,
                                  on_segment=self._segment)

    def _close_file(self):
        for b in self.buses.values():
            self._seal(b)
        self._anchor()
        w = self.writer
        if w._segment_start is not None:  # final loss counters (G13): at close too
            for b in self.buses.values():
                w.meta(b.lost, stream=b.rec.raw)
        w.close()
        self.sink.close()
        if self.on_file is not None and self.paths:
            self.on_file(self.paths[-1])

    def _segment(self, before):
        if before:
            if self.durability == "segment" and self.writer._segment_start is not None:
                self.sink.sync()
            return
        for b in self.buses.values():
            self.writer.stream_meta(b.rec.raw, b.lost)

    def _bus(self, name):
        b = self.buses.get(name)
        if b is None:
            compiled = None if self.dbc is None else self._compile(name)
            rec = CanRecorder(self.writer, compiled, bus=name, fd=self.fd, device=self.device,
                              batch=self.batch, axis_exp=AXIS_EXP, attach=not self.buses)
            b = self.buses[name] = _Bus(rec)
        return b

    def _compile(self, bus):
        c = self._compiled.get(bus)
        if c is None:
            c = self._compiled[bus] = compile_dbc(self.dbc, bus=bus, device=self.device, fd=self.fd,
                                                  axis_exp=AXIS_EXP)
        return c

    # ------------------------------------------------------------ input
    def add(self, msg, wall_ns=None):
        """Record one python-can Message; wall_ns: the host's wall clock when it was
        received (default: now)."""
        wall_ns = self._wall() if wall_ns is None else wall_ns
        with self._lock:
            self._check()
            now = self._mono()
            if self._base is None:
                self._base = "unix" if (msg.timestamp or 0.0) >= EPOCH_MIN_S else "relative"
                self.writer.time_base = self._base  # no segment yet: the session META is still to come
            elif self._rotate_due(now):
                self._close_file()
                self._open()
            b = self._bus(bus_name(msg.channel))
            fr = frame_of(msg, b.width)
            if fr is None:
                b.lost[tables.LOST_INVALID] += 1
                self.invalid += 1
                return
            tick = ticks(msg.timestamp or 0.0, AXIS_EXP)
            if not b.rows:
                b.oldest = now
            b.rows.append((tick, *fr))
            if self._base == "monotonic":
                offset = wall_ns - tick * 10 ** (9 + AXIS_EXP)
                if self._best is None or offset < self._best[0]:
                    self._best = (offset, tick * 10 ** (9 + AXIS_EXP))
            if len(b.rows) >= self.batch:
                self._seal(b)
            self._due(now)

    def lost(self, buffer=0, controller=0, channel=None):
        """Count frames dropped before they reached add(): `buffer` by the caller's
        queue, `controller` by the interface (written as logb.lost.buffer and
        logb.lost.controller of the channel's raw bus stream)."""
        with self._lock:
            b = self._bus(bus_name(channel))
            b.lost[tables.LOST_BUFFER] += int(buffer)
            if controller:
                b.lost[tables.LOST_CONTROLLER] = b.lost.get(tables.LOST_CONTROLLER, 0) + int(controller)

    def poll(self):
        """Seal what is due (buffers flush_s old, an anchor, a rotation); call it at
        least every flush_s when no ticker runs."""
        with self._lock:
            self._check()
            now = self._mono()
            if self._rotate_due(now) and self.buses:
                self._close_file()
                self._open()
            self._due(now)

    def pending(self):
        """Records received and not yet sealed into a frame."""
        with self._lock:
            return sum(len(b.rows) for b in self.buses.values())

    def file_size(self):
        return self.sink.size

    def _rotate_due(self, now):
        return ((self.rotate_bytes and self.sink.size >= self.rotate_bytes)
                or (self.rotate_s and now - self._opened_at >= self.rotate_s))

    def _due(self, now):
        sealed = False
        for b in self.buses.values():
            if b.rows and now - b.oldest >= self.flush_s:
                self._seal(b)
                sealed = True
        if self._best is not None and (self._anchored_at is None or now - self._anchored_at >= self.anchor_s):
            self._anchor()
            sealed = True
        if sealed and self.durability == "frame":
            self.sink.sync()

    def _seal(self, b):
        if not b.rows:
            return
        t, ids, flags, dlc, data = zip(*b.rows)
        b.rows = []
        payload = np.zeros((len(t), b.width), np.uint8)
        for i, d in enumerate(data):
            payload[i, :len(d)] = np.frombuffer(d, np.uint8)
        b.rec.add(np.array(t, np.int64), np.array(ids, np.uint32), np.array(flags, np.uint8),
                  np.array(dlc, np.uint8), payload)
        b.rec.flush()  # per-message records go out with their raw frames: nothing waits past a seal
        self.frames += len(t)

    def _anchor(self):
        if self._best is None:
            return
        offset, axis_ns = self._best
        self.writer.anchor(axis_ns, axis_ns + offset, source="host")
        self._best = None
        self._anchored_at = self._mono()

    def _check(self):
        if self._error is not None:
            raise self._error
        if self.closed:
            raise UsageError("the recorder is closed")

    def _tick(self):
        while not self._stop.wait(self.flush_s / 4):
            try:
                self.poll()
            except Exception as exc:  # raised to the caller at its next add() or close()
                self._error = exc
                return

    def close(self):
        """Seal everything, write the last anchor and loss counters, INDEX and END."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._close_file()
        if self._error is not None:
            raise self._error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

"""Write CAN frames into a Logb file the way every Logb tool expects them
(docs/SPEC.md §13): the raw bus stream, and with a DBC the per-message streams
and the DBC itself as an `application/x-dbc` ATTACH. Routing is `mirror`
(SPEC §13.4): every frame is in the raw bus stream, matching data frames are
in their per-message stream too.

    with logb.Writer("rec.logb", time_base="unix") as w:
        rec = CanRecorder(w, compile_dbc("vehicle.dbc"), bus="can0")
        rec.add(t_us, ids, flags, dlc, data)   # arrays, any number of calls
        rec.flush()                            # before the writer closes
"""

import numpy as np

from .. import fields as bits
from ..errors import EncodeError
from ..tables import Codec
from . import layout
from .dbc import EXT_BITS, EXTENDED, CompiledDbc, compile_dbc, raw_stream_uuid
from .decode import data_frames, frame_keys, route_rows

_SPAN = 1 << 32  # a batch's ticks must fit the u32 `t` field above its axis_base
_OWN_FIELDS = ("t", "data", layout.MISSING)  # per-message fields that are not signals over the payload


class CanRecorder:
    """Record frames of one bus.

    writer: a logb.Writer. compiled: a CompiledDbc, a DBC (path or text), or
    None for the raw bus stream alone. fd: use the 64-byte raw layout (also
    chosen when the DBC has a message longer than 8 bytes). batch: records per
    DATA frame. Per-message records are buffered until a batch is full, or,
    with flush_s, until the oldest is flush_s seconds (of the recording's own
    axis) older than the newest frame added, as a logger seals its frames
    (`logb import`: 1 s): call flush() (or use the recorder as a context
    manager) before closing the writer."""

    def __init__(self, writer, compiled=None, bus="can0", fd=False, device="logb", codec=Codec.zstd,
                 transpose=True, batch=4096, axis_exp=-6, attach=True, flush_s=None):
        if compiled is not None and not isinstance(compiled, CompiledDbc):
            compiled = compile_dbc(compiled, bus=bus, device=device, axis_exp=axis_exp)
        elif compiled is not None and (compiled.bus != bus or compiled.raw_schema.axis_exp != axis_exp):
            compiled = compile_dbc(compiled.attachment_bytes(), bus=bus, device=device, axis_exp=axis_exp)
        self.writer = writer
        self.compiled = compiled
        self.bus = bus
        self.fd = bool(fd or (compiled is not None and compiled.fd))
        self.width = layout.FD_PAYLOAD if self.fd else layout.CLASSIC_PAYLOAD
        self.batch = int(batch)
        self.flush_ticks = None if flush_s is None else round(flush_s * 10 ** -axis_exp)
        if compiled is not None and compiled.fd == self.fd:
            raw_schema = compiled.raw_bus_schema(layout.MIRROR)
        else:
            raw_schema = layout.raw_bus_schema(raw_stream_uuid(bus, device, self.fd), bus, fd=self.fd,
                                               axis_exp=axis_exp, routing=layout.MIRROR)
        self.raw = writer.add_stream(raw_schema, codec=codec, transpose=transpose)
        self.streams = []
        if compiled is not None:
            self.streams = [writer.add_stream(e.schema, codec=codec, transpose=transpose)
                            for e in compiled.entries]
            if attach:
                writer.attach(compiled.name, "application/x-dbc", compiled.attachment_bytes())
                writer.meta({"logb.can.dbc": compiled.name}, stream=self.raw)
        self._pending = [[] for _ in self.streams]  # per entry: [(t, payload rows)]
        self._pending_n = [0] * len(self.streams)
        self.frames = 0

    # -------------------------------------------------------------- input
    def _normalise(self, t, ids, flags, dlc, data):
        t = np.asarray(t, np.int64)
        n = len(t)
        ids = np.asarray(ids, np.uint64)
        flags = np.zeros(n, np.uint8) if flags is None else np.asarray(flags).astype(np.uint8)
        flags = flags | np.where((ids & np.uint64(EXTENDED)) != 0, np.uint8(layout.FLAG_EXTENDED), np.uint8(0))
        ids = (ids & np.uint64(EXT_BITS)).astype(np.uint32)
        if isinstance(data, np.ndarray) and data.ndim == 2:
            arr = data.astype(np.uint8, copy=False)
            lengths = np.full(n, arr.shape[1])
        else:
            rows = [bytes(d) for d in data]
            lengths = np.array([len(r) for r in rows], np.int64)
            arr = np.zeros((n, max(lengths.max(initial=0), 0)), np.uint8)
            for i, r in enumerate(rows):
                arr[i, : len(r)] = np.frombuffer(r, np.uint8)
        if arr.shape[1] > self.width:
            if arr[:, self.width:].any():
                raise EncodeError(f"payloads longer than {self.width} bytes on a "
                                 f"{'CAN FD' if self.fd else 'classic CAN'} recorder (use fd=True)")
            arr = arr[:, : self.width]
        payload = np.zeros((n, self.width), np.uint8)
        payload[:, : arr.shape[1]] = arr
        if dlc is None:
            dlc = np.array([layout.len_to_dlc(int(x)) for x in lengths], np.uint8) if n else np.zeros(0, np.uint8)
        dlc = np.asarray(dlc).astype(np.uint8)
        if not (len(ids) == len(flags) == len(dlc) == len(payload) == n):
            raise EncodeError("t, ids, flags, dlc and data must have one entry per frame")
        # bytes past the frame's data length were never on the wire: zero (SPEC §13.1);
        # a remote frame has no data; an error frame keeps what the interface reported
        length = layout.dlc_lengths(dlc, self.fd)
        length = np.where((flags & layout.FLAG_REMOTE) != 0, 0, length)
        length = np.where((flags & layout.FLAG_ERROR) != 0, self.width, length)
        if (length < self.width).any():
            payload[np.arange(self.width)[None, :] >= length[:, None]] = 0
        return t, ids, flags, dlc, payload

    def add(self, t, ids, flags, dlc, data):
        """Record frames. t: int ticks of the axis (µs by default), ids: the
        identifiers (bit 31 set also means extended), flags: layout.FLAG_*
        (None: 0), dlc: DLC codes (None: from the data width), data: (N, W)
        uint8 or a sequence of bytes, zero-padded to 8 (or 64) bytes."""
        t, ids, flags, dlc, payload = self._normalise(t, ids, flags, dlc, data)
        n = len(t)
        if not n:
            return
        for lo, hi in _spans(t, self.batch):
            base = int(t[lo:hi].min())
            self.raw.write_batch({"t": (t[lo:hi] - base).astype(np.uint32), "id": ids[lo:hi],
                                  "flags": flags[lo:hi],
                                  **{nm: (flags[lo:hi] >> np.uint8(i)) & np.uint8(1)
                                     for i, nm in enumerate(layout.FLAG_NAMES)},
                                  "dlc": dlc[lo:hi], "data": payload[lo:hi]}, axis_base=base)
        self.frames += n
        if self.compiled is None:
            return
        routed = route_rows(self.compiled.entries, frame_keys(ids, flags), payload, data_frames(flags))
        lengths = layout.frame_lengths(dlc, flags)
        for i, rows in routed.items():
            e = self.compiled.entries[i]
            missing = np.maximum(e.payload_len - lengths[rows], 0).astype(np.uint8)
            self._pending[i].append((t[rows], payload[rows, : e.payload_len], missing))
            self._pending_n[i] += len(rows)
            if self._pending_n[i] >= self.batch:
                self._write(i, keep_tail=True)
        if self.flush_ticks is not None:
            due = int(t.max()) - self.flush_ticks
            for i, parts in enumerate(self._pending):
                if parts and min(int(p[0].min()) for p in parts) <= due:
                    self._write(i)

    def _write(self, i, keep_tail=False):
        parts = self._pending[i]
        if not parts:
            return
        t = np.concatenate([p[0] for p in parts])
        payload = np.concatenate([p[1] for p in parts])
        missing = np.concatenate([p[2] for p in parts])
        stop = len(t) - (len(t) % self.batch if keep_tail else 0)
        sw = self.streams[i]
        schema = sw.schema
        e = self.compiled.entries[i]
        for lo, hi in _spans(t[:stop], self.batch):
            base = int(t[lo:hi].min())
            rec = np.zeros((hi - lo, schema.record_size), np.uint8)
            rec[:, layout.PAYLOAD_BIT // 8: layout.PAYLOAD_BIT // 8 + e.payload_len] = payload[lo:hi]
            cols = {f.name: bits.extract(rec, f) for f in schema.fields if f.name not in _OWN_FIELDS}
            cols["t"] = (t[lo:hi] - base).astype(np.uint32)
            cols["data"] = payload[lo:hi]
            cols[layout.MISSING] = missing[lo:hi]
            sw.write_batch(cols, axis_base=base)
        self._pending[i] = [(t[stop:], payload[stop:], missing[stop:])] if stop < len(t) else []
        self._pending_n[i] = len(t) - stop

    def flush(self):
        """Write every buffered per-message record."""
        for i in range(len(self.streams)):
            self._write(i)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.flush()


def _spans(t, batch):
    """[lo, hi) slices of at most `batch` records whose ticks span < 2**32."""
    n, lo = len(t), 0
    while lo < n:
        hi = min(lo + batch, n)
        while hi - lo > 1 and int(t[lo:hi].max()) - int(t[lo:hi].min()) >= _SPAN:
            hi = lo + (hi - lo) // 2
        yield lo, hi
        lo = hi


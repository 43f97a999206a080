"""logb tail: decode a recording live, over the logger's USB serial port."""

import argparse
import heapq
import math
import sys
import time

import numpy as np

from ..errors import LinkError, TransferError
from .common import EXIT_OK, TIME_BASES, add_id_filter, dumps, hex_id, utc_text, value

HELP = "show CAN frames or decoded signals live while the logger records (USB serial)"
ORDER_S, ORDER_ROWS = 2.0, 20000
DESCRIPTION = f"""\
Follow the recording the logger is writing, over its USB serial port (the
Logb link, docs/LINK.md), and print each record: raw CAN frames as ID#DATA,
per-message streams and sensors as signals with units, or — with --dbc —
raw frames decoded with that DBC (complete J1939 multi-packet messages too,
at their last TP.DT, however the transfer falls across the logger's
frames). It starts at the recording's last segment (its schemas are
restated there), keeps going through cable trouble and logger reboots (it
reconnects; a new writer session is announced as one), and stops after
--count records, --duration seconds, or Ctrl-C.

  logb tail
  logb tail --port /dev/ttyACM0 --dbc vehicle.dbc --messages EngineData
  logb tail --id 0x100-0x1FF --time device

Rows come out in time order. The logger seals each stream's DATA frame
when it is full or flush_ms old, so the streams arrive interleaved by
frame; tail holds rows back and prints them sorted by time. A row waits
until a row --order-window seconds (device time, default {ORDER_S:g}) newer has
arrived, or until --order-rows rows (default {ORDER_ROWS}) wait, or until
nothing has arrived for --order-window seconds; everything waiting is
printed at a new writer session, damage, the session's end and when tail
stops. A stream more than the window late (a logger flush_ms over it)
prints out of order; --order-window 0 prints each frame's rows as it arrives.

Times (--time): utc, ISO-8601 UTC once the writer session is dated (a unix
time base, or the logger's anchors, e.g. GPS fixes, as they arrive);
relative, seconds after the first row tail printed in the writer session;
device, seconds on the logger's axis (since boot). Default: utc when dated,
else relative. --json always gives `t` (device seconds), and `time_utc` or
`time_s` for the time shown. --id keeps CAN frames, decoded messages and
per-message streams of those ids (sensors are left out).

Exit status: 0 stopped (count, duration, Ctrl-C), 1 the link failed for
good, 64 usage error, 69 no logger found or answering."""


def _order_s(text):
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0 <= v < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0")
    return v


def add_arguments(p):
    p.add_argument("--port", help="serial port (default: $LOGB_PORT, else found by USB VID/PID)")
    p.add_argument("--dbc", metavar="FILE", help="decode raw CAN frames with this DBC")
    p.add_argument("--messages", nargs="+", metavar="M", help="only these messages / streams")
    add_id_filter(p)
    p.add_argument("--time", choices=TIME_BASES,
                   help="utc (once the session is dated), relative (seconds after the first row shown), "
                        "device (the logger's axis). Default: utc when dated, else relative")
    p.add_argument("--order-window", type=_order_s, default=ORDER_S, metavar="S",
                   help=f"hold rows until one S seconds (device time) newer arrives, to print in time order "
                        f"(default {ORDER_S:g}; 0: as the frames arrive)")
    p.add_argument("--order-rows", type=int, default=ORDER_ROWS, metavar="N",
                   help=f"never hold more than N rows (default {ORDER_ROWS})")
    p.add_argument("--json", action="store_true", help="one JSON object per record (and per session)")
    p.add_argument("--count", type=int, default=0, metavar="N", help="stop after N records")
    p.add_argument("--duration", type=float, default=0, metavar="S", help="stop after S seconds")
    p.add_argument("--from-start", action="store_true", help="start at the beginning of the recording")
    p.add_argument("--reconnect", type=float, default=None, metavar="S",
                   help="give up after S seconds without the logger (default: keep trying)")


class Ordered:
    """A bounded reordering buffer: rows pushed with their time in seconds come
    out sorted by it (arrival order on a tie) once the newest time pushed is
    `window_s` past them, or once more than `max_rows` wait."""

    def __init__(self, window_s=ORDER_S, max_rows=ORDER_ROWS):
        self.window_s, self.max_rows = window_s, max(max_rows, 0)
        self._heap, self._seq = [], 0
        self.newest = -math.inf
        self.last_push = time.monotonic()

    def __len__(self):
        return len(self._heap)

    def push(self, t, row):
        heapq.heappush(self._heap, (t, self._seq, row))
        self._seq += 1
        self.newest = max(self.newest, t)
        self.last_push = time.monotonic()

    def ready(self):
        """The rows due, oldest first."""
        out = []
        while self._heap and (self._heap[0][0] <= self.newest - self.window_s or len(self._heap) > self.max_rows):
            out.append(heapq.heappop(self._heap)[2])
        return out

    def flush(self):
        """Every row waiting, oldest first; the next rows start a new order."""
        out = [heapq.heappop(self._heap)[2] for _ in range(len(self._heap))]
        self.newest = -math.inf
        return out


class Printer:
    """Turns LiveDecoder events into lines on `out`, rows in time order (Ordered).
    `say` takes notes for stderr."""

    def __init__(self, out, compiled=None, messages=None, as_json=False, limit=0, basis=None, ids=None,
                 order_s=ORDER_S, order_rows=ORDER_ROWS, say=None):
        from ..timebase import Clock

        self.out = out
        self.limit = limit
        self.compiled = compiled
        self.messages = set(messages) if messages else None
        self.json = as_json
        self.basis = basis
        self.ids = ids
        self.say = say or (lambda msg: None)
        self.records = 0
        self.order = Ordered(order_s, order_rows)
        self.clock = Clock("monotonic", [])  # until a session says its time base
        self.anchors = []
        self.origin = None  # device seconds of the session's first row shown (relative time 0)
        self.transfers = {}  # raw stream uuid -> its J1939 Reassembler, kept across DATA frames
        self._said_undated = False

    def _want(self, *names):
        return self.messages is None or any(n in self.messages for n in names if n)

    def _line(self, obj, text):
        self.out.write((dumps(obj) if self.json else text) + "\n")

    def event(self, ev):
        from ..timebase import Clock

        kind, a, b = ev
        if kind == "records":
            self.records_of(a, b)
            self._release(self.order.ready())
        elif kind == "anchor":  # the session's clock gains a point: rows not yet printed are dated by it
            self.anchors.append(a)
            self.clock = Clock(self.clock.time_base, self.anchors)
        else:
            self.close()
            if kind == "session":
                self.clock = Clock(b.get("logb.time_base", "monotonic"), [])
                self.anchors, self.origin, self.transfers = [], None, {}
                obj = {"session": a, "device": b.get("logb.device", ""), "firmware": b.get("logb.firmware", "")}
                self._line(obj, f"=== writer session {a} · {obj['device'] or 'device ?'} · "
                                f"{obj['firmware'] or 'firmware ?'} ===")
            elif kind == "damage":
                self._line({"damage": a, "cause": b}, f"!!! damaged bytes at byte {a} ({b}): skipped to the next SYNC")
            elif kind == "rejected":
                self._line({"rejected": a, "reason": b}, f"!!! the frame at byte {a} does not decode ({b}): skipped")
            elif kind == "end":
                self._line({"end": a}, f"=== writer session {a} closed ===")
        self.out.flush()

    def idle(self):
        """Print what waits once nothing has arrived for the order window (the logger is quiet)."""
        if len(self.order) and time.monotonic() - self.order.last_push >= self.order.window_s:
            self._release(self.order.flush())
            self.out.flush()

    def close(self):
        """Print every row still waiting."""
        self._release(self.order.flush())
        self.out.flush()

    # ------------------------------------------------------------ rows: (ticks, axis_exp, obj, text after the time)

    def _row(self, ticks, exp, obj, text):
        if exp is None:  # a stream whose axis is not time: printed at once, its axis value in the time column
            self._release([(ticks, exp, obj, text)])
        else:
            self.order.push(ticks * 10.0 ** exp, (int(ticks), exp, obj, text))

    def _release(self, rows):
        for ticks, exp, obj, text in rows:
            if self.limit and self.records >= self.limit:
                return
            self.records += 1
            if exp is None:
                self._line({"axis": value(ticks), **obj}, f"{_num(value(ticks)):>14}  {text}")
                continue
            secs = ticks * 10.0 ** exp
            if self.origin is None:
                self.origin = secs
            obj = {"t": secs, **obj}
            shown = self._time(ticks, exp, secs, obj)
            self._line(obj, f"{shown}  {text}")

    def _time(self, ticks, exp, secs, obj):
        """The time column's text, its JSON key added to `obj`."""
        basis = self.basis
        if basis in (None, "utc"):
            wall = self.clock.wall(int(ticks), exp)
            if wall.ns is not None:
                obj["time_utc"] = text = str(utc_text([wall.ns], min(max(-exp, 0), 9))[0])
                return text
            if basis == "utc" and not self._said_undated:
                self._said_undated = True
                self.say("--time utc: the writer session is not dated (yet: no unix time base or anchor); "
                         "relative times until it is")
            basis = "relative"
        if basis == "relative":
            obj["time_s"] = rel = round(secs - self.origin, 9)
            return f"{rel:14.6f}"
        return f"{secs:14.6f}"

    # ------------------------------------------------------------ records of one DATA frame

    def records_of(self, schema, batch):
        meta = schema.meta_dict()
        layout = meta.get("logb.can.layout")
        ticks = batch.axis
        exp = schema.axis_exp if schema.is_time else None  # None: no time to order by (_row)
        if layout in ("raw", "raw-fd"):
            self._raw(schema, batch, ticks, exp)
        elif layout == "message":
            msg = meta.get("logb.can.message", schema.name)
            if not self._want(schema.name, msg) or (self.ids is not None and not self.ids.mask(
                    [int(meta.get("logb.can.id", "0"), 16)])[0]):
                return
            from ..can.decode import decode_payloads
            from ..can.layout import MISSING

            # payload bytes each frame lacked; a schema from before the field holds whole messages
            missing = batch.raw[MISSING] if any(f.name == MISSING for f in schema.fields) else None
            _raw, phys, text, units = decode_payloads(schema, batch.raw["data"], missing=missing)
            for i in range(batch.count):
                self._signals(ticks[i], exp, schema.name, None, phys, text, units, i)
        else:
            if not self._want(schema.name) or self.ids is not None:
                return
            from .. import convert

            phys = {f.name: convert.physical(f.conversion, batch.raw[f.name]) for f in schema.fields
                    if f.name != "t" and not f.variable}
            units = {f.name: f.unit for f in schema.fields}
            for i in range(batch.count):
                self._signals(ticks[i], exp, schema.name, None, phys, {}, units, i)

    def _raw(self, schema, batch, ticks, exp):
        from ..can.layout import FLAG_EXTENDED, FLAG_REMOTE, frame_lengths

        ids, flags, dlcs, data = batch.raw["id"], batch.raw["flags"], batch.raw["dlc"], batch.raw["data"]
        keep = np.ones(batch.count, bool) if self.ids is None else self.ids.mask(ids)
        decoded = {}
        if self.compiled is not None:
            from ..can.decode import decode_frames

            # J1939 transfers: _transport, which remembers what earlier DATA frames began
            for d in decode_frames(self.compiled, batch.axis, ids, flags, data, dlc=dlcs, transport=False):
                for j, row in enumerate(d.rows):
                    decoded[int(row)] = (d, j)
            self._transport(schema, batch, exp)
        lengths = frame_lengths(dlcs, flags)
        for i in np.flatnonzero(keep).tolist():
            if i in decoded:
                d, j = decoded[i]
                if self._want(d.stream, d.message):
                    self._signals(ticks[i], exp, d.stream, int(ids[i]), d.phys, d.text, d.units, j)
                continue
            if not self._want(schema.name):
                continue
            fl = int(flags[i])
            ext = bool(fl & FLAG_EXTENDED)
            payload = bytes(data[i][:lengths[i]])
            shown = "R" if fl & FLAG_REMOTE else payload.hex().upper()
            self._row(ticks[i], exp,
                      {"stream": schema.name, "id": int(ids[i]), "extended": ext, "dlc": int(dlcs[i]),
                       "data": payload.hex(), "flags": fl},
                      f"{schema.name:<18} {hex_id(int(ids[i]), ext)}#{shown}")

    def _transport(self, schema, batch, exp):
        """Feed this DATA frame's J1939 TP frames to the bus's reassembler (one per raw
        stream, kept for the session, so a transfer split across DATA frames joins) and
        show each message it completes like a frame of its PGN's id, at its last TP.DT."""
        if not any(e.j1939 for e in self.compiled.entries):
            return
        from ..can import layout
        from ..can.dbc import EXT_BITS
        from ..can.decode import data_frames, decode_payloads, frame_keys, route_rows
        from ..can.rows import pad
        from ..can.transport import Reassembler

        r = self.transfers.get(schema.uuid)
        if r is None:
            r = self.transfers[schema.uuid] = Reassembler(True, None, 10.0 ** exp)
        raw = batch.raw
        keys = frame_keys(raw["id"], raw["flags"])
        lengths = layout.frame_lengths(raw["dlc"], raw["flags"])
        for i in np.flatnonzero(data_frames(raw["flags"])).tolist():
            if r.follows(int(keys[i])):
                r.feed(int(batch.axis[i]), int(keys[i]), raw["data"][i, :lengths[i]].tobytes())
        done = [m for m in r.messages if m.complete]
        r.messages.clear()  # shown once; the reassembler keeps only what is still open
        r.strays.clear()
        if not done:
            return
        mkeys = np.array([m.can_id for m in done], np.uint32)
        payloads = np.zeros((len(done), max(len(m.payload) for m in done)), np.uint8)
        for k, m in enumerate(done):
            payloads[k, :len(m.payload)] = np.frombuffer(m.payload, np.uint8)
        entries = self.compiled.entries
        for e_i, sel in route_rows(entries, mkeys, payloads).items():
            e = entries[e_i]
            for k in sel.tolist():
                m = done[k]
                can_id = int(m.can_id) & EXT_BITS
                if not self._want(e.name, e.message) or (self.ids is not None and not self.ids.mask([can_id])[0]):
                    continue
                n = e.payload_len
                _raw, phys, text, units = decode_payloads(e.schema, pad(payloads[k:k + 1], n)[:, :n],
                                                          missing=[max(n - len(m.payload), 0)])
                self._signals(m.end, exp, e.name, can_id, phys, text, units, 0, m.kind)

    def _signals(self, ticks, exp, name, can_id, phys, text, units, i, transport=None):
        vals = {}
        parts = []
        for sig, col in phys.items():
            if col[i] is np.ma.masked:  # past a short frame's data, never on the bus: null, not shown
                vals[sig] = None
                continue
            v = value(col[i])
            if sig in text and text[sig][i] is not None:
                v = text[sig][i]
            vals[sig] = v
            unit = units.get(sig) or ""
            parts.append(f"{sig}={_num(v)}{(' ' + unit) if unit and not isinstance(v, str) else ''}")
        obj = {"stream": name, "signals": vals}
        if can_id is not None:
            obj["id"] = can_id
        if transport:
            obj["transport"] = transport  # J1939 BAM or RTS/CTS, reassembled
        self._row(ticks, exp, obj, f"{name:<18} " + "  ".join(parts))


def _num(v):
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)


def run(args, out):
    from ..serial.client import Client
    from ..serial.live import follow
    from ..serial.ports import find_port

    def say(msg):
        print(f"logb tail: {msg}", file=sys.stderr, flush=True)

    compiled = None
    if args.dbc:
        from ..can.dbc import compile_dbc  # cantools missing, or no such file: main.py says which

        compiled = compile_dbc(args.dbc)
    port = find_port(args.port)  # LinkError: no logger found (exit 69)
    printer = Printer(out, compiled, args.messages, args.json, args.count, args.time, args.ids,
                      args.order_window, args.order_rows, say)
    t_end = time.monotonic() + args.duration if args.duration else None

    def stop():
        printer.idle()  # called at every message and at least every few seconds
        return (args.count and printer.records >= args.count) or (t_end is not None and time.monotonic() >= t_end)

    cl = Client(port)
    try:
        cl.connect()  # LinkError: no logger answering (exit 69)
        try:
            follow(cl, printer.event, say, from_start=args.from_start, reconnect_s=args.reconnect, stop=stop)
        except LinkError as exc:
            raise TransferError(str(exc)) from exc
    except KeyboardInterrupt:
        pass
    finally:
        try:
            printer.close()  # what waits for its turn is printed, not lost
        except (BrokenPipeError, KeyboardInterrupt):
            pass
        cl.bye()
    return EXIT_OK

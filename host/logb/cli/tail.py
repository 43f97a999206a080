"""logb tail: decode a recording live, over the logger's USB serial port."""

import math
import sys
import time

import numpy as np

from ..errors import LinkError, TransferError
from .common import EXIT_OK, dumps, value

HELP = "show CAN frames or decoded signals live while the logger records (USB serial)"
DESCRIPTION = """\
Follow the recording the logger is writing, over its USB serial port (the
Logb link, docs/LINK.md), and print each record as its frame arrives: raw
CAN frames as ID#DATA, per-message streams and sensors as signals with
units, or — with --dbc — raw frames decoded with that DBC. It starts at the
recording's last segment (its schemas are restated there), keeps going
through cable trouble and logger reboots (it reconnects; a new writer
session is announced as one), and stops after --count records, --duration
seconds, or Ctrl-C.

  logb tail
  logb tail --port /dev/ttyACM0 --dbc vehicle.dbc --messages EngineData

Times are seconds on the recording's axis (the logger's clock since boot).
Records appear frame by frame: the writer seals each stream's frame when it
is full or --flush_ms old, so streams interleave by frame, not by record.

Exit status: 0 stopped (count, duration, Ctrl-C), 1 the link failed for
good, 64 usage error, 69 no logger found or answering."""


def add_arguments(p):
    p.add_argument("--port", help="serial port (default: $LOGB_PORT, else found by USB VID/PID)")
    p.add_argument("--dbc", metavar="FILE", help="decode raw CAN frames with this DBC")
    p.add_argument("--messages", nargs="+", metavar="M", help="only these messages / streams")
    p.add_argument("--json", action="store_true", help="one JSON object per record (and per session)")
    p.add_argument("--count", type=int, default=0, metavar="N", help="stop after N records")
    p.add_argument("--duration", type=float, default=0, metavar="S", help="stop after S seconds")
    p.add_argument("--from-start", action="store_true", help="start at the beginning of the recording")
    p.add_argument("--reconnect", type=float, default=None, metavar="S",
                   help="give up after S seconds without the logger (default: keep trying)")


class Printer:
    def __init__(self, out, compiled=None, messages=None, as_json=False, limit=0):
        self.out = out
        self.limit = limit
        self.compiled = compiled
        self.messages = set(messages) if messages else None
        self.json = as_json
        self.records = 0

    def _want(self, *names):
        return self.messages is None or any(n in self.messages for n in names if n)

    def _emit(self, obj, text):
        if self.limit and self.records > self.limit:
            return
        self.out.write((dumps(obj) if self.json else text) + "\n")

    def event(self, ev):
        kind, a, b = ev
        if kind == "session":
            meta = b
            obj = {"session": a, "device": meta.get("logb.device", ""), "firmware": meta.get("logb.firmware", "")}
            self._emit(obj, f"=== writer session {a} · {obj['device'] or 'device ?'} · "
                            f"{obj['firmware'] or 'firmware ?'} ===")
        elif kind == "damage":
            self._emit({"damage": a, "cause": b}, f"!!! damaged bytes at byte {a} ({b}): skipped to the next SYNC")
        elif kind == "rejected":
            self._emit({"rejected": a, "reason": b}, f"!!! the frame at byte {a} does not decode ({b}): skipped")
        elif kind == "end":
            self._emit({"end": a}, f"=== writer session {a} closed ===")
        elif kind == "records":
            self.records_of(a, b)
        self.out.flush()

    def records_of(self, schema, batch):
        meta = schema.meta_dict()
        layout = meta.get("logb.can.layout")
        secs = batch.axis.astype(np.float64) * 10.0 ** schema.axis_exp if schema.is_time else batch.axis
        if layout in ("raw", "raw-fd"):
            self._raw(schema, batch, secs)
        elif layout == "message":
            msg = meta.get("logb.can.message", schema.name)
            if not self._want(schema.name, msg):
                return
            from ..can.decode import decode_payloads
            from ..can.layout import MISSING

            # payload bytes each frame lacked; a schema from before the field holds whole messages
            missing = batch.raw[MISSING] if any(f.name == MISSING for f in schema.fields) else None
            _raw, phys, text, units = decode_payloads(schema, batch.raw["data"], missing=missing)
            for i in range(batch.count):
                self._signals(secs[i], schema.name, None, phys, text, units, i)
        else:
            if not self._want(schema.name):
                return
            from .. import convert

            phys = {f.name: convert.physical(f.conversion, batch.raw[f.name]) for f in schema.fields
                    if f.name != "t" and not f.variable}
            units = {f.name: f.unit for f in schema.fields}
            for i in range(batch.count):
                self._signals(secs[i], schema.name, None, phys, {}, units, i)

    def _raw(self, schema, batch, secs):
        from ..can.layout import FLAG_EXTENDED, FLAG_REMOTE, dlc_to_len

        ids, flags, dlcs, data = batch.raw["id"], batch.raw["flags"], batch.raw["dlc"], batch.raw["data"]
        decoded = {}
        if self.compiled is not None:
            from ..can.decode import decode_frames

            for d in decode_frames(self.compiled, batch.axis, ids, flags, data, dlc=dlcs):
                for j, row in enumerate(d.rows):
                    decoded[int(row)] = (d, j)
        for i in range(batch.count):
            if i in decoded:
                d, j = decoded[i]
                if self._want(d.stream, d.message):
                    self._signals(secs[i], d.stream, int(ids[i]), d.phys, d.text, d.units, j)
                continue
            if not self._want(schema.name):
                continue
            n = dlc_to_len(dlcs[i])
            ext = bool(flags[i] & FLAG_EXTENDED)
            cid = f"{int(ids[i]):08X}" if ext else f"{int(ids[i]):03X}"
            payload = "R" if flags[i] & FLAG_REMOTE else bytes(data[i][:n]).hex().upper()
            self.records += 1
            self._emit({"t": float(secs[i]), "stream": schema.name, "id": int(ids[i]), "extended": ext,
                        "dlc": int(dlcs[i]), "data": bytes(data[i][:n]).hex(), "flags": int(flags[i])},
                       f"{secs[i]:14.6f}  {schema.name:<18} {cid}#{payload}")

    def _signals(self, t, name, can_id, phys, text, units, i):
        self.records += 1
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
        obj = {"t": float(t), "stream": name, "signals": vals}
        if can_id is not None:
            obj["id"] = can_id
        self._emit(obj, f"{t:14.6f}  {name:<18} " + "  ".join(parts))


def _num(v):
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)


def run(args, out):
    from ..serial.client import Client
    from ..serial.live import follow
    from ..serial.ports import find_port

    compiled = None
    if args.dbc:
        from ..can.dbc import compile_dbc  # cantools missing, or no such file: main.py says which

        compiled = compile_dbc(args.dbc)
    port = find_port(args.port)  # LinkError: no logger found (exit 69)
    printer = Printer(out, compiled, args.messages, args.json, args.count)
    t_end = time.monotonic() + args.duration if args.duration else None

    def stop():
        return (args.count and printer.records >= args.count) or (t_end is not None and time.monotonic() >= t_end)

    def say(msg):
        print(f"logb tail: {msg}", file=sys.stderr, flush=True)

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
        cl.bye()
    return EXIT_OK

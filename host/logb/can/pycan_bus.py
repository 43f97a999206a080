"""A live Logb logger as a python-can bus: `can.Bus(interface="logb", channel=PORT)`
(entry point `can.interface` in host/pyproject.toml), so `python -m can.viewer -i logb
-c /dev/ttyACM0`, `cantools monitor -b logb -c /dev/ttyACM0 vehicle.dbc` and one's own
python-can code read the frames a logger records, over its USB serial link.

It follows the recording the logger writes (logb.serial.live.follow, what `logb tail`
runs: from its last segment, reconnecting through cable trouble and reboots) and turns
the records of each CAN bus into Messages: the raw bus stream's frames, and — the
logger's default `exclusive` routing — the frames that went to their exact
per-message stream alone, rebuilt from the stream's `logb.can.id` / `logb.can.extended`
(SPEC §13.4), so every frame of the bus arrives once. Receive only: a logger does not
transmit. Timestamps are the logger's: seconds on its recording axis (since boot for
a monotonic time base). Messages arrive a sealed DATA frame at a time (the logger's
flush_ms), each frame's records in order; streams interleave by frame.

channel: the serial port (None: $LOGB_PORT, else the USB VID/PID search `logb tail`
does). from_start: read the recording from its beginning. reconnect_s: give up after
that long without the logger (default: keep trying). bus: only this Logb bus name."""

import logging
import queue
import threading

import numpy as np
from can import BusABC, CanOperationError, Message

from ..errors import LinkError
from . import layout
from .bus import is_raw_bus_stream, route_of

log = logging.getLogger("logb.can.pycan_bus")
_QUEUE = 1 << 20  # frames received and not yet read before the oldest go (a reader that stopped reading)


class _Stream:
    """A schema seen as a stream, for logb.can.bus's helpers (they read .schema and .name)."""

    def __init__(self, schema):
        self.schema, self.name = schema, schema.name


def batch_messages(schema, batch, only_bus=None):
    """python-can Messages of one decoded DATA frame: a raw bus stream's frames, or an
    exact per-message stream's rebuilt ones; [] for any other stream (a branch or PGN
    match also sits in the raw bus stream, SPEC §13.4, so it would come twice)."""
    meta = schema.meta_dict()
    secs = batch.axis.astype(np.float64) * 10.0 ** schema.axis_exp
    out = []
    if meta.get("logb.can.layout") in ("raw", "raw-fd"):
        bus = schema.name
        if only_bus is not None and bus != only_bus:
            return out
        raw = batch.raw
        for t, ident, fl, code, data in zip(secs.tolist(), raw["id"].tolist(), raw["flags"].tolist(),
                                            raw["dlc"].tolist(), raw["data"]):
            fd = bool(fl & layout.FLAG_FD)
            n = 0 if fl & layout.FLAG_REMOTE else len(data) if fl & layout.FLAG_ERROR else layout.dlc_to_len(code, fd)
            out.append(Message(timestamp=t, arbitration_id=ident, is_extended_id=bool(fl & layout.FLAG_EXTENDED),
                               is_remote_frame=bool(fl & layout.FLAG_REMOTE),
                               is_error_frame=bool(fl & layout.FLAG_ERROR), is_fd=fd,
                               bitrate_switch=bool(fl & layout.FLAG_BRS),
                               error_state_indicator=bool(fl & layout.FLAG_ESI), is_rx=not fl & layout.FLAG_TX,
                               channel=bus, dlc=layout.dlc_to_len(code) if fd else code,
                               data=bytes(data[:n]), check=False))
        return out
    if meta.get("logb.can.layout") != "message":
        return out
    r = route_of(_Stream(schema))
    if r is None or not r.exact or (only_bus is not None and r.bus != only_bus):
        return out
    # under exclusive routing an exact stream holds its whole frames alone (missing == 0)
    whole = batch.raw[layout.MISSING] == 0 if layout.MISSING in batch.raw else np.ones(batch.count, bool)
    for t, data, ok in zip(secs.tolist(), batch.raw["data"], whole.tolist()):
        if ok:
            out.append(Message(timestamp=t, arbitration_id=r.can_id, is_extended_id=r.extended, channel=r.bus,
                               dlc=r.payload_len, data=bytes(data[:r.payload_len]), check=False))
    return out


class LogbBus(BusABC):
    """Receive the frames a Logb logger records, live, over its serial link."""

    def __init__(self, channel=None, from_start=False, reconnect_s=None, bus=None, **kwargs):
        from ..serial.client import Client
        from ..serial.ports import find_port

        try:
            port = find_port(channel)
            self._client = Client(port)
            self._client.connect()
        except LinkError as exc:
            raise CanOperationError(f"logb: {exc}") from None
        self.channel_info = f"Logb logger on {port}"
        self._queue = queue.Queue(_QUEUE)
        self._stop = threading.Event()
        self._bus = bus
        self._mirror = set()  # raw bus streams whose routing is mirror: per-message streams there are copies
        self.dropped = 0  # frames this bus dropped because nobody read them
        self.error = None
        self._thread = threading.Thread(target=self._follow, args=(bool(from_start), reconnect_s),
                                        name="logb-bus", daemon=True)
        super().__init__(channel=port, **kwargs)
        self._thread.start()

    def _follow(self, from_start, reconnect_s):
        from ..serial.live import follow

        try:
            follow(self._client, self._event, lambda text: log.info("%s", text), from_start=from_start,
                   reconnect_s=reconnect_s, stop=self._stop.is_set)
        except LinkError as exc:  # given up: recv() raises it
            self.error = exc
        finally:
            self._queue.put(None)

    def _event(self, ev):
        kind, schema, batch = ev
        if kind != "records":
            if kind in ("damage", "rejected"):
                log.warning("logb: %s at byte %s: %s", kind, schema, batch)
            return
        if is_raw_bus_stream(_Stream(schema)) and layout.routing_of(schema) == layout.MIRROR:
            self._mirror.add(schema.name)
        elif schema.meta_dict().get("logb.can.bus") in self._mirror:
            return  # a mirror recording's raw bus stream has these frames already (known once one is seen)
        for msg in batch_messages(schema, batch, self._bus):
            try:
                self._queue.put_nowait(msg)
            except queue.Full:
                self.dropped += 1

    def _recv_internal(self, timeout):
        try:
            msg = self._queue.get(timeout=timeout) if timeout is None or timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return None, False
        if msg is None:  # the follower ended
            self._queue.put(None)
            if self.error is not None:
                raise CanOperationError(f"logb: {self.error}")
            return None, False
        return msg, False

    def send(self, msg, timeout=None):
        raise CanOperationError("logb: a logger's serial link receives only")

    def shutdown(self):
        self._stop.set()
        self._thread.join(10)
        try:
            self._client.bye()
        finally:
            super().shutdown()

"""`logb tail`: decode a recording while the logger writes it.

`LiveDecoder` turns a byte stream that starts at a frame boundary (the file
header or a SYNC) into events as frames complete: a new writer session (its
`logb.session` META differs from the last one seen), the records of a DATA
frame (decoded against the SCHEMA bound in the current segment), damage
(logb.scan's FrameScanner, the reader's own: skipped to the next SYNC,
SPEC §10.3). `follow()` keeps a TAIL open on the
link across cable trouble and reboots: it reconnects, and after a reboot
(the device's boot id changed) or a new recording starts again from the
recording's last SYNC, so the first thing decoded is a whole segment.
"""

import struct
import time

from ..batch import decode_batch
from ..errors import LinkError, LogbError
from ..framing import FILE_HEADER_SIZE
from ..frames import DATA_HEADER_SIZE, DataHeader, Meta
from ..scan import Frame, FrameScanner, Skip, sync_frames
from ..schema import Schema
from ..tables import FrameType
from ..timebase import parse_anchor
from . import protocol as P
from .client import DeviceError, Garbled, LinkLost


class LiveDecoder:
    def __init__(self, start=0, show_from=0):
        self.reset(start, show_from)
        self.session = None
        self.sessions = 0

    def reset(self, start, show_from=0):
        """Bytes will now come from offset `start` (0, or a SYNC frame);
        DATA frames that start before `show_from` are skipped (the SCHEMA
        and session META frames before that point still count)."""
        self.show_from = show_from
        self.scanner = FrameScanner(start, recover=True)
        self.bindings = {}
        self.in_segment = False

    def feed(self, data):
        """Events for the frames `data` completes: ("session", id, meta),
        ("records", schema, batch), ("end", session, None), ("damage",
        offset, cause) for bytes skipped to the next SYNC (the causes of
        SPEC §10.2), ("rejected", offset, reason) for a CRC-valid frame that
        does not decode."""
        events = []
        for ev in self.scanner.feed(data):
            if type(ev) is Frame:
                if ev.type != FrameType.DATA or ev.offset >= self.show_from:
                    self._frame(events, ev)
            elif type(ev) is Skip:
                events.append(("damage", ev.start, ev.cause))
                if not ev.keeps_segment:  # damage resumed past in place keeps it (SPEC §10.3)
                    self.in_segment = False
                    self.bindings = {}
        return events

    def _frame(self, events, fr):
        ftype, sid, payload = fr.type, fr.stream_id, fr.data
        try:
            if ftype == FrameType.SYNC:
                self.bindings = {}
                self.in_segment = True
            elif not self.in_segment:
                return
            elif ftype == FrameType.SCHEMA and sid:
                self.bindings[sid] = Schema.decode(payload).validate()
            elif ftype == FrameType.META and not sid:
                meta = Meta.decode(payload).as_dict()
                if any(k.startswith("logb.anchor.") for k in meta):  # a GPS fix: tail dates the session by it
                    events.append(("anchor", parse_anchor(meta, fr.offset)[0], None))
                    return
                sess = meta.get("logb.session")
                if sess is not None and sess != self.session:
                    self.session = sess
                    self.sessions += 1
                    events.append(("session", sess, meta))
            elif ftype == FrameType.DATA:
                schema = self.bindings.get(sid)
                if schema is None or len(payload) < DATA_HEADER_SIZE:
                    return
                header = DataHeader.decode(payload)
                if header.record_count:
                    events.append(("records", schema, decode_batch(schema, header, payload[DATA_HEADER_SIZE:])))
            elif ftype == FrameType.END:
                events.append(("end", self.session, None))
        except (LogbError, ValueError) as exc:
            events.append(("rejected", fr.offset, str(exc)))


# ---------------------------------------------------------------- the link side
def read_bytes(cl, name, offset, length):
    """[offset, offset + length) of a recording, every message CRC-checked;
    Garbled when something arrived damaged."""
    tag = cl.read_range(name, offset, length)
    out = bytearray()
    try:
        for m in cl.stream(tag):
            if m.type == P.R_DATA:
                out += m.payload
            elif m.type == P.R_END:
                return bytes(out)
    except Garbled:
        cl.cancel()
        raise


def last_sync(cl, name, size, block=64 << 10, limit=16 << 20):
    """Offset of the recording's last CRC-valid SYNC frame (a segment start,
    SPEC §3.2), reading backwards from `size`; 0 when there is none."""
    hi = size
    while hi > FILE_HEADER_SIZE and size - hi < limit:
        lo = max(FILE_HEADER_SIZE, hi - block)
        for _ in range(4):
            try:
                data = read_bytes(cl, name, lo, min(size, hi + 64) - lo)
                break
            except Garbled:
                continue
        else:
            raise LinkError(f"{name}: the link keeps damaging the data")
        syncs = list(sync_frames(data))
        if syncs:
            return lo + syncs[-1]
        hi = lo
    return 0


def follow(cl, on_event, say, from_start=False, reconnect_s=None, stop=lambda: False, tick_timeout=3.0):
    """Tail the logger's active recording until stop() (checked at every
    message and at least every few seconds), calling on_event(event) for
    each LiveDecoder event and say(text) for link news."""
    dec = LiveDecoder()
    name, pos, boot = None, 0, None
    waiting = False
    while not stop():
        if cl.ser is None:  # LinkLost propagates when reconnecting gives up
            cl.reconnect(float("inf") if reconnect_s is None else reconnect_s, say)
        try:
            hello = cl.hello if cl.hello and not waiting else cl.connect()
            if not hello.recording:
                if not waiting:
                    say("the logger is not recording; waiting for a recording")
                waiting = True
                time.sleep(0.5)
                continue
            waiting = False
            size = cl.stat(hello.recording).size
            if hello.boot == boot and hello.recording == name and pos <= size:
                start = pos  # the same recording, still growing: carry on where we were
            else:
                if boot is not None and hello.boot != boot:
                    say("the logger restarted")
                name, boot = hello.recording, hello.boot
                start = 0 if from_start else last_sync(cl, name, size)
                dec.reset(start, 0 if from_start else size)
                say(f"following {name} from byte {start} ({size} bytes recorded)")
            pos = start
            tag = cl.tail(name, start)
            try:
                for m in cl.stream(tag, tick_timeout):
                    if m.type == P.R_DATA:
                        pos += len(m.payload)
                        for ev in dec.feed(m.payload):
                            on_event(ev)
                    elif m.type == P.R_TICK:
                        now_size, _flags = struct.unpack_from("<QB", m.payload, 0)
                        if now_size < pos:
                            say(f"{name} is shorter than before: starting over")
                            boot = None
                            cl.cancel()
                            break
                    elif m.type == P.R_END:
                        say(f"{name} was closed by the logger")
                        cl.hello = None
                        waiting = True
                        name = None
                        break
                    if stop():
                        break
            except Garbled as exc:
                say(f"{exc} at byte {pos}: asking again from there")
                cl.cancel()
        except LinkLost as exc:
            say(f"link lost ({exc}); reconnecting")
            cl.close()
            cl.hello = None
        except (DeviceError, Garbled) as exc:
            say(str(exc))
            cl.hello = None
            time.sleep(0.5)

"""`logb tail`: decode a recording while the logger writes it.

`LiveDecoder` turns a byte stream that starts at a frame boundary (the file
header or a SYNC) into events as frames complete: a new writer session (its
`logb.session` META differs from the last one seen), the records of a DATA
frame (decoded against the SCHEMA bound in the current segment), damage
(skipped to the next SYNC, SPEC §10.3). `follow()` keeps a TAIL open on the
link across cable trouble and reboots: it reconnects, and after a reboot
(the device's boot id changed) or a new recording starts again from the
recording's last SYNC, so the first thing decoded is a whole segment.
"""

import struct
import time

from ..batch import decode_batch
from ..crc import crc32c
from ..errors import LogbError
from ..framing import FILE_HEADER_SIZE, FRAME_HEADER, FRAME_OVERHEAD, SYNC_PATTERN, frame_crc_ok
from ..records import DATA_HEADER_SIZE, DataHeader, Meta
from ..schema import Schema
from ..tables import FrameType
from . import protocol as P
from .client import DeviceError, LinkError, LinkLost, parse_end


class LiveDecoder:
    def __init__(self, start=0, show_from=0):
        self.reset(start, show_from)
        self.session = None
        self.sessions = 0

    def reset(self, start, show_from=0):
        """Bytes will now come from offset `start` (0, or a SYNC frame);
        DATA frames that start before `show_from` are skipped (the SCHEMA
        and session META frames before that point still count)."""
        self.pos = start
        self.show_from = show_from
        self.buf = bytearray()
        self.bindings = {}
        self.in_segment = False
        self._resync = False

    def feed(self, data):
        """Events for the frames `data` completes: ("session", id, meta),
        ("records", schema, batch), ("damage", offset, cause)."""
        self.buf += data
        buf = self.buf
        n = len(buf)
        i = 0
        events = []
        if self.pos == 0:
            if n < FILE_HEADER_SIZE:
                return events
            i = FILE_HEADER_SIZE
        while True:
            if self._resync:
                x = bytes(buf[i + 8:]).find(SYNC_PATTERN) if n - i > 8 else -1
                if x < 0:
                    i = max(i, n - 8 - len(SYNC_PATTERN) + 1)
                    break
                i += x
                self._resync = False
            if n - i < 8:
                break
            plen, ftype, _flags, sid = FRAME_HEADER.unpack_from(buf, i)
            end = i + FRAME_OVERHEAD + plen
            if plen > 1 << 26:
                self._damage(events, i, "implausible length")
                i += 1
                continue
            if end > n:
                break
            if not frame_crc_ok(buf, i, plen):
                self._damage(events, i, "crc mismatch")
                i += 1
                continue
            if ftype != FrameType.DATA or self.pos + i >= self.show_from:
                self._frame(events, ftype, sid, bytes(buf[i + 8:i + 8 + plen]))
            i = end
        self.pos += i
        del buf[:i]
        return events

    def _damage(self, events, i, cause):
        if not self._resync:
            events.append(("damage", self.pos + i, cause))
        self._resync = True
        self.in_segment = False
        self.bindings = {}

    def _frame(self, events, ftype, sid, payload):
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
            events.append(("damage", self.pos, f"undecodable frame: {exc}"))


# ---------------------------------------------------------------- the link side
def read_bytes(cl, name, offset, length):
    """[offset, offset + length) of a recording, every message CRC-checked."""
    tag = cl.read_range(name, offset, length)
    out, run = bytearray(), 0
    while True:
        m = cl.recv()
        if m is None:
            raise LinkLost("no data from the device")
        if m.tag != tag:
            continue
        if m.type == P.R_DATA:
            run = crc32c(m.payload, run)
            if run != m.crc:
                cl.parser.reject_last()
                cl.cancel()
                raise _Damaged()
            out += m.payload
        elif m.type == P.R_END:
            _off, count, crc, _status = parse_end(m.payload)
            if count != len(out) or crc != run:
                raise _Damaged()
            return bytes(out)
        elif m.type == P.R_ERR:
            code, = struct.unpack_from("<H", m.payload, 0)
            if code in (P.E_CRC, P.E_BUSY):
                raise _Damaged()
            raise DeviceError(code, P.unpack_str(m.payload, 2)[0])


class _Damaged(Exception):
    pass


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
            except _Damaged:
                continue
        else:
            raise LinkError(f"{name}: the link keeps damaging the data")
        x = len(data)
        while True:
            x = data.rfind(SYNC_PATTERN, 0, x)
            if x < 0:
                break
            q = x - 8
            if q >= 0 and q + 8 <= len(data):
                plen = FRAME_HEADER.unpack_from(data, q)[0]
                if q + FRAME_OVERHEAD + plen <= len(data) and frame_crc_ok(data, q, plen):
                    return lo + q
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
            run = 0
            while not stop():
                m = cl.recv(tick_timeout)
                if m is None:
                    raise LinkLost("the logger stopped answering")
                if m.tag != tag:
                    continue
                if m.type == P.R_DATA:
                    c = crc32c(m.payload, run)
                    if c != m.crc:
                        cl.parser.reject_last()
                        say(f"damaged data at byte {pos}: asking again from there")
                        cl.cancel()
                        break
                    run = c
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
                elif m.type == P.R_ERR:
                    code, = struct.unpack_from("<H", m.payload, 0)
                    if code in (P.E_CRC, P.E_BUSY):
                        break  # the TAIL request arrived damaged: ask again
                    raise DeviceError(code, P.unpack_str(m.payload, 2)[0])
        except LinkLost as exc:
            say(f"link lost ({exc}); reconnecting")
            cl.close()
            cl.hello = None
        except DeviceError as exc:
            say(str(exc))
            cl.hello = None
            time.sleep(0.5)

"""The device side of the Logb serial link (docs/LINK.md): list, pull, tail
and delete recordings over the USB serial port while the logger records.

    rec = link.Recorder(open("/sd/rec-0007.logb", "wb"), "rec-0007.logb")
    w = logb.Writer(rec, device="van-7")         # the writer writes through it
    ln = link.Link(link.StdioPort(), link.VfsStorage("/sd", rec), device="van-7")
    while True:
        ... w.append_can(...) ...
        w.poll()
        ln.poll()                                 # bounded work, never blocks

The port stays a console until the host sends the escape sequence
(`ESCAPE`); the link then speaks binary messages (12-byte header with its own
CRC-32C, payload, CRC-32C) until BYE or `idle_s` without a request, and gives
the port back. While in link mode Ctrl-C is disabled (`kbd_intr(-1)`), so
binary bytes cannot interrupt the logger; it is restored on leaving.

Bounded work: one `poll()` does at most one port read (into a fixed
`RX`-byte buffer), parses what it holds, and moves at most one message of at
most `chunk` payload bytes (one storage read, one CRC pass, one port write).
RAM is fixed at construction: the receive buffer, a transmit buffer of
`chunk + 16` bytes, a queue of at most `QUEUE` requests.

Runs under MicroPython and CPython (tests, tools/bench_pull.py).
"""

from array import array
from struct import pack_into, unpack_from

from . import crc as _crc
from ._port import MICROPYTHON, random_bytes, ticks_diff, ticks_us

try:
    from micropython import const
except ImportError:  # CPython
    from ._const import const

VERSION = const(1)
MAGIC0 = const(0xA7)
MAGIC1 = const(0x4C)  # "L"
HEAD = const(12)  # magic (2), type, tag, payload length (u32), header CRC (u32)
ESCAPE = b"\x1b[LOGB-LINK]"
RX = const(512)
MAX_REQUEST = const(496)  # RX - HEAD - 4
QUEUE = const(4)

# requests (host -> device)
T_HELLO = const(0x01)
T_PING = const(0x02)
T_LIST = const(0x03)
T_STAT = const(0x04)
T_READ = const(0x05)
T_TAIL = const(0x06)
T_HASH = const(0x07)
T_DELETE = const(0x08)
T_CANCEL = const(0x09)
T_BYE = const(0x0A)
# responses (device -> host)
R_HELLO = const(0x81)
R_LIST = const(0x82)
R_STAT = const(0x83)
R_DATA = const(0x84)
R_END = const(0x85)
R_TICK = const(0x86)
R_HASH = const(0x87)
R_OK = const(0x88)
R_ERR = const(0x8F)
# ERR codes
E_REQUEST = const(1)
E_NOENT = const(2)
E_BUSY = const(3)
E_REFUSED = const(4)
E_MISMATCH = const(5)
E_IO = const(6)
E_CRC = const(7)
# END / HASH status
S_COMPLETE = const(0)
S_SHORT = const(1)
S_CLOSED = const(2)
# file flags in LIST / STAT / TICK
F_ACTIVE = const(1)

_TEXT = const(0)
_LINK = const(1)
_J_NONE = const(0)
_J_READ = const(1)
_J_TAIL = const(2)
_J_HASH = const(3)
_J_DELETE = const(4)


class Recorder:
    """Wraps the writer's sink: counts the bytes handed over and, at every
    `flush()` (the writer's durability point, after a frame or a SYNC), notes
    how many are durable. The link reads the recording only up to there, so
    a file that is still growing is served up to a frame boundary. Call
    `close()` after `Writer.close()`: the file is then no longer active."""

    def __init__(self, sink, name):
        self.sink = sink
        self.name = name
        self.active = True
        self._hi = 0  # bytes written, hi * 2**24 + lo (no big ints on 32-bit ports)
        self._lo = 0
        self._dhi = 0
        self._dlo = 0
        try:
            sink.write(b"", 0, 0)
            self._w3 = True
        except TypeError:
            self._w3 = False

    def write(self, buf, off=0, n=-1):
        if n < 0:
            n = len(buf) - off
        if self._w3:
            r = self.sink.write(buf, off, n)
        else:
            r = self.sink.write(memoryview(buf)[off:off + n])
        lo = self._lo + n
        if lo >= 0x1000000:
            self._hi += lo >> 24
            lo &= 0xFFFFFF
        self._lo = lo
        return r

    def flush(self):
        f = getattr(self.sink, "flush", None)
        if f is not None:
            f()
        self._dhi = self._hi
        self._dlo = self._lo

    def durable(self):
        """Bytes of the recording that were flushed (a frame boundary)."""
        return self._dhi * 0x1000000 + self._dlo

    def close(self):
        self.flush()
        c = getattr(self.sink, "close", None)
        if c is not None:
            c()
        self.active = False


class VfsStorage:
    """Recordings as files in one directory of a VFS (FAT on SD, littlefs)."""

    def __init__(self, root, recorder=None, suffix=".logb"):
        self.root = root.rstrip("/")
        self.recorder = recorder
        self.suffix = suffix
        self._buf = None
        self._off = -1
        self._mv = None

    def _path(self, name):
        return self.root + "/" + name

    def names(self):
        import os

        return sorted(n for n in os.listdir(self.root) if n.endswith(self.suffix))

    def active(self, name):
        r = self.recorder
        return r is not None and r.active and r.name == name

    def recording(self):
        r = self.recorder
        return r.name if r is not None and r.active else ""

    def size(self, name):
        """Readable bytes; -1 when there is no such file."""
        if self.active(name):
            return self.recorder.durable()  # type: ignore[union-attr]
        import os

        try:
            return os.stat(self._path(name))[6]
        except OSError:
            return -1

    def open(self, name):
        return [open(self._path(name), "rb"), name]

    def close(self, h):
        try:
            h[0].close()
        except OSError:
            pass

    def readinto(self, h, pos, buf, off, n):
        """Read up to n bytes at file offset pos into buf[off:]."""
        if buf is not self._buf or off != self._off:
            self._buf = buf
            self._off = off
            self._mv = memoryview(buf)[off:]
        mv = self._mv
        assert mv is not None
        f = h[0]
        f.seek(pos)
        got = f.readinto(mv, n) if MICROPYTHON else f.readinto(mv[:n])
        if (got or 0) < n and self.active(h[1]):
            # FAT caches a file's size per handle: reopen to see what the writer appended since
            f.close()
            f = h[0] = open(self._path(h[1]), "rb")
            f.seek(pos)
            got = f.readinto(mv, n) if MICROPYTHON else f.readinto(mv[:n])
        return got or 0

    def remove(self, name):
        import os

        os.remove(self._path(name))


class FdPort:
    """A non-blocking file descriptor (a tty) as the link's port (CPython)."""

    def __init__(self, fd):
        import os

        self.fd = fd
        self._os = os
        os.set_blocking(fd, False)

    def readinto(self, buf, off, n):
        try:
            data = self._os.read(self.fd, n)
        except BlockingIOError:
            return 0
        if not data:
            raise OSError(5, "port closed")
        buf[off:off + len(data)] = data
        return len(data)

    def write(self, buf, off, n):
        try:
            return self._os.write(self.fd, memoryview(buf)[off:off + n])
        except BlockingIOError:
            return 0


class StreamPort:
    """A MicroPython stream with any(), readinto(buf, n) and a non-blocking
    write(): machine.UART(timeout=0), pyb.USB_VCP, usb.device.cdc."""

    def __init__(self, stream):
        self.s = stream

    def readinto(self, buf, off, n):
        k = self.s.any()
        if not k:
            return 0
        return self.s.readinto(memoryview(buf)[off:off + n], min(k, n)) or 0

    def write(self, buf, off, n):
        return self.s.write(memoryview(buf)[off:off + n]) or 0


class StdioPort:
    """The REPL's own port (sys.stdin / sys.stdout, the USB CDC on most
    boards). Reads are polled a byte at a time (requests are small); writes
    go to sys.stdout.buffer and may block for the port's own timeout when the
    host stops reading."""

    def __init__(self):
        import select
        import sys

        self._in = sys.stdin.buffer
        self._out = sys.stdout.buffer
        self._poll = select.poll()
        self._poll.register(sys.stdin, select.POLLIN)

    def readinto(self, buf, off, n):
        k = 0
        while k < n and self._poll.poll(0):
            b = self._in.read(1)
            if not b:
                break
            buf[off + k] = b[0]
            k += 1
        return k

    def write(self, buf, off, n):
        return self._out.write(memoryview(buf)[off:off + n]) or 0


def _kbd(on):
    try:
        import micropython

        micropython.kbd_intr(3 if on else -1)  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        pass


class Link:
    """The protocol engine. `port`: readinto(buf, off, n) / write(buf, off, n),
    both non-blocking, returning byte counts (OSError: the host is gone).
    `storage`: VfsStorage or anything with its methods."""

    def __init__(self, port, storage, device="", firmware="", chunk=2048, crc=None, idle_s=10, tick_ms=500,
                 kbd=True):
        if not 512 <= chunk <= 1 << 20:
            raise ValueError("chunk must be 512..1048576")
        self.port = port
        self.storage = storage
        self.device = device
        self.firmware = firmware
        self.chunk = chunk
        self._crc = crc or _crc.update
        self._idle = idle_s * 1000000
        self._tick = tick_ms * 1000
        self._kbd = kbd
        self.boot = int.from_bytes(random_bytes(4), "little") & 0x3FFFFFFF
        self.rx = bytearray(RX)
        self._rxn = 0
        self.tx = bytearray(HEAD + chunk + 4)
        self._txp = 0
        self._txn = 0
        self._hs = _crc.state()  # header / control-message CRC register
        self._st = _crc.state()  # the current job's running CRC register
        self.mode = _TEXT
        self._esc = 0
        self._queue = []  # type: list
        self._pong = -1
        self._leave = False
        self._last = ticks_us()  # last valid request
        self._stale = 0  # ticks when a partial request started waiting
        self._job = _J_NONE
        self._jtag = 0
        self._jname = ""
        self._jh = None  # type: object
        self._jpos = 0
        self._jstart = 0
        self._jend = 0
        self._jcrc = 0
        self._jtick = 0
        self._jsize = 0
        self.requests = 0  # counters, for tests and status displays
        self.bad = 0

    # ------------------------------------------------------------ main loop
    @property
    def active(self):
        """True while a host holds the port in link mode (do not print then)."""
        return self.mode == _LINK

    @property
    def sending(self):
        """True while a message waits for room in the port (a loop with
        nothing else to do may wait for the port to take bytes)."""
        return self._txp < self._txn

    def poll(self):
        """Do one bounded step. Returns True when there was something to do."""
        busy = False
        try:
            if self._txp < self._txn:
                busy = self._flush_tx()
            free = RX - self._rxn
            if free:
                k = self.port.readinto(self.rx, self._rxn, free)
                if k:
                    if not self._rxn:
                        self._stale = ticks_us()
                    self._rxn += k
                    self._parse()
                    busy = True
                elif self._rxn and ticks_diff(ticks_us(), self._stale) > 1000000:
                    # a partial request for 1 s: a byte was lost or garbled; rescan from the next one
                    self._rxn -= 1
                    self.rx[0:self._rxn] = self.rx[1:self._rxn + 1]
                    self._stale = ticks_us()
                    self._parse()
            if self._txp >= self._txn:
                if self._leave:
                    self._leave = False
                    self._text_mode()
                elif self._step():
                    busy = True
                    self._flush_tx()
        except OSError:
            self._reset()
            self._txp = self._txn = 0
            self._rxn = 0
            if self.mode == _LINK:
                self._text_mode()
            return False
        return busy

    def serve(self, stop=None):
        """Serve until `stop()` returns True (a board with no logger running)."""
        import time

        nap = getattr(time, "sleep_ms", None)
        while stop is None or not stop():
            if not self.poll() and not self.sending:
                if nap is not None:
                    nap(1)
                else:
                    time.sleep(0.001)

    def _flush_tx(self):
        k = self.port.write(self.tx, self._txp, self._txn - self._txp)
        if k:
            self._txp += k
            return True
        return False

    # ------------------------------------------------------------ modes
    def _link_mode(self):
        if self._kbd:
            _kbd(False)
        self.mode = _LINK
        self._reset()
        self._last = ticks_us()
        self._queue.append((T_HELLO, 0, "", 0, 0))

    def _text_mode(self):
        self._reset()
        self.mode = _TEXT
        self._esc = 0
        if self._kbd:
            _kbd(True)

    def _reset(self):
        """Drop the current job and every queued request."""
        self._end_job()
        self._queue.clear()
        self._pong = -1
        self._leave = False

    def _end_job(self):
        if self._jh is not None:
            self.storage.close(self._jh)
            self._jh = None
        self._job = _J_NONE

    # ------------------------------------------------------------ receiving
    def _escape(self, b):
        """Feed one non-message byte to the escape matcher; True when it completes."""
        i = self._esc
        if b == ESCAPE[i]:
            i += 1
            if i == len(ESCAPE):
                self._esc = 0
                return True
            self._esc = i
            return False
        self._esc = 1 if b == ESCAPE[0] else 0
        return False

    def _parse(self):
        rx = self.rx
        n = self._rxn
        i = 0
        while i < n:
            b = rx[i]
            if self.mode != _LINK or b != MAGIC0:
                if self._escape(b):
                    self._link_mode()
                i += 1
                continue
            if n - i < HEAD:
                break
            if rx[i + 1] != MAGIC1 or not self._crc_ok(rx, i, 8, i + 8):
                self._escape(b)
                i += 1
                continue
            ln = unpack_from("<I", rx, i + 4)[0]
            if ln > MAX_REQUEST:
                self.bad += 1
                i += HEAD  # the header was genuine: its payload follows as noise
                continue
            if n - i < HEAD + 4 + ln:
                break
            typ = rx[i + 2]
            tag = rx[i + 3]
            if not self._crc_ok(rx, i + HEAD, ln, i + HEAD + ln):
                self.bad += 1
                self._queue_err(tag, E_CRC, "request CRC")
                i += 1
                continue
            self._request(typ, tag, i + HEAD, ln)
            i += HEAD + 4 + ln
        if i:
            rx[0:n - i] = rx[i:n]
            self._rxn = n - i
            self._stale = ticks_us()

    def _crc_ok(self, buf, start, n, at):
        st = self._hs
        _crc.begin(st)
        self._crc(buf, start, start + n, st)
        lo = st[0] ^ 0xFFFFFF
        return (buf[at] == lo & 0xFF and buf[at + 1] == (lo >> 8) & 0xFF and buf[at + 2] == lo >> 16
                and buf[at + 3] == st[1] ^ 0xFF)

    def _request(self, typ, tag, p, ln):
        self.requests += 1
        self._last = ticks_us()
        rx = self.rx
        if typ == T_PING:
            self._pong = tag
            return
        if typ == T_CANCEL:
            self._reset()
            self._queue.append((R_OK, tag, "", 0, 0))
            return
        if typ == T_HELLO or typ == T_LIST or typ == T_BYE:
            a = unpack_from("<I", rx, p)[0] if typ == T_LIST and ln >= 4 else 0
            self._enqueue((typ, tag, "", a, 0))
            return
        try:
            if typ == T_STAT:
                self._enqueue((typ, tag, self._name(p, ln, 0), 0, 0))
            elif typ == T_READ or typ == T_HASH:
                off, count = unpack_from("<QQ", rx, p)
                self._enqueue((typ, tag, self._name(p, ln, 16), off, count))
            elif typ == T_TAIL:
                off = unpack_from("<Q", rx, p)[0]
                self._enqueue((typ, tag, self._name(p, ln, 8, True), off, 0))
            elif typ == T_DELETE:
                size, crc = unpack_from("<QI", rx, p)
                self._enqueue((typ, tag, self._name(p, ln, 12), size, crc))
            else:
                self._queue_err(tag, E_REQUEST, "unknown request")
        except (ValueError, IndexError, UnicodeError):
            self._queue_err(tag, E_REQUEST, "malformed request")

    def _name(self, p, ln, at, empty_ok=False):
        if ln < at + 2:
            raise ValueError
        k = unpack_from("<H", self.rx, p + at)[0]
        if at + 2 + k != ln:
            raise ValueError
        name = bytes(self.rx[p + at + 2:p + at + 2 + k]).decode()
        if (not name and not empty_ok) or "/" in name or "\\" in name or name in (".", ".."):
            raise ValueError
        return name

    def _enqueue(self, req):
        if len(self._queue) >= QUEUE:
            self._queue_err(req[1], E_BUSY, "queue full")
            return
        self._queue.append(req)

    def _queue_err(self, tag, code, msg):
        if len(self._queue) < 2 * QUEUE:  # bounded: a flood of bad requests loses answers (the host retries)
            self._queue.append((R_ERR, tag, msg, code, 0))

    # ------------------------------------------------------------ sending
    def _seal(self, typ, tag, n, st=None):
        """Finish the message whose payload is tx[HEAD:HEAD+n] and queue it for the port.
        The payload CRC starts fresh, or continues the register `st` (DATA)."""
        tx = self.tx
        if st is None:
            st = self._hs
            _crc.begin(st)
        self._crc(tx, HEAD, HEAD + n, st)
        _crc.store(st, tx, HEAD + n)
        pack_into("<BBBBI", tx, 0, MAGIC0, MAGIC1, typ, tag, n)
        hs = self._hs
        _crc.begin(hs)
        self._crc(tx, 0, 8, hs)
        _crc.store(hs, tx, 8)
        self._txp = 0
        self._txn = HEAD + n + 4

    def _put_str(self, at, s, limit=64):
        b = s.encode()[:limit]
        pack_into("<H", self.tx, HEAD + at, len(b))
        self.tx[HEAD + at + 2:HEAD + at + 2 + len(b)] = b
        return at + 2 + len(b)

    def _send_err(self, tag, code, msg):
        pack_into("<H", self.tx, HEAD, code)
        self._seal(R_ERR, tag, self._put_str(2, msg))

    def _step(self):
        """Build the next message, if any. True when one was built."""
        if self.mode != _LINK:
            return False
        if self._pong >= 0:
            self._seal(R_OK, self._pong, 0)
            self._pong = -1
            return True
        if self._job != _J_NONE:
            return self._advance()
        if self._queue:
            return self._start(self._queue.pop(0))
        if ticks_diff(ticks_us(), self._last) > self._idle:
            self._text_mode()  # the host went away without BYE
        return False

    def _start(self, req):
        typ, tag, name, a, b = req
        st = self.storage
        if typ == R_OK:
            self._seal(R_OK, tag, 0)
        elif typ == R_ERR:
            self._send_err(tag, a, name)
        elif typ == T_HELLO:
            pack_into("<HHII", self.tx, HEAD, VERSION, F_ACTIVE if st.recording() else 0, self.chunk, self.boot)
            p = self._put_str(12, self.device)
            p = self._put_str(p, self.firmware)
            self._seal(R_HELLO, tag, self._put_str(p, st.recording(), 255))
        elif typ == T_BYE:
            self._seal(R_OK, tag, 0)
            self._leave = True
        elif typ == T_LIST:
            self._list(tag, a)
        elif typ == T_STAT:
            size = st.size(name)
            if size < 0:
                self._send_err(tag, E_NOENT, "no such recording")
            else:
                pack_into("<QB", self.tx, HEAD, size, F_ACTIVE if st.active(name) else 0)
                self._seal(R_STAT, tag, 9)
        else:  # READ, TAIL, HASH, DELETE: a job
            if not name:
                name = st.recording()
            size = st.size(name) if name else -1
            if size < 0:
                self._send_err(tag, E_NOENT, "no such recording")
                return True
            if typ == T_DELETE:
                if st.active(name):
                    self._send_err(tag, E_REFUSED, "the logger is recording this file")
                    return True
                if size != a:
                    self._send_err(tag, E_MISMATCH, "size differs: not deleted")
                    return True
                a, self._jcrc = 0, b
                b = size
            try:
                self._jh = st.open(name)
            except OSError:
                self._send_err(tag, E_IO, "cannot open")
                return True
            self._job = {T_READ: _J_READ, T_TAIL: _J_TAIL, T_HASH: _J_HASH, T_DELETE: _J_DELETE}[typ]
            self._jtag = tag
            self._jname = name
            self._jpos = self._jstart = a
            self._jend = a + b if typ != T_TAIL else -1
            self._jsize = size
            self._jtick = ticks_us()
            _crc.begin(self._st)
            return self._advance()
        return True

    def _list(self, tag, start):
        st = self.storage
        names = st.names()
        pack_into("<II", self.tx, HEAD, len(names), start)
        p = 10
        count = 0
        for name in names[start:]:
            b = name.encode()
            if p + 11 + len(b) > self.chunk or count == 0xFFFF:
                break
            size = st.size(name)
            pack_into("<QB", self.tx, HEAD + p, max(size, 0), F_ACTIVE if st.active(name) else 0)
            p = self._put_str(p + 9, name, 255)
            count += 1
        pack_into("<H", self.tx, HEAD + 8, count)
        self._seal(R_LIST, tag, p)

    def _advance(self):
        """One step of the current job: at most one storage read of `chunk` bytes."""
        job = self._job
        st = self.storage
        pos = self._jpos
        avail = st.size(self._jname) if st.active(self._jname) else self._jsize
        if job == _J_TAIL:
            end = avail
        else:
            end = self._jend if avail > self._jend else avail
        n = end - pos
        if n > self.chunk:
            n = self.chunk
        got = 0
        if n > 0:
            try:
                got = st.readinto(self._jh, pos, self.tx, HEAD, n)
            except OSError:
                self._end_job()
                self._send_err(self._jtag, E_IO, "read error")
                return True
        if got > 0:
            self._jpos = pos + got
            if job == _J_READ or job == _J_TAIL:
                self._seal(R_DATA, self._jtag, got, self._st)
                self._jtick = ticks_us()
                return True
            self._crc(self.tx, HEAD, HEAD + got, self._st)  # HASH / DELETE: no message yet ...
            if ticks_diff(ticks_us(), self._jtick) >= self._tick:  # ... but a sign of life
                self._jtick = ticks_us()
                pack_into("<QB", self.tx, HEAD, pos + got, 0)
                self._seal(R_TICK, self._jtag, 9)
            return True
        if job == _J_TAIL:
            if st.active(self._jname):
                if ticks_diff(ticks_us(), self._jtick) < self._tick:
                    return False
                self._jtick = ticks_us()
                pack_into("<QB", self.tx, HEAD, avail, F_ACTIVE)
                self._seal(R_TICK, self._jtag, 9)
                return True
            status = S_CLOSED
        else:
            status = S_COMPLETE if pos == self._jend else S_SHORT
        count = pos - self._jstart
        lo = self._st[0] ^ 0xFFFFFF
        crc = ((self._st[1] ^ 0xFF) << 24) | lo
        tag = self._jtag
        if job == _J_DELETE:
            name = self._jname
            self._end_job()
            if status != S_COMPLETE or crc != self._jcrc:
                self._send_err(tag, E_MISMATCH, "CRC differs: not deleted")
                return True
            try:
                st.remove(name)
            except OSError:
                self._send_err(tag, E_IO, "remove failed")
                return True
            self._seal(R_OK, tag, 0)
            return True
        self._end_job()
        pack_into("<QQIB", self.tx, HEAD, self._jstart, count, crc, status)
        self._seal(R_HASH if job == _J_HASH else R_END, tag, 21)
        return True

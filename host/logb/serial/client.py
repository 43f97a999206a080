"""The host end of the Logb serial link (docs/LINK.md) over pyserial.

`Client(port).connect()` opens the port, sends the escape sequence that
switches the logger's console into link mode and waits for its HELLO; the
request helpers then each send one message and wait for the answer that
carries its tag, skipping stale answers to earlier requests; `stream()`
receives what a READ or TAIL sends, every DATA message checked against the
stream's running CRC. Every failure is a `logb.errors.LinkError` subclass
with a message meant for the user.
"""

import os
import select
import struct
import time
from dataclasses import dataclass

from ..crc import crc32c
from ..errors import LinkError
from . import protocol as P

PING_EVERY = 2.0  # the device leaves link mode after idle_s (10 s) without a request


class LinkLost(LinkError):
    """The port went away, or the device stopped answering (worth reconnecting)."""


class Stalled(LinkLost):
    """A stream sent nothing for its timeout (asking again may do, before reconnecting)."""


class Garbled(LinkError):
    """A stream's data, its END or its request arrived damaged: ask again from the last good byte."""


class DeviceError(LinkError):
    def __init__(self, code, message):
        super().__init__(f"device: {P.ERROR_NAMES.get(code, code)}: {message}")
        self.code = code


@dataclass
class Hello:
    version: int
    flags: int
    max_payload: int
    boot: int
    device: str
    firmware: str
    recording: str

    @classmethod
    def parse(cls, p):
        version, flags, max_payload, boot = struct.unpack_from("<HHII", p, 0)
        device, pos = P.unpack_str(p, 12)
        firmware, pos = P.unpack_str(p, pos)
        recording, pos = P.unpack_str(p, pos)
        return cls(version, flags, max_payload, boot, device, firmware, recording)


@dataclass
class Entry:
    name: str
    size: int
    active: bool  # the logger is recording it: `size` is its durable (flushed) part


def _serial():
    try:
        import serial
    except ImportError:
        raise LinkError("the serial link needs pyserial: pip install pyserial") from None
    return serial


class Client:
    def __init__(self, port, timeout=3.0, hello_timeout=1.0):
        self.port = port
        self.timeout = timeout
        self.hello_timeout = hello_timeout
        self.ser = None
        self.parser = P.Parser()
        self.hello = None
        self._fd = None
        self._tag = 0
        self._sent = 0.0
        self._rx_at = 0.0

    # ------------------------------------------------------------ port
    def open(self):
        serial = _serial()
        self.close()
        try:
            self.ser = serial.Serial(self.port, baudrate=115200, timeout=0.05, write_timeout=self.timeout)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise LinkLost(f"cannot open {self.port}: {exc}") from None
        # pyserial's POSIX port is a file descriptor: it is read straight into the parser's buffer,
        # one system call per read instead of in_waiting + select + read and a copy
        self._fd = self.ser.fileno() if os.name == "posix" else None
        if self._fd is not None:
            os.set_blocking(self._fd, False)
        self.parser = P.Parser()

    def close(self):
        if self.ser is not None:
            try:
                self.ser.close()
            except Exception:  # noqa: BLE001 - closing a port that is gone
                pass
            self.ser = None
            self._fd = None

    def _write(self, data):
        if self.ser is None:
            raise LinkLost(f"{self.port} is not open")
        try:
            self.ser.write(data)
        except Exception as exc:  # SerialException, SerialTimeoutException, OSError
            raise LinkLost(f"{self.port}: write failed: {exc}") from None
        self._sent = time.monotonic()

    def read_some(self):
        """Read whatever bytes have arrived into the parser (waits up to 50
        ms for the first); returns how many."""
        if self.ser is None:
            raise LinkLost(f"{self.port} is not open")
        try:
            with self.parser.room() as view:
                n = self._read_into(view)
        except LinkLost:
            self.close()
            raise
        except Exception as exc:  # SerialException (disconnected), OSError
            self.close()
            raise LinkLost(f"{self.port}: {exc}") from None
        if n:
            self.parser.filled(n)
            self._rx_at = time.monotonic()
        return n

    def _read_into(self, view):
        fd = self._fd
        if fd is None:
            data = self.ser.read(min(self.ser.in_waiting, len(view)) or 1)
            view[:len(data)] = data
            return len(data)
        n = _readv(fd, view)  # nothing waiting: 0 (pyserial's tty has VMIN 0) or EAGAIN
        if n:
            return n
        if not select.select([fd], [], [], 0.05)[0]:
            return 0
        n = _readv(fd, view)
        if not n:  # readable, yet nothing: the far end is gone (as pyserial reads it)
            raise LinkLost(f"{self.port}: the port reports data but returned none (disconnected?)")
        return n

    # ------------------------------------------------------------ messages
    def send(self, typ, payload=b""):
        self._tag = self._tag % 255 + 1
        self._write(P.encode(typ, self._tag, payload))
        return self._tag

    def ping_if_due(self):
        if time.monotonic() - self._sent > PING_EVERY:
            self.send(P.T_PING)

    def recv(self, timeout=None):
        """The next message, or None after `timeout` seconds without one.
        A message whose rest does not arrive within the timeout is given up
        (the parser rescans after its first byte)."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            m = self.parser.next()
            if m is not None:
                return m
            now = time.monotonic()
            if self.parser.pending() and now - self._rx_at > min(timeout, 1.0):
                self.parser.skip_one()  # a damaged length is waiting for bytes that never come
                continue
            if now >= deadline:
                return None
            self.ping_if_due()
            self.read_some()

    def stream(self, tag, timeout=None):
        """The messages answering the READ or TAIL sent as `tag`, in order:
        each DATA message once it matches the stream's running CRC-32C (its
        `crc` is then the device's CRC of the stream so far), TICKs, and the
        END, once its count and CRC match what came. Raises Garbled on any
        damage (the caller asks again), DeviceError for any other ERR, and
        Stalled after `timeout` seconds without a message of this stream."""
        wait = self.timeout if timeout is None else timeout
        run = count = 0
        deadline = time.monotonic() + wait
        while True:
            # Only this stream's messages keep it alive: another stream still running
            # (a TAIL that a BYE queues behind) must not hold off the timeout forever.
            m = self.recv(max(0.0, deadline - time.monotonic()))
            if m is None:
                raise Stalled(f"no data for {wait:.0f} s")
            if m.tag != tag:
                continue  # an answer to an earlier request
            deadline = time.monotonic() + wait
            if m.type == P.R_DATA:
                run = crc32c(m.payload, run)
                if run != m.crc:
                    self.parser.reject_last()
                    raise Garbled("a damaged message")
                count += len(m.payload)
            elif m.type == P.R_END:
                _off, n, crc, _status = parse_end(m.payload)
                if n != count or crc != run:
                    raise Garbled("END disagrees with the data received")
            elif m.type == P.R_ERR:
                code, = struct.unpack_from("<H", m.payload, 0)
                if code in (P.E_CRC, P.E_BUSY):  # the device did nothing
                    raise Garbled(f"the device could not take the request ({P.ERROR_NAMES[code]})")
                raise DeviceError(code, P.unpack_str(m.payload, 2)[0])
            yield m

    def call(self, typ, payload=b"", timeout=None, attempts=3):
        """Send a request, return its answer (an ERR raises DeviceError). A
        request the device got damaged or had no room for (Garbled), or that
        nothing answers within the timeout, is sent again, up to `attempts` times."""
        timeout = self.timeout if timeout is None else timeout
        for attempt in range(attempts):
            last = attempt == attempts - 1
            tag = self.send(typ, payload)
            try:
                for m in self.stream(tag, timeout):
                    if m.type != P.R_TICK:  # a TICK: a long HASH / DELETE is under way
                        return m
            except Stalled:
                if last:
                    raise LinkLost(f"{self.port}: no answer from the device within {timeout:.0f} s") from None
            except Garbled:
                if last:
                    raise
                time.sleep(0.05)

    # ------------------------------------------------------------ session
    def connect(self, attempts=3):
        """Open the port (if needed) and switch the device into link mode."""
        if self.ser is None:
            self.open()
        seen = bytearray()
        for _ in range(attempts):
            self._write(P.ESCAPE)
            deadline = time.monotonic() + self.hello_timeout
            while time.monotonic() < deadline:
                m = self.parser.next()
                if m is None:
                    n = self.read_some()
                    seen += self.parser.buf[self.parser.end - n:self.parser.end][-200:]  # for the hint below
                    continue
                if m.type == P.R_HELLO and m.tag == 0:
                    self.hello = Hello.parse(m.payload)
                    if self.hello.version != P.VERSION:
                        raise LinkError(f"{self.port}: the device speaks link version {self.hello.version}, "
                                        f"this host {P.VERSION}")
                    return self.hello
        text = bytes(seen[-120:]).decode("ascii", "replace").strip()
        if ">>>" in text or "raw REPL" in text:
            hint = ("the board is at the MicroPython REPL: start the logger, or run "
                    "`import logb.link` and serve a Link (docs/LINK.md)")
        else:
            hint = "is the logger running with the Logb link?"
        raise LinkLost(f"{self.port}: no Logb link answered ({hint})" + (f"; it printed {text!r}" if text else ""))

    def reconnect(self, wait=30.0, say=None):
        """Reopen the port until the device answers, for up to `wait` seconds."""
        deadline = time.monotonic() + wait
        last = None
        while True:
            try:
                self.open()
                return self.connect()
            except LinkLost as exc:
                last = exc
                self.close()
            if time.monotonic() >= deadline:
                raise LinkLost(f"{last} (gave up reconnecting after {wait:.0f} s)")
            if say:
                say(f"{self.port}: reconnecting ...")
                say = None
            time.sleep(0.5)

    def cancel(self):
        """Stop whatever the device is streaming; afterwards nothing stale follows."""
        self.call(P.T_CANCEL)

    def bye(self):
        try:
            if self.ser is not None:
                self.call(P.T_BYE, timeout=1.0)
        except LinkError:
            pass
        self.close()

    # ------------------------------------------------------------ requests
    def list(self):
        out, start = [], 0
        while True:
            p = self.call(P.T_LIST, struct.pack("<I", start)).payload
            total, _start, count = struct.unpack_from("<IIH", p, 0)
            pos = 10
            for _ in range(count):
                size, flags = struct.unpack_from("<QB", p, pos)
                name, pos = P.unpack_str(p, pos + 9)
                out.append(Entry(name, size, bool(flags & P.F_ACTIVE)))
            start += count
            if start >= total or not count:
                return out

    def stat(self, name):
        p = self.call(P.T_STAT, P.pack_str(name)).payload
        size, flags = struct.unpack_from("<QB", p, 0)
        return Entry(name, size, bool(flags & P.F_ACTIVE))

    def hash(self, name, offset, length, timeout=None):
        """The device's CRC-32C of [offset, offset + length) of a recording:
        (bytes it covered, crc)."""
        timeout = timeout or self.timeout
        p = self.call(P.T_HASH, struct.pack("<QQ", offset, length) + P.pack_str(name), timeout=timeout).payload
        _off, count, crc, _status = struct.unpack_from("<QQIB", p, 0)
        return count, crc

    def delete(self, name, size, crc):
        """Ask the device to delete a recording; it re-reads the file and
        deletes it only if its size and CRC-32C are these (sending TICKs
        while it reads, so a long file does not look like a dead link)."""
        req = struct.pack("<QI", size, crc) + P.pack_str(name)
        for attempt in range(3):
            try:
                self.call(P.T_DELETE, req, attempts=1)
                return
            except Garbled:
                if attempt < 2:
                    continue  # the request arrived damaged: the device did nothing
                raise
            except DeviceError as exc:
                if exc.code == P.E_NOENT and attempt:
                    return  # an earlier attempt deleted it and its answer was lost
                raise
            except LinkLost:
                # the answer may be what got lost: the device deletes only a matching file,
                # so asking again is safe, and "no such recording" then means it is gone
                if attempt == 2:
                    raise

    def read_range(self, name, offset, length):
        """Send a READ; returns its tag (the caller consumes DATA and END: stream())."""
        return self.send(P.T_READ, struct.pack("<QQ", offset, length) + P.pack_str(name))

    def tail(self, name, offset):
        return self.send(P.T_TAIL, struct.pack("<Q", offset) + P.pack_str(name))


def _readv(fd, view):
    try:
        return os.readv(fd, [view])
    except BlockingIOError:
        return 0


def parse_end(payload):
    """(offset, count, crc, status) of an END or HASH answer."""
    return struct.unpack_from("<QQIB", payload, 0)

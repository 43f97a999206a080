"""A serial cable made of pseudo-terminals, with a fault injector in it.

Two pty pairs and a forwarder process between their masters:

    host (pyserial) -- HOST_LINK symlink -> pty A slave | A master <-forwarder-> B master | pty B slave <- device

The host opens a stable path (a symlink, like /dev/serial/by-id/...) that
is re-pointed to a fresh pty when the cable is "plugged back in". The
forwarder applies faults by byte position in either direction (d2h: device
to host, h2d: host to device):

    drop N bytes, flip one bit, stall N seconds, inject N noise bytes,
    disconnect for N seconds (the host's pty and the link to it go away: its reads and opens fail),
    throttle to N bytes/s (d2h, from that point on).

Run as a script it prints `READY <host link> <device tty>` and then one
`FAULT ...` line per fault it applied and `PLUGGED <tty>` each time the
host's end comes back; stdin takes commands: a JSON list of faults
(positions relative to the bytes forwarded so far), `disconnect S`, `plug`
(end a disconnect now), `quit`. `Cable` (below) drives it from a test.
"""

import json
import os
import select
import subprocess
import sys
import threading
import time
import tty


def _pty():
    m, s = os.openpty()
    tty.setraw(s)
    os.set_blocking(m, False)
    return m, s


def _point(link, target):
    tmp = f"{link}.tmp{os.getpid()}"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    os.symlink(target, tmp)
    os.replace(tmp, link)


def forward(link, ready=sys.stdout, control=sys.stdin):
    ha, hs = _pty()
    da, ds = _pty()
    _point(link, os.ttyname(hs))
    print("READY", link, os.ttyname(ds), file=ready, flush=True)
    count = {"d2h": 0, "h2d": 0}
    faults = []
    pend = {"d2h": bytearray(), "h2d": bytearray()}
    stall_until = {"d2h": 0.0, "h2d": 0.0}
    rate = {"d2h": 0.0, "h2d": 0.0}
    credit = {"d2h": 0.0, "h2d": 0.0}
    last = time.monotonic()
    down_until = 0.0
    ctl = control.fileno() if control is not None else None
    rng = 0x1234567

    def say(*a):
        print(*a, file=ready, flush=True)

    def add(spec):
        for f in spec:
            f = dict(f)
            f["at"] = count[f.get("dir", "d2h")] + int(f.get("at", 0))
            faults.append(f)

    def disconnect(seconds):
        nonlocal ha, hs, down_until
        if ha is not None:
            os.close(ha)
            os.close(hs)
            ha = hs = None
        # the link goes with the device, as /dev/serial/by-id does on unplug: left pointing at the
        # closed pty, the host's reconnect would open whatever pty next takes that number (another
        # test's cable, its device serving other recordings: "no such recording")
        try:
            os.unlink(link)
        except FileNotFoundError:
            pass
        pend["d2h"].clear()
        pend["h2d"].clear()
        down_until = time.monotonic() + seconds

    def apply(direction, data):
        nonlocal rng
        out = bytearray()
        pos = count[direction]
        i = 0
        while i < len(data):
            due = [f for f in faults if f.get("dir", "d2h") == direction and f["at"] <= pos + i]
            if not due:
                nxt = min((f["at"] for f in faults if f.get("dir", "d2h") == direction), default=None)
                j = len(data) if nxt is None else min(len(data), nxt - pos)
                out += data[i:j]
                i = j
                continue
            f = due[0]
            faults.remove(f)
            kind, n = f["kind"], f.get("n", 1)
            say("FAULT", direction, kind, pos + i, n)
            if kind == "drop":
                i += int(n)
            elif kind == "flip":
                out.append(data[i] ^ (1 << (int(f.get("bit", 3)) & 7)))
                i += 1
            elif kind == "noise":
                for _ in range(int(n)):
                    rng = (rng * 1103515245 + 12345) & 0x7FFFFFFF
                    out.append(rng & 0xFF)
            elif kind == "stall":
                stall_until[direction] = time.monotonic() + float(n)
            elif kind == "throttle":
                rate[direction] = float(n)
            elif kind == "disconnect":
                count[direction] = pos + i
                return out, float(n)
        count[direction] = pos + len(data)
        return out, None

    running = True
    while running:
        now = time.monotonic()
        if ha is None and now >= down_until:
            ha, hs = _pty()
            _point(link, os.ttyname(hs))
            say("PLUGGED", os.ttyname(hs))
        for d in rate:
            if rate[d]:
                credit[d] = min(credit[d] + (now - last) * rate[d], max(rate[d] / 50, 4096))
        last = now
        rd = [da] + ([ha] if ha is not None else []) + ([ctl] if ctl is not None else [])
        wr = []
        if pend["d2h"] and ha is not None and now >= stall_until["d2h"]:
            wr.append(ha)
        if pend["h2d"] and now >= stall_until["h2d"]:
            wr.append(da)
        # keep at most 256 KiB queued per direction: back-pressure like a real link
        rd = [fd for fd in rd if not ((fd == da and len(pend["d2h"]) > 1 << 18)
                                      or (fd == ha and len(pend["h2d"]) > 1 << 18))]
        r, w, _ = select.select(rd, wr, [], 0.02)
        if ctl is not None and ctl in r:
            line = control.readline()
            if not line or line.strip() == "quit":
                running = False
                continue
            cmd = line.strip()
            if cmd.startswith("disconnect"):
                disconnect(float(cmd.split()[1]))
            elif cmd == "plug":
                down_until = 0.0
            elif cmd.startswith("["):
                add(json.loads(cmd))
                say("OK")
        for direction, src, dst in (("d2h", da, ha), ("h2d", ha, da)):
            if src is None or src not in r:
                continue
            try:
                data = os.read(src, 65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:  # EIO: no one holds the other side open right now
                continue
            if direction == "d2h" and ha is None:
                count[direction] += len(data)  # unplugged: the device's bytes go nowhere
                continue
            out, cut = apply(direction, data)
            pend[direction] += out
            if cut is not None:
                disconnect(cut)
        for direction, dst in (("d2h", ha), ("h2d", da)):
            if dst is None or dst not in w:
                continue
            buf = pend[direction]
            n = len(buf)
            if rate[direction]:
                n = min(n, int(credit[direction]))
                if n <= 0:
                    continue
            try:
                k = os.write(dst, buf[:n])
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                k = len(buf)
            del buf[:k]
            if rate[direction]:
                credit[direction] -= k
        if rate["d2h"] and pend["d2h"] and not w:
            time.sleep(0.001)
    for fd in (ha, hs, da, ds):
        if fd is not None:
            os.close(fd)


class Cable:
    """The forwarder as a subprocess: `host` is the path pyserial opens,
    `device` the tty the device end opens. `log` collects its FAULT and
    PLUGGED lines as they come; every wait on it has a deadline."""

    def __init__(self, directory, faults=()):
        self.link = os.path.join(str(directory), "ttyLOGB0")
        self.proc = subprocess.Popen([sys.executable, __file__, self.link], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.log = []
        self._acks = 0  # OK lines: faults taken
        self._cv = threading.Condition()
        ready = self._expect_line()
        assert ready and ready[0] == "READY", ready
        self.host, self.device = ready[1], ready[2]
        self._t = threading.Thread(target=self._pump, daemon=True)
        self._t.start()
        if faults:
            self.inject(faults)

    def _expect_line(self, seconds=60):
        ready, _, _ = select.select([self.proc.stdout], [], [], seconds)
        assert ready, f"the cable printed nothing within {seconds} s"
        return self.proc.stdout.readline().split()

    def _pump(self):
        for line in self.proc.stdout:
            with self._cv:
                if line.startswith("OK"):
                    self._acks += 1
                elif line.strip():
                    self.log.append(line.strip())
                self._cv.notify_all()

    def _wait(self, done, what, seconds):
        with self._cv:
            if not self._cv.wait_for(lambda: done() or not self._t.is_alive(), seconds) or not done():
                raise AssertionError(f"the cable did not {what} within {seconds} s: {self.log[-20:]}")

    def _cmd(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def inject(self, faults, seconds=60):
        """Faults at byte positions counted from now (returns once the forwarder has them)."""
        with self._cv:
            want = self._acks + 1
        self._cmd(json.dumps(list(faults)))
        self._wait(lambda: self._acks >= want, "take the faults", seconds)

    def disconnect(self, seconds):
        self._cmd(f"disconnect {seconds}")

    def plug(self, seconds=60):
        """End a disconnect now; returns once the host's end is back."""
        with self._cv:
            seen = sum(x.startswith("PLUGGED") for x in self.log)
        self._cmd("plug")
        self._wait(lambda: sum(x.startswith("PLUGGED") for x in self.log) > seen, "plug back in", seconds)

    def close(self):
        if self.proc.poll() is None:
            try:
                self._cmd("quit")
                self.proc.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._t.join(30)
        return self.log

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


if __name__ == "__main__":
    forward(sys.argv[1])

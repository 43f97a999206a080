"""Pull throughput over the serial link, as a ratio to raw pyserial
throughput over the same link in the same run (issue 6; goal >= 0.9).

Usage: python tools/bench_pull.py [--mb 24] [--runs 5] [--output BENCHMARKS.md] [--print]
       (tools/bench.py runs it last; it replaces its block of BENCHMARKS.md, tools/benchmd.py)

The link is a pseudo-terminal: pyserial opens the pty's slave, the device
holds its master (direct), or both ends go through the fault injector's
forwarder process (tests/serial/ptylink.py) throttled to a USB-like rate.
Each case alternates, run by run:

- raw: the device writes the file's bytes to the port in `chunk`-byte
  writes, as fast as the port takes them; the host reads them with pyserial
  (`read(in_waiting or 1)`) until it has them all. No framing, no CRC, no
  disk. Timed from the host's "go" byte to the last byte.
- pull: `logb pull` of the same file in-process (logb.serial.pull.Puller):
  STAT, READ, every DATA message's CRC, every Logb frame's CRC, the writer
  thread's appends, fsyncs and read-back CRC, the comparison with the
  device's size and CRC-32C, rename. Timed from the STAT to the rename. The
  copy is checked byte-identical.
- stream (direct pty only): the same READ, the host only counting the
  bytes (no parsing, no checks): what the device side can send.

Devices: firmware/logb/link.py under CPython (tests/serial/cpython_device.py,
the host's C CRC-32C as its "native" CRC) and under MicroPython 1.27 on the
simulated board (boards/sim, Node.js; link_crc=native: the JS CRC stand-in
the firmware benchmark also uses; the raw sender is a MicroPython loop over
the same simhw calls).
"""

import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
import tty

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "serial"))
sys.path.insert(0, str(ROOT / "tests" / "firmware"))
sys.path.insert(0, str(ROOT / "boards" / "sim"))
sys.path.append(str(ROOT / "tools"))  # after tests/serial: tools/rig.py is the bench rig, not the link rig

import benchmd  # noqa: E402  (the marked blocks of BENCHMARKS.md)

MB = 1e6

MP_RAW = """
import simhw, uctypes
name = simhw.arg("name", "")
chunk = int(simhw.arg("chunk", "2048"))
buf = bytearray(chunk)
addr = uctypes.addressof(buf)
one = bytearray(1)
while simhw.serial_read(uctypes.addressof(one), 1) <= 0:
    simhw.sleep_ms(1)
size = int(simhw.files_size(name))
pos = 0
while pos < size:
    n = simhw.files_read(name, str(pos), addr, min(chunk, size - pos))
    off = 0
    while off < n:
        k = simhw.serial_write(addr + off, n - off)
        if k < 0:
            raise OSError(5)
        off += k
    pos += n
print("SENT")
while True:
    simhw.sleep_ms(100)
"""


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def make_file(path, mb):
    """A Logb recording of ~mb MB written by the firmware writer (CPython):
    the durango trace recorded into one file, then `logb cat` copies of it."""
    import fwload
    import fwtools

    fw = fwload.load()
    frames = fwtools.read_candump(ROOT.parent / "shared" / "data" / "traces" / "durango-aconoff-candump.log")
    import io

    sink = io.BytesIO()
    clock = [0]
    w = fw.Writer(sink, device="bench", session="b" * 32, ticks=lambda: clock[0], flush_ms=200)
    w.load_config(fwtools.raw_only_config())
    for t, cid, flags, data in frames:
        clock[0] = ((1 << 29) + t) & ((1 << 30) - 1)
        w.append_can(clock[0], cid, data, flags)
        w.poll()
    w.close()
    one = sink.getvalue()
    with open(path, "wb") as f:
        f.write(one)
        while f.tell() < mb * MB:
            f.write(one[16:])
    return path


def direct_pty():
    m, s = os.openpty()
    tty.setraw(s)
    os.set_blocking(m, False)
    return m, s, os.ttyname(s)


class Case:
    def __init__(self, device, link, chunk, size, rate=0.0):
        self.device, self.link, self.chunk, self.size, self.rate = device, link, chunk, size, rate
        self.raw, self.pull, self.stream = [], [], []

    @property
    def label(self):
        return f"{self.device}, chunk {self.chunk // 1024} KiB, {self.link}"


def raw_run(port, start_sender, size):
    """Seconds to receive `size` raw bytes with pyserial; start_sender() makes the device ready."""
    import serial

    dev = start_sender()
    try:
        ser = serial.Serial(port, timeout=0.05)
        ser.reset_input_buffer()
        t = time.perf_counter()
        ser.write(b"g")
        got = 0
        deadline = t + 120
        while got < size:
            got += len(ser.read(ser.in_waiting or 1))
            if time.perf_counter() > deadline:
                raise SystemExit("raw transfer stalled")
        dt = time.perf_counter() - t
        ser.close()
        return dt
    finally:
        dev.kill()


def pull_run(port, name, dest, src):
    from logb.serial.client import Client
    from logb.serial.pull import Puller

    cl = Client(port)
    cl.connect()
    entry = cl.stat(name)
    t = time.perf_counter()
    out = Puller(cl, dest, say=log).pull(entry)
    dt = time.perf_counter() - t
    cl.bye()
    if out.error or not filecmp(src, os.path.join(dest, name)):
        raise SystemExit(f"pull failed or differs: {out}")
    os.unlink(os.path.join(dest, name))
    return dt, out


def stream_run(port, name, size, chunk):
    """Seconds for the device to stream a READ of `size` bytes when the host only counts them."""
    from logb.serial.client import Client

    cl = Client(port)
    cl.connect()
    expect = size + 16 * -(-size // chunk) + 16 + 21  # DATA messages, then END
    t = time.perf_counter()
    cl.read_range(name, 0, size)
    got = cl.parser.pending()
    deadline = t + 120
    while got < expect:
        got += len(cl.ser.read(cl.ser.in_waiting or 1))
        if time.perf_counter() > deadline:
            raise SystemExit("stream run stalled")
    dt = time.perf_counter() - t
    cl.bye()
    return dt


def filecmp(a, b):
    with open(a, "rb") as f, open(b, "rb") as g:
        while True:
            x, y = f.read(1 << 20), g.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def run(mb=24, runs=5, throttled_mb=4):
    import fwtools
    import rig

    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-pull-"))
    env = dict(os.environ)
    env.pop("LOGB_BACKEND", None)
    dev_py = str(ROOT / "tests" / "serial" / "cpython_device.py")
    mjs = fwtools.micropython_mjs()
    has_mp = mjs is not None and shutil.which("node") is not None
    menv = dict(env, LOGB_MICROPYTHON_MJS=str(mjs))
    try:
        src_dir = work / "dev"
        src_dir.mkdir()
        (work / "sd").mkdir()
        big = make_file(src_dir / "big.logb", mb)
        small = src_dir / "small.logb"
        small.write_bytes(big.read_bytes()[:int(throttled_mb * MB)])
        dest = work / "copy"
        dest.mkdir()
        raw_py = work / "mp_raw.py"
        raw_py.write_text(MP_RAW)
        if has_mp:
            import run as sim

            cfg = sim.build_config(None, "sim-logger", work / "c.lbcf")

        def raw_sender(kind, tty, fds, src, chunk):
            if kind == "cpython":
                return rig.Device([sys.executable, dev_py, "--tty", tty, "--dir", str(src_dir), "--raw", str(src),
                                   "--chunk", str(chunk)], env=env, deadline=300, pass_fds=fds)
            d = rig.Device(["node", str(ROOT / "boards" / "sim" / "host.mjs"), "--script", str(raw_py), "--serial", tty,
                            "--files", str(src_dir), "--set", f"name={src.name}", "--set", f"chunk={chunk}"],
                           env=menv, deadline=300, pass_fds=fds)
            time.sleep(1.0)  # node + MicroPython start-up
            return d

        def server(kind, tty, fds, chunk):
            if kind == "cpython":
                d = rig.Device([sys.executable, dev_py, "--tty", tty, "--dir", str(src_dir), "--chunk", str(chunk)],
                               env=env, deadline=600, pass_fds=fds)
                d.wait_for("READY")
                return d
            cmd, _ = sim.command(work / "sd" / "boot.logb", cfg, limit=1, serial=tty, files=src_dir,
                                 settings={"link_chunk": chunk})
            d = rig.Device(cmd, env=menv, deadline=600, pass_fds=fds)
            d.wait_for("SERVING")
            return d

        plan = [("cpython", 32768, 0.0, big), ("cpython", 2048, 0.0, big), ("micropython", 2048, 0.0, big),
                ("micropython", 16384, 0.0, big),
                ("micropython", 2048, 1e6, small), ("cpython", 2048, 1e6, small)]
        cases = []
        for kind, chunk, rate, src in plan:
            if kind == "micropython" and not has_mp:
                log("MicroPython for Node.js not installed: the simulated-board cases are skipped")
                continue
            device = ("firmware/logb/link.py under CPython" if kind == "cpython"
                      else "firmware/logb/link.py on the simulated board (MicroPython)")
            link = f"pty throttled to {rate / MB:g} MB/s" if rate else "direct pty"
            c = Case(device, link, chunk, src.stat().st_size, rate)
            for _ in range(runs if not rate else max(2, runs // 2)):
                if rate:
                    faults = [{"at": 0, "kind": "throttle", "n": rate}]
                    with rig.Cable(work, faults) as cable:
                        c.raw.append(raw_run(cable.host, lambda: raw_sender(kind, cable.device, (), src, chunk),
                                             c.size))
                    with rig.Cable(work, faults) as cable:
                        srv = server(kind, cable.device, (), chunk)
                        try:
                            c.pull.append(pull_run(cable.host, src.name, dest, src)[0])
                        finally:
                            srv.kill()
                else:
                    m, sl, port = direct_pty()
                    try:
                        c.raw.append(raw_run(port, lambda: raw_sender(kind, f"fd:{m}", (m,), src, chunk), c.size))
                        srv = server(kind, f"fd:{m}", (m,), chunk)
                        try:
                            c.pull.append(pull_run(port, src.name, dest, src)[0])
                            c.stream.append(stream_run(port, src.name, c.size, chunk))
                        finally:
                            srv.kill()
                    finally:
                        os.close(m)
                        os.close(sl)
                log(f"{c.label}: raw {c.size / c.raw[-1] / MB:.2f} MB/s, pull {c.size / c.pull[-1] / MB:.2f} MB/s")
            cases.append(c)
        return cases, big.stat().st_size
    finally:
        shutil.rmtree(work, ignore_errors=True)


def section(cases, size, runs, elapsed):
    from logb import _backend

    L = ["## Pull over the serial link (issue 6)", ""]
    w = L.append
    w("`logb pull` against raw pyserial reading over the same link in the same run (`tools/bench_pull.py`, "
      f"{elapsed:.0f} s; host CRC backend `{_backend.current}`; raw and pull runs alternate). *raw*: the device "
      "writes the file's bytes in chunk-sized writes as fast as the port takes them, the host reads them with "
      "`serial.read(in_waiting or 1)` — no framing, CRC or disk. *pull*: `logb.serial.pull.Puller.pull` "
      "in-process, from its STAT to the rename: every DATA message's CRC, every Logb frame's CRC, the writer "
      "thread's appends, fsyncs and read-back CRC, the size and CRC-32C compared with the device's, the "
      "rename; the copy is then compared byte for byte. The recording: the durango trace recorded by the "
      f"firmware writer, concatenated to {size / MB:.1f} MB (4 MB of it on the throttled links). *direct pty*: "
      "pyserial opens the pty's slave, the device holds its master; *throttled*: both go through the fault "
      "injector's forwarder process (tests/serial/ptylink.py) limited to that rate. The MicroPython device is "
      "the simulated board (boards/sim, MicroPython 1.27 in Node.js) with `link_crc=native`, the JS stand-in "
      "for a native CRC that the firmware benchmark uses too; its raw sender is a MicroPython loop over the same "
      "port calls. *stream* (direct pty): the same READ with the host only counting the bytes — what the "
      "device side sends. Medians (min–max); ratio = raw time / pull time, of medians.")
    w("")
    w("| device | chunk | link | file | runs | raw MB/s | pull MB/s | pull / raw | stream MB/s |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    ratios = {}
    for c in cases:
        r = [c.size / t / MB for t in c.raw]
        p = [c.size / t / MB for t in c.pull]
        ratio = statistics.median(c.raw) / statistics.median(c.pull)
        ratios[c] = ratio
        digits = 2 if max(r) < 10 else 1
        w(f"| {c.device} | {c.chunk // 1024} KiB | {c.link} | {c.size / MB:.1f} MB | {len(c.raw)} "
          f"| {statistics.median(r):.{digits}f} ({min(r):.{digits}f}–{max(r):.{digits}f}) "
          f"| {statistics.median(p):.{digits}f} ({min(p):.{digits}f}–{max(p):.{digits}f}) | **{ratio:.2f}** "
          f"| {f'{c.size / statistics.median(c.stream) / MB:.0f}' if c.stream else '–'} |")
    w("")
    slow = [c for c in cases if c.rate]
    fast = [c for c in cases if not c.rate]
    parts = []
    if slow:
        parts.append(
            "At a serial port's rate — 1 MB/s is about what a full-speed USB CDC port (RP2040 and most "
            f"MicroPython boards) carries — a pull runs at {min(ratios[c] for c in slow):.2f}–"
            f"{max(ratios[c] for c in slow):.2f}× raw pyserial, on the simulated board as under CPython: "
            + ("the goal (≥ 0.9) is met. " if min(ratios[c] for c in slow) >= 0.9 else "short of the goal (≥ 0.9). ")
            + "Framing costs 16 bytes per message (0.8 % at 2 KiB), and the checks, fsyncs "
            "and read-back keep up with the link.")
    if fast:
        parts.append(
            f"On an unthrottled pty ({min(c.size / statistics.median(c.raw) for c in fast) / MB:.0f}–"
            f"{max(c.size / statistics.median(c.raw) for c in fast) / MB:.0f} MB/s raw, many times USB full "
            f"speed): {min(ratios[c] for c in fast):.2f}–{max(ratios[c] for c in fast):.2f}×. The host checks "
            "every frame with the frame walk kernel (one call per 256 KiB handed to the writer thread) and reads "
            "the port into one buffer with one system call per read; what is left on the host is Python per link "
            "message (parse, running-CRC call, hand-over), so small messages cost more. What the device side alone "
            "sends (*stream*) is "
            + ", ".join(f"{c.size / statistics.median(c.stream) / (c.size / statistics.median(c.raw)):.2f}× raw "
                        f"({'CPython' if 'CPython' in c.device else 'simulated board'}, {c.chunk // 1024} KiB)"
                        for c in fast if c.stream)
            + ": where it is below 1 the device's per-message work, not the host, limits the pull.")
    w(" ".join(parts))
    w("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=24, help="recording size in MB (default 24)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--output", type=pathlib.Path, default=ROOT / "BENCHMARKS.md")
    ap.add_argument("--print", action="store_true", help="print the section instead of splicing it")
    args = ap.parse_args(argv)
    from logb import _backend

    if _backend.load_c() is not None:
        _backend.use("c")
    t = time.perf_counter()
    cases, size = run(args.mb, args.runs)
    text = section(cases, size, args.runs, time.perf_counter() - t)
    if args.print:
        print(text)
    else:
        benchmd.splice(args.output, "pull", text)
        log(f"pull: wrote its block of {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

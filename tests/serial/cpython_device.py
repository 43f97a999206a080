"""The device side of the Logb link under CPython: firmware/logb/link.py
(loaded as `fwlogb`, as the firmware tests do) serving a directory of
recordings on a tty, optionally while the firmware writer records a CAN
trace into it — the same code a board runs, on the host.

    python cpython_device.py --tty PATH|fd:N --dir D [--record TRACE --name rec.logb --speed X]
                             [--chunk N] [--crc fast|pure] [--idle S] [--raw FILE]

Prints READY once serving, RECORDED when the recording is closed. --raw
FILE sends FILE's bytes to the tty as fast as it takes them instead (the
raw-throughput baseline of tools/bench_pull.py) after one byte arrives.
"""

import argparse
import os
import select
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "firmware"))

import fwload  # noqa: E402

fw = fwload.load()
link = fwload.submodule("link")


def fast_crc():
    """update(buf, start, end, st) over the host's C/crcmod CRC-32C: the
    stand-in for a board's native CRC (the cbridge C module or viper)."""
    from logb.crc import crc32c

    def update(buf, start, end, st):
        reg = st[0] | (st[1] << 24)
        reg = crc32c(memoryview(buf)[start:end], reg ^ 0xFFFFFFFF) ^ 0xFFFFFFFF
        st[0] = reg & 0xFFFFFF
        st[1] = reg >> 24

    return update


def open_port(spec):
    fd = int(spec[3:]) if spec.startswith("fd:") else os.open(spec, os.O_RDWR | os.O_NOCTTY)
    return fd, link.FdPort(fd)


def read_trace(path, limit=0):
    sys.path.insert(0, str(ROOT / "tests" / "firmware"))
    import fwtools

    return fwtools.read_candump(path, limit or None)


def raw_sender(fd, path, chunk):
    """The baseline: the file's bytes, chunk by chunk, as fast as the tty takes them."""
    os.set_blocking(fd, True)
    os.read(fd, 1)  # the host says go
    data = pathlib.Path(path).read_bytes()
    mv = memoryview(data)
    for i in range(0, len(data), chunk):
        os.write(fd, mv[i:i + chunk])
    try:  # hold the port open until the host is done: it hangs up, or stops this process
        os.read(fd, 1)
    except OSError:
        pass


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--tty", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--record", help="a candump trace to record while serving")
    ap.add_argument("--name", default="rec-0001.logb")
    ap.add_argument("--speed", type=float, default=1.0, help="replay speed (x real time)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--config", help="an LBCF config for the writer (default: raw bus only)")
    ap.add_argument("--chunk", type=int, default=2048)
    ap.add_argument("--crc", choices=("fast", "pure"), default="fast")
    ap.add_argument("--idle", type=float, default=10)
    ap.add_argument("--raw", help="send this file raw instead of serving the link")
    args = ap.parse_args(argv)
    fd, port = open_port(args.tty)
    if args.raw:
        return raw_sender(fd, args.raw, args.chunk)
    crc = fast_crc() if args.crc == "fast" else None
    rec = writer = None
    frames = []
    if args.record:
        frames = read_trace(args.record, args.limit)
        sink = open(os.path.join(args.dir, args.name), "wb")
        rec = link.Recorder(sink, args.name)
        clock = [1 << 29]  # the replay's first tick, as on the simulated board
        writer = fw.Writer(rec, device="cpython-logger", ticks=lambda: clock[0], crc=crc, segment_bytes=256 << 10,
                           flush_ms=200)
        if args.config:
            writer.load_config(pathlib.Path(args.config).read_bytes())
        else:
            sys.path.insert(0, str(ROOT / "tests" / "firmware"))
            import fwtools

            writer.load_config(fwtools.raw_only_config())
        coolant = writer.add_sensor("coolant", [("temp", "h", "degC", -40.0, 0.125)], device="cpython-logger")
        next_sample = 0
    ln = link.Link(port, link.VfsStorage(args.dir, rec), device="cpython-logger", firmware=fw.FIRMWARE,
                   chunk=args.chunk, crc=crc, idle_s=args.idle, kbd=False)
    print("READY", flush=True)
    t0 = time.monotonic()
    i = 0
    base = (1 << 29)
    while True:
        busy = ln.poll()
        if writer is not None:
            now_us = (time.monotonic() - t0) * 1e6 * args.speed
            while i < len(frames) and frames[i][0] <= now_us:
                t, cid, flags, data = frames[i]
                clock[0] = (base + t) & ((1 << 30) - 1)
                writer.append_can(clock[0], cid, data, flags)
                i += 1
                busy = True
            clock[0] = (base + int(now_us)) & ((1 << 30) - 1)
            if now_us >= next_sample:  # a coolant sensor every 100 ms, as on the simulated board
                off = coolant.pend(clock[0])
                coolant.buf[off] = 0x20 + (i & 0x3F)
                coolant.buf[off + 1] = 0x03
                coolant.finish()
                next_sample += 100_000
            writer.poll()
            if i >= len(frames):
                writer.close()
                rec.close()
                writer = None
                print("RECORDED", flush=True)
        if not busy:  # wait for a request, or for room in the port when a message is waiting for it
            select.select([fd], [fd] if ln.sending else [], [], 0.002)


if __name__ == "__main__":
    sys.exit(main())

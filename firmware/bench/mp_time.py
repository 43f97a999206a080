# Per-frame cost of the firmware writer on the unix port, as a ratio to a bare
# struct.pack_into of the same records in the same run (run_bench.py runs it):
#
#     micropython -X heapsize=16M mp_time.py CONFIG FRAMES.bin LAPS REPS CASES.json
#
# FRAMES.bin: inputs.encode frames. CASES.json: [[name, kind, opts], ...] with
# kind "floor" or a CRC form ("pure", "viper", "c") and opts Writer keywords
# (plus "codec"). Each case: a warm-up lap, then REPS timed runs of LAPS laps;
# the best run counts (time.ticks_us, real µs here). One line per case:
# "TIME name best_us frames bytes_written".
import io
import json
import struct
import sys
import time

import logb
from logb import crc

CFG = sys.argv[1]
with open(sys.argv[2], "rb") as f:
    BLOB = f.read()
LAPS = int(sys.argv[3])
REPS = int(sys.argv[4])
with open(sys.argv[5]) as f:
    CASES = json.load(f)


def frames(blob):
    out = []
    mv = memoryview(blob)
    p = t = 0
    while p < len(blob):
        gap, cid, fl, ln = struct.unpack_from("<HIBB", blob, p)
        t += gap
        out.append((t, cid, fl, mv[p + 8:p + 8 + ln]))
        p += 8 + ln
    return out, t + 1000


FRAMES, SPAN = frames(BLOB)
SINK = io.BytesIO(1 << 20)


class Clock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def make(opts):
    opts = dict(opts)
    codec = opts.pop("codec", "none")
    clk = Clock()
    SINK.seek(0)
    w = logb.Writer(SINK, device="time", session="t" * 32, ticks=clk, **opts)
    w.load_config(CFG, codec=codec)
    return w, clk


def feed(w, clk, lap0, laps):
    k = 0
    for lap in range(lap0, lap0 + laps):
        base = lap * SPAN
        for t, cid, fl, d in FRAMES:
            t += base
            clk.now = t
            w.append_can(t, cid, d, fl)
            k += 1
            if k == 64:  # the main loop's poll(); the RAM sink rewound past 512 KiB
                k = 0
                w.poll()
                if SINK.tell() > 1 << 19:
                    SINK.seek(0)


def writer_case(which, opts):
    crc.select(which)
    best = None
    for rep in range(REPS):
        w, clk = make(opts)
        feed(w, clk, 0, 1)  # warm-up lap: the first segment, every frame buffer touched
        p0 = w.position
        t0 = time.ticks_us()
        feed(w, clk, 1, LAPS)
        dt = time.ticks_diff(time.ticks_us(), t0)
        if best is None or dt < best:
            best = dt
    return best, w.position - p0


def floor_case(opts):
    # the bare pack_into of each frame's record, in the format of the stream it is routed to
    w, clk = make(opts)
    raw = w._raw
    plan = []
    for t, cid, fl, d in FRAMES:
        s = w._exact.get(cid | (1 << 31) if fl & 1 else cid, raw) if not fl & ~1 else raw
        plan.append((s is raw, s.fmt, s.size, t, cid, fl, d))
    buf = bytearray(4096)
    lim = len(buf) - 96
    best = None
    for rep in range(REPS):
        off = 0
        t0 = time.ticks_us()
        for lap in range(1, 1 + LAPS):
            base = lap * SPAN
            for is_raw, fmt, size, t, cid, fl, d in plan:
                if is_raw:
                    struct.pack_into(fmt, buf, off, t + base, cid, fl, len(d), d)
                else:
                    struct.pack_into(fmt, buf, off, t + base, d, 0)
                off += size
                if off > lim:
                    off = 0
        dt = time.ticks_diff(time.ticks_us(), t0)
        if best is None or dt < best:
            best = dt
    return best, 0


for name, kind, opts in CASES:
    us, nbytes = floor_case(opts) if kind == "floor" else writer_case(kind, opts)
    print("TIME", name, us, len(FRAMES) * LAPS, nbytes)
print("TIMES DONE")

# Per-frame cost of the firmware writer on the unix port, as a ratio to a bare
# struct.pack_into of the same records in the same run (run_bench.py runs it):
#
#     micropython -X heapsize=16M mp_time.py CONFIG FRAMES.bin LAPS REPS CASES.json
#
# FRAMES.bin: inputs.encode frames. CASES.json: [[name, kind, opts], ...] with
# kind "floor" or a CRC form ("pure", "viper", "c") and opts Writer keywords
# REPS rounds of every case; a writer case is a fresh writer, a
# warm-up lap, then LAPS timed laps; the best of its runs counts (time.ticks_us,
# real µs here). One line per case:
# "TIME name best_us frames bytes_written".
import io
import json
import struct
import sys
import time

import micropython

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
    clk = Clock()
    SINK.seek(0)
    w = logb.Writer(SINK, device="time", session="t" * 32, ticks=clk, **opts)
    w.load_config(CFG)
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
    w, clk = make(opts)
    feed(w, clk, 0, 1)  # warm-up lap: the first segment, every frame buffer touched
    p0 = w.position
    # locked, as a logger runs it: unlocked, every call whose frame exceeds the VM's 11 stack
    # slots allocates it on the heap (and scans past this script's frame list to find room)
    micropython.heap_lock()
    try:
        t0 = time.ticks_us()
        feed(w, clk, 1, LAPS)
        dt = time.ticks_diff(time.ticks_us(), t0)
    finally:
        micropython.heap_unlock()
    return dt, w.position - p0


def floor_plan(opts):
    # each frame's record in the format of the stream it is routed to
    w, clk = make(opts)
    raw = w._raw
    plan = []
    for t, cid, fl, d in FRAMES:
        s = w._exact.get(cid | (1 << 29) if fl & 1 else cid, raw) if not fl & ~1 else raw
        plan.append((s is raw, s.fmt, s.size, t, cid, fl, d))
    return plan


def floor_case(plan):
    # the bare pack_into of each record into a preallocated buffer
    buf = bytearray(4096)
    lim = len(buf) - 96
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
    return time.ticks_diff(time.ticks_us(), t0), 0


# the runs go round the cases, so a busy spell on a shared machine hits them alike
PLANS = {name: floor_plan(opts) for name, kind, opts in CASES if kind == "floor"}
BEST = {}
for rep in range(REPS):
    for name, kind, opts in CASES:
        us, nbytes = floor_case(PLANS[name]) if kind == "floor" else writer_case(kind, opts)
        if name not in BEST or us < BEST[name][0]:
            BEST[name] = (us, nbytes)
for name, kind, opts in CASES:
    print("TIME", name, BEST[name][0], len(FRAMES) * LAPS, BEST[name][1])
print("TIMES DONE")

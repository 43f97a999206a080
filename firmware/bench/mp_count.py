# Counted cost on the emulated Cortex-M3 (qemu MPS2-AN385, -icount shift=0,sleep=off:
# one guest instruction per ns of virtual time, so ticks_us() differences are
# thousands of instructions). firmware/bench/qemu_count.py prepends CFG (LBCF
# bytes), BLOB (inputs.encode frames), NFRAMES, LAPS and CASES and runs it with the
# frozen firmware; one line "COUNT name instructions units seals rotations"
# per case. Every count runs under micropython.heap_lock(): a MemoryError means
# the counted path allocated.
import gc
import io
import struct
import time
from array import array

import micropython

SINK = 2048  # a RAM sink, rewound every 64 frames once past this
# room for 64 frames' records and a segment's head (its SCHEMAs: at most the config's size) past
# SINK, so the sink never grows: every count runs with the heap locked
SINK_IO = io.BytesIO(SINK + 4096 + len(CFG))  # noqa: F821 (CFG: from the host)
FLOOR = bytearray(1024)

import logb  # noqa: E402
from logb import crc  # noqa: E402

CHUNK = 64  # frames per piece of the frame list: any allocation here must fit that fragmented heap


@micropython.asm_thumb
def _wfi():
    wfi()  # noqa: F821 (an asm_thumb instruction)


def mark():
    # wait for the next SysTick interrupt: with sleep=off the virtual clock jumps
    # straight to it, so the clock's phase here, and every count, is the same each run
    gc.collect()
    _wfi()
    micropython.heap_lock()
    return time.ticks_us()


def done(t0):
    dt = time.ticks_diff(time.ticks_us(), t0)
    micropython.heap_unlock()
    return dt


def frames(blob, n):
    """[(ticks, ids, flags, data)] pieces of CHUNK frames: arrays, and memoryviews into blob."""
    out = []
    mv = memoryview(blob)
    p = 0
    t = 0
    for c in range(0, n, CHUNK):
        k = min(CHUNK, n - c)
        T = array("I", range(k))
        ids = array("I", range(k))
        F = bytearray(k)
        D = [None] * k
        for i in range(k):
            gap, cid, fl, ln = struct.unpack_from("<HIBB", blob, p)
            t += gap
            T[i] = t
            ids[i] = cid
            F[i] = fl
            D[i] = mv[p + 8:p + 8 + ln]
            p += 8 + ln
        out.append((T, ids, F, D))
    return out, t + 1000


PIECES, SPAN = frames(BLOB, NFRAMES)  # noqa: F821 (from the host)
N = NFRAMES  # noqa: F821


class Clock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def make(opts):
    clk = Clock()
    sink = SINK_IO
    sink.seek(0)
    w = logb.Writer(sink, device="count", session="c" * 32, ticks=clk, **opts)
    w.load_config(CFG)  # noqa: F821 (CFG: from the host)
    return w, sink, clk


def feed(w, sink, clk, lap0, laps):
    k = 0
    for lap in range(lap0, lap0 + laps):
        base = lap * SPAN
        for T, ids, F, D in PIECES:
            for i in range(len(T)):
                t = T[i] + base
                clk.now = t
                w.append_can(t, ids[i], D[i], F[i])
                k += 1
                if k == 64:
                    k = 0
                    w.poll()
                    if sink.tell() > SINK:
                        sink.seek(0)


def seals(w):
    return sum(s.frames for s in w.streams)


def count_append(name, which, opts):
    crc.select(which)
    w, sink, clk = make(opts)
    feed(w, sink, clk, 0, 1)  # warm-up lap: the first segment, every frame buffer touched
    s0, r0 = seals(w), w._seq
    t0 = mark()
    feed(w, sink, clk, 1, LAPS)  # noqa: F821 (LAPS: from the host)
    dt = done(t0)
    print("COUNT", name, dt * 1000, N * LAPS, seals(w) - s0, w._seq - r0)  # noqa: F821


def count_floor(name, opts):
    # the bare struct.pack_into of each frame's record, in its stream's own format
    w, sink, clk = make(opts)
    raw = w._raw
    route = [[w._exact.get(ids[i] | (1 << 29) if F[i] & 1 else ids[i], raw) for i in range(len(T))]
             for T, ids, F, D in PIECES]
    buf = FLOOR
    lim = len(buf) - 96
    t0 = mark()
    off = 0
    for lap in range(LAPS):  # noqa: F821
        base = lap * SPAN
        for j in range(len(PIECES)):
            T, ids, F, D = PIECES[j]
            R = route[j]
            for i in range(len(T)):
                s = R[i]
                if s is raw:
                    d = D[i]
                    struct.pack_into(s.fmt, buf, off, T[i] + base, ids[i], F[i], len(d), d)
                else:
                    struct.pack_into(s.fmt, buf, off, T[i] + base, D[i], 0)
                off += s.size
                if off > lim:
                    off = 0
    dt = done(t0)
    print("COUNT", name, dt * 1000, N * LAPS, 0, 0)  # noqa: F821


def count_sensor(name, how):
    crc.select("c")
    w, sink, clk = make({})
    s = w.add_sensor("coolant", [("temp", "h", "degC", -40.0, 0.125), ("ok", "B", "")])
    n = N * LAPS  # noqa: F821
    for rep in range(2):  # the first pass warms up; the second is counted
        t = rep * n * 100
        s0 = seals(w)
        t0 = mark()
        for i in range(n):
            t += 100
            if how == "append":
                s.append(t, i & 1023, i & 1)
            else:
                off = s.pend(t)
                struct.pack_into("<hB", s.buf, off, i & 1023, i & 1)
                s.finish()
            if i & 63 == 63 and sink.tell() > SINK:
                sink.seek(0)
        dt = done(t0)
    print("COUNT", name, dt * 1000, n, seals(w) - s0, 0)


for case in CASES:  # noqa: F821 (CASES: from the host)
    if case[1] == "floor":
        count_floor(case[0], case[2])
    elif case[1] in ("append", "pend"):
        count_sensor(case[0], case[1])
    else:
        count_append(case[0], case[1], case[2])
print("COUNTS DONE")

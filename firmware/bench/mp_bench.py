# Firmware benchmark, run under MicroPython (WebAssembly port in Node.js) by
# firmware/bench/run_bench.py, which prepares /in/* and formats the result.
# Every case runs the same pre-built frame list; times are best of `reps`.
import gc
import io
import json
import struct

import simhw
import uctypes

import logb
from logb import crc as fwcrc

with open("/in/params.json") as f:
    P = json.load(f)


def frames(path):
    with open(path, "rb") as f:
        blob = f.read()
    out = []
    p = 0
    while p < len(blob):
        t, cid, fl, n = struct.unpack_from("<IIBB", blob, p)
        out.append((t, cid, fl, bytes(blob[p + 10:p + 10 + n])))
        p += 10 + n
    return out


with open("/in/config.lbcf", "rb") as f:
    CFG = f.read()
with open("/in/raw.lbcf", "rb") as f:
    RAW_CFG = f.read()
MSG = frames("/in/frames.bin")
RAW = frames("/in/raw.bin")
REPS = P.get("reps", 3)


def now():
    return simhw.perf_us()  # µs from performance.now(): this build's ticks_us moves in whole ms


def since(t):
    return (now() - t) & 0x3FFFFFFF


def best(fn, *args):
    """(best, median) µs of REPS runs of fn(*args) -> the µs it measured itself."""
    ts = sorted(fn(*args) for _ in range(REPS))
    return ts[0], ts[len(ts) // 2]


def floor_msg(items):
    buf = bytearray(12 * 4096)
    lim = len(buf) - 12
    off = 0
    t0 = now()
    for t, cid, fl, d in items:
        struct.pack_into("<I8s", buf, off, t, d)
        off += 12
        if off > lim:
            off = 0
    return since(t0)


def floor_raw(items):
    buf = bytearray(18 * 4096)
    lim = len(buf) - 18
    off = 0
    t0 = now()
    for t, cid, fl, d in items:
        struct.pack_into("<IIBB8s", buf, off, t, cid, fl, len(d), d)
        off += 18
        if off > lim:
            off = 0
    return since(t0)


class Clock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def crc_js(buf, start, end, st):
    simhw.crc32c_update(uctypes.addressof(buf) + start, end - start, uctypes.addressof(st))


def crc_none(buf, start, end, st):
    pass


class Null:
    """A sink that keeps nothing (for the allocation count: a BytesIO would grow)."""

    def write(self, buf, off=0, n=-1):
        return n

    def flush(self):
        pass


def make(cfg, codec="none", crc=None, page=512, sink=None):
    sink = sink if sink is not None else io.BytesIO(4 << 20)
    clock = Clock()
    w = logb.Writer(sink, device="bench", session="b" * 32, ticks=clock, page=page, stream_bytes=page,
                    segment_bytes=1 << 20, crc=crc)
    w.load_config(cfg, codec=codec)
    return w, sink, clock


def feed(w, clock, items):
    k = 0
    for t, cid, fl, d in items:
        clock.now = t
        w.append_can(t, cid, d, fl)
        k += 1
        if k == 64:
            k = 0
            w.poll()


def writer_case(cfg, items, codec="none", crc=None, page=512):
    """Timed: the appends (with poll every 64) and close(); not the writer's
    construction and config load (once at boot)."""
    size = [0]

    def run():
        w, sink, clock = make(cfg, codec, crc, page)
        t0 = now()
        feed(w, clock, items)
        w.close()
        dt = since(t0)
        size[0] = sink.tell()
        return dt

    b, m = best(run)
    return b, m, size[0]


R = {"n_msg": len(MSG), "n_raw": len(RAW), "crc_backend": fwcrc.backend}
R["floor_msg"] = best(floor_msg, MSG)
R["floor_raw"] = best(floor_raw, RAW)
R["w_msg_none"] = writer_case(CFG, MSG)
R["w_msg_jscrc"] = writer_case(CFG, MSG, crc=crc_js)
R["w_msg_nocrc"] = writer_case(CFG, MSG, crc=crc_none)
R["w_msg_deflate"] = writer_case(CFG, MSG, codec="deflate")
R["w_msg_none_2k"] = writer_case(CFG, MSG, page=2048)
R["w_msg_deflate_2k"] = writer_case(CFG, MSG, codec="deflate", page=2048)
R["w_raw_none"] = writer_case(RAW_CFG, RAW)
R["w_raw_jscrc"] = writer_case(RAW_CFG, RAW, crc=crc_js)
R["w_raw_deflate"] = writer_case(RAW_CFG, RAW, codec="deflate")
R["w_raw_none_2k"] = writer_case(RAW_CFG, RAW, page=2048)
R["w_raw_deflate_2k"] = writer_case(RAW_CFG, RAW, codec="deflate", page=2048)

# CRC throughput of the pure-Python loop (what a board without viper/C gets)
st = fwcrc.state()
buf = bytearray(4096)
t = now()
for _ in range(8):
    fwcrc.update(buf, 0, 4096, st)
R["crc_pure_ns_per_byte"] = since(t) * 1000 // (8 * 4096)

# Allocation of the steady state, per DATA frame and per segment rotation (heap not locked here:
# gc.mem_alloc() deltas are exact in this build, garbage is collected only between runs)
WARM, REST = MSG[:2000], MSG[2000:]
w, sink, clock = make(CFG, sink=Null())
feed(w, clock, WARM)
w._seg_max = 8192  # rotate often
f0 = sum(s.frames for s in w.streams)
s0 = w._seq
a0 = gc.mem_alloc()
feed(w, clock, REST)
R["alloc_none"] = [gc.mem_alloc() - a0, sum(s.frames for s in w.streams) - f0, w._seq - s0]
w, sink, clock = make(CFG, codec="deflate", sink=Null())
feed(w, clock, WARM)
f0 = sum(s.frames for s in w.streams)
a0 = gc.mem_alloc()
feed(w, clock, REST)
R["alloc_deflate"] = [gc.mem_alloc() - a0, sum(s.frames for s in w.streams) - f0]

# Calibration against a published RP2040 figure: a Pico toggling a pin in
# `while True: p.value(1); p.value(0)` runs at about 63 kHz (15.9 µs per
# iteration, MicroPython at 125 MHz). The same shape here: two calls of a
# one-argument C method on a global object in a while loop at module level.
pin = {}
n = 0
N = 50000
t0 = now()
while n < N:
    pin.get(1)
    pin.get(0)
    n += 1
R["toggle_loop_ns"] = since(t0) * 1000 // N
print("BENCH " + json.dumps(R))

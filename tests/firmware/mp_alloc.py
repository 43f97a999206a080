# Which writer calls allocate, under micropython.heap_lock() (run by
# tests/firmware/test_fw_alloc.py on the simulated board; also runs as
# `micropython mp_alloc.py CONFIG OUTDIR` on the unix port). Each call is
# warmed up once with the heap unlocked, then run locked; a MemoryError means
# it allocated. Prints one line "RESULT {call: true if it allocated nothing}"
# and writes the two recordings to OUTDIR (default /out).
import gc
import io
import json
import sys

import micropython

import logb

argv = getattr(sys, "argv", [])
CFG = argv[1] if len(argv) > 1 else "/in/config.lbcf"
OUT = argv[2] if len(argv) > 2 else "/out"
with open(CFG, "rb") as f:
    cfg = f.read()

clk = [1000]


def ticks():
    return clk[0]


class OneArg:
    """A sink whose write() takes one buffer (a UART, a socket, a user class)."""

    def __init__(self, n):
        self.bio = io.BytesIO(n)

    def write(self, b):
        return self.bio.write(b)

    def flush(self):
        pass


sink = io.BytesIO(1 << 20)
w = logb.Writer(sink, device="alloc", session="a" * 32, ticks=ticks, segment_bytes=1 << 30)
w.load_config(cfg)
raw = w.streams[0]
sen = w.add_sensor("coolant", [("temp", "h", "degC", -40.0, 0.125), ("ok", "B", "")])
one = OneArg(1 << 18)
w1 = logb.Writer(one, device="alloc", session="b" * 32, ticks=ticks)
w1.load_config(cfg)
DAYS = logb.civil_days(2024, 5, 17)
WALL = 1715904000 * 1000000000 + 123  # a heap int on a 32-bit port: anchor() must split it
# CAN ids past 2**30 are heap ints the driver made; the writer must not make more
IDS = ((1 << 31) | 0x18FEF100, (1 << 31) | (1 << 30) | 0x1234, 1 << 32, (1 << 30) | 0x123, (1 << 29) | 0x40,
       0x7FF, 0x800)
PAYLOAD = bytes(8)
EMPTY = b""
R = {}


def tick(dt):
    clk[0] = (clk[0] + dt) & 0x3FFFFFFF  # the 2**30 period of ticks_us


def anchor_utc():
    for i in range(50):
        tick(20000)
        w.anchor_utc(DAYS, 3600 + i, 999999999 - i, source="gps", uncertainty_ns=100)


def lost():
    for _ in range(8):  # totals pass 2**30 and 2**32: written by the segment rotation below
        w.lost(controller=(1 << 29) - 1, buffer=(1 << 28) + 5)
        sen.lost(buffer=3)
    w._rotate()


def append():
    for i in range(300):
        tick(500)
        sen.append(clk[0], i - 150, i & 1)


def pend_finish():
    for i in range(300):
        tick(500)
        off = sen.pend(clk[0])
        sen.buf[off] = i & 0xFF
        sen.buf[off + 1] = 0
        sen.buf[off + 2] = 1
        sen.finish()


def append_can_big_ids():
    for i in range(700):
        tick(300)
        cid = IDS[i % len(IDS)]
        w.append_can(clk[0], cid, EMPTY if i % len(IDS) in (1, 3) else PAYLOAD, 0)
    w.poll()


def one_arg_sink():
    for i in range(1500):
        tick(400)
        w1.append_can(clk[0], 0x100 + (i & 0x3F), PAYLOAD, 0)  # durability "frame": partial pages
        w1.poll()


def anchor():
    tick(1000)  # (a second anchor at the same axis time would be ignored by a reader)
    w.anchor(WALL, source="gps", uncertainty_ns=100)


def meta():
    w.meta([("note", "x")])


def attach():
    w.attach("note.txt", "text/plain", b"abc")


def stats():
    w.stats()


CALLS = (anchor_utc, lost, append, pend_finish, append_can_big_ids, one_arg_sink, anchor, meta, attach, stats)
for fn in CALLS:
    fn()  # warm: the first call may set things up
    gc.collect()
    micropython.heap_lock()
    try:
        fn()
        ok = True
    except MemoryError:
        ok = False
    finally:
        micropython.heap_unlock()
    R[fn.__name__] = ok
w.close()
w1.close()
with open(OUT + "/alloc.logb", "wb") as f:
    f.write(sink.getvalue())
with open(OUT + "/onearg.logb", "wb") as f:
    f.write(one.bio.getvalue())
print("RESULT " + json.dumps(R))

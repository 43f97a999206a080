# The MCP2515 driver against the simulated chip on the real unix port, the
# heap locked over the recording loop (tests/firmware/test_mcp2515.py):
#
#     micropython mp_mcp2515.py IN_DIR OUT.logb LOOP_US [FILTERS.json]
#
# FILTERS.json: [[id, mask, extended], ...] for the driver's hardware filters (the
# chip's acceptance path under the lock too); without it every frame is accepted.
# IN_DIR holds frames.bin (tests/firmware/scenario.py's format) and config.lbcf.
# The lock covers the driver's pump(), the writer (append_can, poll, its file
# writes) and the simulated chip behind the SPI calls: the chip's per-frame
# work is preallocated in feed(), so any allocation in the loop fails the run.
# Prints "RESULT {...}".
import json
import struct
import sys
import time

import micropython

import logb
import mcp2515_chip as sim
from logb.mcp2515 import MCP2515

IN, OUT, LOOP = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(IN + "/frames.bin", "rb") as f:
    blob = f.read()
frames = []
p = 0
while p < len(blob):
    t, cid, fl, n = struct.unpack_from("<IIBB", blob, p)
    frames.append((t, cid, fl, bytes(blob[p + 10:p + 10 + n])))
    p += 10 + n
blob = None

clk = sim.Clock(1000, period=time.ticks_add(0, -1) + 1)  # the port's ticks period, as the writer unwraps it
chip = sim.MCP2515Chip(clk, 500_000, 10_000_000)
filters = None
if len(sys.argv) > 4:
    with open(sys.argv[4]) as f:
        filters = [(i, m, bool(e)) for i, m, e in json.load(f)]
can = MCP2515(chip.spi, chip.cs, chip.int_pin, 500_000, 16_000_000, ticks=clk.ticks_us, filters=filters)
sink = open(OUT, "wb")
w = logb.Writer(sink, device="mcp", session="ab" * 16, ticks=clk.ticks_us)
w.load_config(IN + "/config.lbcf")
can.start()
chip.feed(frames, start=clk.now + 100)


def loop(until):
    moved = 0
    while chip.next_at >= 0 and chip._i < until:
        clk.advance(LOOP)
        moved += can.pump(w)
        w.poll()
    return moved


moved = loop(200)  # warm-up, unlocked: first-time allocations (writer's first frame, map caches)
locked = False  # a global first stored under the lock could grow the module's dict
micropython.heap_lock()
try:
    moved += loop(len(frames))
    clk.advance(10_000)
    moved += can.pump(w)
    locked = True
finally:
    micropython.heap_unlock()
w.close()
sink.close()
lost = [i for i in range(len(frames)) if chip.outcome[i] != sim.RECEIVED]
filtered = sum(1 for o in chip.outcome if o == sim.FILTERED)
print("RESULT " + json.dumps({"locked": locked, "filtered": filtered, "moved": moved, "lost_idx": lost,
                              "overflows": can.overflows, "chip_lost": chip.lost, "chip_overflows": chip.overflows}))

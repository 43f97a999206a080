# The simulated logger's main.py: the real firmware writer (/lib/logb) on
# simulated hardware (boards/sim/host.mjs, `import simhw`):
#   - SD card: a host file; write() hands bytes over, flush() is fsync;
#   - CAN controller: replays a candump trace into a 16-slot receive ring in
#     RAM (like a DMA FIFO), at real time or as fast as the writer goes;
#   - ticks_us: real time, or the replayed trace's time;
#   - a coolant sensor sampled every 100 ms, a GPS fix every 10 s of trace.
# Settings come from `--set key=value` (boards/sim/run.py passes them).
# Prints READY when recording starts and DONE {json} after a clean close.
import json
import time

import simhw
import uctypes

import logb
from logb._wire import DLC_LENGTHS

SLOT = 76  # u32 ticks, u32 id, u8 flags, u8 length, 2 reserved, 64 data bytes
SLOTS = 16


def arg(key, default):
    v = simhw.arg(key, None)
    if v is None:
        return default
    return type(default)(v) if default is not None else v


class SdCard:
    """The SD card as a writer sink: write(buf, off, n) without copying."""

    def write(self, buf, off=0, n=-1):
        if n < 0:
            n = len(buf) - off
        simhw.sd_write(uctypes.addressof(buf) + off, n)
        return n

    def flush(self):
        simhw.sd_flush()


class CanController:
    """A receive ring the simulated controller fills; one exact-length
    memoryview per slot and CAN length, made once, so no frame allocates."""

    def __init__(self):
        self.ring = bytearray(SLOT * SLOTS)
        self.addr = uctypes.addressof(self.ring)
        mv = memoryview(self.ring)
        self.views = []
        for i in range(SLOTS):
            row = [None] * 65
            for n in DLC_LENGTHS:
                row[n] = mv[i * SLOT + 12:i * SLOT + 12 + n]
            self.views.append(row)

    def pump(self, w):
        """Move what the controller received into the writer; returns the count."""
        k = simhw.can_fill(self.addr, SLOTS, SLOT)
        r = self.ring
        views = self.views
        for i in range(k):
            o = i * SLOT
            t = r[o] | (r[o + 1] << 8) | (r[o + 2] << 16) | (r[o + 3] << 24)
            cid = r[o + 4] | (r[o + 5] << 8) | (r[o + 6] << 16) | (r[o + 7] << 24)
            w.append_can(t, cid, views[i][r[o + 9]], r[o + 8])
        return k


def main():
    w = logb.Writer(SdCard(), device=arg("device", "sim-logger"), session=arg("session", None),
                    ticks=simhw.ticks_us, page=arg("page", 512), stream_bytes=arg("stream_bytes", 512),
                    durability=arg("durability", "frame"), flush_ms=arg("flush_ms", 1000),
                    segment_bytes=arg("segment_bytes", 1 << 20), segment_s=arg("segment_s", 600),
                    mirror=arg("mirror", 0) == 1,
                    clock_source=("simhw.ticks_us (real time, unwrapped to 64 bit)" if simhw.realtime()
                                  else "simhw.ticks_us (replayed trace time, unwrapped to 64 bit)"))
    w.load_config("/flash/config.lbcf", codec=arg("codec", "none"))
    coolant = w.add_sensor("coolant", [("temp", "h", "degC", -40.0, 0.125)], device=arg("device", "sim-logger"))
    can = CanController()
    wall0 = int(simhw.trace_start_us())  # µs since 1970 of the trace's first frame
    # split once into small ints: the fixes in the loop then allocate nothing (anchor_utc)
    day0, sec0, us0 = wall0 // 86400000000, wall0 // 1000000 % 86400, wall0 % 1000000
    next_sample = simhw.ticks_us()
    next_fix = next_sample
    print("READY")
    n = 0
    while True:
        k = can.pump(w)
        n += k
        now = simhw.ticks_us()
        if time.ticks_diff(now, next_sample) >= 0:
            off = coolant.pend(now)
            coolant.buf[off] = 0x20 + (n & 0x3F)  # a slowly varying raw value
            coolant.buf[off + 1] = 0x03
            coolant.finish()
            next_sample = time.ticks_add(next_sample, 100000)
        if wall0 and time.ticks_diff(now, next_fix) >= 0:
            # the GPS fix: UTC of this moment of the trace (written after the records it dates)
            us = us0 + int(simhw.elapsed_us())
            sec = sec0 + us // 1000000
            w.anchor_utc(day0 + sec // 86400, sec % 86400, us % 1000000 * 1000, t=now, source="gps",
                         uncertainty_ns=100)
            next_fix = time.ticks_add(next_fix, 10000000)
        w.poll()
        if k == 0 and simhw.can_done():
            break
    w.close()
    print("DONE " + json.dumps({"frames": n, "bytes": simhw.sd_bytes(), "segments": w.stats()["segments"],
                                "errors": w.errors}))


main()

"""One recording scenario that runs unchanged under CPython and under
MicroPython: the same config, frames, clock readings and session id must
give the same bytes on both (tests/firmware/test_fw_unix.py, test_fw_qemu.py).

Frames file: per frame u32 ticks, u32 id, u8 flags, u8 length, data.
"""

import struct

try:
    import micropython  # noqa: F401

    import logb  # MicroPython: the firmware package in /lib
except ImportError:
    import fwload  # CPython: the firmware package, loaded as `fwlogb` next to the host's `logb`

    logb = fwload.load()

SESSION = "5ce9a2105ce9a2105ce9a2105ce9a210"


def parse_frames(blob):
    """[(ticks, id, flags, data), ...]: built before recording (allocates)."""
    out = []
    p = 0
    n = len(blob)
    while p < n:
        t, cid, flags, ln = struct.unpack_from("<IIBB", blob, p)
        out.append((t, cid, flags, bytes(blob[p + 10:p + 10 + ln])))
        p += 10 + ln
    return out


class Clock:
    """The writer's clock: whatever the feed last set (deterministic)."""

    def __init__(self, t=0):
        self.now = t

    def __call__(self):
        return self.now


def make_writer(sink, cfg, params, clock):
    w = logb.Writer(sink, device="scenario", session=SESSION, ticks=clock,
                    clock_source="scenario clock (ticks_us-like, unwrapped to 64 bit)",
                    page=params.get("page", 512), stream_bytes=params.get("stream_bytes", 512),
                    raw_bytes=params.get("raw_bytes"), durability=params.get("durability", "frame"),
                    flush_ms=params.get("flush_ms", 1000), segment_bytes=params.get("segment_bytes", 65536),
                    segment_s=params.get("segment_s", 600), mirror=params.get("mirror", False))
    streams = w.load_config(cfg, codec=params.get("codec", "none"))
    sensor = None
    if params.get("sensor", True):
        sensor = w.add_sensor("coolant", [("temp", "h", "degC", -40.0, 0.125), ("ok", "B", "")],
                              device="scenario")
    return w, streams, sensor


def feed(w, sensor, items, clock, start, stop, poll_every=64):
    """Append items[start:stop]; every poll_every frames also poll() and one
    sensor sample through pend/finish (by index, so a split feed is the
    same feed). Allocates nothing once warm."""
    for i in range(start, stop):
        t, cid, flags, data = items[i]
        clock.now = t
        w.append_can(t, cid, data, flags)
        if i % poll_every == poll_every - 1:
            w.poll()
            if sensor is not None:
                off = sensor.pend(t)
                struct.pack_into("<hB", sensor.buf, off, (i & 0x3FF) - 320, i & 1)
                sensor.finish()


def finish(w, clock):
    w.anchor(1701998281317190000 + 123, source="gps", uncertainty_ns=100, t=clock.now)
    w.close()

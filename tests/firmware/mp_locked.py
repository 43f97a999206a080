# Every steady-state path of the writer under micropython.heap_lock(), one
# locked section per path so a MemoryError names it (run by
# tests/firmware/test_fw_unix.py on the unix port):
#
#     micropython mp_locked.py CONFIG MESSAGES.json OUT
#
# MESSAGES.json: [[id, extended, payload_len], ...] of the config's exact
# messages. Each section records into OUT/<path>.logb (a real file; durability "frame":
# every sealed frame is written and flushed), schemas restated from the open
# config file. Each section runs once unlocked (warm-up: first-time
# allocations are allowed), then locked. Prints one line
# "RESULT {path: {"ok": bool, "did": n}, ..., "totals": {...}}"; `did`
# counts what the locked run achieved (frames, rotations...), so a section
# that did nothing cannot pass.
import gc
import json
import sys

import micropython

import logb

CFG, MSGS, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
with open(MSGS) as f:
    MESSAGES = [(cid, 1 if ext else 0, bytes(range(n))) for cid, ext, n in json.load(f)]

clk = [1000]


def ticks():
    return clk[0]


w = sen = raw = sink = dense = None


ERR = OSError(28)  # made before the lock: the sink raising an exception object it already has


class FaultSink:
    """A file whose every `every`-th write fails: mode "raise" raises OSError(5) made under the lock
    (MicroPython then raises its preallocated emergency exception object), "prealloc" raises ERR,
    "short" writes half of what it is given and says so."""

    def __init__(self, f, every, mode):
        self.f = f
        self.every = every
        self.mode = mode
        self.i = 0

    def write(self, buf, off=0, n=-1):
        if n < 0:
            n = len(buf) - off
        self.i += 1
        if self.i % self.every:
            return self.f.write(buf, off, n)
        if self.mode == "raise":
            raise OSError(5)
        if self.mode == "prealloc":
            raise ERR
        return self.f.write(buf, off, n // 2)

    def flush(self):
        self.f.flush()

    def close(self):
        self.f.close()


def start(name, fault=None):
    """A fresh writer per section: a MemoryError leaves its writer mid-frame, and must not fail the next one."""
    global w, sen, raw, sink
    w = sen = raw = None
    gc.collect()
    sink = open(OUT + "/" + name + ".logb", "wb")
    if fault:
        sink = FaultSink(sink, 50, fault)
    w = logb.Writer(sink, device="locked", session="1c" * 16, ticks=ticks, segment_bytes=1 << 30, flush_ms=100)
    w.load_config(CFG)
    sen = w.add_sensor("coolant", [("temp", "h", "degC", -40.0, 0.125), ("ok", "B", "")])
    raw = w.streams[0]

DAYS = logb.civil_days(2024, 5, 17)
SRC = "gps"  # one object: the writer encodes an anchor source once per distinct object
# what the raw bus stream takes: unknown ids, extended ids, remote frames, lengths no message has
RAW = ((0x7F5, 0, b"\x01\x02\x03"), (0x1ABCDE0, 1, b"\x00" * 8), (0x7F6, 2, b""), (0x7F7, 0, b"\xff" * 8))
LOST = {"controller": 0, "buffer": 0}


def frames():
    n = 0
    for st in w.streams:
        n += st.frames
    return n


def raw_bus(k):
    f0 = raw.frames
    for i in range(k):
        clk[0] += 50
        cid, fl, d = RAW[i & 3]
        w.append_can(clk[0], cid, d, fl)
    return raw.frames - f0


def per_message(k):
    r0 = raw.records
    f0 = frames()
    n = len(MESSAGES)
    for i in range(k):
        clk[0] += 50
        cid, fl, d = MESSAGES[i % n]
        w.append_can(clk[0], cid, d, fl)
    if raw.records != r0:  # exclusive routing: exact messages never reach the raw bus stream
        return -1
    return frames() - f0


def sensor_pend_finish(k):
    f0 = sen.frames
    buf = sen.buf
    for i in range(k):
        clk[0] += 1000
        off = sen.pend(clk[0])
        buf[off] = i & 0xFF
        buf[off + 1] = 1
        buf[off + 2] = i & 1
        sen.finish()
    return sen.frames - f0


def sensor_append(k):
    f0 = sen.frames
    for i in range(k):
        clk[0] += 1000
        sen.append(clk[0], (i & 0x3FF) - 320, i & 1)
    return sen.frames - f0


def loss_counters(k):
    for i in range(k):
        w.lost(controller=3, buffer=(1 << 28) if i & 1 else 1)  # totals carry past 2**24 and 2**30
        st = w.streams[1 + i % 3]
        st.lost(controller=1)
    return k


def anchors(k):
    for i in range(k):
        clk[0] += 1000
        w.anchor_utc(DAYS, i % 86400, (i * 7919) % 1000000000, t=clk[0], source=SRC, uncertainty_ns=100)
    return k


def poll(k):
    f0 = frames()
    n = len(MESSAGES)
    for i in range(k):
        clk[0] += 30000  # flush_ms 100: every few polls a frame is old enough to be sealed
        cid, fl, d = MESSAGES[i % n]
        w.append_can(clk[0], cid, d, fl)
        w.poll()
    return frames() - f0


def flush(k):
    f0 = frames()
    for i in range(k):
        clk[0] += 50
        cid, fl, d = MESSAGES[i % len(MESSAGES)]
        w.append_can(clk[0], cid, d, fl)
        w.flush()
    return frames() - f0


def rotation(k):
    s0 = w._seq
    w._seg_max = 4096  # segments of 4 KiB from here on: SYNC, every SCHEMA copied from the config file
    for i in range(k):
        clk[0] += 50
        cid, fl, d = MESSAGES[i % len(MESSAGES)]
        w.append_can(clk[0], cid, d, fl)
    w._seg_max = 1 << 30
    return w._seq - s0


def sink_fault(k):
    """CAN frames through a sink failing every 50th write: each failure costs the frames it cut
    and starts a segment (SYNC, every SCHEMA from the config file, META)."""
    s0 = w._seq
    n = len(MESSAGES)
    for i in range(k):
        clk[0] += 50
        cid, fl, d = MESSAGES[i % n]
        w.append_can(clk[0], cid, d, fl)
    return w._seq - s0


class CountSink:
    """A file that counts what it was given (`written`) and what was written when it was last
    flushed (`flushed`): the durability checks' view of the medium."""

    def __init__(self, f):
        self.f = f
        self.written = 0
        self.flushed = 0
        self.flushes = 0

    def write(self, buf, off=0, n=-1):
        if n < 0:
            n = len(buf) - off
        self.written += n
        return self.f.write(buf, off, n)

    def flush(self):
        self.f.flush()
        self.flushed = self.written
        self.flushes += 1

    def close(self):
        self.f.close()


DUR = [0, 0]  # the locked durability run's promise violations, its worst seal latency (µs)


def durability(k):
    """poll() every 1 ms; a dense stream (a record a ms) fills pages, a sparse one gets one
    record every 150 ms: after every call the policy's promise (firmware/README.md) holds, and
    the sparse frame is sealed within 1.25 * flush_ms + 1 ms."""
    s = sink
    pol = w._dur
    bad = 0
    worst = 0
    t0 = -1
    f0 = 0
    for i in range(k):
        clk[0] += 1000
        dense.append(clk[0], i & 0xFF, 0)
        if i % 150 == 0:
            sen.append(clk[0], 1, 1)
            t0 = clk[0]
            f0 = sen.frames
        w.poll()
        if t0 >= 0 and sen.frames != f0:
            if clk[0] - t0 > worst:
                worst = clk[0] - t0
            t0 = -1
        pos = w.position
        if pol == "frame":
            if not s.written == s.flushed == pos:
                bad += 1
        elif not 0 <= pos - s.written < 512 or s.written & 511:
            bad += 1
        elif pol == "close" and s.flushes:
            bad += 1
        elif pol == "segment" and s.flushes != w._seq:
            bad += 1
    DUR[0] = bad
    DUR[1] = worst
    return w._seq


FAULTS = (("sink_raises", "raise"), ("sink_raises_prealloc", "prealloc"), ("sink_short", "short"))

PATHS = (("raw_bus", raw_bus, 4000), ("per_message", per_message, 4000),
         ("sensor_pend_finish", sensor_pend_finish, 500), ("sensor_append", sensor_append, 500),
         ("loss_counters", loss_counters, 200), ("anchors", anchors, 200), ("poll", poll, 500),
         ("flush", flush, 200), ("segment_rotation", rotation, 3000))


BOX = [0, None]  # what a locked section did, its MemoryError: a tuple to return would be an allocation


def locked(fn, k):
    # (a function: its locals need no heap, a module global first bound under the lock would)
    BOX[0] = 0
    BOX[1] = None
    micropython.heap_lock()
    try:
        BOX[0] = fn(k)
    except MemoryError as e:
        BOX[1] = e
    finally:
        micropython.heap_unlock()


res = {}
totals = {"errors": 0, "crc": logb.crc.backend}
for name, fn, k in PATHS:
    start(name)
    fn(k // 4 or 1)  # warm-up, unlocked
    locked(fn, k)
    res[name] = {"ok": BOX[1] is None, "did": BOX[0]}
    if name == "loss_counters":
        LOST["controller"] += 3 * (k // 4 + k)  # warm-up and locked calls
        LOST["buffer"] += sum((1 << 28) if i & 1 else 1 for i in range(k // 4)) + \
            sum((1 << 28) if i & 1 else 1 for i in range(k))
    if name == "loss_counters":
        totals.update(lost_controller=raw.lost_controller, lost_buffer=raw.lost_buffer, expected=LOST)
    if BOX[1] is None:  # (a writer a MemoryError interrupted is left as it is: its file is not checked)
        w.close()
        totals["errors"] += w.errors
    sink.close()
res["totals"] = totals
for pol in ("frame", "segment", "close"):
    w = sen = raw = None
    gc.collect()
    sink = CountSink(open(OUT + "/durability_" + pol + ".logb", "wb"))
    w = logb.Writer(sink, session="1d" * 16, ticks=ticks, durability=pol, flush_ms=100, segment_bytes=8192)
    sen = w.add_sensor("sparse", [("v", "B", ""), ("ok", "B", "")])
    dense = w.add_sensor("dense", [("v", "B", ""), ("ok", "B", "")])
    durability(500)
    locked(durability, 6000)
    res["durability_" + pol] = {"ok": BOX[1] is None, "did": BOX[0], "bad": DUR[0], "worst_us": DUR[1]}
    w.close()
    sink.close()
for name, mode in FAULTS:
    start(name, mode)
    sink_fault(500)
    locked(sink_fault, 6000)
    res[name] = {"ok": BOX[1] is None, "did": BOX[0]}
    if BOX[1] is None:
        w.close()
        res[name].update(errors=w.errors, lost_sink=w._sinklost[1] * 0x1000000 + w._sinklost[0],
                         records=sum(st.records for st in w.streams))
    sink.close()
print("RESULT " + json.dumps(res))

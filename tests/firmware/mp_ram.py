# The writer's RAM on the unix port under a real heap cap (tests/firmware/
# test_fw_unix.py; the benchmarks may run it too):
#
#     micropython -X heapsize=64K mp_ram.py CONFIG MESSAGES.json [FRAMES]
#
# MESSAGES.json: [[id, extended, payload_len], ...], the config's exact
# messages. Measures the live heap (gc.mem_alloc() after a collection) with
# the interpreter alone, after importing logb, after Writer + load_config
# ("init_peak": what start-up left allocated, garbage included, before a
# collection; "headroom": gc.mem_free() after it), then runs FRAMES appends (every message, an
# unknown id, poll(), a segment every 20,000 bytes: SCHEMAs restated from the
# config file) with the heap locked. Prints one line "RESULT {json}"; a
# MemoryError anywhere ends the run with "memory_error": the phase it hit.
import gc
import json
import sys

import micropython

gc.collect()
RAM = {"base": gc.mem_alloc(), "heap": gc.mem_alloc() + gc.mem_free(), "memory_error": None}
phase = "import"
try:
    import logb

    gc.collect()
    RAM["code"] = gc.mem_alloc()
    phase = "inputs"
    CFG = sys.argv[1]
    with open(sys.argv[2]) as f:
        MSGS = [(cid, 1 if ext else 0, bytes(n)) for cid, ext, n in json.load(f)]
    MSGS.append((0x7F5, 0, bytes(3)))  # an id no config has: the raw bus stream
    N = int(sys.argv[3]) if len(sys.argv) > 3 else 6000

    class Null:
        def write(self, b, off=0, n=-1):
            return n

        def flush(self):
            pass

    clk = [0]

    def ticks():
        return clk[0]

    gc.collect()
    RAM["inputs"] = gc.mem_alloc()
    phase = "writer"
    a0 = gc.mem_alloc()
    w = logb.Writer(Null(), device="ram", session="e" * 32, ticks=ticks, segment_bytes=20000)
    w.load_config(CFG)
    RAM["init_peak"] = gc.mem_alloc() - a0
    gc.collect()
    RAM["writer"] = gc.mem_alloc()
    RAM["headroom"] = gc.mem_free()
    RAM["streams"] = len(w.streams)
    RAM["frames"] = RAM["segments"] = 0
    RAM["steady_locked_ok"] = False

    def run(n):
        k = len(MSGS)
        for i in range(n):
            t = 100 * i
            clk[0] = t
            cid, fl, d = MSGS[i % k]
            w.append_can(t, cid, d, fl)
            w.poll()

    phase = "steady"
    run(len(MSGS))  # warm-up: every stream's first frame
    ok = False  # (bound before the lock: a new global would grow the module's dict)
    micropython.heap_lock()
    try:
        run(N)
        ok = True
    except MemoryError:
        ok = False
    finally:
        micropython.heap_unlock()
    RAM["steady_locked_ok"] = ok
    RAM["frames"] = sum(s.frames for s in w.streams)
    RAM["segments"] = w._seq + 1
    phase = None
except MemoryError:
    RAM["memory_error"] = phase
print("RESULT " + json.dumps(RAM))

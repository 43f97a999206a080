# MicroPython driver for scenario.py (run by boards/sim/host.mjs): reads
# /in/params.json, /in/config.lbcf, /in/frames.bin; records into a
# preallocated io.BytesIO; the steady state runs under micropython.heap_lock().
# Writes /out/rec.logb and prints one line "RESULT {json}".
import gc
import io
import json
import sys

import micropython

sys.path.append("/in")
import scenario  # noqa: E402

with open("/in/params.json") as f:
    params = json.load(f)
with open("/in/config.lbcf", "rb") as f:
    cfg = f.read()
with open("/in/frames.bin", "rb") as f:
    items = scenario.parse_frames(f.read())

sink = io.BytesIO(params.get("sink_capacity", 4 << 20))
clock = scenario.Clock(items[0][0] if items else 0)
# "cfg_path": schemas restated from the open config file (the default on a device), else from RAM
w, streams, sensor = scenario.make_writer(sink, "/in/config.lbcf" if params.get("cfg_path") else cfg, params, clock)
warm = min(params.get("warm", 2000), len(items))
scenario.feed(w, sensor, items, clock, 0, warm)


def frames_now():
    return sum(st.frames for st in w.streams)


result = {"warm": warm, "frames": len(items)}
f0, s0, a0 = frames_now(), w._seq, gc.mem_alloc()
locked_ok = True
if params.get("lock", True):
    micropython.heap_lock()
    try:
        scenario.feed(w, sensor, items, clock, warm, len(items))
    except MemoryError:
        locked_ok = False
    finally:
        micropython.heap_unlock()
else:
    scenario.feed(w, sensor, items, clock, warm, len(items))
a1 = gc.mem_alloc()
result.update(locked_ok=locked_ok, alloc=a1 - a0, data_frames=frames_now() - f0, rotations=w._seq - s0)
scenario.finish(w, clock)
result["errors"] = w.errors
with open("/out/rec.logb", "wb") as f:
    f.write(sink.getvalue())
print("RESULT " + json.dumps(result))

# MicroPython driver for scenario.py. Unix port: `micropython mp_scenario.py
# IN OUT` (host folders); simulated board (boards/sim/host.mjs): no arguments,
# IN=/in, OUT=/out. Reads IN/params.json, IN/config.lbcf, IN/frames.bin;
# records into a preallocated io.BytesIO, or a real file with params "sink":
# "file"; the steady state runs under micropython.heap_lock(). Writes
# OUT/rec.logb and prints one line "RESULT {json}".
import gc
import io
import json
import sys

import micropython

argv = getattr(sys, "argv", None) or []
IN = argv[1] if len(argv) > 1 else "/in"
OUT = argv[2] if len(argv) > 2 else "/out"
sys.path.append(IN)  # the board has scenario.py in /in; the unix port finds it beside this script
import scenario  # noqa: E402

with open(IN + "/params.json") as f:
    params = json.load(f)
with open(IN + "/config.lbcf", "rb") as f:
    cfg = f.read()
with open(IN + "/frames.bin", "rb") as f:
    items = scenario.parse_frames(f.read())
if params.get("crc"):
    scenario.logb.crc.select(params["crc"])

to_file = params.get("sink") == "file"
sink = open(OUT + "/rec.logb", "wb") if to_file else io.BytesIO(params.get("sink_capacity", 4 << 20))
clock = scenario.Clock(items[0][0] if items else 0)
# "cfg_path": schemas restated from the open config file (the default on a device), else from RAM
w, streams, sensor = scenario.make_writer(sink, IN + "/config.lbcf" if params.get("cfg_path") else cfg, params,
                                          clock)
warm = min(params.get("warm", 2000), len(items))
scenario.feed(w, sensor, items, clock, 0, warm)


def frames_now():
    return sum(st.frames for st in w.streams)


def locked_feed():
    # a function: its locals need no heap (a module global first bound here would grow the module's dict)
    micropython.heap_lock()
    try:
        scenario.feed(w, sensor, items, clock, warm, len(items))
    except MemoryError as e:
        return e
    finally:
        micropython.heap_unlock()
    return None


result = {"warm": warm, "frames": len(items), "crc": scenario.logb.crc.backend}
f0, s0, a0 = frames_now(), w._seq, gc.mem_alloc()
err = None
if params.get("lock", True):
    err = locked_feed()
    if err is not None:
        sys.print_exception(err)  # (without a traceback: there was no heap for one)
else:
    scenario.feed(w, sensor, items, clock, warm, len(items))
locked_ok = err is None
a1 = gc.mem_alloc()
result.update(locked_ok=locked_ok, alloc=a1 - a0, data_frames=frames_now() - f0, rotations=w._seq - s0)
scenario.finish(w, clock)
result["errors"] = w.errors
if to_file:
    sink.close()
else:
    with open(OUT + "/rec.logb", "wb") as f:
        f.write(sink.getvalue())
print("RESULT " + json.dumps(result))

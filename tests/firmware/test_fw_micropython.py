"""The firmware writer under MicroPython 1.27's WebAssembly port in Node.js
(boards/sim/host.mjs). The MicroPython targets are the unix port, 64- and
32-bit (test_fw_unix.py: same bytes, every locked path, the 64 KiB cap on
the 32-bit build, .mpy packages, mip) and qemu (test_fw_qemu.py); what stays
here is what only this port shows:

- deflate compression (the unix and qemu builds' `deflate` only decompresses);
- the simulated board (boards/sim: JS-side SD card and CAN replay, the demo)."""

import json
import subprocess
import sys

import pytest

import logb

import fwload
import fwtools

pytestmark = pytest.mark.single_backend

ROOT = fwload.ROOT


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    cfg, compiled = fwtools.compile_config()
    d = tmp_path_factory.mktemp("mp-in")
    (d / "config.lbcf").write_bytes(cfg)
    (d / "frames.bin").write_bytes(fwtools.encode_frames(fwtools.synth_frames(compiled, 16000)))
    return d, cfg, compiled


def micropython_run(d, params, lib=None, tag="run"):
    (d / f"{tag}.json").write_text(json.dumps(params))
    out = d / f"{tag}.logb"
    r = fwtools.run_board([fwtools.FIRMWARE.parent / "tests" / "firmware" / "mp_scenario.py"], lib=lib,
                          put=[f"{d / (tag + '.json')}:/in/params.json", f"{d / 'config.lbcf'}:/in/config.lbcf",
                               f"{d / 'frames.bin'}:/in/frames.bin",
                               f"{fwtools.FIRMWARE.parent / 'tests' / 'firmware' / 'scenario.py'}:/in/scenario.py"],
                          get=[f"/out/rec.logb:{out}"], timeout=300)
    return fwtools.result_line(r.stdout), out.read_bytes()


def test_deflate_under_micropython(inputs):
    d, cfg, _ = inputs
    cfg_raw = fwtools.raw_only_config()
    (d / "config.lbcf").write_bytes(cfg_raw)
    try:
        res, packed = micropython_run(d, {"codec": "deflate", "lock": False, "sensor": False}, tag="deflate")
        plain = fwtools.cpython_bytes(d, cfg_raw, {"sensor": False})
    finally:
        (d / "config.lbcf").write_bytes(cfg)
    a = logb.LogbFile(plain).stream("can0").columns()
    f = logb.LogbFile(packed)
    assert f.report.clean
    b = f.stream("can0").columns()
    assert (a.axis == b.axis).all() and all((a.raw[k] == b.raw[k]).all() for k in a.raw)
    assert len(packed) < len(plain)


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

"""The device side of the serial link on real MicroPython: the v1.28 unix
port (tests/firmware/mp_link.py, firmware/logb from .mpy) records while it
serves `logb pull` over a pseudo-terminal cable (tests/serial/ptylink.py),
the host being the real client. Streaming a READ and idling run, together
with the writer's appends, under micropython.heap_lock(), so a pull costs
the logger a fixed, preallocated amount of RAM.

(This replaces the wasm run over an in-memory port: that one never met a
tty, a host client, or a file still being written. The simulated board in
Node still serves pulls in tests/test_pull.py: its JS-side SD card and CAN
replay are what that test is about.)"""

import io
import json
import pathlib
import sys

import pytest

import logb
from logb.cli.main import main as logb_main

sys.path.insert(0, str(pathlib.Path(__file__).parent / "serial"))
import rig  # noqa: E402
import fwtools  # noqa: E402
import mpreal  # noqa: E402

pytestmark = pytest.mark.single_backend

LIB = None  # the .mpy build
FRAMES = 60000  # 10 per ms: ~6 s of recording, ~1 MB


def pull(*args):
    out = io.StringIO()
    rc = logb_main(["pull", "--json", "--quiet", *map(str, args)], out=out)
    return rc, {r["name"]: r for r in map(json.loads, out.getvalue().splitlines())}


def test_pull_while_recording_on_the_unix_port(tmp_path):
    cfg, compiled = fwtools.compile_config()
    (tmp_path / "c.lbcf").write_bytes(cfg)
    msgs = [[e.frame_id, e.extended, e.payload_len] for e in compiled.entries if not e.mux]
    (tmp_path / "m.json").write_text(json.dumps(msgs))
    sd = tmp_path / "sd"
    sd.mkdir()
    out = tmp_path / "copies"
    rec = sd / "rec-0001.logb"
    with rig.Cable(tmp_path) as cable:
        cmd, env = mpreal.unix_command(fwtools.ROOT / "tests" / "firmware" / "mp_link.py", cable.device, sd,
                                       tmp_path / "c.lbcf", tmp_path / "m.json", FRAMES, heap="1M", lib=LIB)
        dev = rig.Device(cmd, env=env, deadline=180)
        try:
            dev.wait_for("READY", 60)
            grown = rig.wait_until(lambda: rec.exists() and rec.stat().st_size > 200_000 or dev.proc.poll() is not None)
            assert grown and dev.proc.poll() is None, "nothing recorded:\n" + "\n".join(dev.lines[-20:])
            rc, res = pull("--port", cable.host, "rec-0001.logb", out)
            assert rc == 0 and res["rec-0001.logb"]["status"] == "pulled", res
            part = (out / "rec-0001.logb").read_bytes()
            assert len(part) > 200_000
            dev.wait_for("RECORDED", 120)
            assert rec.read_bytes()[:len(part)] == part  # the growing one: a prefix, ending on a frame
            f = logb.LogbFile(part)
            assert f.report.clean and not f.report.truncated
            rc, res = pull("--port", cable.host, "rec-0001.logb", out)  # closed now: the rest
            assert rc == 0 and res["rec-0001.logb"]["status"] == "extended", res
            whole = rec.read_bytes()
            assert (out / "rec-0001.logb").read_bytes() == whole
            assert res["rec-0001.logb"]["crc32c"] == f"{logb.crc.crc32c(whole):08x}"
            (sd / "stop").write_text("")
            r = fwtools.result_line("\n".join([dev.wait_for("RESULT", 60)]))
        finally:
            dev.kill()
    print("unix-port link:", r)
    assert r["memory_error"] is None, f"{r['memory_error']} allocated under heap_lock"
    assert r["recorded"] == FRAMES and r["errors"] == 0
    # most of the pull's DATA went out from locked passes, with the writer recording in them
    assert r["locked_streaming"] >= 20 and r["locked_sent"] >= 20 * 2048, r
    assert r["locked_passes"] > r["locked_streaming"]  # idle passes too
    f = logb.LogbFile(whole)
    assert f.report.clean and f.sessions[0].ended
    assert sum(s.records for s in f.streams.values()) == FRAMES

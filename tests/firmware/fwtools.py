"""Shared helpers of the firmware tests: where the MicroPython/Node and the
firmware tool chain are, how to run a script on the simulated board, and
the inputs (LBCF configs, frame lists) the scenarios use."""

import json
import os
import pathlib
import random
import shutil
import struct
import subprocess
import sys

from fwload import FIRMWARE, ROOT

SIM = ROOT / "boards" / "sim"
HOST_MJS = SIM / "host.mjs"
SHARED = ROOT.parent / "shared"
TRACE_DBC = SHARED / "bench" / "trace.dbc"
TRACES = SHARED / "data" / "traces"
MP_PACKAGE = "@micropython/micropython-webassembly-pyscript"
MP_VERSION = "1.27.0"
IN_CI = bool(os.environ.get("CI"))


def tools_dir():
    """Where tools/setup.d/30-firmware.sh put Node's MicroPython and the
    firmware tool venv: <venv>/fw (LOGB_FW_TOOLS overrides)."""
    if os.environ.get("LOGB_FW_TOOLS"):
        return pathlib.Path(os.environ["LOGB_FW_TOOLS"])
    return pathlib.Path(sys.prefix) / "fw"


def micropython_mjs():
    cands = [os.environ.get("LOGB_MICROPYTHON_MJS"),
             tools_dir() / "node" / "node_modules" / MP_PACKAGE / "micropython.mjs",
             ROOT / ".venv" / "fw" / "node" / "node_modules" / MP_PACKAGE / "micropython.mjs",
             FIRMWARE / "node_modules" / MP_PACKAGE / "micropython.mjs"]
    for c in cands:
        if c and pathlib.Path(c).exists():
            return pathlib.Path(c)
    return None


def need(what, ok):
    """Skip when a tool is missing on a developer machine; fail in CI, where
    the setup hook must have installed it."""
    if ok:
        return
    import pytest  # here, not at the top: tools/bench.py and firmware/bench/run_bench.py import this module too

    msg = f"{what} not installed (tools/setup.d/30-firmware.sh installs it)"
    if IN_CI:
        pytest.fail(msg)
    pytest.skip(msg)


def need_micropython():
    mjs = micropython_mjs()
    need("node + " + MP_PACKAGE, mjs is not None and shutil.which("node"))
    return mjs


def fw_bin(name):
    p = tools_dir() / "venv" / "bin" / name
    return p if p.exists() else None


def run_board(scripts, *, timeout=120, heap=64 * 1024, lib=None, put=(), get=(), sets=None, sd=None,
              durable=None, chunk=0, seed=1, trace=None, speed=0, limit=0, check=True, popen=False):
    """Run MicroPython scripts on the simulated board (one runPython each).
    Every run has a timeout: a locked-heap exception can spin forever."""
    mjs = need_micropython()
    cmd = ["node", str(HOST_MJS)]
    for s in ([scripts] if isinstance(scripts, (str, os.PathLike)) else scripts):
        cmd += ["--script", str(s)]
    cmd += ["--heap", str(heap), "--seed", str(seed)]
    if lib:
        cmd += ["--lib", str(lib)]
    for p in put:
        cmd += ["--put", p]
    for g in get:
        cmd += ["--get", g]
    for k, v in (sets or {}).items():
        cmd += ["--set", f"{k}={v}"]
    if sd:
        cmd += ["--sd", str(sd)]
    if durable:
        cmd += ["--durable-log", str(durable)]
    if chunk:
        cmd += ["--chunk", str(chunk)]
    if trace:
        cmd += ["--trace", str(trace)]
    if speed:
        cmd += ["--speed", str(speed)]
    if limit:
        cmd += ["--limit", str(limit)]
    env = dict(os.environ, LOGB_MICROPYTHON_MJS=str(mjs))
    if popen:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"board run failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def result_line(stdout, tag="RESULT"):
    for line in stdout.splitlines()[::-1]:
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1:])
    raise AssertionError(f"no {tag} line in:\n{stdout[-2000:]}")


# ---------------------------------------------------------------- inputs
def compile_config(dbc=TRACE_DBC, **kw):
    """LBCF bytes of a DBC, compiled by the host (logb dbc compile)."""
    from logb.can.config import config_entries, encode_config
    from logb.can.dbc import compile_dbc

    compiled = compile_dbc(str(dbc), **kw)
    return encode_config(config_entries(compiled)), compiled


def raw_only_config(fd=False):
    from logb.can.config import ConfigEntry, encode_config
    from logb.can.dbc import raw_stream_uuid
    from logb.can.layout import raw_bus_schema

    s = raw_bus_schema(raw_stream_uuid("can0", "sim", fd), "can0", fd=fd)
    return encode_config([ConfigEntry(0, 0, 0, 64 if fd else 8, s.record_size, s.encode())])


def synth_frames(compiled, n, seed=7, start=(1 << 30) - 1_000_000, gap=(80, 400)):
    """n frames: mostly the config's messages (right lengths), some unknown
    ids, extended ids, wrong lengths, remote frames; ticks mod 2**30 starting
    1 s before a wrap. Returns [(ticks, id, flags, data)]."""
    rnd = random.Random(seed)
    msgs = [(e.frame_id, e.extended, e.payload_len) for e in compiled.entries if not e.mux]
    out = []
    t = start
    for i in range(n):
        t += rnd.randint(*gap)
        r = rnd.random()
        if r < 0.80:
            cid, ext, ln = rnd.choice(msgs)
        elif r < 0.90:
            cid, ext, ln = rnd.randrange(0x7F0, 0x800), False, rnd.randint(0, 8)
        elif r < 0.95:
            cid, ext, ln = rnd.randrange(1 << 29), True, 8
        else:
            cid, ext, ln = rnd.choice(msgs)
            ln = rnd.randint(0, 7)
        flags = 1 if ext else 0
        if rnd.random() < 0.01:
            flags |= 2
            ln = 0
        out.append((t & ((1 << 30) - 1), cid, flags, bytes(rnd.randrange(256) for _ in range(ln))))
    return out


def encode_frames(frames):
    return b"".join(struct.pack("<IIBB", t, cid, fl, len(d)) + d for t, cid, fl, d in frames)


def read_candump(path, limit=None):
    """[(µs since first frame, id, flags, data)] of a candump -L log."""
    out, t0 = [], None
    with open(path) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) < 3 or "#" not in parts[2]:
                continue
            sid, payload = parts[2].split("#", 1)
            flags = 1 if len(sid) > 3 else 0
            if payload.startswith("R"):
                flags |= 2
                payload = ""
            sec, frac = parts[0].strip("()").split(".")
            us = int(sec) * 1_000_000 + int(frac.ljust(6, "0")[:6])
            t0 = us if t0 is None else t0
            out.append((us - t0, int(sid, 16), flags, bytes.fromhex(payload)))
            if limit and len(out) >= limit:
                break
    return out


def cpython_bytes(d, cfg, params):
    """What CPython writes for the scenario in folder `d` (frames.bin, config.lbcf)
    with `params`: the bytes every MicroPython run must equal."""
    import io

    import scenario

    items = scenario.parse_frames((d / "frames.bin").read_bytes())
    sink = io.BytesIO()
    clock = scenario.Clock(items[0][0])
    w, _, sen = scenario.make_writer(sink, str(d / "config.lbcf") if params.get("cfg_path") else cfg, params, clock)
    scenario.feed(w, sen, items, clock, 0, len(items))
    scenario.finish(w, clock)
    return sink.getvalue()

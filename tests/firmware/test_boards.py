"""Board profiles (boards/*/main.py) on the real MicroPython 1.28 unix port
against the simulated parts (boards/simparts: machine.CAN fed from a real
trace at its own timing with a 3-frame FIFO, or the MCP2515 chip of
mcp2515_chip.py on the SPI bus; an SD card image mounted as FAT), recording
through logb.board's loop with the heap locked; the host reads the recordings
and compares them frame by frame with the trace minus the frames the simulated
controller lost. The loss counters equal what the controller counts: every
frame for machine.CAN, every overflow-flag set for the MCP2515 (a lower bound).
A short button press at 1 s starts a second file; holding it stops the loop."""

import io
import json
import subprocess
import sys

import pytest

import logb
from logb.can.bus import bus_frames
from logb.cli.main import main as logb_main

import fwload
import fwtools
import mpreal

sys.path.insert(0, str(fwload.ROOT / "tests" / "serial"))
import rig  # noqa: E402

pytestmark = pytest.mark.single_backend

HERE = fwload.ROOT / "tests" / "firmware"
BOARDS = fwload.ROOT / "boards"
TRACE = fwtools.TRACES / "lancer-candump.log"


def trace_2s():
    return [f for f in fwtools.read_candump(TRACE, limit=4000) if f[0] < 2_000_000]


def setup(tmp_path, frames, config=None, **opts):
    """The work folder mp_board.py takes; returns its extra argv (the options file) or []."""
    (tmp_path / "frames.bin").write_bytes(fwtools.encode_frames(frames))
    (tmp_path / "config.lbcf").write_bytes(config or fwtools.compile_config()[0])
    (tmp_path / "sd.img").write_bytes(bytes(8 << 20))
    (tmp_path / "out").mkdir()
    if not opts:
        return []
    (tmp_path / "opts.json").write_text(json.dumps(opts))
    return [tmp_path / "opts.json"]


def run_board(name, can, tmp_path, extra, heap="2M", lib=fwload.FIRMWARE, bits=64, script=HERE / "mp_board.py",
              parts=BOARDS / "simparts"):
    r = mpreal.run_unix(script, BOARDS / name, parts, tmp_path, can, *extra, heap=heap, lib=lib, bits=bits,
                        timeout=180)
    return fwtools.result_line(r.stdout)


def recorded(res, tmp_path):
    """[LogbFile] of the recordings, the (id, flags, data) they hold, and their loss counters' sum."""
    files, got, counted = [], [], 0
    for n in res["files"]:
        f = logb.LogbFile((tmp_path / "out" / n).read_bytes())
        assert f.report.clean and all(s.ended for s in f.sessions)
        counted += int(f.stream("can0").meta.get("logb.lost.controller", "0"))
        b = bus_frames(f)
        got += [(int(b.id[i]), int(b.flags[i]), bytes(b.data[i][:int(b.dlc[i])])) for i in range(len(b))]
        files.append(f)
    return files, got, counted


def assert_trace(got, frames, lost):
    """The recordings hold the trace minus the lost frames."""
    want = [(cid, fl, d) for i, (t, cid, fl, d) in enumerate(frames) if i not in lost]
    # frames read in one pump can share a timestamp, and the host merges the per-message streams with the
    # raw bus stream by time: the order among equal times is not recorded, each id's own order is
    assert sorted(got) == sorted(want)
    for cid in {f[0] for f in want}:
        assert [f for f in got if f[0] == cid] == [f for f in want if f[0] == cid]


@pytest.mark.parametrize("name,can", [("stm32", "machine"), ("stm32", "pyb"), ("rp2040-mcp2515", "mcp2515"),
                                      ("esp32-mcp2515", "mcp2515")])
def test_profile_records_the_trace(name, can, tmp_path):
    frames = trace_2s()
    res = run_board(name, can, tmp_path, setup(tmp_path, frames))
    assert res["files"] == ["rec-00001.logb", "rec-00002.logb"]  # the short press started a second file
    assert res["source"] == {"machine": "MachineCAN", "pyb": "PybCAN", "mcp2515": "MCP2515"}[can]
    lost = set(res["lost"])  # the loop stalls (a new file, FAT writes): the 3-frame FIFO overflows
    if can in ("machine", "pyb"):
        # bxCAN counts every frame it drops (pyb: its overrun interrupt, served at once)
        assert lost and res["overruns"] == len(lost)
    _files, got, counted = recorded(res, tmp_path)
    assert_trace(got, frames, lost)
    assert counted == res["overruns"]  # MCP2515: one per overflow-flag set (a lower bound of the frames)


def test_rotation_by_size(tmp_path):
    frames = trace_2s()
    limit = 16 << 10
    res = run_board("stm32", "machine", tmp_path, setup(tmp_path, frames, rotate=limit))
    names = res["files"]
    assert len(names) >= 4 and names == ["rec-%05d.logb" % (i + 1) for i in range(len(names))]
    sizes = [(tmp_path / "out" / n).stat().st_size for n in names]
    # the loop rotates at the first pass past the limit; the button's file (at 1 s) may end sooner
    assert sum(1 for z in sizes[:-1] if z >= limit) >= len(names) - 2, sizes
    _files, got, counted = recorded(res, tmp_path)
    assert_trace(got, frames, set(res["lost"]))
    assert counted == res["overruns"] == len(res["lost"])


def test_littlefs_card(tmp_path):
    frames = trace_2s()
    res = run_board("rp2040-mcp2515", "mcp2515", tmp_path, setup(tmp_path, frames, fs="lfs"))
    assert res["files"] == ["rec-00001.logb", "rec-00002.logb"]
    assert (tmp_path / "sd.img").read_bytes()[8:16] == b"littlefs"  # the superblock's magic, block 0
    _files, got, counted = recorded(res, tmp_path)
    assert_trace(got, frames, set(res["lost"]))
    assert counted == res["overruns"]


def test_sensor_hook(tmp_path):
    frames = trace_2s()
    res = run_board("stm32", "machine", tmp_path, setup(tmp_path, frames, sensor=True))
    files, got, _counted = recorded(res, tmp_path)
    assert_trace(got, frames, set(res["lost"]))
    n = []
    for f in files:
        c = f.stream("coolant").columns()
        n += [int(v) for v in c.raw["n"]]
        assert set(c.raw["ok"].tolist()) == {1}
    assert res["sensed"] > 150  # every 10 ms over > 2 s
    assert n == list(range(res["sensed"]))  # every step's record, in order, across both files


def test_pull_from_the_board_loop(tmp_path):
    """The loop's serial link (profile serial(): a pty to the unix port) serves `logb pull` while
    it records: the first file, finished at the button press, comes over byte for byte."""
    frames = trace_2s()
    sdp = tmp_path / "sdp"
    sdp.mkdir()
    copies = tmp_path / "copies"
    with rig.Cable(tmp_path) as cable:
        extra = setup(tmp_path, frames, tty=cable.device)
        cmd, env = mpreal.unix_command(HERE / "mp_board.py", BOARDS / "stm32", BOARDS / "simparts", tmp_path,
                                       "machine", *extra, heap="2M", lib=fwload.FIRMWARE)
        dev = rig.Device(cmd, env=env, deadline=180)
        try:
            # the second file exists: the first is closed
            assert rig.wait_until(lambda: (sdp / "rec-00002.logb").exists() or dev.proc.poll() is not None, 120)
            assert dev.proc.poll() is None, "\n".join(dev.lines[-20:])
            out = io.StringIO()
            rc = logb_main(["pull", "--json", "--quiet", "--port", cable.host, "rec-00001.logb", str(copies)], out=out)
            got = {r["name"]: r for r in map(json.loads, out.getvalue().splitlines())}
            assert rc == 0 and got["rec-00001.logb"]["status"] == "pulled", got
            res = fwtools.result_line(dev.wait_for("RESULT", 120))  # the pull ended: the loop is stopped
        finally:
            dev.kill()
    assert res["requests"] > 0 and res["files"] == ["rec-00001.logb", "rec-00002.logb"]
    assert (copies / "rec-00001.logb").read_bytes() == (sdp / "rec-00001.logb").read_bytes()
    _files, got, counted = recorded(res, tmp_path)
    assert_trace(got, frames, set(res["lost"]))
    assert counted == res["overruns"] == len(res["lost"])


# The board's own heap on a 32-bit port (the i386 unix port has a board's object sizes): the package
# and the writer from .mpy (firmware_mpy), the simulation compiled to .mpy too, under a hard cap
# (-X heapsize). mp_board.py measures the live heap (after a collection) at each step; what the board
# holds is the live heap with a file open minus the simulation's share (its parts and the trace).
HEAP_BUDGET = 64 << 10


@pytest.mark.parametrize("name,can", [("stm32", "machine"), ("rp2040-mcp2515", "mcp2515")])
def test_board_heap_on_the_32_bit_port(name, can, tmp_path):
    frames = trace_2s()[::20]  # ~7 frames per 100 ms over 2 s: the trace is the simulation's RAM
    extra = setup(tmp_path, frames, config=fwtools.raw_only_config(), mem=True)
    parts = tmp_path / "parts"
    parts.mkdir()
    mpy_cross = str(mpreal.built("mpy"))
    for src in [*(BOARDS / "simparts").glob("*.py"), HERE / "mp_board.py"]:
        subprocess.run([mpy_cross, "-o", str(parts / (src.stem + ".mpy")), str(src)], check=True, timeout=120)
    (tmp_path / "run.py").write_text(f"import sys\nsys.path.insert(0, {str(parts)!r})\nimport mp_board\n")
    res = run_board(name, can, tmp_path, extra, heap="128K", lib=None, bits=32, script=tmp_path / "run.py",
                    parts=parts)
    m = res["mem"]
    board = m["file2"] - m["parts"]
    print(f"{name} (raw bus stream only) on the 32-bit port: package + loop + driver {m['logb'] - m['parts']} B, "
          f"with the writer {board} B of the heap (the simulation: {m['parts']} B more)")
    assert res["files"] == ["rec-00001.logb", "rec-00002.logb"]
    assert m["file2"] - m["file1"] < 1024  # the first file's writer was freed before the second's was built
    assert board < HEAP_BUDGET
    _files, got, counted = recorded(res, tmp_path)
    assert_trace(got, frames, set(res["lost"]))
    assert counted == res["overruns"]


def test_board_loop_under_cpython(tmp_path, monkeypatch):
    """The same loop under CPython (firmware code runs there too): the pyb.CAN stand-in fed a short
    trace in real time, files in a host folder, the button scripted on the sim clock."""
    monkeypatch.syspath_prepend(str(BOARDS / "simparts"))
    for m in ("machine", "pyb"):  # the stand-ins leave sys.modules with the test
        monkeypatch.setitem(sys.modules, m, None)
        del sys.modules[m]
    import machine
    import pyb

    fwload.load()
    board = fwload.submodule("board")
    PybCAN = fwload.submodule("machine_can").PybCAN

    frames = [f for f in trace_2s() if f[0] < 1_300_000]
    machine.CAN.trace = frames
    end = frames[-1][0]
    machine.script_pin("SW", lambda us: 0 if 500_000 <= us < 600_000 or us >= end + 300_000 else 1)
    (tmp_path / "config.lbcf").write_bytes(fwtools.compile_config()[0])
    (tmp_path / "sd").mkdir()
    machine._T0[0] = machine.ticks_us()  # the trace's time 0: now

    class Profile:
        CONFIG = str(tmp_path / "config.lbcf")

        def can():
            return [PybCAN(pyb.CAN, 1, 500000)]

        def storage():
            return str(tmp_path / "sd")

        def button():
            return machine.Pin("SW", machine.Pin.IN)

    b = board.run(Profile)
    can = b.sources[0].can
    lost = {i for i in range(len(frames)) if can.lost[i]}
    assert b.names == ["rec-00001.logb", "rec-00002.logb"]
    for n in b.names:
        (tmp_path / "out").mkdir(exist_ok=True)
        (tmp_path / "out" / n).write_bytes((tmp_path / "sd" / n).read_bytes())
    _files, got, counted = recorded({"files": b.names}, tmp_path)
    assert_trace(got, frames, lost)
    assert counted == can.overruns == len(lost)

"""Board profiles (boards/*/main.py) on the real MicroPython 1.28 unix port
against the simulated parts (boards/simparts: machine.CAN fed from a real
trace at its own timing with a 3-frame FIFO, or the MCP2515 chip of
mcp2515_chip.py on the SPI bus; an SD card image mounted as FAT), recording
through logb.board's loop with the heap locked; the host reads the recordings
and compares them frame by frame with the trace minus the frames the simulated
controller lost. The loss counters equal what the controller counts: every
frame for machine.CAN, every overflow-flag set for the MCP2515 (a lower bound).
A short button press at 1 s starts a second file; holding it stops the loop."""

import pytest

import logb
from logb.can.bus import bus_frames

import fwload
import fwtools
import mpreal

pytestmark = pytest.mark.single_backend

HERE = fwload.ROOT / "tests" / "firmware"
BOARDS = fwload.ROOT / "boards"
TRACE = fwtools.TRACES / "lancer-candump.log"


def trace_2s():
    return [f for f in fwtools.read_candump(TRACE, limit=4000) if f[0] < 2_000_000]


@pytest.mark.parametrize("name,can", [("stm32", "machine"), ("stm32", "pyb"), ("rp2040-mcp2515", "mcp2515"),
                                      ("esp32-mcp2515", "mcp2515")])
def test_profile_records_the_trace(name, can, tmp_path):
    frames = trace_2s()
    (tmp_path / "frames.bin").write_bytes(fwtools.encode_frames(frames))
    (tmp_path / "config.lbcf").write_bytes(fwtools.compile_config()[0])
    (tmp_path / "sd.img").write_bytes(bytes(8 << 20))
    (tmp_path / "out").mkdir()
    r = mpreal.run_unix(HERE / "mp_board.py", BOARDS / name, BOARDS / "simparts", tmp_path, can, heap="2M",
                        lib=fwload.FIRMWARE, timeout=120)
    res = fwtools.result_line(r.stdout)
    assert len(res["files"]) == 2  # the short press started a second file
    assert res["files"] == ["rec-00001.logb", "rec-00002.logb"]
    assert res["source"] == {"machine": "MachineCAN", "pyb": "PybCAN", "mcp2515": "MCP2515"}[can]
    lost = set(res["lost"])  # the loop stalls (a new file, FAT writes): the 3-frame FIFO overflows
    if can in ("machine", "pyb"):
        # bxCAN counts every frame it drops (pyb: its overrun interrupt, served at once)
        assert lost and res["overruns"] == len(lost)
    got = []
    counted = 0
    for n in res["files"]:
        f = logb.LogbFile((tmp_path / "out" / n).read_bytes())
        assert f.report.clean and all(s.ended for s in f.sessions)
        counted += int(f.stream("can0").meta.get("logb.lost.controller", "0"))
        b = bus_frames(f)
        got += [(int(b.id[i]), int(b.flags[i]), bytes(b.data[i][:int(b.dlc[i])])) for i in range(len(b))]
    want = [(cid, fl, d) for i, (t, cid, fl, d) in enumerate(frames) if i not in lost]
    # frames read in one pump can share a timestamp, and the host merges the per-message streams with the
    # raw bus stream by time: the order among equal times is not recorded, each id's own order is
    assert sorted(got) == sorted(want)
    for cid in {f[0] for f in want}:
        assert [f for f in got if f[0] == cid] == [f for f in want if f[0] == cid]
    assert counted == res["overruns"]  # MCP2515: one per overflow-flag set (a lower bound of the frames)

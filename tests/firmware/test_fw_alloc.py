"""Which firmware writer calls allocate, checked one by one under
micropython.heap_lock() on the simulated board (MicroPython 1.27, a 32-bit
port: ints >= 2**30 are heap objects). tests/firmware/mp_alloc.py runs each
call warm, then locked; the steady-state ones must not allocate, and every one
that does must be listed in firmware/README.md ("What allocates")."""

import re

import pytest

import logb
from logb.can.bus import bus_frames

import fwload
import fwtools

pytestmark = pytest.mark.single_backend

STEADY = ("anchor_utc", "lost", "append", "pend_finish", "append_can_big_ids", "one_arg_sink")
ALLOCATING = ("anchor", "meta", "attach", "stats")  # documented as allocating: each must really be


@pytest.fixture(scope="module")
def board_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("alloc")
    cfg, _ = fwtools.compile_config()
    (d / "config.lbcf").write_bytes(cfg)
    script = fwtools.FIRMWARE.parent / "tests" / "firmware" / "mp_alloc.py"
    r = fwtools.run_board([script], put=[f"{d / 'config.lbcf'}:/in/config.lbcf"],
                          get=[f"/out/alloc.logb:{d / 'alloc.logb'}", f"/out/onearg.logb:{d / 'onearg.logb'}"],
                          timeout=300)
    return fwtools.result_line(r.stdout), d


@pytest.mark.parametrize("call", STEADY)
def test_steady_state_call_allocates_nothing(board_run, call):
    res, _ = board_run
    assert res[call] is True, f"{call} raised MemoryError with the heap locked"


def readme_table():
    """{call name: allocates (bool)} from the table of firmware/README.md "What allocates"."""
    text = (fwload.FIRMWARE / "README.md").read_text()
    section = text.split("## What allocates", 1)[1].split("\n## ", 1)[0]
    out = {}
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[1].split(" ")[0] in ("yes", "no", "yes:", "no:"):
            for name in re.findall(r"`(?:s\.)?(\w+)\(", cells[0]):
                out[name] = cells[1].startswith("yes")
    return out


def test_what_allocates_is_documented(board_run):
    res, _ = board_run
    assert set(res) == set(STEADY) | set(ALLOCATING)
    assert [c for c in ALLOCATING if res[c]] == []  # each really allocates: the list is not stale
    table = readme_table()
    assert all(table[c] for c in ALLOCATING)
    for call in ("anchor_utc", "lost", "append", "pend", "finish", "append_can", "poll"):
        assert table[call] is False, call


def test_what_the_locked_calls_wrote_reads_back(board_run):
    """The recordings made with the heap locked hold what the calls said: 100
    anchors with their exact wall times (the locked ones as the warm ones), loss counts past 2**32, the invalid
    CAN frames counted, the SocketCAN ids normalised; a one-argument sink's
    file is whole."""
    _, d = board_run
    f = logb.LogbFile((d / "alloc.logb").read_bytes())
    assert f.report.clean
    anchors = f.sessions[0].anchors
    days = 19860  # 2024-05-17
    want = [(days * 86400 + 3600 + i) * 10 ** 9 + 999999999 - i for _ in range(2) for i in range(50)]
    # 100 from anchor_utc; 1 from anchor(), whose locked call raised before writing anything
    assert [a.wall_ns for a in anchors[:100]] == want and len(anchors) == 101
    assert anchors[100].wall_ns == 1715904000 * 10 ** 9 + 123
    assert all(a.uncertainty_ns == 100 and a.source == "gps" for a in anchors)
    raw = f.stream("can0").meta
    assert raw["logb.lost.controller"] == str(16 * ((1 << 29) - 1)) and int(raw["logb.lost.controller"]) > 1 << 32
    assert raw["logb.lost.buffer"] == str(16 * ((1 << 28) + 5))
    assert raw["logb.lost.invalid"] == str(2 * 1400 // 7)  # 1 << 32 and 0x800 on a standard frame
    assert f.stream("coolant").meta["logb.lost.buffer"] == "48"
    b = bus_frames(f)
    assert sorted(set(zip(b.id.tolist(), b.flags.tolist()))) == sorted(
        [(0x18FEF100, 1), (0x1234, 3), (0x123, 2), (0x40, 4), (0x7FF, 0)])
    assert len(b.id) == 1400 - 400
    assert f.stream("coolant").records == 1200
    g = logb.LogbFile((d / "onearg.logb").read_bytes())
    assert g.report.clean and g.sessions[0].ended
    assert bus_frames(g).id.tolist() == [0x100 + (i & 0x3F) for _ in range(2) for i in range(1500)]


def test_deploy_fw_mip_folder_installs_mpy(tmp_path, monkeypatch):
    """tools/deploy_fw.py mip: a package.json listing .mpy files only; installing
    what it lists (paths relative to it, as mip does) gives a working package."""
    import json
    import shutil
    import sys

    mpy_cross = fwtools.fw_bin("mpy-cross")
    fwtools.need("mpy-cross", mpy_cross)
    monkeypatch.setenv("MPY_CROSS", str(mpy_cross))
    monkeypatch.syspath_prepend(str(fwload.ROOT / "tools"))
    sys.modules.pop("deploy_fw", None)
    import deploy_fw

    pj = deploy_fw.mip_folder(tmp_path / "mip")
    pkg = json.loads(pj.read_text())
    assert pkg["version"] == fwload.load().__version__
    assert {dst for dst, _ in pkg["urls"]} == {f"logb/{p.stem}.mpy" for p in (fwload.FIRMWARE / "logb").glob("*.py")
                                              if p.stem not in deploy_fw.NATIVE}
    target = tmp_path / "lib"
    for dst, src in pkg["urls"]:
        (target / dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(pj.parent / src, target / dst)
    script = tmp_path / "t.py"
    script.write_text("import io, logb\nw = logb.Writer(io.BytesIO(), session='0' * 32)\n"
                      "w.anchor_utc(logb.civil_days(2024, 1, 1), 0, 0)\nw.close()\n"
                      "print('RESULT {\"version\": \"%s\", \"file\": \"%s\"}' % (logb.__version__, logb.__file__))\n")
    res = fwtools.result_line(fwtools.run_board([script], lib=target / "logb").stdout)
    assert res["version"] == pkg["version"] and res["file"].endswith(".mpy")

"""`logb pull` over a pseudo-terminal cable (tests/serial/ptylink.py) from
the device protocol (firmware/logb/link.py) running under CPython, and on
the simulated board under MicroPython while it records: whole directories,
a recording still growing, resuming a killed pull, --delete, refusals."""

import io
import json
import pathlib
import signal
import subprocess
import sys

import pytest

import logb
from logb.cli.main import main as logb_main

sys.path.insert(0, str(pathlib.Path(__file__).parent / "serial"))
import rig  # noqa: E402

pytestmark = pytest.mark.single_backend


def fw_recording(path, frames=20000, trace=rig.LANCER, session="a" * 32):
    """A closed recording made by the firmware writer (CPython)."""
    import fwload
    import fwtools

    fw = fwload.load()
    clock = [1 << 29]
    with open(path, "wb") as f:
        w = fw.Writer(f, session=session, ticks=lambda: clock[0], flush_ms=200, device="t")
        w.load_config(fwtools.raw_only_config())
        for t, cid, flags, data in fwtools.read_candump(trace, frames):
            clock[0] = ((1 << 29) + t) & ((1 << 30) - 1)
            w.append_can(clock[0], cid, data, flags)
            w.poll()
        w.close()
    return path


def pull(*args):
    out = io.StringIO()
    rc = logb_main(["pull", "--json", "--quiet", *map(str, args)], out=out)
    return rc, {r["name"]: r for r in map(json.loads, out.getvalue().splitlines())}


@pytest.fixture
def cable(tmp_path):
    c = rig.Cable(tmp_path)
    yield c
    c.close()


def test_pull_all_while_recording_then_again_then_delete(tmp_path, cable):
    dev = tmp_path / "sd"
    dev.mkdir()
    fw_recording(dev / "rec-0001.logb", 15000, session="1" * 32)
    fw_recording(dev / "rec-0002.logb", 5000, rig.DURANGO, session="2" * 32)
    out = tmp_path / "copies"
    d = rig.cpython_device(cable.device, dev, record=rig.LANCER, name="rec-0003.logb", speed=12, limit=40000)
    try:
        assert rig.wait_until(lambda: (dev / "rec-0003.logb").stat().st_size > 20000), "nothing recorded"
        rc, res = pull("--port", cable.host, "--all", out)
        assert rc == 0 and set(res) == {"rec-0001.logb", "rec-0002.logb", "rec-0003.logb"}
        for n in ("rec-0001.logb", "rec-0002.logb"):
            assert rig.same_bytes(dev / n, out / n) and res[n]["status"] == "pulled"
            assert res[n]["crc32c"] == f"{logb.crc.crc32c((dev / n).read_bytes()):08x}"
        # the growing one: a prefix of the recording, ending on a frame boundary
        part = (out / "rec-0003.logb").read_bytes()
        assert (dev / "rec-0003.logb").read_bytes()[:len(part)] == part and len(part) > 20000
        f = logb.LogbFile(part)
        assert f.report.clean and not f.report.truncated and f.stream("can0").records > 0
        # --delete while recording: the closed ones go (each verified by the device), the active one stays
        rc, res = pull("--port", cable.host, "--delete", "rec-0001.logb", "rec-0003.logb", out)
        assert rc == 0 and res["rec-0001.logb"]["deleted"] and res["rec-0001.logb"]["status"] == "up to date"
        assert not (dev / "rec-0001.logb").exists() and (out / "rec-0001.logb").exists()
        assert not res["rec-0003.logb"]["deleted"] and res["rec-0003.logb"]["kept"]
        assert (dev / "rec-0003.logb").exists()
        assert res["rec-0003.logb"]["status"] in ("extended", "up to date")  # it grew meanwhile, or not
        d.wait_for("RECORDED", 60)
        before = (out / "rec-0003.logb").stat().st_size
        rc, res = pull("--port", cable.host, "--all", out)
        assert rc == 0 and res["rec-0003.logb"]["status"] == "extended" and res["rec-0002.logb"]["status"] == \
            "up to date"
        assert res["rec-0003.logb"]["transferred"] == (dev / "rec-0003.logb").stat().st_size - before
        assert rig.same_bytes(dev / "rec-0003.logb", out / "rec-0003.logb")
        assert logb.LogbFile(out / "rec-0003.logb").sessions[0].ended
        assert rig.no_temp_files(out) == []
    finally:
        d.kill()


def test_a_killed_pull_resumes(tmp_path):
    dev = tmp_path / "sd"
    dev.mkdir()
    src = fw_recording(dev / "big.logb", 74000, rig.LANCER)  # ~1.5 MB
    size = src.stat().st_size
    out = tmp_path / "copies"
    with rig.Cable(tmp_path, [{"at": 0, "kind": "throttle", "n": 400_000}]) as cable:
        d = rig.cpython_device(cable.device, dev)
        try:
            p = subprocess.Popen([sys.executable, "-m", "logb.cli.main", "pull", "--port", cable.host, "--all",
                                  str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            state = out / ".big.logb.part.json"
            assert rig.wait_until(lambda: state.exists() and json.loads(state.read_text())["verified"] > 100_000), \
                "the pull verified nothing"
            p.send_signal(signal.SIGKILL)
            p.wait(10)
            assert not (out / "big.logb").exists() and (out / ".big.logb.part").exists()
            verified = json.loads(state.read_text())["verified"]
            assert 0 < verified < size
        finally:
            d.kill()
    with rig.Cable(tmp_path) as cable:  # plugged in again
        d = rig.cpython_device(cable.device, dev)
        try:
            rc, res = pull("--port", cable.host, "--all", out)
        finally:
            d.kill()
    r = res["big.logb"]
    assert rc == 0 and r["status"] == "resumed" and r["transferred"] <= size - verified
    assert rig.same_bytes(src, out / "big.logb") and rig.no_temp_files(out) == []


def test_damage_in_the_recording_is_caught_by_the_fast_walk(tmp_path, cable):
    """One corrupted byte in the device's file, deep inside a pulled chunk:
    the kernel's walk hands it to the scanner, which names the damage where
    `logb verify` does; the copy stays the device's bytes."""
    dev = tmp_path / "sd"
    dev.mkdir()
    src = fw_recording(dev / "bad.logb", 20000, rig.LANCER)
    data = bytearray(src.read_bytes())
    data[len(data) * 2 // 3] ^= 0x08
    src.write_bytes(data)
    ref = logb.LogbFile(bytes(data)).report
    assert [s.cause for s in ref.skipped] == ["crc mismatch"]
    out = tmp_path / "copies"
    d = rig.cpython_device(cable.device, dev, chunk=32768)
    try:
        rc, res = pull("--port", cable.host, "--all", out)
    finally:
        d.kill()
    r = res["bad.logb"]
    assert rc == 0 and r["ok"] and r["frames"] == ref.frames
    assert r["damage"] == [{"offset": ref.skipped[0].start, "cause": "crc mismatch"}]
    assert rig.same_bytes(src, out / "bad.logb")


def test_refusals_leave_everything_alone(tmp_path, cable, capsys):
    dev = tmp_path / "sd"
    dev.mkdir()
    fw_recording(dev / "a.logb", 3000)
    out = tmp_path / "copies"
    out.mkdir()
    (out / "a.logb").write_bytes(b"something else entirely, longer than nothing")
    d = rig.cpython_device(cable.device, dev)
    try:
        rc, res = pull("--port", cable.host, "a.logb", "zz.logb", out)
        assert rc == 1
        assert "differs from the device's" in res["a.logb"]["error"] and "no such recording" in res["zz.logb"]["error"]
        assert (out / "a.logb").read_bytes() == b"something else entirely, longer than nothing"
        rc, _ = pull("--port", cable.host, "--delete", "a.logb", out)
        assert rc == 1 and (dev / "a.logb").exists()  # nothing verified: nothing deleted
        assert logb_main(["pull", "--port", cable.host, str(out)]) == 64  # neither names nor --all
    finally:
        d.kill()
    # nothing answering on the port
    assert logb_main(["pull", "--port", cable.host, "--all", str(out)]) == 69
    assert "no Logb link answered" in capsys.readouterr().err


def test_micropython_board_records_while_serving_a_pull(tmp_path, cable):
    """The simulated board (MicroPython 1.27 in Node.js) records a real trace at
    3x real time; a pull mid-recording and one after; the recording loses
    nothing and the link's share of each loop iteration stays small."""
    sd = tmp_path / "sd"
    sd.mkdir()
    d = rig.micropython_device(cable.device, sd / "rec.logb", speed=3, limit=30000, deadline=150)
    out = tmp_path / "copies"
    try:
        assert rig.wait_until(lambda: (sd / "rec.logb").stat().st_size > 100_000), "the board recorded nothing"
        rc, res = pull("--port", cable.host, "--all", out)
        assert rc == 0 and res["rec.logb"]["status"] == "pulled"
        first = (out / "rec.logb").read_bytes()
        assert logb.LogbFile(first).report.clean
        d.wait_for("SERVING", 60)
        rc, res = pull("--port", cable.host, "--all", out)
        assert rc == 0 and res["rec.logb"]["status"] == "extended"
        assert rig.same_bytes(sd / "rec.logb", out / "rec.logb")
        f = logb.LogbFile(out / "rec.logb")
        assert f.report.clean and f.sessions[0].ended
        assert sum(s.records for s in f.streams.values() if s.name != "coolant") == 30000
        stats = json.loads(d.wait_for("LINKSTATS").split(" ", 1)[1])
        assert stats["polls"] > 1000 and stats["busy_us"] > 0
        assert stats["max_poll_us"] < 200_000  # generous: a shared 2-core machine under a test suite
    finally:
        d.kill()

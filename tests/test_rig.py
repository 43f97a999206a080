"""The bench rig (tools/rig.py) with its simulated relay: the stm32 profile on the real unix port,
its card a FAT image file, power cut by SIGKILL. A few cycles; the report's claims are checked
against an independent read of the card after the run (mounted read-only by a second unix-port
process, tests/firmware/mp_rig_mount.py) and against the pulled copies."""

import importlib.util
import json
import subprocess
import sys

import pytest

import logb
from logb.can.bus import bus_frames

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent / "firmware"))
import fwload  # noqa: E402
import mpreal  # noqa: E402

pytestmark = pytest.mark.single_backend

_spec = importlib.util.spec_from_file_location("tools_rig", fwload.ROOT / "tools" / "rig.py")
rig = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rig)

CYCLES = 3


def records(data):
    b = bus_frames(logb.LogbFile(data))
    return [(int(b.t[i]), int(b.id[i]), int(b.flags[i]), bytes(b.data[i][:int(b.dlc[i])])) for i in range(len(b))]


def test_sim_rig_cycles(tmp_path):
    mpreal.built("unix")
    relay = rig.SimRelay(tmp_path / "sim", seconds=40)
    try:
        rep = rig.run(relay, CYCLES, tmp_path / "out", seed=3, min_on=1.0, max_on=2.5, say=lambda s: None)
    finally:
        relay.close()
    assert rep == json.loads((tmp_path / "out" / "report.json").read_text())
    assert (tmp_path / "out" / "lost_per_cut.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cyc = rep["cycles"]
    assert [c["cycle"] for c in cyc] == list(range(CYCLES + 1)) and rep["problems"] == 0, cyc
    # every boot starts a recording: boot c's pull sees c + 1 files
    assert [c["files"] for c in cyc] == [c + 1 for c in range(CYCLES + 1)]
    assert all(1.0 <= c["on_s"] <= 2.5 for c in cyc[1:])
    # a cut loses at most what came after the last flush (flush_ms 1000 at ~500 frames/s); the
    # logger's count at the cut lags by at most one loop pass (a pump: a few frames)
    for c in cyc[1:]:
        appended, kept = c["appended_kept"]
        assert c["lost_since_last"] == max(0, appended - kept) and -20 <= appended - kept <= 1000, c

    # the independent read: the card as the rig left it
    card = tmp_path / "card"
    card.mkdir()
    r = mpreal.run_unix(fwload.ROOT / "tests" / "firmware" / "mp_rig_mount.py", tmp_path / "sim" / "sd.img", card,
                        heap="2M", lib=fwload.FIRMWARE, timeout=120)
    assert r.stdout.strip().endswith("DONE"), r.stdout
    names = sorted(p.name for p in card.iterdir())
    assert names == ["rec-%05d.logb" % (i + 1) for i in range(CYCLES + 1)]
    pulls = [tmp_path / "out" / "pulls" / f"{c:05d}" for c in range(CYCLES + 1)]
    on_card = {n: records((card / n).read_bytes()) for n in names}
    # the final pull's records per file are the report's, and each file's pulls only ever grew
    # into what the card holds now (every record a pull saw survived the cuts after it)
    last = {n: records((pulls[-1] / n).read_bytes()) for n in names}
    assert sum(len(v) for v in last.values()) == cyc[-1]["records"]
    for c, d in enumerate(pulls):
        got = sorted(p.name for p in d.iterdir() if not p.name.startswith("."))
        assert got == names[:c + 1]
        total = 0
        for n in got:
            rs = records((d / n).read_bytes())
            total += len(rs)
            assert on_card[n][:len(rs)] == rs, (c, n)
        assert total == cyc[c]["records"]
        if c:  # what the report says the cut file kept is what the card holds
            assert cyc[c]["appended_kept"][1] == len(on_card[names[c - 1]])
    # the files of earlier boots: the last pull is the card's file, byte for byte
    for n in names[:-1]:
        assert (pulls[-1] / n).read_bytes() == (card / n).read_bytes()
    # what the card holds came off the bus: each boot's file is a subsequence of the trace, in order
    # (the frames the FIFO dropped are the gaps). The files' loss counters are not compared with the
    # gaps: the writer states them at a segment start and at close only, so a cut file's lag (found here)
    trace = [(cid, fl, d) for _t, cid, fl, d in relay.frames]
    for n in names:
        k = 0
        for rec in on_card[n]:
            while k < len(trace) and trace[k] != rec[1:]:
                k += 1
            assert k < len(trace), (n, rec)
            k += 1


class RollbackRelay(rig.SimRelay):
    """A card that loses what came after the second power-on: its image goes back to that moment at
    the third (a lying card, or a filesystem that drops a file)."""

    def on(self):
        self.boots = getattr(self, "boots", 0) + 1
        img = self.work / "sd.img"
        if self.boots == 2:
            self.saved = img.read_bytes()
        elif self.boots == 3:
            img.write_bytes(self.saved)
        super().on()


def test_rig_reports_records_that_vanish(tmp_path):
    mpreal.built("unix")
    relay = RollbackRelay(tmp_path / "sim", seconds=40)
    try:
        rep = rig.run(relay, 2, tmp_path / "out", seed=3, min_on=1.0, max_on=1.5, say=lambda s: None)
    finally:
        relay.close()
    # the second boot's file, pulled with records, is gone after the rollback and the third boot
    # records under its name (other records: other ticks); the first is as that boot's pull saw it
    assert rep["cycles"][1]["problems"] == []
    # (its loss counter may read lower too: another session's)
    ps = rep["cycles"][2]["problems"]
    assert all(p.startswith("rec-00002.logb: ") for p in ps), ps
    assert any(p.startswith("rec-00002.logb: the ") and p.endswith("(durable records lost)") for p in ps), ps
    assert rep["problems"] == len(ps)


def test_serial_relay_sends_the_lcus1_commands(tmp_path):
    """The USB relay driver, on a pseudo-terminal standing in for the module: the exact command bytes."""
    import os
    import select

    master, slave = os.openpty()
    try:
        relay = rig.make_relay(f"serial-relay:{os.ttyname(slave)}", tmp_path)
        got = b""
        relay.on()
        relay.off()
        while len(got) < 8 and select.select([master], [], [], 30)[0]:
            got += os.read(master, 64)
        relay.close()
    finally:
        os.close(master)
        os.close(slave)
    assert got == bytes.fromhex("A00101A2") + bytes.fromhex("A00100A1")


def test_gpio_relay_runs_its_template(tmp_path):
    log = tmp_path / "gpio.log"
    relay = rig.make_relay(f"gpio:echo {{v}} >> {log}", tmp_path)
    relay.on()
    relay.off()
    assert log.read_text().split() == ["1", "0"]
    with pytest.raises(subprocess.CalledProcessError):
        rig.make_relay("gpio:exit 3", tmp_path).on()  # a failing switch stops the rig, never passes silently
    with pytest.raises(SystemExit):
        rig.make_relay("usb-hub:1", tmp_path)

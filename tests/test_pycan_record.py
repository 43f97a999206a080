"""`logb record` and `logb replay` on python-can's virtual bus (in-process: its channels
live in one process, so the CLI's main() runs in a thread beside the test's own bus),
and `logb record`'s clean stop on SIGTERM / SIGINT in a subprocess (a virtual bus
nobody sends on needs no peer)."""

import io
import pathlib
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

can = pytest.importorskip("can")

import logb  # noqa: E402
from logb import tables  # noqa: E402
from logb.can.bus import buses  # noqa: E402
from logb.cli.main import main  # noqa: E402

pytestmark = pytest.mark.single_backend

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
DBC = SHARED / "dbc" / "fca_giorgio.dbc"
TRACE = SHARED / "traces" / "lancer-candump.log"
needs_data = pytest.mark.skipif(not (DBC.exists() and TRACE.exists()), reason="../shared/data not present")


class Out(io.StringIO):
    """The command's stdout; `started` is set once it says it is recording."""

    def __init__(self):
        super().__init__()
        self.started = threading.Event()

    def write(self, s):
        if s.startswith("recording "):
            self.started.set()
        return super().write(s)


class Command(threading.Thread):
    def __init__(self, *argv):
        super().__init__(daemon=True)
        self.argv, self.out, self.status = [str(a) for a in argv], Out(), None

    def run(self):
        self.status = main(self.argv, out=self.out)

    def started(self, timeout=60):
        """True once the command says it records; False if it ends or times out first."""
        deadline = time.monotonic() + timeout
        while not self.out.started.wait(0.05):
            if not self.is_alive() or time.monotonic() > deadline:
                return False
        return True

    def finish(self, timeout=120):
        self.join(timeout)
        assert not self.is_alive(), "the command did not stop"
        return self.status


def frame(m):
    return (m.arbitration_id, m.is_extended_id, m.is_remote_frame, m.is_fd, m.dlc, bytes(m.data))


def messages_of(path):
    return list(can.LogReader(str(path)))


@needs_data
def test_record_from_a_bus(tmp_path):
    out = tmp_path / "rec.logb"
    src = list(can.LogReader(str(TRACE)))[:3000]
    rec = Command("record", "-i", "virtual", "-c", "rec-a", "--dbc", DBC, "--count", len(src), "-o", out)
    rec.start()
    assert rec.started()
    with can.Bus(interface="virtual", channel="rec-a") as bus:
        t0 = time.time()
        for m in src:
            bus.send(m)
    assert rec.finish() == 0
    got = messages_of(out)
    assert [frame(m) for m in got] == [frame(m) for m in src]
    assert all(m.channel == "rec-a" for m in got)
    assert t0 - 1 < got[0].timestamp <= got[-1].timestamp < time.time() + 1  # anchored to the host clock
    with logb.LogbFile(out) as f:
        assert f.report.clean and [s.time_base for s in f.sessions] == ["monotonic"]
        assert f.sessions[0].clock.anchors and f.sessions[0].meta["logb.durability"].startswith("frame;")
        assert [a.name for a in f.attachments] == [DBC.name]
        abs6 = sum(1 for m in src if m.arbitration_id == 0x101)
        assert abs6 and f.stream("ABS_6").records == abs6  # the per-message stream of the DBC
        (g,) = buses(f)
        assert {k: v for k, v in g.streams[0].meta.items() if k.startswith("logb.lost.")} == {
            tables.LOST_BUFFER: "0", tables.LOST_INVALID: "0"}
    assert f"{len(src)} frames" in rec.out.getvalue()


def test_record_rotates(tmp_path):
    out = tmp_path / "rot.logb"
    rec = Command("record", "-i", "virtual", "-c", "rec-b", "--rotate-bytes", 8_000, "--flush-s", 0.05,
                  "--count", 3000, "-o", out)
    rec.start()
    assert rec.started()
    rng = random.Random(3)  # incompressible payloads: 24 kB of them
    sent = [can.Message(arbitration_id=i % 0x800, data=rng.randbytes(8)) for i in range(3000)]
    with can.Bus(interface="virtual", channel="rec-b") as bus:
        for i, m in enumerate(sent):
            bus.send(m)
            if i % 100 == 99:
                time.sleep(0.01)  # a live bus: frames sealed as they come, files filling up
    assert rec.finish() == 0
    files = sorted(tmp_path.glob("rot-*.logb"))
    assert len(files) >= 2 and not out.exists()
    got = [frame(m) for p in files for m in messages_of(p)]
    assert got == [frame(m) for m in sent]
    for p in files[:-1]:
        with logb.LogbFile(p) as f:
            assert f.report.clean and f.sessions[0].ended
            # rotated at the first frame past the limit: every DATA frame began below it (how far the
            # last one reaches depends on how many frames a flush held, i.e. on the machine's load)
            starts = [fl.offset for s in f.streams.values() for fl in s.frames]
            assert max(starts) < 8_000 < p.stat().st_size


def test_record_refuses_to_clobber(tmp_path, capsys):
    out = tmp_path / "x.logb"
    out.write_bytes(b"yesterday")
    assert main(["record", "-i", "virtual", "-c", "rec-c", "--count", "1", "-o", str(out)]) == 64
    assert "exists" in capsys.readouterr().err and out.read_bytes() == b"yesterday"
    assert main(["record", "-i", "no-such-interface", "-c", "0", "--force", "-o", str(out)]) == 64
    assert out.read_bytes() == b"yesterday"


def test_replay_keeps_the_timing(tmp_path):
    path = tmp_path / "t.logb"
    gaps = [0.0, 0.1, 0.25, 0.3, 0.5]
    with can.Logger(str(path)) as log:
        for i, t in enumerate(gaps):
            log(can.Message(timestamp=1.7e9 + t, arbitration_id=0x100 + i, data=bytes([i] * 8), channel="can0"))
    for speed in (1, 2):
        with can.Bus(interface="virtual", channel=f"rep-{speed}") as rx:
            cmd = Command("replay", path, "-i", "virtual", "-c", f"rep-{speed}", "--speed", speed)
            cmd.start()
            got = []
            deadline = time.monotonic() + 60
            while len(got) < len(gaps) and time.monotonic() < deadline and (cmd.is_alive() or got):
                m = rx.recv(0.1)
                if m is not None:
                    got.append(m)
            assert cmd.finish() == 0
        assert [m.arbitration_id for m in got] == [0x100 + i for i in range(len(gaps))]
        for i in range(1, len(gaps)):  # never early; late by a loaded machine's scheduling at most
            since = got[i].timestamp - got[0].timestamp
            assert gaps[i] / speed - 0.005 <= since <= gaps[i] / speed + 0.5
        assert "sent 5 of 5 frames" in cmd.out.getvalue()


@needs_data
def test_record_what_replay_sends(tmp_path):
    src = tmp_path / "src.logb"
    assert main(["import", str(TRACE), "-o", str(src)], out=io.StringIO()) == 0
    n = len(list(can.LogReader(str(TRACE))))
    out = tmp_path / "again.logb"
    rec = Command("record", "-i", "virtual", "-c", "loop", "--count", n, "-o", out)
    rec.start()
    assert rec.started()
    rep = Command("replay", src, "-i", "virtual", "-c", "loop", "--speed", 0)
    rep.start()
    assert rep.finish() == 0 and rec.finish() == 0
    assert [frame(m) for m in messages_of(out)] == [frame(m) for m in messages_of(src)]


def test_replay_errors(tmp_path, capsys):
    two = tmp_path / "two.logb"
    with can.Logger(str(two)) as log:
        for ch in ("can0", "can1"):
            log(can.Message(timestamp=1.7e9, arbitration_id=1, data=b"\x01", channel=ch))
    assert main(["replay", str(two), "-i", "virtual", "-c", "e"]) == 64
    assert "pick one with --bus" in capsys.readouterr().err
    assert main(["replay", str(two), "-i", "virtual", "-c", "e", "--bus", "can9"]) == 64
    (tmp_path / "not.logb").write_bytes(b"candump")
    assert main(["replay", str(tmp_path / "not.logb"), "-i", "virtual", "-c", "e"]) == 2
    with pytest.raises(SystemExit) as exc:  # argparse's own usage error
        main(["replay", str(two), "-i", "virtual", "-c", "e", "--speed", "-1"])
    assert exc.value.code == 64


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_record_stops_cleanly_on_a_signal(tmp_path, sig):
    out = tmp_path / "s.logb"
    # SIGINT must reach it even when the suite runs with SIGINT ignored (a background job)
    p = subprocess.Popen([sys.executable, "-m", "logb.cli.main", "record", "-i", "virtual", "-c", "nobody",
                          "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline().startswith("recording virtual nobody")
        p.send_signal(sig)
        rest, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    assert "0 frames" in rest
    with logb.LogbFile(out) as f:
        assert f.report.clean and f.sessions[0].ended and f.ends

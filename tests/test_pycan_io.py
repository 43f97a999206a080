"""The `.logb` python-can plugins (logb.can.pycan_io, entry points in host/pyproject.toml):
every real trace through can.Logger into Logb and back through can.LogReader equals what
python-can reads from the trace; python -m can.logconvert finds them; a writer killed
with SIGKILL leaves a file holding every frame it had sealed and nothing else; frames
no record holds are counted, not altered."""

import pathlib
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

can = pytest.importorskip("can")

import logb  # noqa: E402
from logb import tables  # noqa: E402
from logb.can.bus import buses  # noqa: E402
from logb.can.formats.pycan import bus_name  # noqa: E402

pytestmark = pytest.mark.single_backend  # python-can plumbing: the kernels are covered elsewhere

TRACES = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
SOURCES = sorted(TRACES.glob("*")) if TRACES.exists() else []
DBC = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "dbc" / "fca_giorgio.dbc"


def key(m):
    """What a frame is, stamp to the µs (Logb's live axis) and channel as a Logb bus name."""
    return (round(m.timestamp * 1e6), bus_name(m.channel), m.arbitration_id, m.is_extended_id, m.is_remote_frame,
            m.is_error_frame, m.is_fd, m.bitrate_switch, m.error_state_indicator, m.is_rx, m.dlc,
            bytes(m.data or b""))


def source_messages(path):
    if path.suffix == ".asc":  # absolute stamps, as the other readers give
        return list(can.ASCReader(str(path), relative_timestamp=False))
    return list(can.LogReader(str(path)))


def lost_counters(path):
    with logb.LogbFile(path) as f:
        return {g.name: {k: int(v) for k, v in g.streams[0].meta.items() if k.startswith("logb.lost.")}
                for g in buses(f)}


@pytest.mark.skipif(not SOURCES, reason="../shared/data/traces not present")
@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_every_trace_round_trips(tmp_path, src):
    msgs = source_messages(src)
    out = tmp_path / "t.logb"
    with can.Logger(str(out)) as log:
        for m in msgs:
            log(m)
    back = list(can.LogReader(str(out)))
    # SPEC §13.1: no record holds these as given (pycan-test_CanFdMessage64.blf has two, an
    # 11-bit frame with id 0x15555555); they are counted, not written altered
    refused = [m for m in msgs if not m.is_extended_id and not m.is_error_frame and m.arbitration_id > 0x7FF]
    assert sorted(map(key, back)) == sorted(map(key, [m for m in msgs if m not in refused]))
    assert [m.timestamp for m in back] == sorted(m.timestamp for m in back)  # one time order, all buses
    with logb.LogbFile(out) as f:
        assert f.report.clean and f.sessions[0].time_base == ("unix" if msgs[0].timestamp > 6e8 else "relative")
        assert f.sessions[0].meta["logb.durability"].startswith("frame;")
    counters = lost_counters(out)
    assert sum(c[tables.LOST_INVALID] for c in counters.values()) == len(refused)
    assert all(c[tables.LOST_BUFFER] == 0 for c in counters.values())


@pytest.mark.skipif(not SOURCES, reason="../shared/data/traces not present")
def test_logconvert_both_ways(tmp_path):
    src = TRACES / "lancer-candump.log"
    for a, b in ((src, tmp_path / "l.logb"), (tmp_path / "l.logb", tmp_path / "back.log")):
        r = subprocess.run([sys.executable, "-m", "can.logconvert", str(a), str(b)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
    direct = tmp_path / "direct.log"
    subprocess.run([sys.executable, "-m", "can.logconvert", str(src), str(direct)], check=True, timeout=120)
    assert (tmp_path / "back.log").read_text() == direct.read_text()


def test_dbc_writes_message_streams(tmp_path):
    out = tmp_path / "d.logb"
    with can.Logger(str(out), dbc=str(DBC)) as log:
        for i in range(50):  # ABS_6 (0x101) is a 8-byte message of fca_giorgio.dbc
            log(can.Message(timestamp=1.7e9 + i / 100, arbitration_id=0x101, is_extended_id=False,
                            data=bytes([i, 0, 0, 0, 0, 0, 0, i]), channel="can0"))
    with logb.LogbFile(out) as f:
        assert [a.name for a in f.attachments] == ["fca_giorgio.dbc"]
        abs6 = f.stream("ABS_6")
        assert abs6.records == 50
        assert list(abs6.columns(fields=["data"]).raw["data"][:, 0]) == list(range(50))
    assert len(list(can.LogReader(str(out)))) == 50


def test_invalid_frames_are_counted_not_altered(tmp_path):
    out = tmp_path / "i.logb"
    good = [can.Message(timestamp=10.0 + i, arbitration_id=0x123, data=b"\x01\x02", channel="can1") for i in range(3)]
    bad = [can.Message(timestamp=20.0, arbitration_id=0x800, is_extended_id=False, data=b"", channel="can1"),
           can.Message(timestamp=21.0, arbitration_id=1 << 29, is_extended_id=True, data=b"", channel="can1"),
           can.Message(timestamp=22.0, arbitration_id=0x1, is_fd=True, data=bytes(13), channel="can1"),
           can.Message(timestamp=23.0, arbitration_id=0x1, data=bytes(12), channel="can1"),  # classic, 12 bytes
           can.Message(timestamp=24.0, arbitration_id=0x1, dlc=8, data=b"\x00", channel="can1")]
    with can.Logger(str(out), fd=False) as log:
        for m in good[:2] + bad + good[2:]:
            log(m)
    assert sorted(map(key, can.LogReader(str(out)))) == sorted(map(key, good))
    assert lost_counters(out) == {"can1": {tables.LOST_BUFFER: 0, tables.LOST_INVALID: len(bad)}}


def test_append_adds_a_session(tmp_path):
    out = tmp_path / "a.logb"
    first = [can.Message(timestamp=1.7e9 + i, arbitration_id=i, data=b"\x01") for i in range(5)]
    second = [can.Message(timestamp=1.8e9 + i, arbitration_id=i, data=b"\x02") for i in range(7)]
    for batch, append in ((first, False), (second, True)):
        with can.Logger(str(out), append=append) as log:
            for m in batch:
                log(m)
    with logb.LogbFile(out) as f:
        assert len(f.sessions) == 2 and f.report.clean
    assert sorted(map(key, can.LogReader(str(out)))) == sorted(map(key, first + second))


# A writer process: can.Logger with a short flush, frames from a seeded generator; prints
# "sent N" after each hundred, then idles until killed.
WRITER = textwrap.dedent("""
    import random, sys, time
    import can
    n, pause = int(sys.argv[2]), float(sys.argv[3])
    rng = random.Random(7)
    log = can.Logger(sys.argv[1], flush_s=0.2)
    for i in range(n):
        log(can.Message(timestamp=1.7e9 + i / 1000, arbitration_id=rng.randrange(0x800),
                        data=rng.randbytes(rng.randrange(9)), channel="can0"))
        if i % 100 == 99:
            print("sent", i + 1, flush=True)
            time.sleep(pause)
    while True:
        time.sleep(1)
""")


def sent(n):
    rng = random.Random(7)
    return [can.Message(timestamp=1.7e9 + i / 1000, arbitration_id=rng.randrange(0x800),
                        data=rng.randbytes(rng.randrange(9)), channel="can0") for i in range(n)]


def writer(tmp_path, n, pause):
    script = tmp_path / "w.py"
    script.write_text(WRITER)
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / "k.logb"), str(n), str(pause)],
                            stdout=subprocess.PIPE, text=True)


def test_killed_writer_leaves_every_sealed_frame(tmp_path):
    n = 1000
    p = writer(tmp_path, n, 0)
    try:
        assert p.stdout.readline().split() == ["sent", "100"]
        for _ in range(9):
            p.stdout.readline()
        # the flush thread seals what waits within flush_s: wait for the file to hold it all
        deadline = time.monotonic() + 60
        while len(list(can.LogReader(str(tmp_path / "k.logb")))) < n and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
    with logb.LogbFile(tmp_path / "k.logb") as f:
        assert not f.sessions[0].ended and not f.report.skipped  # no END, no damage
    assert list(map(key, can.LogReader(str(tmp_path / "k.logb")))) == list(map(key, sent(n)))


def test_killed_mid_write_keeps_a_prefix(tmp_path):
    n = 100_000
    p = writer(tmp_path, n, 0.01)
    try:
        p.stdout.readline()
        deadline = time.monotonic() + 60  # killed once a frame is sealed, while it writes more
        while not list(can.LogReader(str(tmp_path / "k.logb"))) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
    got = list(map(key, can.LogReader(str(tmp_path / "k.logb"))))
    assert 0 < len(got) < n  # what was sealed; what waited in RAM is lost
    assert got == list(map(key, sent(len(got))))  # nothing invented, nothing out of order

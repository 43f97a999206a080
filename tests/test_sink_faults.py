"""The device writer (firmware/logb, under CPython) when its sink fails, and what each
durability policy promises (firmware/README.md "Durability", docs/SPEC.md §13.9):

- a failed or short write costs the frames it cut, is counted in the file (file-scope META
  logb.lost.sink) and `logb verify` exits non-zero; the next frame starts a segment, so
  everything after it reads;
- a config read that fails at a rotation never gives a SCHEMA frame known to be wrong;
- a DATA frame is sealed at most flush_ms + flush_ms / 4 + one poll interval after its first
  record; full pages go to the sink as they fill under every policy, flushes follow the policy.
"""

import pathlib
import sys

import pytest

import logb
from logb.cli.main import main

sys.path.insert(0, str(pathlib.Path(__file__).parent / "firmware"))
import fwload  # noqa: E402
import fwtools  # noqa: E402

fw = fwload.load()
CAP = (512 - 40) // 8  # records of the 8-byte sensor stream in one DATA frame


class Sink:
    """Takes ranges (write(buf, off, n), as a MicroPython stream); the writes whose number
    (from 1) is in `fail` raise OSError ("raise") or take half and say so ("short"). Keeps what
    it took, each write (offset, length) and each flush (the length then)."""

    def __init__(self, fail=(), mode="raise"):
        self.data = bytearray()
        self.fail = set(fail)
        self.mode = mode
        self.i = 0
        self.writes = []
        self.flushes = []

    def write(self, buf, off=0, n=-1):
        if n < 0:
            n = len(buf) - off
        if not n:
            return 0
        self.i += 1
        if self.i in self.fail:
            if self.mode == "raise":
                raise OSError(5, "I/O error")
            n //= 2
        self.writes.append((len(self.data), n))
        self.data += bytes(memoryview(buf)[off:off + n])
        return n

    def flush(self):
        self.flushes.append(len(self.data))


def sensor_run(sink, n=3000, durability="close", flush_ms=100, step_us=1000, capacity=None):
    """n records i = 0.. of a u32 sensor stream, one every step_us, poll() after each."""
    clk = [0]
    w = fw.Writer(sink, session="ab" * 16, ticks=lambda: clk[0], durability=durability, flush_ms=flush_ms)
    st = w.add_sensor("s", [("i", "I", "")], capacity=capacity)
    for i in range(n):
        clk[0] += step_us
        st.append(clk[0], i)
        w.poll()
    w.close()
    return w


def sink_lost(w):
    """The writer's count of bytes its sink did not take (24-bit halves: no big int on a device)."""
    return w._sinklost[1] * 0x1000000 + w._sinklost[0]


def values(data):
    f = logb.LogbFile(bytes(data))
    got = f.stream("s").columns().raw["i"].tolist()
    return f, got


def verify(path, capsys):
    code = main(["verify", str(path)])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("durability", ["close", "frame"])
@pytest.mark.parametrize("mode", ["raise", "short"])
def test_a_failed_write_costs_the_frames_it_cut_and_is_counted(mode, durability, tmp_path, capsys):
    ref = Sink()
    sensor_run(ref, durability=durability)
    sink = Sink(fail={len(ref.writes) // 2}, mode=mode)
    w = sensor_run(sink, durability=durability)
    f, got = values(sink.data)
    lost = sink_lost(w)
    assert lost > 0 and f.sessions[0].meta["logb.lost.sink"] == str(lost) and f.sessions[0].ended
    # nothing invented or reordered; what is missing is one run: the frames the failed write cut
    assert got == sorted(set(got)) and set(got) <= set(range(3000)) and got[-1] == 2999
    missing = sorted(set(range(3000)) - set(got))
    assert missing and missing == list(range(missing[0], missing[-1] + 1))
    assert len(missing) <= 3 * CAP  # the page (or flush) it failed, the frames cut at either end
    # END's session_bytes counts what the sink took: no note says it leads nowhere
    assert not [n for n in f.report.notes if "session_bytes" in n.message]
    (tmp_path / "r.logb").write_bytes(sink.data)
    code, out = verify(tmp_path / "r.logb", capsys)
    assert code in (1, 4) and "logb.lost.sink" in out and f"could not write {lost} bytes" in out


def test_a_loss_between_frames_is_not_silent(tmp_path, capsys):
    """A durability flush of whole frames that the sink refuses leaves no damage in the file:
    only the counter tells, and verify exits 4 (0 before logb.lost.sink)."""
    ref = Sink()
    sensor_run(ref, durability="frame", capacity=10)  # 120-byte frames: several whole ones a page
    data_ends = {fr.end for fr in fwtools_frames(ref.data) if fr.type == 0x20}
    data_starts = {fr.offset for fr in fwtools_frames(ref.data) if fr.type == 0x20}
    k = next(i for i, (off, n) in enumerate(ref.writes, 1) if i > 10 and off in data_starts and off + n in data_ends)
    sink = Sink(fail={k})
    w = sensor_run(sink, durability="frame", capacity=10)
    f, got = values(sink.data)
    assert f.report.clean and len(got) == 3000 - 10 and sink_lost(w) == ref.writes[k - 1][1]
    (tmp_path / "r.logb").write_bytes(sink.data)
    code, out = verify(tmp_path / "r.logb", capsys)
    assert code == 4 and "DATA LOST BY THE WRITER" in out
    (tmp_path / "ok.logb").write_bytes(ref.data)
    assert verify(tmp_path / "ok.logb", capsys)[0] == 0


def fwtools_frames(data):
    from logb.scan import Report, check_header, iter_frames

    rep = Report()
    return list(iter_frames(bytes(data), rep, check_header(bytes(data), rep)))


def test_an_outage_of_401_writes_is_counted_and_what_follows_reads(tmp_path, capsys):
    sink = Sink(fail=range(20, 421))
    w = sensor_run(sink, n=60000)
    f, got = values(sink.data)
    lost = sink_lost(w)
    assert lost >= 401 * 256 and f.sessions[0].meta["logb.lost.sink"] == str(lost)
    # one segment tried at the first failure (its pages failed too), the next once a write succeeded:
    # a sink that keeps failing costs no rotation per frame
    assert w._seq == 2 and len(f.segments) == 2
    assert got == sorted(set(got)) and got[-1] == 59999
    missing = sorted(set(range(60000)) - set(got))
    assert missing == list(range(missing[0], missing[-1] + 1))  # one run: the outage
    assert len(missing) * 8 <= lost + 3 * 512
    (tmp_path / "r.logb").write_bytes(sink.data)
    code, out = verify(tmp_path / "r.logb", capsys)
    assert code != 0 and f"could not write {lost} bytes" in out
    info = logb.cli.info.summary(f)
    assert info["sessions"][0]["lost_sink"] == lost


class FailingConfig:
    """The open config file, whose readinto calls number `fail` (from 1) raise or give nothing."""

    def __init__(self, f, fail, mode):
        self.f = f
        self.fail = fail
        self.mode = mode
        self.i = 0

    def seek(self, off):
        return self.f.seek(off)

    def readinto(self, b):
        self.i += 1
        if self.i in self.fail:
            if self.mode == "raise":
                raise OSError(5, "I/O error")
            return 0
        return self.f.readinto(b)

    def close(self):
        self.f.close()


@pytest.fixture(scope="module")
def cfg_file(tmp_path_factory):
    cfg, compiled = fwtools.compile_config()
    p = tmp_path_factory.mktemp("cfg") / "c.lbcf"
    p.write_bytes(cfg)
    return p, [(e.frame_id, e.extended, e.payload_len) for e in compiled.entries if not e.mux]


@pytest.mark.parametrize("mode", ["raise", "eof"])
def test_a_config_read_failing_at_a_rotation_writes_no_wrong_schema(cfg_file, mode, tmp_path, capsys):
    path, msgs = cfg_file
    sink = Sink()
    clk = [0]
    w = fw.Writer(sink, session="cd" * 16, ticks=lambda: clk[0], segment_bytes=8192, durability="close")
    streams = w.load_config(str(path))
    reads = {}

    def feed(k):
        for i in range(k):
            clk[0] += 100
            cid, ext, n = msgs[i % len(msgs)]
            w.append_can(clk[0], cid, bytes(n), 1 if ext else 0)

    feed(200)  # the first segment is out: its schemas read once
    first = w._cfg
    reads["per_segment"] = 0
    w._cfg = FailingConfig(first, set(), mode)
    seq = w._seq
    while w._seq == seq:
        feed(1)
    reads["per_segment"] = w._cfg.i
    w._cfg = FailingConfig(first, {w._cfg.i + reads["per_segment"] // 2}, mode)  # mid-way through the next
    feed(6000)
    w.close()
    assert w.errors == 1
    data = bytes(sink.data)
    cfg = path.read_bytes()
    told = 0
    for st in streams:
        if st.src is None:
            continue
        off, n, head, tail = st.src
        p = data.find(head)
        while p >= 0:
            if data[p + 8 + n:p + 12 + n] == tail:  # a frame claiming the config's CRC holds its payload
                assert data[p + 8:p + 8 + n] == cfg[off:off + n], f"stream {st.name}: SCHEMA with a wrong CRC"
                told += 1
            p = data.find(head, p + 1)
    assert told > len(streams)  # (the check saw the restated schemas)
    f = logb.LogbFile(data)
    f.validate()
    written = sum(st.records for st in w.streams)
    read = sum(s.records for s in f.streams.values())
    assert 0.9 * written < read <= written  # at most the segment the cut schema began is skipped
    (tmp_path / "r.logb").write_bytes(data)
    assert verify(tmp_path / "r.logb", capsys)[0] == 1


# ---------------------------------------------------------------- durability
@pytest.mark.parametrize("flush_ms", [40, 100, 1000])
def test_seal_latency_bound(flush_ms):
    """One record, then poll() every 1 ms until its frame is sealed (written: durability "frame"),
    for first records at every 1 ms phase of the poll scan: never before flush_ms, at most
    flush_ms + flush_ms // 4 + 1 ms after, and that bound is reached (within the poll step)."""
    poll_us = 1000
    scan = flush_ms * 1000 // 4
    sink = Sink()
    clk = [0]
    w = fw.Writer(sink, session="ef" * 16, ticks=lambda: clk[0], durability="frame", flush_ms=flush_ms)
    st = w.add_sensor("s", [("i", "I", "")])
    lat = []
    for phase in range(0, scan + poll_us, poll_us):  # the poll scan's schedule runs on throughout
        for _ in range(1 + phase // poll_us):  # idle, no frame open: every phase against the scan
            clk[0] += poll_us
            w.poll()
        t0 = clk[0]
        f0 = st.frames
        st.append(t0, phase)
        while st.frames == f0:
            clk[0] += poll_us
            w.poll()
        assert sink.flushes[-1] == len(sink.data) == w.position  # sealed = written and flushed
        lat.append(clk[0] - t0)
    w.close()
    bound = flush_ms * 1000 + scan + poll_us
    assert min(lat) >= flush_ms * 1000 and max(lat) <= bound and max(lat) >= bound - 2 * poll_us
    # and logb.durability says so
    assert f"sealed when full or {flush_ms} to {-(-(flush_ms * 1000 + scan) // 1000)} ms (+1 poll) after" in \
        w.durability


@pytest.mark.parametrize("durability", ["frame", "segment", "close"])
def test_what_is_written_and_flushed_at_each_moment(durability):
    """After every call: "frame": all the writer was given is written and flushed; "segment"
    and "close": all but the last partial page is written (full pages go out as they fill);
    "segment": flushed up to the current segment's SYNC; "close": never flushed before close."""
    sink = Sink()
    clk = [0]
    w = fw.Writer(sink, session="12" * 16, ticks=lambda: clk[0], durability=durability, flush_ms=100,
                  segment_bytes=6000)
    st = w.add_sensor("s", [("i", "I", "")])
    syncs = []
    seq = -1
    for i in range(5000):
        clk[0] += 700
        st.append(clk[0], i)
        w.poll()
        pos = w.position
        written = len(sink.data)
        flushed = sink.flushes[-1] if sink.flushes else 0
        if w._seq != seq:
            seq = w._seq
            syncs.append(i)
        if durability == "frame":
            assert written == flushed == pos or w._seq < 0  # (the file header waits for the first frame)
        else:
            assert 0 <= pos - written < 512 and written % 512 == 0
            if durability == "close":
                assert not sink.flushes
    w.close()
    assert sink.flushes[-1] == len(sink.data) == w.position
    fl = fwtools_frames(sink.data)
    sync_at = [fr.offset for fr in fl if fr.type == 0x01]
    assert len(sync_at) > 5
    if durability == "segment":
        assert sink.flushes == sync_at[1:] + [len(sink.data)]
    elif durability == "close":
        assert sink.flushes == [len(sink.data)]
    else:
        assert {fr.end for fr in fl if fr.type == 0x20} <= set(sink.flushes)

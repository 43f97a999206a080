"""The one frame scanner (logb.scan.FrameScanner): fed in any chunking it
reports exactly what the whole-buffer scan reports, on clean, cut, damaged
and concatenated inputs; a hostile length cannot make it hold the input; and
the link-side walkers (logb pull's FrameCheck, logb tail's LiveDecoder)
report the reader's skipped ranges with the documented causes only."""

import pathlib
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import _frames
import handmade
import logb
from logb.scan import FrameRef, FrameScanner, Resync, Skip
from logb.serial.live import LiveDecoder
from logb.serial.pull import FrameCheck
from test_recovery import build

CORPUS = sorted((pathlib.Path(__file__).parent.parent / "corpus").glob("*.logb"))
CAUSES = {"truncated", "crc mismatch", "length past end", "embedded file header", "bad file header",
          "unsupported version"}


def _key(ev):
    if isinstance(ev, FrameRef):  # a fed Frame carries its payload; the offsets are what must agree
        return ("frame", ev.offset, ev.type, ev.flags, ev.stream_id, ev.payload_len)
    if isinstance(ev, Skip):
        return ("skip", ev.start, ev.end, ev.cause)
    assert isinstance(ev, Resync)
    return ("resync", ev.offset)


def whole(data):
    sc = FrameScanner(recover=True)
    return [_key(ev) for ev in sc.scan(data)], sc.truncated_at


def fed(data, sizes):
    """Feed `data` in pieces of the given sizes (cycled), then close."""
    sc = FrameScanner(recover=True)
    events, pos, k = [], 0, 0
    while pos < len(data):
        n = sizes[k % len(sizes)]
        events += sc.feed(data[pos:pos + n])
        pos, k = pos + n, k + 1
    events += sc.close()
    return [_key(ev) for ev in events], sc.truncated_at


@pytest.fixture(scope="module")
def sample():
    data, _written = build(batches=6)
    return data


def inputs(sample):
    """Clean, cut, damaged and concatenated variants of one multi-segment file."""
    frames = _frames.walk(sample)
    syncs = [o for o, t, _s, _n in frames if t == 0x01]
    flipped = bytearray(sample)
    flipped[syncs[1] + 30] ^= 0x10
    hostile = bytearray(sample)
    hostile[frames[3][0]:frames[3][0] + 4] = struct.pack("<I", 0xFFFFFFF0)
    return {
        "clean": sample,
        "cut in a frame": sample[:frames[-2][0] + 7],
        "cut in a header": sample[:frames[-2][0] + 5],
        "flipped payload bit": bytes(flipped),
        "hostile length": bytes(hostile),
        "damage at the tail": sample[:-3] + b"\x00\x01\x02",
        "cat with its header": sample + sample,
        "cat -b": sample + sample[16:],
        "cat of a v1 file": sample + handmade.header(1) + sample[16:],
        "bad header": b"\x00" * 16 + sample[16:],
        "no frames": sample[:16],
        "empty": b"",
    }


def test_every_chunking_gives_the_whole_scan(sample):
    for name, data in inputs(sample).items():
        want = whole(data)
        assert fed(data, [len(data) or 1]) == want, name
        assert fed(data, [1]) == want, name
        for seed in range(3):
            rnd = random.Random(seed)
            assert fed(data, [rnd.randint(1, 700) for _ in range(50)]) == want, name


def test_the_whole_scan_is_what_the_reader_reports(sample):
    for name, data in inputs(sample).items():
        events, truncated_at = whole(data)
        rep = logb.LogbFile(data, recover=True).report
        assert [e[1:] for e in events if e[0] == "skip"] == [(s.start, s.end, s.cause) for s in rep.skipped], name
        assert sum(e[0] == "frame" for e in events) == rep.frames, name
        assert [e[1] for e in events if e[0] == "resync"] == [n.offset for n in rep.notes if n.kind == "resync"]
        assert (truncated_at, truncated_at is not None) == (rep.truncated_at, rep.truncated), name


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_fed_byte_by_byte(path):
    data = path.read_bytes()
    try:
        want = whole(data)
    except logb.UnsupportedVersionError:
        with pytest.raises(logb.UnsupportedVersionError):
            fed(data, [1])
        return
    assert fed(data, [1]) == want
    assert {e[3] for e in want[0] if e[0] == "skip"} <= CAUSES


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_damage_and_chunking(sample, data):
    buf = bytearray(sample)
    for _ in range(data.draw(st.integers(0, 4), label="flips")):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.integers(0, len(buf)), label="cut")
    buf = bytes(buf[:cut])
    sizes = data.draw(st.lists(st.integers(1, 400), min_size=1, max_size=20), label="chunks")
    assert fed(buf, sizes) == whole(buf)


def test_a_hostile_length_is_not_held():
    """A frame claiming 4 GiB, then megabytes of noise with sync patterns in it,
    then a segment: the fed scanner holds a bounded amount throughout."""
    good = handmade.sync(1) + handmade.meta([("k", "v")])
    noise = bytes(random.Random(1).randbytes(1 << 20)).replace(b"\x00", b"\x01")
    noise += (handmade.PATTERN + b"\xff" * 40) * 100  # patterns not preceded by a SYNC frame header
    data = handmade.header() + struct.pack("<IBBH", 0xFFFFFFF0, 0x20, 0, 1) + noise * 4 + good
    sc = FrameScanner()
    events, most = [], 0
    for i in range(0, len(data), 4096):
        events += sc.feed(data[i:i + 4096])
        most = max(most, sc.held)
    events += sc.close()
    assert most < 2 * 4096
    q = len(data) - len(good)
    assert [_key(e) for e in events if not isinstance(e, FrameRef)] == [("skip", 16, q, "length past end"),
                                                                         ("resync", q)]
    assert [_key(e) for e in events] == whole(data)[0]


def test_a_frame_over_the_fed_limit_is_resynced_past():
    """Fed, a frame longer than max_payload is treated as running past the end
    of the input; the whole-buffer scan, which has the bytes, reads it."""
    big = handmade.frame(0x20, b"\x00" * 5000, 1)
    tail = handmade.sync(2)
    data = handmade.header() + handmade.sync(1) + big + tail
    at = len(handmade.header() + handmade.sync(1))
    sc = FrameScanner(max_payload=4096)
    events = [_key(e) for i in range(0, len(data), 512) for e in sc.feed(data[i:i + 512])]
    events += [_key(e) for e in sc.close()]
    assert events[1:] == [("skip", at, at + len(big), "length past end"), ("resync", at + len(big)),
                          ("frame", at + len(big), 0x01, 0, 0, len(tail) - 12)]
    assert sc.held == 0
    assert ("frame", at, 0x20, 0, 1, 5000) in whole(data)[0]


def test_fed_frames_carry_their_payloads(sample):
    sc = FrameScanner()
    frames = [e for i in range(0, len(sample), 100) for e in sc.feed(sample[i:i + 100])]
    assert [(f.offset, f.type, f.stream_id, f.payload_len) for f in frames] == _frames.walk(sample)
    assert all(f.payload() == sample[f.payload_offset:f.end - 4] for f in frames)


def test_link_walkers_report_the_readers_skips(sample):
    """logb pull's FrameCheck and logb tail's LiveDecoder see the same damage
    as the reader, at the same offsets, with the documented causes."""
    for name, data in inputs(sample).items():
        if name in ("empty", "cat of a v1 file"):
            continue
        rep = logb.LogbFile(data, recover=True).report
        want = [(s.start, s.cause) for s in rep.skipped]
        fc = FrameCheck()
        for i in range(0, len(data), 333):
            fc.feed(data[i:i + 333])
        fc.close()
        assert fc.damage == want, name
        assert fc.frames == rep.frames, name
        dec = LiveDecoder()
        events = [ev for i in range(0, len(data), 333) for ev in dec.feed(data[i:i + 333])]
        live = [(a, b) for kind, a, b in events if kind == "damage"]
        # a live stream never ends: damage that runs to the end is still waiting for its SYNC
        assert live == [(s.start, s.cause) for s in rep.skipped if s.end < len(data)], name
        assert {c for _, c in live} <= CAUSES


# ---------------------------------------------------------------- the reader by window (bounded memory)

def _reading(f):
    """Everything a reader reports about an input: damage, notes, and every stream's records."""
    f.validate()
    rep = f.report
    streams = []
    for s in sorted(f.streams.values(), key=lambda s: s.uuid):
        cols = s.columns() if s.schema is not None else None
        streams.append((s.name, s.records, s.rejected, s.rejections,
                        None if cols is None else {k: v.tolist() for k, v in cols.raw.items()},
                        None if cols is None else cols.axis.tolist()))
    return (rep.size, rep.header, [s.as_json() for s in rep.skipped], [n.as_json() for n in rep.notes],
            rep.truncated, rep.truncated_at, rep.frames, rep.segment_breaks, streams,
            [(a.offset, a.name, a.problem) for a in f.attachments], f.unknown_frames, len(f.segments))


def _read(path, held, window=None, monkeypatch=None, **kw):
    with monkeypatch.context() as m:
        m.setattr(logb.source, "HOLD_MAX", 1 << 40 if held else -1)
        if window:
            m.setattr(logb.scan, "SOURCE_WINDOW", window)
        try:
            with logb.LogbFile(path, **kw) as f:
                assert (f._held is None) == (not held)
                return _reading(f)
        except logb.LogbError as exc:
            return type(exc).__name__


@pytest.mark.parametrize("window", [1, 100, 4096, None])
def test_the_reader_by_window_reports_what_the_held_reader_reports(sample, tmp_path, monkeypatch, window):
    for name, data in inputs(sample).items():
        path = tmp_path / "in.logb"
        path.write_bytes(data)
        for recover in (False, True):
            want = _read(path, True, monkeypatch=monkeypatch, recover=recover)
            assert _read(path, False, window, monkeypatch, recover=recover) == want, (name, recover)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_by_window(path, monkeypatch):
    for window in (7, 1000):
        for kw in ({}, {"recover": True}, {"strict": True}):
            assert _read(path, False, window, monkeypatch, **kw) == _read(path, True, monkeypatch=monkeypatch, **kw)


def test_a_file_read_by_window_is_not_held(tmp_path, monkeypatch):
    """The reader of a file over HOLD_MAX keeps no copy of it: reads are one
    window at a time and one DATA frame per decode."""
    data, _written = build(batches=40)
    path = tmp_path / "big.logb"
    path.write_bytes(data)
    reads = []
    real = logb.source.Source.readinto_at

    def counting(self, pos, view):
        reads.append(memoryview(view).nbytes)
        return real(self, pos, view)

    monkeypatch.setattr(logb.source.Source, "readinto_at", counting)
    monkeypatch.setattr(logb.source, "HOLD_MAX", 1000)
    monkeypatch.setattr(logb.scan, "SOURCE_WINDOW", 512)
    with logb.LogbFile(path) as f:
        assert f._held is None and f.source._buf is None
        longest = max(12 + n for _o, _t, _s, n in _frames.walk(data))
        assert len(reads) > 10 and max(reads) <= max(512, 2 * longest)  # a window, or twice a frame being read
        f.validate()
        assert f.source._buf is None and f.report.clean
    monkeypatch.setattr(logb.source, "HOLD_MAX", 1 << 40)
    with logb.LogbFile(path) as g:
        assert _reading(g)[:8] == _reading(logb.LogbFile(data))[:8]


def test_a_file_that_shrinks_under_the_reader_by_window_rejects_what_is_gone(tmp_path, monkeypatch):
    data, _written = build(batches=20)
    path = tmp_path / "shrinks.logb"
    path.write_bytes(data)
    monkeypatch.setattr(logb.source, "HOLD_MAX", -1)
    with logb.LogbFile(path) as f:
        before = {s.name: s.records for s in f.streams.values()}
        path.write_bytes(data[: len(data) // 2])
        f.validate()
        reasons = {r for s in f.streams.values() for _o, _n, r in s.rejections}
        assert reasons and all("shrank" in r for r in reasons)
        assert 0 < sum(s.records for s in f.streams.values()) < sum(before.values())

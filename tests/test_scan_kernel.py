"""The scan kernel with DATA headers (scan_data_frames: cbridge/scan.c and
its pure-Python twin): both give the same frame table, DATA headers and stop
on the corpus and on damaged or random input, the table is scan_frames', the
headers are frames.DataHeader's; and the scanner's runs (Run) are its frames."""

import pathlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import handmade
import logb
from logb import _backend, _kernels
from logb.frames import DATA_HEADER
from logb.framing import FILE_HEADER_SIZE
from logb.scan import FrameRef, Report, Run, iter_frames, iter_source_frames
from logb import source
from logb.source import Source
from test_recovery import build

pytestmark = pytest.mark.single_backend  # each test runs both backends itself

CORPUS = sorted((pathlib.Path(__file__).parent.parent / "corpus").glob("*.logb"))
DATA = _kernels.FRAME_DATA


def _c():
    c = _backend.load_c()
    if c is None:
        pytest.fail(f"the C backend should load but does not: {_backend.load_error}", pytrace=False)
    return c


def _walk(kernels, data, pos, cap=_kernels.SCAN_CAP):
    """Every run of the input: scan_data_frames from `pos`, again from the byte after
    wherever a run stops short of the end (as a resync would look further)."""
    out = []
    while True:
        table, heads, stop, status = kernels.scan_data_frames(data, pos, 0, cap)
        out.append((table.tolist(), heads.tolist(), stop, status))
        if status == _kernels.SCAN_FULL:
            pos = stop
        elif status == _kernels.SCAN_END or stop >= len(data):
            return out
        else:
            pos = stop + 1


def _expected_heads(data, table):
    """The DATA header of each listed frame, read here with struct (zeros for the rest)."""
    out = []
    for offset, plen, _sid, ftype, _flags in table:
        if ftype == DATA and plen >= 28:
            axis, count, run_id, codec, filt, reserved, raw_size = DATA_HEADER.unpack_from(data, offset + 8)
            out.append((raw_size, axis, count, run_id, codec, filt, reserved, 1))
        else:
            out.append((0, bytes(8), 0, 0, 0, 0, 0, 0))
    return out


def _both(data, pos, cap=_kernels.SCAN_CAP):
    """The walk by both backends (the C one with both CRCs), checked alike; returns it."""
    want = _walk(_backend.PY, data, pos, cap)
    c = _c()
    try:
        for mode in ("sw", "auto"):
            c.set_crc(mode)
            assert _walk(c, data, pos, cap) == want, mode
    finally:
        c.set_crc("auto")
    for rows, heads, stop, status in want:
        assert heads == _expected_heads(data, rows)
        table, frame_stop, frame_status = _backend.PY.scan_frames(data, stop if not rows else rows[0][0], 0, cap)
        if rows:
            assert (table.tolist(), frame_stop, frame_status) == (rows, stop, status)
    return want


@st.composite
def data_runs(draw):
    """DATA frames (payloads around the 28-byte header) among others, after stray
    bytes, then damage: a flipped byte, a cut, a hostile length, junk or none."""
    frames = []
    for _ in range(draw(st.integers(0, 8))):
        ftype = draw(st.sampled_from([DATA, DATA, 0x01, 0x10, 0x21, draw(st.integers(0, 255))]))
        size = draw(st.sampled_from([0, 27, 28, 29, 40, 64]))
        frames.append(handmade.frame(ftype, draw(st.binary(min_size=size, max_size=size)),
                                     draw(st.integers(0, 0xFFFF)), draw(st.integers(0, 255))))
    data = bytearray(draw(st.binary(max_size=5)) + b"".join(frames))
    damage = draw(st.sampled_from(["none", "flip", "cut", "length", "junk"]))
    if data and damage == "flip":
        data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
    elif damage == "cut":
        del data[draw(st.integers(0, len(data))):]
    elif damage == "length":
        data += struct.pack("<IBBH", draw(st.sampled_from([0xFFFFFFFF, 0xFFFFFFF4, 1 << 31, 100])), DATA, 0, 1)
    elif damage == "junk":
        data += draw(st.binary(max_size=30))
    return bytes(data), draw(st.integers(0, 5))


@settings(max_examples=300, deadline=None)
@given(data_runs(), st.sampled_from([1, 2, 3, _kernels.SCAN_CAP]))
def test_c_and_python_give_the_same_tables_and_data_headers_on_random_input(run, cap):
    data, pos = run
    _both(data, min(pos, len(data)), cap)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_c_and_python_give_the_same_tables_and_data_headers_on_the_corpus(path):
    data = path.read_bytes()
    _both(data, min(FILE_HEADER_SIZE, len(data)))


def test_damaged_inputs_give_the_same_tables_and_data_headers():
    clean, _ = build(batches=12)
    cases = [clean, clean[: len(clean) // 2], clean[:-3]]
    for at in range(FILE_HEADER_SIZE, len(clean), max(1, len(clean) // 40)):
        cases.append(clean[:at] + bytes([clean[at] ^ 0x10]) + clean[at + 1 :])
    for data in cases:
        walk = _both(data, FILE_HEADER_SIZE)
        assert sum(h[7] for _rows, heads, _s, _st in walk for h in heads)  # DATA headers were parsed


def _frames_of(events):
    """Runs expanded into the FrameRef keys they stand for; other events as they are."""
    out = []
    for ev in events:
        if type(ev) is Run:
            assert len(ev.table) == len(ev.heads)
            out += [("frame", *row) for row in ev.table.tolist()]
        elif type(ev) is FrameRef:
            out.append(("frame", ev.offset, ev.payload_len, ev.stream_id, ev.type, ev.flags))
        else:
            out.append(ev)
    return out


def _inputs():
    clean, _ = build(batches=8)
    out = [clean, clean[:-5], clean + clean[FILE_HEADER_SIZE:]]
    for at in range(FILE_HEADER_SIZE, len(clean), max(1, len(clean) // 25)):
        out.append(clean[:at] + bytes([clean[at] ^ 0x01]) + clean[at + 1 :])
    return out + [p.read_bytes() for p in CORPUS]


@pytest.mark.parametrize("backend", ["c", "python"])
def test_the_scanners_runs_are_its_frames(backend):
    with _backend.using(backend):
        for data in _inputs():
            if len(data) < FILE_HEADER_SIZE:
                continue
            reports = Report(), Report()
            runs = _frames_of(iter_frames(data, reports[0], FILE_HEADER_SIZE, runs=True))
            frames = _frames_of(iter_frames(data, reports[1], FILE_HEADER_SIZE))
            assert runs == frames
            assert reports[0] == reports[1]


@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("window", [64, 4096, None])
@pytest.mark.parametrize("readahead", [False, True])
def test_the_windowed_scanners_runs_are_its_frames(backend, window, readahead):
    # read ahead, a window is a buffer of stale bytes, the last window's tail and a new chunk
    with _backend.using(backend):
        for data in _inputs():
            reports = Report(), Report()
            try:
                by_run = [(tuple(row), bytes(view[row[0] - base + 8 : row[0] - base + 8 + row[1]]))
                          for run, view, base in iter_source_frames(Source(data), reports[0], recover=True,
                                                                    window=window, runs=True, readahead=readahead)
                          for row in run.table.tolist()]
                by_frame = [((fr.offset, fr.payload_len, fr.stream_id, fr.type, fr.flags), bytes(payload))
                            for fr, payload in iter_source_frames(Source(data), reports[1], recover=True,
                                                                  window=window)]
            except logb.LogbError as exc:  # an unsupported version: both must raise it
                with pytest.raises(type(exc)):
                    list(iter_source_frames(Source(data), Report(), recover=True, window=window, runs=True))
                continue
            assert by_run == by_frame
            assert reports[0] == reports[1]


@pytest.mark.parametrize("backend", ["c", "python"])
def test_a_file_read_ahead_reads_as_one_read_in_step(backend, tmp_path, monkeypatch):
    monkeypatch.setattr(source, "HOLD_MAX", 0)  # by window, as a file too large to hold is read
    path = tmp_path / "f.logb"
    with _backend.using(backend):
        for window in (64, 1000, None):
            monkeypatch.setattr(logb.scan, "SOURCE_WINDOW", window or 1 << 20)
            monkeypatch.setattr(logb.scan, "READ_AHEAD_CHUNK", window or 2 << 20)
            for data in _inputs()[:12]:
                path.write_bytes(data)
                seen = []
                for readahead in (False, True):
                    try:
                        with logb.LogbFile(path, recover=True, readahead=readahead) as f:
                            seen.append(([n.as_json() for n in f.report.notes], [k.as_json() for k in f.report.skipped],
                                         f.report.frames, sorted((s.uuid, s.records) for s in f.streams.values())))
                    except logb.LogbError as exc:
                        seen.append(type(exc).__name__)
                assert seen[0] == seen[1]


def test_a_read_error_ahead_is_raised_in_the_scan(tmp_path):
    clean, _ = build(batches=8)

    class Failing(Source):
        def readinto_at(self, pos, view):
            if pos > 1000:
                raise OSError("the disk went away")
            return super().readinto_at(pos, view)

    with pytest.raises(OSError, match="went away"):
        list(iter_source_frames(Failing(clean), Report(), window=256, readahead=True))

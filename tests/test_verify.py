"""logb verify's frame checks (logb.verify): the same verdict as decoding
every frame (LogbFile.validate), and the same on any number of threads, on
the corpus and on damaged files; the time axis range proved from the header
where it can be, checked record by record where it cannot."""

import io
import json
import pathlib
import struct

import numpy as np
import pytest

import _frames
import logb
from logb.cli.main import main
from logb import source
from logb._kernels import field_window
from logb.tables import Codec
from logb.verify import Checker, verify
from test_recovery import build

CORPUS = sorted((pathlib.Path(__file__).parent.parent / "corpus").glob("*.logb"))


def _outcome(data, how, **kw):
    """Everything validate settles: damage, notes, rejections, record counts, the INDEX verdicts.
    `how`: "validate", or a thread count for verify, which checks the frames both
    as the scan reads them (a Checker) and read again after it, alike."""
    if how != "validate":
        in_scan = _settled(data, how, Checker(how), **kw)
        assert _settled(data, how, None, **kw) == in_scan
        return in_scan
    return _settled(data, how, None, **kw)


def _settled(data, how, checker, **kw):
    try:
        with logb.LogbFile(data, on_data=checker, **kw) as f:
            if how == "validate":
                f.validate()
            else:
                verify(f, how, checker)
            streams = sorted((s.uuid, s.records, s.rejected, s.rejections, len(s.frames)) for s in f.streams.values())
            return ([n.as_json() for n in f.report.notes], [s.as_json() for s in f.report.skipped], streams,
                    f.index_valid)
    except logb.LogbError as exc:
        return type(exc).__name__, str(exc)


def _damaged():
    """Files whose DATA frames fail in each way a frame check can find (CRCs refitted)."""
    clean, _ = build(batches=30)
    data = [o for o, t, _s, _n in _frames.walk(clean) if t == 0x20]
    out = {"clean": clean}
    # a zstd frame's compressed bytes scrambled, a raw_size that lies, a record count that lies
    zstd = [o for o in data if clean[o + 8 + 16] == Codec.zstd]
    plain = [o for o in data if clean[o + 8 + 16] == Codec.none]
    out["zstd garbage"] = _frames.patch(clean, zstd[3], 8 + 28 + 6, b"\xff\x00\xff\x00")
    out["raw_size"] = _frames.patch(clean, plain[2], 8 + 20, struct.pack("<Q", 7))
    out["count"] = _frames.patch(clean, plain[5], 8 + 8, struct.pack("<I", 2))
    out["several"] = _frames.patch(_frames.patch(out["zstd garbage"], zstd[9], 8 + 28 + 6, b"\x01\x02\x03"),
                                   plain[7], 8 + 20, struct.pack("<Q", 5))
    out["crc flip"] = clean[: data[4] + 40] + bytes([clean[data[4] + 40] ^ 1]) + clean[data[4] + 41 :]
    return out


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_verify_is_validate_on_any_thread_count(path):
    data = path.read_bytes()
    for kw in ({}, {"recover": True}, {"strict": True}):
        want = _outcome(data, "validate", **kw)
        for jobs in (1, 2, 3):
            assert _outcome(data, jobs, **kw) == want, (kw, jobs)


def test_damaged_files_verify_is_validate_on_any_thread_count():
    for name, data in _damaged().items():
        for kw in ({}, {"strict": True}):
            want = _outcome(data, "validate", **kw)
            if name != "clean" and not kw:
                assert any(s[2] for s in want[2]) or want[1], name  # the damage was seen
            for jobs in (1, 2, 4):
                assert _outcome(data, jobs, **kw) == want, (name, kw, jobs)


@pytest.mark.parametrize("by_window", [False, True])
def test_cli_verify_json_is_the_same_serial_and_parallel(tmp_path, monkeypatch, by_window):
    if by_window:  # read a window at a time (ahead, on a thread, with --jobs > 1), as a large file is
        monkeypatch.setattr(source, "HOLD_MAX", 0)
        monkeypatch.setattr(logb.scan, "SOURCE_WINDOW", 700)
        monkeypatch.setattr(logb.scan, "READ_AHEAD_CHUNK", 900)
    for name, data in _damaged().items():
        path = tmp_path / "f.logb"
        path.write_bytes(data)
        outs = []
        for jobs in ("1", "2", "4"):
            out = io.StringIO()
            rc = main(["verify", "--json", "--jobs", jobs, str(path)], out=out)
            outs.append((rc, json.loads(out.getvalue())))
        assert outs[0] == outs[1] == outs[2], name
        assert (outs[0][0] == 0) == (name == "clean"), name


def _time_stream(width, signed, scale, values, axis_base):
    schema = logb.Schema(
        uuid=logb.stream_uuid("test", "t"), name="t", record_bits=width, axis_kind=logb.AxisKind.time,
        axis_mode=logb.AxisMode.explicit, axis_exp=-6, axis_unit="s", axis_scale=scale, axis_field=0,
        fields=(logb.Field("t", 0, width, logb.DataType.sint if signed else logb.DataType.uint),))
    buf = io.BytesIO()
    with logb.Writer(buf, time_base="relative") as w:
        s = w.add_stream(schema)
        s.write_batch({"t": np.array(values, np.int64 if signed else np.uint64)}, axis_base=axis_base)
    return buf.getvalue()


I64_MAX = (1 << 63) - 1


@pytest.mark.parametrize("width, signed, scale, values, base, rejected", [
    (16, False, 1, [1, 2, 3], 0, False),  # proved from the width
    (16, False, 1, [1, 2, 3], I64_MAX - 10, False),  # not provable; the records are in range
    (16, False, 1, [1, 2, 30], I64_MAX - 10, True),  # they are not
    (64, False, 1, [1, 2, 3], 0, False),  # a 64-bit field is never provable
    (8, True, -(1 << 40), [-128, 5], -I64_MAX + (1 << 40) * 4, True),  # a negative scale, under
    (8, True, -(1 << 40), [-1, 5], -I64_MAX + (1 << 40) * 6, False),
])
def test_the_axis_range_verdict_is_validates(width, signed, scale, values, base, rejected):
    data = _time_stream(width, signed, scale, values, 0)
    at = next(o for o, t, _s, _n in _frames.walk(data) if t == 0x20)
    data = _frames.patch(data, at, 8, struct.pack("<q", base))  # the frame's axis_base (CRC refitted)
    want = _outcome(data, "validate")
    assert any(s[2] for s in want[2]) == rejected
    assert _outcome(data, 1) == want


def _indexed(fields, columns, frames=4, codec=Codec.none, record_bits=None):
    """An indexed file: `frames` DATA frames of an explicit time axis (field 0), codec `codec`, no filter."""
    schema = logb.Schema(
        uuid=logb.stream_uuid("test", "ix"), name="ix", record_bits=record_bits or sum(f.bit_width for f in fields),
        axis_kind=logb.AxisKind.time, axis_mode=logb.AxisMode.explicit, axis_exp=-6, axis_unit="s",
        axis_scale=1, axis_field=0, fields=tuple(fields))
    buf = io.BytesIO()
    with logb.Writer(buf, time_base="relative") as w:
        s = w.add_stream(schema, codec=codec, transpose=False)
        for k in range(frames):
            s.write_batch(columns(k), axis_base=1000 * k)
    return buf.getvalue()


@pytest.mark.parametrize("order", [logb.ByteOrder.little, logb.ByteOrder.big])
@pytest.mark.parametrize("width, signed", [(13, True), (13, False), (62, True), (64, False)])
def test_an_index_claim_is_checked_without_reading_the_frame(order, width, signed):
    # An unaligned axis field (3 bits in; 62 and 64 bits span 9 bytes) of each
    # order: the first value read from one record's bytes must be the one decoding gives.
    dt = logb.DataType.sint if signed else logb.DataType.uint
    fields = [logb.Field("t", 3, width, dt, order)]
    rng = np.random.default_rng(width)
    vals = [np.sort(rng.integers(-1000 if signed else 0, 1000, 5)).astype(np.int64 if signed else np.uint64)
            for _ in range(4)]
    data = _indexed(fields, lambda k: {"t": vals[k]}, record_bits=width + 3)
    at = [o for o, t, _s, _n in _frames.walk(data) if t == 0x20]
    want = _outcome(data, "validate")
    assert all(want[3].values())  # the INDEX agrees
    assert _outcome(data, 1) == want
    # the second frame's first record starts one tick off what the INDEX says: its lowest bit flipped
    b0, k, shift = field_window(3, width, order == logb.ByteOrder.big)
    low = at[1] + 8 + 28 + (b0 + k - 1 if order == logb.ByteOrder.big else b0)
    moved = _frames.patch(data, low, 0, bytes([data[low] ^ 1 << shift]), fix_crc=False)
    moved = _frames.refit_crc(moved, at[1])
    want = _outcome(moved, "validate")
    assert not all(want[3].values())
    assert _outcome(moved, 1) == _outcome(moved, 2) == want


def test_a_file_that_shrank_after_the_scan_is_read_as_validate_reads_it(tmp_path, monkeypatch):
    monkeypatch.setattr(source, "HOLD_MAX", 0)  # read a frame at a time, as a file too large to hold is
    fields = [logb.Field("t", 0, 16, logb.DataType.uint)]
    data = _indexed(fields, lambda k: {"t": np.arange(10, dtype=np.uint64)}, frames=6)
    last = [o for o, t, _s, _n in _frames.walk(data) if t == 0x20][-1]
    path = tmp_path / "f.logb"
    verdicts = []
    for how, checker in (("validate", None), (1, None), (2, None), (1, Checker(1)), (2, Checker(2))):
        path.write_bytes(data)
        with logb.LogbFile(path, on_data=checker) as f:
            with open(path, "r+b") as g:
                g.truncate(last + 40)  # inside the last DATA frame
            (f.validate() if how == "validate" else verify(f, how, checker))
            verdicts.append(sorted((s.records, s.rejected, s.rejections) for s in f.streams.values()))
    assert verdicts[0][0][1] == 10  # validate saw it: the last frame's records are rejected
    assert verdicts[1:] == [verdicts[0]] * 4  # a Checker's outcomes, from before the shrink, are not used


def test_a_frame_wrong_twice_reports_what_decoding_meets_first():
    # an implicit time axis past i64 and a scrambled zstd payload: decoding fails on the zstd first
    schema = logb.Schema(
        uuid=logb.stream_uuid("test", "im"), name="im", record_bits=32, axis_kind=logb.AxisKind.time,
        axis_mode=logb.AxisMode.implicit, axis_exp=-6, axis_unit="s", axis_step=1000,
        fields=(logb.Field("v", 0, 32, logb.DataType.uint),))
    buf = io.BytesIO()
    with logb.Writer(buf, time_base="relative") as w:
        w.add_stream(schema, codec=Codec.zstd).write_batch({"v": np.arange(100, dtype=np.uint64)})
    data = buf.getvalue()
    at = next(o for o, t, _s, _n in _frames.walk(data) if t == 0x20)
    data = _frames.patch(data, at, 8, struct.pack("<q", I64_MAX - 10))
    data = _frames.patch(data, at, 8 + 28 + 6, b"\xff\x00\xff\x00")
    want = _outcome(data, "validate")
    assert "zstd" in str(want[2][0][3]), want  # the rejection validate reports
    assert _outcome(data, 1) == _outcome(data, 2) == want


@pytest.mark.parametrize("scale, base", [(-3, 0), (7, -(1 << 40)), (1, -(1 << 63))])
def test_index_claims_are_compared_at_once_as_each_frame_decodes(scale, base):
    # verify compares a stream's INDEX claims with the first records of its plain frames all at
    # once, in arithmetic modulo 2**64: a negative scale, a negative base, and a 64-bit field
    # whose values pass i64 on their own (base -2**63, proved in range) must agree with decoding.
    fields = [logb.Field("t", 0, 64, logb.DataType.uint)]
    schema = logb.Schema(
        uuid=logb.stream_uuid("test", "sc"), name="sc", record_bits=64, axis_kind=logb.AxisKind.time,
        axis_mode=logb.AxisMode.explicit, axis_exp=-6, axis_unit="s", axis_scale=scale, axis_field=0,
        fields=tuple(fields))
    top = (1 << 64) - 1 if base == -(1 << 63) else 1000
    buf = io.BytesIO()
    with logb.Writer(buf, time_base="relative") as w:
        s = w.add_stream(schema, codec=Codec.none, transpose=False)
        for k in range(5):
            first = top - k if base == -(1 << 63) else 10 * k
            s.write_batch({"t": np.array([first, first // 2 + 1], np.uint64)}, axis_base=base)
    data = buf.getvalue()
    want = _outcome(data, "validate")
    assert all(want[3].values())
    assert _outcome(data, 1) == want
    at = [o for o, t, _s, _n in _frames.walk(data) if t == 0x20]
    for k in (1, 3):  # two frames off by one tick: the first one is named
        low = at[k] + 8 + 28
        data = _frames.refit_crc(_frames.patch(data, low, 0, bytes([data[low] ^ 1]), fix_crc=False), at[k])
    want = _outcome(data, "validate")
    assert not all(want[3].values()) and f"DATA frame at {at[1]};" in json.dumps(want[0])
    assert _outcome(data, 1) == _outcome(data, 2) == want


@pytest.mark.parametrize("codec, transpose", [(Codec.none, False), (Codec.zstd, False), (Codec.zstd, True)])
def test_index_claims_that_lie_are_found_in_every_kind_of_frame(codec, transpose):
    # The INDEX's own first_axis of two frames one tick off: plain frames are compared from
    # their first records, checked (decompressed) ones from what the check kept; the first
    # lie in file order is the one named, on every path.
    schema = logb.Schema(
        uuid=logb.stream_uuid("test", "lie"), name="lie", record_bits=48, axis_kind=logb.AxisKind.time,
        axis_mode=logb.AxisMode.explicit, axis_exp=-6, axis_unit="s", axis_scale=3, axis_field=0,
        fields=(logb.Field("t", 0, 32, logb.DataType.uint), logb.Field("v", 32, 16, logb.DataType.sint)))
    buf = io.BytesIO()
    with logb.Writer(buf, time_base="relative") as w:
        s = w.add_stream(schema, codec=codec, transpose=transpose)
        for k in range(6):
            s.write_batch({"t": np.arange(k * 50, k * 50 + 40, dtype=np.uint32), "v": np.full(40, -k, np.int16)},
                          axis_base=-7 * k)
    data = buf.getvalue()
    want = _outcome(data, "validate")
    assert all(want[3].values())
    assert _outcome(data, 1) == _outcome(data, 2) == want
    index = next(o for o, t, _s, _n in _frames.walk(data) if t == 0x30)
    for k in (2, 4):
        at = index + 8 + 4 + 16 + 4 + 24 * k + 8  # entry k's first_axis_raw
        claim = struct.unpack_from("<q", data, at)[0]
        data = _frames.refit_crc(_frames.patch(data, at, 0, struct.pack("<q", claim + 1), fix_crc=False), index)
    want = _outcome(data, "validate")
    data_at = [o for o, t, _s, _n in _frames.walk(data) if t == 0x20]
    assert not any(want[3].values()) and f"DATA frame at {data_at[2]};" in json.dumps(want[0])
    assert _outcome(data, 1) == _outcome(data, 2) == want


def _zstd_content_size_at(data, offset):
    """Where the stored zstd frame of the DATA frame at `offset` states its
    content size (RFC 8878 §3.1.1.1), and in how many bytes."""
    z = offset + 8 + 28
    fhd = data[z + 4]
    single, did, fcs = fhd >> 5 & 1, fhd & 3, fhd >> 6
    size = (0, 2, 4, 8)[fcs] if fcs else single
    return z + 5 + (not single) + (0, 1, 2, 4)[did], size


def _grown(data, offset, extra):
    """The DATA frame at `offset` with bytes appended to its payload (the CRC refitted)."""
    plen = struct.unpack_from("<I", data, offset)[0]
    end = offset + 8 + plen
    grown = struct.pack("<I", plen + len(extra)) + data[offset + 4 : end] + extra
    return data[:offset] + _frames.refit_crc(grown + bytes(4), 0) + data[end + 4 :]


def _zstd_plain_file():
    """Two streams of fixed-size records, zstd (one transposed, with an explicit
    integer time axis; one with an implicit axis), 40 DATA frames, INDEXed."""
    explicit = logb.Schema(
        uuid=logb.stream_uuid("test", "zx"), name="zx", record_bits=48, axis_kind=logb.AxisKind.time,
        axis_mode=logb.AxisMode.explicit, axis_exp=-6, axis_unit="s", axis_scale=1, axis_field=0,
        fields=(logb.Field("t", 0, 32, logb.DataType.uint), logb.Field("v", 32, 16, logb.DataType.sint)))
    implicit = logb.Schema(
        uuid=logb.stream_uuid("test", "zi"), name="zi", record_bits=32, axis_kind=logb.AxisKind.time,
        axis_mode=logb.AxisMode.implicit, axis_exp=-6, axis_unit="s", axis_step=1000,
        fields=(logb.Field("v", 0, 32, logb.DataType.uint),))
    buf = io.BytesIO()
    with logb.Writer(buf, time_base="relative", segment_bytes=4000) as w:
        a = w.add_stream(explicit, codec=Codec.zstd, transpose=True)
        b = w.add_stream(implicit, codec=Codec.zstd)
        for k in range(20):
            a.write_batch({"t": np.arange(k * 90, k * 90 + 60, dtype=np.uint32),
                           "v": np.arange(60, dtype=np.int16) * k}, axis_base=k)
            b.write_batch({"v": np.arange(50, dtype=np.uint32) + k}, axis_base=1000 * k)
    return buf.getvalue()


@pytest.mark.parametrize("by_window", [False, True])
def test_zstd_frames_checked_in_batches_are_judged_as_validate_judges_them(tmp_path, monkeypatch, by_window):
    # Zstd frames of fixed-size records are decompressed many at a time (codecs.zstd_decode_many);
    # one bad frame in a batch sends the batch back to a check per frame: every verdict is validate's.
    if by_window:
        monkeypatch.setattr(source, "HOLD_MAX", 0)
        monkeypatch.setattr(logb.scan, "SOURCE_WINDOW", 3000)
    clean = _zstd_plain_file()
    at = [o for o, t, _s, _n in _frames.walk(clean) if t == 0x20]
    assert len(at) == 40 and all(clean[o + _frames.DATA_CODEC] == Codec.zstd for o in at)
    pos, size = _zstd_content_size_at(clean, at[9])
    assert size
    stated = int.from_bytes(clean[pos : pos + size], "little")
    cases = {
        "clean": clean,
        "scrambled": _frames.patch(clean, at[3], 8 + 28 + 9, b"\xff\x00\xff\x00\xff"),
        "content size": _frames.refit_crc(clean[:pos] + (stated - 1).to_bytes(size, "little") + clean[pos + size :],
                                          at[9]),
        "trailing byte": _grown(clean, at[14], b"\x00"),
        "every kind": _grown(_frames.patch(clean, at[21], 8 + 28 + 9, b"\x01\x02\x03"), at[30], b"\x00\x00"),
    }
    path = tmp_path / "z.logb"
    for name, data in cases.items():
        path.write_bytes(data)
        want = _settled(path, "validate", None)
        assert (name == "clean") == (sum(s[2] for s in want[2]) == 0), name
        for jobs in (1, 2, 3):
            assert _settled(path, jobs, Checker(jobs)) == want, (name, jobs)
            assert _settled(path, jobs, None) == want, (name, jobs)

"""Recovery (rules 2 and 3, G14, G16): truncation, corruption, concatenation,
unknown things and hostile lengths. Oracles come from the bytes the tests
wrote and from an independent struct walk of the intact file (tests/_frames.py)."""

import io
import random
import struct
import subprocess
import sys
import textwrap

import pytest

import _frames
import logb
from handmade import PATTERN as SYNC_PATTERN
from logb import AxisKind, AxisMode, ByteOrder, Codec, DataType, Field, Schema
from logb.framing import encode_frame
from logb.scan import Report, iter_frames

UA, UB = b"\xaa" * 16, b"\xbb" * 16

SCHEMA_A = Schema(UA, "alpha", 40, AxisKind.time, AxisMode.implicit, axis_exp=-6, axis_step=1000, fields=(
    Field("n", 0, 32, DataType.uint), Field("x", 32, 8, DataType.sint, ByteOrder.big)))
SCHEMA_B = Schema(UB, "beta", 16, AxisKind.index, AxisMode.implicit, axis_step=1.0, fields=(
    Field("n", 0, 16, DataType.uint, ByteOrder.big), Field("s", 0, 0, DataType.string, flags=1)))


def rec_a(c):
    return (c, (c * 7) % 256 - 128)


def rec_b(c):
    return (c, f"s{c}" * (c % 3))


def build(batches=8, segment_bytes=650, session=None, schemas=(SCHEMA_A, SCHEMA_B), start=0,
          codecs=(Codec.none, Codec.zstd), header=True):
    """A multi-segment file; returns (bytes, {stream_id: [[counters of batch k], ...]})."""
    buf = io.BytesIO()
    w = logb.Writer(buf, time_base="relative", segment_bytes=segment_bytes, session=session,
                    wall_clock=lambda: 0, header=header)
    sws = [w.add_stream(s, codec=c, transpose=(c != Codec.none)) for s, c in zip(schemas, codecs)]
    written = {sw.stream_id: [] for sw in sws}
    c = start
    for k in range(batches):
        for sw in sws:
            n = 1 + (k + sw.stream_id) % 3
            counters = list(range(c, c + n))
            c += n
            if sw.schema.fields[1].variable:
                cols = {"n": counters, "s": [rec_b(i)[1] for i in counters]}
            else:
                cols = {"n": counters, "x": [rec_a(i)[1] for i in counters]}
            sw.write_batch(cols, axis_base=k * 10)
            written[sw.stream_id].append(counters)
    w.close()
    return buf.getvalue(), written


def records(f, uuid):
    """[(n, other)] of a stream, [] if the file has no such stream."""
    if uuid not in f.streams or f.streams[uuid].schema is None:
        return []
    cols = f.streams[uuid].columns()
    other = cols.raw["x"] if "x" in cols.raw else cols.raw["s"]
    return list(zip(cols.raw["n"].tolist(), other.tolist()))


def expect(written, sid, counters_ok=lambda k: True):
    make = rec_a if sid == 1 else rec_b
    return [make(c) for k, batch in enumerate(written[sid]) if counters_ok(k) for c in batch]


@pytest.fixture(scope="module")
def multi():
    data, written = build()
    frames = _frames.walk(data)
    return data, written, frames


def test_fixture_shape(multi):
    data, written, frames = multi
    assert 2000 <= len(data) <= 4500
    syncs = [f for f in frames if f[1] == 0x01]
    assert len(syncs) >= 4
    f = logb.LogbFile(data)
    assert f.report.clean and not f.report.notes
    assert records(f, UA) == expect(written, 1) and records(f, UB) == expect(written, 2)


# ------------------------------------------------------------ (a) truncation
def test_truncation_at_every_byte(multi):
    data, written, frames = multi
    data_frames = {1: [], 2: []}
    for off, ftype, sid, plen in frames:
        if ftype == 0x20:
            data_frames[sid].append(off + 12 + plen)  # end of the k-th DATA frame of sid
    boundaries = {16} | {off + 12 + plen for off, _, _, plen in frames}
    starts = [off for off, _, _, _ in frames]
    for cut in range(len(data) + 1):
        prefix = data[:cut]
        f = logb.LogbFile(prefix)
        for sid, uuid in ((1, UA), (2, UB)):
            want = expect(written, sid, lambda k: data_frames[sid][k] <= cut)
            assert records(f, uuid) == want, (cut, sid)
        r = f.report
        if cut in boundaries:
            assert not r.truncated and not r.skipped, cut
        else:
            assert r.truncated, cut
            if cut >= 16:
                # the incomplete frame is the last one that started before the cut
                assert r.truncated_at == max(s for s in starts if s < cut), cut
        for s in r.skipped:
            assert 0 <= s.start < s.end <= cut and s.cause
        # a plain truncation is never an error, even in strict mode
        logb.LogbFile(prefix, strict=True)


# ------------------------------------------------------------ (b) corruption
def _damage(data, rng):
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["bit", "byte", "range", "zeros"])
        pos = rng.randrange(16, len(buf))
        if kind == "bit":
            buf[pos] ^= 1 << rng.randrange(8)
        elif kind == "byte":
            buf[pos] = rng.randrange(256)
        else:
            n = rng.randint(1, 40)
            end = min(len(buf), pos + n)
            buf[pos:end] = bytes(rng.randrange(256) for _ in range(end - pos)) if kind == "range" else bytes(end - pos)
    damaged = [i for i in range(len(data)) if buf[i] != data[i]]
    return bytes(buf), damaged


def test_random_corruption(multi):
    data, written, frames = multi
    rng = random.Random(20240229)
    originals = {UA: set(expect(written, 1)), UB: set(expect(written, 2))}
    syncs = [off for off, t, _, _ in frames if t == 0x01]
    seg_ranges = [(s, e) for s, e in zip(syncs, syncs[1:] + [len(data)])]
    # which DATA frame (by stream, ordinal) lives in which segment
    frame_seg, ordinal = {}, {1: 0, 2: 0}
    for off, t, sid, plen in frames:
        if t == 0x20:
            seg = max(i for i, s in enumerate(syncs) if s <= off)
            frame_seg[(sid, ordinal[sid])] = (seg, off + 12 + plen)
            ordinal[sid] += 1
    trials = 0
    while trials < 500:
        bad, damaged = _damage(data, rng)
        if not damaged:
            continue
        trials += 1
        first = damaged[0]
        f = logb.LogbFile(bad)  # never raises
        got = {UA: records(f, UA), UB: records(f, UB)}
        f.validate()
        r = f.report
        assert not r.clean
        for s in r.skipped:
            assert 0 <= s.start < s.end <= len(bad) and s.cause
        # SPEC §10.2: CRC-valid frames and skipped ranges partition [16, L), in file order
        rep = Report(size=len(bad))
        pieces = [(fr.offset, fr.end) for fr in iter_frames(bad, rep, 16)]
        pieces += [(sk.start, sk.end) for sk in rep.skipped]
        assert [(sk.start, sk.end, sk.cause) for sk in rep.skipped] == \
            [(sk.start, sk.end, sk.cause) for sk in r.skipped]
        pieces.sort()
        assert pieces[0][0] == 16 and pieces[-1][1] == len(bad)
        assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))
        # every damaged byte lies inside a reported skipped range
        for p in damaged:
            assert any(s.start <= p < s.end for s in r.skipped), (p, r.skipped)
        dirty = {i for i, (s, e) in enumerate(seg_ranges) if any(s <= p < e for p in damaged)}
        for sid, uuid in ((1, UA), (2, UB)):
            assert len(got[uuid]) == len(set(got[uuid])), "a record returned twice"
            assert set(got[uuid]) <= originals[uuid], "a record that was never written"
            must = [rec for k, batch in enumerate(written[sid])
                    for rec in ([rec_a(c) for c in batch] if sid == 1 else [rec_b(c) for c in batch])
                    if frame_seg[(sid, k)][1] <= first or frame_seg[(sid, k)][0] not in dirty]
            missing = set(must) - set(got[uuid])
            assert not missing, (sid, sorted(missing)[:5], damaged[:5])
        # strict mode: damage followed by an intact SYNC frame is an error
        first_frame = max(off for off, _, _, _ in frames if off <= first)
        later_intact_sync = any(s > first_frame and not any(s <= p < s + 44 for p in damaged) for s in syncs)
        if later_intact_sync:
            with pytest.raises(logb.CorruptFrameError):
                logb.LogbFile(bad, strict=True)


def test_damage_costs_only_the_damaged_frame(multi):
    """G17 (SPEC §10.3): a flipped bit leaves the frame's length intact and a
    trusted DATA frame starts at its end, so reading resumes there, inside
    the same segment (G14 lost the rest of the segment)."""
    data, written, frames = multi
    syncs = [off for off, t, _, _ in frames if t == 0x01]
    k = next(i for i, (off, t, _, _) in enumerate(frames) if t == 0x20 and syncs[1] < off < syncs[2])
    target, after = frames[k][0], frames[k + 1][0]
    assert frames[k + 1][1] == 0x20  # the frame after it is DATA of a bound stream
    bad = bytearray(data)
    bad[target + 20] ^= 0x10
    f = logb.LogbFile(bytes(bad))
    (skip,) = f.report.skipped
    assert (skip.start, skip.end, skip.cause) == (target, after, "crc mismatch")
    assert not f.report.truncated
    assert any(n.kind == "resync" and n.offset == after for n in f.report.notes)
    lost_sid = frames[k][2]
    lost = sum(1 for off, t, sid, _ in frames if t == 0x20 and sid == lost_sid and off < target)
    for sid, uuid in ((1, UA), (2, UB)):
        skip_batch = lost if sid == lost_sid else None
        assert records(f, uuid) == expect(written, sid, lambda b, skip_batch=skip_batch: b != skip_batch)
    with pytest.raises(logb.CorruptFrameError):
        logb.LogbFile(bytes(bad), strict=True)


def _allowed_loss(frames, x, old, new):
    """The offsets of the DATA frames G17 lets one changed byte at `x` (`old`
    -> `new`) cost: the frame it hits; in a segment's SCHEMA region (its SYNC
    up to its first DATA) the segment; and, when the byte is in the length
    field and the wrong own end is a frame boundary (rule A trusts what
    starts there), the frames up to that boundary."""
    starts = [off for off, _t, _s, _n in frames]
    i = max(j for j, off in enumerate(starts) if off <= x)
    hit, ftype, _sid, plen = frames[i]
    lost = {hit}
    sync = max((j for j in range(i + 1) if frames[j][1] == 0x01), default=None)
    region_end = next((j for j in range(i, len(frames)) if frames[j][1] == 0x20), len(frames))
    if sync is not None and ftype != 0x20 and i < region_end and all(
            frames[j][1] != 0x20 for j in range(sync, i)):
        nxt = next((j for j in range(i + 1, len(frames)) if frames[j][1] == 0x01), len(frames))
        lost |= {frames[j][0] for j in range(i, nxt)}
    if x - hit < 4:
        shift = 8 * (x - hit)
        wrong_end = hit + 12 + (plen & ~(0xFF << shift) | new << shift)
        if wrong_end in starts:
            j = starts.index(wrong_end)
            lost |= {frames[k][0] for k in range(i, j)}
            if frames[j][1] == 0x10:  # a SCHEMA there: evidence of a lost SYNC, on to the next SYNC
                nxt = next((k for k in range(j, len(frames)) if frames[k][1] == 0x01), len(frames))
                lost |= {frames[k][0] for k in range(j, nxt)}
    return lost


def test_one_changed_byte_costs_at_most_the_frame_it_hits():
    """G17 on a real recording (logb.Writer, many segments, two streams, zstd
    and plain frames): one changed byte anywhere after the file header costs
    at most the DATA frame it hits, or in a SCHEMA region its segment; never a
    record invented or returned twice."""
    data, written = build(batches=24)
    frames = _frames.walk(data)
    ordinal, per_frame = {1: 0, 2: 0}, {}
    for off, t, sid, _n in frames:
        if t == 0x20:
            batch = written[sid][ordinal[sid]]
            per_frame[off] = (sid, [rec_a(c) if sid == 1 else rec_b(c) for c in batch])
            ordinal[sid] += 1
    rng = random.Random(1017)
    for _ in range(300):
        x = rng.randrange(16, len(data))
        bad = bytearray(data)
        bad[x] ^= rng.randrange(1, 256)
        allowed = _allowed_loss(frames, x, data[x], bad[x])
        f = logb.LogbFile(bytes(bad))
        got = {1: records(f, UA), 2: records(f, UB)}
        for sid in (1, 2):
            assert len(got[sid]) == len(set(got[sid])), "a record returned twice"
        for off, (sid, recs) in per_frame.items():
            if off not in allowed:
                assert set(recs) <= set(got[sid]), (x, off)
        originals = {sid: {r for s, recs in per_frame.values() if s == sid for r in recs} for sid in (1, 2)}
        assert all(set(got[sid]) <= originals[sid] for sid in (1, 2)), x


# ------------------------------------------------------------ (c) concatenation
def test_concatenation_rebinds_stream_ids():
    a, wa = build(batches=4, schemas=(SCHEMA_A,), codecs=(Codec.none,))
    other = Schema(b"\xcc" * 16, "gamma", 40, AxisKind.time, AxisMode.implicit, axis_exp=-6, axis_step=5,
                   fields=SCHEMA_A.fields)
    b, wb = build(batches=3, schemas=(other,), codecs=(Codec.lz4,), start=1000)
    assert _frames.walk(b)[1][2] == 1  # B's stream is also stream_id 1
    f = logb.LogbFile(a + b[16:])
    assert f.report.clean, f.report
    assert len(f.sessions) == 2
    assert set(f.streams) == {UA, b"\xcc" * 16}
    assert records(f, UA) == expect(wa, 1)
    assert records(f, b"\xcc" * 16) == expect(wb, 1)
    assert f.stream("gamma").columns().session.tolist() == [1] * len(expect(wb, 1))
    assert f.stream("alpha").columns().session.tolist() == [0] * len(expect(wa, 1))
    assert all(f.index_valid.values()) and len(f.index_valid) == 2


def test_concatenation_same_uuid_merges():
    a, wa = build(batches=4, schemas=(SCHEMA_A,), codecs=(Codec.none,))
    b, wb = build(batches=3, schemas=(SCHEMA_A,), codecs=(Codec.deflate,), start=1000)
    f = logb.LogbFile(a + b[16:])
    assert list(f.streams) == [UA]
    assert records(f, UA) == expect(wa, 1) + expect(wb, 1)
    cols = f.stream(UA).columns()
    assert cols.session.tolist() == [0] * len(expect(wa, 1)) + [1] * len(expect(wb, 1))
    assert len(f.sessions) == 2 and f.sessions[0].ended and f.sessions[1].ended


def test_bytewise_concatenation_reports_embedded_header():
    a, wa = build(batches=3)
    b, wb = build(batches=3, start=5000)
    f = logb.LogbFile(a + b)
    assert [(s.start, s.end, s.cause) for s in f.report.skipped] == [(len(a), len(a) + 16, "embedded file header")]
    assert records(f, UA) == expect(wa, 1) + expect(wb, 1)
    assert records(f, UB) == expect(wa, 2) + expect(wb, 2)
    with pytest.raises(logb.CorruptFrameError):
        logb.LogbFile(a + b, strict=True)


# ------------------------------------------------------------ (d) unknown things
# Inserting a frame moves the END (and INDEX) away from what the writer
# recorded; those notes are expected and not what these tests are about.
SHIFTED = {"end", "corrupt-index"}


def _insert_after_first(data, ftype, blob):
    off, _, _, plen = next(fr for fr in _frames.walk(data) if fr[1] == ftype)
    at = off + 12 + plen
    return data[:at] + blob + data[at:], at


def test_unknown_frame_type_skipped_and_noted():
    data, written = build(batches=3)
    bad, at = _insert_after_first(data, 0x11, encode_frame(0x7E, b"future stuff", stream_id=3))
    f = logb.LogbFile(bad)
    assert f.report.clean
    assert f.unknown_frames == [(at, 0x7E)]
    notes = [n for n in f.report.notes if n.kind not in SHIFTED]
    assert [(n.offset, n.kind) for n in notes] == [(at, "skipped-frame")]
    assert "0x7e" in notes[0].message
    assert records(f, UA) == expect(written, 1) and records(f, UB) == expect(written, 2)
    logb.LogbFile(bad, strict=True)  # not damage: never raises


def test_sign_frame_noted_by_name():
    data, written = build(batches=3)
    bad, at = _insert_after_first(data, 0x20, encode_frame(0x50, b"\x01" * 64))
    f = logb.LogbFile(bad)
    assert f.report.clean
    (note,) = [n for n in f.report.notes if n.kind not in SHIFTED]
    assert note.offset == at and note.kind == "skipped-frame" and "SIGN" in note.message
    assert not f.unknown_frames
    assert records(f, UA) == expect(written, 1) and records(f, UB) == expect(written, 2)


@pytest.mark.parametrize("rel,value,word", [(_frames.DATA_CODEC, 9, "codec"), (_frames.DATA_FILTER, 7, "filter")])
@pytest.mark.parametrize("sid", [1, 2])
def test_unknown_codec_or_filter_rejects_that_frame_only(rel, value, word, sid):
    data, written = build(batches=5)
    victims = [off for off, t, s, _ in _frames.walk(data) if t == 0x20 and s == sid]
    bad = _frames.patch(data, victims[2], rel, bytes([value]))
    f = logb.LogbFile(bad)
    uuid = UA if sid == 1 else UB
    assert f.streams[uuid].rejected == len(written[sid][2])
    assert records(f, uuid) == expect(written, sid, lambda k: k != 2)
    other = 3 - sid
    assert records(f, UA if other == 1 else UB) == expect(written, other)
    assert any(n.kind == "rejected" and word in n.message for n in f.report.notes)
    assert f.report.clean  # not damage: a frame this reader cannot carry out
    err = logb.UnsupportedCodecError if word == "codec" else logb.UnsupportedFilterError
    with pytest.raises(err):
        logb.LogbFile(bad, strict=True)


def hand_schema(uuid, name, axis_kind, axis_mode, fields, record_bits, axis_exp=0, step=b"\0" * 8,
                scale=b"\0" * 8, axis_field=0):
    p = uuid + struct.pack("<I", len(name)) + name.encode() + struct.pack("<I", record_bits)
    p += struct.pack("<BBbB", axis_kind, axis_mode, axis_exp, 0) + struct.pack("<I", 0)
    p += step + scale + struct.pack("<HH", axis_field, len(fields))
    for fname, off, width, dtype, order, flags in fields:
        p += struct.pack("<I", len(fname)) + fname.encode() + struct.pack("<IIBBB", off, width, dtype, order, flags)
        p += struct.pack("<II", 0, 0) + b"\x00"  # unit, description, identity conversion
    return p + struct.pack("<I", 0)


def hand_data(base, values, run_id=0):
    region = bytes(values)
    return struct.pack("<qIIBBHQ", base, len(values), run_id, 0, 0, 0, len(region)) + region


def hand_sync(seq):
    return SYNC_PATTERN + struct.pack("<Qq", seq, 0)


def test_unknown_axis_mode_rejects_that_stream_only():
    good = hand_schema(b"\x01" * 16, "good", 0, 0, [("v", 0, 8, 0, 0, 0)], 8, axis_exp=-3,
                       step=struct.pack("<q", 1))
    future = hand_schema(b"\x02" * 16, "future", 1, 7, [("v", 0, 8, 0, 0, 0)], 8)
    body = _frames.frame(0x01, hand_sync(0)) + _frames.frame(0x10, good, 1) + _frames.frame(0x10, future, 2)
    body += _frames.frame(0x20, hand_data(0, [1, 2, 3]), 1) + _frames.frame(0x20, hand_data(0, [9, 9]), 2)
    body += _frames.frame(0x20, hand_data(3, [4]), 1) + _frames.frame(0x20, hand_data(5, [8, 8, 8]), 2)
    f = logb.LogbFile(_frames.header() + body)
    fut = f.streams[b"\x02" * 16]
    assert fut.name == "future" and fut.schema is None
    assert fut.records == 0 and fut.rejected == 5
    assert any(n.kind == "invalid-schema" and "axis_mode" in n.message for n in f.report.notes)
    cols = f.stream("good").columns()
    assert cols.raw["v"].tolist() == [1, 2, 3, 4] and cols.axis.tolist() == [0, 1, 2, 3]
    with pytest.raises(logb.LogbError):  # no schema, no columns: an error that says so
        fut.columns()
    with pytest.raises(logb.InvalidSchemaError):
        logb.LogbFile(_frames.header() + body, strict=True)


def _schema_with(**patch):
    """A hand-built one-field schema payload with one thing changed."""
    name = patch.get("name", b"bad")
    p = b"\x02" * 16 + struct.pack("<I", len(name)) + name + struct.pack("<I", 8)
    p += struct.pack("<BBbB", patch.get("kind", 4), patch.get("mode", 0), 0, 0)
    unit = patch.get("unit", b"")
    p += struct.pack("<I", len(unit)) + unit + struct.pack("<dd", 1.0, 0.0) + struct.pack("<HH", 0, 1)
    fname = patch.get("fname", b"v")
    p += struct.pack("<I", len(fname)) + fname + struct.pack("<IIBBB", 0, 8, patch.get("dtype", 0),
                                                              patch.get("order", 0), 0)
    p += struct.pack("<II", 0, 0) + bytes([patch.get("conv", 0)]) + struct.pack("<I", 0)
    return p[: patch["cut"]] if "cut" in patch else p


@pytest.mark.parametrize("patch", [
    {"kind": 6}, {"kind": 255}, {"mode": 3}, {"dtype": 7}, {"order": 2}, {"conv": 7},
    {"name": b"\xff\xfe"}, {"unit": b"caf\xc3"}, {"fname": b"\x80"}, {"cut": 40},
], ids=["axis_kind", "axis_kind255", "axis_mode", "data_type", "byte_order", "conversion",
        "utf8-name", "utf8-unit", "utf8-field", "short"])
def test_invalid_schema_rejects_only_its_stream(patch):
    good = hand_schema(b"\x01" * 16, "good", 4, 0, [("v", 0, 8, 0, 0, 0)], 8, step=struct.pack("<d", 1.0))
    assert logb.Schema.decode(_schema_with()).validate()  # the unpatched payload is valid
    body = _frames.frame(0x01, hand_sync(0)) + _frames.frame(0x10, _schema_with(**patch), 2)
    body += _frames.frame(0x10, good, 1)
    body += _frames.frame(0x20, hand_data(0, [7, 7]), 2) + _frames.frame(0x20, hand_data(0, [1, 2]), 1)
    f = logb.LogbFile(_frames.header() + body)
    assert records_v(f, "good") == [1, 2]
    assert any(n.kind == "invalid-schema" for n in f.report.notes)
    bad = f.streams.get(b"\x02" * 16)
    if bad is not None:  # when its uuid could be read, its records count as rejected
        assert bad.schema is None and bad.records == 0 and bad.rejected == 2
    assert f.report.clean


def records_v(f, name):
    return f.stream(name).columns().raw["v"].tolist()


CODEC_TRAILERS = {
    "none-short": (Codec.none, lambda r: r[:-1]),
    "zstd-second-frame": (Codec.zstd, lambda r: _zstd(r) + _zstd(r)),
    "zstd-skippable": (Codec.zstd, lambda r: _zstd(r) + struct.pack("<II", 0x184D2A50, 2) + b"xx"),
    "zstd-trailing-byte": (Codec.zstd, lambda r: _zstd(r) + b"\0"),
    "zstd-truncated": (Codec.zstd, lambda r: _zstd(r)[:-3]),
    "lz4-trailing": (Codec.lz4, lambda r: _lz4(r) + b"\0"),
    "deflate-trailing": (Codec.deflate, lambda r: _deflate(r) + b"\0\0"),
    "deflate-truncated": (Codec.deflate, lambda r: _deflate(r)[:-2]),
    "deflate-zlib-wrapper": (Codec.deflate, lambda r: __import__("zlib").compress(r)),
}


def _zstd(r):
    import zstandard

    return zstandard.ZstdCompressor().compress(r)


def _lz4(r):
    import lz4.block

    return lz4.block.compress(r, store_size=False)


def _deflate(r):
    import zlib

    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(r) + c.flush()


@pytest.mark.parametrize("codec,mangle", CODEC_TRAILERS.values(), ids=CODEC_TRAILERS.keys())
def test_codec_stream_must_decode_exactly(codec, mangle):
    good = hand_schema(b"\x01" * 16, "good", 4, 0, [("v", 0, 8, 0, 0, 0)], 8, step=struct.pack("<d", 1.0))
    region = bytes(range(100)) * 3
    ok = {Codec.none: lambda r: r, Codec.zstd: _zstd, Codec.lz4: _lz4, Codec.deflate: _deflate}[codec]
    def data(stored):
        return struct.pack("<qIIBBHQ", 0, len(region), 0, codec, 0, 0, len(region)) + stored
    body = _frames.frame(0x01, hand_sync(0)) + _frames.frame(0x10, good, 1)
    body += _frames.frame(0x20, data(ok(region)), 1) + _frames.frame(0x20, data(mangle(region)), 1)
    body += _frames.frame(0x20, data(ok(region)), 1)
    f = logb.LogbFile(_frames.header() + body)
    assert records_v(f, "good") == list(region) * 2
    assert f.stream("good").rejected == len(region)


def test_schema_conflict_is_rejected_never_merged():
    first, w1 = build(batches=3, schemas=(SCHEMA_A,), codecs=(Codec.none,))
    changed = Schema(UA, "alpha", 40, AxisKind.time, AxisMode.implicit, axis_exp=-6, axis_step=1000, fields=(
        Field("n", 0, 32, DataType.uint), Field("x", 32, 8, DataType.sint, ByteOrder.little)))
    second, w2 = build(batches=2, schemas=(changed,), codecs=(Codec.none,), start=100, header=False)
    f = logb.LogbFile(first + second)
    s = f.streams[UA]
    assert s.schema == SCHEMA_A
    assert records(f, UA) == expect(w1, 1)
    assert s.rejected == sum(len(b) for b in w2[1])
    assert any(n.kind == "conflict" for n in f.report.notes)


def _all_columns(f):
    for s in f.streams.values():
        if s.schema is not None:
            s.columns()
    f.validate()


HOSTILE = [
    ("payload_len", 0, struct.pack("<I", 0xFFFFFFFF), False),
    ("record_count", _frames.DATA_COUNT, struct.pack("<I", 2**32 - 1), True),
    ("raw_size 2**63", _frames.DATA_RAW_SIZE, struct.pack("<Q", 2**63), True),
    ("raw_size 2**64-1", _frames.DATA_RAW_SIZE, struct.pack("<Q", 2**64 - 1), True),
    ("raw_size 0", _frames.DATA_RAW_SIZE, struct.pack("<Q", 0), True),
    ("count+raw_size", _frames.DATA_COUNT, struct.pack("<IIBBHQ", 2**32 - 1, 0, 1, 0, 0, 2**63), True),
]


@pytest.mark.parametrize("codec", list(Codec))
@pytest.mark.parametrize("what,rel,new,fix_crc", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_lengths_are_reports_not_crashes(codec, what, rel, new, fix_crc):
    data, written = build(batches=4, codecs=(codec, codec))
    for sid in (1, 2):
        victims = [off for off, t, s, _ in _frames.walk(data) if t == 0x20 and s == sid]
        for k in (1, len(victims) - 1):
            bad = _frames.patch(data, victims[k], rel, new, fix_crc=fix_crc)
            if rel == _frames.DATA_COUNT and len(new) > 4:  # keep the real codec byte
                bad = _frames.patch(bad, victims[k], _frames.DATA_CODEC, bytes([codec]))
            f = logb.LogbFile(bad)
            _all_columns(f)
            uuid = UA if sid == 1 else UB
            got = records(f, uuid)
            assert set(got) <= set(expect(written, sid))
            if fix_crc:  # a CRC-valid lie costs that frame only
                assert got == expect(written, sid, lambda j: j != k)
                # rejected counts the records the frame claims to hold
                claimed = 2**32 - 1 if rel == _frames.DATA_COUNT else len(written[sid][k])
                assert f.streams[uuid].rejected == claimed
                assert any(n.kind == "rejected" for n in f.report.notes)
                assert records(f, UA if sid == 2 else UB) == expect(written, 3 - sid)
            else:  # the frame's length runs past the end: damage, resynced after
                assert f.report.skipped and f.report.skipped[0].start == victims[k]


def test_hostile_zero_size_records_do_not_exhaust_memory():
    """A record_count of 2**32-1 of zero-byte records: nothing to store, 32 GB of
    axis to decode. Run under an address-space limit so a regression fails
    with MemoryError instead of taking the machine down."""
    code = textwrap.dedent(f"""
        import resource, struct, sys
        sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r})
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        import _frames, handmade, logb
    """)
    code += textwrap.dedent("""
        empty = b"\\x03" * 16 + struct.pack("<I", 1) + b"z" + struct.pack("<I", 0)
        empty += struct.pack("<BBbB", 0, 0, -9, 0) + struct.pack("<I", 0) + struct.pack("<qq", 1, 0)
        empty += struct.pack("<HH", 0, 0) + struct.pack("<I", 0)
        body = _frames.frame(0x01, handmade.PATTERN + bytes(16)) + _frames.frame(0x10, empty, 1)
        body += _frames.frame(0x20, struct.pack("<qIIBBHQ", 0, 2**32 - 1, 0, 0, 0, 0, 0), 1)
        body += _frames.frame(0x20, struct.pack("<qIIBBHQ", 0, 3, 0, 0, 0, 0, 0), 1)
        f = logb.LogbFile(_frames.header() + body)
        cols = f.stream("z").columns()
        f.validate()
        print(len(cols), f.stream("z").rejected)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["3", str(2**32 - 1)]


# ------------------------------------------------------------ (e) file header
def test_bad_magic_is_not_logb(multi):
    data = multi[0]
    for bad in (b"\x89LOGC" + data[5:], b"\x09" + data[1:], b"PK\x03\x04" + data[4:], b"\x00" * 64):
        with pytest.raises(logb.NotLogbError):
            logb.LogbFile(bad)
    bad_crc = bytearray(data)
    bad_crc[13] ^= 1
    with pytest.raises(logb.NotLogbError):
        logb.LogbFile(bytes(bad_crc))


def test_version_major_1_unsupported_minor_9_accepted(multi):
    data, written, _ = multi
    with pytest.raises(logb.UnsupportedVersionError):
        logb.LogbFile(_frames.header(major=1, minor=0) + data[16:])
    with pytest.raises(logb.UnsupportedVersionError):  # in every mode (SPEC §2.4 step 3)
        logb.LogbFile(_frames.header(major=1, minor=0) + data[16:], recover=True)
    f = logb.LogbFile(_frames.header(major=0, minor=9) + data[16:])
    assert f.report.header.minor == 9
    assert records(f, UA) == expect(written, 1)


def test_short_header_prefixes_are_empty_truncated_files(multi):
    data = multi[0]
    for n in range(16):
        for strict in (False, True):
            f = logb.LogbFile(data[:n], strict=strict)
            assert not f.streams and not f.segments
            assert f.report.truncated, n


@pytest.mark.parametrize("junk", [b"P", b"PK\x03\x04", b"\x89LOGC", b"\x89LOGB\r\n\x1b\x00", b"x" * 15])
def test_short_input_that_is_not_a_magic_prefix_is_not_logb(junk):
    with pytest.raises(logb.NotLogbError):
        logb.LogbFile(junk)


def test_recover_resyncs_after_smashed_header(multi):
    data, written, frames = multi
    smashed = b"\xde\xad\xbe\xef" * 4 + data[16:]
    with pytest.raises(logb.NotLogbError):
        logb.LogbFile(smashed)
    f = logb.LogbFile(smashed, recover=True)
    assert f.report.header is None
    assert [(s.start, s.end, s.cause) for s in f.report.skipped] == [(0, 16, "bad file header")]
    assert any(n.kind == "resync" and n.offset == 16 for n in f.report.notes)  # SPEC §2.4 step 2
    assert not f.report.truncated
    assert records(f, UA) == expect(written, 1) and records(f, UB) == expect(written, 2)
    # header and most of the first segment gone: resync at the second SYNC
    syncs = [off for off, t, _, _ in frames if t == 0x01]
    f = logb.LogbFile(b"\x00" * 40 + data[40:], recover=True)
    assert f.report.skipped[0].start == 0 and f.report.skipped[0].end == syncs[1]
    assert f.segments[0].offset == syncs[1]
    assert set(records(f, UA)) < set(expect(written, 1))
    # nothing to resync to: truncated, no records, no exception
    f = logb.LogbFile(b"garbage!" * 10, recover=True)
    assert f.report.truncated and not f.streams


def test_detect():
    head = _frames.header()
    for n in range(16):
        assert logb.detect(head[:n]) == "maybe", n
    assert logb.detect(head) == "yes"
    assert logb.detect(head + b"anything after") == "yes"
    assert logb.detect(_frames.header(minor=9)) == "yes"
    assert logb.detect(_frames.header(major=1)) == "no"
    for n in range(16):
        assert logb.detect(_frames.header(major=1)[:n]) == "maybe"  # cannot tell yet
    bad_crc = bytearray(head)
    bad_crc[15] ^= 0x80
    assert logb.detect(bytes(bad_crc)) == "no"
    for garbage in (b"\x89PNG\r\n\x1a\n", b"PK\x03\x04", b"\x89LOGB\n", b"\x00", b"L", b"{\"json\": 1}" * 3,
                    b"\x89LOGB\r\n\x1b" + head[8:]):
        assert logb.detect(garbage) == "no", garbage
    for n in range(1, 8):  # any byte that departs from the magic says no at once
        wrong = bytearray(head[:n])
        wrong[-1] ^= 0x01
        assert logb.detect(bytes(wrong)) == "no"

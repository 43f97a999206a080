"""Writer → reader round trips (§3, §5, §6, §8): random schemas, records,
codecs and filters come back raw-identical with the axis the spec defines."""

import io
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import _frames
import logb
from _strategies import column_values, raw_equal, schemas
from logb import AxisKind, AxisMode, ByteOrder, Codec, DataType, Field, Schema
from logb.errors import EncodeError

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def expected_axis(schema, base, cols, n):
    """The axis per §5 computed with Python numbers; None if it overflows i64."""
    if schema.axis_mode == AxisMode.explicit:
        af = schema.fields[schema.axis_field]
        raw = [v.item() if hasattr(v, "item") else v for v in cols[af.name]]
    if schema.axis_kind == AxisKind.time:
        if schema.axis_mode == AxisMode.implicit:
            vals = [base + i * schema.axis_step for i in range(n)]
        else:
            vals = [base + int(v) * schema.axis_scale for v in raw]
        if any(not I64_MIN <= v <= I64_MAX for v in vals):
            return None
        return vals
    if schema.axis_mode == AxisMode.implicit:
        return [base + float(i) * schema.axis_step for i in range(n)]
    if schema.axis_mode == AxisMode.implicit_log:
        return [base * schema.axis_step ** i for i in range(n)]
    return [base + float(v) * schema.axis_scale for v in raw]


@st.composite
def streams_with_batches(draw, uuid_byte):
    schema = draw(schemas())
    schema = Schema(bytes([uuid_byte]) * 16, *[getattr(schema, f) for f in (
        "name", "record_bits", "axis_kind", "axis_mode", "axis_exp", "axis_unit", "axis_step",
        "axis_scale", "axis_field", "fields", "meta")])
    batches = []
    run = 0
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, 5)) if schema.fields else 0
        cols = {}
        for i, f in enumerate(schema.fields):
            small = (schema.axis_mode == AxisMode.explicit and i == schema.axis_field and draw(st.booleans()))
            cols[f.name] = draw(column_values(f, n, small=small))
        if schema.is_time:
            base = draw(st.one_of(st.integers(-(10 ** 12), 10 ** 12), st.integers(I64_MIN, I64_MAX)))
        else:
            base = draw(st.floats(-1e6, 1e6))
        run += draw(st.integers(0, 2))
        batches.append((cols, base, run, n))
    codec = draw(st.sampled_from(list(Codec)))
    return schema, batches, codec, draw(st.booleans())


@SETTINGS
@given(st.lists(st.integers(1, 250), min_size=1, max_size=2, unique=True).flatmap(
    lambda ids: st.tuples(*[streams_with_batches(i) for i in ids])))
def test_random_round_trip(streams):
    buf = io.BytesIO()
    w = logb.Writer(buf, time_base="relative")
    sws = [w.add_stream(schema, codec=codec, transpose=tr) for schema, _, codec, tr in streams]
    for sw, (schema, batches, _, _) in zip(sws, streams):
        for cols, base, run, n in batches:
            if expected_axis(schema, base, cols, n) is None:
                with pytest.raises(EncodeError):  # an i64 overflow: refused, nothing written
                    sw.write_batch(cols, axis_base=base, run_id=run)
            else:
                sw.write_batch(cols, axis_base=base, run_id=run)
    w.close()
    f = logb.LogbFile(buf.getvalue())
    assert f.report.clean and not f.report.notes, f.report
    assert len(f.sessions) == 1 and len(f.segments) == 1
    for schema, batches, codec, _ in streams:
        s = f.stream(schema.uuid)
        assert s.schema == schema
        cols = s.columns()
        kept = []
        rejected = 0
        for b in batches:
            axis = expected_axis(schema, b[1], b[0], b[3])
            if axis is None:
                rejected += b[3]  # never written
            else:
                kept.append((b, axis))
        assert s.rejected == 0
        event(f"{AxisKind(schema.axis_kind).name}/{AxisMode(schema.axis_mode).name}"
              f"{' overflow-rejected' if rejected else ''}")
        total = sum(b[3] for b, _ in kept)
        assert len(cols) == total
        for fld in schema.fields:
            got = cols.raw[fld.name]
            assert len(got) == total
            start = 0
            for (bcols, _, _, n), _ in kept:
                assert raw_equal(fld, got[start : start + n], bcols[fld.name]), fld
                start += n
        want_axis = [v for _, axis in kept for v in axis]
        if schema.is_time:
            assert cols.axis.dtype == np.int64 and cols.axis.tolist() == want_axis
        elif schema.axis_mode == AxisMode.implicit_log:
            assert cols.axis.dtype == np.float64
            assert cols.axis.tolist() == pytest.approx(want_axis, rel=1e-12)
        else:
            assert cols.axis.dtype == np.float64
            np.testing.assert_array_equal(cols.axis, np.array(want_axis, np.float64))
        assert cols.run_id.tolist() == [b[2] for b, _ in kept for _ in range(b[3])]
        assert cols.session.tolist() == [0] * total


def _simple_schema(name="s", uuid=b"\x01" * 16, kind=AxisKind.time, mode=AxisMode.implicit, step=10):
    return Schema(uuid, name, 24, kind, mode, axis_exp=-6, axis_step=step, fields=(
        Field("n", 0, 16, DataType.uint), Field("b", 16, 8, DataType.sint, ByteOrder.big)))


def test_runs():
    buf = io.BytesIO()
    w = logb.Writer(buf, time_base="relative")
    sw = w.add_stream(_simple_schema())
    w.add_run(1, 0, {"R1": "1.0e3", "temp": "27"})
    w.add_run(2, 1, {"R1": "2.0e3", "temp": "27"})
    sw.write_batch({"n": [1, 2], "b": [-1, -2]}, axis_base=0, run_id=1)
    sw.write_batch({"n": [3], "b": [-3]}, axis_base=20, run_id=1)
    sw.write_batch({"n": [4, 5, 6], "b": [4, 5, 6]}, axis_base=0, run_id=2)
    sw.write_batch({"n": [7], "b": [7]}, axis_base=0, run_id=9)  # no RUN frame: accepted
    w.close()
    f = logb.LogbFile(buf.getvalue())
    cols = f.stream("s").columns()
    assert cols.run_id.tolist() == [1, 1, 1, 2, 2, 2, 9]
    assert cols.raw["n"].tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert cols.axis.tolist() == [0, 10, 20, 0, 10, 20, 0]  # each run's axis restarts
    runs = f.sessions[0].runs
    assert set(runs) == {1, 2}
    assert dict(runs[1].params) == {"R1": "1.0e3", "temp": "27"} and runs[2].index == 1
    assert not [n for n in f.report.notes if n.kind == "run-order"]


def test_run_contiguity_violation_reported_records_keep_run_id():
    buf = io.BytesIO()
    w = logb.Writer(buf)
    sw = w.add_stream(_simple_schema())
    for run in (1, 2, 1):
        sw.write_batch({"n": [run], "b": [0]}, run_id=run)
    w.close()
    f = logb.LogbFile(buf.getvalue())
    assert [n.kind for n in f.report.notes] == ["run-order"]
    assert f.stream("s").columns().run_id.tolist() == [1, 2, 1]


def test_segment_rotation_by_size():
    buf = io.BytesIO()
    w = logb.Writer(buf, segment_bytes=700, time_base="relative")
    a = w.add_stream(_simple_schema("a", b"\x0a" * 16), codec=Codec.none)
    b = w.add_stream(_simple_schema("b", b"\x0b" * 16, kind=AxisKind.index, step=0.5), codec=Codec.zstd)
    w.add_run(3, 0, {"k": "v"})
    for i in range(40):
        a.write_batch({"n": [i, i + 1000], "b": [1, 2]}, axis_base=20 * i, run_id=3)
        b.write_batch({"n": [i], "b": [-i % 100]}, axis_base=float(i), run_id=3)
    w.close()
    f = logb.LogbFile(buf.getvalue())
    assert f.report.clean
    assert len(f.segments) >= 5
    assert [s.seq for s in f.segments] == list(range(len(f.segments)))
    assert len(f.sessions) == 1 and f.sessions[0].segments == list(range(len(f.segments)))
    ca, cb = f.stream("a").columns(), f.stream("b").columns()
    assert ca.raw["n"].tolist() == [v for i in range(40) for v in (i, i + 1000)]
    assert ca.axis.tolist() == list(range(0, 800, 10))
    assert cb.raw["n"].tolist() == list(range(40))
    assert cb.axis.tolist() == [float(i) for i in range(40)]
    assert set(ca.run_id.tolist()) == {3}
    # data of both streams really is spread over several segments
    assert len({fl.segment for fl in f.stream("a").frames}) >= 5
    assert len({fl.segment for fl in f.stream("b").frames}) >= 5
    assert f.sessions[0].time_base == "relative"


def test_segment_rotation_by_time():
    now = [0.0]
    buf = io.BytesIO()
    w = logb.Writer(buf, segment_seconds=5.0, monotonic=lambda: now[0])
    sw = w.add_stream(_simple_schema())
    for i in range(6):
        sw.write_batch({"n": [i], "b": [0]}, axis_base=i)
        now[0] += 2.0
    w.close()
    f = logb.LogbFile(buf.getvalue())
    assert len(f.segments) == 2  # t=0 opens, t=6 (>=5) rotates, t=10 is 4s later
    assert f.stream("s").columns().raw["n"].tolist() == list(range(6))


def test_stream_added_mid_segment_and_attachment():
    buf = io.BytesIO()
    w = logb.Writer(buf)
    a = w.add_stream(_simple_schema("a", b"\x0a" * 16))
    a.write_batch({"n": [1], "b": [1]})
    b = w.add_stream(_simple_schema("b", b"\x0b" * 16))
    b.write_batch({"n": [2], "b": [2]})
    w.attach("cal.dbc", "application/x-dbc", b"BO_ 1 x: 8 Vector__XXX\n" * 10)
    w.close()
    f = logb.LogbFile(buf.getvalue())
    assert f.report.clean and not f.report.notes
    assert f.stream("b").columns().raw["n"].tolist() == [2]
    (att,) = f.attachments
    assert att.name == "cal.dbc" and att.data() == b"BO_ 1 x: 8 Vector__XXX\n" * 10


def test_writer_zeroes_padding_and_stores_records_as_specified():
    """Hand-parse the file with struct: fixed portions, then tails (§6.4, G11, G16)."""
    s = Schema(b"\x05" * 16, "p", 29, AxisKind.index, AxisMode.implicit, axis_step=1.0, fields=(
        Field("a", 3, 5, DataType.uint), Field("b", 10, 7, DataType.uint, ByteOrder.big),
        Field("v", 0, 0, DataType.bytes, flags=1), Field("c", 24, 4, DataType.uint),
        Field("t", 0, 0, DataType.string, flags=1)))
    buf = io.BytesIO()
    with logb.Writer(buf) as w:
        w.add_stream(s, codec=Codec.none, transpose=False).write_batch(
            {"a": [31, 31], "b": [127, 127], "c": [15, 15], "v": [b"xy", b""], "t": ["é", "hello"]})
    data = buf.getvalue()
    pos, payload = 16, None
    while pos < len(data):
        plen, ftype = struct.unpack_from("<IB", data, pos)
        if ftype == 0x20:
            payload = data[pos + 8 : pos + 8 + plen]
        pos += 12 + plen
    base, count, run, codec, filt, _res, raw_size = struct.unpack_from("<8sIIBBHQ", payload)
    assert (count, run, codec, filt) == (2, 0, 0, 0)
    region = payload[28:]
    assert raw_size == len(region)
    rec = bytes([0b11111000, 0b00111111, 0b10000000, 0b00001111])  # little a@3, big b@10, little c@24
    tail0 = struct.pack("<I", 2) + b"xy" + struct.pack("<I", 2) + "é".encode()
    tail1 = struct.pack("<I", 0) + struct.pack("<I", 5) + b"hello"
    assert region == rec + rec + tail0 + tail1


@pytest.mark.parametrize("how", ["bytes", "bytesio", "path", "fileobj", "pipe"])
def test_sources(tmp_path, how):
    path = tmp_path / "x.logb"
    with logb.Writer(str(path)) as w:
        w.add_stream(_simple_schema()).write_batch({"n": [5, 6], "b": [-1, 1]})
    data = path.read_bytes()
    if how == "bytes":
        src = data
    elif how == "bytesio":
        src = io.BytesIO(data)
    elif how == "path":
        src = path
    elif how == "fileobj":
        src = open(path, "rb")
    else:
        class Pipe(io.RawIOBase):  # non-seekable stream without fileno
            def __init__(self):
                self._b = io.BytesIO(data)

            def readable(self):
                return True

            def readinto(self, b):
                return self._b.readinto(b)
        src = io.BufferedReader(Pipe())
    with logb.LogbFile(src) as f:
        assert f.stream("s").columns().raw["b"].tolist() == [-1, 1]
    if how == "fileobj":
        src.close()


def test_index_and_end_written_and_consistent():
    buf = io.BytesIO()
    w = logb.Writer(buf)
    sw = w.add_stream(_simple_schema())
    for i in range(3):
        sw.write_batch({"n": [i] * (i + 1), "b": [0] * (i + 1)}, axis_base=100 * i, run_id=i)
    w.close()
    data = buf.getvalue()
    f = logb.LogbFile(data)
    assert f.report.clean and not f.report.notes
    (idx_off, idx, _), = f.indexes
    (end_off, end), = f.ends
    assert f.index_valid[idx_off]
    # G10: the END frame is the last 28 bytes; it points back to the INDEX and the session start
    assert end_off == len(data) - 28
    assert end_off - end.index_back_offset == idx_off
    assert end_off - end.session_bytes == f.segments[0].offset == 16
    (uuid, entries), = idx.streams
    assert uuid == b"\x01" * 16
    frames = f.stream("s").frames
    assert [idx_off - e.back_offset for e in entries] == [fl.offset for fl in frames]
    assert [e.record_count for e in entries] == [1, 2, 3]
    assert [struct.unpack("<q", e.first_axis_raw)[0] for e in entries] == [0, 100, 200]


class TestTimeAxisRange:
    """G16: integer axis arithmetic that overflows i64 makes the frame invalid
    (reported); it never wraps. The writer refuses to produce such a frame; the
    reader rejects one it is handed (patched in by hand here)."""

    def _write(self, schema, batches):
        buf = io.BytesIO()
        with logb.Writer(buf, time_base="relative") as w:
            sw = w.add_stream(schema, codec=Codec.none)
            for cols, base in batches:
                sw.write_batch(cols, axis_base=base)
        return buf.getvalue()

    def _set_base(self, data, k, base):
        data_frames = [off for off, t, _, _ in _frames.walk(data) if t == 0x20]
        return _frames.patch(data, data_frames[k], _frames.DATA_AXIS_BASE, struct.pack("<q", base))

    EXPLICIT = Schema(b"\x07" * 16, "e", 64, AxisKind.time, AxisMode.explicit, axis_exp=-9, axis_scale=2,
                      axis_field=0, fields=(Field("t", 0, 64, DataType.uint),))

    def test_explicit_overflow_rejects_only_that_frame(self):
        data = self._write(self.EXPLICIT, [({"t": [1, 2]}, 0), ({"t": [2**61, 2**62]}, -(2**62)),
                                           ({"t": [5]}, -10)])
        f = logb.LogbFile(data)
        assert f.stream("e").columns().axis.tolist() == [2, 4, 0, 2**62, 0]
        f = logb.LogbFile(self._set_base(data, 1, 0))  # now 2 * 2**62 overflows
        s = f.stream("e")
        cols = s.columns()
        assert cols.axis.tolist() == [2, 4, 0]
        assert cols.raw["t"].tolist() == [1, 2, 5]
        assert s.rejected == 2
        assert any(n.kind == "rejected" for n in f.report.notes)

    def test_writer_refuses_overflowing_frame_and_writes_nothing(self):
        buf = io.BytesIO()
        w = logb.Writer(buf, time_base="relative")
        sw = w.add_stream(self.EXPLICIT, codec=Codec.none)
        sw.write_batch({"t": [1]}, axis_base=0)
        size = len(buf.getvalue())
        with pytest.raises(EncodeError):
            sw.write_batch({"t": [2**62, 2**63]}, axis_base=0)
        assert len(buf.getvalue()) == size
        sw.write_batch({"t": [3]}, axis_base=0)
        w.close()
        f = logb.LogbFile(buf.getvalue())
        assert f.report.clean and not f.report.notes
        assert f.stream("e").columns().axis.tolist() == [2, 6]
        assert all(f.index_valid.values())

    def test_intermediate_overflow_with_result_in_range_is_exact(self):
        base = -(2**62) - 2**61
        f = logb.LogbFile(self._write(self.EXPLICIT, [({"t": [2**62, 2**62 + 1]}, base)]))
        assert f.stream("e").columns().axis.tolist() == [base + 2 * 2**62, base + 2 * (2**62 + 1)]

    def test_sint_axis_field_negative_scale(self):
        s = Schema(b"\x07" * 16, "e", 16, AxisKind.time, AxisMode.explicit, axis_exp=-3, axis_scale=-7,
                   axis_field=0, fields=(Field("t", 0, 16, DataType.sint, ByteOrder.big),))
        f = logb.LogbFile(self._write(s, [({"t": [-32768, 0, 32767]}, 100)]))
        assert f.stream("e").columns().axis.tolist() == [100 + 7 * 32768, 100, 100 - 7 * 32767]

    def test_implicit_overflow_rejected(self):
        s = Schema(b"\x07" * 16, "i", 8, AxisKind.time, AxisMode.implicit, axis_exp=-9, axis_step=10,
                   fields=(Field("v", 0, 8, DataType.uint),))
        data = self._write(s, [({"v": [1, 2, 3]}, I64_MAX - 20), ({"v": [4, 5, 6]}, 0), ({"v": [7]}, I64_MAX)])
        f = logb.LogbFile(self._set_base(data, 1, I64_MAX - 19))
        cols = f.stream("i").columns()
        assert cols.raw["v"].tolist() == [1, 2, 3, 7]
        assert cols.axis.tolist() == [I64_MAX - 20, I64_MAX - 10, I64_MAX, I64_MAX]
        assert f.stream("i").rejected == 3

    def test_implicit_negative_step_reaches_i64_min_exactly(self):
        s = Schema(b"\x07" * 16, "i", 8, AxisKind.time, AxisMode.implicit, axis_exp=-9, axis_step=-(2**62),
                   fields=(Field("v", 0, 8, DataType.uint),))
        data = self._write(s, [({"v": [1, 2, 3, 4]}, 2**62), ({"v": [1, 2, 3, 4]}, 2**62 + 1)])
        f = logb.LogbFile(data)
        assert f.stream("i").columns().axis.tolist() == [2**62, 0, -(2**62), I64_MIN,
                                                        2**62 + 1, 1, -(2**62) + 1, I64_MIN + 1]
        f = logb.LogbFile(self._set_base(data, 1, 2**62 - 2**60))
        assert f.stream("i").columns().axis.tolist() == [2**62, 0, -(2**62), I64_MIN]
        assert f.stream("i").rejected == 4
        with pytest.raises(EncodeError):
            logb.Writer(io.BytesIO()).add_stream(s).write_batch({"v": [0] * 5}, axis_base=2**62)


@pytest.mark.parametrize("mode, step", [(AxisMode.implicit, 1e308), (AxisMode.explicit, 1e308)])
def test_a_float_axis_that_overflows_is_inf_without_a_warning(mode, step, recwarn):
    # SPEC §5.2: IEEE binary64, so base + 2 * 1e308 is inf, a value (numpy would warn of the overflow)
    kw = {"axis_step": step} if mode == AxisMode.implicit else {"axis_scale": step, "axis_field": 0}
    s = Schema(b"\x06" * 16, "f", 8, AxisKind.index, mode, fields=(Field("x", 0, 8, DataType.uint),), **kw)
    buf = io.BytesIO()
    with logb.Writer(buf) as w:
        w.add_stream(s, codec=Codec.none, transpose=False).write_batch({"x": [0, 1, 2]}, axis_base=1e308)
    with logb.LogbFile(buf.getvalue()) as f:
        axis = f.stream("f").columns().axis
    want = [1e308 + i * 1e308 for i in range(3)]  # the record index, or the raw x, which is the index here
    assert axis.tolist() == want and np.isinf(axis[1:]).all()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]

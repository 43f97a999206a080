"""Runs of frames decoded in one kernel call (Kernels.extract_frames, bits.c's
logb_extract_frames; batch.decode_run, Columns.decoded's runs of frames, read
in place or decompressed): the kernel against extract_many run by run and the
C backend against the numpy one, and columns() through it against columns()
frame by frame — every field type, windows, wide, field subsets, mixed codecs
and filters, sessions and runs, rejected frames, a frame that does not
decompress, an INDEX that disagrees, a file read by window."""

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logb
from logb import AxisKind, AxisMode, ByteOrder, DataType, Field, Schema, _backend
from logb import batch as batchmod
from logb import source
from logb.tables import FIELD_FLAG_VARIABLE, Codec, Filter

from _frames import DATA_AXIS_BASE, patch, walk
from test_bits import ref_get, ref_signed
from test_extract_many import draw_specs

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- the kernel

@st.composite
def frame_runs(draw):
    size = draw(st.integers(1, 20))
    specs = draw_specs(draw, size, 5)
    # runs of records with gaps between them (a frame's header and CRC), some empty, some planar,
    # in one buffer (a held file) or each in its own (decompressed frames)
    runs, pos = [], draw(st.integers(0, 9))
    for _ in range(draw(st.integers(0, 6))):
        n = draw(st.integers(0, 40))
        runs.append((pos, n, draw(st.booleans())))
        pos += n * size + draw(st.integers(0, 9))
    data = draw(st.binary(min_size=pos, max_size=pos))
    if draw(st.booleans()):
        data = [data] * len(runs)
    else:
        data = [bytes(data[:start + n * size]) for start, n, _planar in runs]
    axis = draw(st.booleans())
    if axis:  # the time axis: an 8-byte element last, scaled, plus a base per run
        width = draw(st.integers(1, min(64, 8 * size)))
        specs.append((draw(st.integers(0, 8 * size - width)), width, draw(st.booleans()),
                      8 | (0x10 if draw(st.booleans()) else 0), 0))
    scale = draw(st.integers(-(1 << 63), (1 << 64) - 1)) if axis else 1
    bases = [draw(st.integers(0, (1 << 64) - 1)) for _ in runs] if axis else None
    return size, specs, runs, data, scale, bases


def _outs(specs, total):
    return [np.full(total, 0x5A, f"{'i' if kind & 0x10 else 'u'}{kind & 15}") for _o, _w, _b, kind, _oo in specs]


def _run_by_run(size, specs, runs, data, scale, bases):
    """extract_many of each run, then the axis arithmetic in Python ints."""
    k = _backend.active
    plan = k.plan(size, specs)
    outs = _outs(specs, sum(n for _, n, _ in runs))
    done = 0
    for r, (start, n, planar) in enumerate(runs):
        if n:
            flat = np.frombuffer(data[r], np.uint8, n * size, start)
            recs = np.ascontiguousarray(flat.reshape(size, n).T) if planar else flat.reshape(n, size)
            k.extract_many(recs, plan, [o[done:done + n] for o in outs])
        if bases is not None:
            axis = outs[-1].view(np.uint64)
            axis[done:done + n] = [(int(v) * scale + bases[r]) % (1 << 64) for v in axis[done:done + n]]
        done += n
    return outs


def _in_one_call(size, specs, runs, data, scale, bases):
    k = _backend.active
    outs = _outs(specs, sum(n for _, n, _ in runs))
    k.extract_frames([(buf, start, n, planar) for buf, (start, n, planar) in zip(data, runs)], k.plan(size, specs),
                     outs, scale, None if bases is None else np.array(bases, np.uint64))
    return outs


@SETTINGS
@given(frame_runs())
def test_extract_frames_is_extract_many_run_by_run(case):
    for got, want in zip(_in_one_call(*case), _run_by_run(*case)):
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.mark.skipif(_backend.load_c() is None, reason="the C backend is not built")
@SETTINGS
@given(frame_runs())
def test_extract_frames_c_equals_numpy(case):
    cols = {}
    for name in ("c", "python"):
        with _backend.using(name):
            cols[name] = _in_one_call(*case)
    for a, b in zip(cols["c"], cols["python"]):
        assert a.tolist() == b.tolist()


def test_extract_frames_rejects_what_would_reach_outside_its_buffers():
    k = _backend.active
    data = bytes(range(40))
    plan = k.plan(4, [(0, 16, False, 2, 0), (16, 16, False, 8, 0)])
    runs = [(data, 0, 3, False), (data[20:], 0, 5, False)]
    outs = [np.empty(8, np.uint16), np.empty(8, np.uint64)]
    k.extract_frames(runs, plan, outs, 3, np.array([1, 2], np.uint64))
    assert outs[1].tolist() == [(r[2] | r[3] << 8) * 3 + (1 if i < 3 else 2)
                                for i, r in enumerate([data[j:j + 4] for j in (0, 4, 8, 20, 24, 28, 32, 36)])]
    with pytest.raises(ValueError):  # the second run ends past its buffer
        k.extract_frames([runs[0], (data, 20, 6, False)], plan, [np.empty(9, np.uint16), np.empty(9, np.uint64)])
    with pytest.raises(ValueError):
        k.extract_frames([(data, -4, 1, False)], plan, [np.empty(1, np.uint16), np.empty(1, np.uint64)])
    with pytest.raises(ValueError):  # outputs of another length than the runs' records
        k.extract_frames(runs, plan, [np.empty(7, np.uint16), np.empty(7, np.uint64)])
    with pytest.raises(ValueError):  # one output too few
        k.extract_frames(runs, plan, outs[:1])
    with pytest.raises(TypeError):
        k.extract_frames(runs, plan, outs, 1, np.array([1], np.uint64))
    narrow = k.plan(4, [(16, 16, False, 2, 0)])
    with pytest.raises(ValueError):  # an axis of 2-byte elements
        k.extract_frames(runs, narrow, [np.empty(8, np.uint16)], 1, np.zeros(2, np.uint64))
    with pytest.raises(ValueError):
        k.extract_frames(runs, plan, [outs[0], outs[1][:8].view(np.uint64)[::-1]])


@pytest.mark.parametrize("planar", [False, True])
@pytest.mark.parametrize("strided", [False, True])
def test_whole_byte_fields_at_their_element_size(planar, strided):
    """bits.c copies a field of whole bytes the size of its element without shift
    or mask (extract_copy), row-major and planar, either byte order, signed or not,
    into contiguous or strided outputs: the oracle's values all the same."""
    k = _backend.active
    rng = np.random.default_rng(3)
    size, n = 23, 37
    data = rng.integers(0, 256, (n, size), np.uint8)
    recs = np.ascontiguousarray(data.T).T if planar else data
    rows = [bytes(r) for r in data]
    for elem in (1, 2, 4, 8):
        for byte in (0, 3, size - elem):
            for big in (False, True):
                for signed in (False, True):
                    dtype = f"{'i' if signed else 'u'}{elem}"
                    out = np.zeros(2 * n, dtype)[::2] if strided else np.zeros(n, dtype)
                    kind = elem | (0x10 if signed else 0)
                    k.extract(recs, 8 * byte, 8 * elem, big, kind, out)
                    raw = [ref_get(r, 8 * byte, 8 * elem, big) for r in rows]
                    assert out.tolist() == ([ref_signed(v, 8 * elem) for v in raw] if signed else raw)


# ---------------------------------------------------------------- columns()

FIELDS = (
    Field("t", 0, 24, DataType.sint, ByteOrder.big),  # the axis: a big-endian signed 24-bit count
    Field("a", 24, 3, DataType.uint),
    Field("b", 27, 13, DataType.sint),
    Field("id", 40, 32, DataType.uint),
    Field("w", 72, 16, DataType.uint, ByteOrder.big),
    Field("ok", 88, 1, DataType.bool),
    Field("x", 96, 32, DataType.float),
    Field("y", 128, 64, DataType.float, ByteOrder.big),
    Field("b1", 192, 8, DataType.bytes),
    Field("b2", 200, 16, DataType.bytes),
    Field("b4", 216, 32, DataType.bytes),
    Field("data", 248, 64, DataType.bytes),
    Field("s", 312, 8, DataType.sint),
    Field("big", 320, 64, DataType.uint),
)


def _schema(scale=5, fields=FIELDS, kind=AxisKind.time, bits=384):
    return Schema(uuid=logb.stream_uuid("test", "rec"), name="rec", record_bits=bits, axis_kind=kind,
                  axis_mode=AxisMode.explicit, axis_exp=-6, axis_unit="s", axis_scale=scale, axis_field=0,
                  fields=fields)


# (codec, transpose) of each frame, in file order: runs of uncompressed frames between others
LAYOUT = [(Codec.none, False)] * 3 + [(Codec.zstd, True), (Codec.none, True)] + [(Codec.none, False)] * 2 \
    + [(Codec.zstd, False), (Codec.none, False)]


def _session(schema, seed, layout=LAYOUT):
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    with logb.Writer(buf, time_base="relative") as w:
        s = w.add_stream(schema)
        for k, (codec, transpose) in enumerate(layout):
            s.codec, s.filter = codec, Filter.transpose if transpose else Filter.none
            n = int(rng.integers(0 if k == 2 else 1, 300))
            recs = rng.integers(0, 256, (n, schema.record_size), np.uint8)
            recs[:, 0] &= 0x3F  # the axis field stays small enough for any frame's base
            # a variable-length field's tail: a u32 length, then its bytes (SPEC §6.4)
            tails = b"".join(len(v).to_bytes(4, "little") + v for v in (bytes(range(i % 5)) for i in range(n))) \
                if schema.variable_fields else b""
            s.write_records(recs, axis_base=k * 1_000_000 - 3_000_000, run_id=k // 3, tails=tails)
    return buf.getvalue()


def _file(tmp_path, schema, layout=LAYOUT):
    """Two writer sessions (`logb cat`) of the layout."""
    a, b = _session(schema, 1, layout), _session(schema, 2, layout)
    path = tmp_path / "rec.logb"
    path.write_bytes(a + b[16:])
    return path


def _columns(path, in_place, **kw):
    """(columns, the report's notes, the stream's rejected count, extract_frames calls)."""
    calls = []
    k = _backend.active
    real, plan = k.extract_frames, batchmod.run_plan

    def counting(*a, **kwa):
        calls.append(1)
        return real(*a, **kwa)

    k.extract_frames = counting
    if not in_place:
        batchmod.run_plan = lambda *a, **kwa: None
    try:
        with logb.LogbFile(str(path)) as f:
            s = f.stream("rec")
            c = s.columns(**kw)
            return c, [(n.offset, n.kind, n.message) for n in f.report.notes], s.rejected, len(calls)
    finally:
        del k.extract_frames
        batchmod.run_plan = plan


def _same(path, expect_in_place=True, **kw):
    got, notes, rejected, calls = _columns(path, True, **kw)
    want, want_notes, want_rejected, _ = _columns(path, False, **kw)
    assert (calls > 0) == expect_in_place
    assert got.raw.keys() == want.raw.keys() and len(got) == len(want)
    for name in want.raw:
        a, b = got.raw[name], want.raw[name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tolist() == b.tolist() if a.dtype == object else a.tobytes() == b.tobytes(), name  # bit for bit
    for name in ("axis", "run_id", "session"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert notes == want_notes and rejected == want_rejected
    return got, notes, rejected


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("window", [None, (-2_500_000, 2_000_300), (10**15, 10**15 + 1)])
def test_columns_in_place_equal_frame_by_frame(tmp_path, wide, window):
    path = _file(tmp_path, _schema())
    c, notes, rejected = _same(path, window=window, wide=wide)
    assert not rejected and not notes
    if window is None:
        assert len(c) and len(set(c.session.tolist())) == 2 and len(set(c.run_id.tolist())) == 3


@pytest.mark.parametrize("fields", [["id", "data", "y"], ["b1"], ["t"], []])
def test_columns_in_place_of_some_fields(tmp_path, fields):
    _same(_file(tmp_path, _schema()), fields=fields, window=(-2_500_000, 2_000_300))
    _same(_file(tmp_path, _schema()), fields=fields)


def test_unsigned_axis_of_scale_one_and_negative_scale(tmp_path):
    fields = (Field("t", 0, 16, DataType.uint),) + FIELDS[1:]
    _same(_file(tmp_path, _schema(scale=1, fields=fields)))
    _same(_file(tmp_path, _schema(scale=-7, fields=fields)))


def test_schemas_it_does_not_take_decode_frame_by_frame(tmp_path):
    """A non-time axis, a complex field, a fixed string field (the kernels do not fill them),
    a variable-length field (its tails are checked frame by frame)."""
    _same(_file(tmp_path, _schema(kind=AxisKind.other)), expect_in_place=False)
    _same(_file(tmp_path, _schema(fields=FIELDS + (Field("z", 384, 64, DataType.complex),), bits=448)),
          expect_in_place=False)
    _same(_file(tmp_path, _schema(fields=FIELDS + (Field("name", 384, 24, DataType.string),), bits=408)),
          expect_in_place=False)
    var = Field("v", 0, 0, DataType.bytes, flags=FIELD_FLAG_VARIABLE)
    _same(_file(tmp_path, _schema(fields=FIELDS + (var,))), expect_in_place=False)


def test_a_file_read_by_window(tmp_path, monkeypatch):
    """Each frame read when decoded (source.HOLD_MAX), runs of them cut at RUN_BYTES."""
    path = _file(tmp_path, _schema())
    monkeypatch.setattr(source, "HOLD_MAX", 0)
    _same(path)
    monkeypatch.setattr(batchmod, "RUN_BYTES", 1)
    _same(path, window=(-2_500_000, 2_000_300))


def test_runs_cut_short(tmp_path, monkeypatch):
    monkeypatch.setattr(batchmod, "RUN_BYTES", 5000)
    _same(_file(tmp_path, _schema()))
    _same(_file(tmp_path, _schema()), window=(-2_500_000, 2_000_300))


def test_a_frame_that_does_not_decompress(tmp_path):
    """A zstd frame whose bytes are damaged (its CRC refit) is rejected, as frame by frame,
    between runs decoded around it."""
    path = _file(tmp_path, _schema())
    data = path.read_bytes()
    zstd = _data_frames(data)[LAYOUT.index((Codec.zstd, True))]
    data = patch(data, zstd, 8 + 28, b"\xff" * 8)  # the zstd frame's magic
    path.write_bytes(data)
    c, notes, rejected = _same(path)
    assert rejected and len(c)
    with pytest.raises(logb.errors.MalformedPayloadError):
        with logb.LogbFile(str(path), strict=True) as f:
            f.stream("rec").columns()


def _data_frames(data):
    return [off for off, ftype, _sid, _plen in walk(data) if ftype == 0x20]


def test_frames_near_the_end_of_i64_and_rejected_ones(tmp_path):
    """A frame whose base leaves no room for every value its field can hold is decoded
    alone (it may still fit), and one whose records overflow i64 is rejected, as frame
    by frame; the runs of frames around them decode in place."""
    path = _file(tmp_path, _schema(scale=1))
    data = path.read_bytes()
    frames = _data_frames(data)
    near = (1 << 63) - (1 << 23)  # t < 2**23 always, but its values reach 2**23 - 1 only when they do
    data = patch(data, frames[1], DATA_AXIS_BASE, near.to_bytes(8, "little", signed=True))
    data = patch(data, frames[5], DATA_AXIS_BASE, ((1 << 63) - 3).to_bytes(8, "little", signed=True))
    path.write_bytes(data)
    c, notes, rejected = _same(path)
    assert rejected and any(kind == "rejected" for _, kind, _ in notes)
    assert c.axis.max() >= near
    with pytest.raises(logb.errors.MalformedPayloadError):
        with logb.LogbFile(str(path), strict=True) as f:
            f.stream("rec").columns()


def test_an_index_the_records_disagree_with(tmp_path):
    """The INDEX states each frame's first axis value; records patched after the fact are
    noted on decode, in place or not."""
    path = _file(tmp_path, _schema(scale=1))
    data = path.read_bytes()
    first = _data_frames(data)[0]
    data = patch(data, first, 8 + 28, b"\x00\x00\x07")  # the first record's t (big-endian)
    path.write_bytes(data)
    c, notes, _ = _same(path)
    assert any(kind == "corrupt-index" for _, kind, _ in notes)

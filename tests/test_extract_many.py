"""Many fields in one kernel call (Kernels.plan / extract_many, bits.c's
logb_extract_many) and decode_batch's planned path built on it: the same
columns as one extract() per field, under each backend (tests/conftest.py),
row-major and transposed, and the same rejections."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logb
from logb import AxisKind, AxisMode, ByteOrder, DataType, Field, Schema, _backend
from logb import batch as batchmod
from logb import fields
from logb.errors import InvalidDataError
from logb.tables import Codec

from test_bits import ref_get, ref_signed

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def draw_specs(draw, stride, most):
    """1..most kernel field specs (offset, width, big, element size | signed, 0) within records of `stride` bytes."""
    specs = []
    for _ in range(draw(st.integers(1, most))):
        width = draw(st.integers(1, min(64, 8 * stride)))
        offset = draw(st.integers(0, 8 * stride - width))
        signed = draw(st.booleans())
        size = draw(st.sampled_from([s for s in (1, 2, 4, 8) if 8 * s >= width]))
        specs.append((offset, width, draw(st.booleans()), size | (0x10 if signed else 0), 0))
    return specs


@st.composite
def many(draw):
    stride = draw(st.integers(1, 20))
    specs = draw_specs(draw, stride, 6)
    n = draw(st.integers(1, 70))
    data = draw(st.binary(min_size=n * stride, max_size=n * stride))
    return stride, specs, n, data


def _want(rows, offset, width, big, kind):
    raw = [ref_get(r, offset, width, big) for r in rows]
    return [ref_signed(v, width) for v in raw] if kind & 0x10 else raw


@SETTINGS
@given(many(), st.booleans())
def test_extract_many_equals_the_oracle(case, planar):
    stride, specs, n, data = case
    k = _backend.active
    arr = np.frombuffer(data, np.uint8).reshape(n, stride)
    # a transposed frame's rows read in place (strides (1, n)), as the C backend's reader does
    recs = np.ascontiguousarray(arr.T).T if planar else arr
    outs = [np.empty(n, f"{'i' if kind & 0x10 else 'u'}{kind & 15}") for _o, _w, _b, kind, _oo in specs]
    k.extract_many(recs, k.plan(stride, specs), outs)
    rows = [data[i * stride:(i + 1) * stride] for i in range(n)]
    for out, (offset, width, big, kind, _oo) in zip(outs, specs):
        assert out.tolist() == _want(rows, offset, width, big, kind)


def test_extract_many_into_strided_items_and_offsets():
    """Elements at an offset inside wider items (the out_offset of extract), and a strided out."""
    k = _backend.active
    recs = np.arange(40, dtype=np.uint8).reshape(10, 4)
    pairs = np.zeros(10, [("a", "<u2"), ("b", "<u2")])
    wide = np.zeros(20, np.uint32)
    k.extract_many(recs, k.plan(4, [(0, 16, False, 2, 2), (16, 16, True, 4, 0)]),
                   [pairs.view(np.uint32), wide[::2]])
    assert pairs["b"].tolist() == [int(r[0]) | int(r[1]) << 8 for r in recs] and not pairs["a"].any()
    assert wide[::2].tolist() == [int(r[2]) << 8 | int(r[3]) for r in recs] and not wide[1::2].any()


def test_extract_many_rejects_what_extract_rejects():
    k = _backend.active
    recs = np.zeros((3, 2), np.uint8)
    with pytest.raises(ValueError):
        k.plan(2, [(8, 16, False, 2, 0)])  # past the record
    with pytest.raises(ValueError):
        k.plan(2, [(0, 16, False, 1, 0)])  # an element too narrow for the field
    plan = k.plan(2, [(0, 8, False, 1, 0), (8, 8, False, 1, 0)])
    with pytest.raises(ValueError):
        k.extract_many(np.zeros((3, 3), np.uint8), plan, [np.empty(3, np.uint8)] * 2)  # another record size
    with pytest.raises(ValueError):
        k.extract_many(recs, plan, [np.empty(3, np.uint8)])  # an output short
    with pytest.raises(ValueError):
        k.extract_many(recs, plan, [np.empty(3, np.uint8), np.empty(2, np.uint8)])  # not one item per record
    ro = np.empty(3, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        k.extract_many(recs, plan, [np.empty(3, np.uint8), ro])


def test_c_extract_many_rejects_an_invalid_spec_before_writing():
    """The C entry point checks every spec first (a caller that bypasses Kernels.plan)."""
    c = _backend.load_c()
    if c is None:
        pytest.skip("no C backend")
    ffi, lib = c.ffi, c.lib
    recs = np.arange(8, dtype=np.uint8)
    out = np.zeros(8, np.uint8)
    specs = ffi.new("logb_field_spec[]", [(0, 8, 0, 1), (0, 65, 0, 8)])
    where = ffi.new("uintptr_t[]", [out.__array_interface__["data"][0], 1, out.__array_interface__["data"][0], 8])
    assert lib.logb_extract_many(ffi.cast("uint8_t *", recs.__array_interface__["data"][0]), 8, 1, 1, specs, 2,
                                 where) == lib.LOGB_EINVAL
    assert not out.any()


# ---------------------------------------------------------------- decode_batch

def _schema(axis_field=True, axis_scale=1, ts_width=32, ts_type=DataType.uint):
    return Schema(
        uuid=logb.stream_uuid("t", "many"), name="many", record_bits=8 * 24,
        axis_kind=AxisKind.time, axis_mode=AxisMode.explicit if axis_field else AxisMode.implicit,
        axis_exp=-6, axis_unit="s", axis_scale=axis_scale, axis_field=0, axis_step=0 if axis_field else 10,
        fields=(
            Field("ts", 0, ts_width, ts_type),
            Field("id", 32, 29, DataType.uint),
            Field("neg", 61, 11, DataType.sint, ByteOrder.big),
            Field("flag", 72, 1, DataType.bool),
            Field("f", 80, 32, DataType.float),
            Field("data", 112, 64, DataType.bytes),
            Field("odd", 176, 16, DataType.bytes),
        ))


def _frame(schema, n, seed=1):
    """Random records and their columns, extracted field by field (extract())."""
    rng = np.random.default_rng(seed)
    recs = rng.integers(0, 256, (n, schema.record_size), np.uint8)
    return recs, {f.name: fields.extract(recs, f) for f in schema.fields}


def _same(a, b):
    """Equal to the bit (random float bits include NaNs)."""
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _write_read(tmp_path, schema, cols, codec, transpose, base):
    p = tmp_path / "m.logb"
    with logb.Writer(str(p), time_base="relative") as w:
        s = w.add_stream(schema, codec=codec, transpose=transpose)
        s.write_batch(cols, axis_base=base, run_id=0)
    return p


@pytest.mark.parametrize("codec,transpose", [(Codec.none, False), (Codec.zstd, True)])
@pytest.mark.parametrize("scale", [1, 3])
def test_planned_decode_equals_field_by_field(tmp_path, codec, transpose, scale):
    schema = _schema(axis_scale=scale)
    recs, cols = _frame(schema, 300)
    p = _write_read(tmp_path, schema, cols, codec, transpose, 1000)
    with logb.LogbFile(str(p)) as f:
        s = f.stream("many")
        fl = s.frames[0]
        stored = f._stored(*fl.stored_slice)
        got = batchmod.decode_batch(schema, fl.header, stored)
        some = batchmod.decode_batch(schema, fl.header, stored, only=["neg", "data"])
        c = s.columns()
    for name, col in cols.items():
        assert got.raw[name].dtype == col.dtype and _same(got.raw[name], col), name
        assert _same(c.raw[name], col), name
    assert got.axis.tolist() == [1000 + scale * int(t) for t in cols["ts"]]
    assert np.array_equal(c.axis, got.axis)
    assert list(some.raw) == ["neg", "data"] and np.array_equal(some.axis, got.axis)


def test_planned_decode_into_an_unaligned_out_falls_back(tmp_path):
    """A bytes destination the kernel cannot take as one aligned item per record
    (a slice one byte into a buffer) still receives the values, through gather."""
    schema = _schema()
    recs, cols = _frame(schema, 50)
    p = _write_read(tmp_path, schema, cols, Codec.none, False, 0)
    dest = {"data": np.frombuffer(bytearray(401), np.uint8, 400, 1).reshape(50, 8)}
    assert fields.as_items(dest["data"]) is None
    with logb.LogbFile(str(p)) as f:
        fl = f.stream("many").frames[0]
        b = batchmod.decode_batch(schema, fl.header, f._stored(*fl.stored_slice), out=(dest, np.empty(50, np.int64)))
    assert b.raw["data"] is dest["data"] and np.array_equal(dest["data"], cols["data"])
    assert np.array_equal(b.raw["id"], cols["id"]) and b.axis.tolist() == cols["ts"].tolist()


def test_planned_decode_still_rejects_an_overflowing_axis(tmp_path):
    """A base the scaled field could overflow is checked on the values (axis_column), as before."""
    schema = _schema(ts_width=32)
    recs, cols = _frame(schema, 20)
    cols["ts"] = np.arange(20, dtype=np.uint32)
    cols["ts"][-1] = 0xFFFFFFFF
    top = (1 << 63) - 1
    p = _write_read(tmp_path, schema, cols, Codec.none, False, 0)
    with logb.LogbFile(str(p)) as f:
        fl = f.stream("many").frames[0]
        header = fl.header
        stored = f._stored(*fl.stored_slice)
    # the same frame with a base the largest 32-bit value would overflow, one that only the seen values reach
    near = top - 0xFFFFFFFF + 1
    with pytest.raises(InvalidDataError):
        batchmod.decode_batch(schema, _rebased(header, near), stored)
    cols_ok = dict(cols, ts=np.arange(20, dtype=np.uint32))
    p2 = _write_read(tmp_path, schema, cols_ok, Codec.none, False, 0)
    with logb.LogbFile(str(p2)) as f:
        fl = f.stream("many").frames[0]
        b = batchmod.decode_batch(schema, _rebased(fl.header, near), f._stored(*fl.stored_slice))
    assert b.axis.tolist() == [near + t for t in range(20)]


def _rebased(header, base):
    import dataclasses

    from logb.frames import pack_axis

    return dataclasses.replace(header, axis_base_raw=pack_axis(base, True))

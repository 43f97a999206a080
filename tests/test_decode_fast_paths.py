"""The raw bus + DBC decode's shortcuts give what the general code gives, under each
backend (tests/conftest.py): fields.extract_many against extract() per field, value
table labels of narrow integers (a table per bit pattern) against the key lookup,
frame keys and lengths against their definitions, and the shortest frame without
building every length."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logb
from logb import fields
from logb.can import decode as D
from logb.can import layout
from logb.schema import Conversion, Field
from logb.tables import ByteOrder, ConversionType, DataType

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def record_fields(draw):
    size = draw(st.integers(1, 12))
    out = []
    for i in range(draw(st.integers(0, 7))):
        kinds = [DataType.uint, DataType.sint, DataType.bool, DataType.bytes, DataType.string]
        dt = draw(st.sampled_from(kinds + ([DataType.float] if size >= 2 else [])))
        if dt == DataType.float:
            width = draw(st.sampled_from([w for w in (16, 32, 64) if w <= 8 * size]))
        elif dt in (DataType.bytes, DataType.string):
            width = 8 * draw(st.integers(1, size))
        else:
            width = draw(st.integers(1, min(64, 8 * size)))
        whole = dt in (DataType.float, DataType.bytes, DataType.string)
        offset = 8 * draw(st.integers(0, size - width // 8)) if whole else draw(st.integers(0, 8 * size - width))
        order = draw(st.sampled_from([ByteOrder.little, ByteOrder.big]))
        out.append(Field(f"f{i}", offset, width, dt, order))
    return size, out


@SETTINGS
@given(record_fields(), st.integers(0, 40), st.booleans(), st.booleans())
def test_extract_many_is_extract_per_field(case, n, wide, planar):
    size, fs = case
    rng = np.random.default_rng(n + size)
    records = rng.integers(0, 256, (n, size), np.uint8)
    if any(f.data_type == DataType.string for f in fs):
        records[:] = ord("a")  # valid UTF-8 wherever a string field falls
    if planar:  # a transposed frame's rows read in place
        records = np.ascontiguousarray(records.T).T
    plan = fields.plan_many(fs, wide)
    wider = np.concatenate([records, np.zeros((n, 3), np.uint8)], axis=1)  # one plan, records of another size
    for recs, got in ((records, fields.extract_many(records, fs, wide=wide)),
                      (records, fields.extract_many(records, plan)), (wider, fields.extract_many(wider, plan))):
        assert len(got) == len(fs)
        for f, col in zip(fs, got):
            want = fields.extract(recs, f, wide=wide)
            assert col.dtype == want.dtype and col.shape == want.shape
            assert np.array_equal(col, want, equal_nan=col.dtype.kind == "f"), f


def test_extract_many_rejects_a_field_past_the_record():
    f = Field("x", 16, 8, DataType.uint)
    plan = fields.plan_many([f])
    assert fields.extract_many(np.full((2, 3), 7, np.uint8), plan)[0].tolist() == [7, 7]
    with pytest.raises(ValueError):
        fields.extract_many(np.zeros((3, 2), np.uint8), plan)
    with pytest.raises(TypeError):
        fields.extract_many(np.zeros(3, np.uint8), [f])


def _generic_text(conv, raw):
    """decode._text's key lookup (convert.physical), whatever the column."""
    keys = np.array([k for k, _ in conv.entries], np.float64)
    from logb import convert
    labels = convert.physical(conv, raw)
    labels[~np.isin(raw.astype(np.float64), keys)] = None
    return labels


KEYS = st.one_of(st.integers(-40000, 70000).map(float), st.sampled_from([0.5, -1.5, float("nan"), 1e300, -0.0]))


@SETTINGS
@given(st.sampled_from([np.uint8, np.int8, np.uint16, np.int16]),
       st.lists(st.tuples(KEYS, st.sampled_from(["a", "b", "c", ""])), max_size=12), st.integers(0, 3))
def test_value_table_labels_of_narrow_integers(dtype, entries, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    # every key in range (repeated keys too: the first entry wins), the extremes, and noise
    hits = [int(k) for k, _ in entries if k == k and info.min <= k <= info.max and float(k).is_integer()]
    values = hits + [info.min, info.max, 0, -1 if info.min else 1]
    raw = np.array(values + rng.integers(info.min, info.max, 1 << 16, endpoint=True).tolist(), dtype)
    conv = Conversion(ConversionType.value_to_text, entries=tuple(entries), default="?")
    got = D._text(conv, raw)
    assert got.dtype == object and got.tolist() == _generic_text(conv, raw).tolist()


def test_value_table_labels_of_a_short_16_bit_column_take_the_lookup():
    conv = Conversion(ConversionType.value_to_text, entries=((7.0, "seven"), (7.0, "again")), default="?")
    raw = np.array([7, 8], np.uint16)
    assert D._text(conv, raw).tolist() == ["seven", None]
    swapped = np.array([7, 8] * (1 << 15), ">u2")  # long enough for the table, but not native
    assert D._text(conv, swapped).tolist() == ["seven", None] * (1 << 15)


FLAGS = st.integers(0, 127)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2**32 - 1), FLAGS, st.integers(0, 15)), max_size=60))
def test_frame_keys_lengths_and_the_shortest(frames):
    ids = np.array([f[0] for f in frames], np.uint32)
    flags = np.array([f[1] for f in frames], np.uint8)
    dlc = np.array([f[2] for f in frames], np.uint8)
    keys = D.frame_keys(ids, flags)
    want = [(i & 0x1FFFFFFF) | (1 << 31 if (i >> 31) or fl & layout.FLAG_EXTENDED else 0) for i, fl, _ in frames]
    assert keys.dtype == np.uint32 and keys.tolist() == want
    lengths = D.frame_lengths(dlc, flags)
    assert lengths.tolist() == layout.frame_lengths(dlc, flags).tolist()
    if frames:
        assert D._shortest(dlc, flags) == min(lengths.tolist())
        classic = flags & ~np.uint8(layout.FLAG_FD | layout.FLAG_REMOTE)
        assert D._shortest(dlc, classic) == min(D.frame_lengths(dlc, classic).tolist())


def test_frame_keys_of_signed_and_wide_ids():
    ids = np.array([-1, 0x7FF, 0x1FFFFFFF | (1 << 31)], np.int64)
    assert D.frame_keys(ids).tolist() == [0x9FFFFFFF, 0x7FF, 0x9FFFFFFF]
    assert D.frame_keys(ids.astype(np.uint64), np.array([0, 1, 0], np.int64)).tolist() == \
        [0x9FFFFFFF, 0x800007FF, 0x9FFFFFFF]


def _raw_recording(path, text, n=400):
    """A raw bus stream and `text` attached (no per-message streams)."""
    from _can_fixtures import random_frames

    from logb.can.dbc import MEDIA_TYPE, compile_dbc
    from logb.can.record import CanRecorder

    rng = np.random.default_rng(n)
    ids, flags, data = random_frames(rng, n)
    with logb.Writer(str(path), time_base="relative") as w:
        with CanRecorder(w, None, batch=256) as rec:  # several DATA frames
            rec.add(np.arange(n) * 1000, ids, flags, np.full(n, 8, np.uint8), data)
        w.attach("bus.dbc", MEDIA_TYPE, compile_dbc(text).attachment_bytes())


def test_an_attached_dbc_is_compiled_once_per_bytes_and_bus(tmp_path):
    from _can_fixtures import dbc

    text = dbc()
    assert D.attached_dbc(text.encode(), "can0") is D.attached_dbc(memoryview(text.encode()), "can0")
    assert D.attached_dbc(text.encode(), "can1") is not D.attached_dbc(text.encode(), "can0")
    other = dbc('CM_ SG_ 256 Speed "engine speed";\n')
    assert D.attached_dbc(other.encode(), "can0") is not D.attached_dbc(text.encode(), "can0")
    # decoding with the kept CompiledDbc gives what a fresh compile gives
    path = tmp_path / "raw.logb"
    _raw_recording(path, text)
    with logb.LogbFile(str(path)) as f:
        kept = D.decode_file(f, source="raw")
        fresh = D.decode_file(f, dbc=text)
    assert [d.stream for d in kept] == [d.stream for d in fresh] and kept
    for a, b in zip(kept, fresh):
        assert np.array_equal(a.axis, b.axis) and np.array_equal(a.rows, b.rows)
        assert a.raw.keys() == b.raw.keys() and all(np.array_equal(a.raw[k], b.raw[k]) for k in a.raw)


def test_frames_columns_preallocated_equal_frame_by_frame(tmp_path):
    """Chunks of a raw bus stream of two sessions (time going back between them), windowed
    or not, decoded into preallocated columns give the frame-by-frame concatenation."""
    from logb.can import bus

    parts = []
    for k in range(2):
        p = tmp_path / f"{k}.logb"
        _raw_recording(p, __import__("_can_fixtures").dbc(), n=3000 + k)
        parts.append(p.read_bytes())
    path = tmp_path / "two.logb"
    path.write_bytes(parts[0] + parts[1][16:])  # `logb cat` semantics: two sessions
    with logb.LogbFile(str(path)) as f:
        s = bus.buses(f)[0].streams[0]
        assert len({fl.segment for fl in s.frames}) == 2 and len(s.frames) > 20
        for ticks in (None, (500_000, 2_400_000), (10**12, 10**12 + 1)):
            for chunk in bus.frame_chunks(s, ticks, 1000):
                got = bus.frames_columns(s, chunk, bus.RAW_FIELDS, ticks)
                want = bus._frames_columns_each(s, chunk, list(bus.RAW_FIELDS), ticks)
                for a, b in zip(got[:2], want[:2]):
                    assert a.dtype == b.dtype and np.array_equal(a, b)
                assert got[2].keys() == want[2].keys()
                for name in want[2]:
                    assert got[2][name].dtype == want[2][name].dtype and np.array_equal(got[2][name], want[2][name])

"""The bit model (§6.2): conformance vectors and properties against a
bit-by-bit Python-integer oracle that shares no code with logb.fields."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logb import ByteOrder, DataType, Field
from logb.fields import extract, extract_uint, get_bits, pack, pack_uint, put_bits, sign_extend


# ---------------------------------------------------------------- oracle
def record_bit(record, k, big):
    """Bit k of a record in the numbering of the given byte order."""
    byte = record[k // 8]
    return (byte >> (7 - k % 8)) & 1 if big else (byte >> (k % 8)) & 1


def ref_get(record, offset, width, big):
    value = 0
    for j in range(width):
        bit = record_bit(record, offset + j, big)
        # little: the field runs upward from its LSB; big: from its MSB.
        value |= bit << ((width - 1 - j) if big else j)
    return value


def ref_mask(stride, offset, width, big):
    """Bytes with exactly the field's bits set."""
    out = bytearray(stride)
    for j in range(width):
        k = offset + j
        out[k // 8] |= (1 << (7 - k % 8)) if big else (1 << (k % 8))
    return bytes(out)


def ref_signed(value, width):
    return value - (1 << width) if value >> (width - 1) else value


def native_dtype(width, signed):
    """The dtype extract() gives a width-bit integer field: the narrowest of 8/16/32/64 bits."""
    bits = next(b for b in (8, 16, 32, 64) if width <= b)
    return np.dtype(f"{'i' if signed else 'u'}{bits // 8}")


# ---------------------------------------------------------------- vectors
DRAFT_TABLE = [
    ("12 34", "little", 0, 16, 0x3412, None),
    ("12 34", "big", 0, 16, 0x1234, None),
    ("12 34", "little", 4, 12, 0x341, None),
    ("12 34", "big", 3, 12, 0x91A, None),
    ("00 20", "little", 13, 1, 1, None),
    ("00 20", "big", 10, 1, 1, None),
    ("78 56 34 12", "little", 0, 32, 0x12345678, None),
    ("12 34 56 78", "big", 0, 32, 0x12345678, None),
    ("FF 0F", "little", 0, 12, 0xFFF, -1),
    ("FF F0", "big", 0, 12, 0xFFF, -1),
    ("A5", "little", 1, 6, 0x12, None),
    ("A5", "big", 1, 6, 0x12, None),
]
G16_TABLE = [
    ("00 12 34", "big", 11, 12, 0x91A, None),
    ("07 F0", "big", 5, 8, 0xFE, -2),
    ("00 34 12", "little", 12, 8, 0x23, None),
]
ALL_ROWS = DRAFT_TABLE + G16_TABLE


def _ids(rows, prefix):
    return [f"{prefix}{i + 1}-{r[0].replace(' ', '')}-{r[1]}-{r[2]}-{r[3]}" for i, r in enumerate(rows)]


class TestConformanceVectors:
    rows = pytest.mark.parametrize("hexbytes,order,offset,width,raw,as_sint", ALL_ROWS,
                                   ids=_ids(DRAFT_TABLE, "draft") + _ids(G16_TABLE, "g16"))

    def test_table_sizes(self):
        assert len(DRAFT_TABLE) == 12 and len(G16_TABLE) == 3

    @rows
    def test_oracle_reproduces_table(self, hexbytes, order, offset, width, raw, as_sint):
        rec = bytes.fromhex(hexbytes)
        assert ref_get(rec, offset, width, order == "big") == raw

    @rows
    def test_get_bits(self, hexbytes, order, offset, width, raw, as_sint):
        rec = bytes.fromhex(hexbytes)
        assert get_bits(rec, offset, width, order == "big") == raw
        if as_sint is not None:
            assert sign_extend(raw, width) == as_sint

    @rows
    def test_numpy_extract_uint(self, hexbytes, order, offset, width, raw, as_sint):
        rec = bytes.fromhex(hexbytes)
        arr = np.frombuffer(rec * 3, np.uint8).reshape(3, len(rec))
        col = extract_uint(arr, offset, width, order == "big")
        assert col.dtype == np.uint64
        assert col.tolist() == [raw] * 3

    @rows
    def test_numpy_extract_typed(self, hexbytes, order, offset, width, raw, as_sint):
        rec = bytes.fromhex(hexbytes)
        arr = np.frombuffer(rec, np.uint8).reshape(1, len(rec))
        bo = ByteOrder.big if order == "big" else ByteOrder.little
        u = extract(arr, Field("u", offset, width, DataType.uint, bo))
        s = extract(arr, Field("s", offset, width, DataType.sint, bo))
        assert u.dtype == native_dtype(width, False) and int(u[0]) == raw
        assert s.dtype == native_dtype(width, True)
        assert int(s[0]) == ref_signed(raw, width)
        wu = extract(arr, Field("u", offset, width, DataType.uint, bo), wide=True)
        ws = extract(arr, Field("s", offset, width, DataType.sint, bo), wide=True)
        assert wu.dtype == np.uint64 and ws.dtype == np.int64 and int(wu[0]) == raw and int(ws[0]) == int(s[0])
        if as_sint is not None:
            assert int(s[0]) == as_sint
        if width == 1:
            b = extract(arr, Field("b", offset, 1, DataType.bool, bo))
            assert b.dtype == bool and bool(b[0]) is bool(raw)

    @rows
    def test_pack_reproduces_field_bits(self, hexbytes, order, offset, width, raw, as_sint):
        rec = bytes.fromhex(hexbytes)
        big = order == "big"
        mask = ref_mask(len(rec), offset, width, big)
        want = bytes(a & m for a, m in zip(rec, mask))
        scalar = bytearray(len(rec))
        put_bits(scalar, offset, width, big, raw)
        assert bytes(scalar) == want
        arr = np.zeros((2, len(rec)), np.uint8)
        pack_uint(arr, offset, width, big, np.array([raw, raw], np.uint64))
        assert arr[0].tobytes() == want and arr[1].tobytes() == want


class TestDBCMotorola:
    """§6.2: bit_offset = 8*(sb//8) + (7 - sb%8) maps a DBC Motorola start bit."""

    @staticmethod
    def sawtooth(data, start_bit, width):
        value, pos = 0, start_bit
        for _ in range(width):
            byte, bit = divmod(pos, 8)
            value = (value << 1) | ((data[byte] >> bit) & 1)
            pos = (byte + 1) * 8 + 7 if bit == 0 else pos - 1
        return value

    def test_sampled_against_vector_sawtooth(self):
        import random

        rng = random.Random(1993)
        payloads = [bytes(rng.randrange(256) for _ in range(8)) for _ in range(12)]
        checked = 0
        for sb in range(64):
            off = 8 * (sb // 8) + (7 - sb % 8)
            for width in range(1, 65):
                if off + width > 64:
                    continue
                for data in payloads[:3]:
                    want = self.sawtooth(data, sb, width)
                    assert get_bits(data, off, width, True) == want
                checked += 1
                arr = np.frombuffer(b"".join(payloads), np.uint8).reshape(-1, 8)
                want = [self.sawtooth(p, sb, width) for p in payloads]
                assert extract_uint(arr, off, width, True).tolist() == want
        assert checked > 2000


# ---------------------------------------------------------------- properties
@st.composite
def layouts(draw):
    stride = draw(st.integers(1, 20))
    width = draw(st.integers(1, min(64, 8 * stride)))
    offset = draw(st.integers(0, 8 * stride - width))
    big = draw(st.booleans())
    n = draw(st.integers(1, 6))
    data = draw(st.binary(min_size=n * stride, max_size=n * stride))
    return stride, offset, width, big, n, data


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(layouts())
def test_extract_uint_equals_get_bits_and_oracle(layout):
    stride, offset, width, big, n, data = layout
    arr = np.frombuffer(data, np.uint8).reshape(n, stride)
    got = extract_uint(arr, offset, width, big).tolist()
    rows = [data[i * stride : (i + 1) * stride] for i in range(n)]
    assert got == [get_bits(r, offset, width, big) for r in rows]
    assert got == [ref_get(r, offset, width, big) for r in rows]


@SETTINGS
@given(layouts())
def test_extract_uint_on_non_contiguous_view(layout):
    stride, offset, width, big, n, data = layout
    wide = np.zeros((n, stride + 5), np.uint8)
    wide[:, 3 : 3 + stride] = np.frombuffer(data, np.uint8).reshape(n, stride)
    view = wide[:, 3 : 3 + stride]
    assert n == 1 or not view.flags.c_contiguous
    rows = [data[i * stride : (i + 1) * stride] for i in range(n)]
    assert extract_uint(view, offset, width, big).tolist() == [ref_get(r, offset, width, big) for r in rows]


@SETTINGS
@given(layouts(), st.data())
def test_pack_uint_round_trips_and_keeps_other_bits(layout, data):
    stride, offset, width, big, n, raw = layout
    values = data.draw(st.lists(st.integers(0, (1 << width) - 1), min_size=n, max_size=n))
    arr = np.frombuffer(raw, np.uint8).reshape(n, stride).copy()
    pack_uint(arr, offset, width, big, np.array(values, np.uint64))
    assert extract_uint(arr, offset, width, big).tolist() == values
    mask = ref_mask(stride, offset, width, big)
    for i in range(n):
        before = raw[i * stride : (i + 1) * stride]
        after = arr[i].tobytes()
        # bits outside the field are untouched
        assert bytes(a & ~m & 0xFF for a, m in zip(after, mask)) == bytes(b & ~m & 0xFF for b, m in zip(before, mask))
        # and the scalar reference writer agrees byte for byte
        scalar = bytearray(before)
        put_bits(scalar, offset, width, big, values[i])
        assert bytes(scalar) == after
        assert ref_get(after, offset, width, big) == values[i]


@SETTINGS
@given(layouts(), st.data())
def test_pack_uint_masks_oversized_values(layout, data):
    stride, offset, width, big, n, raw = layout
    values = data.draw(st.lists(st.integers(0, (1 << 64) - 1), min_size=n, max_size=n))
    arr = np.frombuffer(raw, np.uint8).reshape(n, stride).copy()
    pack_uint(arr, offset, width, big, np.array(values, np.uint64))
    mask = ref_mask(stride, offset, width, big)
    for i in range(n):
        assert ref_get(arr[i].tobytes(), offset, width, big) == values[i] & ((1 << width) - 1)
        before = raw[i * stride : (i + 1) * stride]
        assert all((a ^ b) & ~m & 0xFF == 0 for a, b, m in zip(arr[i].tobytes(), before, mask))


# Typed round trips through fields.pack / fields.extract
FLOAT_DT = {16: (np.float16, np.uint16), 32: (np.float32, np.uint32), 64: (np.float64, np.uint64)}


@st.composite
def typed_columns(draw):
    dt = draw(st.sampled_from(["uint", "sint", "float", "complex", "bool", "bytes", "string"]))
    n = draw(st.integers(1, 5))
    big = draw(st.booleans())
    if dt in ("bytes", "string"):
        nbytes = draw(st.integers(0, 9))
        width = 8 * nbytes
        stride = draw(st.integers(max(nbytes, 1), 20))
        offset = 8 * draw(st.integers(0, stride - nbytes))
    else:
        width = {"uint": None, "sint": None, "bool": 1}.get(dt)
        if dt == "float":
            width = draw(st.sampled_from([16, 32, 64]))
        elif dt == "complex":
            width = draw(st.sampled_from([64, 128]))
        elif width is None:
            width = draw(st.integers(1, 64))
        stride = draw(st.integers((width + 7) // 8, 20))
        offset = draw(st.integers(0, 8 * stride - width))
    if dt == "uint":
        vals = draw(st.lists(st.integers(0, (1 << width) - 1), min_size=n, max_size=n))
    elif dt == "sint":
        vals = draw(st.lists(st.integers(-(1 << (width - 1)), (1 << (width - 1)) - 1), min_size=n, max_size=n))
    elif dt == "float":
        vals = draw(st.lists(st.floats(width=width), min_size=n, max_size=n))
    elif dt == "complex":
        h = width // 2
        vals = draw(st.lists(st.builds(complex, st.floats(width=h), st.floats(width=h)), min_size=n, max_size=n))
    elif dt == "bool":
        vals = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif dt == "bytes":
        vals = draw(st.lists(st.binary(min_size=width // 8, max_size=width // 8), min_size=n, max_size=n))
    else:
        # exact byte length from characters of 1..4 UTF-8 bytes, NULs included
        chars = st.sampled_from(["a", "\x00", "é", "€", "𝄞", "Z"])
        def fit(cs, size=width // 8):
            out = ""
            for c in cs:
                if len((out + c).encode()) <= size:
                    out += c
            return out + "a" * (size - len(out.encode()))
        vals = draw(st.lists(st.lists(chars, max_size=12).map(fit), min_size=n, max_size=n))
    noise = draw(st.binary(min_size=n * stride, max_size=n * stride))
    bo = ByteOrder.big if big else ByteOrder.little
    return Field("f", offset, width, getattr(DataType, dt), bo), stride, vals, noise


@SETTINGS
@given(typed_columns())
def test_fields_pack_extract_round_trip(case):
    field, stride, vals, noise = case
    n = len(vals)
    arr = np.frombuffer(noise, np.uint8).reshape(n, stride).copy()
    pack(arr, field, vals)
    out = extract(arr, field)
    dt, w = field.data_type, field.bit_width
    if dt in (DataType.uint, DataType.sint):
        assert out.dtype == native_dtype(w, dt == DataType.sint) and out.tolist() == vals
    elif dt == DataType.bool:
        assert out.dtype == bool and out.tolist() == vals
    elif dt == DataType.float:
        ft, ut = FLOAT_DT[w]
        assert out.dtype == ft
        assert out.view(ut).tolist() == np.asarray(vals, ft).view(ut).tolist()
        # and the stored bits are the IEEE pattern, in the field's byte order
        for i in range(n):
            assert ref_get(arr[i].tobytes(), field.bit_offset, w, field.byte_order == ByteOrder.big) == \
                int(np.asarray(vals[i], ft).view(ut))
    elif dt == DataType.complex:
        h = w // 2
        ft, ut = FLOAT_DT[h]
        assert out.dtype == (np.complex64 if h == 32 else np.complex128)
        assert out.real.astype(ft).view(ut).tolist() == np.asarray([v.real for v in vals], ft).view(ut).tolist()
        assert out.imag.astype(ft).view(ut).tolist() == np.asarray([v.imag for v in vals], ft).view(ut).tolist()
        # real part is the first half, in the field's own numbering (G16)
        big = field.byte_order == ByteOrder.big
        for i in range(n):
            rec = arr[i].tobytes()
            assert ref_get(rec, field.bit_offset, h, big) == int(np.asarray(vals[i].real, ft).view(ut))
            assert ref_get(rec, field.bit_offset + h, h, big) == int(np.asarray(vals[i].imag, ft).view(ut))
    elif dt == DataType.bytes:
        assert out.dtype == np.uint8 and out.shape == (n, w // 8)
        assert [bytes(r) for r in out] == vals
        # never byte-swapped, whatever the byte order
        for i in range(n):
            assert arr[i, field.bit_offset // 8 : field.bit_offset // 8 + w // 8].tobytes() == vals[i]
    else:
        assert out.dtype == object and list(out) == vals  # trailing NULs kept
    # bits outside the field are untouched
    mask = ref_mask(stride, field.bit_offset, w, field.byte_order == ByteOrder.big) if w else bytes(stride)
    if dt in (DataType.bytes, DataType.string):
        mask = bytes(0xFF if field.bit_offset // 8 <= j < (field.bit_offset + w) // 8 else 0 for j in range(stride))
    for i in range(n):
        before = noise[i * stride : (i + 1) * stride]
        assert all((a ^ b) & ~m & 0xFF == 0 for a, b, m in zip(arr[i].tobytes(), before, mask))


def test_string_field_with_invalid_utf8_is_invalid_data():
    from logb import InvalidDataError

    arr = np.frombuffer(b"\xff\xfe", np.uint8).reshape(1, 2)
    with pytest.raises(InvalidDataError):
        extract(arr, Field("s", 0, 16, DataType.string))


def test_float16_is_ieee_binary16():
    # 1.0 in binary16 is 0x3C00; -2.0 is 0xC000
    arr = np.frombuffer(bytes([0x00, 0x3C, 0xC0, 0x00]), np.uint8).reshape(1, 4)
    le = extract(arr[:, :2], Field("h", 0, 16, DataType.float, ByteOrder.little))
    be = extract(arr[:, 2:], Field("h", 0, 16, DataType.float, ByteOrder.big))
    assert le.dtype == np.float16 and float(le[0]) == 1.0
    assert float(be[0]) == -2.0


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("width", range(1, 65))
def test_every_width_native_and_wide(width, big):
    """Every integer width at 8 bit offsets, unsigned and signed: the native column holds
    the extremes exactly (0, max, min, -1, and a pattern), the wide one the same values."""
    bo = ByteOrder.big if big else ByteOrder.little
    top = (1 << width) - 1
    raws = [0, top, 1 << (width - 1), top >> 1, 0x5A5A5A5A5A5A5A5A & top, 1 & top]
    for offset in range(8):
        size = (offset + width + 7) // 8 + 1
        rows = [bytearray(size) for _ in raws]
        for row, v in zip(rows, raws):
            put_bits(row, offset, width, big, v)
        arr = np.frombuffer(b"".join(rows), np.uint8).reshape(len(raws), size)
        for dt, signed in ((DataType.uint, False), (DataType.sint, True)):
            f = Field("x", offset, width, dt, bo)
            want = [ref_signed(v, width) if signed else v for v in raws]
            col = extract(arr, f)
            assert col.dtype == native_dtype(width, signed) and col.tolist() == want
            wide = extract(arr, f, wide=True)
            assert wide.dtype == (np.int64 if signed else np.uint64) and wide.tolist() == want
            # packing a native column back gives the same records
            again = np.zeros_like(arr)
            pack(again, f, col)
            assert np.array_equal(again, arr)

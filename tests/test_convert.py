"""Conversions (§7, G16) against hand-computed expectations."""

import io
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import logb
from logb import AxisKind, AxisMode, ByteOrder, Conversion, DataType, Field, Schema
from logb.convert import physical


def f64(*xs):
    return np.array(xs, np.float64)


class TestIdentity:
    @pytest.mark.parametrize("raw", [
        np.array([True, False, True]),
        np.array([0, 2**64 - 1, 2**53 + 1], np.uint64),
        np.array([-(2**63), 5], np.int64),
        np.array([1.5, -0.0], np.float16),
        np.array([1 + 2j], np.complex64),
        np.array(["a", "b\x00"], object),
        np.zeros((2, 3), np.uint8),
    ], ids=["bool", "uint64", "int64", "float16", "complex64", "string", "bytes"])
    def test_type_preserving(self, raw):
        out = physical(Conversion(), raw)
        assert out.dtype == raw.dtype
        assert np.array_equal(out, raw) if raw.dtype != object else list(out) == list(raw)

    def test_bool_stays_bool_end_to_end(self):
        s = Schema(bytes(16), "b", 9, AxisKind.index, AxisMode.implicit, axis_step=1.0, fields=(
            Field("flag", 0, 1, DataType.bool), Field("n", 1, 8, DataType.uint),
            Field("lin", 1, 8, DataType.uint, conversion=Conversion.linear(0, 1))))
        buf = io.BytesIO()
        with logb.Writer(buf) as w:
            w.add_stream(s).write_batch({"flag": [True, False], "n": [7, 255], "lin": [7, 255]})
        cols = logb.LogbFile(buf.getvalue()).stream("b").columns()
        assert cols.phys("flag").dtype == bool and cols.phys("flag").tolist() == [True, False]
        assert cols.phys("n").dtype == np.uint8 and cols.phys("n").tolist() == [7, 255]  # the field's native width
        assert cols.phys("lin").dtype == np.float64 and cols.phys("lin").tolist() == [7.0, 255.0]


@pytest.mark.parametrize("dtype", ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8"])
def test_conversions_of_narrow_columns_never_wrap(dtype):
    """Native-width raw columns (fields.int_dtype) convert in float64: the extremes of
    each width scale exactly as Python ints would, never wrapped at the width."""
    info = np.iinfo(dtype)
    raw = np.array([info.min, -1 if info.min else 0, 0, 1, info.max], dtype)
    x = [float(v) for v in raw.tolist()]
    lin = physical(Conversion.linear(-3.0, 1000.0), raw)
    assert lin.dtype == np.float64 and lin.tolist() == [-3.0 + 1000.0 * v for v in x]
    rat = physical(Conversion.rational(0, 2, 1, 0, 0, 1), raw)
    assert rat.tolist() == [2 * v + 1 for v in x]
    tab = physical(Conversion.table([(float(info.max), 9.0)]), raw)
    assert tab.mask.tolist() == [True] * 4 + [False] and tab[-1] == 9.0


def test_linear():
    out = physical(Conversion.linear(1.5, 2.0), np.array([0, 1, 10], np.uint64))
    assert out.dtype == np.float64 and out.tolist() == [1.5, 3.5, 21.5]
    out = physical(Conversion.linear(-273.15, 0.5), np.array([-4, 600], np.int64))
    assert out.tolist() == [-273.15 + 0.5 * -4, -273.15 + 0.5 * 600]


def test_linear_evaluated_as_written_in_double():
    # a + b*x: 1e16 + 1*1 is 1e16 in IEEE double (the 1 is lost), never 1e16+1
    out = physical(Conversion.linear(1e16, 1.0), np.array([1], np.int64))
    assert out[0] == 1e16
    out = physical(Conversion.linear(0.1, 3.0), np.array([0.1], np.float64))
    assert out[0] == 0.1 + 3.0 * 0.1


def test_linear_on_bool_input():
    out = physical(Conversion.linear(10.0, 5.0), np.array([False, True]))
    assert out.dtype == np.float64 and out.tolist() == [10.0, 15.0]


def test_rational():
    c = Conversion.rational(1, 2, 3, 4, 5, 6)
    out = physical(c, np.array([2, 0, -1], np.int64))
    assert out.tolist() == [(4 + 4 + 3) / (16 + 10 + 6), 3 / 6, (1 - 2 + 3) / (4 - 5 + 6)]


def test_rational_zero_denominator_is_ieee_not_error():
    c = Conversion.rational(0, 1, 0, 0, 0, 0)  # x / 0
    with np.errstate(all="raise"):  # the conversion must not leak FP errors
        out = physical(c, np.array([2, -3, 0], np.int64))
    assert out[0] == math.inf
    assert out[1] == -math.inf
    assert math.isnan(out[2])


class TestTable:
    def test_exact_match_and_miss_masked(self):
        c = Conversion.table([(1, 10), (2, 20), (-5, 0.5)])
        out = physical(c, np.array([1, 2, 3, -5, 0], np.int64))
        assert isinstance(out, np.ma.MaskedArray)
        assert out.mask.tolist() == [False, False, True, False, True]
        assert out.compressed().tolist() == [10.0, 20.0, 0.5]
        assert all(math.isnan(v) for v in out.data[out.mask])

    def test_fractional_input_misses(self):
        out = physical(Conversion.table([(1, 10), (2, 20)]), f64(1.5, 2.0))
        assert out.mask.tolist() == [True, False] and out[1] == 20.0

    def test_duplicate_keys_first_wins(self):
        c = Conversion.table([(1, 10), (2, 20), (1, 99), (2, 98)])
        out = physical(c, np.array([1, 2], np.uint64))
        assert out.tolist() == [10.0, 20.0]

    def test_nan_input_and_empty_table(self):
        out = physical(Conversion.table([(1, 10)]), f64(math.nan, 1))
        assert out.mask.tolist() == [True, False]
        out = physical(Conversion.table([]), f64(1, 2))
        assert out.mask.tolist() == [True, True]

    def test_bool_keys(self):
        out = physical(Conversion.table([(0, -1), (1, 1)]), np.array([True, False]))
        assert out.tolist() == [1.0, -1.0]


class TestTableInterp:
    c = Conversion.table([(0, 0), (10, 100), (20, 50)], interpolate=True)

    def test_inside(self):
        out = physical(self.c, f64(0, 5, 10, 12.5, 20))
        assert out.tolist() == [0.0, 50.0, 100.0, 100 + 0.25 * (50 - 100), 50.0]

    def test_clamped_outside(self):
        out = physical(self.c, np.array([-1000, 21, 2**40], np.int64))
        assert out.tolist() == [0.0, 50.0, 50.0]

    def test_nan_in_nan_out(self):
        out = physical(self.c, f64(math.nan, 5))
        assert math.isnan(out[0]) and out[1] == 50.0

    def test_single_key(self):
        c = Conversion.table([(3, 7)], interpolate=True)
        out = physical(c, f64(-1, 3, 9, math.nan))
        assert out[:3].tolist() == [7.0, 7.0, 7.0] and math.isnan(out[3])


def spec_interp(entries, x):
    """SPEC §7.3 table_interp, evaluated in Python floats (IEEE binary64, as written)."""
    if math.isnan(x):
        return math.nan
    keys = [k for k, _ in entries]
    vals = [v for _, v in entries]
    for k, v in entries:
        if x == k:
            return v
    if x < keys[0]:
        return vals[0]
    if x > keys[-1]:
        return vals[-1]
    j = max(i for i, k in enumerate(keys) if k < x)
    return vals[j] + ((x - keys[j]) * (vals[j + 1] - vals[j])) / (keys[j + 1] - keys[j])


class TestTableInterpFormula:
    def test_rounding_follows_the_spec_formula(self):
        # v_j + ((x - k_j)(v_j+1 - v_j)) / (k_j+1 - k_j) = 5/7, not (1/7)*5
        out = physical(Conversion.table([(0, 0), (7, 1)], interpolate=True), f64(5))
        assert out[0] == 5 / 7 == 0.7142857142857143

    def test_key_hit_with_infinite_neighbour(self):
        c = Conversion.table([(0, 1), (1, math.inf), (2, 3)], interpolate=True)
        out = physical(c, f64(0, 1, 2))
        assert out.tolist() == [1.0, math.inf, 3.0]

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=6, unique=True),
           st.lists(st.floats(-1e6, 1e6), min_size=6, max_size=6),
           st.lists(st.one_of(st.floats(-2e6, 2e6), st.just(math.nan)), min_size=1, max_size=8),
           st.data())
    def test_matches_spec_formula(self, keys, vals, xs, data):
        keys = sorted(keys)
        entries = list(zip(keys, vals))
        xs = xs + [data.draw(st.sampled_from(keys))]
        out = physical(Conversion.table(entries, interpolate=True), f64(*xs))
        want = [spec_interp(entries, x) for x in xs]
        for a, b in zip(out.tolist(), want):
            assert a == b or (math.isnan(a) and math.isnan(b)), (a, b)


class TestText:
    def test_value_to_text(self):
        c = Conversion.value_to_text([(0, "off"), (1, "on"), (7, "fault")], default="?")
        out = physical(c, np.array([1, 0, 7, 3], np.uint64))
        assert out.dtype == object and out.tolist() == ["on", "off", "fault", "?"]

    def test_value_to_text_first_wins_and_nan(self):
        c = Conversion.value_to_text([(2, "first"), (2, "second")], default="d")
        assert physical(c, f64(2, math.nan)).tolist() == ["first", "d"]

    def test_value_to_text_empty(self):
        c = Conversion.value_to_text([], default="none")
        assert physical(c, np.array([1, 2], np.int64)).tolist() == ["none", "none"]

    def test_range_to_text_first_match_inclusive(self):
        c = Conversion.range_to_text([(0, 10, "low"), (5, 15, "mid"), (-math.inf, -1, "neg")], default="out")
        out = physical(c, f64(0, 7, 10, 10.5, 15, 16, -1, -0.5, math.nan))
        assert out.tolist() == ["low", "low", "low", "mid", "mid", "out", "neg", "out", "out"]

    def test_range_to_text_stored_order_not_sorted(self):
        c = Conversion.range_to_text([(5, 15, "wide-later-key"), (0, 10, "narrow")], default="-")
        assert physical(c, f64(7, 2)).tolist() == ["wide-later-key", "narrow"]


class TestComplex:
    def test_linear_component_wise(self):
        a, b = 1.0, 3.0
        z = np.array([2 - 1j, -0.5 + 4j], np.complex128)
        out = physical(Conversion.linear(a, b), z)
        assert out.tolist() == [complex(a + b * 2, a + b * -1), complex(a + b * -0.5, a + b * 4)]

    def test_rational_component_wise(self):
        c = Conversion.rational(1, 0, 1, 0, 1, 0)  # (x² + 1) / x
        out = physical(c, np.array([2 + 4j], np.complex64))
        assert out.tolist() == [complex(5 / 2, 17 / 4)]

    def test_non_finite_part_does_not_leak_into_the_other(self):
        # f(re) + i·f(im): an infinite or NaN imaginary result leaves the real one alone
        c = Conversion.rational(0, 0, 1, 0, 1, 0)  # 1 / x
        out = physical(c, np.array([2 + 0j, 0 + 4j], np.complex128))
        assert out[0].real == 0.5 and out[0].imag == math.inf
        assert out[1].real == math.inf and out[1].imag == 0.25
        c = Conversion.rational(0, 1, 0, 0, 1, 0)  # x / x
        out = physical(c, np.array([2 + 0j], np.complex128))
        assert out[0].real == 1.0 and math.isnan(out[0].imag)
        out = physical(Conversion.linear(1, 2), np.array([complex(math.nan, 1)]))
        assert math.isnan(out[0].real) and out[0].imag == 3.0


def test_uint64_above_2_53_rounds_to_nearest_double():
    xs = [2**53, 2**53 + 1, 2**53 + 2, 2**53 + 3, 2**63 + 1025, 2**64 - 1, 2**64 - 2049, 2**60 + 2**7 + 1]
    out = physical(Conversion.linear(0.0, 1.0), np.array(xs, np.uint64))
    # Python's int -> float is correctly rounded, ties to even: the oracle.
    assert out.tolist() == [float(x) for x in xs]
    assert out[1] == 2.0**53 and out[3] == 2.0**53 + 4


def test_int64_extremes_round_to_nearest_double():
    xs = [-(2**63), -(2**53) - 1, 2**63 - 1, 2**62 + 513]
    out = physical(Conversion.linear(0.0, 1.0), np.array(xs, np.int64))
    assert out.tolist() == [float(x) for x in xs]


def test_phys_end_to_end_masked_table():
    s = Schema(bytes(range(16)), "t", 8, AxisKind.index, AxisMode.implicit, axis_step=1.0, fields=(
        Field("code", 0, 8, DataType.uint, ByteOrder.little,
              conversion=Conversion.table([(1, 0.5), (2, 1.5)])),))
    buf = io.BytesIO()
    with logb.Writer(buf) as w:
        w.add_stream(s).write_batch({"code": [1, 3, 2]})
    cols = logb.LogbFile(buf.getvalue()).stream("t").columns()
    p = cols.phys("code")
    assert p.mask.tolist() == [False, True, False]
    assert p.compressed().tolist() == [0.5, 1.5]

"""Time bases and anchors (§5.1, §5.2, G6, G7, G16): exact integer arithmetic
checked against Python Fractions."""

import io
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import logb
from logb import AxisKind, AxisMode, DataType, Field, Schema
from logb.timebase import Anchor, Clock, div_round_half_even, ticks_to_ns

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
SETTINGS = settings(max_examples=300, deadline=None)


def rhe(x):
    """Round a Fraction half to even (Fraction.__round__ does exactly that)."""
    return round(Fraction(x))


def test_oracle_rounds_half_to_even():
    assert [rhe(Fraction(n, 2)) for n in (-5, -3, -1, 1, 3, 5)] == [-2, -2, 0, 0, 2, 2]


# ------------------------------------------------------------ ticks → ns
@pytest.mark.parametrize("exp", range(-9, 4))
def test_ticks_to_ns_exact_at_or_above_ns(exp):
    for ticks in (0, 1, -1, 7, -123456789, 2**40 + 3):
        assert ticks_to_ns(ticks, exp) == ticks * 10 ** (exp + 9)
        assert Fraction(ticks_to_ns(ticks, exp), 10**9) == Fraction(ticks) * Fraction(10) ** exp


@pytest.mark.parametrize("ticks,ns", [
    (0, 0), (499, 0), (500, 0), (501, 1), (1499, 1), (1500, 2), (2500, 2), (3500, 4), (1501, 2),
    (-500, 0), (-501, -1), (-1500, -2), (-2500, -2), (-3500, -4), (1000, 1), (-1000, -1),
    (I64_MAX, 9223372036854776), (I64_MIN, -9223372036854776),
])
def test_ticks_to_ns_half_even_for_picoseconds(ticks, ns):
    assert ticks_to_ns(ticks, -12) == ns


@SETTINGS
@given(st.integers(I64_MIN, I64_MAX), st.integers(-18, -10))
def test_ticks_to_ns_sub_ns_matches_fraction(ticks, exp):
    assert ticks_to_ns(ticks, exp) == rhe(Fraction(ticks, 10 ** (-9 - exp)))


@SETTINGS
@given(st.integers(-(10**30), 10**30), st.integers(-(10**20), 10**20).filter(bool))
def test_div_round_half_even(num, den):
    assert div_round_half_even(num, den) == rhe(Fraction(num, den))


# ------------------------------------------------------------ Clock
def A(axis_ns, wall_ns, unc=None):
    return Anchor(axis_ns, wall_ns, "gps", unc)


def test_zero_anchors_undated():
    w = Clock("monotonic", []).wall(12345, -9)
    assert (w.ns, w.basis) == (None, "undated")


@pytest.mark.parametrize("base", ["relative", None, "tai", ""])
def test_only_monotonic_is_anchored(base):
    w = Clock(base, [A(0, 10**18, 5), A(10**9, 10**18 + 10**9, 5)]).wall(10, -9)
    assert (w.ns, w.basis) == (None, "undated")


def test_unix_is_wall_time_already():
    c = Clock("unix", [A(0, 5)])  # anchors never apply to a unix axis
    w = c.wall(1_700_000_000_123_456, -6)
    assert w.basis == "unix" and w.ns == 1_700_000_000_123_456_000 and not w.extrapolated
    assert c.wall(1_700_000_000_123_456_789_123, -12).ns == 1_700_000_000_123_456_789
    assert c.wall(2**62, -6).basis == "undated"  # beyond i64 nanoseconds


def test_one_anchor_is_an_offset_with_slope_one():
    c = Clock("monotonic", [A(5_000, 1_700_000_000_000_000_000, 40)])
    for a in (5_000, 0, 10**12, -77):
        w = c.wall(a, -9)
        assert w.basis == "anchored"
        assert w.ns == 1_700_000_000_000_000_000 + (a - 5_000)
        assert w.uncertainty_ns == 40
        assert w.extrapolated == (a != 5_000)
    assert c.wall(3, -6).ns == 1_700_000_000_000_000_000 + 3_000 - 5_000


def test_two_anchors_interpolate_with_drift():
    # the logger's clock runs 50 ppm fast: 1 s of axis is 0.99995 s of wall
    a0, w0, a1, w1 = 1_000_000_000, 1_700_000_000_000_000_000, 101_000_000_000, 1_700_000_099_995_000_000
    c = Clock("monotonic", [A(a1, w1, 20), A(a0, w0, 30)])  # order does not matter
    for a in (a0, a1, a0 + 1, 51_000_000_000, a1 - 1, 7, 10**12):
        w = c.wall(a, -9)
        assert w.ns == w0 + rhe(Fraction((a - a0) * (w1 - w0), a1 - a0)), a
        assert w.extrapolated == (not a0 <= a <= a1)
    assert c.wall(51_000_000_000, -9).ns == w0 + 49_997_500_000
    assert c.wall(51_000_000_000, -9).uncertainty_ns == 30


def test_interpolation_ties_round_to_even():
    c = Clock("monotonic", [A(0, 0), A(2, 1)])  # slope 1/2
    assert [c.wall(a, -9).ns for a in (1, 3, 5, 7, -1, -3)] == [0, 2, 2, 4, 0, -2]


@SETTINGS
@given(st.lists(st.tuples(st.integers(-(10**15), 10**15), st.integers(-(10**18), 10**18),
                          st.one_of(st.none(), st.integers(0, 10**6))),
                min_size=2, max_size=5, unique_by=lambda t: t[0]),
       st.integers(-(10**15), 10**15), st.integers(-12, -6))
def test_piecewise_linear_against_fractions(anchors, ticks, exp):
    anchors = [A(*t) for t in anchors]
    c = Clock("monotonic", anchors)
    w = c.wall(ticks, exp)
    a = rhe(Fraction(ticks) * Fraction(10) ** (exp + 9))
    srt = sorted(anchors, key=lambda x: x.axis_ns)
    on = [x for x in srt if x.axis_ns == a]
    if on:
        assert w.ns == on[0].wall_ns and w.uncertainty_ns == on[0].uncertainty_ns and not w.extrapolated
        return
    if a < srt[0].axis_ns:
        lo, hi, extra = srt[0], srt[1], True
    elif a > srt[-1].axis_ns:
        lo, hi, extra = srt[-2], srt[-1], True
    else:
        lo = max((x for x in srt if x.axis_ns < a), key=lambda x: x.axis_ns)
        hi = min((x for x in srt if x.axis_ns > a), key=lambda x: x.axis_ns)
        extra = False
    want = lo.wall_ns + rhe(Fraction((a - lo.axis_ns) * (hi.wall_ns - lo.wall_ns), hi.axis_ns - lo.axis_ns))
    if not I64_MIN <= want <= I64_MAX:
        assert w.basis == "undated" and w.ns is None
        return
    assert w.basis == "anchored" and w.ns == want and w.extrapolated == extra
    u0, u1 = lo.uncertainty_ns, hi.uncertainty_ns
    assert w.uncertainty_ns == (None if u0 is None or u1 is None else max(u0, u1))


def test_uncertainty_rules():
    c = Clock("monotonic", [A(0, 0, 10), A(100, 100, 3), A(200, 200, 50), A(300, 300, None), A(400, 400, 7)])
    assert c.wall(50, -9).uncertainty_ns == 10  # max of the bracketing pair
    assert c.wall(150, -9).uncertainty_ns == 50
    assert c.wall(100, -9).uncertainty_ns == 3  # exactly on an interior anchor: its own
    assert c.wall(250, -9).uncertainty_ns is None  # unknown if either is unknown
    assert c.wall(350, -9).uncertainty_ns is None
    assert c.wall(400, -9).uncertainty_ns == 7  # on the last anchor, own known though its neighbour's is not
    assert c.wall(300, -9).uncertainty_ns is None
    w = c.wall(-5, -9)
    assert w.extrapolated and w.uncertainty_ns == 10  # the nearest pair's
    w = c.wall(999, -9)
    assert w.extrapolated and w.uncertainty_ns is None


def test_wall_outside_i64_is_undated():
    c = Clock("monotonic", [A(0, I64_MAX - 10)])
    assert c.wall(10, -9).ns == I64_MAX
    assert c.wall(11, -9).basis == "undated"


# ------------------------------------------------------------ end to end
def _time_schema(exp=-6, step=1000, uuid=b"\x11" * 16, name="t"):
    return Schema(uuid, name, 8, AxisKind.time, AxisMode.implicit, axis_exp=exp, axis_step=step,
                  fields=(Field("v", 0, 8, DataType.uint),))


def test_monotonic_file_with_two_anchors():
    buf = io.BytesIO()
    w = logb.Writer(buf, time_base="monotonic", clock_source="time.ticks_us (unwrapped to 64 bit)",
                    segment_bytes=400)
    sw = w.add_stream(_time_schema())  # ticks are microseconds
    for k in range(6):
        sw.write_batch({"v": [k, k, k]}, axis_base=3000 * k + 5)  # 1 ms apart, offset 5 µs
    a0, w0, a1, w1 = 1_000_000, 1_750_000_000_000_000_000, 13_000_000, 1_750_000_000_012_000_600
    w.anchor(a0, w0, source="gps", uncertainty_ns=50)
    sw.write_batch({"v": [9]}, axis_base=20_000)
    w.anchor(a1, w1, source="ntp", uncertainty_ns=2_000_000)
    w.close()
    f = logb.LogbFile(buf.getvalue())
    assert len(f.segments) >= 2 and len(f.sessions) == 1
    sess = f.sessions[0]
    assert sess.time_base == "monotonic" and sess.basis == "anchored"
    assert [(x.axis_ns, x.wall_ns, x.source, x.uncertainty_ns) for x in sorted(sess.anchors, key=lambda x: x.axis_ns)] \
        == [(a0, w0, "gps", 50), (a1, w1, "ntp", 2_000_000)]
    cols = f.stream("t").columns()
    assert cols.axis.tolist() == [3000 * k + 5 + 1000 * i for k in range(6) for i in range(3)] + [20_000]
    for i in range(len(cols)):
        a = int(cols.axis[i]) * 1000
        wt = cols.wall(i)
        assert wt.basis == "anchored"
        assert wt.ns == w0 + rhe(Fraction((a - a0) * (w1 - w0), a1 - a0))
        assert wt.uncertainty_ns == 2_000_000
        assert wt.extrapolated == (not a0 <= a <= a1)
    assert sum(cols.wall(i).extrapolated for i in range(len(cols))) not in (0, len(cols))


def test_picosecond_ticks_round_then_anchor():
    buf = io.BytesIO()
    w = logb.Writer(buf, time_base="monotonic")
    sw = w.add_stream(_time_schema(exp=-12, step=250))  # 250 ps per record
    sw.write_batch({"v": list(range(8))}, axis_base=0)
    w.anchor(0, 10**18)
    w.anchor(10**9, 10**18 + 10**9)
    w.close()
    cols = logb.LogbFile(buf.getvalue()).stream("t").columns()
    ns = [cols.wall(i).ns - 10**18 for i in range(8)]
    # 0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75 ns, half to even
    assert ns == [0, 0, 0, 1, 1, 1, 2, 2]
    assert cols.wall(0).uncertainty_ns is None  # unknown, which is not zero


def test_unix_file_and_relative_and_absent():
    for base, basis in (("unix", "unix"), ("relative", "undated"), (None, "undated")):
        buf = io.BytesIO()
        w = logb.Writer(buf, time_base=base)
        w.add_stream(_time_schema(exp=-9, step=1)).write_batch({"v": [1, 2]}, axis_base=1_700_000_000_000_000_000)
        w.anchor(0, 5)  # never applies to these
        w.close()
        f = logb.LogbFile(buf.getvalue())
        assert f.sessions[0].time_base == base
        cols = f.stream("t").columns()
        wt = cols.wall(1)
        assert wt.basis == basis
        assert wt.ns == (1_700_000_000_000_000_001 if base == "unix" else None)


def test_anchors_apply_only_to_their_own_session():
    def part(anchor, start):
        buf = io.BytesIO()
        w = logb.Writer(buf, time_base="monotonic")
        w.add_stream(_time_schema(exp=-9, step=1)).write_batch({"v": [start]}, axis_base=100)
        if anchor:
            w.anchor(0, 10**18)
        w.close()
        return buf.getvalue()
    a, b = part(True, 1), part(False, 2)
    f = logb.LogbFile(a + b[16:])
    cols = f.stream("t").columns()
    assert cols.session.tolist() == [0, 1]
    assert cols.wall(0).ns == 10**18 + 100 and cols.wall(0).basis == "anchored"
    assert cols.wall(1).basis == "undated"


def test_duplicate_anchor_axis_first_stands():
    buf = io.BytesIO()
    w = logb.Writer(buf, time_base="monotonic")
    w.add_stream(_time_schema(exp=-9, step=1)).write_batch({"v": [1]}, axis_base=10)
    w.anchor(0, 1000)
    w.anchor(0, 2000)
    w.close()
    f = logb.LogbFile(buf.getvalue())
    assert [x.wall_ns for x in f.sessions[0].anchors] == [1000]
    assert any(n.kind == "anchor" for n in f.report.notes)
    assert f.stream("t").columns().wall(0).ns == 1010


def test_malformed_anchor_ignored_and_reported():
    buf = io.BytesIO()
    w = logb.Writer(buf, time_base="monotonic")
    w.add_stream(_time_schema(exp=-9, step=1)).write_batch({"v": [1]}, axis_base=10)
    w.meta({"logb.anchor.axis_ns": "0x10", "logb.anchor.wall_ns": "5"})
    w.meta({"logb.anchor.axis_ns": "1", "logb.anchor.wall_ns": str(2**63)})
    w.meta({"logb.anchor.axis_ns": "2", "logb.anchor.wall_ns": "7", "logb.anchor.uncertainty_ns": "-3"})
    w.close()
    f = logb.LogbFile(buf.getvalue())
    assert [(x.axis_ns, x.wall_ns, x.uncertainty_ns) for x in f.sessions[0].anchors] == [(2, 7, None)]
    assert sum(n.kind == "malformed-anchor" for n in f.report.notes) == 3


def test_clock_keeps_the_first_of_equal_anchors():
    from logb.timebase import Anchor, Clock

    clock = Clock("monotonic", [Anchor(0, 100), Anchor(0, 999), Anchor(10, 110)])
    assert clock.wall(20, -9).ns == 120 and clock.wall(-5, -9).ns == 95

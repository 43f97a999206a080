"""The CAN decode kernels (cbridge/decode.c and their numpy twins), under each
backend (tests/conftest.py): grouping rows by message with their columns
(Kernels.group_rows), a linear conversion in one pass (Kernels.linear), and the
raw bus + DBC routing built on them against route_rows + per-stream gathers."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logb import _backend
from logb.can import decode as D
from logb.can.dbc import compile_dbc
from logb.can.rows import gather

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.lists(st.integers(0, 9), max_size=300), st.integers(0, 8), st.sampled_from([1, 2, 3, 4, 8, 11]))
def test_group_rows_is_a_stable_sort_moving_every_column(groups, ngroups, width):
    k = _backend.active
    group = np.array(groups, np.uint32)
    n = len(group)
    rng = np.random.default_rng(n)
    wide = rng.integers(0, 256, (n, width), np.uint8)
    times = rng.integers(-2**62, 2**62, n)
    small = rng.integers(0, 2**15, n).astype(np.int16)
    starts, rows, (w, t, s) = k.group_rows(group, ngroups, [wide, times, small])
    want = [i for g in range(ngroups) for i in range(n) if groups[i] == g]
    assert rows.tolist() == want
    assert starts.tolist() == [sum(1 for x in groups if x < g) for g in range(ngroups + 1)]
    assert np.array_equal(w, wide[want]) and np.array_equal(t, times[want]) and np.array_equal(s, small[want])


def test_group_rows_rejects_bad_arguments():
    k = _backend.active
    with pytest.raises(TypeError):
        k.group_rows(np.zeros(3, np.int32), 2)
    with pytest.raises(ValueError):
        k.group_rows(np.zeros(3, np.uint32), 2, [np.zeros(2)])
    with pytest.raises(ValueError):
        k.group_rows(np.zeros(3, np.uint32), 2, [np.zeros((3, 4))[:, ::2]])


INTS = [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64]


@pytest.mark.parametrize("dtype", INTS)
def test_linear_is_two_roundings_of_the_nearest_double(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    raw = np.concatenate([np.array([info.min, info.max, 0, 1, info.max - 1], dtype),
                          rng.integers(info.min, info.max, 500, dtype, endpoint=True)])
    for a, b in ((0.0, 1.0), (-40.0, 0.1), (1e-300, 1e300), (3.5, -0.0625), (0.1, 1 / 3)):
        got = _backend.active.linear(raw, a, b)
        want = [a + b * float(int(x)) for x in raw]  # Python floats: the same IEEE operations
        assert got.dtype == np.float64 and got.tolist() == want


def test_linear_rejects_what_it_cannot_take():
    k = _backend.active
    for bad in (np.zeros(3), np.zeros((2, 2), np.int32), np.zeros(6, np.int32)[::2], np.zeros(3, ">i4")):
        with pytest.raises(TypeError):
            k.linear(bad, 0.0, 1.0)


DBC = """VERSION ""
BO_ 100 Plain: 8 ECU
 SG_ A : 0|8@1+ (1,0) [0|0] "" ECU
BO_ 2566869221 Ext: 8 ECU
 SG_ B : 8|16@1- (0.5,1) [0|0] "" ECU
BO_ 300 Muxed: 8 ECU
 SG_ S M : 0|4@1+ (1,0) [0|0] "" ECU
 SG_ X m0 : 8|8@1+ (1,0) [0|0] "" ECU
 SG_ Y m1 : 8|8@1+ (1,0) [0|0] "" ECU
"""


def test_route_grouped_equals_route_rows_and_gathers():
    """Standard, extended, multiplexed and non-data frames, and ids no stream takes."""
    compiled = compile_dbc(DBC)
    rng = np.random.default_rng(7)
    n = 5000
    ids = rng.choice(np.array([100, 0x18FF50E5, 300, 555, 0x1ABCDE], np.uint32), n)
    flags = np.where(ids >= 0x800, 1, 0).astype(np.uint8)  # FLAG_EXTENDED
    flags[rng.random(n) < 0.05] |= 2  # some remote frames: not data
    data = rng.integers(0, 256, (n, 8), np.uint8)
    data[:, 0] &= 0x01  # mux values 0 and 1 (and so both branches)
    axis = np.cumsum(rng.integers(1, 100, n))
    lengths = rng.integers(0, 9, n).astype(np.int16)
    keys = D.frame_keys(ids, flags)
    usable = D.data_frames(flags)
    got = D._route_grouped(compiled.entries, keys, usable, data, axis, lengths)
    want = D.route_rows(compiled.entries, keys, data, usable)
    assert sorted(got) == sorted(want) and len(want) >= 4
    for i, rows in want.items():
        g_rows, g_data, g_axis, g_len = got[i]
        assert np.array_equal(g_rows, rows)
        assert np.array_equal(g_data, gather(data, rows)) and np.array_equal(g_axis, axis[rows])
        assert np.array_equal(g_len, lengths[rows])
    assert D._route_grouped(compiled.entries, keys, usable, data, axis, None)[i][3] is None


@SETTINGS
@given(st.lists(st.sampled_from([0, 1, 7, 0x800, 0x9FFFFFFF, 0xFFFFFFFF, 12345]), max_size=200), st.integers(1, 8))
def test_key_groups_numbers_keys_by_first_appearance(keys, max_distinct):
    got = _backend.active.key_groups(np.array(keys, np.uint32), max_distinct)
    distinct = list(dict.fromkeys(keys))
    if len(distinct) > max_distinct:
        assert got is None
        return
    assert got[0].tolist() == distinct and got[1].tolist() == [distinct.index(x) for x in keys]


def test_key_groups_with_many_keys_and_collisions():
    k = _backend.active
    keys = np.random.default_rng(5).integers(0, 2**32, 20000, dtype=np.uint32)
    keys = np.concatenate([keys, keys[::-3]])
    distinct, group = k.key_groups(keys, 1 << 15)
    assert len(distinct) == len(np.unique(keys)) and np.array_equal(distinct[group], keys)
    assert k.key_groups(keys, 1000) is None


def test_route_grouped_with_more_ids_than_the_kernel_table():
    """Past KEY_GROUPS_MAX distinct ids the routing sorts them instead: the same result."""
    compiled = compile_dbc(DBC)
    rng = np.random.default_rng(9)
    n = 20000
    ids = np.concatenate([rng.integers(0, 2**29, n - 100, dtype=np.uint32), np.full(100, 100, np.uint32)])
    flags = np.where(ids >= 0x800, 1, 0).astype(np.uint8)
    data = rng.integers(0, 256, (n, 8), np.uint8)
    axis = np.arange(n)
    keys = D.frame_keys(ids, flags)
    assert _backend.active.key_groups(keys) is None
    got = D._route_grouped(compiled.entries, keys, None, data, axis, None)
    want = D.route_rows(compiled.entries, keys, data)
    assert sorted(got) == sorted(want)
    for i, rows in want.items():
        assert np.array_equal(got[i][0], rows) and np.array_equal(got[i][1], data[rows])

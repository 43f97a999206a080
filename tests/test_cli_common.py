"""The shared CLI helpers: --window, --time, --id, and traces opened directly."""

import argparse
import os

import numpy as np
import pytest

from logb.cli.common import (IdFilter, Timeline, add_id_filter, add_time_arguments, open_input, parse_id_filter,
                             parse_window)
from logb.errors import FormatMismatchError, NotFoundError, NotLogbError, OutsideRecordingError, UsageError

TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "traces")
CANDUMP = os.path.join(TRACES, "durango-aconoff-candump.log")
needs_traces = pytest.mark.skipif(not os.path.isdir(TRACES), reason="shared trace data absent")

T0 = 1_742_339_205_000_000_000  # 2025-03-18T23:06:45Z


def test_window_forms_agree():
    a, b = parse_window(["10", "20"]), parse_window(["10:20"])
    assert (a.lo, a.hi) == (b.lo, b.hi) == (("s", 10.0), ("s", 20.0))
    iso = parse_window(["2025-03-18T23:06:50Z/2025-03-18T23:06:51.5+00:00"])
    assert iso.lo == ("utc", T0 + 5 * 10**9) and iso.hi == ("utc", T0 + 6_500_000_000)
    assert parse_window(["2025-03-18T23:06:50", "3"]).lo == ("utc", T0 + 5 * 10**9)  # no offset: UTC
    assert parse_window(["5:"]).hi is None and parse_window([":5"]).lo is None


@pytest.mark.parametrize("values", [["20", "10"], ["1:2:3"], ["x", "1"], ["nan:1"], ["1", "2", "3"]])
def test_bad_windows_are_usage_errors(values):
    with pytest.raises(UsageError):
        parse_window(values)


def test_window_option_reports_through_argparse():
    p = argparse.ArgumentParser()
    p.error = lambda message: (_ for _ in ()).throw(UsageError(message))
    add_time_arguments(p)
    assert p.parse_args(["--window", "1", "2", "--time", "device"]).window.hi == ("s", 2.0)
    with pytest.raises(UsageError, match="reversed"):
        p.parse_args(["--window", "2:1"])


def test_timeline_bases_and_selection():
    device = np.array([100.0, 101.0, 102.5])
    wall = T0 + np.array([0, 1_000_000_000, 2_500_000_000])
    tl = Timeline(device, wall, origin_s=99.0)
    assert tl.basis(None) == "utc"
    assert tl.column("relative")[0] == "time_s" and tl.column("relative")[1].tolist() == [1.0, 2.0, 3.5]
    assert list(tl.texts("utc"))[0] == "2025-03-18T23:06:45.000000Z"
    assert tl.select(parse_window(["2:3.5"])).tolist() == [False, True, True]
    assert tl.select(parse_window(["2025-03-18T23:06:46Z/"])).tolist() == [False, True, True]
    with pytest.raises(OutsideRecordingError, match=r"spans 1 to 3.5 s after the start, 2025-03-18T23:06:45"):
        tl.select(parse_window(["10", "20"]))


def test_undated_timeline_refuses_utc():
    tl = Timeline(np.array([5.0, 6.0]))
    assert tl.basis(None) == "relative" and tl.relative_s.tolist() == [0.0, 1.0]
    with pytest.raises(UsageError, match="undated"):
        tl.basis("utc")
    with pytest.raises(UsageError, match="undated"):
        tl.select(parse_window(["2025-03-18T23:06:50Z/"]))


def test_id_filter_terms_and_repeats():
    p = argparse.ArgumentParser()
    add_id_filter(p)
    ids = p.parse_args(["--id", "0x123,100-1FF", "--id", "0x700/0x7F0"]).ids
    got = ids.mask(np.array([0x123, 0x100, 0x1FF, 0x200, 0x70F, 0x710, 0x80000123 & 0x1FFFFFFF]))
    assert got.tolist() == [True, True, True, False, True, False, True]
    assert p.parse_args([]).ids is None
    for bad in ("0x1FF-0x100", "0x20000000", "12g", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_id_filter(bad)
    with pytest.raises(NotFoundError, match=r"its ids: 0x100, 0x200"):
        IdFilter([(0x7FF, 0x7FF)], text="0x7FF").require(np.array([0x200, 0x100, 0x100]))


@needs_traces
def test_trace_opens_directly_and_writes_nothing(tmp_path):
    src = tmp_path / "renamed.bin"  # content, not the extension, tells the format
    src.write_bytes(open(CANDUMP, "rb").read())
    with open_input(str(src)) as f:
        assert [s.name for s in f.streams.values()] == ["can0"]
        assert f.sessions[0].time_base == "unix"
    assert os.listdir(tmp_path) == ["renamed.bin"]


def test_neither_logb_nor_trace(tmp_path):
    junk = tmp_path / "x.log"
    junk.write_text("hello\n")
    with pytest.raises(NotLogbError, match="neither a Logb file nor a CAN trace"):
        with open_input(str(junk)):
            pass


@needs_traces
def test_format_mismatch_is_an_error():
    from logb.can import formats

    with pytest.raises(FormatMismatchError, match="content is trc"):
        formats.format_for(os.path.join(TRACES, "pycan-test_CanMessage.trc"), "asc", reading=True)

"""`logb export --format asc`: the header's start time is exact. python-can 4.x writes the
milliseconds of 17:59:00.020 as `.20`, which readers take as 200 ms, so every frame moved
by 180 ms on re-import; formats.asc writes the header date itself."""

import datetime

import numpy as np
import pytest

can = pytest.importorskip("can")

import logb  # noqa: E402
from logb.can import formats  # noqa: E402
from logb.can.formats import asc  # noqa: E402
from logb.cli.main import main  # noqa: E402

# 2024-06-05 17:59:00 local time, so the header's wall clock is the one named above
SECOND_US = int(datetime.datetime(2024, 6, 5, 17, 59, 0).timestamp()) * 1_000_000


def trace_from(first_us, n=50):
    rng = np.random.default_rng(5)
    t = first_us + np.concatenate([[0], np.cumsum(rng.integers(1, 20_000, n - 1))]).astype(np.int64)
    bus = formats.Bus("can0", t, rng.integers(0, 0x7FF, n).astype(np.uint32), np.zeros(n, np.uint8),
                      np.full(n, 8, np.uint8), rng.integers(0, 256, (n, 8), dtype=np.uint8))
    return formats.Trace({"can0": bus}, -6, True, None, "test")


@pytest.mark.parametrize("ms_us", [5_000, 20_000, 20_123, 99_999, 123_456])
def test_start_below_100_ms_reimports_exactly(ms_us, tmp_path):
    """First frame at .005/.020/.099 s past a second (the unpadded cases) and .123: python-can's
    ASCReader and our importer give back every stamp to the µs."""
    trace = trace_from(SECOND_US + ms_us)
    lb, out = tmp_path / "t.logb", tmp_path / "t.asc"
    formats.write_logb(trace, lb)
    assert main(["export", str(lb), "-o", str(out)]) == 0
    want = trace.buses["can0"].t.tolist()
    header = out.read_text().splitlines()
    assert header[0] == f"date Wed Jun 05 17:59:00.{ms_us // 1000:03d} 2024"
    assert header[3].startswith(f"Begin Triggerblock Wed Jun 05 17:59:00.{ms_us // 1000:03d} 2024")
    theirs = [round(m.timestamp * 1e6) for m in can.ASCReader(str(out), relative_timestamp=False)]
    assert theirs == want
    assert formats.read_trace(out).buses["can0"].t.tolist() == want
    back = tmp_path / "b.logb"
    assert main(["import", str(out), "-o", str(back)]) == 0
    with logb.LogbFile(str(back)) as f:
        assert formats.read_logb(f).buses["can0"].t.tolist() == want


def test_header_date_is_english_and_padded():
    dt = datetime.datetime(2021, 3, 1, 7, 8, 9, 7_999)
    assert asc.header_date(dt) == "Mon Mar 01 07:08:09.007 2021"
    assert asc.header_date(dt.replace(microsecond=999_999)) == "Mon Mar 01 07:08:09.999 2021"

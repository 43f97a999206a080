"""columns() at native widths, decoded into preallocated columns: its peak memory
(tracemalloc, which numpy reports its buffers to) stays within 1.3x what it
returns, and windows, rejected frames and `wide` give the same values as
batches() does frame by frame."""

import io
import tracemalloc

import numpy as np
import pytest

import logb
from logb import AxisKind, AxisMode, DataType, Field, Schema
from logb.tables import Codec

from _frames import patch

N_FRAMES, PER_FRAME = 60, 4096


def can_schema():
    return Schema(
        uuid=logb.stream_uuid("test", "can"), name="can", record_bits=144,
        axis_kind=AxisKind.time, axis_mode=AxisMode.explicit, axis_exp=-6, axis_unit="s",
        axis_scale=1, axis_field=0,
        fields=(Field("ts", 0, 32, DataType.uint), Field("id", 32, 29, DataType.uint),
                Field("dlc", 64, 4, DataType.uint), Field("temp", 68, 12, DataType.sint),
                Field("data", 80, 64, DataType.bytes)))


def can_file(codec, transpose):
    rng = np.random.default_rng(7)
    buf = io.BytesIO()
    with logb.Writer(buf, time_base="relative") as w:
        s = w.add_stream(can_schema(), codec=codec, transpose=transpose)
        for k in range(N_FRAMES):
            n = PER_FRAME
            s.write_batch({"ts": np.arange(n, dtype=np.uint32) * 10, "id": rng.integers(0, 1 << 29, n),
                           "dlc": rng.integers(0, 16, n), "temp": rng.integers(-2048, 2048, n),
                           "data": rng.integers(0, 256, (n, 8), dtype=np.uint8)},
                          axis_base=k * 100_000, run_id=0)
    return buf.getvalue()


def nbytes(c):
    return sum(v.nbytes for v in c.raw.values()) + c.axis.nbytes + c.run_id.nbytes + c.session.nbytes


@pytest.mark.parametrize("codec,transpose", [(Codec.none, False), (Codec.zstd, True)])
@pytest.mark.parametrize("wide", [False, True])
def test_columns_peak_within_1_3x_of_result(codec, transpose, wide):
    f = logb.LogbFile(can_file(codec, transpose))
    s = f.stream("can")
    tracemalloc.start()
    try:
        c = s.columns(wide=wide)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(c) == N_FRAMES * PER_FRAME
    assert peak <= 1.3 * nbytes(c), (peak, nbytes(c))


def test_native_widths_and_wide_hold_the_same_values():
    f = logb.LogbFile(can_file(Codec.zstd, True))
    s = f.stream("can")
    c, w = s.columns(), s.columns(wide=True)
    assert [c.raw[k].dtype for k in ("ts", "id", "dlc", "temp")] == [np.uint32, np.uint32, np.uint8, np.int16]
    assert [w.raw[k].dtype for k in ("ts", "id", "dlc", "temp")] == [np.uint64, np.uint64, np.uint64, np.int64]
    for k in ("ts", "id", "dlc", "temp"):
        assert np.array_equal(c.raw[k].astype(w.raw[k].dtype), w.raw[k])
    assert c.raw["temp"].min() < 0 and np.array_equal(c.axis, w.axis)
    # the axis: the u32 ts field widened before scaling (no wrap at 32 bits)
    assert c.axis[-1] == (N_FRAMES - 1) * 100_000 + (PER_FRAME - 1) * 10


def test_window_and_rejected_frames_match_batches():
    data = can_file(Codec.zstd, True)
    third = logb.LogbFile(data).stream("can").frames[2]
    # the third frame's zstd data broken, its CRC refitted: rejected only when decoded,
    # after columns() preallocated for it (the columns then shrink in place)
    data = patch(data, third.offset, 8 + 28, b"\xff" * 4)  # its zstd magic
    f = logb.LogbFile(data)
    s = f.stream("can")
    whole = s.columns()
    assert s.rejected == PER_FRAME and len(whole) == (N_FRAMES - 1) * PER_FRAME
    for window in (None, (150_000, 1_234_567), (10**12, 10**13)):
        got = s.columns(window=window)
        parts = [b for _, b in s.batches(window)]
        want_axis = np.concatenate([b.axis for b in parts]) if parts else np.zeros(0, np.int64)
        assert np.array_equal(got.axis, want_axis)
        for k in ("ts", "id", "dlc", "temp", "data"):
            want = np.concatenate([b.raw[k] for b in parts]) if parts else got.raw[k][:0]
            assert got.raw[k].dtype == want.dtype and np.array_equal(got.raw[k], want), k
        if window is not None and len(got):
            assert got.axis.min() >= window[0] and got.axis.max() <= window[1]


# ---------------------------------------------------------------- streaming CAN decode: peak RSS

_PEAK = """
import json, resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""

_BATCHES = """
import sys
import logb
from logb.can.decode import decode_batches
with logb.LogbFile(sys.argv[1]) as f:
    for part in decode_batches(f, source="raw"):
        pass
"""


def _peak(*argv):
    """Peak RSS (bytes) of a fresh interpreter running argv (its own, not this process's)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _PEAK, sys.executable, *map(str, argv)], check=True,
                         stdout=subprocess.PIPE, text=True, timeout=600)
    return int(out.stdout.split()[-1])


@pytest.mark.single_backend  # the decode runs in fresh interpreters, on the default backend
def test_streaming_decode_peak_rss_does_not_grow_with_the_file(tmp_path):
    # Batch by batch the peak stays near the interpreter, numpy, cantools, pyarrow and one
    # batch; what grows with the file is the reader's index of its DATA frames (~10 MB here,
    # decode_batches' growth too). Measured: decode_batches +12 MB, `logb decode` +28 MB, and
    # `logb decode` sorting the whole decode (the old way) +86 MB from 1x to 4x.
    pytest.importorskip("cantools")
    pytest.importorskip("pyarrow.parquet")
    from test_decode_stream import DBC, frames, record

    dbc = tmp_path / "t.dbc"
    dbc.write_text(DBC)
    peaks = {}
    for k in (1, 4):
        path = record(tmp_path / f"x{k}.logb", frames(150_000 * k, seed=k))
        peaks[k] = (_peak("-c", _BATCHES, path),
                    _peak("-m", "logb.cli.main", "decode", path, "--dbc", dbc, "-o", tmp_path / f"x{k}.parquet"))
    batches, cli = (peaks[4][i] - peaks[1][i] for i in (0, 1))
    assert batches < 25e6, peaks
    assert cli - batches < 25e6, peaks  # the CLI holds nothing that grows with the file

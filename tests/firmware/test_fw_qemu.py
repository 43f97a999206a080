"""The frozen firmware on the emulated Cortex-M3 (qemu MPS2-AN385,
tests/firmware/mpreal.py): its instruction counts repeat exactly (what the
firmware benchmark's counts rely on), and it writes the bytes CPython writes."""

import base64
import io
import pathlib
import sys

import pytest

import logb

import fwtools
import mpreal
import scenario

sys.path.insert(0, str(fwtools.ROOT / "firmware" / "bench"))
import inputs  # noqa: E402
import qemu_count  # noqa: E402

pytestmark = pytest.mark.single_backend


def test_counts_repeat_exactly(tmp_path):
    mpreal.built("qemu")
    frames = inputs.trace(128)
    cases = [("raw_c", "c", {}), ("raw_pure", "pure", {"raw_bytes": 128}), ("sensor", "append", {})]
    a = qemu_count.run(fwtools.raw_only_config(), frames, 2, cases, tmp_path)
    b = qemu_count.run(fwtools.raw_only_config(), frames, 2, cases, tmp_path)
    assert a == b
    assert set(a) == {"raw_c", "raw_pure", "sensor"}
    (ic, n, seals, _), (ip, _, seals_p, _) = a["raw_c"], a["raw_pure"]
    assert n == 256 and 0 < seals < seals_p  # 128-byte frame buffers seal more often
    assert ip > ic > 1000 * n  # the pure-Python CRC costs more than the C one; both count real work


DRIVER = """
import binascii


class PrintSink:  # the bytes go out over the UART as they come: no room for the whole file
    def write(self, buf):
        print("REC", binascii.b2a_base64(buf).decode().strip())
        return len(buf)


frames = parse_frames(BLOB)
clock = Clock(frames[0][0])
w, streams, sensor = make_writer(PrintSink(), CFG, PARAMS, clock)
feed(w, sensor, frames, clock, 0, len(frames))
finish(w, clock)
"""


def test_frozen_firmware_writes_the_cpython_bytes(tmp_path):
    """scenario.py's recording of a real trace (5 message streams + raw bus, a
    sensor, rotations, an anchor) with the frozen package and logbc's CRC,
    against CPython's. (The 140 KB heap cannot also hold a 20-message config.)"""
    frames = inputs.trace(250)  # parse_frames grows one list: 256 entries fit the fragmented heap
    cfg, _ = inputs.compile_messages(inputs.trace_messages(frames, 5))
    params = {"segment_bytes": 6000, "flush_ms": 20}
    blob = fwtools.encode_frames(frames)
    src = pathlib.Path(scenario.__file__).read_text()
    script = f"CFG = {cfg!r}\nBLOB = {blob!r}\nPARAMS = {params!r}\n" + src + DRIVER
    p = tmp_path / "rec.py"
    p.write_text(script)
    out = mpreal.run_qemu(p)
    board = b"".join(base64.b64decode(x[4:]) for x in out.splitlines() if x.startswith("REC "))

    sink = io.BytesIO()
    clock = scenario.Clock(frames[0][0])
    w, _, sensor = scenario.make_writer(sink, cfg, params, clock)
    scenario.feed(w, sensor, frames, clock, 0, len(frames))
    scenario.finish(w, clock)
    assert board == sink.getvalue()
    f = logb.LogbFile(board)
    assert f.report.clean and f.sessions[0].ended and len(f.sessions[0].segments) > 2
    assert sum(s.records for s in f.streams.values()) == 250 + 250 // 64


def test_import_leaves_one_free_block_and_20_streams_fit_64k(tmp_path):
    """On this 32-bit port `import logb` boxes no int (the CRC tables are built
    in 24+8-bit halves), so the free heap stays one block; then a writer with
    20 message streams + raw bus sets up, and with the package's own state it
    is inside the 64 KiB goal (frozen code; SCHEMAs in RAM: no file system)."""
    cfg, _ = inputs.compile_messages(inputs.trace_messages(inputs.trace(20000)))
    rows, top = qemu_count.heap([("t20", cfg)], tmp_path)
    assert top["max_free"] >= 0.95 * top["free"], top  # 256 boxed table ints left it at ~8 KB of ~130 KB
    live, _, streams = rows["t20"]
    assert streams == 21
    assert top["import"] + live < 64 * 1024, (top, live)

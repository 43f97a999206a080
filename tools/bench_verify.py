"""`logb verify` (C backend) against its floors on >= 1 GB files (issue 13).

Floors, in the same run: codec none, read the file (readinto windows of 1, 2, 4 and 16 MiB: the fastest)
and CRC-32C it with the project's hardware kernel (crc32c_hw); zstd, the
zstd decompression of every DATA frame's stored bytes (frames found by the
same scan, not timed). Verify runs serial (--jobs 1) and on 2 threads;
*open* is opening the file alone (the scan: read, CRC, frame table, INDEX).

    tools/bench_verify.py [--bytes 1e9] [--runs 5] [--output BENCHMARKS.md] [--print]

Replaces its block ("verify", tools/benchmd.py) of BENCHMARKS.md, or prints
it; the files are built under out/bench/ and deleted.
"""

import argparse
import io
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench  # noqa: E402
import benchmd  # noqa: E402  (the marked blocks of BENCHMARKS.md)

import logb  # noqa: E402
from logb import _backend  # noqa: E402
from logb.cli.main import main as logb_main  # noqa: E402
from logb.tables import Codec  # noqa: E402


def round_robin(cases, runs):
    """{name: fastest seconds} of cases (name -> fn) timed one after another,
    round after round (one untimed round first), so that each meets the
    machine's moods alike: on this shared machine a case's speed drifts by
    10-20% from one minute to the next."""
    for fn in cases.values():
        fn()
    times = {name: [] for name in cases}
    for _ in range(runs):
        for name, fn in cases.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: min(ts) for name, ts in times.items()}


# Read sizes the read + CRC floor tries; the fastest is the floor (16 MiB was 1.5x slower than 2 MiB here).
FLOOR_WINDOWS = (1 << 20, 2 << 20, 4 << 20, 16 << 20)


def floor_crc(path, window=2 << 20):
    k = _backend.active
    buf = memoryview(bytearray(window))
    crc = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            crc = k.crc32c(buf[:n], crc)
    return crc


def floor_zstd(path, frames):
    import zstandard

    d = zstandard.ZstdDecompressor()
    with open(path, "rb", buffering=0) as f:
        fd = f.fileno()
        for start, end, raw in frames:
            d.decompress(os.pread(fd, end - start, start), max_output_size=raw)


def open_only(path):
    with logb.LogbFile(path):
        pass


def verify(path, jobs):
    rc = logb_main(["verify", "--jobs", str(jobs), str(path)], out=io.StringIO())
    if rc:
        raise SystemExit(f"logb verify {path} returned {rc}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bytes", type=float, default=1e9)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cache", type=pathlib.Path, default=bench.ROOT / "out" / "bench")
    ap.add_argument("--output", type=pathlib.Path, default=bench.ROOT / "BENCHMARKS.md")
    ap.add_argument("--print", action="store_true", help="print the section instead of splicing it")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    _backend.use("c")
    d = bench.ensure_trace(args.cache, 1_000_000)
    rec = np.fromfile(d / "trace.bin", bench.REC)
    rows = []
    for key, codec, transpose in (("none", Codec.none, False), ("zstd", Codec.zstd, True)):
        small = args.cache / f"verify13-{key}.logb"
        big = args.cache / f"verify13-{key}-big.logb"
        bench.write_logb(small, rec, codec, transpose, 4096)
        copies = -(-int(args.bytes) // (small.stat().st_size - bench.FILE_HEADER_SIZE))
        bench.logb_cat([small] * copies, big)
        try:
            size = big.stat().st_size
            cases = {}
            if key == "none":
                for w in FLOOR_WINDOWS:
                    cases[w] = lambda w=w: floor_crc(big, w)
            else:
                with logb.LogbFile(big) as f:
                    frames = [(*fl.stored_slice, fl.header.raw_size) for _s, fl in f.data_frames()]
                cases["floor"] = lambda: floor_zstd(big, frames)
            cases["open"] = lambda: open_only(big)
            cases[1] = lambda: verify(big, 1)
            cases[2] = lambda: verify(big, 2)
            t = round_robin(cases, args.runs)
            if key == "none":
                window = min(FLOOR_WINDOWS, key=t.get)
                floor = t[window]
                what = f"read ({window >> 20} MiB reads) + crc32c_hw"
            else:
                floor = t["floor"]
                what = "zstd-decompress every DATA frame"
            opened, v1, v2 = t["open"], t[1], t[2]
            gb = size / 1e9
            rows.append(f"| {key}: {gb:.2f} GB | {gb / v1:.2f} GB/s | {gb / v2:.2f} GB/s | {what}: "
                        f"{gb / floor:.2f} GB/s | {floor / v1:.2f}× | {floor / v2:.2f}× | "
                        f"{v1 / v2:.2f}× | {gb / opened:.2f} GB/s |")
        finally:
            big.unlink()
            small.unlink()
    text = "\n".join([
        "## `logb verify` against its floors (issue 13)\n",
        f"`tools/bench_verify.py`, {time.perf_counter() - started:.0f} s: `logb cat` of copies of the trace's Logb "
        f"file ({os.cpu_count()} CPUs, C backend, CRC {_backend.active.crc_impl}, page cache warm); every case "
        f"of a file timed in turn, round after round, best of {args.runs} rounds; 1-minute load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after (the machine is shared: other work takes cores "
        "from the 2-job runs). *verify*: `logb verify --jobs N FILE` in-process, open included: every DATA frame "
        "checked while the scan holds its bytes or soon after: zstd frames' headers checked in one C call per "
        "16 frames, each frame decompressed alone (N = 1); with N > 1, zstd frames sent 16 at a time to N - 1 "
        "threads while the scan goes on, each batch read again and decompressed in one call that holds no GIL, "
        "the main thread taking the batches not yet started once the scan is done. Floors, same run: "
        "codec none, the file read and CRC-32C'd a window at a time (the fastest of 1, 2, 4 and 16 MiB windows); "
        "zstd, every DATA frame's stored bytes read "
        "and zstd-decompressed (frames found beforehand, untimed). *open*: opening the file alone (the scan: "
        "read, CRC, frame table, INDEX). GB = 10⁹ bytes. Goals: ≥ 0.8× the floor, ≥ 1.7× with 2 cores.\n",
        "| file | verify --jobs 1 | verify --jobs 2 | floor | jobs 1 / floor | jobs 2 / floor | 2 cores / 1 | open |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows, ""])
    if args.print:
        print(text)
    else:
        benchmd.splice(args.output, "verify", text)
        print(f"bench_verify: wrote its block of {args.output}", file=sys.stderr)

if __name__ == "__main__":
    sys.exit(main())

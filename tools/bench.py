"""Every benchmark of BENCHMARKS.md, each section regenerated in place.

Usage: python tools/bench.py [--frames N] [--runs R] [--cache DIR] [--output FILE]
                             [--only core,formats,...] [--skip firmware,...]
       (normally through `./run bench`, which sets up the tools first)

BENCHMARKS.md is built from marked blocks (<!-- NAME:begin --> ... <!-- NAME:end -->,
tools/benchmd.py), each owned by one script that replaces only its own block:
core (this file: the pure-Python backend against its peers), formats
(tools/bench_formats.py), can (tools/bench_can.py), cbridge
(tools/bench_cbridge.py), verify (tools/bench_verify.py), rss (tools/bench_rss.py), pull (tools/bench_pull.py),
boards (tools/bench_boards.py), powercut (tools/powercut_fs.py), lake (tools/bench_lake.py) and firmware
(firmware/bench/run_bench.py: MicroPython 1.28's unix port and qemu Cortex-M3 image, built by
tools/micropython_build.py; skipped with a note, its block kept, when a build tool is missing).
--only/--skip choose blocks; everything else in the file stays as it is.

Every figure is a median with its min–max over R runs in this one process, on
one shared trace (/work/shared/bench/gen_trace.py, cached under out/bench/).
Ratios are of medians. Nothing here passes or fails: it reports.
"""

import argparse
import datetime
import gc
import io
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import time
import zlib

import numpy as np

import logb
from logb import AxisKind, AxisMode, Codec, DataType, Field, Schema
from logb.cli.main import main as logb_main
from logb.crc import crc32c, crc32c_pure
from logb.framing import FILE_HEADER_SIZE

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import benchmd  # noqa: E402  (the marked blocks of BENCHMARKS.md)

GEN_TRACE = pathlib.Path(os.environ.get("LOGB_GEN_TRACE", ROOT.parent / "shared" / "bench" / "gen_trace.py"))

# The 18-byte raw record of trace.bin, and the Logb schema that mirrors it.
REC = np.dtype([("ts_us", "<u4"), ("id", "<u4"), ("dlc", "u1"), ("flags", "u1"), ("data", "u1", (8,))])
TRACE_FILES = ("trace.bin", "trace.mf4", "trace_z.mf4", "trace.blf", "meta.json")
MDF_COLUMNS = [("CAN_DataFrame.ID", 0, 3), ("CAN_DataFrame.IDE", 0, 4), ("CAN_DataFrame.DLC", 0, 5),
               ("CAN_DataFrame.DataBytes", 0, 7)]
MB = 1e6


def can_schema():
    return Schema(
        uuid=logb.stream_uuid("bench", "can"), name="can", record_bits=144,
        axis_kind=AxisKind.time, axis_mode=AxisMode.explicit, axis_exp=-6, axis_unit="s",
        axis_scale=1, axis_field=0,
        fields=(
            Field("ts", 0, 32, DataType.uint, unit="us", description="µs after the frame's axis_base"),
            Field("id", 32, 32, DataType.uint, description="CAN id, bit 31 = extended"),
            Field("dlc", 64, 8, DataType.uint),
            Field("flags", 72, 8, DataType.uint),
            Field("data", 80, 64, DataType.bytes),
        ),
    )


# ---------------------------------------------------------------- helpers

def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Stat:
    """Median and min–max of wall times of `runs` calls (one untimed warm-up)."""

    def __init__(self, fn, runs, warmup=True):
        if warmup:
            fn()
        self.times = []
        for _ in range(runs):
            gc.collect()
            t = time.perf_counter()
            fn()
            self.times.append(time.perf_counter() - t)
        self.median = statistics.median(self.times)
        self.min, self.max = min(self.times), max(self.times)

    def rate(self, amount, scale=1.0):
        """(median, low, high) of amount/second/scale; low from the slowest run."""
        return amount / self.median / scale, amount / self.max / scale, amount / self.min / scale


def fmt_rate(r, unit, scale):
    med, lo, hi = (x / scale for x in r)
    digits = 2 if med < 100 else 0
    return f"{med:.{digits}f} {unit} ({lo:.{digits}f}–{hi:.{digits}f})"


def fmt_bytes(b):
    return f"{b / MB:.0f} MB" if b >= 10 * MB else (f"{b / MB:.1f} MB" if b >= MB else f"{b / 1e3:.0f} kB")


def fmt_ms(st):
    return f"{st.median * 1e3:.1f} ({st.min * 1e3:.1f}–{st.max * 1e3:.1f})"


def ratio(a, b):
    return f"{a / b:.2f}×"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def version_of(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# ---------------------------------------------------------------- 1. trace

def ensure_trace(cache, frames):
    d = cache / f"trace-{frames}"
    meta = d / "meta.json"
    if all((d / n).exists() for n in TRACE_FILES):
        try:
            if json.loads(meta.read_text())["n_frames"] == frames:
                log(f"reusing trace {d}")
                return d
        except (ValueError, KeyError):
            pass
    log(f"generating {frames} frames into {d} with {GEN_TRACE} ...")
    d.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, str(GEN_TRACE), str(frames), str(d)], check=True,
                   stdout=subprocess.DEVNULL)
    log(f"  generated in {time.perf_counter() - t:.0f} s")
    return d


# ---------------------------------------------------------------- 2. write

def write_logb(path, rec, codec, transpose, batch):
    schema = can_schema()
    ts_all = rec["ts_us"]
    with logb.Writer(str(path), time_base="relative") as w:
        s = w.add_stream(schema, codec=codec, transpose=transpose)
        for i in range(0, len(rec), batch):
            r = rec[i:i + batch]
            base = int(ts_all[i])
            s.write_batch({"ts": r["ts_us"] - np.uint32(base), "id": r["id"], "dlc": r["dlc"],
                           "flags": r["flags"], "data": r["data"]}, axis_base=base, run_id=0)


def check_roundtrip(path, rec):
    with logb.LogbFile(str(path)) as f:
        c = f.stream("can").columns()
        ok = (len(c) == len(rec) and np.array_equal(c.axis, rec["ts_us"].astype(np.int64))
              and np.array_equal(c.raw["id"], rec["id"]) and np.array_equal(c.raw["dlc"], rec["dlc"])
              and np.array_equal(c.raw["flags"], rec["flags"]) and np.array_equal(c.raw["data"], rec["data"]))
        if not ok or not f.report.clean:
            raise SystemExit(f"{path}: does not decode back to the trace; refusing to benchmark it")


# ---------------------------------------------------------------- 3. decode

def decode_logb(path, fields=None):
    with logb.LogbFile(str(path)) as f:
        c = f.stream("can").columns(fields=fields)
        cols = dict(c.raw)
        cols["axis"] = c.axis  # int64 µs ticks
    return cols


def open_logb(path):
    with logb.LogbFile(str(path)) as f:
        return len(f.stream("can").frames)


def decode_mdf(path):
    from asammdf import MDF

    mdf = MDF(str(path))
    try:
        sigs = mdf.select(MDF_COLUMNS, raw=True)
        cols = {s.name: s.samples for s in sigs}
        cols["time"] = sigs[0].timestamps  # float64 s
    finally:
        mdf.close()
    return cols


def decode_numpy(path):
    rec = np.fromfile(str(path), REC)
    return {n: np.ascontiguousarray(rec[n]) for n in REC.names}


# ---------------------------------------------------------------- 5. peak RSS

RSS_MODES = ("idle", "open", "batches", "columns")


def rss_worker(mode, path):
    """Runs in a fresh interpreter; prints a JSON line about what it decoded."""
    t = time.perf_counter()
    records = decoded = 0
    if mode != "idle":
        with logb.LogbFile(path) as f:
            s = f.stream("can")
            if mode == "batches":
                acc = 0
                for _fl, b in s.batches(fields=["id"]):
                    acc ^= int(b.raw["id"][-1])
                    records += b.count
                    decoded = max(decoded, b.raw["id"].nbytes + b.axis.nbytes)
            elif mode == "columns":
                c = s.columns()
                records = len(c)
                decoded = sum(v.nbytes for v in c.raw.values()) + c.axis.nbytes + c.run_id.nbytes \
                    + c.session.nbytes
            else:
                records = s.records
    print(json.dumps({"records": records, "decoded": decoded, "seconds": time.perf_counter() - t}))


# A child forked from this (large) process inherits its peak RSS into ru_maxrss
# (Linux keeps the high-water mark across exec). So a tiny launcher, which
# imports nothing heavy, starts each worker and reports
# getrusage(RUSAGE_CHILDREN).ru_maxrss after waiting for that one child.
_LAUNCHER = """
import json, resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)
if r.returncode:
    sys.exit(r.returncode)
info = json.loads(r.stdout.strip().splitlines()[-1])
info["maxrss"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux: KiB
print(json.dumps(info))
"""


def measure_rss(mode, path):
    """Peak RSS of a fresh interpreter doing `mode` on `path`."""
    r = subprocess.run([sys.executable, "-c", _LAUNCHER, sys.executable, __file__, "--_rss-worker", mode,
                        str(path)], stdout=subprocess.PIPE, text=True)
    if r.returncode:
        raise SystemExit(f"rss worker {mode} failed ({r.returncode})")
    return json.loads(r.stdout.strip().splitlines()[-1])


def logb_cat(inputs, out):
    """`logb cat` semantics: the first header, then every input minus its 16-byte header."""
    with open(out, "wb") as o:
        with open(inputs[0], "rb") as f:
            o.write(f.read(FILE_HEADER_SIZE))
        for p in inputs:
            with open(p, "rb") as f:
                f.seek(FILE_HEADER_SIZE)
                while chunk := f.read(1 << 20):
                    o.write(chunk)


# ---------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=1_000_000, help="trace length (default 1,000,000)")
    ap.add_argument("--runs", type=int, default=9, help="timed runs per figure, at least 5 (default 9)")
    ap.add_argument("--batch", type=int, default=4096, help="records per DATA frame (default 4096)")
    ap.add_argument("--copies", type=int, default=4, help="copies of the zstd file for the RSS test")
    ap.add_argument("--cache", type=pathlib.Path, default=ROOT / "out" / "bench")
    ap.add_argument("--output", type=pathlib.Path, default=ROOT / "BENCHMARKS.md")
    ap.add_argument("--only", metavar="NAMES",
                    help=f"comma-separated blocks to regenerate ({','.join(benchmd.BLOCKS)})")
    ap.add_argument("--skip", metavar="NAMES", help="comma-separated blocks to leave as they are")
    ap.add_argument("--verify-bytes", type=float, default=None,
                    help="cbridge and verify: size of their verify files (their default: 1 GB)")
    ap.add_argument("--fw-frames", type=int, default=20000,
                    help="firmware: trace frames per lap on the unix port (default 20000)")
    ap.add_argument("--fw-reps", type=int, default=9, help="firmware: timed runs per case, the best counts (default 9)")
    ap.add_argument("--fw-qemu-frames", type=int, default=600,
                    help="firmware: trace frames per counted lap on qemu (default 600)")
    ap.add_argument("--_rss-worker", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._rss_worker:
        rss_worker(*args._rss_worker)
        return 0
    wanted = chosen_blocks(args.only, args.skip)
    runs = max(5, args.runs)
    started = time.perf_counter()
    n = args.frames
    # This part is the pure-Python baseline (children too); the C backend's
    # section comes from tools/bench_cbridge.py, run at the end.
    os.environ["LOGB_BACKEND"] = "python"
    logb._backend.use("python")

    # 1. the trace
    d = ensure_trace(args.cache, n)
    if "core" in wanted:
        core(args, d, n, runs, started)
    if "formats" in wanted:
        from bench_formats import section as formats_section  # CAN bytes per frame (tools/bench_formats.py)
        benchmd.splice(args.output, "formats", formats_section(d, ROOT.parent / "shared" / "data" / "traces"))
        log(f"formats: wrote its block of {args.output}")
    if "can" in wanted:
        import bench_can  # CAN signals to physical columns (tools/bench_can.py)
        benchmd.splice(args.output, "can", bench_can.section(bench_can.run(d, runs)))
        log(f"can: wrote its block of {args.output}")
    rc = 0
    if "rss" in wanted:
        import bench_rss  # peak RSS of a streamed decode of a file 10x a worker's budget (issue 13); splices its block

        rc = bench_rss.main(["--frames", str(n), "--cache", str(args.cache), "--output", str(args.output)]) or rc
    if "cbridge" in wanted:
        import bench_cbridge  # the C backend side by side (issue 3); splices its block

        extra = ["--verify-bytes", str(args.verify_bytes)] if args.verify_bytes else []
        rc = bench_cbridge.main(["--frames", str(n), "--runs", str(runs), "--batch", str(args.batch),
                                 "--cache", str(args.cache), "--output", str(args.output)] + extra) or rc
    if "verify" in wanted:
        import bench_verify  # verify against read+CRC and zstd floors, 1 and 2 cores (issue 13); splices its block

        extra = ["--bytes", str(args.verify_bytes)] if args.verify_bytes else []
        rc = bench_verify.main(["--runs", str(runs), "--cache", str(args.cache), "--output", str(args.output)]
                               + extra) or rc
    if "firmware" in wanted:
        rc = firmware(args) or rc
    if "pull" in wanted:
        import bench_pull  # pull over the serial link vs raw pyserial (issue 6); splices its block

        rc = bench_pull.main(["--output", str(args.output)]) or rc
    if "boards" in wanted:
        import bench_boards  # lossless bus load per board profile, rp2 flash stalls (issue 11); splices its block

        rc = bench_boards.main(["--output", str(args.output)]) or rc
    if "powercut" in wanted:
        import powercut_fs  # power cuts through FAT and littlefs on the unix port (issue 16); splices its block

        rc = powercut_fs.main(["--output", str(args.output)]) or rc
    if "lake" in wanted:
        import bench_lake  # a fleet into a Parquet lake: logb lake vs asammdf + pandas (CANedge); splices its block

        rc = bench_lake.main(["--frames", str(n), "--cache", str(args.cache), "--output", str(args.output)]) or rc
    log(f"bench: done in {time.perf_counter() - started:.0f} s")
    return rc


def chosen_blocks(only, skip):
    names = set(benchmd.BLOCKS)
    pick = set(filter(None, (only or "").split(","))) or names
    drop = set(filter(None, (skip or "").split(",")))
    unknown = (pick | drop) - names
    if unknown:
        raise SystemExit(f"unknown block(s) {', '.join(sorted(unknown))}; known: {', '.join(benchmd.BLOCKS)}")
    return pick - drop


def firmware_missing():
    """The build tools the firmware benchmark needs and this machine lacks (tools/micropython_build.py
    builds the unix port, mpy-cross, the natmods and the qemu image from them)."""
    import importlib.util

    need = [(t, shutil.which(t)) for t in ("make", "cc", "arm-none-eabi-gcc", "qemu-system-arm")]
    need.append(("pytest (tests/firmware/mpreal.py reports build problems through it)",
                 importlib.util.find_spec("pytest")))
    return [what for what, ok in need if not ok]


def firmware(args):
    """The firmware block: firmware/bench/run_bench.py in its own process (it drives the unix port
    and qemu); skipped, its block kept, when a build tool is missing."""
    missing = firmware_missing()
    if missing:
        log(f"firmware: skipped ({', '.join(missing)} not installed); its block of {args.output} is kept as it was")
        return 0
    cmd = [sys.executable, str(ROOT / "firmware" / "bench" / "run_bench.py"), "--frames", str(args.fw_frames),
           "--reps", str(args.fw_reps), "--qemu-frames", str(args.fw_qemu_frames), "--output", str(args.output)]
    log("firmware: " + " ".join(cmd[1:]) + " ...")
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    if r.returncode:
        log(f"firmware: run_bench.py failed ({r.returncode}); its block is kept as it was")
    return r.returncode


def crc_stats(runs):
    """CRC-32C against zlib's CRC-32 on 64 MiB, the pure-Python CRC on 1 MiB; a function
    so the 64 MiB are freed before the peak-RSS runs."""
    big = np.random.default_rng(1).integers(0, 256, 64 << 20, np.uint8).tobytes()
    small = big[: 1 << 20]
    return {
        "crc": Stat(lambda: crc32c(big), runs),
        "zlib": Stat(lambda: zlib.crc32(big), runs),
        "pure": Stat(lambda: crc32c_pure(small), runs),
    }


def core(args, d, n, runs, started):
    """The core block: the pure-Python backend against asammdf, numpy and the CRC peers."""
    meta = json.loads((d / "meta.json").read_text())
    rec = np.fromfile(d / "trace.bin", REC)
    assert len(rec) == n

    # 2. write Logb, twice
    variants = {"none": (Codec.none, False, d / "logb_none.logb"),
                "zstd": (Codec.zstd, True, d / "logb_zstd.logb")}
    write_stats = {}
    for key, (codec, transpose, path) in variants.items():
        log(f"write logb {key} ...")
        write_stats[key] = Stat(lambda: write_logb(path, rec, codec, transpose, args.batch), runs, warmup=False)
        check_roundtrip(path, rec)
    tofile = d / "numpy_tofile.bin"
    write_stats["numpy"] = Stat(lambda: rec.tofile(tofile), runs, warmup=False)
    tofile.unlink()

    # 3. decode to columns
    cases = [
        ("logb none: open + columns()", "logb", lambda: decode_logb(variants["none"][2])),
        ("logb zstd+transpose: open + columns()", "logb", lambda: decode_logb(variants["zstd"][2])),
        ("asammdf trace.mf4: open + raw frame columns", "mdf", lambda: decode_mdf(d / "trace.mf4")),
        ("asammdf trace_z.mf4: open + raw frame columns", "mdf", lambda: decode_mdf(d / "trace_z.mf4")),
        ("numpy floor: fromfile(trace.bin, structured) + columns", "np", lambda: decode_numpy(d / "trace.bin")),
        ("logb none: open + columns(fields=['id'])", "logb", lambda: decode_logb(variants["none"][2], ["id"])),
        ("logb zstd: open + columns(fields=['id'])", "logb", lambda: decode_logb(variants["zstd"][2], ["id"])),
        ("logb none: open (scan + CRC) only", "logb", lambda: open_logb(variants["none"][2])),
        ("logb zstd: open (scan + CRC) only", "logb", lambda: open_logb(variants["zstd"][2])),
    ]
    dec = {}
    for label, _kind, fn in cases:
        log(f"decode: {label} ...")
        dec[label] = Stat(fn, runs)
    decoded_bytes = {k: sum(v.nbytes for v in fn().values()) for k, (_l, _k, fn) in
                     zip(("logb", "mdf", "np"), (cases[0], cases[2], cases[4]))}

    # 4. verify and CRC
    ver = {}
    for key in ("none", "zstd"):
        path = str(variants[key][2])

        def verify(path=path):
            rc = logb_main(["verify", path], out=io.StringIO())
            if rc != 0:
                raise SystemExit(f"logb verify {path} returned {rc}")

        log(f"verify {key} ...")
        ver[key] = Stat(verify, runs)
    log("crc ...")
    crc = crc_stats(runs)

    # 5. peak RSS on a file several times the trace
    zpath = variants["zstd"][2]
    npath = variants["none"][2]
    big_z = d / f"logb_zstd_x{args.copies}.logb"
    big_n = d / f"logb_none_x{args.copies}.logb"
    logb_cat([zpath] * args.copies, big_z)
    logb_cat([npath] * args.copies, big_n)
    rss = {}
    for path in (big_z, big_n):
        for mode in RSS_MODES:
            log(f"rss {mode} {path.name} ...")
            rss[(path.name, mode)] = measure_rss(mode, path)

    # 6. sizes
    sizes = [
        ("Logb, codec none, no transpose", variants["none"][2]),
        ("Logb, zstd + transpose", variants["zstd"][2]),
        ("raw 18-byte records (trace.bin)", d / "trace.bin"),
        ("MDF4 uncompressed (trace.mf4)", d / "trace.mf4"),
        ("MDF4 transposed+deflate (trace_z.mf4)", d / "trace_z.mf4"),
        ("BLF (trace.blf)", d / "trace.blf"),
        ("Parquet zstd (trace_zstd.parquet)", d / "trace_zstd.parquet"),
        ("Arrow IPC lz4 (trace_lz4.arrow)", d / "trace_lz4.arrow"),
    ]
    sizes = [(label, p.stat().st_size) for label, p in sizes if p.exists()]

    elapsed = time.perf_counter() - started
    md = render(args, n, runs, meta, variants, write_stats, cases, dec, decoded_bytes, ver, crc, rss,
                (big_z, big_n), sizes, elapsed)
    benchmd.splice(args.output, "core", md)
    log(f"core: wrote its block of {args.output} in {elapsed:.0f} s")
    for p in (big_z, big_n):
        p.unlink()


def render(args, n, runs, meta, variants, write_stats, cases, dec, decoded_bytes, ver, crc, rss, bigs,
           sizes, elapsed):
    L = []
    w = L.append
    fsize = {k: v[2].stat().st_size for k, v in variants.items()}
    w("Pure-Python Logb backend (`logb.backend == %r`) against its peers, on the shared synthetic CAN "
      "trace. This is the baseline a compiled backend has to beat. Figures are medians with the "
      "min–max of the runs in brackets; ratios are of medians. Nothing here is a pass/fail "
      "threshold.\n" % logb.backend)
    w("## Method\n")
    w(f"- Rerun: `./run bench` (extra `host[bench]`; `tools/bench.py --frames {n} --runs {runs}`) regenerates "
      f"every section of this file, each in its marked block (`--only core` for this one). "
      f"`--frames 100000` gives a quick run.")
    w(f"- Trace: `{GEN_TRACE.name}` ({GEN_TRACE}), {n:,} classic CAN frames, "
      f"{meta.get('n_ids', '?')} ids, {meta.get('span_s', 0):.0f} s span; generated once and "
      f"cached in `{args.cache.relative_to(ROOT) if args.cache.is_relative_to(ROOT) else args.cache}"
      f"/trace-{n}/`.")
    w(f"- Logb files: one raw CAN stream whose schema mirrors the 18-byte record (ts u32 at bit 0 as the "
      f"explicit time axis, axis_exp −6; id u32 at 32; dlc u8 at 64; flags u8 at 72; data 8 fixed bytes "
      f"at 80; record_bits 144), written with `logb.Writer` in DATA frames of {args.batch} records, "
      f"axis_base = the batch's first timestamp. Once with codec none and no transpose, once with "
      f"zstd (level 3) + transpose. Each is checked to decode back to the trace before it is timed.")
    w(f"- Runs: {runs} timed runs per figure (decode, verify and CRC cases after one untimed warm-up), "
      f"all in one process, one case after another; files are in the page cache (warm). "
      f"Peak RSS is measured in fresh child processes.")
    w(f"- Machine: {cpu_model()}, {os.cpu_count()} logical CPUs; Python {platform.python_version()}, "
      f"numpy {np.__version__}, asammdf {version_of('asammdf')}, logb {logb.__version__} "
      f"(backend {logb.backend}), zstandard {version_of('zstandard')}, crcmod {version_of('crcmod')}, "
      f"python-can {version_of('python-can')}, cantools {version_of('cantools')}.")
    w(f"- Run on {datetime.date.today().isoformat()}; the whole benchmark took {elapsed:.0f} s.\n")

    # decode
    w("## Decode to numpy columns\n")
    w("Each case opens the file and ends with every listed column as a contiguous numpy array. "
      "Logb: `LogbFile(path)` (scan, every frame's CRC) then `stream('can').columns()` — "
      "`raw['ts','id','dlc','flags','data']` at native widths and `axis` (int64 µs). asammdf: "
      "`MDF(path)` then "
      "`select(ID, IDE, DLC, DataBytes, raw=True)` plus the float64 time master. numpy floor: "
      "`np.fromfile(trace.bin, structured dtype)` then a contiguous copy of each of the 5 fields.\n")
    ref = {lbl: dec[lbl].rate(n) for lbl, _, _ in cases}
    l_none, l_z, m_u, m_z, npf = (c[0] for c in cases[:5])
    rows = []
    for lbl, _kind, _fn in cases:
        r = ref[lbl]
        rows.append([lbl, fmt_rate(r, "M", 1e6), fmt_ms(dec[lbl])])
    w(table(["case", "records/s (min–max)", "ms per run (min–max)"], rows))
    w("")
    w(table(["ratio (of medians, records/s)", "value"], [
        ["Logb none / asammdf uncompressed", ratio(ref[l_none][0], ref[m_u][0])],
        ["Logb zstd / asammdf transposed+deflate", ratio(ref[l_z][0], ref[m_z][0])],
        ["Logb zstd / asammdf uncompressed", ratio(ref[l_z][0], ref[m_u][0])],
        ["Logb none / numpy floor", ratio(ref[l_none][0], ref[npf][0])],
        ["Logb zstd / numpy floor", ratio(ref[l_z][0], ref[npf][0])],
        ["asammdf uncompressed / numpy floor", ratio(ref[m_u][0], ref[npf][0])],
    ]))
    w("")
    w(f"Decoded column bytes per record: Logb {decoded_bytes['logb'] / n:.0f} "
      f"(integer fields at their native widths, uint32 ts and id, uint8 dlc and flags, plus the int64 "
      f"axis; `columns(wide=True)` gives uint64 ones), asammdf "
      f"{decoded_bytes['mdf'] / n:.0f} (native widths + float64 time), numpy floor "
      f"{decoded_bytes['np'] / n:.0f}.\n")

    # write
    w("## Write\n")
    w(f"`logb.Writer` from numpy columns, {args.batch} records per `write_batch`, to a file in "
      f"the page cache; against `ndarray.tofile` of the same 18-byte records (a floor).\n")
    rows = [
        ["Logb, codec none", fmt_rate(write_stats["none"].rate(n), "M", 1e6), fmt_ms(write_stats["none"])],
        ["Logb, zstd + transpose", fmt_rate(write_stats["zstd"].rate(n), "M", 1e6), fmt_ms(write_stats["zstd"])],
        ["numpy tofile (18-byte records)", fmt_rate(write_stats["numpy"].rate(n), "M", 1e6),
         fmt_ms(write_stats["numpy"])],
    ]
    w(table(["writer", "records/s (min–max)", "ms per run (min–max)"], rows))
    w("")

    # verify / crc
    w("## Verify and CRC-32C\n")
    w("`logb verify FILE` in-process (`logb.cli.main.main(['verify', path])`: scan, CRC of every "
      "frame, decode of every DATA frame); MB = 10⁶ bytes of file.\n")
    rows = []
    for key, lbl in (("none", "logb verify, codec none"), ("zstd", "logb verify, zstd + transpose")):
        rows.append([lbl, f"{fsize[key] / MB:.1f} MB", fmt_rate(ver[key].rate(fsize[key]), "MB/s", MB),
                     fmt_rate(ver[key].rate(n), "M records/s", 1e6)])
    w(table(["case", "file", "throughput (min–max)", "records (min–max)"], rows))
    w("")
    rows = [
        ["`logb.crc.crc32c` (crcmod C engine)", "64 MiB", fmt_rate(crc["crc"].rate(64 << 20), "MB/s", MB)],
        ["`logb.crc.crc32c_pure` (pure Python table)", "1 MiB", fmt_rate(crc["pure"].rate(1 << 20), "MB/s", MB)],
        ["`zlib.crc32` (CRC-32, other polynomial; scale only)", "64 MiB",
         fmt_rate(crc["zlib"].rate(64 << 20), "MB/s", MB)],
    ]
    w(table(["CRC", "buffer", "throughput (min–max)"], rows))
    crc_rate = crc["crc"].rate(64 << 20)[0]
    w("")
    w(f"crcmod over the whole file alone would take {fsize['none'] / crc_rate * 1e3:.1f} ms "
      f"(codec none) / {fsize['zstd'] / crc_rate * 1e3:.1f} ms (zstd) of the verify medians "
      f"{ver['none'].median * 1e3:.1f} / {ver['zstd'].median * 1e3:.1f} ms; "
      f"`crc32c_pure` is {crc_rate / crc['pure'].rate(1 << 20)[0]:.0f}× slower than crcmod.\n")

    # rss
    w("## Peak memory\n")
    w(f"A file {args.copies}× the Logb file, built with `logb cat` semantics (the first 16-byte header, "
      f"then each copy minus its header; the copies merge into one stream of {args.copies * n:,} "
      f"records). Each row is a fresh `python` child started by a tiny launcher; peak RSS is "
      f"the launcher's `getrusage(RUSAGE_CHILDREN).ru_maxrss` after that one child (not forked from "
      f"the benchmark process, whose high-water mark a child would inherit). Modes: *idle* = interpreter + "
      f"`import logb` only; *open* = `LogbFile(path)` (scan); *batches* = "
      f"`for fl, batch in stream.batches(fields=['id'])` keeping nothing; *columns* = the whole "
      f"`stream.columns()`. The file is mmapped, so the pages it touches count in RSS. One run "
      f"per row (peak RSS repeats to within a few MB; the time column is that single run, "
      f"including first-touch page faults of a fresh process).\n")
    rows = []
    for big in bigs:
        size = big.stat().st_size if big.exists() else 0
        idle = rss[(big.name, "idle")]["maxrss"]
        for mode in RSS_MODES:
            r = rss[(big.name, mode)]
            dec_b = r["decoded"]
            rows.append([
                f"`{big.name}`" if mode == "idle" else "", f"{size / MB:.1f} MB" if mode == "idle" else "",
                mode, f"{r['maxrss'] / MB:.0f} MB", f"{(r['maxrss'] - idle) / MB:.0f} MB",
                fmt_bytes(dec_b) if dec_b else "–",
                f"{(r['maxrss'] - idle) / dec_b:.2f}" if dec_b and mode == "columns" else "–",
                f"{r['seconds']:.2f} s",
            ])
    w(table(["file", "size", "mode", "peak RSS", "above idle", "decoded columns",
             "above idle / decoded", "time"], rows))
    w("")
    w("*decoded columns*: for *batches* the largest single batch (id + axis); for *columns* every "
      "array of the result (raw, axis, run_id, session).\n")

    # sizes
    w("## File size\n")
    zb = dict(sizes)["Logb, zstd + transpose"]
    rows = [[lbl, f"{b:,}", f"{b / n:.2f}", ratio(b, zb)] for lbl, b in sizes]
    w(table(["file", "bytes", "bytes per frame", "vs Logb zstd"], rows))
    w("")

    # what this shows
    w("## What this shows\n")
    open_share = (dec[cases[7][0]].median / dec[l_none].median, dec[cases[8][0]].median / dec[l_z].median)
    w(shows(n, ref, (l_none, l_z, m_u, m_z, npf), ver, fsize, crc_rate, rss, bigs, dict(sizes), decoded_bytes,
            write_stats, open_share))
    w("")
    return "\n".join(L)


def shows(n, ref, labels, ver, fsize, crc_rate, rss, bigs, sizes, decoded_bytes, write_stats, open_share):
    l_none, l_z, m_u, m_z, npf = labels
    r_nu = ref[l_none][0] / ref[m_u][0]
    r_zz = ref[l_z][0] / ref[m_z][0]
    r_floor = ref[l_none][0] / ref[npf][0]
    word = lambda r: "faster than" if r > 1.05 else ("slower than" if r < 0.95 else "level with")  # noqa: E731
    big_z = bigs[0].name
    ref_decode_s = n / ref[l_none][0]
    col = rss[(big_z, "columns")]
    bat = rss[(big_z, "batches")]
    idle = rss[(big_z, "idle")]["maxrss"]
    parts = [
        f"Decoding to columns, the pure-Python reader is {word(r_nu)} asammdf on uncompressed files "
        f"({r_nu:.2f}×) and {word(r_zz)} it on compressed ones ({r_zz:.2f}×, zstd+transpose against "
        f"transposed+deflate), and reaches {r_floor:.2f}× of the numpy floor on the uncompressed file; "
        f"opening (scan + CRC of every frame) is {open_share[0]:.0%} (none) / {open_share[1]:.0%} (zstd) "
        f"of the decode time, the rest is per-frame decompress, untranspose, field extraction (every "
        f"integer widened to uint64) and the final concatenation.",
        f"`logb verify` runs at {fsize['none'] / ver['none'].median / MB:.0f} MB/s on the uncompressed "
        f"file and {fsize['zstd'] / ver['zstd'].median / MB:.0f} MB/s on the zstd one; the CRC alone "
        f"(crcmod, {crc_rate / MB:.0f} MB/s) accounts for "
        f"{fsize['none'] / crc_rate / ver['none'].median:.0%} and "
        f"{fsize['zstd'] / crc_rate / ver['zstd'].median:.0%} of those times.",
        f"Stream-wise decoding stays bounded by the file, not the records: "
        f"{(bat['maxrss'] - idle) / MB:.0f} MB above an idle interpreter for a "
        f"{bigs[0].stat().st_size / MB:.0f} MB file of {bat['records']:,} records, which is about the "
        f"mmapped file's pages that the scan touched, "
        f"while `columns()` peaks at {(col['maxrss'] - idle) / col['decoded']:.1f}× the "
        f"{col['decoded'] / MB:.0f} MB of columns it returns.",
        f"On disk, zstd+transpose Logb takes {sizes['Logb, zstd + transpose'] / n:.2f} bytes per frame "
        f"against {sizes['MDF4 transposed+deflate (trace_z.mf4)'] / n:.2f} for transposed+deflate MDF4 "
        f"and {sizes['BLF (trace.blf)'] / n:.2f} for BLF; uncompressed Logb costs "
        f"{sizes['Logb, codec none, no transpose'] / n:.2f} (18-byte records plus frame overhead) "
        f"against {sizes['MDF4 uncompressed (trace.mf4)'] / n:.2f} for uncompressed MDF4.",
        f"Writing is the slow side of the pure-Python backend: "
        f"{n / write_stats['none'].median / 1e6:.2f} M records/s (none) and "
        f"{n / write_stats['zstd'].median / 1e6:.2f} M records/s (zstd), "
        f"{write_stats['none'].median / ref_decode_s:.0f}× the time it takes to decode the same file.",
        "These are one machine's numbers on one synthetic trace with warm caches; the ratios, not "
        "the absolute figures, are the point.",
    ]
    return " ".join(parts)


if __name__ == "__main__":
    sys.exit(main())

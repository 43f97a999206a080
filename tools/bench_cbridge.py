"""Benchmarks of the C backend (cbridge via cffi) against the pure-Python
backend and the peers, side by side in one process (issue 3).

Usage: python tools/bench_cbridge.py [--frames N] [--runs R] [--output FILE]
       (tools/bench.py runs it; it replaces the `cbridge` block of BENCHMARKS.md,
       tools/benchmd.py, and nothing else)

Every figure is a median with its min–max over R (>= 5) runs after one
untimed warm-up; ratios are of medians, measured in the same run. The
>= 1 GB verify files are built under out/bench/ and deleted afterwards.
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
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402  (the trace, the Logb files and the peers' readers)
import benchmd  # noqa: E402  (the marked blocks of BENCHMARKS.md)
import logb  # noqa: E402
from logb import Codec, _backend  # noqa: E402
from logb.cli.main import main as logb_main  # noqa: E402

MB, GB = 1e6, 1e9
CB = ROOT / "cbridge"

from bench import Stat  # noqa: E402  (one timing helper for every benchmark)


# the portable kernels, each sized on its own in the firmware table
KERNEL_SOURCES = ("crc32c.c", "bits.c", "transpose.c", "tails.c", "scan.c", "decode.c")

def fmt(r, unit, digits=2):
    return f"{r[0]:.{digits}f} {unit} ({r[1]:.{digits}f}–{r[2]:.{digits}f})"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def x(a, b):
    return f"{a / b:.2f}×"


# ---------------------------------------------------------------- cases

def crc_cases(runs):
    import crc32c as crc32c_pkg
    import crcmod.predefined

    from logb.crc import crc32c, crc32c_pure

    c = _backend.C
    big = np.random.default_rng(1).integers(0, 256, 64 << 20, np.uint8).tobytes()
    small = big[: 1 << 20]
    crcmod_fn = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
    want = crc32c_pkg.crc32c(big)
    stats = {}
    with _backend.using("c"):
        assert crc32c(big) == want
        stats["hw"] = Stat(lambda: crc32c(big), runs)
        c.set_crc("sw")
        try:
            assert crc32c(big) == want
            stats["sw"] = Stat(lambda: crc32c(big), runs)
        finally:
            c.set_crc("auto")
    stats["pkg"] = Stat(lambda: crc32c_pkg.crc32c(big), runs)
    stats["crcmod"] = Stat(lambda: crcmod_fn(big), runs)
    stats["pure"] = Stat(lambda: crc32c_pure(small), runs)
    return stats, crc32c_pkg


def _on(be, fn):
    def call():
        with _backend.using(be):
            return fn()
    return call


def interleaved(fns, runs):
    """{key: Stat} of each of `fns` ({key: fn}) timed round-robin: one call of
    each per round, after one untimed warm-up of each. A case timed in a block
    of its own runs reuses the memory its previous run freed; round-robin, every
    case meets the allocator (and the load) that the others leave, the same mix
    for all, so their ratios compare like with like."""
    times = {key: [] for key in fns}
    for fn in fns.values():
        fn()
    for _ in range(runs):
        for key, fn in fns.items():
            gc.collect()
            t = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t)
    out = {}
    for key, ts in times.items():
        st = out[key] = Stat.__new__(Stat)
        st.times, st.median, st.min, st.max = ts, statistics.median(ts), min(ts), max(ts)
    return out


def decode_cases(d, runs, files):
    fns = {}
    for be in ("c", "python"):
        for key in ("none", "zstd"):
            fns[(be, key)] = _on(be, lambda p=files[key]: bench.decode_logb(p))
    fns["mdf"] = lambda: bench.decode_mdf(d / "trace.mf4")
    fns["mdf_z"] = lambda: bench.decode_mdf(d / "trace_z.mf4")
    fns["numpy"] = lambda: bench.decode_numpy(d / "trace.bin")
    cases = interleaved(fns, runs)
    for be in ("c", "python"):
        with _backend.using(be):
            cases[(be, "verify-none")] = Stat(lambda p=files["none"]: _verify(p), runs)
            cases[(be, "verify-zstd")] = Stat(lambda p=files["zstd"]: _verify(p), runs)
    return cases


def write_cases(rec, runs, batch):
    out = {}
    tmp = pathlib.Path(tempfile.mkdtemp(dir=ROOT / "out" / "bench"))
    try:
        for be in ("c", "python"):
            with _backend.using(be):
                for key, codec, tr in (("none", Codec.none, False), ("zstd", Codec.zstd, True)):
                    path = tmp / f"{be}-{key}.logb"
                    out[(be, key)] = Stat(lambda: bench.write_logb(path, rec, codec, tr, batch), runs, warmup=False)
    finally:
        shutil.rmtree(tmp)
    return out


def _verify(path):
    rc = logb_main(["verify", str(path)], out=io.StringIO())
    if rc != 0:
        raise SystemExit(f"logb verify {path} returned {rc}")


def big_verify(src, dest, min_bytes, runs):
    """Verify a >= min_bytes file made of copies of `src` (logb cat), both backends."""
    size = src.stat().st_size
    copies = -(-min_bytes // (size - bench.FILE_HEADER_SIZE))
    bench.logb_cat([src] * copies, dest)
    try:
        fsize = dest.stat().st_size
        res = {"copies": copies, "size": fsize}
        for be in ("c", "python"):
            with _backend.using(be):
                res[be] = Stat(lambda: _verify(dest), runs)
        # The CRC work alone: every frame's CRC, over the mapped file (C backend).
        from logb.crc import crc32c_range
        from logb.scan import Report, check_header, iter_frames
        from logb.source import open_source

        with _backend.using("c"), open_source(str(dest)) as s:
            def scan():
                rep = Report(size=len(s.buf))
                return sum(1 for _ in iter_frames(s.buf, rep, check_header(s.buf, rep)))

            res["scan"] = Stat(scan, runs)
            res["crc"] = Stat(lambda: crc32c_range(s.buf, 0, len(s.buf)), runs)
        return res
    finally:
        dest.unlink()


def firmware_sizes():
    cc = shutil.which("arm-none-eabi-gcc")
    if cc is None:
        return None
    targets = {"Cortex-M0+": ["-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft"],
               "Cortex-M4F": ["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]}
    flags = ["-Os", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-ffreestanding",
             "-ffunction-sections", "-fdata-sections"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, arch in targets.items():
            for slices in (8, 1):
                total_text = total_ro = 0
                per = {}
                for src in KERNEL_SOURCES:
                    obj = pathlib.Path(tmp) / f"{src}.o"
                    subprocess.run([cc, *arch, *flags, f"-DLOGB_CRC32C_SLICES={slices}", "-I", str(CB), "-c",
                                    str(CB / src), "-o", str(obj)], check=True)
                    text = ro = 0
                    for line in subprocess.run(["arm-none-eabi-size", "-A", str(obj)], capture_output=True,
                                               text=True, check=True).stdout.splitlines():
                        p = line.split()
                        if len(p) >= 2 and p[1].isdigit():
                            if p[0].startswith(".text"):
                                text += int(p[1])
                            elif p[0].startswith(".rodata"):
                                ro += int(p[1])
                            elif p[0].startswith((".data", ".bss")) and int(p[1]):
                                raise SystemExit(f"{src}: writable static data in {p[0]}")
                    per[src] = (text, ro)
                    total_text += text
                    total_ro += ro
                rows.append((name, slices, per, total_text, total_ro))
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return rows, version


# ---------------------------------------------------------------- render

# A fresh interpreter per case: open the file, note VmRSS, reset the high-water mark
# (/proc/self/clear_refs), build every column, read VmHWM. What columns() costs above
# the opened file is then VmHWM - VmRSS, whatever the interpreter and the scan held before.
_PEAK_WORKER = """
import json, sys
from logb import _backend
_backend.use(sys.argv[2])
import logb

def status(key):
    with open('/proc/self/status') as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

f = logb.LogbFile(sys.argv[1])
stream = f.stream('can')
before = status('VmRSS:')
with open('/proc/self/clear_refs', 'w') as clear:
    clear.write('5')  # VmHWM := VmRSS
cols = stream.columns()
peak = status('VmHWM:')
result = sum(v.nbytes for v in cols.raw.values()) + cols.axis.nbytes
print(json.dumps({'before': before, 'peak': peak, 'result': result, 'records': len(cols)}))
"""


def columns_peak(files, cache, copies=4):
    """{(key, backend): worker's JSON} for columns() of `copies` copies of each file (one stream)."""
    out = {}
    for key, path in files.items():
        big = cache / f"columns-peak-{key}.logb"
        bench.logb_cat([path] * copies, big)
        try:
            for be in ("c", "python"):
                r = subprocess.run([sys.executable, "-c", _PEAK_WORKER, str(big), be], stdout=subprocess.PIPE,
                                   text=True, check=True)
                out[key, be] = dict(json.loads(r.stdout.strip().splitlines()[-1]), size=big.stat().st_size)
        finally:
            big.unlink()
    return out


def render(args, n, runs, d, files, crc, crc_pkg, dec, wr, verify, fw, elapsed, peak):
    L = []
    w = L.append
    c = _backend.C
    w("## C backend (cbridge) — issue 3\n")
    w("The same hot paths in portable C (`cbridge/`: CRC-32C, bit-field extraction and packing, "
      "transpose, tail walking) reached through cffi, against the pure-Python backend and the peers, "
      "side by side in one process. Both backends are the same package: `logb._backend.use('c' | "
      "'python')` switches between cases. Figures are medians with min–max of the runs in brackets; "
      "ratios are of medians.\n")
    w("### Method\n")
    w(f"- Rerun: `./run bench` (runs `tools/bench.py`, then this section: "
      f"`tools/bench_cbridge.py --frames {n} --runs {runs}`).")
    w(f"- Same trace and Logb files as above ({n:,} CAN frames, DATA frames of {args.batch} records; "
      f"codec none, and zstd-3 + transpose). {runs} timed runs per figure after one untimed warm-up, "
      f"warm page cache. Peers are re-timed here, beside Logb, rather than taken from the sections "
      f"above (their absolute figures drift between points of a run on a shared machine).")
    w(f"- Machine: {bench.cpu_model()}, {os.cpu_count()} logical CPUs (shared, noisy); Python "
      f"{platform.python_version()}, numpy {np.__version__}, cffi {bench.version_of('cffi')}, "
      f"crc32c {bench.version_of('crc32c')} (hardware: {crc_pkg.hardware_based}), crcmod "
      f"{bench.version_of('crcmod')}, asammdf {bench.version_of('asammdf')}, zstandard "
      f"{bench.version_of('zstandard')}; C backend CRC: {c.hw_name or 'slice-by-8'}; compiler "
      f"{_cc_version()}.")
    w(f"- Run on {datetime.date.today().isoformat()}; this section took {elapsed:.0f} s.\n")

    # CRC
    w("### CRC-32C throughput\n")
    w("64 MiB of random bytes in memory (pure Python: 1 MiB); GB = 10⁹ bytes.\n")
    size = 64 << 20
    pkg = crc["pkg"].rate(size, GB)
    rows = [
        ["`crc32c` package (hardware)", fmt(pkg, "GB/s"), "1.00×"],
        [f"logb C backend, {c.hw_name or 'no'} instruction (3-way interleaved)",
         fmt(crc["hw"].rate(size, GB), "GB/s"), x(crc["hw"].rate(size)[0], crc["pkg"].rate(size)[0])],
        ["logb C backend, slice-by-8 (`LOGB_CRC=sw`)", fmt(crc["sw"].rate(size, GB), "GB/s"),
         x(crc["sw"].rate(size)[0], crc["pkg"].rate(size)[0])],
        ["crcmod C engine (the pure-Python backend's CRC)", fmt(crc["crcmod"].rate(size, GB), "GB/s"),
         x(crc["crcmod"].rate(size)[0], crc["pkg"].rate(size)[0])],
        ["`crc32c_pure` (table in Python)", fmt(crc["pure"].rate(1 << 20, GB), "GB/s", 4),
         x(crc["pure"].rate(1 << 20)[0], crc["pkg"].rate(size)[0])],
    ]
    w(table(["implementation", "throughput (min–max)", "vs `crc32c` package"], rows))
    w("")

    # decode
    w("### Raw CAN frame columns into numpy\n")
    w("Open + every column as a numpy array, as in *Decode to numpy columns* above (Logb: "
      "`LogbFile(path).stream('can').columns()`, integer columns at their native widths; asammdf: "
      "`MDF(path)` + `select(..., raw=True)`; numpy floor: `np.fromfile` with a structured dtype + a "
      "contiguous copy of each field). The seven cases are timed round-robin (one call of each per "
      f"round, {runs} rounds), so each meets the memory the others leave; 1-minute load average "
      f"{args.load[0]:.2f} before, {args.load[1]:.2f} after.\n")
    rate = {k: v.rate(n, 1e6) for k, v in dec.items()}
    rows = [
        ["Logb codec none — C backend", fmt(rate[("c", "none")], "M/s"), f"{dec[('c', 'none')].median * 1e3:.1f}"],
        ["Logb codec none — Python backend", fmt(rate[("python", "none")], "M/s"),
         f"{dec[('python', 'none')].median * 1e3:.1f}"],
        ["asammdf, uncompressed MDF4", fmt(rate["mdf"], "M/s"), f"{dec['mdf'].median * 1e3:.1f}"],
        ["Logb zstd + transpose — C backend", fmt(rate[("c", "zstd")], "M/s"),
         f"{dec[('c', 'zstd')].median * 1e3:.1f}"],
        ["Logb zstd + transpose — Python backend", fmt(rate[("python", "zstd")], "M/s"),
         f"{dec[('python', 'zstd')].median * 1e3:.1f}"],
        ["asammdf, transposed + deflate MDF4", fmt(rate["mdf_z"], "M/s"), f"{dec['mdf_z'].median * 1e3:.1f}"],
        ["numpy floor (raw 18-byte records)", fmt(rate["numpy"], "M/s"), f"{dec['numpy'].median * 1e3:.1f}"],
    ]
    w(table(["case", "records/s (min–max)", "ms (median)"], rows))
    w("")
    r = lambda a, b: x(rate[a][0], rate[b][0])  # noqa: E731
    w(table(["ratio (records/s, of medians)", "C backend", "Python backend", "goal"], [
        ["Logb none / asammdf uncompressed", r(("c", "none"), "mdf"), r(("python", "none"), "mdf"), "≥ 3×"],
        ["Logb zstd+transpose / asammdf transposed+deflate", r(("c", "zstd"), "mdf_z"),
         r(("python", "zstd"), "mdf_z"), "≥ 2×"],
        ["Logb none / numpy floor", r(("c", "none"), "numpy"), r(("python", "none"), "numpy"), "–"],
        ["Logb zstd / numpy floor", r(("c", "zstd"), "numpy"), r(("python", "zstd"), "numpy"), "–"],
        ["C backend / Python backend, none", r(("c", "none"), ("python", "none")), "", ""],
        ["C backend / Python backend, zstd", r(("c", "zstd"), ("python", "zstd")), "", ""],
    ]))
    w("")

    w("### Peak memory of `columns()`\n")
    w("`LogbFile(path).stream('can').columns()` of a file of 4 copies of the trace's Logb file (one stream, "
      f"{peak['none', 'c']['records']:,} records), in a fresh interpreter per case: its RSS once the file is "
      "open (VmRSS), then the high-water mark reset (`/proc/self/clear_refs`) and read again once every column "
      "is built (VmHWM). *above open*: what building the columns took at its peak, over the *result*: the "
      "bytes of the raw columns and the axis it returns (run_id and session are built when first read). "
      "Goal: ≤ 1.3×.\n")
    rows = []
    for (key, be), p in peak.items():
        rows.append([f"{key}: {p['size'] / 1e6:.1f} MB", "C" if be == "c" else "Python",
                     f"{p['before'] / 1e6:.0f} MB", f"{(p['peak'] - p['before']) / 1e6:.0f} MB",
                     f"{p['result'] / 1e6:.0f} MB", f"{(p['peak'] - p['before']) / p['result']:.2f}×"])
    w(table(["file", "backend", "RSS once open", "above open at the peak", "result", "above open / result"], rows))
    w("")

    # write
    w("### Write\n")
    w(f"`logb.Writer` from the trace's numpy columns, {args.batch} records per `write_batch` "
      "(both backends write byte-identical files; tests/test_backend.py checks that).\n")
    wrate = {k: v.rate(n, 1e6) for k, v in wr.items()}
    w(table(["writer", "C backend (M records/s)", "Python backend (M records/s)", "C / Python"], [
        ["codec none", fmt(wrate[("c", "none")], ""), fmt(wrate[("python", "none")], ""),
         x(wrate[("c", "none")][0], wrate[("python", "none")][0])],
        ["zstd + transpose", fmt(wrate[("c", "zstd")], ""), fmt(wrate[("python", "zstd")], ""),
         x(wrate[("c", "zstd")][0], wrate[("python", "zstd")][0])],
    ]))
    w("")

    # verify
    w("### `logb verify` on a ≥ 1 GB file\n")
    w("`logb cat` of copies of the trace's Logb file (built under out/bench/, deleted afterwards), then "
      "`logb verify FILE` in-process: scan with every frame's CRC-32C, then every DATA frame decoded as "
      "far as anything can reject it (codec, filter, raw_size, tails, the time axis range, UTF-8). "
      "*scan only* is the CRC-checked frame walk alone; *CRC only* one CRC-32C over the whole mapped "
      "file. GB = 10⁹ bytes.\n")
    rows = []
    for key, label in (("none", "codec none"), ("zstd", "zstd + transpose")):
        v = verify[key]
        sz = v["size"]
        rows.append([f"{label}: {sz / GB:.2f} GB ({v['copies']} copies)", fmt(v["c"].rate(sz, GB), "GB/s"),
                     fmt(v["python"].rate(sz, GB), "GB/s"), x(v["python"].median, v["c"].median),
                     fmt(v["scan"].rate(sz, GB), "GB/s"), fmt(v["crc"].rate(sz, GB), "GB/s")])
    w(table(["file", "verify, C backend", "verify, Python backend", "C / Python", "scan only (C)",
             "CRC only (C)"], rows))
    w("")
    small = [[f"{k}: {files[k].stat().st_size / MB:.1f} MB", fmt(dec[("c", f"verify-{k}")].rate(
        files[k].stat().st_size, GB), "GB/s"), fmt(dec[("python", f"verify-{k}")].rate(
            files[k].stat().st_size, GB), "GB/s")] for k in ("none", "zstd")]
    w("The same on the trace's own files (cache-warm):\n")
    w(table(["file", "verify, C backend", "verify, Python backend"], small))
    w("")

    # firmware
    w("### Firmware builds of the same C\n")
    if fw is None:
        w("Not measured: `arm-none-eabi-gcc` is not installed on this machine (Debian: "
          "`apt-get install gcc-arm-none-eabi`; `./run` installs it when it can).\n")
    else:
        rows_fw, version = fw
        w(f"The portable kernels (`crc32c.c bits.c transpose.c tails.c scan.c decode.c`) compiled with `{version}` "
          "at `-Os -std=c99 -pedantic -Wall -Wextra -Werror -ffreestanding` (tests/test_cbridge.py "
          "builds the same and fails on any warning). Bytes of `.text` / `.rodata`; `.data` and "
          "`.bss` are 0 in every object. `LOGB_CRC32C_SLICES=1` trades slice-by-8 for a bytewise "
          "CRC with a 1 KiB table. (The MicroPython glue in `cbridge/micropython/` is built into "
          "real MicroPython 1.28 by tools/micropython_build.py; its natmod sizes are in the firmware "
          "section.)\n")
        rows = []
        for name, slices, per, tt, ro in rows_fw:
            rows.append([name, f"slice-by-{slices}" if slices == 8 else "bytewise",
                         *(f"{per[s][0]} / {per[s][1]}" for s in KERNEL_SOURCES),
                         f"**{tt} / {ro}**"])
        w(table(["target", "CRC", *KERNEL_SOURCES, "total text / rodata"], rows))
        w("")

    # what this shows
    w("### What this shows\n")
    cn, cz = rate[("c", "none")][0] / rate["mdf"][0], rate[("c", "zstd")][0] / rate["mdf_z"][0]
    v = verify["none"]
    frames = v["copies"] * len(_frames_per_copy(files["none"]))
    per_frame_us = (v["c"].median - v["size"] / v["crc"].rate(v["size"])[0]) / frames * 1e6
    w(f"With the C backend, decoding the {n:,}-frame trace to columns runs at {cn:.2f}× asammdf on "
      f"uncompressed files and {cz:.2f}× on compressed ones (zstd+transpose against transposed+deflate "
      f"MDF4), {rate[('c', 'none')][0] / rate[('python', 'none')][0]:.1f}× / "
      f"{rate[('c', 'zstd')][0] / rate[('python', 'zstd')][0]:.1f}× the pure-Python backend, and "
      f"{rate[('c', 'none')][0] / rate['numpy'][0]:.2f}× the numpy floor (which returns "
      f"{args.record_bytes['numpy']:.0f} bytes per record against Logb's {args.record_bytes['logb']:.0f}: "
      f"its fields at their native widths, the raw µs field included, plus the int64 axis; run_id and "
      f"session are spread out only when read). The CRC runs at "
      f"{crc['hw'].rate(size)[0] / crc['pkg'].rate(size)[0]:.2f}× the `crc32c` package and "
      f"{crc['hw'].rate(size)[0] / crc['crcmod'].rate(size)[0]:.0f}× crcmod. `logb verify` of a "
      f"{v['size'] / GB:.1f} GB file runs at {v['c'].rate(v['size'], GB)[0]:.2f} GB/s "
      f"({v['python'].median / v['c'].median:.1f}× the Python backend); its CRC work alone runs at "
      f"{v['crc'].rate(v['size'], GB)[0]:.1f} GB/s, so what is left is the window reads and per-frame work "
      f"in Python (the frame table, INDEX entries, the first record kept per frame), about "
      f"{per_frame_us:.0f} µs per DATA frame of {args.batch} records: larger frames, or a frame table "
      f"kept as arrays, would take it further (the `logb verify` section below measures it against its "
      f"floors). One machine, one synthetic trace, warm caches: the ratios are the point.\n")
    return "\n".join(L)


_FRAMES = {}


def _frames_per_copy(path):
    if path not in _FRAMES:
        with logb.LogbFile(str(path)) as f:
            _FRAMES[path] = [fl for s in f.streams.values() for fl in s.frames]
    return _FRAMES[path]


def _cc_version():
    cc = os.environ.get("CC") or shutil.which("cc") or "cc"
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7, help="timed runs per figure, at least 5 (default 7)")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--cache", type=pathlib.Path, default=ROOT / "out" / "bench")
    ap.add_argument("--verify-bytes", type=float, default=1.0e9, help="size of the verify files (default 1 GB)")
    ap.add_argument("--output", type=pathlib.Path, default=ROOT / "BENCHMARKS.md")
    args = ap.parse_args(argv)
    if _backend.load_c() is None:
        raise SystemExit(f"the C backend is not available: {_backend.load_error}")
    runs = max(5, args.runs)
    started = time.perf_counter()
    n = args.frames
    d = bench.ensure_trace(args.cache, n)
    rec = np.fromfile(d / "trace.bin", bench.REC)
    files = {"none": d / "logb_none.logb", "zstd": d / "logb_zstd.logb"}
    for key, (codec, tr) in {"none": (Codec.none, False), "zstd": (Codec.zstd, True)}.items():
        if not files[key].exists():
            bench.write_logb(files[key], rec, codec, tr, args.batch)
        for be in ("c", "python"):
            with _backend.using(be):
                bench.check_roundtrip(files[key], rec)
    bench.log("cbridge: crc ...")
    crc, crc_pkg = crc_cases(runs)
    bench.log("cbridge: decode + verify (trace files) ...")
    before = os.getloadavg()[0]
    dec = decode_cases(d, runs, files)
    args.load = (before, os.getloadavg()[0])
    args.record_bytes = {name: sum(col.nbytes for col in fn().values()) / n for name, fn in (
        ("logb", lambda: bench.decode_logb(files["none"])), ("numpy", lambda: bench.decode_numpy(d / "trace.bin")))}
    bench.log("cbridge: write ...")
    wr = write_cases(rec, runs, args.batch)
    verify = {}
    for key in ("none", "zstd"):
        bench.log(f"cbridge: verify >= {args.verify_bytes / GB:.1f} GB ({key}) ...")
        verify[key] = big_verify(files[key], args.cache / f"verify-{key}-1g.logb", int(args.verify_bytes), runs)
    bench.log("cbridge: firmware sizes ...")
    fw = firmware_sizes()
    bench.log("cbridge: columns() peak memory ...")
    peak = columns_peak(files, args.cache)
    elapsed = time.perf_counter() - started
    section = render(args, n, runs, d, files, crc, crc_pkg, dec, wr, verify, fw, elapsed, peak)
    benchmd.splice(args.output, "cbridge", section)
    bench.log(f"cbridge: wrote its section of {args.output} in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

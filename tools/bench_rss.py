"""Peak memory of decoding a CAN file many times larger than a worker's memory budget.

Usage: python tools/bench_rss.py [--budget-mb 200] [--factor 10] [--frames N] [--cache DIR]
                                 [--formats parquet,csv] [--output FILE] [--keep]
       (--output replaces the `rss` block of that file, e.g. BENCHMARKS.md, tools/benchmd.py)

The budget: a worker that decodes files is given --budget-mb of memory (200 MB, the
goal's bound on peak RSS), and the file is --factor times that (10×: 2 GB). Peak RSS
is `ru_maxrss` of a fresh interpreter, as its launcher sees it: the whole process
(interpreter, numpy, cantools, pyarrow and what the decode holds), not a Python-heap
estimate. RLIMIT_AS is not used: it bounds address space, which numpy and thread
stacks reserve without touching, so it says nothing of RSS.

The file: the shared bench trace (tools/bench.py's, `trace.bin` + `trace.dbc`, as
tools/bench_can.py uses) recorded with CanRecorder as a raw bus stream with the DBC
attached (zstd + transpose, 4096 records per DATA frame), copy after copy with the
time moving on, until it is --factor × the budget: deterministic, written once and
cached (`rss-<bytes>.logb` beside the trace; --keep keeps it, else it is deleted).

Cases, each in its own fresh interpreter:
- two floors, to say where the peak is: the imports and compile_dbc of the
  trace's DBC; then LogbFile(FILE) alone (the scan and the frame table it keeps);
- decode_batches(f, source="raw"): every signal of every frame, batch by batch,
  nothing kept;
- `logb decode FILE --dbc trace.dbc -o out.parquet`: the wide table of every
  signal written row group by row group (the CLI's two passes: a survey, then the
  merge by time);
- the same to CSV.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
REC = np.dtype([("ts_us", "<u4"), ("id", "<u4"), ("dlc", "u1"), ("flags", "u1"), ("data", "u1", (8,))])

# Runs argv as a child and prints its peak RSS (the child's own: a fork of a large
# parent would inherit the parent's high-water mark), time and exit status as JSON.
_LAUNCHER = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)
out = r.stdout.strip().splitlines()
print(json.dumps({"rc": r.returncode, "seconds": time.perf_counter() - t, "last": out[-1] if out else "",
                  "maxrss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""

_IMPORTS = """
import sys
import logb
from logb.can.decode import decode_batches
from logb.can.dbc import compile_dbc
print(len(compile_dbc(sys.argv[1]).entries))
"""

_OPEN = """
import sys
import logb
from logb.can.decode import decode_batches
with logb.LogbFile(sys.argv[1]) as f:
    print(sum(len(s.frames) for s in f.streams.values()))
"""

_BATCHES = """
import sys
import logb
from logb.can.decode import decode_batches
rows = 0
with logb.LogbFile(sys.argv[1]) as f:
    for part in decode_batches(f, source="raw"):
        rows += sum(len(d) for d in part)
print(rows)
"""


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def big_file(d, target):
    """The raw bus + DBC recording of the trace, copies one after another, of >= target bytes."""
    import logb
    from logb.can.dbc import compile_dbc
    from logb.can.record import CanRecorder

    path = d / f"rss-{target}.logb"
    stamp = d / f"rss-{target}.json"
    src = (d / "trace.bin").stat()
    want = {"trace_size": src.st_size, "trace_mtime": src.st_mtime, "logb": logb.__version__}
    if path.exists() and stamp.exists() and json.loads(stamp.read_text()).get("want") == want:
        return path, json.loads(stamp.read_text())["copies"]
    rec = np.fromfile(d / "trace.bin", REC)
    compiled = compile_dbc(d / "trace.dbc")
    ts = rec["ts_us"].astype(np.int64)
    step = int(ts.max()) + 1000  # the next copy starts 1 ms after this one's last frame
    log(f"writing {path.name} (>= {target / 1e9:.1f} GB) ...")
    copies = 0
    with open(path, "wb") as fh, logb.Writer(fh, time_base="relative") as w:
        with CanRecorder(w, None) as r:
            while fh.tell() < target:
                r.add(ts + copies * step, rec["id"], rec["flags"], rec["dlc"], rec["data"])
                copies += 1
        w.attach(compiled.name, "application/x-dbc", compiled.attachment_bytes())
    stamp.write_text(json.dumps({"want": want, "copies": copies}))
    return path, copies


def measure(argv):
    r = subprocess.run([sys.executable, "-c", _LAUNCHER, *map(str, argv)], stdout=subprocess.PIPE, text=True,
                       check=True)
    info = json.loads(r.stdout.strip().splitlines()[-1])
    if info["rc"] not in (0,):
        raise SystemExit(f"{argv}: exit {info['rc']}")
    return info


def run(d, budget, factor, keep=False, formats=("parquet", "csv")):
    path, copies = big_file(d, int(budget * factor))
    n = json.loads((d / "meta.json").read_text())["n_frames"]
    res = {"budget": budget, "factor": factor, "size": path.stat().st_size, "copies": copies, "frames": n * copies,
           "cases": [], "load": [os.getloadavg()[0]]}
    logb_cli = [sys.executable, "-m", "logb.cli.main"]
    try:
        cases = [("floor: the imports and compile_dbc(trace.dbc)", [sys.executable, "-c", _IMPORTS, d / "trace.dbc"]),
                 ("floor: `LogbFile(FILE)` (scan), nothing decoded", [sys.executable, "-c", _OPEN, path]),
                 ("decode_batches(f, source=\"raw\"), nothing kept", [sys.executable, "-c", _BATCHES, path])]
        for ext in formats:
            out = d / f"rss-out.{ext}"
            cases.append((f"`logb decode FILE --dbc trace.dbc -o out.{ext}`",
                          [*logb_cli, "decode", path, "--dbc", d / "trace.dbc", "-o", out]))
        for label, argv in cases:
            log(f"rss: {label} ...")
            info = measure(argv)
            out = pathlib.Path(argv[-1]) if str(argv[-1]).startswith(str(d / "rss-out")) else None
            if out is not None:
                info["out_size"] = out.stat().st_size
                out.unlink()
            log(f"  {info['maxrss'] / 1e6:.0f} MB, {info['seconds']:.0f} s: {info['last']}")
            res["cases"].append((label, info))
        res["load"].append(os.getloadavg()[0])
    finally:
        if not keep:
            path.unlink(missing_ok=True)
            (d / f"rss-{int(budget * factor)}.json").unlink(missing_ok=True)
    return res


def section(res):
    L = ["## Peak memory: a file 10× the worker's memory budget\n" if res["factor"] == 10 else
         f"## Peak memory: a file {res['factor']}× the worker's memory budget\n",
         f"The worker's memory budget is {res['budget'] / 1e6:.0f} MB (the goal's bound on peak RSS); the file "
         f"is {res['factor']}× that: the shared trace recorded {res['copies']} times one after another as a raw "
         f"bus stream with the DBC attached (`CanRecorder`, zstd + transpose), {res['size'] / 1e9:.2f} GB, "
         f"{res['frames']:,} frames (`tools/bench_rss.py`, deterministic). Each case is a fresh interpreter; "
         "its peak RSS is `ru_maxrss` as its launcher sees it: the whole process (interpreter, numpy, "
         "`cantools.database`, pyarrow where Parquet is written) and whatever the decode holds. A DBC is parsed "
         "with `cantools.database` alone: cantools' package `__init__` would import python-can, whose `can.io` "
         "imports asammdf, pandas and pyarrow (92 MB here, none of it used to parse a DBC). The floors say where "
         "a decode's peak is: the imports, then what `LogbFile` holds once it has scanned the file (its frame "
         "table: Python objects per DATA frame, so it grows with the file). `logb decode` reads the file twice "
         "(a survey of what there is to write, then every stream's batches merged by time) and writes Parquet "
         "row group by row group, CSV as it goes. Parquet's floor: pyarrow's ParquetWriter keeps ~2 KB of "
         "metadata per column chunk "
         "until it closes, and builds each row group dense (8 bytes and a bit per cell, empty or not), so the "
         "wide table's row groups are sized to balance the two and its peak grows as the square root of the "
         "rows; CSV's does not grow. 2 cores, shared: the 1-minute load average was "
         f"{res['load'][0]:.1f} at the start and {res['load'][-1]:.1f} at the end.\n",
         "| case | peak RSS | goal | output | time |", "| --- | --- | --- | --- | --- |"]
    for label, info in res["cases"]:
        size = f"{info['out_size'] / 1e9:.2f} GB" if "out_size" in info else "—"
        goal = "—" if label.startswith("floor") else f"≤ {res['budget'] / 1e6:.0f} MB"
        L.append(f"| {label} | {info['maxrss'] / 1e6:.0f} MB | {goal} | {size} | "
                 f"{info['seconds']:.0f} s |")
    L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget-mb", type=float, default=200)
    ap.add_argument("--factor", type=float, default=10, help="file size in budgets (default 10)")
    ap.add_argument("--frames", type=int, default=1_000_000, help="the bench trace's length")
    ap.add_argument("--cache", type=pathlib.Path, default=ROOT / "out" / "bench")
    ap.add_argument("--keep", action="store_true", help="keep the large file for the next run")
    ap.add_argument("--formats", default="parquet,csv", help="the `logb decode` outputs to measure")
    ap.add_argument("--output", type=pathlib.Path, help="replace the `rss` block of this file (default: print)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tools"))
    import benchmd
    from bench import ensure_trace

    d = ensure_trace(args.cache, args.frames)
    t = time.perf_counter()
    md = section(run(d, int(args.budget_mb * 1e6), args.factor, args.keep,
                     tuple(x for x in args.formats.split(",") if x)))
    log(f"rss: {time.perf_counter() - t:.0f} s")
    if args.output:
        benchmd.splice(args.output, "rss", md)
    else:
        print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CAN signal decoding benchmark: all 126 signals of the shared trace to
physical columns, Logb vs asammdf vs cantools vs a numpy floor, side by side.

Usage: python tools/bench_can.py [--frames N] [--runs R] [--copies 1,4,16] [--cache DIR] [--output FILE]
       (tools/bench.py runs it and puts its section into the `can` block of
       BENCHMARKS.md, tools/benchmd.py; --output does the same to that file)

Cases, each ending with every signal of every frame as a physical column:
- Logb, per-message streams: LogbFile(path) + logb.can.decode.decode_file(f)
  (the signals are fields of the file; no DBC involved);
- Logb, raw bus stream + the DBC attached to the file: LogbFile(path) +
  decode_file(f, source="raw") (group frames by id, logb.fields over each
  group's payloads); the embedded DBC compiled with cantools once per process
  and kept by its bytes (decode.attached_dbc), and, as its own case, compiled
  in every run (that cache cleared first);
- asammdf: MDF(trace.mf4) + extract_bus_logging(trace.dbc) + select() of
  every signal (physical, value tables as strings);
- cantools: Message.decode per frame (frames pre-loaded as Python bytes,
  message looked up in a dict; one dict per frame kept);
- numpy floor: np.fromfile(trace.bin) + a hand-written vectorised decode
  (per id: one little- and one big-endian uint64 view of the payloads, then
  shift, mask, sign-extend, scale and offset per signal; no value tables).

Then peak RSS of streaming decode (logb.can.decode.decode_batches, keeping
nothing) and of the whole decode_file, each in a fresh interpreter, on files of
1, 4, 16 copies of each Logb file (`logb cat` semantics): flat RSS as the file
grows is the property.
"""

import argparse
import gc
import json
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

import logb

ROOT = pathlib.Path(__file__).resolve().parent.parent
REC = np.dtype([("ts_us", "<u4"), ("id", "<u4"), ("dlc", "u1"), ("flags", "u1"), ("data", "u1", (8,))])


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def timed(fn, runs, warmup=True):
    if warmup:
        fn()
    times = []
    for _ in range(runs):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


# ---------------------------------------------------------------- files

def ensure_files(d):
    """Logb recordings of trace.bin (written once, cached next to the trace)."""
    from logb.can.dbc import compile_dbc
    from logb.can.record import CanRecorder

    full, raw = d / "can_messages.logb", d / "can_raw_dbc.logb"
    stamp = d / "can_files.json"
    src = (d / "trace.bin").stat()
    want = {"trace_mtime": src.st_mtime, "trace_size": src.st_size, "logb": logb.__version__, "layout": 2}
    if full.exists() and raw.exists() and stamp.exists():
        try:
            if json.loads(stamp.read_text()) == want:
                return full, raw
        except ValueError:
            pass
    rec = np.fromfile(d / "trace.bin", REC)
    compiled = compile_dbc(d / "trace.dbc")
    log(f"writing {full.name} and {raw.name} ...")
    for path, dbc in ((full, compiled), (raw, None)):
        with logb.Writer(str(path), time_base="relative") as w:
            with CanRecorder(w, dbc) as r:
                r.add(rec["ts_us"], rec["id"], None, rec["dlc"], rec["data"])
            if dbc is None:
                w.attach(compiled.name, "application/x-dbc", compiled.attachment_bytes())
    stamp.write_text(json.dumps(want))
    return full, raw


# ---------------------------------------------------------------- cases

def logb_messages(path):
    from logb.can.decode import decode_file

    with logb.LogbFile(str(path)) as f:
        return decode_file(f)


def logb_raw(path, compile_dbc=False):
    from logb.can import decode
    from logb.can.decode import decode_file

    if compile_dbc:  # as a fresh process would: no compiled DBC kept
        decode._compile_attached.cache_clear()
    with logb.LogbFile(str(path)) as f:
        return decode_file(f, source="raw")


def asammdf_decode(d):
    from asammdf import MDF

    mdf = MDF(str(d / "trace.mf4"))
    try:
        out = mdf.extract_bus_logging({"CAN": [(str(d / "trace.dbc"), 0)]})
        sel = [(ch.name, gi, ci) for gi, grp in enumerate(out.groups) for ci, ch in enumerate(grp.channels)
               if ci != out.masters_db.get(gi)]
        sigs = out.select(sel)
        out.close()
    finally:
        mdf.close()
    return sigs


def cantools_frames(d):
    import cantools

    db = cantools.database.load_file(str(d / "trace.dbc"))
    rec = np.fromfile(d / "trace.bin", REC)
    by_key = {(m.frame_id | (0x80000000 if m.is_extended_frame else 0)): m for m in db.messages}
    frames = list(zip(rec["id"].tolist(), (bytes(r) for r in rec["data"])))
    return by_key, frames


def cantools_decode(by_key, frames):
    out = {}
    for key, data in frames:
        m = by_key.get(key)
        if m is not None:
            out.setdefault(m.name, []).append(m.decode(data))
    return out


def floor_plan(d):
    """Per message: (key, [(name, big, shift, mask, sign, scale, offset)])."""
    import cantools

    from logb.can.dbc import motorola_offset

    db = cantools.database.load_file(str(d / "trace.dbc"))
    plan = []
    for m in db.messages:
        sigs = []
        for s in m.signals:
            big = s.byte_order == "big_endian"
            shift = 64 - motorola_offset(s.start) - s.length if big else s.start
            sigs.append((s.name, big, shift, (1 << s.length) - 1, (1 << (s.length - 1)) if s.is_signed else 0,
                         s.scale, s.offset))
        plan.append((m.name, m.frame_id | (0x80000000 if m.is_extended_frame else 0), sigs))
    return plan


def numpy_floor(d, plan):
    rec = np.fromfile(d / "trace.bin", REC)
    ids = rec["id"]
    words = np.ascontiguousarray(rec["data"]).view("<u8")[:, 0]  # each payload as one little-endian word
    out = {}
    for name, key, sigs in plan:
        rows = np.flatnonzero(ids == key)
        le = words[rows]
        be = le.byteswap()
        cols = {"t": rec["ts_us"][rows]}
        for sname, big, shift, mask, sign, scale, offset in sigs:
            v = (be if big else le) >> np.uint64(shift)
            v &= np.uint64(mask)
            if sign:
                v ^= np.uint64(sign)
                v -= np.uint64(sign)
                v = v.view(np.int64)
            if scale == 1 and offset == 0:
                cols[sname] = v
            else:
                x = v.astype(np.float64)
                x *= float(scale)
                x += float(offset)
                cols[sname] = x
        out[name] = cols
    return out


# ---------------------------------------------------------------- checks

def check_same(d, logb_out, floor_out):
    """Every Logb column equals the floor's (and so cantools', which the tests prove)."""
    n = 0
    for dec in logb_out:
        ref = floor_out[dec.message]
        assert np.array_equal(dec.axis, ref["t"].astype(np.int64)), dec.message
        for name, col in dec.phys.items():
            assert np.array_equal(np.asarray(col, np.float64), np.asarray(ref[name], np.float64)), (dec.message, name)
            n += 1
    return n


# ---------------------------------------------------------------- peak RSS

# A fresh interpreter per measurement: LogbFile + decode_batches (or decode_file),
# keeping nothing. bench.py's tiny launcher starts it and reports its peak RSS (a
# child forked from this large process would inherit this one's high-water mark).
_RSS_WORKER = """
import json, sys, time
import logb
from logb.can.decode import decode_batches, decode_file
mode, source, path = sys.argv[1:4]
t = time.perf_counter()
rows = 0
with logb.LogbFile(path) as f:
    if mode == "batches":
        for part in decode_batches(f, source=source):
            rows += sum(len(d) for d in part)
    else:
        rows = sum(len(d) for d in decode_file(f, source=source))
print(json.dumps({"rows": rows, "seconds": time.perf_counter() - t}))
"""


def rss(d, full, raw, copies):
    """[(file label, size, mode, copies, {rows, seconds, maxrss})]; the copies are deleted after."""
    from bench import _LAUNCHER, logb_cat

    out = []
    for label, src, source in (("raw bus + DBC", raw, "raw"), ("per-message streams", full, "messages")):
        for k in copies:
            path = d / f"can_rss_{source}_x{k}.logb"
            logb_cat([src] * k, path)
            try:
                for mode in ("batches", "whole"):
                    log(f"can rss: {label} x{k} {mode} ...")
                    r = subprocess.run([sys.executable, "-c", _LAUNCHER, sys.executable, "-c", _RSS_WORKER, mode,
                                        source, str(path)], stdout=subprocess.PIPE, text=True, check=True)
                    out.append((label, path.stat().st_size, mode, k, json.loads(r.stdout.strip().splitlines()[-1])))
            finally:
                path.unlink()
    return out


# ---------------------------------------------------------------- main

def run(d, runs, cantools_runs=3, copies=(1, 4, 16)):
    """Time every case on the cached trace directory `d`; returns a dict of results."""
    n = json.loads((d / "meta.json").read_text())["n_frames"]
    full, raw = ensure_files(d)
    plan = floor_plan(d)
    floor_out = numpy_floor(d, plan)
    signals = check_same(d, logb_messages(full), floor_out)
    assert check_same(d, logb_raw(raw), floor_out) == signals
    res = {"frames": n, "signals": signals, "sizes": {"messages": full.stat().st_size, "raw": raw.stat().st_size}}
    cases = [
        ("logb_messages", "Logb, per-message streams: open + decode_file()", lambda: logb_messages(full), runs),
        ("logb_raw", "Logb, raw bus stream + embedded DBC: open + decode_file(source='raw')",
         lambda: logb_raw(raw), runs),
        ("logb_raw_dbc", "Logb, raw bus stream + embedded DBC compiled in the run: open + decode_file(source='raw')",
         lambda: logb_raw(raw, compile_dbc=True), runs),
        ("asammdf", "asammdf: MDF(trace.mf4) + extract_bus_logging + select(all signals)",
         lambda: asammdf_decode(d), runs),
        ("numpy", "numpy floor: fromfile(trace.bin) + vectorised decode (no value tables)",
         lambda: numpy_floor(d, plan), runs),
    ]
    for key, label, fn, r in cases:
        log(f"can decode: {label} ...")
        res[key] = {"label": label, "times": timed(fn, r)}
    by_key, frames = cantools_frames(d)
    log("can decode: cantools per frame ...")
    res["cantools"] = {"label": "cantools: Message.decode per frame (value tables decoded)",
                       "times": timed(lambda: cantools_decode(by_key, frames), cantools_runs, warmup=False)}
    res["rss"] = rss(d, full, raw, copies) if copies else []
    return res


def section(res):
    """BENCHMARKS.md section."""
    n = res["frames"]
    med = {k: statistics.median(v["times"]) for k, v in res.items() if isinstance(v, dict) and "times" in v}
    L = ["## CAN signals to physical columns\n",
         f"All {res['signals']} signals of the shared trace's DBC (`trace.dbc`, 20 messages) for all "
         f"{n:,} frames, as physical columns (scaled numbers; the timestamp column too). Each case "
         "starts from a file in the page cache and ends with every column as a numpy array (cantools: a "
         "dict per frame). Logb's columns are checked equal to the numpy floor's before timing (and the "
         "test suite proves them equal to cantools' on every signal). Logb files: written once with "
         "`logb.can.record.CanRecorder` (zstd + transpose, 4096 records per DATA frame): "
         f"`can_messages.logb` (raw bus stream + 20 per-message streams + the DBC, "
         f"{res['sizes']['messages'] / 1e6:.1f} MB) and `can_raw_dbc.logb` (raw bus stream + the DBC, "
         f"{res['sizes']['raw'] / 1e6:.1f} MB). From the raw bus stream, decode_file compiles the attached "
         "DBC once per process and keeps it by its bytes (`decode.attached_dbc`, as the lake keeps its DBCs): "
         "the first case reuses it run after run, the second clears it first and so parses the DBC with "
         "cantools in every run, as asammdf's case does. Median (min–max) of the runs; cantools "
         f"{len(res['cantools']['times'])} runs without warm-up, the others {len(res['numpy']['times'])} "
         f"after one.\n",
         "| case | frames/s (min–max) | ms per run (min–max) |", "| --- | --- | --- |"]
    for key in ("logb_messages", "logb_raw", "logb_raw_dbc", "asammdf", "cantools", "numpy"):
        t = res[key]["times"]
        L.append(f"| {res[key]['label']} | {n / statistics.median(t) / 1e6:.2f} M "
                 f"({n / max(t) / 1e6:.2f}–{n / min(t) / 1e6:.2f}) | {statistics.median(t) * 1e3:.0f} "
                 f"({min(t) * 1e3:.0f}–{max(t) * 1e3:.0f}) |")
    L += ["", "| ratio (of medians) | value | goal |", "| --- | --- | --- |"]
    for key, name in (("logb_messages", "per-message streams"), ("logb_raw", "raw bus + DBC"),
                      ("logb_raw_dbc", "raw bus + DBC compiled in the run")):
        L.append(f"| Logb {name} vs asammdf | {med['asammdf'] / med[key]:.2f}× faster | ≥ 4× |")
        L.append(f"| Logb {name} vs cantools | {med['cantools'] / med[key]:.1f}× faster | ≥ 30× |")
        L.append(f"| Logb {name} / numpy floor (time) | {med[key] / med['numpy']:.2f}× | ≤ 1.5× |")
    L.append("")
    if res.get("rss"):
        L += ["### Peak memory: streaming decode\n",
              "`logb.can.decode.decode_batches(f, source=...)` (lists of `Decoded` of about 65,536 frames "
              "each, consumed and dropped) against the whole `decode_file(f, source=...)`, on files of "
              "copies of the two Logb files above (`logb cat` semantics: one stream, many segments). Each "
              "row is a fresh interpreter; its peak RSS is `ru_maxrss` as its launcher sees it, which includes the "
              "interpreter, numpy and cantools (importing cantools alone is ~95 MB here) and whatever of "
              "the file the source holds. Flat RSS as the file grows is the property; the goal is "
              "≤ 200 MB for a file 10× the machine's free memory.\n",
              "| file | size | decode | peak RSS | rows | time |", "| --- | --- | --- | --- | --- | --- |"]
        for label, size, mode, k, info in res["rss"]:
            what = "decode_batches (streaming)" if mode == "batches" else "decode_file (whole)"
            L.append(f"| {label}, ×{k} | {size / 1e6:.0f} MB | {what} | {info['maxrss'] / 1e6:.0f} MB | "
                     f"{info['rows']:,} | {info['seconds']:.1f} s |")
        L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--copies", default="1,4,16", help="file sizes (copies of the trace) for peak RSS; '' skips")
    ap.add_argument("--cache", type=pathlib.Path, default=ROOT / "out" / "bench")
    ap.add_argument("--output", type=pathlib.Path,
                    help="replace the `can` block of this file, e.g. BENCHMARKS.md (default: print it)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tools"))
    import benchmd
    from bench import ensure_trace

    d = ensure_trace(args.cache, args.frames)
    copies = tuple(int(c) for c in args.copies.split(",") if c)
    md = section(run(d, max(5, args.runs), copies=copies))
    if args.output:
        benchmd.splice(args.output, "can", md)
    else:
        print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

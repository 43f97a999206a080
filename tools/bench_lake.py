"""A fleet's recordings into a hive-partitioned Parquet data lake: `logb lake` (logb.lake.ingest,
on Dask) against the CANedge-style pipeline (asammdf + pandas), side by side in one run.

Usage: python tools/bench_lake.py [--recordings 100] [--per-recording 20000] [--devices 5] [--days 4]
                                  [--runs 2] [--budget-mb 100] [--factor 10] [--quick] [--frames N]
                                  [--cache DIR] [--output FILE] [--keep]
       (tools/bench.py runs it; --output replaces the `lake` block of that file, tools/benchmd.py)

The fleet (written once, cached beside the shared bench trace, tools/bench.py's): --recordings
slices of the trace (`trace.bin`, 20 ids, `trace.dbc`'s 126 signals), --per-recording frames
each, dated, spread over --devices devices and --days days (a few recordings per device and
day, none across midnight), in DEVICE/DATE/ folders. Each is written twice:
- as a Logb logger with the DBC writes it (logb.can.formats.write_logb, what `logb import
  --dbc` does: the raw bus stream, the 20 per-message streams and the DBC attached), under
  logb/DEVICE/DATE/NNNNNNNN.logb;
- as the MDF4 a CANedge user has (logb.can.formats.mdf4.write, what `logb export --format
  mdf4` calls: ASAM bus logging, CAN_DataFrame, uncompressed as a CANedge writes .MF4, no DBC
  attached), under mf4/DEVICE/DATE/NNNNNNNN.mf4.

Cases, each a fresh interpreter (its peak RSS is ru_maxrss as its launcher sees it, the
whole process tree's largest process; tools/bench_rss.py's launcher), into an empty lake:
- baseline: per MDF4 file, MDF(path).extract_bus_logging({"CAN": [(trace.dbc, 0)]}), then
  per message get_group(time_as_date=True) (to_dataframe of that message's channels, no
  resampling) → pandas → df.to_parquet (pyarrow, its default snappy) at
  LAKE/DEVICE/MESSAGE/YYYY/MM/DD/NNNNNNNN.parquet, one file at a time;
- logb: logb.lake.ingest(fleet/logb, LAKE) with workers=1 (Dask's synchronous scheduler),
  workers=2 threads and workers=2 processes; the DBC is the one each file carries. It writes
  signals/ (what the baseline writes), frames/ (every raw frame) and compacts small parts.
Rates are over each case's own clock (the baseline's loop, ingest's summary.seconds); the
wall time adds the interpreter's start and imports. The baseline's and the lake's signal
rows are checked equal (every frame's message decoded once) before anything is reported.

Peak memory: ONE recording --factor times a worker's memory budget (--budget-mb 100): the
trace again and again, time moving on, written as write_logb writes (cached while it is
used, deleted after unless --keep), ingested with workers=2 processes: the ingesting process
(planning, commits, compaction) and its largest pool worker are reported apart, with the
floor (a fresh interpreter that imported what a worker imports). 10 × 100 MB = 1 GB by
default; --quick takes 2 budgets.

Nothing here passes or fails: it reports.
"""

import argparse
import datetime
import json
import os
import pathlib
import re
import resource
import shutil
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
REC = np.dtype([("ts_us", "<u4"), ("id", "<u4"), ("dlc", "u1"), ("flags", "u1"), ("data", "u1", (8,))])
FLEET_LAYOUT = 1  # bump when what fleet() writes changes: cached fleets are then rewritten
DAY0 = datetime.datetime(2024, 6, 3, tzinfo=datetime.timezone.utc)  # the fleet's first day (a Monday)
US_PER_DAY = 86_400 * 10**6
FIRST_START_US = 7 * 3600 * 10**6  # the first recording of a day starts at 07:00 UTC
GAP_US = 60 * 10**6  # between one recording's last frame and the next one's first
MESSAGE = re.compile(r"message (\S+)")  # extract_bus_logging's group comment: "CAN1 - message MA_C0 0xC0 EXT=False"
LOGB_CASES = ((1, "threads"), (2, "threads"), (2, "processes"))
BIG_CASES = ((2, "processes"),)  # the large recording: the ingesting process and a pool worker apart


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def _kb_to_bytes(kb):
    return kb * 1024  # Linux reports ru_maxrss in KiB


# ---------------------------------------------------------------- the fleet

def _want(d, **more):
    import logb

    src = (d / "trace.bin").stat()
    return {"trace_size": src.st_size, "trace_mtime": src.st_mtime, "logb": logb.__version__,
            "layout": FLEET_LAYOUT, **more}


def _frames(d):
    """The trace as (µs after its first frame, 29-bit ids, flags, dlc, payloads)."""
    from logb.can.layout import FLAG_EXTENDED

    rec = np.fromfile(d / "trace.bin", REC)
    ts = rec["ts_us"].astype(np.int64)
    flags = np.where(rec["id"] >> 31, np.uint8(FLAG_EXTENDED), np.uint8(0))
    return ts - ts[0], rec["id"] & np.uint32(0x1FFFFFFF), flags, rec["dlc"], np.ascontiguousarray(rec["data"])


def fleet(d, recordings, per_recording, devices, days):
    """(root, info) of the fleet beside the trace `d` (module docstring), written once."""
    from logb.can.formats import Bus, Trace, mdf4, write_logb

    root = d / f"lake-fleet-{recordings}x{per_recording}-{devices}dev-{days}days"
    stamp = root / "fleet.json"
    want = _want(d)
    if stamp.exists() and json.loads(stamp.read_text()).get("want") == want:
        log(f"reusing fleet {root}")
        return root, json.loads(stamp.read_text())
    shutil.rmtree(root, ignore_errors=True)
    ts, ids, flags, dlc, data = _frames(d)
    per = min(per_recording, len(ts))
    log(f"writing the fleet {root.name} ({recordings} recordings of {per:,} frames, Logb and MDF4) ...")
    t0 = time.perf_counter()
    sizes = {"logb": 0, "mf4": 0}
    for i in range(recordings):
        dev, day, slot = i % devices, (i // devices) % days, i // (devices * days)
        lo = (i * per) % (len(ts) - per + 1)  # each recording another stretch of the trace
        t = ts[lo:lo + per] - ts[lo]
        day_us = int(DAY0.timestamp()) * 10**6 + day * US_PER_DAY
        start = day_us + FIRST_START_US + slot * (int(t[-1]) + GAP_US) + dev * 10**6
        if start + int(t[-1]) >= day_us + US_PER_DAY:
            raise SystemExit("bench_lake: the fleet's recordings would cross midnight: fewer recordings per "
                             "device and day (more --devices or --days) or a shorter --per-recording")
        device = f"dev{dev + 1:02d}"
        date = (DAY0 + datetime.timedelta(days=day)).date().isoformat()
        trace = Trace({"can0": Bus("can0", start + t, ids[lo:lo + per], flags[lo:lo + per], dlc[lo:lo + per],
                                   data[lo:lo + per])}, -6, True, None, "bench")
        for kind in sizes:
            path = root / kind / device / date / f"{slot:08d}.{kind}"
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "logb":
                write_logb(trace, path, dbc=d / "trace.dbc", device=device)
            else:
                mdf4.write(trace, path, compression=0)
            sizes[kind] += path.stat().st_size
    info = {"want": want, "recordings": recordings, "frames": recordings * per, "per_recording": per,
            "devices": devices, "days": days, "bytes": sizes}
    stamp.write_text(json.dumps(info))
    log(f"  written in {time.perf_counter() - t0:.0f} s")
    return root, info


def big_recording(d, target):
    """(path, copies) of one dated recording of >= target bytes: the trace again and again,
    time moving on, written as write_logb writes (raw bus + per-message streams + DBC,
    its segment size and flush), without holding it all in memory. Cached."""
    import logb
    from logb.can.dbc import compile_dbc
    from logb.can.formats.logbfile import FLUSH_S, SEGMENT_BYTES
    from logb.can.record import CanRecorder

    path, stamp = d / f"lake-big-{target}.logb", d / f"lake-big-{target}.json"
    want = _want(d)
    if path.exists() and stamp.exists() and json.loads(stamp.read_text()).get("want") == want:
        return path, json.loads(stamp.read_text())["copies"]
    ts, ids, flags, dlc, data = _frames(d)
    step = int(ts[-1]) + 1000  # the next copy starts 1 ms after this one's last frame
    start = int(DAY0.timestamp()) * 10**6 + FIRST_START_US
    chunk = 1 << 16
    now = [0.0]  # trace time (s), for the writer's segment clock
    log(f"writing {path.name} (>= {target / 1e9:.2f} GB) ...")
    t0 = time.perf_counter()
    copies = 0
    compiled = compile_dbc(d / "trace.dbc", bus="can0", device="big", axis_exp=-6)
    with open(path, "wb") as fh, logb.Writer(fh, time_base="unix", clock_source="tools/bench_lake.py",
                                            wall_clock=lambda: start * 1000, monotonic=lambda: now[0],
                                            segment_bytes=SEGMENT_BYTES, bind_used=True) as w:
        with CanRecorder(w, compiled, bus="can0", device="big", flush_s=FLUSH_S) as r:
            while fh.tell() < target:
                base = start + copies * step
                for lo in range(0, len(ts), chunk):
                    hi = lo + chunk
                    now[0] = (base - start + int(ts[lo])) * 1e-6
                    r.add(base + ts[lo:hi], ids[lo:hi], flags[lo:hi], dlc[lo:hi], data[lo:hi])
                copies += 1
    stamp.write_text(json.dumps({"want": want, "copies": copies}))
    log(f"  written in {time.perf_counter() - t0:.0f} s")
    return path, copies


# ---------------------------------------------------------------- the cases (each in a fresh interpreter)

def _parquet_stats(top):
    """{"files", "bytes", "rows"} of the Parquet files under top (rows from their footers)."""
    import pyarrow.parquet as pq

    files = [p for p in pathlib.Path(top).rglob("*.parquet") if not p.name.startswith(".")]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files),
            "rows": sum(pq.ParquetFile(p).metadata.num_rows for p in files)}


def baseline_child(mf4_root, dbc, lake):
    """CANedge-style: one MDF4 at a time → extract_bus_logging → a DataFrame per message → to_parquet."""
    from asammdf import MDF

    mf4_root, lake = pathlib.Path(mf4_root), pathlib.Path(lake)
    t0 = time.perf_counter()
    files = sorted(mf4_root.rglob("*.mf4"))
    frames = 0
    for path in files:
        device = path.relative_to(mf4_root).parts[0]
        mdf = MDF(path)
        try:
            frames += sum(g.channel_group.cycles_nr for g in mdf.groups)
            decoded = mdf.extract_bus_logging({"CAN": [(dbc, 0)]})
            for gi, group in enumerate(decoded.groups):
                message = MESSAGE.search(group.channel_group.comment).group(1)
                df = decoded.get_group(gi, time_from_zero=False, time_as_date=True)
                if df.empty:
                    continue
                day = df.index[0]
                out = lake / device / message / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}" / f"{path.stem}.parquet"
                out.parent.mkdir(parents=True, exist_ok=True)
                df.to_parquet(out)
            decoded.close()
        finally:
            mdf.close()
    seconds = time.perf_counter() - t0
    print(json.dumps({"sources": len(files), "frames": frames, "seconds": seconds,
                      "datasets": {"signals": _parquet_stats(lake)}, **_own_rss()}))


def ingest_child(src, lake, workers, mode):
    from logb.lake import ingest

    last_unit = [0.0]
    t0 = time.monotonic()
    s = ingest([src], lake, workers=int(workers), mode=mode,
               progress=lambda *_: last_unit.__setitem__(0, time.monotonic() - t0))
    if s.problems:
        raise SystemExit(f"logb lake: {s.problems[:3]}")
    datasets = {p.name: _parquet_stats(p) for p in sorted(pathlib.Path(lake).iterdir()) if p.is_dir()}
    # after the last unit: what ingest does alone in this process (compaction, the last commit)
    print(json.dumps({"sources": s.sources, "frames": s.frames, "seconds": s.seconds, "datasets": datasets,
                      "after_units": s.seconds - last_unit[0], **_own_rss()}))


def floor_child():
    """What a lake worker imports, and nothing done."""
    import logb.lake.units  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    print(json.dumps(_own_rss()))


def _own_rss():
    """This process's peak RSS and its largest reaped child's (the Dask process pool's workers)."""
    return {"self_maxrss": _kb_to_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss),
            "children_maxrss": _kb_to_bytes(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)}


def _measure(*argv):
    """A child's JSON line, with the launcher's wall time and the process tree's peak RSS."""
    from bench_rss import measure

    info = measure([sys.executable, __file__, *map(str, argv)])
    out = json.loads(info["last"])
    out["wall"], out["maxrss"] = info["seconds"], info["maxrss"]
    return out


# ---------------------------------------------------------------- run

def _warm(top):
    """Read every file once, so the first case does not pay the disk for the others."""
    for p in pathlib.Path(top).rglob("*"):
        if p.is_file():
            with open(p, "rb") as fh:
                while fh.read(1 << 20):
                    pass


def run(d, args):
    root, info = fleet(d, args.recordings, args.per_recording, args.devices, args.days)
    _warm(root)
    work = d / "lake-run"
    cases = [("baseline", lambda lake: ("--_baseline", root / "mf4", d / "trace.dbc", lake))]
    cases += [(f"logb-{w}-{m}", lambda lake, w=w, m=m: ("--_ingest", root / "logb", lake, w, m))
              for w, m in LOGB_CASES]
    res = {"fleet": info, "runs": {key: [] for key, _ in cases}}
    try:
        for r in range(args.runs):
            for key, argv in cases:
                shutil.rmtree(work, ignore_errors=True)
                log(f"lake: run {r + 1}/{args.runs}: {key} ...")
                out = _measure(*argv(work / key))
                log(f"  {out['seconds']:.1f} s, {out['frames'] / out['seconds'] / 1e6:.2f} M frames/s, "
                    f"peak RSS {out['maxrss'] / 1e6:.0f} MB")
                res["runs"][key].append(out)
        _check_same_rows(res)
        res["floor"] = _measure("--_floor")
        if args.factor > 0:
            res["big"] = big(d, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


def _check_same_rows(res):
    """Every case decoded the same frames into the same signal rows, or the comparison is off."""
    frames = res["fleet"]["frames"]
    for key, outs in res["runs"].items():
        for out in outs:
            rows = out["datasets"]["signals"]["rows"]
            if out["frames"] != frames or rows != frames:
                raise SystemExit(f"bench_lake: {key} read {out['frames']:,} frames and wrote {rows:,} signal rows "
                                 f"of the fleet's {frames:,} frames; refusing to compare")


def big(d, args, work):
    target = int(args.budget_mb * 1e6 * args.factor)
    path, copies = big_recording(d, target)
    n = json.loads((d / "meta.json").read_text())["n_frames"]
    out = {"size": path.stat().st_size, "copies": copies, "frames": copies * n, "cases": []}
    try:
        src = work / "big"  # a folder of its own: the lake takes its name as the device
        src.mkdir(parents=True, exist_ok=True)
        link = src / path.name
        os.symlink(path, link)
        for workers, mode in BIG_CASES:
            lake = work / f"big-{workers}-{mode}"
            log(f"lake: {path.stat().st_size / 1e9:.2f} GB recording, workers={workers} {mode} ...")
            r = _measure("--_ingest", src, lake, workers, mode)
            if r["frames"] != out["frames"]:
                raise SystemExit(f"bench_lake: the lake read {r['frames']:,} of the recording's {out['frames']:,} "
                                 "frames; refusing to report it")
            log(f"  {r['seconds']:.0f} s, peak RSS {r['self_maxrss'] / 1e6:.0f} MB "
                f"(largest worker {r['children_maxrss'] / 1e6:.0f} MB)")
            out["cases"].append({"workers": workers, "mode": mode, **r})
            shutil.rmtree(lake)
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
            path.with_suffix(".json").unlink(missing_ok=True)
    return out


# ---------------------------------------------------------------- BENCHMARKS.md

def _spread(values, fmt):
    """The median, and its min–max when there are several runs."""
    med = statistics.median(values)
    return fmt(med) if len(values) == 1 else f"{fmt(med)} ({fmt(min(values))}–{fmt(max(values))})"


def _label(key):
    if key == "baseline":
        return "CANedge-style: asammdf extract_bus_logging + pandas to_parquet"
    _, workers, mode = key.split("-")
    return "logb.lake.ingest, workers=1" if workers == "1" else f"logb.lake.ingest, workers={workers} {mode}"


def _kfps(x):
    return f"{x / 1e3:.0f} k"


def section(res):
    fl = res["fleet"]
    frames, files = fl["frames"], fl["recordings"]
    runs = res["runs"]
    nruns = len(runs["baseline"])
    med = {key: statistics.median(o["seconds"] for o in outs) for key, outs in runs.items()}
    L = ["## A fleet into a Parquet data lake\n",
         f"The fleet: {files} recordings of {fl['per_recording']:,} frames ({frames:,} in all) from "
         f"{fl['devices']} devices over {fl['days']} days, in DEVICE/DATE/ folders: slices of the shared trace "
         "(20 ids, `trace.dbc`'s 126 signals), dated (`tools/bench_lake.py`, cached). Each is a Logb file as a "
         "logger with the DBC writes it (`write_logb`, as `logb import --dbc`: raw bus stream + 20 per-message "
         f"streams + the DBC attached; {fl['bytes']['logb'] / frames:.2f} bytes per frame) and the uncompressed "
         f"ASAM bus-logging MDF4 a CANedge user has ({fl['bytes']['mf4'] / frames:.2f} bytes per frame, no DBC "
         "attached). Each case is a fresh interpreter writing an empty lake, the files in the page cache:\n",
         "- CANedge-style baseline, one file at a time: `MDF(path).extract_bus_logging({\"CAN\": [(dbc, 0)]})`, "
         "then per message `get_group(gi, time_as_date=True)` (to_dataframe of its channels, no resampling) "
         "→ `df.to_parquet` (pyarrow, snappy) at `DEVICE/MESSAGE/YYYY/MM/DD/FILE.parquet`; no fsync;",
         "- `logb.lake.ingest(fleet, LAKE, workers=…, mode=…)` (`logb lake`), with the DBC each file carries: "
         "`signals/device=/message=/date=` (what the baseline writes, plus the lake's row columns: timestamp, "
         "device time, session, segment, run, source) and `frames/device=/bus=/date=` (every raw frame), zstd, "
         "parts renamed into place once whole and synced, then small parts compacted, one Dask task per partition. "
         "workers=1 is Dask's synchronous scheduler.\n",
         "Rates are over each case's own clock (the baseline's loop; ingest's `summary.seconds`: plan, "
         "decode, write, compaction; \"after the units\" is its part after the last unit finished); wall adds "
         "the interpreter's start and imports. Every case's signal rows are checked equal to the fleet's frames "
         "(each frame decoded once) before anything is reported. Peak RSS: `ru_maxrss` of the case's largest "
         "process (Dask's pool workers included). "
         + ("One run per case." if nruns == 1 else f"Median (min–max) of {nruns} runs, the cases alternating.")
         + f" {os.cpu_count()} cores, shared: the 1-minute load average was {res['load'][0]:.1f} at the start "
         f"and {res['load'][1]:.1f} at the end (other work's load takes from workers=2 first).\n",
         "| case | files/s | frames/s | time | after the units | wall | lake files | lake bytes/frame: "
         "signals (all) | peak RSS |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key, outs in runs.items():
        secs = [o["seconds"] for o in outs]
        ds = outs[-1]["datasets"]
        after = f"{statistics.median(o['after_units'] for o in outs):.1f} s" if key != "baseline" else "—"
        L.append(f"| {_label(key)} | {_spread([files / x for x in secs], lambda x: f'{x:.1f}')} | "
                 f"{_spread([frames / x for x in secs], _kfps)} | {_spread(secs, lambda x: f'{x:.1f} s')} | {after} | "
                 f"{statistics.median(o['wall'] for o in outs):.1f} s | {sum(v['files'] for v in ds.values()):,} | "
                 f"{ds['signals']['bytes'] / frames:.2f} ({sum(v['bytes'] for v in ds.values()) / frames:.2f}) | "
                 f"{statistics.median(o['maxrss'] for o in outs) / 1e6:.0f} MB |")
    logb_keys = [k for k in runs if k != "baseline"]
    threads, procs = med["logb-2-threads"], med["logb-2-processes"]
    faster, slower = ("processes", "threads") if procs < threads else ("threads", "processes")
    L += ["", "| ratio (of medians) | value |", "| --- | --- |"]
    for key in logb_keys:
        L.append(f"| frames/s: {_label(key)} / baseline | {med['baseline'] / med[key]:.2f}× |")
    L.append(f"| frames/s, workers=2: {faster} / {slower} | {max(threads, procs) / min(threads, procs):.2f}× |")
    L.append(f"| frames/s: workers=2 {faster} / workers=1 | {med['logb-1-threads'] / min(threads, procs):.2f}× |")
    lake = runs["logb-1-threads"][-1]["datasets"]
    base = runs["baseline"][-1]["datasets"]["signals"]["bytes"]
    L.append(f"| signals bytes: lake / baseline's | {lake['signals']['bytes'] / base:.2f}× |")
    L.append(f"| bytes per frame: lake (all) / Logb sources; baseline / MDF4 sources | "
             f"{sum(v['bytes'] for v in lake.values()) / fl['bytes']['logb']:.2f}×; {base / fl['bytes']['mf4']:.2f}× |")
    L.append("")
    if res.get("big"):
        b = res["big"]
        L += [f"### Peak memory: one recording {res['factor']:g}× a worker's budget\n",
              f"A worker's memory budget of {res['budget_mb']:g} MB; the recording is {res['factor']:g}× that "
              f"({b['size'] / 1e9:.2f} GB, {b['frames']:,} frames): the shared trace {b['copies']} times one after "
              "another, dated, written as `write_logb` writes (raw bus + per-message streams + DBC, 1 MB "
              "segments), ingested alone into an empty lake in units of about 16 MB split at segment starts. "
              "Peak RSS is `ru_maxrss` of the ingesting process (planning, commits) and of its "
              "largest Dask pool worker. The floor, a fresh interpreter that imported what a worker imports "
              f"(`logb.lake.units`, pyarrow.parquet) and did nothing: {res['floor']['self_maxrss'] / 1e6:.0f} MB.\n",
              "| workers | peak RSS: ingesting process | peak RSS: largest worker | budget | frames/s "
              "| time | after the units |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
        for c in b["cases"]:
            pool = c["mode"] == "processes" and c["workers"] > 1
            worker = f"{c['children_maxrss'] / 1e6:.0f} MB" if pool else "— (in process)"
            L.append(f"| {c['workers']}{' ' + c['mode'] if c['workers'] > 1 else ''} | "
                     f"{c['self_maxrss'] / 1e6:.0f} MB | {worker} | ≤ {res['budget_mb']:g} MB | "
                     f"{_kfps(c['frames'] / c['seconds'])} | {c['seconds']:.0f} s | {c['after_units']:.0f} s |")
        L.append("")
    return "\n".join(L)


# ---------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recordings", type=int, default=100)
    ap.add_argument("--per-recording", type=int, default=20_000, help="frames per recording (default 20,000)")
    ap.add_argument("--devices", type=int, default=5)
    ap.add_argument("--days", type=int, default=4)
    ap.add_argument("--runs", type=int, default=2, help="runs of each fleet case, alternating (default 2)")
    ap.add_argument("--budget-mb", type=float, default=100, help="a worker's memory budget (default 100 MB)")
    ap.add_argument("--factor", type=float,
                    help="the large recording's size in budgets (default 10, --quick 2; 0 skips the peak-memory part)")
    ap.add_argument("--quick", action="store_true",
                    help="40 recordings of 5,000 frames, a recording of 2 budgets (a smoke run)")
    ap.add_argument("--frames", type=int, default=1_000_000, help="the shared bench trace's length")
    ap.add_argument("--cache", type=pathlib.Path, default=ROOT / "out" / "bench")
    ap.add_argument("--keep", action="store_true", help="keep the large recording for the next run")
    ap.add_argument("--output", type=pathlib.Path, help="replace the `lake` block of this file (default: print)")
    ap.add_argument("--_baseline", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--_ingest", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--_floor", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._baseline:
        return baseline_child(*args._baseline)
    if args._ingest:
        return ingest_child(*args._ingest)
    if args._floor:
        return floor_child()
    if args.quick:
        args.recordings, args.per_recording = 40, 5_000
    if args.factor is None:
        args.factor = 2 if args.quick else 10
    sys.path.insert(0, str(ROOT / "tools"))
    import benchmd
    from bench import ensure_trace

    d = ensure_trace(args.cache, args.frames)
    t = time.perf_counter()
    load = os.getloadavg()[0]
    res = run(d, args)
    res["budget_mb"], res["factor"] = args.budget_mb, args.factor
    res["load"] = (load, os.getloadavg()[0])
    md = section(res)
    log(f"lake: {time.perf_counter() - t:.0f} s")
    if args.output:
        benchmd.splice(args.output, "lake", md)
        log(f"lake: wrote its block of {args.output}")
    else:
        print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""logb lake: a fleet's recordings into a partitioned Parquet data lake, on Dask."""

import sys
import time

from ..errors import UsageError
from ..lake.pipeline import RANGE_BYTES
from .common import EXIT_DAMAGED, EXIT_OK, dumps

HELP = "many recordings into a hive-partitioned Parquet data lake (incremental, on Dask)"
DESCRIPTION = """\
  logb lake SRC... -o LAKE        ingest (files, folders, globs), then compact
  logb lake info LAKE             what the lake holds, and the sources with problems
  logb lake compact LAKE          merge small parts into --target-size files

Every recording (Logb, or a CAN trace `logb import` reads, converted on the fly)
is decoded into three hive-partitioned Parquet datasets under LAKE:

  signals/device=D/message=M/date=YYYY-MM-DD/   CAN signals, a row per frame
  frames/device=D/bus=B/date=YYYY-MM-DD/        raw CAN frames (id, dlc, flags, data)
  streams/device=D/stream=S/date=YYYY-MM-DD/    every other (sensor) stream

Each row has `timestamp` (timestamp[ns, UTC]; where the session is undated it
is the logger's own time and `dated` is false, partition date=undated),
`device_time_ns`, `session`, `segment`, `run` and `source`. Units and
conversions are in each column's Arrow field metadata, value-table labels are
dictionary columns (`Signal.text`), missing is null. The device is the
recording's `logb.device`, else the first folder under the SRC folder given
(a fleet upload is laid out device/...). Signals are decoded as `logb decode`
does: per-message streams, else the attached DBC; --dbc [DEVICE/][BUS=]X.dbc
(fnmatch patterns, first match wins) decodes a bus with that DBC instead.

Incremental and idempotent: LAKE/_logb/manifest.jsonl records every source
(size, a hash of its first 64 KiB, its sessions) and what it gave. A rerun
reads only new files and the new tail of files that grew (a recording still
being written is read up to its last intact frame and continued next time),
never duplicates a row, and survives being killed at any moment: the next run
redoes exactly the unfinished work. Parts appear whole (written under hidden
names, renamed when complete); compaction swaps a partition in one step.

  logb lake uploads/ -o lake/ --workers 2
  duckdb -c "SELECT device, count(*) FROM read_parquet('lake/signals/**/*.parquet',
             hive_partitioning=true, union_by_name=true) GROUP BY device"

Exit status: 0 done, 1 done but some sources were damaged or unreadable (listed;
damaged ones contribute what they recover), 64 usage error, 75 another run is
writing the lake."""


def add_arguments(p):
    p.add_argument("args", nargs="+", metavar="SRC", help="recordings, folders or globs (or: info LAKE, compact LAKE)")
    p.add_argument("-o", "--output", metavar="LAKE", help="the lake's folder (created if need be)")
    p.add_argument("--dbc", action="append", metavar="[DEVICE/][BUS=]X.dbc",
                   help="decode matching buses with this DBC (repeatable; fnmatch patterns)")
    p.add_argument("--workers", type=_positive, default=1, metavar="N", help="tasks at once (default 1)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--processes", dest="mode", action="store_const", const="processes",
                     help="workers are processes (default threads: BENCHMARKS.md, lake, measures both)")
    how.add_argument("--threads", dest="mode", action="store_const", const="threads", help="workers are threads")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a running dask.distributed scheduler (tcp://host:8786)")
    p.add_argument("--target-size", type=_size, default=128 << 20, metavar="BYTES",
                   help="compaction's file size (default 128M; suffixes K, M, G)")
    p.add_argument("--task-bytes", type=_size, default=RANGE_BYTES, metavar="BYTES",
                   help="bytes per Dask task: a large recording's range, or small recordings bundled "
                        "(default 16M; memory per task follows the batch, not this)")
    p.add_argument("--no-compact", action="store_true", help="ingest only")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(mode="threads")  # measured faster on a fleet (BENCHMARKS.md, lake)


def _positive(text):
    import argparse

    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return n


def _size(text):
    import argparse

    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B")
    try:
        n = int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 128M)")
    return n


def run(args, out):
    words = args.args
    if words[0] in ("info", "compact") and args.output is None:
        if len(words) != 2:
            raise UsageError(f"logb lake {words[0]} LAKE: one lake")
        return _info(words[1], args, out) if words[0] == "info" else _compact(words[1], args, out)
    if args.output is None:
        raise UsageError("the lake to write: -o LAKE")
    from ..lake import ingest

    bar = _Bar() if sys.stderr.isatty() and not args.json else None
    summary = ingest(words, args.output, dbc=args.dbc, workers=args.workers, mode=args.mode,
                     scheduler=args.scheduler, target_size=args.target_size, compact=not args.no_compact,
                     progress=bar, range_bytes=args.task_bytes)
    if bar is not None:
        bar.close()
    if args.json:
        print(dumps(summary.as_json()), file=out)
    else:
        _print_summary(summary, out)
    return EXIT_DAMAGED if summary.problems else EXIT_OK


def _print_summary(s, out):
    rate = s.frames / s.seconds if s.seconds > 0 else 0
    print(f"{s.sources} sources read ({s.unchanged} unchanged, {len(s.duplicates)} already in under another "
          f"path): {s.frames} frames and records -> {s.rows} rows in {s.parts} parts, {s.bytes} bytes, "
          f"{s.seconds:.1f} s ({rate:,.0f} frames/s)", file=out)
    if s.removed:
        print(f"{s.removed} parts of an interrupted run removed and redone", file=out)
    if s.compacted is not None and s.compacted.inputs:
        c = s.compacted
        print(f"compacted {c.inputs} parts into {c.outputs} in {c.partitions} partitions", file=out)
    for path in s.not_recordings:
        print(f"not a recording, left out: {path}", file=out)
    for path, what in s.problems:
        print(f"problem: {path}: {what}", file=out)


def _info(lake, args, out):
    from ..lake.info import lake_info

    info = lake_info(lake)
    if args.json:
        print(dumps(info.as_json()), file=out)
        return EXIT_OK
    print(f"{lake}: {info.sources} sources, {len(info.devices)} devices", file=out)
    for dataset, d in info.datasets.items():
        span = f", {d['first']} to {d['last']}" if d["first"] else ""
        print(f"  {dataset}: {d['rows']} rows, {d['bytes']} bytes in {d['parts']} parts, "
              f"{len(d['names'])} names{span}", file=out)
        for name, rows in sorted(d["names"].items(), key=lambda kv: -kv[1])[:10]:
            print(f"    {name}: {rows} rows", file=out)
    for device, rows in sorted(info.devices.items()):
        print(f"  device {device}: {rows} rows", file=out)
    if info.pending or info.compactions:
        print(f"  unfinished: {info.pending} ingests, {info.compactions} compactions (the next run finishes them)",
              file=out)
    for path, what in info.problems:
        print(f"  problem: {path}: {what}", file=out)
    for session, paths in sorted(info.shared_sessions.items()):
        print(f"  session {session} is in {len(paths)} sources (its rows are in the lake once per source): "
              f"{', '.join(paths)}", file=out)
    return EXIT_OK


def _compact(lake, args, out):
    from ..lake.compact import compact_lake
    from ..lake.pipeline import recover
    from ..lake.manifest import Manifest

    with Manifest(lake).lock() as man:
        recover(man)
        c = compact_lake(man, args.target_size, workers=args.workers, mode=args.mode, scheduler=args.scheduler)
    if args.json:
        print(dumps(c.__dict__), file=out)
    else:
        print(f"compacted {c.inputs} parts into {c.outputs} in {c.partitions} partitions "
              f"({c.bytes_in} -> {c.bytes_out} bytes)", file=out)
    return EXIT_OK


class _Bar:
    """Units done, files/s and frames/s on one line of stderr."""

    def __init__(self):
        self.start = time.monotonic()
        self._last = 0.0

    def __call__(self, done, total, summary):
        now = time.monotonic()
        if now - self._last < 0.1 and done < total:
            return
        self._last = now
        dt = max(now - self.start, 1e-9)
        bar = "#" * int(30 * done / max(total, 1))
        sys.stderr.write(f"\rlake [{bar:<30}] {done}/{total} units, {summary.sources / dt:6.1f} files/s, "
                         f"{summary.frames / dt:10,.0f} frames/s")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")

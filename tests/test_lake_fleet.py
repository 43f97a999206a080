"""A thousand recordings (four devices, three days, three DBCs; cut, damaged, growing,
concatenated, candump traces) into one lake with the `logb lake` command, killed once
while ingesting and once while compacting, grown and rerun: the lake then holds exactly
what the direct decode of every file gives, a rerun adds nothing, DuckDB and pyarrow
count the same rows."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from _fleet import grow, make_fleet
from test_lake import assert_lake_is, lake_rows, lake_tables, parts_of
from logb.lake import ingest
from logb.lake.manifest import Manifest

pytestmark = pytest.mark.single_backend

TIMEOUT = 900  # generous: a busy machine may be ten times slower than a quiet one


def _lake_command(src, lake, *more):
    return subprocess.Popen([sys.executable, "-m", "logb.cli.main", "lake", str(src), "-o", lake, "--json",
                             "--workers", "2", "--task-bytes", "256K", *more],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill_when(proc, lake, seen):
    """SIGKILL `proc` once its manifest holds a line for which `seen(event)` is true."""
    path = os.path.join(lake, "_logb", "manifest.jsonl")
    deadline = time.monotonic() + TIMEOUT
    read = 0  # lines already shown to `seen`
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(path):
            with open(path, "rb") as fh:
                lines = [ln for ln in fh.read().splitlines(keepends=True) if ln.endswith(b"\n")]
            new, read = lines[read:], len(lines)
            if any([seen(json.loads(ln)) for ln in new]):
                proc.send_signal(signal.SIGKILL)
                break
        time.sleep(0.01)  # polling the file for the event, not waiting a fixed time for it
    proc.wait(timeout=TIMEOUT)
    return proc.returncode


def test_a_fleet_of_a_thousand_recordings(tmp_path):
    fleet = make_fleet(tmp_path / "fleet", n=1000, seed=7)
    files = [str(p) for p in fleet.files]
    assert len(files) >= 1000
    lake = str(tmp_path / "lake")

    # killed once a third of the sources are in
    third = len(files) // 3
    proc = _lake_command(fleet.root, lake, "--no-compact")
    committed = []
    code = _kill_when(proc, lake, lambda e: e["op"] == "commit" and (committed.extend(e["sources"]) or
                                                                    len(committed) > third))
    assert code == -signal.SIGKILL, proc.stderr.read()
    assert 0 < len(Manifest(lake).sources) < len(files)

    # the rerun finishes the work, then compacts; killed at its first compaction
    proc = _lake_command(fleet.root, lake, "--target-size", "4M")
    assert _kill_when(proc, lake, lambda e: e["op"] == "compact-begin") == -signal.SIGKILL, proc.stderr.read()
    assert Manifest(lake).compactions  # killed with a compaction under way

    # grown to their ends, and ingested again after each step
    growing = fleet.of_kind("growing")
    assert growing
    while not all(ff.complete for ff in growing):
        grown = [ff for ff in growing if not ff.complete]
        for ff in grown:
            grow(ff.path, fleet)
        s = ingest([str(fleet.root)], lake, workers=2, mode="processes", target_size=4 << 20)
        assert s.sources == len(grown)  # only their new tails are read

    man = Manifest(lake)
    assert not man.pending and not man.compactions
    assert len(man.sources) == len(files)
    assert_lake_is(lake, files)

    rows, parts = lake_rows(lake), parts_of(lake)
    again = ingest([str(fleet.root)], lake, target_size=4 << 20)
    assert (again.sources, again.rows) == (0, 0) and lake_rows(lake) == rows and parts_of(lake) == parts

    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    for ds, t in lake_tables(lake).items():
        glob = os.path.join(lake, ds, "**", "*.parquet")
        n = con.execute(f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning=true, "
                        f"union_by_name=true)").fetchall()[0][0]
        assert n == t.num_rows == rows[ds]

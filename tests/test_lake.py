"""logb lake: a fleet into a partitioned Parquet lake, checked against the direct decode
of every file; reruns add nothing; killed runs (at every step that writes) are finished
by the next; compaction never shows a row twice; DuckDB and pyarrow read the same rows."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from _fleet import make_fleet
from logb.can.bus import buses, group_frames
from logb.can.decode import decode_file, embedded_dbc
from logb.cli.main import main
from logb.errors import LakeBusyError, NothingToDecodeError, NotLogbError
from logb.lake import dataset, ingest
from logb.lake.manifest import Manifest
from logb.reader import LogbFile
from logb.timebase import ticks_to_ns

pytestmark = pytest.mark.single_backend  # the lake's own mechanics; decoding is tested under both elsewhere

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "host")


# ------------------------------------------------------------------ the oracle
def _open(path):
    from logb.can import formats

    kind = formats.sniff(path)
    if kind == "logb":
        try:
            return LogbFile(path)
        except NotLogbError:
            return LogbFile(path, recover=True)
    import io

    buf = io.BytesIO()
    formats.write_logb(formats.read_as(path, kind), buf, source=path)
    return LogbFile(buf.getvalue())


def _canon(cols):
    """Rows as a sorted tuple list: compare sets of rows whatever their order."""
    names = sorted(cols)
    rows = list(zip(*[_cells(cols[n]) for n in names]))
    return names, sorted(rows, key=repr)


def _cells(col):
    if isinstance(col, np.ma.MaskedArray):
        return [None if m else _num(v) for v, m in zip(np.ma.getdata(col).tolist(), np.ma.getmaskarray(col))]
    if isinstance(col, np.ndarray):
        return [_num(v) for v in col.tolist()]
    return [_num(v) for v in col]


def _num(v):
    if isinstance(v, float):
        return None if v != v else round(v, 9)
    return v


def direct(path):
    """{(dataset, name): canonical rows} of one file, decoded directly (logb.can.decode and
    the readers), the way a user would decode it one file at a time."""
    out = {}
    f = _open(path)
    try:
        # docs/LAKE.md: a file whose buses are all `mirror` with a DBC attached is decoded from
        # its raw bus streams, cut or not (a file cut at a frame boundary reads as whole, and its
        # per-message streams lack the records its logger had not flushed yet)
        groups = buses(f)
        raw = bool(groups) and not any(g.exclusive_segments() for g in groups) and all(
            embedded_dbc(f, g.streams[0]) is not None for g in groups)
        try:
            for d in decode_file(f, source="raw" if raw else "auto"):
                key = ("signals", d.message if not d.mux else d.stream)
                cols = {"device_time_ns": ticks_to_ns(np.asarray(d.axis, np.int64), d.axis_exp)}
                cols.update(d.phys)
                prev = out.get(key)
                out[key] = cols if prev is None else {k: np.ma.concatenate([prev[k], cols[k]]) for k in cols}
        except NothingToDecodeError:
            pass
        for g in buses(f):
            b = group_frames(f, g)
            out[("frames", g.name)] = {"device_time_ns": ticks_to_ns(np.asarray(b.t, np.int64), b.axis_exp),
                                       "id": b.id}
        for s in f.streams.values():
            if s.schema is None or not s.schema.is_time or s.schema.meta_dict().get("logb.can.layout"):
                continue
            c = s.columns()
            if len(c):
                cols = {"device_time_ns": ticks_to_ns(c.axis, s.schema.axis_exp)}
                axis_name = s.schema.fields[s.schema.axis_field].name if s.schema.axis_mode else None
                cols.update({fd.name: c.phys(fd.name) for fd in s.schema.fields if fd.name != axis_name})
                out[("streams", s.name)] = cols
    finally:
        f.close()
    return {k: _canon(v) for k, v in out.items() if len(next(iter(v.values())))}


_NAME = {"signals": "message", "frames": "bus", "streams": "stream"}
_NOT_VALUES = {"timestamp", "dated", "session", "segment", "run", "source", "bus", "mux", "device", "date",
               "message", "stream", "dlc", "data", "extended", "remote", "error", "fd", "brs", "esi", "tx"}


def lake_tables(lake):
    return {ds: dataset(lake, ds).to_table() for ds in ("signals", "frames", "streams")
            if os.path.isdir(os.path.join(lake, ds))}


def by_source(tables):
    """{source: {dataset: its rows}}: the lake's tables split by source, once."""
    out = {}
    for ds, t in tables.items():
        src = np.asarray(t["source"].cast(pa.string()).to_pylist(), dtype=object)
        order = np.argsort(src, kind="stable")
        keys, starts = np.unique(src[order], return_index=True)
        t = t.combine_chunks().take(pa.array(order))  # one gather; each source is then a slice
        for k, a, b in zip(keys, starts, list(starts[1:]) + [len(order)]):
            out.setdefault(k, {})[ds] = t.slice(a, b - a)
    return out


def from_lake(tables, path):
    """{(dataset, name): canonical rows} of one source's tables (by_source), read back."""
    out = {}
    for ds, mine in tables.items():
        names = mine[_NAME[ds]].cast(pa.string()).to_pylist()
        for name in sorted(set(names)):
            sel = mine.filter(pa.array([n == name for n in names]))
            cols = {}
            for c in sel.column_names:
                if c in _NOT_VALUES or c.endswith(".text") or (ds == "frames" and c != "device_time_ns"
                                                               and c != "id"):
                    continue
                values = sel[c].to_pylist()
                if all(v is None for v in values):
                    continue  # a column of another DBC version in the same partition
                cols[c] = values
            out[(ds, name)] = _canon(cols)
    return out


def _strip_empty(d):
    """Direct decode drops all-missing signals the same way (no cell to compare)."""
    out = {}
    for key, (names, rows) in d.items():
        keep = [i for i, _n in enumerate(names) if any(r[i] is not None for r in rows)]
        out[key] = ([names[i] for i in keep], sorted([tuple(r[i] for i in keep) for r in rows], key=repr))
    return out


def assert_lake_is(lake, files):
    split = by_source(lake_tables(lake))
    for path in files:
        assert _strip_empty(from_lake(split.get(path, {}), path)) == _strip_empty(direct(path)), path
    assert set(split) <= set(files)


def lake_rows(lake):
    return {ds: t.num_rows for ds, t in lake_tables(lake).items()}


def parts_of(lake):
    return sorted(os.path.relpath(os.path.join(d, n), lake) for d, _s, names in os.walk(lake) for n in names
                  if n.endswith(".parquet"))


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    return make_fleet(root, n=80, seed=3)


def _copy_fleet(fleet_, tmp):
    """A copy of the fleet's folder, to grow its growing recordings in."""
    root = tmp / "fleet"
    shutil.copytree(fleet_.root, root)
    return root


# ------------------------------------------------------------------ ingest
def test_the_lake_holds_exactly_what_each_file_decodes_to(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    s = ingest([str(fleet.root)], lake)
    assert s.sources == len(fleet.files)
    assert_lake_is(lake, [str(f) for f in fleet.files])
    # what a damaged or cut source lost is said, per source, in the manifest
    man = Manifest(lake)
    damaged = {str(ff.path) for ff in fleet.of_kind("cut", "damaged", "growing")}
    reported = {st.path for st in man.sources.values() if st.report.get("damaged")}
    assert reported == damaged
    assert {p for p, _w in s.problems} == damaged


def test_rerun_adds_nothing_and_reads_nothing(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    ingest([str(fleet.root)], lake, compact=False)
    before, rows = parts_of(lake), lake_rows(lake)
    with open(os.path.join(lake, "_logb", "manifest.jsonl")) as fh:
        journal = fh.read()
    s = ingest([str(fleet.root)], lake, compact=False)
    assert (s.sources, s.rows, s.parts) == (0, 0, 0)
    assert s.unchanged == len(fleet.files)
    assert parts_of(lake) == before and lake_rows(lake) == rows
    with open(os.path.join(lake, "_logb", "manifest.jsonl")) as fh:
        assert fh.read() == journal


def test_a_copied_or_moved_file_is_the_same_source(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    one = str(fleet.of_kind("clean")[0].path)
    ingest([one], lake)
    copy = tmp_path / "elsewhere" / "renamed.logb"
    copy.parent.mkdir()
    shutil.copy(one, copy)
    s = ingest([str(copy)], lake)
    assert s.sources == 0 and s.duplicates == [(str(copy), one)]


def test_growing_recordings_are_continued_from_their_last_intact_frame(fleet, tmp_path):
    root = _copy_fleet(fleet, tmp_path)
    growing = [ff for ff in fleet.of_kind("growing")]
    assert growing
    lake = str(tmp_path / "lake")
    steps = 0
    while True:
        ingest([str(root)], lake, compact=steps % 2 == 1)
        pending = [ff for ff in growing if _grow_copy(ff, fleet, root)]
        if not pending:
            break
        steps += 1
    assert steps >= 2
    paths = [str(root / os.path.relpath(p, fleet.root)) for p in fleet.files]
    assert_lake_is(lake, paths)
    man = Manifest(lake)
    for ff in growing:
        st = man.by_path(str(root / os.path.relpath(ff.path, fleet.root)))
        assert st.ingests >= 2 and st.ingested_to == st.size and not st.report["damaged"]


def _grow_copy(ff, fleet, root):
    """Grow the copy of a growing recording by one step; False once it is whole."""
    path = root / os.path.relpath(ff.path, fleet.root)
    size = path.stat().st_size
    later = [s for s in ff.steps if s > size]
    if not later:
        return False
    with open(path, "ab") as fh:
        fh.write(ff.full_bytes[size:later[0]])
    return True


def test_a_replaced_file_is_a_new_source(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    a, b = (str(ff.path) for ff in fleet.of_kind("clean")[:2])
    target = tmp_path / "rec.logb"
    shutil.copy(a, target)
    ingest([str(target)], lake)
    shutil.copy(b, target)
    os.utime(target, ns=(1, 1))  # a different mtime whatever the clock's resolution
    s = ingest([str(target)], lake)
    assert s.sources == 1
    assert len(Manifest(lake).sources) == 2


def test_duckdb_and_pyarrow_read_the_same_rows(fleet, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    lake = str(tmp_path / "lake")
    ingest([str(fleet.root)], lake, target_size=1 << 20)
    con = duckdb.connect()
    for ds, t in lake_tables(lake).items():
        glob = os.path.join(lake, ds, "**", "*.parquet")
        got = con.execute(f"SELECT count(*), count(DISTINCT source), min(timestamp), max(timestamp) "
                         f"FROM read_parquet('{glob}', hive_partitioning=true, union_by_name=true)").fetchall()[0]
        ts = t["timestamp"].cast(pa.int64()).to_numpy()
        assert got[0] == t.num_rows and got[1] == len(t["source"].unique())
        assert (int(pa.scalar(got[2], pa.timestamp("ns", "UTC")).value),
                int(pa.scalar(got[3], pa.timestamp("ns", "UTC")).value)) == (ts.min(), ts.max())


def test_columns_carry_units_conversions_labels_and_nulls(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    ingest([str(fleet.root)], lake)
    sig = lake_tables(lake)["signals"]
    assert sig.schema.field("timestamp").type == pa.timestamp("ns", tz="UTC")
    with_units = [f for f in sig.schema if f.metadata and b"unit" in f.metadata]
    with_conv = [f for f in sig.schema if f.metadata and b"conversion" in f.metadata]
    labels = [f for f in sig.schema if f.name.endswith(".text")]
    assert with_units and with_conv and labels
    assert all(pa.types.is_dictionary(f.type) for f in labels)
    json.loads(with_conv[0].metadata[b"conversion"])
    # a frame shorter than its message leaves the signals past its data null, never 0
    assert any(sig[f.name].null_count for f in sig.schema if f.name not in _NOT_VALUES)
    undated = pa.compute.invert(sig["dated"])
    assert pa.compute.any(undated).as_py(), "the fleet has undated recordings"
    assert set(sig.filter(undated)["date"].to_pylist()) == {"undated"}


def test_dbc_rules_pick_the_dbc_by_device_and_bus(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    ff = next(f for f in fleet.of_kind("clean") if f.way == "attached")
    dbc = tmp_path / "renamed.dbc"  # the attached DBC's messages under other names
    dbc.write_text(re.sub(r"^(BO_ \d+ )(\w+):", r"\1New\2:", fleet.dbcs[ff.dbc_name], flags=re.M))
    ingest([str(ff.path)], lake, dbc=[f"nomatch*/can0={dbc}"])
    attached = set(lake_tables(lake)["signals"]["message"].to_pylist())
    shutil.rmtree(lake)
    ingest([str(ff.path)], lake, dbc=[f"{ff.device}/can*={dbc}"])
    ruled = set(lake_tables(lake)["signals"]["message"].to_pylist())
    assert attached and ruled == {"New" + m for m in attached}


ONE_SOURCE_PER_UNIT = dict(bundle_bytes=0)  # many small parts: something to compact


def test_compaction_merges_parts_and_keeps_every_row(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    ingest([str(fleet.root)], lake, compact=False, **ONE_SOURCE_PER_UNIT)
    before, rows = parts_of(lake), lake_rows(lake)
    s = ingest([str(fleet.root)], lake, target_size=64 << 20)
    after = parts_of(lake)
    assert s.compacted.inputs > s.compacted.outputs > 0
    assert len(after) < len(before) and lake_rows(lake) == rows
    assert_lake_is(lake, [str(f) for f in fleet.files])
    assert not [n for d, _s, names in os.walk(lake) for n in names if n.startswith("_compaction-")]
    assert not [d for d, _s, _n in os.walk(lake) if os.path.basename(d).startswith(".")]


def test_readers_never_see_a_row_twice_while_compacting(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    ingest([str(fleet.root)], lake, compact=False, **ONE_SOURCE_PER_UNIT)
    total = lake_rows(lake)["signals"]
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            try:
                seen.append(pads.dataset(os.path.join(lake, "signals"), format="parquet").count_rows())
            except (FileNotFoundError, OSError, pa.ArrowInvalid):
                pass  # a part listed before a swap and gone after: retried, never doubled

    t = threading.Thread(target=read)
    t.start()
    try:
        main(["lake", "compact", lake, "--target-size", "64M"])
    finally:
        stop.set()
        t.join(timeout=60)
    assert seen and max(seen) <= total
    assert lake_rows(lake)["signals"] == total


def test_the_lock_keeps_a_second_writer_out(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    ingest([str(fleet.files[0])], lake)
    with Manifest(lake).lock():
        with pytest.raises(LakeBusyError):
            ingest([str(fleet.root)], lake)
        assert main(["lake", str(fleet.root), "-o", lake]) == 75


def test_a_torn_manifest_line_is_cut_off(fleet, tmp_path):
    lake = str(tmp_path / "lake")
    ingest([str(fleet.files[0])], lake)
    path = os.path.join(lake, "_logb", "manifest.jsonl")
    with open(path, "ab") as fh:
        fh.write(b'{"op":"source","id":"dead')
    man = Manifest(lake)
    assert man.torn and len(man.sources) == 1
    s = ingest([str(fleet.root)], lake)
    assert s.sources == len(fleet.files) - 1
    with open(path, "rb") as fh:
        assert all(json.loads(line) for line in fh)


# ------------------------------------------------------------------ kill at any moment
_KILLER = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {src!r})
    from logb.lake import compact, manifest, parts, pipeline
    target, when, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
    owner, name = target.rsplit(".", 1)
    mod = {{"manifest.Manifest": manifest.Manifest, "parts.UnitWriter": parts.UnitWriter,
           "compact": compact, "parts": parts}}[owner]
    real = getattr(mod, name)
    calls = [0]
    def dying(*a, **k):
        calls[0] += 1
        if calls[0] == nth and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        out = real(*a, **k)
        if calls[0] == nth and when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    setattr(mod, name, dying)
    pipeline.ingest([sys.argv[4]], sys.argv[5], target_size=64 << 20, bundle_bytes=int(sys.argv[6]))
    sys.exit(0)
""")

KILL_POINTS = [
    ("manifest.Manifest.begin", "after", 1),  # begun, nothing ingested
    ("parts.UnitWriter.close", "before", 2),  # parts half written (temporaries)
    ("parts.UnitWriter.close", "after", 3),  # parts in place, their sources not committed
    ("manifest.Manifest.commit", "after", 1),  # a first batch of sources committed
    ("compact._merge", "after", 2),  # a compaction's merged file staged, not swapped
    ("compact._swap", "after", 1),  # swapped, not journalled as done
    ("compact._drop_siblings", "before", 2),  # swapped, its old copy still beside it
    ("compact._unmark", "before", 1),  # journalled done, markers still in place
]


@pytest.mark.parametrize("target,when,nth", KILL_POINTS)
def test_a_run_killed_at_any_step_is_finished_by_the_next(fleet, tmp_path, target, when, nth):
    reference = str(tmp_path / "reference")
    ingest([str(fleet.root)], reference, target_size=64 << 20)
    bundle = 0 if target.startswith("compact") else 64 << 10  # parts to compact; units of several sources
    lake = str(tmp_path / "lake")
    script = tmp_path / "killer.py"
    script.write_text(_KILLER.format(src=SRC))
    r = subprocess.run([sys.executable, str(script), target, when, str(nth), str(fleet.root), lake, str(bundle)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == -signal.SIGKILL, r.stderr
    s = ingest([str(fleet.root)], lake, target_size=64 << 20)
    assert s.sources + s.unchanged == len(fleet.files)
    assert lake_rows(lake) == lake_rows(reference)
    assert_lake_is(lake, [str(f) for f in fleet.files])
    again = ingest([str(fleet.root)], lake, target_size=64 << 20)
    assert again.sources == 0 and lake_rows(lake) == lake_rows(reference)
    man = Manifest(lake)
    assert not man.pending and not man.compactions


# ------------------------------------------------------------------ engines
@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_two_workers_give_the_same_lake(fleet, tmp_path, mode):
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    ingest([str(fleet.root)], one, compact=False)
    ingest([str(fleet.root)], two, workers=2, mode=mode, compact=False)
    assert parts_of(one) == parts_of(two)
    for a, b in zip(parts_of(one), parts_of(two)):
        assert pq.read_table(os.path.join(one, a)).equals(pq.read_table(os.path.join(two, b)))


def test_a_distributed_cluster_gives_the_same_lake(fleet, tmp_path):
    distributed = pytest.importorskip("distributed")
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    ingest([str(fleet.root)], one, compact=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        ingest([str(fleet.root)], two, scheduler=cluster.scheduler_address, compact=False)
    assert lake_rows(one) == lake_rows(two) and parts_of(one) == parts_of(two)


def test_a_range_before_its_sessions_anchor_is_dated_by_it(tmp_path):
    from logb import AxisKind, AxisMode, DataType, Field, Schema, Writer

    schema = Schema(uuid=b"\x07" * 16, name="temp", record_bits=16, axis_kind=AxisKind.time,
                    axis_mode=AxisMode.implicit, axis_exp=-3, axis_step=10, fields=(Field("x", 0, 16, DataType.uint),))
    path = tmp_path / "dev" / "anchored.logb"
    path.parent.mkdir()
    with Writer(str(path), time_base="monotonic", segment_bytes=1 << 10) as w:
        sw = w.add_stream(schema)
        for k in range(40):  # segments of ~1 KiB: the anchor is in the last one
            sw.write_batch({"x": np.arange(200, dtype=np.uint16) + k}, axis_base=k * 2000)
        w.anchor(axis_ns=0, wall_ns=1_700_000_000 * 10**9, source="gps")
    lake, whole = str(tmp_path / "lake"), str(tmp_path / "whole")
    ingest([str(path)], whole)
    s = ingest([str(path)], lake, range_bytes=4 << 10, compact=False)
    assert s.parts > 1
    a, b = (lake_tables(x)["streams"].sort_by("device_time_ns") for x in (lake, whole))
    assert a["dated"].to_pylist() == b["dated"].to_pylist() == [True] * a.num_rows
    assert a["timestamp"].equals(b["timestamp"]) and a["session"].cast(pa.string()).equals(
        b["session"].cast(pa.string()))


def _largest(fleet, **want):
    return max((ff for ff in fleet.of_kind(*want.pop("kinds", ("clean",)))
                if all(getattr(ff, k) == v for k, v in want.items())), key=lambda f: os.path.getsize(f.path))


@pytest.mark.parametrize("pick", [
    dict(way="attached"),  # its DBC is ATTACHed once, in the first segment
    dict(kinds=("concatenated",)),  # two sessions
], ids=["attached-dbc", "two-sessions"])
def test_a_large_recording_is_split_into_independent_ranges(fleet, tmp_path, pick):
    lake, whole = str(tmp_path / "lake"), str(tmp_path / "whole")
    ff = _largest(fleet, **pick)
    ingest([str(ff.path)], whole)
    s = ingest([str(ff.path)], lake, range_bytes=8 << 10, compact=False)
    assert s.parts > len(parts_of(whole))  # segment-sized ranges, each its own task and window
    assert lake_rows(lake) == lake_rows(whole)
    assert_lake_is(lake, [str(ff.path)])
    a, b = (lake_tables(x)["signals"] for x in (lake, whole))
    assert sorted(zip(a["session"].cast(pa.string()).to_pylist(), a["timestamp"].cast(pa.int64()).to_pylist(),
                      a["dated"].to_pylist())) == sorted(zip(
        b["session"].cast(pa.string()).to_pylist(), b["timestamp"].cast(pa.int64()).to_pylist(),
        b["dated"].to_pylist()))


# ------------------------------------------------------------------ the command
def test_the_command_ingests_reports_and_summarises(fleet, tmp_path, capsys):
    lake = str(tmp_path / "lake")
    (tmp_path / "notes.txt").write_text("not a recording")
    code = main(["lake", str(fleet.root), str(tmp_path / "notes.txt"), "-o", lake, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1  # damaged sources are in the fleet: listed, and contribute what they recover
    assert out["sources"] == len(fleet.files) and out["not_recordings"] == [str(tmp_path / "notes.txt")]
    assert main(["lake", "info", lake, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sources"] == len(fleet.files)
    assert set(info["devices"]) == set(fleet.devices)
    assert info["datasets"]["signals"]["rows"] == lake_rows(lake)["signals"]
    assert {p for p, _w in info["problems"]} == {str(f.path) for f in fleet.of_kind("cut", "damaged", "growing")}
    assert main(["lake", "info", lake]) == 0
    text = capsys.readouterr().out
    assert "signals:" in text and "problem:" in text


def test_the_command_refuses_what_it_cannot_do(tmp_path, capsys):
    assert main(["lake", str(tmp_path / "missing"), "-o", str(tmp_path / "lake")]) == 64
    assert "no such file" in capsys.readouterr().err
    assert main(["lake", str(tmp_path)]) == 64
    assert main(["lake", "info", str(tmp_path)]) == 1
    assert "not a Logb lake" in capsys.readouterr().err


def test_the_readme_query_runs_on_a_lake(fleet, tmp_path, monkeypatch):
    duckdb = pytest.importorskip("duckdb")
    readme = open(os.path.join(os.path.dirname(HERE), "README.md")).read()
    sql = re.search(r"```sql\n(SELECT.*?)```", readme, re.S).group(1)
    lake = tmp_path / "lake"
    ingest([str(fleet.root)], str(lake))
    monkeypatch.chdir(tmp_path)  # the query names lake/ relative, as a user runs it
    rows = duckdb.connect().execute(sql).fetchall()
    sig = lake_tables(str(lake))["signals"]
    pack = sig.filter(pa.compute.and_(pa.compute.equal(sig["message"], "Pack"), sig["dated"]))
    assert rows and sum(r[2] for r in rows) == pack.num_rows
    assert {r[0] for r in rows} == set(pack["device"].to_pylist())


def test_an_unreadable_source_says_why_and_is_read_again_once_it_changes(tmp_path):
    bad = tmp_path / "dev" / "broken.log"
    bad.parent.mkdir()
    bad.write_text("(1700000000.000000) can0 123#00\n(1700000000.100000) can0 12X#zz\n" * 3)
    lake = str(tmp_path / "lake")
    s = ingest([str(tmp_path / "dev")], lake)
    assert s.sources == 0 and [p for p, _w in s.problems] == [str(bad)]
    st = Manifest(lake).by_path(str(bad))
    assert st.report["error"] and st.rows == {} and not parts_of(lake)
    assert ingest([str(tmp_path / "dev")], lake).unchanged == 1  # not retried while unchanged
    bad.write_text("(1700000000.000000) can0 123#00\n")
    os.utime(bad, ns=(1, 1))
    s = ingest([str(tmp_path / "dev")], lake)
    assert s.sources == 1 and not s.problems and lake_rows(lake) == {"frames": 1}


def test_progress_is_reported_unit_by_unit(fleet, tmp_path):
    calls = []
    ingest([str(fleet.root)], str(tmp_path / "lake"), progress=lambda done, total, s: calls.append(
        (done, total, s.frames, s.sources)), bundle_bytes=64 << 10)
    units = calls[0][1]
    assert 1 < units < len(fleet.files)  # small sources are bundled
    assert [c[0] for c in calls] == list(range(1, units + 1)) and {c[1] for c in calls} == {units}
    assert calls[-1][2] > calls[0][2] > 0
    assert calls[-1][3] == len(fleet.files)


def test_dbc_rule_texts(tmp_path):
    from logb.errors import UsageError
    from logb.lake import DbcRule

    dbc = tmp_path / "pt.dbc"
    dbc.write_text("VERSION \"\"\n")
    assert DbcRule.parse(str(dbc)) == DbcRule("*", "*", str(dbc))
    assert DbcRule.parse(f"can1={dbc}") == DbcRule("*", "can1", str(dbc))
    assert DbcRule.parse(f"truck-*/can*={dbc}") == DbcRule("truck-*", "can*", str(dbc))
    rule = DbcRule.parse(f"truck-*/can*={dbc}")
    assert rule.matches("truck-07", "can0") and not rule.matches("van-01", "can0")
    with pytest.raises(UsageError, match="no such file"):
        DbcRule.parse(f"can1={tmp_path / 'missing.dbc'}")


def test_a_source_failing_midway_leaves_no_row_in_the_parts_it_shared(fleet, tmp_path, monkeypatch):
    from logb.lake import units

    folder = tmp_path / "uploads" / fleet.devices[0]  # one device: one bundle, one unit
    folder.mkdir(parents=True)
    for ff in [ff for ff in fleet.of_kind("clean") if ff.device == fleet.devices[0]][:4]:
        shutil.copy(ff.path, folder / ff.path.name)
    files = sorted(str(p) for p in folder.iterdir())
    victim, real = files[1], units.decode_range

    def failing_after_its_rows(f, lo, hi, source, *rest):
        sink = real(f, lo, hi, source, *rest)  # its rows are in the unit's open parts by now
        if source == victim:
            raise ValueError("a frame no reader expected")
        return sink

    monkeypatch.setattr(units, "decode_range", failing_after_its_rows)
    lake = str(tmp_path / "lake")
    s = ingest([str(folder)], lake)
    assert s.problems == [(victim, "ValueError: a frame no reader expected")] and s.sources == 3
    from logb.lake.parts import unit_of

    assert len({unit_of(os.path.basename(p)) for p in parts_of(lake)}) == 1  # the four shared one unit
    monkeypatch.undo()
    assert_lake_is(lake, [f for f in files if f != victim])
    assert victim not in by_source(lake_tables(lake))


def test_copies_in_one_run_shorter_files_and_shared_sessions(fleet, tmp_path, capsys):
    a, b = (ff.path for ff in fleet.of_kind("clean")[:2])
    up = tmp_path / "up"
    up.mkdir()
    for name in ("a.logb", "copy-of-a.logb"):
        shutil.copy(a, up / name)
    lake = str(tmp_path / "lake")
    s = ingest([str(up)], lake)
    assert s.sources == 1 and s.duplicates == [(str(up / "copy-of-a.logb"), str(up / "a.logb"))]
    # a recording pulled again, shorter: nothing new, nothing twice
    whole = (up / "a.logb").read_bytes()
    (up / "a.logb").write_bytes(whole[: len(whole) - 100])
    os.utime(up / "a.logb", ns=(1, 1))
    rows = lake_rows(lake)
    s = ingest([str(up / "a.logb")], lake)
    assert s.sources == 0 and "shorter than" in s.problems[0][1] and lake_rows(lake) == rows
    # a file holding a's session again is its own source, and info says so
    (up / "a.logb").write_bytes(whole)
    (up / "cat.logb").write_bytes(whole + b.read_bytes()[16:])
    ingest([str(up / "cat.logb")], lake)
    assert main(["lake", "info", lake]) == 0
    assert "is in 2 sources" in capsys.readouterr().out


def test_object_columns_keep_their_kind():
    from logb.lake.tables import _values

    texts = _values(pa, np.array(["idle", None, "drive"], dtype=object))
    blobs = _values(pa, np.array([b"\x00\x01", b""], dtype=object))
    assert texts.type == pa.string() and texts.to_pylist() == ["idle", None, "drive"]
    assert blobs.type == pa.binary() and blobs.to_pylist() == [b"\x00\x01", b""]

"""`logb lake info LAKE`: what a lake holds, from its manifest and its parts' footers
(no row is read): devices, messages, buses and streams, time span, rows, bytes, and
the sources with problems."""

import os
from dataclasses import dataclass, field
from urllib.parse import unquote

from .manifest import Manifest
from .parts import walk_parts


@dataclass
class Info:
    lake: str
    datasets: dict = field(default_factory=dict)  # dataset -> {rows, bytes, parts, first, last, names}
    devices: dict = field(default_factory=dict)  # device -> rows
    sources: int = 0
    problems: list = field(default_factory=list)  # (path, what)
    shared_sessions: dict = field(default_factory=dict)  # session -> its sources, when more than one
    pending: int = 0  # unfinished ingests the next run redoes
    compactions: int = 0  # unfinished compactions the next run finishes

    def as_json(self):
        return dict(self.__dict__)


def lake_info(lake):
    import pyarrow.parquet as pq

    man = Manifest(lake)
    out = Info(lake, sources=len(man.sources), pending=len(man.pending), compactions=len(man.compactions))
    seen = {}
    for s in man.sources.values():
        for session in s.sessions:
            seen.setdefault(session, []).append(s.path)
    # a writer session in two sources is in the lake twice (`logb cat a b > c`, then all three)
    out.shared_sessions = {k: sorted(v) for k, v in seen.items() if len(v) > 1}
    for s in man.sources.values():
        rep = s.report or {}
        if rep.get("error"):
            out.problems.append((s.path, rep["error"]))
        elif rep.get("damaged"):
            out.problems.append((s.path, rep.get("text", "damaged")))
    for dataset, dirpath, name in walk_parts(lake):
        if name.startswith((".", "_")) or not name.endswith(".parquet"):
            continue
        path = os.path.join(dirpath, name)
        md = pq.ParquetFile(path).metadata
        keys = dict(_hive(os.path.relpath(dirpath, os.path.join(lake, dataset))))
        d = out.datasets.setdefault(dataset, {"rows": 0, "bytes": 0, "parts": 0, "first": None, "last": None,
                                              "names": {}})
        d["rows"] += md.num_rows
        d["bytes"] += os.path.getsize(path)
        d["parts"] += 1
        name_key = next((k for k in keys if k not in ("device", "date")), None)
        if name_key:
            d["names"][keys[name_key]] = d["names"].get(keys[name_key], 0) + md.num_rows
        if "device" in keys:
            out.devices[keys["device"]] = out.devices.get(keys["device"], 0) + md.num_rows
        lo, hi = _span(md)
        if lo is not None:
            d["first"] = lo if d["first"] is None else min(d["first"], lo)
            d["last"] = hi if d["last"] is None else max(d["last"], hi)
    for d in out.datasets.values():
        d["first"], d["last"] = (None if v is None else v.isoformat() for v in (d["first"], d["last"]))
    return out


def _hive(rel):
    for piece in rel.split(os.sep):
        k, sep, v = piece.partition("=")
        if sep:
            yield k, unquote(v)


def _span(md):
    """(min, max) of the dated timestamps in a part's footer statistics (None if none)."""
    names = md.schema.to_arrow_schema().names
    if "timestamp" not in names or "dated" not in names:
        return None, None
    ts, dated = names.index("timestamp"), names.index("dated")
    lo = hi = None
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        st, dst = rg.column(ts).statistics, rg.column(dated).statistics
        if st is None or not st.has_min_max or dst is None or not dst.has_min_max or not dst.max:
            continue  # undated rows: their timestamp is the device's time, not a date
        lo = st.min if lo is None else min(lo, st.min)
        hi = st.max if hi is None else max(hi, st.max)
    return lo, hi


def dataset(lake, name="signals"):
    """A pyarrow Dataset of one of the lake's datasets, its schema unified over every part
    (pyarrow.dataset alone takes the first file's: a message's signals would be missing
    from the others' partitions)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    top = os.path.join(lake, name)
    files = [os.path.join(d, n) for _ds, d, n in walk_parts(lake) if _ds == name
             and n.endswith(".parquet") and not n.startswith((".", "_"))]
    if not files:
        raise FileNotFoundError(f"{top}: no parts")
    part = ds.partitioning(flavor="hive")
    schema = pa.unify_schemas([pq.read_schema(f) for f in files], promote_options="permissive")
    found = ds.dataset(files, format="parquet", partitioning=part, partition_base_dir=top)
    for fld in found.schema:
        if fld.name not in schema.names:
            schema = schema.append(fld)  # the partition keys
    return ds.dataset(files, schema=schema, format="parquet", partitioning=part, partition_base_dir=top)

"""Compaction: the small parts of one partition merged into files of about a target size.

A reader listing a partition must never see a merged file beside the parts it came
from (every row twice). So the partition is rebuilt beside itself, in a hidden sibling
folder (`.date=….compact-<id>`: the merged file, hard links of the files it keeps, and
a `_compaction-<id>` marker), and the two folders are swapped in one atomic step
(Linux renameat2 RENAME_EXCHANGE): a reader sees the old partition or the new one.
Where the kernel or filesystem lacks the exchange, two renames do it and a reader may,
for that instant, find the partition missing — never doubled.

The manifest journals the compactions (`compact-begin` … `compact-done`); a run killed
in between is finished by the next one: swapped (the marker is in the partition) →
done; not swapped → the sibling is deleted and the parts stay as they were. Partitions
are compacted in parallel, one Dask task each (the run alone writes the journal).
"""

import ctypes
import errno
import hashlib
import os
import shutil
from dataclasses import dataclass

from . import engine
from .parts import DATASETS, dictionary_columns, fsync_dir

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@dataclass
class Summary:
    partitions: int = 0  # partitions compacted
    inputs: int = 0  # parts merged
    outputs: int = 0  # files they became
    bytes_in: int = 0
    bytes_out: int = 0


def compact_lake(man, target_size, min_parts=2, workers=1, mode="threads", scheduler=None):
    """Merge the small parts of every partition of the lake (under `man`'s lock): one Dask
    task per partition (engine.run), its merges one after another (each swaps the folder)."""
    summary = Summary()
    jobs = []
    for dataset in DATASETS:
        top = os.path.join(man.lake, dataset)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            files = sorted(n for n in filenames if n.endswith(".parquet") and not n.startswith("."))
            rel = os.path.relpath(dirpath, man.lake)
            merges = [_plan(rel, group) for group in _bins(dirpath, files, target_size) if len(group) >= min_parts]
            if merges:
                jobs.append((man.lake, rel, merges))
    if not jobs:
        return summary
    man.append({"op": "compact-begin", "compactions": [m for _lake, _rel, merges in jobs for m in merges]})
    done = []

    def on_result(_i, results):
        for cid, bytes_in, bytes_out, inputs in results:
            done.append(cid)
            summary.inputs += inputs
            summary.outputs += 1
            summary.bytes_in += bytes_in
            summary.bytes_out += bytes_out
        summary.partitions += 1

    engine.run(compact_partition, jobs, on_result, workers=workers, mode=mode, scheduler=scheduler)
    man.append({"op": "compact-done", "ids": done})
    for _lake, rel, merges in jobs:
        for m in merges:
            _unmark(os.path.join(man.lake, rel), m["id"])
    return summary


def _plan(rel, inputs):
    cid = hashlib.blake2b("\0".join([rel, *inputs]).encode(), digest_size=8).hexdigest()
    return {"id": cid, "partition": rel, "inputs": inputs, "output": f"c-{cid}.parquet"}


def compact_partition(job):
    """A task: one partition's merges, each swapped in (its marker stays until the run
    journals it done). Returns (id, bytes in, bytes out, inputs) per merge."""
    lake, rel, merges = job
    partition = os.path.join(lake, rel)
    out = []
    for m in merges:
        bytes_in = sum(os.path.getsize(os.path.join(partition, n)) for n in m["inputs"])
        _merge_and_swap(partition, m["id"], m["inputs"], m["output"])
        out.append((m["id"], bytes_in, os.path.getsize(os.path.join(partition, m["output"])), len(m["inputs"])))
    return out


def _bins(dirpath, files, target_size):
    """Groups of small files (each under half the target) of at most about target_size."""
    sized = [(n, os.path.getsize(os.path.join(dirpath, n))) for n in files]
    small = [(n, s) for n, s in sized if s < target_size // 2]
    group, total = [], 0
    for n, s in small:
        if group and total + s > target_size:
            yield group
            group, total = [], 0
        group.append(n)
        total += s
    if group:
        yield group


def _merge_and_swap(partition, cid, inputs, output):
    staging = _sibling(partition, f"compact-{cid}")
    if os.path.exists(staging):
        shutil.rmtree(staging)
    os.mkdir(staging)
    tmp = os.path.join(staging, "." + output + ".tmp")
    _merge([os.path.join(partition, n) for n in inputs], tmp)
    os.replace(tmp, os.path.join(staging, output))
    for name in os.listdir(partition):  # what stays, an earlier merge's marker included
        if name not in inputs:
            os.link(os.path.join(partition, name), os.path.join(staging, name))
    with open(os.path.join(staging, f"_compaction-{cid}"), "wb") as fh:
        os.fsync(fh.fileno())
    fsync_dir(staging)
    _swap(partition, staging, _sibling(partition, f"old-{cid}"))
    _drop_siblings(partition, cid)  # the old copy; the marker says it was swapped


def _sibling(partition, what):
    parent, leaf = os.path.split(partition)
    return os.path.join(parent, f".{leaf}.{what}")


def _merge(paths, out):
    """The rows of `paths` into one Parquet file, batch by batch (memory: a row group),
    their schemas unified (a column some parts lack is null there)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.unify_schemas([pq.read_schema(p) for p in paths], promote_options="permissive")
    with pq.ParquetWriter(out, schema, compression="zstd", use_dictionary=dictionary_columns(schema)) as w:
        for p in paths:  # one input open at a time, decoded on this thread: a row group in memory
            with pq.ParquetFile(p) as f:
                for batch in f.iter_batches(batch_size=1 << 16, use_threads=False):
                    w.write_table(_aligned(pa, pa.Table.from_batches([batch]), schema))
    with open(out, "rb+") as fh:
        os.fsync(fh.fileno())


def _aligned(pa, table, schema):
    cols = []
    for fld in schema:
        if fld.name in table.column_names:
            col = table.column(fld.name)
            cols.append(col if col.type == fld.type else col.cast(fld.type))
        else:
            cols.append(pa.nulls(table.num_rows, fld.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _swap(partition, staging, old):
    """After this, `partition` holds the staging folder's contents (staging: the old ones)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is not None:
        if fn(_AT_FDCWD, os.fsencode(partition), _AT_FDCWD, os.fsencode(staging), _RENAME_EXCHANGE) == 0:
            fsync_dir(os.path.dirname(partition))
            return
        if ctypes.get_errno() not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), partition)
    os.rename(partition, old)
    os.rename(staging, partition)
    os.rename(old, staging)
    fsync_dir(os.path.dirname(partition))


def _drop_siblings(partition, cid):
    for what in (f"compact-{cid}", f"old-{cid}"):
        sib = _sibling(partition, what)
        if os.path.exists(sib):
            shutil.rmtree(sib)


def _unmark(partition, cid):
    marker = os.path.join(partition, f"_compaction-{cid}")
    if os.path.exists(marker):
        os.unlink(marker)


def recover_compactions(man):
    """Finish each compaction a killed run left: done if its swap happened, else undone."""
    for cid, e in list(man.compactions.items()):
        partition = os.path.join(man.lake, e["partition"])
        staging = _sibling(partition, f"compact-{cid}")
        old = _sibling(partition, f"old-{cid}")
        swapped = os.path.exists(os.path.join(partition, f"_compaction-{cid}"))
        if not swapped and not os.path.exists(partition) and os.path.exists(os.path.join(staging,
                                                                                          f"_compaction-{cid}")):
            os.rename(staging, partition)  # killed between the fallback's two renames
            swapped = True
            if os.path.exists(old):
                os.rename(old, staging)
        _drop_siblings(partition, cid)
        man.append({"op": "compact-done" if swapped else "compact-abort", "ids": [cid]})
        _unmark(partition, cid)

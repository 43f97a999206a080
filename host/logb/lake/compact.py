"""Compaction: the small parts of one partition merged into files of about a target size.

A reader listing a partition must never see a merged file beside the parts it came
from (every row twice). So the partition is rebuilt beside itself, in a hidden sibling
folder (`.date=….compact-<id>`: the merged file, hard links of the files it keeps, and
a `_compaction-<id>` marker), and the two folders are swapped in one atomic step
(Linux renameat2 RENAME_EXCHANGE): a reader sees the old partition or the new one.
Where the kernel or filesystem lacks the exchange, two renames do it and a reader may,
for that instant, find the partition missing — never doubled.

The manifest journals each compaction (`compact-begin` … `compact-done`); a run killed
in between is finished by the next one: swapped (the marker is in the partition) →
done; not swapped → the sibling is deleted and the parts stay as they were.
"""

import ctypes
import errno
import hashlib
import os
import shutil
from dataclasses import dataclass

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


def compact_lake(man, target_size, min_parts=2):
    """Merge the small parts of every partition of the lake (under `man`'s lock)."""
    summary = Summary()
    for dataset in DATASETS:
        top = os.path.join(man.lake, dataset)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            files = sorted(n for n in filenames if n.endswith(".parquet") and not n.startswith("."))
            for group in _bins(dirpath, files, target_size):
                if len(group) >= min_parts:
                    _compact(man, dirpath, group, summary)
    return summary


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


def _compact(man, partition, inputs, summary):
    rel = os.path.relpath(partition, man.lake)
    cid = hashlib.blake2b("\0".join([rel, *inputs]).encode(), digest_size=8).hexdigest()
    output = f"c-{cid}.parquet"
    staging = _sibling(partition, f"compact-{cid}")
    bytes_in = sum(os.path.getsize(os.path.join(partition, n)) for n in inputs)
    man.append({"op": "compact-begin", "id": cid, "partition": rel, "inputs": inputs, "output": output})
    if os.path.exists(staging):
        shutil.rmtree(staging)
    os.mkdir(staging)
    tmp = os.path.join(staging, "." + output + ".tmp")
    _merge([os.path.join(partition, n) for n in inputs], tmp)
    os.replace(tmp, os.path.join(staging, output))
    for name in os.listdir(partition):
        if name not in inputs and not name.startswith("_compaction-"):
            os.link(os.path.join(partition, name), os.path.join(staging, name))
    with open(os.path.join(staging, f"_compaction-{cid}"), "wb") as fh:
        os.fsync(fh.fileno())
    fsync_dir(staging)
    _swap(partition, staging, _sibling(partition, f"old-{cid}"))
    _finish(man, partition, cid)
    summary.partitions += 1
    summary.inputs += len(inputs)
    summary.outputs += 1
    summary.bytes_in += bytes_in
    summary.bytes_out += os.path.getsize(os.path.join(partition, output))


def _sibling(partition, what):
    parent, leaf = os.path.split(partition)
    return os.path.join(parent, f".{leaf}.{what}")


def _merge(paths, out):
    """The rows of `paths` into one Parquet file, batch by batch (memory: a row group),
    their schemas unified (a column some parts lack is null there)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [pq.ParquetFile(p) for p in paths]
    schema = pa.unify_schemas([f.schema_arrow for f in files], promote_options="permissive")
    with pq.ParquetWriter(out, schema, compression="zstd", use_dictionary=dictionary_columns(schema)) as w:
        for f in files:
            for batch in f.iter_batches(batch_size=1 << 16):
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


def _finish(man, partition, cid):
    """The swap is done: journal it, then drop the old copy and the marker."""
    man.append({"op": "compact-done", "id": cid})
    for what in (f"compact-{cid}", f"old-{cid}"):
        sib = _sibling(partition, what)
        if os.path.exists(sib):
            shutil.rmtree(sib)
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
        if swapped:
            _finish(man, partition, cid)
            continue
        for sib in (staging, old):
            if os.path.exists(sib):
                shutil.rmtree(sib)
        man.append({"op": "compact-abort", "id": cid})

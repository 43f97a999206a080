"""A fleet's recordings as a hive-partitioned Parquet data lake, on Dask (docs/LAKE.md).

    from logb.lake import ingest
    summary = ingest(["uploads/"], "lake/", workers=2)

Layers: sources (what a SRC names, and each file's identity) → manifest (the lake's
append-only journal) → tables (a byte range decoded into Arrow batches per partition) →
parts (Parquet files that appear whole) → units/engine (Dask tasks) → pipeline (plan, run,
commit) → compact (merging small parts, atomically) → info (what the lake holds).
"""

from .info import dataset, lake_info
from .pipeline import DbcRule, Summary, ingest

__all__ = ["DbcRule", "Summary", "dataset", "ingest", "lake_info"]

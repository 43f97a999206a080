"""The lake's manifest: an append-only journal of JSON lines in LAKE/_logb/manifest.jsonl.

Append-only for the reason Logb files are: a run killed at any moment leaves every line
it finished, and at worst one torn last line, which the next open ignores and cuts off.
Each line is one event:

- `begin`   sources (or their new tails) are about to be ingested: for each, the offset
            it is read `from` and the units (parts.part_name) that will hold its rows;
- `commit`  sources whose ingest is complete: what each is (identity), how far it was
            read (`ingested_to`), what it gave (rows per dataset, frames), its
            report. One line per batch, so the sources that share a unit's parts are
            committed together or not at all;
- `compact-begin` / `compact-done` / `compact-abort`  a partition's merge (compact.py).

A source begun and not committed marks its units' parts, which the next run deletes
before redoing the work: that is what makes a rerun idempotent.
"""

import fcntl
import json
import os
from dataclasses import dataclass, field

from ..errors import LakeBusyError, LakeError

LOGB_DIR = "_logb"  # pyarrow.dataset and DuckDB's `*.parquet` globs skip it
MANIFEST = "manifest.jsonl"
LOCK = "lock"


@dataclass
class SourceState:
    """What the lake holds of one source: the last `source` event, and what is pending."""

    id: str
    path: str
    size: int
    mtime_ns: int
    fingerprint: str
    ingested_to: int
    device: str
    kind: str
    sessions: list = field(default_factory=list)
    rows: dict = field(default_factory=dict)  # dataset -> rows written, over every ingest
    frames: int = 0  # CAN frames and sensor records read, over every ingest
    ingests: int = 0
    report: dict = field(default_factory=dict)  # the last ingest's recovery report

    def as_json(self):
        return dict(self.__dict__)


class Manifest:
    """The journal of one lake, opened under its lock (one writer at a time)."""

    def __init__(self, lake, create=False):
        self.lake = lake
        self.dir = os.path.join(lake, LOGB_DIR)
        if not os.path.isdir(self.dir):
            if not create:
                raise LakeError(f"{lake}: not a Logb lake (no {LOGB_DIR}/{MANIFEST})")
            os.makedirs(self.dir, exist_ok=True)
        self.path = os.path.join(self.dir, MANIFEST)
        self._lock = None
        self.sources = {}  # id -> SourceState
        self.pending = {}  # source id -> {"from": offset, "units": [uid]} begun, not committed
        self.compactions = {}  # id -> compact-begin event not yet done
        self._paths = {}  # path -> id
        self._identities = {}  # (size, fingerprint) -> id
        self.torn = 0  # bytes of a torn last line cut off on open
        self._load()

    # -------------------------------------------------------------- locking
    def lock(self):
        """Take the lake's write lock (LakeBusyError when another run holds it)."""
        fd = os.open(os.path.join(self.dir, LOCK), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LakeBusyError(f"{self.lake}: another `logb lake` is writing this lake") from None
        self._lock = fd
        self._cut_torn_tail()
        return self

    def close(self):
        if self._lock is not None:
            os.close(self._lock)  # releases the flock
            self._lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -------------------------------------------------------------- reading
    def _load(self):
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb") as fh:
            data = fh.read()
        good = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # torn: the run that wrote it was killed mid-line
            try:
                event = json.loads(line)
            except ValueError:
                break
            self._apply(event)
            good += len(line)
        self.torn = len(data) - good

    def _apply(self, e):
        op = e.get("op")
        if op == "begin":
            for b in e["sources"]:
                self.pending[b["id"]] = {"from": b["from"], "units": b["units"]}
        elif op == "commit":
            for fields in e["sources"]:
                state = SourceState(**fields)
                self.sources[state.id] = state
                self._paths[state.path] = state.id
                self._identities[state.size, state.fingerprint] = state.id
                self.pending.pop(state.id, None)
        elif op == "compact-begin":
            for c in e["compactions"]:
                self.compactions[c["id"]] = c
        elif op in ("compact-done", "compact-abort"):
            for cid in e["ids"]:
                self.compactions.pop(cid, None)
        else:
            raise LakeError(f"{self.path}: unknown manifest event {op!r} (a newer logb wrote this lake?)")

    def _cut_torn_tail(self):
        if self.torn:
            with open(self.path, "r+b") as fh:
                fh.truncate(os.path.getsize(self.path) - self.torn)
            self.torn = 0

    # -------------------------------------------------------------- writing
    def append(self, event):
        """Write one event durably (fsync), then apply it."""
        if self._lock is None:
            raise LakeError("the manifest is written only under the lake's lock")
        line = (json.dumps(event, separators=(",", ":"), sort_keys=True) + "\n").encode()
        with open(self.path, "ab") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self._apply(event)

    def begin(self, entries):
        """One `begin` line: [{"id", "from", "units"}] of the sources a run is about to read."""
        if entries:
            self.append({"op": "begin", "sources": entries})

    def commit(self, states):
        """One `commit` line for these SourceStates: all of them, or (torn) none."""
        if states:
            self.append({"op": "commit", "sources": [s.as_json() for s in states]})

    # -------------------------------------------------------------- lookups
    def by_path(self, path):
        sid = self._paths.get(path)
        return None if sid is None else self.sources[sid]

    def by_identity(self, size, fingerprint):
        sid = self._identities.get((size, fingerprint))
        return None if sid is None else self.sources[sid]

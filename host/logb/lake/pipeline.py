"""`logb lake SRC… -o LAKE`: plan the work a run has to do, run it on Dask, commit it.

Planning (this process): every file the SRCs name is matched against the manifest —
unchanged (same path, size and mtime: not even read), grown (its old prefix still hashes
alike: only its new tail is read, from where the last run stopped, the end of its last
intact frame), the same as a source already in (moved or copied: skipped), replaced or
new (ingested whole). Files that are neither Logb nor a CAN trace are listed and left.
A large source becomes units of about RANGE_BYTES, split at segment starts; small ones
are bundled, by device, into units of about that size.

Running (Dask tasks, units.run_unit): each unit decodes its pieces and writes its parts.
Committing (this process, as results arrive): a source once all its units are in, in
batches. Before anything runs, the planned sources are begun (with their units); the next
run deletes the parts of units begun and not committed, and redoes that work.
"""

import dataclasses
import hashlib
import os
import time
from dataclasses import dataclass, field

from ..errors import LogbError, UsageError
from . import engine, parts, units
from .units import DbcRule
from .manifest import Manifest, SourceState
from .sources import expand, fingerprint, source_id

RANGE_BYTES = 16 << 20  # one unit's bytes of a large source: bounded memory per task
RECORDS = 1 << 15  # frames per decoded batch in a unit


@dataclass
class Summary:
    sources: int = 0  # sources read this run (new, grown or replaced)
    unchanged: int = 0
    duplicates: list = field(default_factory=list)  # (path, the path of the source it equals)
    not_recordings: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # (path, what)
    frames: int = 0  # CAN frames and sensor records decoded
    rows: int = 0  # rows written (a CAN frame counts in `frames` and, decoded, `signals`)
    parts: int = 0
    bytes: int = 0
    seconds: float = 0.0
    removed: int = 0  # parts of unfinished work the run deleted before redoing it
    compacted: object = None  # compact.Summary, when compaction ran

    def as_json(self):
        out = dict(self.__dict__)
        out["compacted"] = None if self.compacted is None else self.compacted.__dict__
        return out


def ingest(sources, lake, dbc=None, workers=1, mode="threads", scheduler=None, target_size=128 << 20,
           compact=True, progress=None, records=RECORDS, range_bytes=RANGE_BYTES, bundle_bytes=None):
    """Ingest `sources` (paths, folders, globs) into the lake at `lake` (created if need
    be). `dbc`: --dbc rule texts (DbcRule). `progress(done_units, total_units, summary)`
    is called as units finish. `range_bytes`: a large source's bytes per unit;
    `bundle_bytes` (default range_bytes): small sources' bytes per unit (0: one each).
    Returns a Summary."""
    if mode not in ("threads", "processes"):
        raise UsageError(f"mode must be threads or processes, not {mode!r}")
    rules = [r if isinstance(r, DbcRule) else DbcRule.parse(r) for r in (dbc or ())]
    start = time.monotonic()
    os.makedirs(lake, exist_ok=True)
    summary = Summary()
    with Manifest(lake, create=True).lock() as man:
        summary.removed = recover(man)
        plan = _plan(man, expand(sources), summary)
        specs = _units(lake, plan, rules, records, range_bytes,
                       range_bytes if bundle_bytes is None else bundle_bytes)
        man.begin([{"id": job.id, "from": job.resume, "units": job.units} for job in plan])
        by_source = {job.id: job for job in plan}
        done = [0]
        commits = _Commits(man)

        def on_result(i, result):
            done[0] += 1
            summary.parts += len(result.written)
            summary.bytes += sum(w[4] for w in result.written)
            finished = []
            for piece in result.pieces:
                job = by_source[piece.source_id]
                job.results.append(piece)
                summary.frames += piece.records
                summary.rows += sum(piece.rows.values())
                if len(job.results) == len(job.units):
                    finished.append(_state(job, summary))
            commits.add(finished)
            if progress is not None:
                progress(done[0], len(specs), summary)

        engine.run(units.run_unit, specs, on_result, workers=workers, mode=mode, scheduler=scheduler)
        commits.flush()
        if compact:
            from .compact import compact_lake

            summary.compacted = compact_lake(man, target_size, workers=workers, mode=mode, scheduler=scheduler)
    summary.seconds = time.monotonic() - start
    return summary


def recover(man):
    """Finish or undo what a killed run left: parts of unfinished ingests (deleted; their
    sources are redone), an unfinished compaction (completed or rolled back)."""
    from .compact import recover_compactions

    removed = 0
    if man.pending:
        removed = parts.remove_units(man.lake, {u for p in man.pending.values() for u in p["units"]})
    recover_compactions(man)
    return removed


@dataclass
class _Job:
    cand: object
    id: str
    kind: str  # "logb" or a trace format's NAME
    resume: int  # the first offset to read
    previous: object  # the SourceState it continues, or None
    fingerprint: str
    units: list = field(default_factory=list)
    results: list = field(default_factory=list)


def _plan(man, candidates, summary):
    from ..can import formats

    jobs = []
    planned = {}  # (size, fingerprint) -> the candidate this run reads: a copy given twice is read once
    for cand in candidates:
        state = man.by_path(cand.path)
        if state is not None and state.size == cand.size and state.mtime_ns == cand.mtime_ns:
            summary.unchanged += 1
            continue
        try:
            kind = formats.sniff(cand.path)
        except (OSError, UsageError) as exc:
            summary.problems.append((cand.path, str(exc)))
            continue
        if kind is None:
            summary.not_recordings.append(cand.path)
            continue
        kind = "logb" if kind == "logb" else kind.NAME
        fp = fingerprint(cand.path, cand.size)
        if state is not None:
            if cand.size == state.size and fp == state.fingerprint:
                summary.unchanged += 1  # touched, not changed
                continue
            if cand.size > state.size and fingerprint(cand.path, state.size) == state.fingerprint:
                if kind != "logb":
                    summary.problems.append((cand.path, "a trace that grew after it was ingested: traces are "
                                                        "ingested once, complete (convert it with logb import)"))
                    continue
                jobs.append(_Job(cand, state.id, kind, state.ingested_to, state, fp))
                continue
            if cand.size < state.size and kind == "logb" and _same_sessions(cand.path, state):
                # the recording as it was, cut shorter (pulled again, say): every row it has is in
                summary.problems.append((cand.path, f"{cand.size} bytes, shorter than the {state.size} "
                                                    f"ingested from it: its rows stay as ingested"))
                continue
        same = man.by_identity(cand.size, fp) or planned.get((cand.size, fp))
        if same is not None:
            summary.duplicates.append((cand.path, same.path))
            continue
        planned[cand.size, fp] = cand
        sid = source_id(fp, cand.size)
        if sid in man.sources:  # a source replaced by a file that hashes as an older one did
            sid = source_id(fp + cand.path, cand.size)
        jobs.append(_Job(cand, sid, kind, 0, None, fp))
    return jobs


def _same_sessions(path, state):
    """Does a file hold only writer sessions (logb.session: 128 random bits) of `state`?"""
    from ..reader import LogbFile

    try:
        with LogbFile(path) as f:
            ids = [s.id for s in f.sessions]
    except LogbError:
        return False
    return bool(ids) and all(i and i in state.sessions for i in ids)


def _units(lake, plan, rules, records, range_bytes, bundle_bytes):
    """The UnitSpecs of a plan: a large Logb source's new bytes in segment-aligned ranges of
    about range_bytes, each a unit; small sources bundled, by device, into units of about
    bundle_bytes (fewer, larger parts: less to write per file, less to compact). Sets each
    job's `units` (the ids of the units holding its rows)."""
    specs, bundle, weight = [], [], 0

    def close_bundle():
        nonlocal bundle, weight
        if bundle:
            specs.append(_spec(lake, bundle, rules, records))
        bundle, weight = [], 0

    for job in sorted(plan, key=lambda j: (j.cand.device, j.cand.path)):
        new = job.cand.size - job.resume
        if job.kind == "logb" and new > range_bytes:
            for lo, hi, window in _ranges(job, range_bytes):
                specs.append(_spec(lake, [_piece(job, lo, hi, window)], rules, records))
            continue
        if bundle and (weight + new > bundle_bytes or len(bundle) >= BUNDLE_MAX
                       or bundle[-1].device != job.cand.device):
            close_bundle()
        # a trace is converted whole: offsets are its conversion's, not the file's
        bundle.append(_piece(job, job.resume, job.cand.size) if job.kind == "logb" else _piece(job, 0, None))
        weight += new
    close_bundle()
    by_source = {job.id: job for job in plan}
    for spec in specs:
        for piece in spec.pieces:
            by_source[piece.source_id].units.append(spec.uid)
    return specs


BUNDLE_MAX = 256  # sources in one unit at most


def _piece(job, lo, hi, window=None):
    return units.Piece(job.id, job.cand.path, job.kind, job.cand.device, lo, hi, window)


def _spec(lake, pieces, rules, records):
    key = "\0".join(f"{p.source_id}:{p.lo}" for p in pieces)
    uid = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    return units.UnitSpec(lake, uid, pieces, rules, records)


def _ranges(job, range_bytes):
    """(lo, hi, window) of a large Logb file's new bytes, split at segment starts. A task
    reads only its window (units.window_file): from the segment its range starts in, with
    what the rest of the file says of the sessions there (their anchors may come later,
    SPEC §5.5) and the DBCs attached anywhere."""
    from ..can.dbc import MEDIA_TYPE
    from ..framing import FILE_HEADER_SIZE
    from ..reader import LogbFile

    size = job.cand.size
    with LogbFile(job.cand.path) as f:  # the planning scan: segments, sessions, attachments
        offsets = [s.offset for s in f.segments]
        sessions = [{"index": s.index, "id": s.id, "anchors": [dataclasses.asdict(a) for a in s.anchors],
                     "offsets": [f.segments[i].offset for i in s.segments]} for s in f.sessions]
        dbcs = [(a.name, a.data()) for a in f.attachments if a.media_type == MEDIA_TYPE and not a.problem]
        named = {st.uuid.hex(): st.meta["logb.can.dbc"] for st in f.streams.values() if "logb.can.dbc" in st.meta}
    cuts = [job.resume]
    for o in offsets:
        if o > job.resume and o - cuts[-1] >= range_bytes:
            cuts.append(o)
    for lo, hi in zip(cuts, cuts[1:] + [size]):
        # from the segment the range starts in (or the first frame: none starts before it)
        start = max([o for o in offsets if o <= lo], default=FILE_HEADER_SIZE)
        mine = [x for x in sessions if any(start <= o < hi for o in x["offsets"])]
        yield lo, hi, {"start": start, "sessions": mine, "dbcs": dbcs, "dbc_names": named}


class _Commits:
    """Commits, in batches: the parts are made durable with one filesystem sync per batch,
    then the batch is one manifest line (one fsync). A run killed between two batches
    redoes the sources of the last one (their begins stand)."""

    BATCH = 64
    SECONDS = 1.0

    def __init__(self, man):
        self.man = man
        self.pending = []
        self.last = time.monotonic()

    def add(self, states):
        """The sources a unit finished, together (they may share its parts)."""
        self.pending += states
        if len(self.pending) >= self.BATCH or time.monotonic() - self.last >= self.SECONDS:
            self.flush()

    def flush(self):
        if self.pending:
            parts.sync_filesystem(self.man.lake)
            self.man.commit(self.pending)
            self.pending = []
        self.last = time.monotonic()


def _state(job, summary):
    """The SourceState of a job whose units are all in."""
    results = sorted(job.results, key=lambda r: r.lo)
    errors = [r.error for r in results if r.error]
    prev = job.previous
    state = SourceState(
        id=job.id, path=job.cand.path, size=job.cand.size, mtime_ns=job.cand.mtime_ns,
        fingerprint=job.fingerprint, ingested_to=job.cand.size, device=job.cand.device, kind=job.kind,
        sessions=list(prev.sessions) if prev else [], rows=dict(prev.rows) if prev else {},
        frames=prev.frames if prev else 0, ingests=(prev.ingests if prev else 0) + 1)
    if errors:
        # a source that cannot be read contributes nothing (units.run_unit leaves it out of
        # their parts), and says why; it is read again once it changes
        state.report = {"error": errors[0]}
        state.ingested_to = job.resume
        summary.problems.append((job.cand.path, errors[0]))
        return state
    state.ingested_to = results[-1].ingested_to if job.kind == "logb" else job.cand.size
    for r in results:
        for k, v in r.rows.items():
            state.rows[k] = state.rows.get(k, 0) + v
        state.frames += r.records
        state.sessions += [s for s in r.sessions if s not in state.sessions]
    state.report = _merged_report(results)
    if state.report.get("damaged"):
        summary.problems.append((job.cand.path, state.report["text"]))
    summary.sources += 1
    return state


def _merged_report(results):
    skipped = [s for r in results for s in r.report.get("skipped", ())]
    skipped = sorted({tuple(s) for s in skipped})
    truncated = results[-1].report.get("truncated", False)
    out = {"skipped": [list(s) for s in skipped], "truncated": truncated,
           "rejected": sum(r.report.get("rejected", 0) for r in results),
           "damaged": bool(skipped) or truncated}
    if out["damaged"]:
        what = []
        if skipped:
            what.append(f"{len(skipped)} skipped range(s), {sum(b - a for a, b, _c in skipped)} bytes")
        if truncated:
            what.append(f"cut at offset {results[-1].ingested_to} (read up to its last intact frame)")
        out["text"] = "; ".join(what)
    return out

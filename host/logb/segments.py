"""Segments, writer sessions and anchors (SPEC §3.2, §3.3, §5.4, §5.5, §6.5).

The scan opens a Segment at every valid SYNC and gathers into it what the
segment's file-scope META and RUN frames state; after the scan,
resolve_sessions() groups the segments into writer sessions and merges their
facts, noting every disagreement (the first statement stands).
"""

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property

from .errors import MalformedPayloadError
from .tables import TIME_BASES
from .timebase import Clock, parse_anchor

# META keys that state a session fact: only believed before the segment's first DATA frame.
_SESSION_FACTS = ("logb.session", "logb.time_base")


@dataclass
class Segment:
    offset: int
    seq: int
    wall_time_ns: int
    end_before: bool
    session_id: object = None
    time_base: object = None
    meta: dict = field(default_factory=dict)
    anchors: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    session: int = -1
    data_seen: bool = False  # session facts are the META keys before the first DATA

    def take_meta(self, pairs, offset, note):
        """Apply one file-scope META frame's pairs (a dict, the last value of a
        repeated key winning); `note(offset, kind, message)` reports."""
        if self.data_seen and any(k in pairs for k in _SESSION_FACTS):
            note(offset, "late-session-fact",
                 "logb.session/logb.time_base after the segment's first DATA frame; ignored")
            pairs = {k: v for k, v in pairs.items() if k not in _SESSION_FACTS}
        if "logb.session" in pairs and self.session_id is None:
            self.session_id = pairs["logb.session"]
        if "logb.time_base" in pairs:
            if self.time_base is None:
                self.time_base = pairs["logb.time_base"]
            elif self.time_base != pairs["logb.time_base"]:
                note(offset, "time-base", "a second, different time base in one segment; ignored")
        if any(k.startswith("logb.anchor.") for k in pairs):
            try:
                anchor, problem = parse_anchor(pairs, offset)
            except MalformedPayloadError as exc:
                note(offset, "malformed-anchor", f"anchor ignored: {exc}")
            else:
                if problem:
                    note(offset, "malformed-anchor", problem)
                self.anchors.append(anchor)
        else:
            self.meta.update(pairs)


@dataclass
class Session:
    index: int
    id: object
    first_offset: int
    time_base: object = None
    meta: dict = field(default_factory=dict)
    anchors: list = field(default_factory=list)
    runs: dict = field(default_factory=dict)
    segments: list = field(default_factory=list)
    ended: bool = False
    _by_axis: list = field(default_factory=list, repr=False, compare=False)

    @cached_property
    def clock(self):
        """Built once, when first asked for (after the scan has merged every segment)."""
        return Clock(self.time_base, self.anchors)

    @property
    def basis(self):
        if self.time_base == "unix":
            return "unix"
        if self.time_base == "monotonic" and self.anchors:
            return "anchored"
        return "undated"


def resolve_sessions(segments, end_offsets, note):
    """Group `segments` (file order) into writer sessions (SPEC §3.3): a new
    session starts at a different logb.session, after an END, at segment_seq 0
    or when segment_seq goes back. Sets each segment's `session`; a session
    with an END after its start is `ended`."""
    sessions, prev = [], None
    for i, seg in enumerate(segments):
        cur = sessions[-1] if sessions else None
        if cur is None:
            new = True
        else:
            new = ((seg.session_id is not None and prev.session_id is not None
                    and seg.session_id != prev.session_id)
                   or seg.end_before or seg.seq == 0 or seg.seq < prev.seq)
            if not new and seg.seq == prev.seq:
                note(seg.offset, "segment-seq", f"segment_seq {seg.seq} repeated")
        if new:
            cur = Session(len(sessions), seg.session_id, seg.offset)
            sessions.append(cur)
        elif cur.id is None:
            cur.id = seg.session_id
        seg.session = cur.index
        cur.segments.append(i)
        _merge_segment(cur, seg, note)
        prev = seg
    starts = [s.first_offset for s in sessions]  # in file order
    for off in end_offsets:
        i = bisect_left(starts, off) - 1  # the last session that starts before the END
        if i >= 0:
            sessions[i].ended = True
    return sessions


def _axis_ns(anchor):
    return anchor.axis_ns


def _merge_segment(session, seg, note):
    if seg.time_base is not None:
        if session.time_base is None:
            session.time_base = seg.time_base
            if seg.time_base not in TIME_BASES:
                note(seg.offset, "time-base", f"unknown time base {seg.time_base!r}: undated")
        elif session.time_base != seg.time_base:
            note(seg.offset, "time-base",
                 f"segment declares time base {seg.time_base!r}, its session {session.time_base!r}; ignored")
    session.meta.update(seg.meta)
    ordered = session._by_axis  # the session's anchors by axis time, kept sorted as they come
    for anchor in seg.anchors:
        i = bisect_left(ordered, anchor.axis_ns, key=_axis_ns)
        if i < len(ordered) and ordered[i].axis_ns == anchor.axis_ns:
            note(anchor.offset, "anchor", "anchor at an axis time already anchored; the first stands")
            continue
        session.anchors.append(anchor)
        ordered.insert(i, anchor)
        if (i and ordered[i - 1].wall_ns > anchor.wall_ns) or (
                i + 1 < len(ordered) and ordered[i + 1].wall_ns < anchor.wall_ns):
            note(anchor.offset, "anchor", "anchor wall time goes backwards; used as given")
    for off, run in seg.runs:
        known = session.runs.get(run.run_id)
        if known is None:
            session.runs[run.run_id] = run
        elif known != run:
            note(off, "run-restated", f"RUN {run.run_id} restated with different parameters; the first stands")


def segment_at(segments, offset):
    """Index of the last segment (file order) that starts at or before `offset`."""
    lo, hi = 0, len(segments) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if segments[mid].offset <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo

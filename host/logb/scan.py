"""Frame scanning with recovery (SPEC §2.4, §10): every CRC-valid frame in
order, and an honest account of every byte that was not one.

`FrameScanner` is the one frame walker, sans-IO: `scan(buf)` walks a whole
input in place (an mmap is never copied), `feed(data)` / `close()` walk a
stream as its bytes arrive (a link, a pipe). Both produce the same events,
with absolute offsets: `FrameRef` (a CRC-valid frame; from feed() a `Frame`,
which carries its payload), `Skip` (a damaged range and its SPEC §10.2
cause) and `Resync` (where reading resumed after damage).

A frame whose CRC fails, or whose length runs past the end, is damage. The
resync rule (SPEC §10.3, GAPS G17) lives here and nowhere else: inside a
segment, reading resumes at the damaged frame's own end when a trusted frame
starts there, else at the earliest trusted frame or SYNC after the damage;
a CRC-valid SCHEMA or file header met on the way means a SYNC was lost, so
reading resumes at the next SYNC. To know what is trusted the scanner
follows the segments itself: a well-formed SYNC opens one, the SCHEMA frames
after it bind their stream_ids, END (or a malformed SYNC, or a file header)
closes it. A `Skip` says whether reading resumed inside the same segment
(`keeps_segment`: its bindings stand) or not. If nothing to resume at
follows, the input was cut inside the frame or the damage: that is
truncation, a report and never an exception. Strict mode raises
CorruptFrameError at the first damage instead.

Bounded memory when fed: the scanner holds only what a decision still needs
(a frame it waits for, a resume candidate, a few bytes of pattern). A frame
whose declared payload exceeds `max_payload` (MAX_HELD_PAYLOAD) is not waited
for (SPEC §10.3 allows it): fed, it is treated as running past the end of the
input, so a hostile length costs a resync, never gigabytes. `scan(buf)` has
the whole input and no such limit for frames read in order; a resume
candidate is held to `max_payload` in both modes, so both find the same.
"""

import queue
import threading
from dataclasses import dataclass, field

import numpy as np

from . import _backend
from ._kernels import SCAN_CRC, SCAN_END, SCAN_FULL
from .errors import CorruptFrameError, NotLogbError, UnsupportedVersionError
from .framing import (
    FILE_HEADER_SIZE,
    FRAME_HEADER,
    FRAME_HEADER_SIZE,
    FRAME_OVERHEAD,
    MAGIC,
    VERSION_MAJOR,
    SYNC_PATTERN,
    decode_file_header,
    frame_crc_ok,
    is_file_header,
)
from .tables import FrameType

SYNC_PAYLOAD_MIN = 32
# Resync only believes SYNC frames of plausible size, so hostile input full of
# sync patterns with huge lengths cannot make every candidate a full-file CRC.
SYNC_PAYLOAD_MAX = 1 << 16
# The largest payload a fed scanner waits for (far above any frame a logger writes).
MAX_HELD_PAYLOAD = 1 << 26
# The CRC work one resume search may spend (SPEC §10.3): this much, plus
# SEARCH_CRC_PER_BYTE for every byte searched. Honest damage never comes near
# it; hostile input full of plausible frame headers cannot make the search
# quadratic.
SEARCH_CRC_BASE = 1 << 24
SEARCH_CRC_PER_BYTE = 64
# The search checks headers a window at a time: small first (the next frame is
# usually close), growing to this.
_WINDOW_MIN, _WINDOW_MAX = 4 << 10, 1 << 20

TRUNCATED, CRC_MISMATCH, LENGTH_PAST_END = "truncated", "crc mismatch", "length past end"
EMBEDDED_HEADER, BAD_HEADER, UNSUPPORTED_VERSION = "embedded file header", "bad file header", "unsupported version"

# What may start where a resume search looks (SPEC §10.3): a trusted frame of
# the open segment, a SYNC frame, or evidence of a lost SYNC (a CRC-valid
# SCHEMA frame or file header). WAIT: later bytes decide.
FRAME, SYNC, EVIDENCE, HEADER, WAIT = "frame", "sync", "evidence", "header", "wait"
# Trusted whatever their stream_id (file scope, SPEC §4.2), and trusted with a
# stream_id the open segment binds (META: file scope when its stream_id is 0).
_FILE_SCOPE = frozenset({FrameType.ATTACH, FrameType.RUN, FrameType.INDEX, FrameType.END})
_BOUND_SCOPE = frozenset({FrameType.DATA, FrameType.META})
# The frame types that open or close a segment or bind a stream_id (FrameScanner._follow).
_FOLLOWED = frozenset({FrameType.SYNC, FrameType.SCHEMA, FrameType.END})
_FOLLOW = np.zeros(256, bool)
_FOLLOW[list(_FOLLOWED)] = True
# Frame types a search candidate can have: the byte-at-a-time filter.
_CANDIDATE_TYPE = np.zeros(256, bool)
_CANDIDATE_TYPE[[FrameType.SYNC, FrameType.SCHEMA, *_FILE_SCOPE, *_BOUND_SCOPE]] = True
# the phases of skipping damage: the damaged frame's own end, the search, the next SYNC
_OWN, _SEARCH, _NEXT_SYNC = "own end", "search", "next sync"


@dataclass(frozen=True)
class Skip:
    start: int
    end: int  # exclusive
    cause: str
    keeps_segment: bool = False  # reading resumed inside the same segment: its bindings stand

    def as_json(self):
        return {"start": self.start, "end": self.end, "cause": self.cause}


@dataclass(frozen=True)
class Resync:
    offset: int  # where reading resumed
    sync: bool = True  # at a SYNC frame (else at a trusted frame of the same segment)


@dataclass(frozen=True)
class Note:
    """Something a reader met and dealt with: a rejected frame, an ignored
    field, a rule a writer broke. Not byte damage (that is a Skip)."""

    offset: int
    kind: str
    message: str

    def as_json(self):
        return {"offset": self.offset, "kind": self.kind, "message": self.message}


@dataclass
class Report:
    size: int = 0
    header: object = None  # FileHeader, or None when read in recovery mode
    skipped: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    truncated: bool = False
    truncated_at: object = None  # offset where the incomplete frame or damage began
    frames: int = 0
    segment_breaks: int = 0  # skipped ranges after which the open segment (if any) is over

    @property
    def clean(self):
        return not self.skipped and not self.truncated

    def note(self, offset, kind, message):
        self.notes.append(Note(offset, kind, message))

    def record(self, event):
        """Account for a Skip or Resync event."""
        if type(event) is Skip:
            self.skipped.append(event)
            self.segment_breaks += not event.keeps_segment
        elif event.sync:
            self.note(event.offset, "resync", f"resynchronised at the SYNC frame at offset {event.offset}")
        else:
            self.note(event.offset, "resync", f"resumed at the frame at offset {event.offset}, in the same segment")


@dataclass(frozen=True)
class FrameRef:
    offset: int
    type: int
    flags: int
    stream_id: int
    payload_len: int

    @property
    def payload_offset(self):
        return self.offset + FRAME_HEADER_SIZE

    @property
    def end(self):
        return self.offset + FRAME_OVERHEAD + self.payload_len

    def payload(self, buf):
        return buf[self.payload_offset : self.payload_offset + self.payload_len]


_new = object.__new__


class Run:
    """A run of CRC-valid frames as the scan kernel listed them (`runs=True`):
    `table` (FRAME_DTYPE: offset, payload_len, stream_id, type, flags) and,
    row for row, `heads`, the DATA header the kernel parsed (HEAD_DTYPE,
    `present` 0 when the frame is no DATA frame or too short to hold one)."""

    __slots__ = ("table", "heads")

    def __init__(self, table, heads):
        self.table, self.heads = table, heads

    def __len__(self):
        return len(self.table)


@dataclass(frozen=True)
class Frame(FrameRef):
    """A frame from FrameScanner.feed(): the scanner keeps no bytes, so the payload travels with it."""

    data: bytes = b""

    def payload(self, buf=None):
        return self.data


def frame_at(buf, pos):
    """The CRC-valid frame starting at `pos` and ending inside `buf`, or None."""
    if len(buf) - pos < FRAME_HEADER_SIZE:
        return None
    plen, ftype, flags, sid = FRAME_HEADER.unpack_from(buf, pos)
    if pos + FRAME_OVERHEAD + plen > len(buf) or not frame_crc_ok(buf, pos, plen):
        return None
    return FrameRef(pos, ftype, flags, sid, plen)


def _next_sync(buf, base, search, final):
    """The first CRC-valid, well-formed SYNC frame whose sync pattern starts at
    or after absolute offset `search`, in the window buf = input[base:]:
    (offset, None); or (None, where to search on once more bytes came); or
    (None, None) when `final` and there is none."""
    size = base + len(buf)
    i = search - base
    while True:
        i = buf.find(SYNC_PATTERN, i)
        if i < 0:
            return None, None if final else max(search, size - len(SYNC_PATTERN) + 1)
        c = i - FRAME_HEADER_SIZE
        plen, ftype, _flags, _sid = FRAME_HEADER.unpack_from(buf, c)
        if ftype == FrameType.SYNC and SYNC_PAYLOAD_MIN <= plen <= SYNC_PAYLOAD_MAX:
            if c + FRAME_OVERHEAD + plen > len(buf):
                if not final:
                    return None, base + i  # decided once the candidate's bytes are here
            elif frame_crc_ok(buf, c, plen):
                return base + c, None
        i += 1
        search = base + i


def sync_frames(buf, after=-1):
    """Offsets of the CRC-valid, well-formed SYNC frames that start after
    `after` in the whole input `buf`, in order."""
    while True:
        q = _next_sync(buf, 0, after + FRAME_HEADER_SIZE + 1, True)[0]
        if q is None:
            return
        yield q
        after = q


def _header_candidates(buf, lo, hi, size, max_payload, final):
    """Offsets (relative to buf) in [lo, hi) whose 8 bytes could head a search
    candidate: a candidate frame type and a length that can fit. Vectorised:
    this is the per-byte cost of a search (SPEC §10.3)."""
    w = np.frombuffer(bytes(buf[lo : hi + FRAME_HEADER_SIZE - 1]), np.uint8)
    n = hi - lo
    at = np.flatnonzero(_CANDIDATE_TYPE[w[4 : 4 + n]])
    plen = (w[at].astype(np.int64) | w[at + 1].astype(np.int64) << 8
            | w[at + 2].astype(np.int64) << 16 | w[at + 3].astype(np.int64) << 24)
    keep = plen <= max_payload
    if final:
        keep &= at + lo + FRAME_OVERHEAD + plen <= size
    return (at[keep] + lo).tolist()


def _magic_candidates(buf, lo, hi):
    """Offsets (relative to buf) in [lo, hi) where the file magic starts."""
    out = []
    i = buf.find(MAGIC[:1], lo, hi)
    while i >= 0:
        out.append(i)
        i = buf.find(MAGIC[:1], i + 1, hi)
    return out


class FrameScanner:
    """The frame walker (see the module docstring). `start`: the absolute
    offset of the first byte given; `header`: the file header is read there
    first (default: when `start` is 0), raising NotLogbError unless `recover`
    (then: resync at the first SYNC) and UnsupportedVersionError for an
    unknown major in every mode (SPEC §2.4). After the scan, `header` is the
    FileHeader read (or None) and `truncated_at` the offset of an incomplete
    tail (or None)."""

    def __init__(self, start=0, *, header=None, recover=False, strict=False, max_payload=MAX_HELD_PAYLOAD):
        self.pos = start  # the next frame, when no damage is being skipped
        self._want_header = start == 0 if header is None else header
        self.recover = recover
        self.strict = strict
        self.max_payload = max_payload
        self.header = None
        self.truncated_at = None
        self._segment = False  # a well-formed SYNC was read and nothing has closed its segment since
        self._bound = set()  # the stream_ids the open segment's SCHEMA frames bind
        self._damage = None  # (start, cause) of the damage being skipped
        self._phase = None  # _OWN, _SEARCH or _NEXT_SYNC while skipping damage
        self._own = None  # where the damaged frame's own length ends
        self._from = None  # _OWN, _SEARCH: the first offset the search has not ruled out
        self._search = None  # _NEXT_SYNC: where the sync pattern search goes on
        self._spent = 0  # CRC bytes this search has spent
        self._gone = None  # start of an unsupported-version range: nothing after it is read
        self._held = bytearray()  # fed bytes still needed, from absolute offset _base
        self._base = start
        # walks done ahead (_read_ahead's thread): start -> (end of the bytes walked, table, heads, stop, status)
        self.walked = {}

    # ------------------------------------------------------------ driving
    def scan(self, buf):
        """Events for a whole input `buf` (bytes, bytearray, mmap; read in
        place) from the scanner's `start` on."""
        return self._scan(buf, 0, True)

    def feed(self, data):
        """Events the bytes `data` (which follow those fed before) decide."""
        held = self._held
        if held:
            held += data
            buf = held
        else:
            buf = data if isinstance(data, (bytes, bytearray)) else bytes(data)
        base = self._base
        events = [self._hold(ev, buf, base) for ev in self._scan(buf, base, False)]
        keep = self._keep_from(base + len(buf))
        if buf is held:
            del held[: keep - base]
        else:
            self._held = bytearray(buf[keep - base :])
        self._base = keep
        return events

    def close(self):
        """Events for the end of the input (a cut frame, damage that found no SYNC)."""
        buf, base = self._held, self._base
        events = [self._hold(ev, buf, base) for ev in self._scan(buf, base, True)]
        self._held, self._base = bytearray(), base + len(buf)
        return events

    @property
    def held(self):
        """How many fed bytes the scanner holds for decisions still to come."""
        return len(self._held)

    @staticmethod
    def _hold(ev, buf, base):
        if type(ev) is FrameRef:
            i = ev.offset - base + FRAME_HEADER_SIZE
            return Frame(ev.offset, ev.type, ev.flags, ev.stream_id, ev.payload_len, bytes(buf[i : i + ev.payload_len]))
        return ev

    def _keep_from(self, size):
        """The first absolute offset a later decision can still need."""
        if self._gone is not None:
            return size
        if self._damage is not None:
            if self._phase == _NEXT_SYNC:
                return min(self._search - FRAME_HEADER_SIZE, size)  # a SYNC starts 8 bytes before its pattern
            return min(self._from, size)
        if self._want_header:
            return 0
        return min(self.pos, size)

    # ------------------------------------------------------------ the walk
    def _scan(self, buf, base, final, runs=False):
        """Events for the window buf = input[base : base + len(buf)]; `final`:
        the input ends there; `runs`: frames come as a Run per kernel call,
        not one FrameRef each."""
        size = base + len(buf)
        if self._want_header:
            if not final and len(buf) < FILE_HEADER_SIZE and _may_be_header(buf, 0):
                return
            self._want_header = False
            yield from self._file_header(buf, size)
        while True:
            if self._gone is not None:
                if final:
                    yield Skip(self._gone, size, UNSUPPORTED_VERSION)
                    self._gone = None
                    self.pos = size
                return
            if self._damage is not None:
                yield from self._resync(buf, base, final)
                if self._damage is not None:
                    return
            pos = self.pos
            while True:  # the hot path: runs of CRC-valid frames, walked by the kernel (scan.c)
                if runs:
                    table, heads, stop, status = self._walked(buf, pos, base)
                    if len(table):
                        for k in np.flatnonzero(_FOLLOW[table["type"]]).tolist():
                            offset, plen, sid, ftype, _flags = table[k].tolist()
                            self._follow(buf, offset - base, ftype, sid, plen)
                        yield Run(table, heads)
                    pos = base + stop
                    if status != SCAN_FULL:
                        break
                    continue
                table, stop, status = _backend.active.scan_frames(buf, pos - base, base)
                for offset, plen, sid, ftype, flags in table.tolist():
                    if ftype in _FOLLOWED:
                        self._follow(buf, offset - base, ftype, sid, plen)
                    # FrameRef(offset, ftype, flags, sid, plen) without the frozen __init__'s guarded setattrs
                    ref = _new(FrameRef)
                    ref.__dict__.update(offset=offset, type=ftype, flags=flags, stream_id=sid, payload_len=plen)
                    yield ref
                pos = base + stop
                if status != SCAN_FULL:
                    break
            self.pos = pos
            left = size - pos
            if left < FRAME_HEADER_SIZE:
                if final and left:
                    self._truncate(pos, size, TRUNCATED)
                    yield Skip(pos, size, TRUNCATED)
                return
            i = pos - base
            plen = FRAME_HEADER.unpack_from(buf, i)[0]
            end = pos + FRAME_OVERHEAD + plen  # past the end, or a CRC mismatch: the kernel's status says which
            if left >= FILE_HEADER_SIZE and is_file_header(buf, i):
                self._segment = False  # another file begins: its segments start with its own SYNC
                major = int.from_bytes(buf[i + 8 : i + 10], "little")
                if major != VERSION_MAJOR:  # another format generation: nothing after it is ours to read
                    if self.strict:
                        raise UnsupportedVersionError(f"embedded file header of major version {major} at {pos}")
                    self._gone = pos
                    continue
                self.pos = pos + FILE_HEADER_SIZE
                yield self._skip(pos, self.pos, EMBEDDED_HEADER)
                continue
            if not final and left < FILE_HEADER_SIZE and _may_be_header(buf, i):
                return  # perhaps an embedded file header: decided with 16 bytes
            if end <= size:
                # a length held to max_payload, as the fed scanner holds it, so both read alike
                self._damaged(pos, CRC_MISMATCH, own=end if plen <= self.max_payload else None)
            elif final or plen > self.max_payload:
                self._damaged(pos, LENGTH_PAST_END)
            else:
                return  # the rest of the frame is still to come

    def _walked(self, buf, pos, base):
        """scan_data_frames(buf, pos - base, base), from walks done ahead where
        they fit: a walk from S over the input's bytes [S, E) is the kernel's
        answer for any window ending at E, so the kernel walks only up to S."""
        kernels, walked = _backend.active, self.walked
        size = base + len(buf)
        if walked:
            ahead = walked.pop(pos, None)
            if ahead is not None and ahead[0] == size:
                _end, table, heads, stop, status = ahead
                return table, heads, stop - base, status
            for start in [s for s, w in list(walked.items()) if w[0] <= base]:  # windows gone by
                walked.pop(start, None)
            nxt = min((s for s, w in list(walked.items()) if pos < s and w[0] == size), default=None)
            if nxt is not None:
                with memoryview(buf) as mv:
                    table, heads, stop, status = kernels.scan_data_frames(mv[: nxt - base], pos - base, base)
                if status == SCAN_FULL:
                    return table, heads, stop, status
                if stop == nxt - base and status == SCAN_END:  # the walk ahead goes on from here
                    _end, more, more_heads, stop, status = walked.pop(nxt)
                    return np.concatenate([table, more]), np.concatenate([heads, more_heads]), stop - base, status
        return kernels.scan_data_frames(buf, pos - base, base)

    def _follow(self, buf, i, ftype, sid, plen):
        """Track the open segment and its bindings from a CRC-valid frame
        (the reader's own rules, SPEC §3.2, §4.4, §6.8)."""
        if ftype == FrameType.SYNC:
            p = i + FRAME_HEADER_SIZE
            self._segment = plen >= SYNC_PAYLOAD_MIN and buf[p : p + len(SYNC_PATTERN)] == SYNC_PATTERN
            self._bound = set()
        elif ftype == FrameType.SCHEMA:
            if self._segment and sid:
                self._bound.add(sid)
        elif ftype == FrameType.END:
            self._segment = False  # the writer session is over

    def _file_header(self, buf, size):
        """SPEC §2.4 on the first bytes (whole, or all there will be)."""
        n = len(buf)
        if n < FILE_HEADER_SIZE and _may_be_header(buf, 0):
            # A cut inside the header: an empty file that lost its tail. Zero
            # bytes is such a cut too (power lost before the header was written).
            self.pos = size
            self._truncate(0, size, TRUNCATED)
            if n:
                yield Skip(0, size, TRUNCATED)
            return
        try:
            self.header = decode_file_header(buf[:FILE_HEADER_SIZE])
            self.pos = FILE_HEADER_SIZE
        except NotLogbError:  # an unknown major version stays an error in every mode (SPEC §2.4)
            if not self.recover:
                raise
            self._damaged(0, BAD_HEADER, after=-1)  # a SYNC at offset 0 is a resync point here

    # ------------------------------------------------------------ damage
    def _damaged(self, start, cause, own=None, after=None):
        """Damage begins at `start`; `own`: where the damaged frame's own
        length ends; `after`: a SYNC that starts after it may be resumed at
        (default: the damage)."""
        self._damage = (start, cause)
        self._own = own
        self._from = start + 1
        self._spent = 0
        self._search = (start if after is None else after) + FRAME_HEADER_SIZE + 1
        if own is not None:
            self._phase = _OWN
        else:
            self._phase = _SEARCH if self._segment else _NEXT_SYNC

    def _resync(self, buf, base, final):
        """The resync rule (SPEC §10.3, GAPS G17), in this one place. Inside a
        segment: resume at the damaged frame's own end when a trusted frame
        starts there, else at the earliest trusted frame or SYNC after the
        damage; a CRC-valid SCHEMA or file header on the way (at the own end:
        a SCHEMA there) means a lost SYNC, so resume at the next SYNC. With no
        segment open only a SYNC is trusted."""
        start, cause = self._damage
        while True:
            if self._phase == _OWN:
                kind = self._candidate(buf, base, self._own, final, search=False)
                if kind is WAIT:
                    return
                if kind is None:
                    self._phase = _SEARCH if self._segment else _NEXT_SYNC
                    continue
                at = self._own
            elif self._phase == _SEARCH:
                found = self._search_frames(buf, base, final)
                if found is WAIT:
                    return
                if found is None:
                    break
                at, kind = found
            else:
                at, self._search = _next_sync(buf, base, self._search, final)
                if at is None:
                    if final:
                        break
                    return
                kind = SYNC
            if kind is HEADER and bytes(buf[at - base + 8 : at - base + 10]) != VERSION_MAJOR.to_bytes(2, "little"):
                kind = None  # another format generation: read from there as the walk reads one
            elif kind in (EVIDENCE, HEADER):
                self._phase, self._search = _NEXT_SYNC, at + FRAME_HEADER_SIZE
                continue
            self._damage = None
            self.pos = at
            keeps = kind is FRAME
            self._segment &= keeps
            if at > start:
                yield self._skip(start, at, cause, keeps)
            if kind is not None:
                yield Resync(at, sync=not keeps)
            return
        # nothing to resume at: the damage runs to the end of the input
        size = base + len(buf)
        self._damage = None
        self._segment = False
        self.pos = size
        cause = TRUNCATED if cause == LENGTH_PAST_END else cause
        self._truncate(start, size, cause)
        if size > start:
            yield Skip(start, size, cause)

    def _candidate(self, buf, base, p, final, search):
        """What starts at absolute offset `p`: FRAME (trusted, SPEC §10.3),
        SYNC, EVIDENCE (a CRC-valid SCHEMA), HEADER (a CRC-valid file header;
        `search` only), WAIT or None. At the own end (`search` false) a SCHEMA
        counts only when trusted (its stream_id bound)."""
        size = base + len(buf)
        i = p - base
        if size - p < FRAME_HEADER_SIZE:
            return None if final else WAIT
        if search and buf[i] == MAGIC[0]:
            if size - p < FILE_HEADER_SIZE:
                if not final and _may_be_header(buf, i):
                    return WAIT
            elif is_file_header(buf, i):
                return HEADER
        plen, ftype, _flags, sid = FRAME_HEADER.unpack_from(buf, i)
        if ftype == FrameType.SYNC:
            kind = SYNC if SYNC_PAYLOAD_MIN <= plen <= SYNC_PAYLOAD_MAX else None
        elif not self._segment:
            kind = None
        elif ftype == FrameType.SCHEMA:
            kind = EVIDENCE if search or sid in self._bound else None
        elif ftype in _FILE_SCOPE or (ftype == FrameType.META and not sid):
            kind = FRAME
        else:
            kind = FRAME if ftype in _BOUND_SCOPE and sid in self._bound else None
        if kind is None or plen > self.max_payload:
            return None
        if search:
            if self._spent + plen > SEARCH_CRC_BASE + SEARCH_CRC_PER_BYTE * (p - self._damage[0]):
                return None  # over the search's CRC budget
        if p + FRAME_OVERHEAD + plen > size:
            return None if final else WAIT
        if kind is SYNC and buf[i + FRAME_HEADER_SIZE : i + FRAME_HEADER_SIZE + len(SYNC_PATTERN)] != SYNC_PATTERN:
            return None
        if search:
            self._spent += plen
        return kind if frame_crc_ok(buf, i, plen) else None

    def _search_frames(self, buf, base, final):
        """The earliest candidate from `_from` on: (offset, kind), WAIT, or
        None (`final`, and there is none)."""
        size = base + len(buf)
        window = _WINDOW_MIN
        while True:
            lo = self._from
            hi = min(lo + window, size - FRAME_HEADER_SIZE + 1)  # offsets whose whole header is here
            if hi <= lo:
                return None if final else WAIT
            i, j = lo - base, hi - base
            heads = _header_candidates(buf, i, j, size - base, self.max_payload, final)
            for c in sorted(set(heads).union(_magic_candidates(buf, i, j))):
                kind = self._candidate(buf, base, base + c, final, search=True)
                if kind is not None:
                    self._from = base + c
                    return WAIT if kind is WAIT else (base + c, kind)
            self._from = hi
            window = min(window * 4, _WINDOW_MAX)

    def _skip(self, start, end, cause, keeps_segment=False):
        if self.strict and cause not in (TRUNCATED, BAD_HEADER):
            raise CorruptFrameError(f"{cause} at offset {start}")
        return Skip(start, end, cause, keeps_segment)

    def _truncate(self, start, size, cause):
        if self.strict and cause not in (TRUNCATED, BAD_HEADER):
            raise CorruptFrameError(f"{cause} at offset {start}")
        self.truncated_at = start


def _may_be_header(buf, i):
    """The bytes from `i` (fewer than 16) agree with the magic as far as they go."""
    head = bytes(buf[i : i + len(MAGIC)])
    return MAGIC[: len(head)] == head


# ---------------------------------------------------------------- whole-buffer drivers
def check_header(buf, report, recover=False):
    """Validate the file header. Returns the offset of the first frame, or
    None when there is nothing to read. Raises NotLogbError /
    UnsupportedVersionError unless `recover` asks to resync instead."""
    scanner = FrameScanner(0, recover=recover)
    for event in scanner._file_header(buf, len(buf)):
        report.record(event)
    if scanner._damage is not None:
        for event in scanner._resync(buf, 0, True):
            report.record(event)
    report.header = scanner.header
    if scanner.truncated_at is not None:
        report.truncated, report.truncated_at = True, scanner.truncated_at
        return None
    return scanner.pos


def iter_frames(buf, report, start, strict=False, runs=False):
    """Yield every CRC-valid frame from `start` (`runs`: every Run of them),
    recording damage in `report`."""
    scanner = FrameScanner(start, header=False, strict=strict)
    for event in scanner._scan(buf, 0, True, runs):
        if type(event) is FrameRef:
            report.frames += 1
            yield event
        elif type(event) is Run:
            report.frames += len(event)
            yield event
        else:
            report.record(event)
    if scanner.truncated_at is not None:
        report.truncated, report.truncated_at = True, scanner.truncated_at


# Bytes one window of iter_source_frames reads (a frame longer than it widens the next): small enough
# that the CRC reads what the read just left in the CPU's cache (8 MiB was ~15% slower than 1 MiB),
# large enough that the per-window work is little (2 MiB: `logb verify` ~5-10% quicker than 1 MiB).
SOURCE_WINDOW = 2 << 20


def iter_source_frames(source, report, recover=False, strict=False, window=None, runs=False, readahead=False):
    """check_header then iter_frames over a logb.source.Source read a window
    at a time (source.readinto_at): bounded memory for a file of any size.
    Yields (FrameRef, a view of its payload, valid until the next frame is
    asked for) — `runs`: (Run, a view of the window, the window's offset) —
    and records damage in `report` (with its header). The same events as the
    whole-buffer walk, except that a frame longer than MAX_HELD_PAYLOAD is
    not waited for (damage, as when fed; SPEC §10.3). `readahead`: the next
    windows are read on a thread while this one is scanned (a second core)."""
    scanner = FrameScanner(0, recover=recover, strict=strict)
    if readahead:
        windows = _read_ahead(source, window or READ_AHEAD_CHUNK, scanner)
    else:
        windows = _windows(source, window or SOURCE_WINDOW, scanner)
    for buf, base, final in windows:
        with memoryview(buf) as view:
            for event in scanner._scan(buf, base, final, runs):
                if type(event) is FrameRef:
                    report.frames += 1
                    i = event.offset - base + FRAME_HEADER_SIZE
                    yield event, view[i : i + event.payload_len]
                elif type(event) is Run:
                    report.frames += len(event)
                    yield event, view, base
                else:
                    report.record(event)
    report.header = scanner.header
    if scanner.truncated_at is not None:
        report.truncated, report.truncated_at = True, scanner.truncated_at


def _windows(source, window, scanner):
    """(buf, its offset, final) for each window, read when the last is scanned; each
    starts where `scanner` may still need bytes (_keep_from)."""
    size = source.size
    base, kept = 0, 0  # the window starts at `base`; its first `kept` bytes are the last one's tail
    buf = bytearray(min(window, size))  # one buffer, reused: no fresh pages to fault in per window
    while True:
        if kept * 2 > len(buf):  # a frame longer than half the window: grow it
            buf = bytearray(buf[:kept]) + bytearray(kept + window)
        room = min(len(buf), size - base) - kept
        with memoryview(buf) as mv:
            got = source.readinto_at(base + kept, mv[kept : kept + room])
        final = got < room or base + kept + got >= size  # the end, or a file that shrank under the reader
        if kept + got < len(buf):
            buf = buf[: kept + got]  # a last, shorter window (a copy, once)
        yield buf, base, final
        if final:
            return
        keep = scanner._keep_from(base + len(buf))
        kept = base + len(buf) - keep
        buf[:kept] = buf[keep - base :]  # the tail moves to the front; the buffer keeps its size
        base = keep


def _walk_ahead(view, pos, walk, walked):
    """Walk the frames of one chunk (`view`, the input's bytes from `pos`) from
    `walk` (where a frame starts, and its first bytes when they were in the last
    chunk) into walked[start]; returns where the next chunk's walk starts, or
    None (damage: the scan resyncs on its own)."""
    start, head = walk
    if head:  # a frame header cut by the chunk boundary
        head += bytes(view[: FRAME_HEADER_SIZE - len(head)])
        if len(head) < 4:
            return (start, head) if len(view) else None
        start += FRAME_OVERHEAD + int.from_bytes(head[:4], "little")
    if not pos <= start < pos + len(view):
        return (start, b"") if start >= pos + len(view) else None
    tables, heads, p = [], [], start
    while True:
        table, head_table, stop, status = _backend.active.scan_data_frames(view, p - pos, pos)
        tables.append(table)
        heads.append(head_table)
        p = pos + stop
        if status != SCAN_FULL:
            break
    walked[start] = (pos + len(view), np.concatenate(tables), np.concatenate(heads), p, status)
    if status == SCAN_CRC:
        return None
    if status == SCAN_END:  # fewer than a header's bytes left: the next frame's first bytes
        return p, bytes(view[p - pos :])
    return p + FRAME_OVERHEAD + int.from_bytes(view[p - pos : p - pos + 4], "little"), b""  # past the end


# Bytes of one read-ahead chunk: the thread reads and CRCs it while it is in its core's cache, and
# takes the GIL a few times a chunk (each time waiting for the scan to let go of it): fewer, larger.
READ_AHEAD_CHUNK = 2 << 20
# Chunks _read_ahead reads before the scan asks for them.
_READ_AHEAD = 2


def _read_ahead(source, chunk, scanner):
    """_windows' windows, the input read on a thread a few chunks ahead of the
    scan. Chunk k (bytes [k*chunk, (k+1)*chunk)) is read into the back of a
    buffer `chunk` bytes longer; the last window's tail (from where the scan
    may still need bytes) is copied in front of it, and the window is the
    whole buffer: the bytes before the tail are stale, and nothing reads before
    _keep_from. A tail longer than `chunk` (a long frame) makes a window of its
    own, a copy."""
    size = source.size
    free, full, stop = queue.Queue(), queue.Queue(), threading.Event()
    for _ in range(_READ_AHEAD + 2):  # those read ahead, the one scanned, the one whose tail is kept
        free.put(bytearray(2 * chunk))

    def read():
        pos, walk = 0, (FILE_HEADER_SIZE, b"")  # where the next frame starts (or its first bytes), if known
        try:
            while True:
                buf = free.get()
                if stop.is_set():
                    return
                room = min(chunk, size - pos)
                with memoryview(buf) as mv:
                    got = source.readinto_at(pos, mv[chunk : chunk + room])
                    final = got < room or pos + got >= size
                    if walk is not None:  # the chunk's frames walked (CRCs checked) here, not in the scan
                        walk = _walk_ahead(mv[chunk : chunk + got], pos, walk, scanner.walked)
                full.put((buf, pos, got, final))
                if final:
                    return
                pos += got
        except BaseException as exc:  # raised in the scan's thread instead
            full.put(exc)

    reader = threading.Thread(target=read, name="logb-read-ahead", daemon=True)
    reader.start()
    try:
        last = None  # (buffer, window offset, window end, pooled) of the window scanned last
        while True:
            item = full.get()
            if isinstance(item, BaseException):
                raise item
            buf, pos, got, final = item
            if last is None:  # the first window: the file header is read at its offset 0
                win, base = buf[chunk : chunk + got], 0
                free.put(buf)
            else:
                prev, prev_base, prev_end, pooled = last
                keep = scanner._keep_from(prev_end)
                tail = prev_end - keep
                if tail <= chunk:
                    buf[chunk - tail : chunk] = prev[keep - prev_base : prev_end - prev_base]
                    win, base = (buf if got == chunk else buf[: chunk + got]), pos - chunk
                    if got != chunk:
                        free.put(buf)
                else:
                    win, base = prev[keep - prev_base : prev_end - prev_base] + buf[chunk : chunk + got], keep
                    free.put(buf)
                if pooled:
                    free.put(prev)
            last = win, base, base + len(win), win is buf
            yield win, base, final
            if final:
                return
    finally:
        stop.set()
        free.put(bytearray())  # wakes a reader waiting for a buffer
        reader.join()

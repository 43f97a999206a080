"""Checking every DATA frame of a scanned file without building its columns
(`logb verify`), on several cores at once.

A frame is checked as far as anything can reject it, exactly as
LogbFile.validate decodes it: decompress, untranspose, the raw_size and tail
checks, UTF-8 of every string field, the time axis range, and the first axis
value an INDEX claims. What cannot fail is skipped: no other field is
extracted, and the axis range is proved from the axis field's width when it
can be (extracted only when the width alone allows an overflow). A frame
stored as is (codec none, no filter) with nothing a record can get wrong is
not decoded at all (header_problem matched its sizes at open): only its first
record is kept, for an INDEX claim; a compressed one is decompressed and no
more. The INDEX claims of a stream are compared with the first records all at
once (numpy), not frame by frame.

`Checker` is the scan's on_data hook (LogbFile(on_data=...)): each frame is
checked while the scan holds its bytes, so nothing is read twice. Zstd frames
that only decompressing can reject (the common case) have their headers
checked `_BATCH` at a time in one C call (codecs.zstd_decode_many): at the
end of each run of frames the scan hands over; on several threads, they are
sent to a thread pool as the scan goes on, each batch read again in one
read and decompressed in one call that holds no GIL. Other compressed frames
are checked after the scan on several threads, read again, on a thread pool
(zstd, pread and the C kernels release the GIL). `verify` then applies the
outcomes in validate's order (stream by stream, file order within one), so
every report is the serial one. Without a Checker (or when the file shrank
after the scan) every frame is read again.
"""

import dataclasses
import functools
import os
import struct
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import codecs, fields
from ._kernels import field_window
from .batch import I64_MAX, I64_MIN, _region, _walk_tails, axis_column, check_range
from .errors import LogbError, MalformedPayloadError
from .frames import DATA_HEADER_SIZE, pack_axis
from .reader import DataBlock
from .framing import FRAME_HEADER_SIZE, FRAME_OVERHEAD
from .tables import AxisMode, ByteOrder, Codec, DataType, Filter

_I64 = struct.Struct("<q")  # a time axis_base (SPEC §8.1)
_NONE = int(Codec.none)  # == Filter.none; a plain int compares faster than the enum, once per frame
_ZSTD = int(Codec.zstd)
# Frames per task: enough that a task's overhead is small against its frames.
_CHUNK = 16
# Zstd frames decompressed in one call: enough that the call's own cost is small against
# theirs, few enough that its output (~1 MiB for 4096 CAN records a frame) is memory
# malloc reuses, not fresh pages (64 frames a call were 1.8x slower than 16).
_BATCH = 16
# A pool task reads its batch's bytes in one read, from its first frame to its last: at most this many.
_SPAN_MAX = 8 << 20


def default_jobs():
    return os.cpu_count() or 1


def _field_bounds(f):
    """The least and greatest raw value of an integer field, else None."""
    w = f.bit_width
    if f.data_type == DataType.uint:
        return 0, (1 << w) - 1
    if f.data_type == DataType.sint:
        return -(1 << (w - 1)), (1 << (w - 1)) - 1
    return None


class _Plan:
    """What checking one stream's frames takes, worked out once per stream."""

    def __init__(self, schema):
        self.schema = schema
        self.is_time = schema.is_time
        self.implicit = schema.is_time and schema.axis_mode == AxisMode.implicit
        self.record_size = schema.record_size
        self.variable = bool(schema.variable_fields)
        self.fixed_strings = [f for f in schema.fields if f.data_type == DataType.string and not f.variable]
        # nothing but the axis can reject a record of a stored-as-is frame (header_problem matched its sizes)
        self.plain = not schema.variable_fields and all(f.data_type != DataType.string for f in schema.fields)
        self.hot = self.plain and not self.implicit  # Checker's inlined case of header_only
        self.bases = None  # explicit time axis of an integer field: the axis bases no record can overflow from
        self.axis_int = None  # ... and that field's window, its first value read as a Python int (_int_field)
        if schema.is_time and schema.axis_mode != AxisMode.implicit:
            f = schema.fields[schema.axis_field]
            bounds = _field_bounds(f)
            if bounds is not None:
                offsets = [b * schema.axis_scale for b in bounds]
                self.bases = I64_MIN - min(offsets), I64_MAX - max(offsets)
                if f.bit_width:
                    big = f.byte_order == ByteOrder.big
                    self.axis_int = (*field_window(f.bit_offset, f.bit_width, big), "big" if big else "little",
                                     f.bit_width, f.data_type == DataType.sint)

    def axis_proved(self, header):
        """True when no record of the frame can put the time axis out of i64 range."""
        if self.bases is None:
            return False
        return self.bases[0] <= _I64.unpack(header.axis_base_raw)[0] <= self.bases[1]

    def decoding_only(self, header):
        """True when only decoding the stored bytes can reject the frame (header_problem
        matched its sizes at open, and no record can reject it)."""
        return self.plain and (self.implicit or not self.is_time or self.axis_proved(header))

    def header_only(self, header):
        """True when nothing but the header can reject the frame (it is not decoded)."""
        return header.codec == Codec.none and header.filter == Filter.none and self.decoding_only(header)


def check_frame(plan, header, read, lazy=True, want_first=True):
    """What decoding the frame would raise (None if nothing), and its first
    fixed record (bytes, when it has records and `want_first`), else None.
    `read(k)`: the first k bytes of the frame's stored region (k None: all
    of it). When `lazy`, nothing of a frame that only its header can reject
    is read but that record."""
    schema = plan.schema
    n = header.record_count
    implicit = plan.implicit
    want_first = want_first and n > 0
    try:
        if lazy and plan.header_only(header):
            if implicit and n:
                _implicit_range(schema, header)
            return None, bytes(read(plan.record_size)) if want_first else None
        if plan.decoding_only(header):
            data = codecs.decompress(read(None), header.codec, header.raw_size)
            if implicit and n:
                _implicit_range(schema, header)
            if not want_first:
                return None, None
            size = plan.record_size  # a transposed region is S rows of N bytes: record 0 is each row's first
            return None, bytes(data[: size * n : n] if header.filter == Filter.transpose else data[:size])
        data, fixed = _region(schema, header, read(None))
        if plan.variable:
            _walk_tails(schema, data, n * plan.record_size, n)  # also UTF-8 of variable strings
        for f in plan.fixed_strings:
            fields.extract(fixed, f)  # UTF-8
        if implicit and n:
            _implicit_range(schema, header)
        elif plan.is_time and n and not plan.axis_proved(header):  # as axis_column checks it
            raw = fields.extract(fixed, schema.fields[schema.axis_field])
            base, scale = header.axis_base(True), schema.axis_scale
            check_range(base + int(raw.min()) * scale, base + int(raw.max()) * scale)
        return None, fixed[0].tobytes() if want_first else None
    except (LogbError, ValueError) as exc:
        return exc, None


def _implicit_range(schema, header):
    base = header.axis_base(True)
    check_range(base, base + (header.record_count - 1) * schema.axis_step)


def _int_field(record, window):
    """An integer field's value in one record (bytes), as fields.extract reads it (SPEC §6.2);
    `window`: _Plan.axis_int."""
    b0, k, shift, order, width, signed = window
    v = int.from_bytes(record[b0 : b0 + k], order) >> shift & (1 << width) - 1
    if signed and v >> (width - 1):
        v -= 1 << width
    return v


def _first_axis(plan, header, record):
    """The frame's first axis value from its first record (bytes), as axis_column gives it."""
    schema = plan.schema
    if schema.is_time:
        base = header.axis_base(True)
        if schema.axis_mode == AxisMode.implicit:
            return base
        if plan.axis_int is not None:  # one value: Python ints beat a kernel call on a 1-row array
            return base + _int_field(record, plan.axis_int) * schema.axis_scale
    fixed = np.frombuffer(record, np.uint8).reshape(1, -1)
    if schema.is_time:
        return base + int(fields.extract(fixed, schema.fields[schema.axis_field])[0]) * schema.axis_scale
    return axis_column(schema, dataclasses.replace(header, record_count=1), fixed)[0]  # float arithmetic as is


def _rows(frames, firsts, record_size):
    """_disagreeing's arrays of frames (FrameLocs) and their first records (bytes)."""
    return (np.array([fl.offset for fl in frames], np.int64),
            np.frombuffer(b"".join(fl.header.axis_base_raw for fl in frames), "<u8"),
            np.frombuffer(b"".join(firsts), np.uint8).reshape(len(firsts), record_size))


def _disagreeing(claims, plan, offsets, bases, records):
    """The offsets of the frames whose first axis value is not what `claims` (an
    INDEX's, by offset) says, all at once: `offsets`, the frames' (an array);
    `bases`, their axis_base (uint64); `records`, their first records (an
    (n, record_size) uint8 array). The plan's time axis is an integer field whose
    values are known to stay in i64 range (proved from its width, or checked when
    the frame was): base + raw * scale is exact in arithmetic modulo 2**64."""
    offsets = offsets.tolist()
    pick = [i for i, offset in enumerate(offsets) if offset in claims]
    if not pick:
        return ()
    if len(pick) < len(offsets):
        offsets, bases, records = [offsets[i] for i in pick], bases[pick], records[pick]
    raw = fields.extract(records, plan.schema.fields[plan.schema.axis_field]).astype(np.uint64)
    first = bases + raw * np.uint64(plan.schema.axis_scale % (1 << 64))
    claimed = np.frombuffer(b"".join(claims[offset] for offset in offsets), "<u8")
    return [offsets[i] for i in np.flatnonzero(first != claimed).tolist()]


def _from_file(stream, fl):
    """check_frame's `read` for a frame read again from the file."""
    start, end = fl.stored_slice
    return lambda k: stream._file._stored(start, end if k is None else start + k)


def _check_chunk(task, lazy=True):
    return [check_frame(plan, fl.header, _from_file(stream, fl), lazy, claimed)
            for plan, stream, fl, claimed in task]


def _slicer(stored):
    return lambda k: stored if k is None else stored[:k]


def _zstd_outcomes(items, buf, base, one_call=True):
    """check_frame's outcomes of zstd frames that only decompressing can reject
    (`items`: (plan, stream, FrameLoc) of frames whose stored bytes lie in
    `buf`, which starts at file offset `base`), decompressed together
    (codecs.zstd_decode_many); one by one, as check_frame, when any of them fails."""
    frames = np.array([(a - base, b - base, fl.header.raw_size) for a, b, fl in
                       ((*fl.stored_slice, fl) for _p, _s, fl in items)], np.uint64).reshape(-1, 3)
    firsts = codecs.zstd_decode_many(buf, frames, one_call, functools.partial(_first_record, items))
    if firsts is None:
        return [check_frame(plan, fl.header, _slicer(buf[a - base : b - base])) for plan, _s, fl in items
                for a, b in (fl.stored_slice,)]
    outcomes = []
    for (plan, _stream, fl), first in zip(items, firsts):
        if plan.implicit and fl.header.record_count:
            try:
                _implicit_range(plan.schema, fl.header)
            except (LogbError, ValueError) as exc:
                outcomes.append((exc, None))
                continue
        outcomes.append((None, first))
    return outcomes


def _first_record(items, i, data):
    """The first record (bytes) of items[i]'s decompressed region, None if it has none."""
    plan, _stream, fl = items[i]
    n, size = fl.header.record_count, plan.record_size
    if not n:
        return None
    data = memoryview(data)  # transposed: S rows of N bytes, record 0 is each row's first
    return bytes(data[: size * n : n] if fl.header.filter == Filter.transpose else data[:size])


def _zstd_task(items):
    """_zstd_outcomes of (plan, stream, FrameLoc) read again from the file, in one read,
    decompressed in one call (a call per frame was 10% slower with two threads decompressing)."""
    lo, hi = items[0][2].stored_slice[0], items[-1][2].stored_slice[1]
    try:
        span = items[0][1]._file._stored(lo, hi)
    except (LogbError, OSError):  # the file shrank: each frame as check_frame reads it
        return [check_frame(plan, fl.header, _from_file(stream, fl)) for plan, stream, fl in items]
    return _zstd_outcomes(items, span, lo)


class Checker:
    """LogbFile's on_data hook: every accepted DATA frame checked while the
    scan holds its bytes, or soon after. With `jobs` > 1 the zstd frames that
    only decompressing can reject go in batches to a pool of `jobs` - 1
    threads while the scan goes on (a batch is one GIL-free call, so the pool
    runs beside the scan), and outcomes() takes part once the scan is done.
    Any other compressed frame is left to verify, which reads it again and
    checks it on `jobs` threads once the scan is done: checks of a frame at a
    time alongside the scan contend with it for the GIL, and were slower than
    the scan alone then the pool alone (measured on 2 cores). A context
    manager: leaving it stops the pool."""

    def __init__(self, jobs=1):
        self._plans = {}  # id(stream) -> _Plan
        self._outcomes = {}  # DATA offset -> check_frame's outcome
        self._streams = {}  # id(stream) -> (its _Plan, plain()'s frames and first records): one lookup a frame
        self._compressed = jobs == 1  # checked here too
        self._batch = []  # zstd frames of this run to check together at its end: (plan, stream, FrameLoc)
        # jobs - 1 threads beside the scan; once it is done, this thread takes the batches not yet started
        self._pool = ThreadPoolExecutor(jobs - 1) if jobs > 1 else None
        self._tasks = []  # (the offsets of a batch's frames, the batch, the future of its outcomes)
        self._plain_blocks = {}  # id(reader.DataBlock) -> plain_block()'s (plan, block, first records)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Stops the pool (checks still queued are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def plan(self, stream):
        plan = self._plans.get(id(stream))
        if plan is None:
            plan = self._plans[id(stream)] = _Plan(stream.schema)
        return plan

    def __call__(self, stream, fl, payload):
        if payload is None:
            return  # no bytes to check: verify reads the frame
        state = self._streams.get(id(stream))
        if state is None:
            state = self._streams[id(stream)] = self.plan(stream), [], []
        plan, frames, firsts = state
        header = fl.header
        # the hot path: check_frame's first case (header_only of a frame with no implicit axis), inlined;
        # only its first record is kept, and verify compares a stream's INDEX claims with them at once
        if plan.hot and header.codec == _NONE and header.filter == _NONE and (not plan.is_time or (
                (b := plan.bases) is not None and b[0] <= _I64.unpack(header.axis_base_raw)[0] <= b[1])):
            if header.record_count:
                frames.append(fl)
                firsts.append(payload[DATA_HEADER_SIZE : DATA_HEADER_SIZE + plan.record_size].tobytes())
            else:
                self._outcomes[fl.offset] = None, None
        elif header.codec == _ZSTD and plan.decoding_only(header):
            self._batch.append((plan, stream, fl))  # check_frame's second case: only decompressing can reject it
        elif self._compressed or header.codec == Codec.none:
            self._outcomes[fl.offset] = check_frame(plan, header, _slicer(payload[DATA_HEADER_SIZE:]))

    def block(self, stream, block, view, base):
        """LogbFile's call for a reader.DataBlock of accepted frames, whose bytes are in
        `view` from file offset `base`: the hot path's frames all at once (their first
        records gathered in one numpy take), any other frame as __call__ takes it."""
        plan = self.plan(stream)
        if plan.hot and block.codec == _NONE and block.filter == _NONE:
            if plan.is_time:  # the axis bases from which no record can overflow (plan.bases), all at once
                bases = block.heads["axis_base"].view("<i8")
                lo, hi = plan.bases if plan.bases is not None else (1, 0)
                if not ((bases >= lo) & (bases <= hi)).all():
                    return self._one_by_one(stream, block, view, base)
            firsts = None
            if block.record_count:
                # the frames lie one after another, and stored as is they are of one length: the first
                # records are a strided view of the window, copied out
                first = int(block.table[0]["offset"]) - base + FRAME_HEADER_SIZE + DATA_HEADER_SIZE
                step = FRAME_OVERHEAD + int(block.table[0]["payload_len"])
                if int(block.table[-1]["offset"]) - base + FRAME_HEADER_SIZE + DATA_HEADER_SIZE \
                        != first + (len(block) - 1) * step:  # not so: a scan that changed what a run is
                    return self._one_by_one(stream, block, view, base)
                firsts = np.lib.stride_tricks.as_strided(np.frombuffer(view, np.uint8)[first:],
                                                         (len(block), plan.record_size), (step, 1)).copy()
            self._plain_blocks[id(block)] = plan, block, firsts
            return None
        return self._one_by_one(stream, block, view, base)

    def _one_by_one(self, stream, block, view, base):
        for fl in block.frame_locs():
            i = fl.offset - base + FRAME_HEADER_SIZE
            self(stream, fl, view[i : i + fl.payload_len])

    def plain_block(self, block):
        """(_Plan, the block, its first records: an (n, record_size) uint8 array, None when
        its frames hold none) of a reader.DataBlock whose frames only their header (matched
        at open) could reject; else None."""
        return self._plain_blocks.get(id(block))

    def run_end(self, view=None, base=0):
        """LogbFile's call at the end of each run of frames, with the bytes they lie in
        (`view`, from file offset `base`): the views it handed over go stale."""
        batch, self._batch = self._batch, []
        while batch:
            # a batch: at most _BATCH frames, and for the pool, which reads them again, at most _SPAN_MAX bytes
            k, lo = 1, batch[0][2].stored_slice[0]
            while k < min(_BATCH, len(batch)) and (self._pool is None
                                                    or batch[k][2].stored_slice[1] - lo <= _SPAN_MAX):
                k += 1
            items, batch = batch[:k], batch[k:]
            offsets = [fl.offset for _p, _s, fl in items]
            if self._pool is not None:
                self._tasks.append((offsets, items, self._pool.submit(_zstd_task, items)))
            elif view is not None:  # on this thread alone: a call per frame is quicker
                self._outcomes.update(zip(offsets, _zstd_outcomes(items, view, base, one_call=False)))
            else:
                self._outcomes.update(zip(offsets, _zstd_task(items)))

    def outcomes(self):
        """Every checked frame's outcome by offset, but for plain()'s: the pool
        takes its batches from the front, this thread from the back, until they meet."""
        self.run_end()
        tasks, self._tasks = self._tasks, []
        left = len(tasks)  # tasks[:left] are the pool's
        while left and tasks[left - 1][2].cancel():  # not started: this thread checks it
            left -= 1
            self._outcomes.update(zip(tasks[left][0], _zstd_task(tasks[left][1])))
        for offsets, _items, future in tasks[:left]:
            self._outcomes.update(zip(offsets, future.result()))
        return self._outcomes

    def plain(self):
        """[(_Plan, [FrameLoc], [first record])] per stream: the frames that only their
        header (matched at open) could reject, and that hold records."""
        return [state for state in self._streams.values() if state[1]]


def _still_holds(f, streams):
    """The input still holds every frame. A file can shrink after the scan:
    then every frame is read in full, as validate reads it, so each one past
    the new end reports the shrink."""
    end = max((s._last_end() for s, _p in streams), default=0)
    return not end or len(f.source.read_at(end - 1, 1)) == 1


def verify(f, jobs=1, checker=None):
    """LogbFile.validate without the columns: every accepted DATA frame
    checked, its rejection reported (raised when strict), with `jobs` threads.
    `checker`: the Checker `f` was opened with (on_data), whose outcomes
    stand for the frames it checked. Returns the report."""
    try:
        return _verify(f, jobs, checker)
    finally:
        if checker is not None:
            checker.close()


class _Block:
    """verify's work item for a DataBlock whose frames only their header could reject
    (Checker.plain_block): nothing to apply but the INDEX claims they disprove."""

    __slots__ = ("plan", "stream", "block", "firsts")

    def __init__(self, plan, stream, block, firsts):
        self.plan, self.stream, self.block, self.firsts = plan, stream, block, firsts


def _work(streams, claims, done, plain_block):
    """verify's work, stream by stream, file order within one: (plan, stream, FrameLoc,
    claimed) per frame, and a _Block per plain DataBlock of a stream whose blocks are all
    plain (and whose claims, if its blocks have any, _disagreeing can compare). The
    other streams' frames are all made FrameLocs, their plain blocks' outcomes put in `done`."""
    claimed = np.fromiter(claims, np.int64, len(claims)) if claims else None
    work = []
    for s, plan in streams:
        pieces = list(s._pieces())
        held = [plain_block(piece) for piece in pieces if type(piece) is DataBlock]
        if all(h is not None for h in held) and (plan.axis_int is not None or claimed is None or not any(
                np.isin(block.offsets, claimed).any() for _p, block, _f in held)):
            held = iter(held)
            for piece in pieces:
                if type(piece) is DataBlock:
                    _p, block, firsts = next(held)
                    work.append(_Block(plan, s, block, firsts))
                else:
                    work += [(plan, s, fl, fl.offset in claims) for fl in piece]
            continue
        for h in held:
            if h is not None:  # a plain block among others: its outcomes frame by frame
                _p, block, firsts = h
                offsets = block.offsets.tolist()
                done.update(zip(offsets, [(None, None)] * len(offsets) if firsts is None else
                                ((None, first.tobytes()) for first in firsts)))
        work += [(plan, s, fl, fl.offset in claims) for fl in s.frames]
    return work


def _verify(f, jobs, checker):
    claims = f._index_axes
    plan = checker.plan if checker is not None else Checker().plan
    streams = [(s, plan(s)) for s in f.streams.values() if s.schema is not None]
    lazy = _still_holds(f, streams)
    done = checker.outcomes() if checker is not None and lazy else {}
    work = _work(streams, claims, done, checker.plain_block if checker is not None and lazy else lambda _b: None)
    plain = []  # (plan, frames, first records) whose INDEX claims are compared at once
    for stream_plan, frames, firsts in (checker.plain() if checker is not None and lazy else ()):
        if stream_plan.axis_int is None:  # no integer time axis: a claim is compared frame by frame (_apply)
            done.update(zip((fl.offset for fl in frames), ((None, first) for first in firsts)))
        else:
            plain.append((stream_plan, frames, firsts))
    proved = {fl.offset for _p, frames, _f in plain for fl in frames}
    rest = [w for w in work if type(w) is tuple and w[2].offset not in done and w[2].offset not in proved]
    chunks = [rest[i : i + _CHUNK] for i in range(0, len(rest), _CHUNK)]
    check = functools.partial(_check_chunk, lazy=lazy)
    # Threads pay only where a check runs outside the GIL (decompression); an
    # uncompressed frame's check is a few µs of Python that threads would only contend for.
    if jobs > 1 and len(chunks) > 1 and any(fl.header.codec != Codec.none for _p, _s, fl, _c in rest):
        pool = ThreadPoolExecutor(min(jobs, len(chunks)))
        try:
            done.update(zip((w[2].offset for w in rest), (r for part in pool.map(check, chunks) for r in part)))
        finally:
            pool.shutdown(cancel_futures=True)  # an error stops the checks still queued
    else:
        done.update(zip((w[2].offset for w in rest), (r for part in map(check, chunks) for r in part)))
    mismatch = set()
    for stream_plan, frames, firsts in plain + _checked_firsts(work, done):
        proved.update(fl.offset for fl in frames)
        mismatch.update(_disagreeing(claims, stream_plan, *_rows(frames, firsts, stream_plan.record_size)))
    if claims:
        for w in work:
            if type(w) is _Block and w.firsts is not None:
                heads = w.block.heads
                mismatch.update(_disagreeing(claims, w.plan, w.block.offsets, heads["axis_base"].view("<u8"),
                                             w.firsts))
    _apply(f, work, done, proved, mismatch)
    return f.report


def _checked_firsts(work, outcomes):
    """(plan, frames, first records) of the checked frames with an INDEX claim
    that nothing rejected, per stream, where the time axis is an integer field
    (its range was checked): their claims are compared at once (_disagreeing)."""
    by_plan = {}
    for plan, _stream, fl, claimed in (w for w in work if type(w) is tuple):
        if claimed and plan.axis_int is not None:
            outcome = outcomes.get(fl.offset)  # None: a plain frame, compared already
            if outcome is not None and outcome[0] is None and outcome[1] is not None:
                _plan, frames, firsts = by_plan.get(id(plan)) or by_plan.setdefault(id(plan), (plan, [], []))
                frames.append(fl)
                firsts.append(outcome[1])
    return list(by_plan.values())


def _apply(f, work, outcomes, proved, mismatch):
    """Stream.decode_frame's consequences of each outcome, in order; `proved`: frames
    with nothing to apply but, for those in `mismatch`, an INDEX claim they disprove
    (as are a _Block's frames)."""
    for w in work:
        if type(w) is _Block:
            if mismatch and f._index_axes:
                for offset in w.block.offsets.tolist():
                    if offset in mismatch and offset in f._index_axes:
                        f._index_disagrees(offset)
            continue
        plan, stream, fl, claimed = w
        if fl.offset in proved:
            if fl.offset in mismatch and fl.offset in f._index_axes:  # not yet discarded by an earlier one
                f._index_disagrees(fl.offset)
            continue
        exc, record = outcomes[fl.offset]
        if exc is None and not claimed:  # nothing to apply (an INDEX claim is never added after the scan)
            continue
        first = None
        if exc is None and claimed and record is not None:
            try:
                first = _first_axis(plan, fl.header, record)
            except (LogbError, ValueError) as err:  # as decoding the frame would meet it
                exc = err
        if exc is not None:
            if f.strict:
                raise MalformedPayloadError(f"DATA frame at offset {fl.offset}: {exc}") from exc
            stream._drop(fl, str(exc))
            continue
        claimed = f._index_axes.get(fl.offset)  # gone once an earlier frame disproved the INDEX
        if claimed is not None and first is not None and pack_axis(first, stream.schema.is_time) != claimed:
            f._index_disagrees(fl.offset)

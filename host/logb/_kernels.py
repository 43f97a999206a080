"""The kernel API: what a backend (logb._backend) is.

A backend is one object (the python-zstandard shape): `_pykernels.PyKernels`,
numpy and crcmod, the reference; or `_ckernels.CKernels`, cbridge's C through
cffi. Call sites (crc.py, fields.py, codecs.py, batch.py) call
`_backend.active.<kernel>(...)` and never ask which one it is.

`Kernels` holds what both share: the checks on every argument (so no input
can make a kernel read or write outside its buffers, and both backends reject
the same calls) and the numpy shaping. A backend supplies the
underscore-prefixed kernels, which may assume checked arguments and n > 0,
and these, each checking its own buffer as it takes hold of it:

- `crc32c(data, crc=0)`: CRC-32C of a bytes-like object, continuing from `crc`;
- `crc32c_range(buf, start, end)`: the same of buf[start:end], not copied;
- `transpose(data, count, size)` / `untranspose(...)`: SPEC §8.2, as bytes;
- `walk_tails(data, pos, n, v)`: (code, position reached, starts, ends) of
  the tail region at data[pos] (SPEC §6.4); value f of record r is
  data[starts[r*v + f]:ends[r*v + f]]. The code is TAIL_OK or the first
  error, whose starts and ends are empty.
- `scan_frames(buf, pos, base, cap)`: the frame walk's hot loop (scan.c):
  (table, stop, status) for the run of well-formed frames from buf[pos]; the
  table is a FRAME_DTYPE array (offsets are base + position), `stop` where
  the run ended and `status` why (SCAN_END, SCAN_PAST_END, SCAN_CRC,
  SCAN_FULL: logb_cbridge.h's LOGB_SCAN_*).
- `scan_data_frames(buf, pos, base, cap)`: the same walk, and its DATA
  headers: (table, heads, stop, status), heads a HEAD_DTYPE array, row i the
  28-byte DATA header of frame i (`present` 1) or zeros (not a DATA frame,
  or a payload too short to hold one).

- `zstd_frame_bound(buf)`: (code, size, bound, content) of the one zstd
  frame buf must be, from its headers alone (zstdframe.c): the code is
  ZSTD_OK or the first problem (ZSTD_*), `bound` the most it can decode to,
  `content` its stated Frame_Content_Size or None.
- `zstd_frames_ok(buf, frames)`: how many of the frames of buf (rows of a
  uint64 (n, 3) array: start, end, raw_size), from the first, are each a
  zstd frame exactly there that states raw_size (> 0) as its content size and
  can decode to it (the decompressor decides the rest).

`group_rows(group, ngroups, columns)`: rows (and columns) grouped by a group
number per row, a stable counting sort (the backend's `_group_rows`);
`linear(raw, a, b)`: a linear conversion of an integer column (`_linear`);
`key_groups(keys)`: each row's index among the distinct keys (`_key_groups`).

`plan(size, specs)` and `extract_many(records, plan, outs)` are `extract` of
several fields of the same records in one call (a FieldPlan is checked once;
the backend supplies `_extract_many`); `extract_frames(buf, starts, counts,
plan, outs, scale, bases)` is extract_many of many runs of records (DATA frames)
into one set of columns (`_extract_frames`).

The field kernels' `kind` and the tail walk's codes are logb_cbridge.h's
(tests/test_cbridge.py checks the values against the built module).
"""

import numpy as np

from .errors import LogbError

KIND_SIZE_MASK = 0x0F  # element size in bytes: 1, 2, 4 or 8
KIND_SIGNED = 0x10  # extract: sign-extend from the field width; pack: the element is signed
KIND_BOOL = 0x20  # extract: store (value != 0) in a 1-byte element

TAIL_OK = 0
TAIL_PREFIX = 1  # the region ends inside a length prefix
TAIL_PAST_END = 2  # a value runs past the end
TAIL_LEFTOVER = 3  # bytes left over after the last tail

# ---- scan (issue 13: the frame walk in C)
SCAN_END = 0  # fewer than a frame header left
SCAN_PAST_END = 1  # the frame at `stop` runs past the end of the buffer
SCAN_CRC = 2  # the frame at `stop` fails its CRC
SCAN_FULL = 3  # the table is full: call again from `stop`
SCAN_CAP = 4096  # frames one call lists at most
# logb_cbridge.h's logb_frame, field for field
FRAME_DTYPE = np.dtype([("offset", "<u8"), ("payload_len", "<u4"), ("stream_id", "<u2"), ("type", "u1"),
                        ("flags", "u1")])
# logb_cbridge.h's logb_data_head: a DATA frame's 28-byte header (frames.DATA_HEADER), aligned
HEAD_DTYPE = np.dtype([("raw_size", "<u8"), ("axis_base", "V8"), ("record_count", "<u4"), ("run_id", "<u4"),
                       ("codec", "u1"), ("filter", "u1"), ("reserved", "<u2"), ("present", "<u4")])
# ---- zstd frames (zstdframe.c): logb_cbridge.h's LOGB_ZSTD_*
ZSTD_OK = 0
ZSTD_NOT_ZSTD = 1  # no zstd magic number (a skippable frame is not data)
ZSTD_HEADER_SHORT = 2  # the frame header runs past the end
ZSTD_RESERVED_BIT = 3  # the header descriptor's reserved bit is set
ZSTD_WINDOW = 4  # a window over 2**31 bytes
ZSTD_DICTIONARY = 5  # the frame needs a dictionary
ZSTD_RESERVED_BLOCK = 6  # a block of the reserved type
ZSTD_INCOMPLETE = 7  # a block or the checksum runs past the end
ZSTD_TRAILING = 8  # bytes after the frame
FRAME_DATA = 0x20  # tables.FrameType.DATA (tables imports nothing of the kernels')
DATA_HEAD_SIZE = 28
KEY_GROUPS_MAX = 4096  # distinct keys key_groups takes by default (CAN ids on one bus)


class BackendUnavailable(LogbError, ImportError):
    """A backend (or a CRC mode of one) was asked for but cannot be had."""


def field_window(offset, width, big):
    """First byte, byte count and right shift of a field's byte window (SPEC §6.2)."""
    last = offset + width - 1
    first_byte, last_byte = offset // 8, last // 8
    shift = 7 - last % 8 if big else offset % 8
    return first_byte, last_byte - first_byte + 1, shift


def check_range(start, end, size):
    if not 0 <= start <= end <= size:
        raise ValueError(f"CRC range [{start}, {end}) outside a buffer of {size} bytes")


def check_scan(pos, base, cap, size):
    if not 0 <= pos <= size or base < 0 or cap < 1:
        raise ValueError(f"scan from {pos} (base {base}, {cap} frames) of a buffer of {size} bytes")


def check_size(have, count, size):
    if have < count * size:
        raise ValueError(f"{have} bytes, {count} records of {size} need {count * size}")


class FieldPlan:
    """Fields of `size`-byte records checked for extraction together (Kernels.plan).
    `specs`: (offset, width, big, kind, out_offset) per field; a backend may keep
    its own form of them in `native`."""

    __slots__ = ("size", "specs", "native")

    def __init__(self, size, specs):
        self.size, self.specs, self.native = size, specs, None


class Kernels:
    """The checked entry points shared by every backend.

    Subclasses set `name` ("c" or "python"), `crc_impl` (what computes the
    CRC) and `reads_planar` (True when the field kernels read a transposed
    frame's rows in place, through the strided (N, S) view `.T`, so the
    reader need not untranspose)."""

    name = crc_impl = None
    reads_planar = False

    # ---------------------------------------------------------------- fields
    @staticmethod
    def records(records, writable=False):
        """`records` as an (N, S) uint8 array of non-negative strides."""
        if not isinstance(records, np.ndarray) or records.dtype != np.uint8 or records.ndim != 2:
            raise TypeError("records must be a 2-D uint8 numpy array")
        if writable and not records.flags.writeable:
            raise ValueError("assignment destination is read-only")
        if records.size and min(records.strides) < 0:
            if writable:
                raise ValueError("records with negative strides cannot be written in place")
            records = np.ascontiguousarray(records)
        return records

    @staticmethod
    def _check_field(records, offset, width, kind, extracting):
        if offset < 0 or width < 1 or width > 64 or offset + width > 8 * records.shape[1]:
            raise ValueError(f"field at bit {offset}, {width} bits, does not fit a "
                             f"{records.shape[1]}-byte record")
        # the rules of bits.c's check_kind
        size = kind & KIND_SIZE_MASK
        valid = size in (1, 2, 4, 8) and not kind & ~(KIND_SIZE_MASK | KIND_SIGNED | KIND_BOOL)
        if kind & KIND_BOOL:
            valid = valid and extracting and size == 1 and not kind & KIND_SIGNED
        elif extracting:
            valid = valid and width <= 8 * size  # the element must hold every value
        if not valid:
            raise ValueError(f"invalid field (bit {offset}, {width} bits, kind {kind:#x})")

    @staticmethod
    def _check_items(arr, n, offset, kind, what):
        if arr.ndim != 1 or arr.shape[0] != n or arr.strides[0] < 0:
            raise ValueError(f"{what} must be a 1-D array of one item per record")
        if offset < 0 or offset + (kind & KIND_SIZE_MASK) > arr.itemsize:
            raise ValueError(f"element does not fit the {what} item")

    def extract(self, records, offset, width, big, kind, out, out_offset=0):
        """Extract one field of every record into `out` (1-D, one item per
        record): an element of `kind` at byte `out_offset` of each item.
        Returns `out`."""
        records = self.records(records)
        self._check_field(records, offset, width, kind, extracting=True)
        n = records.shape[0]
        self._check_items(out, n, out_offset, kind, "out")
        if not out.flags.writeable:
            raise ValueError("out is read-only")
        if n:
            self._extract(records, offset, width, big, kind, out, out_offset)
        return out

    def plan(self, size, specs):
        """A FieldPlan: fields (offset, width, big, kind, out_offset) of `size`-byte
        records, checked once, to extract together with extract_many."""
        probe = np.empty((0, size), np.uint8)
        specs = tuple((int(o), int(w), bool(b), int(k), int(oo)) for o, w, b, k, oo in specs)
        for offset, width, _big, kind, _out_offset in specs:
            self._check_field(probe, offset, width, kind, extracting=True)
        return FieldPlan(size, specs)

    def extract_many(self, records, plan, outs):
        """extract() of every field of `plan` into the matching array of `outs`, in one call."""
        records = self.records(records)
        if records.shape[1] != plan.size:
            raise ValueError(f"records of {records.shape[1]} bytes, the plan is for {plan.size}")
        if len(outs) != len(plan.specs):
            raise ValueError(f"{len(outs)} outputs for {len(plan.specs)} fields")
        n = records.shape[0]
        for out, spec in zip(outs, plan.specs):
            self._check_items(out, n, spec[4], spec[3], "out")
            if not out.flags.writeable:
                raise ValueError("out is read-only")
        if n and outs:
            self._extract_many(records, plan, outs)
        return outs

    def extract_frames(self, runs, plan, outs, scale=1, bases=None):
        """extract_many of several runs of records (DATA frames read in place,
        or decompressed) into one set of columns: `runs` is [(buffer, start,
        count, planar)], run r the `count` records at buffer[start:],
        row-major, or planar (a transposed frame's rows: byte j of record i at
        start + j * count + i); its values follow run r-1's in every output (1-D,
        one item per record of all the runs). `bases` (uint64 per run, or None)
        makes the last output a time axis: run r's values become value * scale
        + bases[r], mod 2**64 (the caller knows they cannot overflow)."""
        if len(outs) != len(plan.specs):
            raise ValueError(f"{len(outs)} outputs for {len(plan.specs)} fields")
        if bases is not None:
            if not isinstance(bases, np.ndarray) or bases.dtype != np.uint64 or bases.shape != (len(runs),) \
                    or not bases.flags.c_contiguous:
                raise TypeError("bases must be a C-contiguous 1-D uint64 array of one item per run")
            if not outs or plan.specs[-1][3] & (KIND_SIZE_MASK | KIND_BOOL) != 8 or plan.specs[-1][4]:
                raise ValueError("the time axis (the last field) must be of 8-byte elements at offset 0")
        n = 0
        sizes = {}  # id(buffer) -> its length (a file's frames share one buffer)
        for buf, start, count, _planar in runs:
            have = sizes.get(id(buf))
            if have is None:
                with memoryview(buf) as mv:
                    have = sizes[id(buf)] = mv.nbytes
            if start < 0 or count < 0 or start + count * plan.size > have:
                raise ValueError(f"a run of {count} records at {start} ends past its {have}-byte buffer")
            n += count
        for out, spec in zip(outs, plan.specs):
            self._check_items(out, n, spec[4], spec[3], "out")
            if not out.flags.writeable:
                raise ValueError("out is read-only")
        if n and outs:
            self._extract_frames(runs, plan, outs, scale % (1 << 64), bases)
        return outs

    def pack(self, records, offset, width, big, kind, values, in_offset=0):
        """Store `values` (1-D, one item per record; element `kind` at byte
        `in_offset` of each item) into one field of every record, masked to
        the field width; the record's other bits are kept."""
        records = self.records(records, writable=True)
        self._check_field(records, offset, width, kind, extracting=False)
        n = records.shape[0]
        self._check_items(values, n, in_offset, kind, "values")
        if n:
            self._pack(records, offset, width, big, kind, values, in_offset)

    def gather(self, records, byte0, nbytes, out=None):
        """(N, nbytes) uint8 copy of bytes [byte0, byte0 + nbytes) of every record."""
        records = self.records(records)
        n = records.shape[0]
        if byte0 < 0 or nbytes < 0 or byte0 + nbytes > records.shape[1]:
            raise ValueError("byte range outside the record")
        if out is None:
            out = np.empty((n, nbytes), np.uint8)
        elif out.shape != (n, nbytes) or out.dtype != np.uint8 or not out.flags.c_contiguous \
                or not out.flags.writeable:
            raise ValueError(f"out must be a writable C-contiguous ({n}, {nbytes}) uint8 array")
        if n and nbytes:
            self._gather(records, byte0, nbytes, out)
        return out

    # ---------------------------------------------------------------- group
    def group_rows(self, group, ngroups, columns=()):
        """Rows by group, a stable counting sort (decode.c): `group` is a uint32 group
        number per row (ngroups or more: left out); returns (starts, rows, moved):
        group g's rows are rows[starts[g]:starts[g + 1]] (int64 indices, in row
        order) and moved[c][starts[g]:starts[g + 1]] are theirs of columns[c] (arrays
        of one C-contiguous item per row)."""
        if not isinstance(group, np.ndarray) or group.dtype != np.uint32 or group.ndim != 1 \
                or not group.flags.c_contiguous:
            raise TypeError("group must be a C-contiguous 1-D uint32 array")
        if ngroups < 0:
            raise ValueError("ngroups must not be negative")
        n = group.shape[0]
        for c in columns:
            if not isinstance(c, np.ndarray) or c.ndim < 1 or c.shape[0] != n or not c.flags.c_contiguous:
                raise ValueError("every column must be a C-contiguous array of one item per row")
        total = int(np.count_nonzero(group < ngroups)) if n else 0
        starts = np.zeros(ngroups + 1, np.int64)
        rows = np.empty(total, np.int64)
        moved = [np.empty((total, *c.shape[1:]), c.dtype) for c in columns]
        if total:
            self._group_rows(group, ngroups, starts, rows, columns, moved)
        return starts, rows, moved

    def key_groups(self, keys, max_distinct=KEY_GROUPS_MAX):
        """(distinct, group) of a uint32 key per row: the distinct keys in order of first
        appearance and each row's index into them (uint32); None when there are more
        than `max_distinct` (decode.c's hash table)."""
        if not isinstance(keys, np.ndarray) or keys.dtype != np.uint32 or keys.ndim != 1 \
                or not keys.flags.c_contiguous:
            raise TypeError("keys must be a C-contiguous 1-D uint32 array")
        if not 1 <= max_distinct <= 1 << 30:
            raise ValueError("max_distinct must be 1 .. 2**30")
        if not keys.shape[0]:
            return np.zeros(0, np.uint32), np.zeros(0, np.uint32)
        return self._key_groups(keys, max_distinct)

    def linear(self, raw, a, b):
        """float64 a + (b * x) of every x of an integer column (SPEC §7.3: x the nearest
        double; two roundings), in one pass."""
        if not isinstance(raw, np.ndarray) or raw.ndim != 1 or raw.dtype.kind not in "iu" \
                or not raw.dtype.isnative or not raw.flags.c_contiguous:
            raise TypeError("raw must be a C-contiguous 1-D native integer array")
        out = np.empty(raw.shape[0], np.float64)
        if raw.shape[0]:
            self._linear(raw, raw.itemsize | (KIND_SIGNED if raw.dtype.kind == "i" else 0), float(a), float(b),
                         out)
        return out

    # ---------------------------------------------------------------- scan
    def scan_frames(self, buf, pos=0, base=0, cap=SCAN_CAP):
        """The run of well-formed frames from buf[pos] (see the module docstring)."""
        return self._scan_frames(buf, pos, base, cap)

    def scan_data_frames(self, buf, pos=0, base=0, cap=SCAN_CAP):
        """scan_frames and the DATA headers of its frames (see the module docstring)."""
        return self._scan_data_frames(buf, pos, base, cap)

    def zstd_frame_bound(self, buf):
        """(code, size, bound, content) of the zstd frame buf must be (see the module docstring)."""
        return self._zstd_frame_bound(buf)

    def zstd_frames_ok(self, buf, frames):
        """How many frames of buf pass, from the first (see the module docstring)."""
        if not isinstance(frames, np.ndarray) or frames.dtype != np.uint64 or frames.ndim != 2 \
                or frames.shape[1] != 3 or not frames.flags.c_contiguous:
            raise TypeError("frames must be a C-contiguous (n, 3) uint64 array")
        return self._zstd_frames_ok(buf, frames) if frames.shape[0] else 0

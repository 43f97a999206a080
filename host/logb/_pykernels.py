"""The pure-Python backend: every kernel of logb._kernels in numpy (and
crcmod's compiled CRC engine). It is the reference the C kernels are tested
against, and what runs where the C extension cannot be built.

`crc32c_pure` is the dependency-free table CRC that documents the algorithm;
the backend uses it only when crcmod is not installed.
"""

import struct

import numpy as np

from ._kernels import (DATA_HEAD_SIZE, FRAME_DATA, FRAME_DTYPE, HEAD_DTYPE, KIND_BOOL, KIND_SIGNED,
                       KIND_SIZE_MASK, SCAN_CRC, SCAN_END, SCAN_FULL, SCAN_PAST_END, TAIL_LEFTOVER, TAIL_OK,
                       TAIL_PAST_END, TAIL_PREFIX, ZSTD_DICTIONARY, ZSTD_HEADER_SHORT, ZSTD_INCOMPLETE,
                       ZSTD_NOT_ZSTD, ZSTD_OK, ZSTD_RESERVED_BIT, ZSTD_RESERVED_BLOCK, ZSTD_TRAILING, ZSTD_WINDOW,
                       Kernels, check_range, check_scan, check_size, field_window)

POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected; logb.crc.POLY, the firmware is generated from it
_U64 = np.uint64
_U32 = struct.Struct("<I")
_FRAME_HEADER = struct.Struct("<IBBH")  # framing.FRAME_HEADER (framing imports the backend)
_DATA_HEAD = struct.Struct("<8sIIBBHQ")  # frames.DATA_HEADER
_NO_HEAD = (0, bytes(8), 0, 0, 0, 0, 0, 0)
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 1 << 17  # Block_Maximum_Size
_ZSTD_DID_SIZE = (0, 1, 2, 4)  # Dictionary_ID bytes by its flag
_ZSTD_FCS_SIZE = (0, 2, 4, 8)  # Frame_Content_Size bytes by its flag


def _make_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (POLY if crc & 1 else 0)
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def crc32c_pure(data, crc=0):
    """CRC-32C of `data`, continuing from a previous result `crc`."""
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _crcmod_engine():
    try:
        import crcmod.predefined
    except ImportError:
        return None
    return crcmod.predefined.mkPredefinedCrcFun("crc-32c")


_INTS = {(size, signed): np.dtype(f"{'i' if signed else 'u'}{size}") for size in (1, 2, 4, 8)
         for signed in (False, True)}


def _element(arr, offset, size, signed=False):
    """View of the `size`-byte integer at byte `offset` of each item of a 1-D array."""
    code = _INTS[size, signed]
    if offset == 0 and size == arr.itemsize:
        return arr if arr.dtype == code else arr.view(code)
    return arr.view(np.dtype({"names": ["e"], "formats": [code], "offsets": [offset],
                              "itemsize": arr.itemsize}))["e"]


def _uint64(records, offset, width, big):
    """uint64 column of one field of an (N, S) uint8 array (N > 0)."""
    b0, k, shift = field_window(offset, width, big)
    order = ">" if big else "<"
    if k <= 8:
        tmp = np.zeros((records.shape[0], 8), np.uint8)
        if big:
            tmp[:, 8 - k :] = records[:, b0 : b0 + k]
        else:
            tmp[:, :k] = records[:, b0 : b0 + k]
        v = tmp.view(f"{order}u8")[:, 0].astype(_U64)
        v >>= _U64(shift)
    else:  # a 58..64-bit field spread over 9 bytes
        tmp = np.ascontiguousarray(records[:, b0 : b0 + 8])
        head = tmp.view(f"{order}u8")[:, 0].astype(_U64)
        extra = records[:, b0 + 8].astype(_U64)
        if big:
            v = (head << _U64(8 - shift)) | (extra >> _U64(shift))
        else:
            v = (head >> _U64(shift)) | (extra << _U64(64 - shift))
    if width < 64:
        v &= _U64((1 << width) - 1)
    return v


_CRCMOD = _crcmod_engine()


class PyKernels(Kernels):
    name = "python"
    reads_planar = False  # numpy reads contiguous rows faster than it untransposes
    crc_impl = "crcmod" if _CRCMOD else "pure"

    # ---------------------------------------------------------------- CRC-32C
    # the engine itself, not a method around it: one call less on every frame
    crc32c = staticmethod(_CRCMOD or crc32c_pure)

    def crc32c_range(self, buf, start, end):
        with memoryview(buf) as mv:
            check_range(start, end, mv.nbytes)
            return self.crc32c(mv[start:end], 0)

    # ---------------------------------------------------------------- fields
    def _extract(self, records, offset, width, big, kind, out, out_offset):
        dest = _element(out, out_offset, kind & KIND_SIZE_MASK)
        b0, k, shift = field_window(offset, width, big)
        if shift == 0 and k in (1, 2, 4, 8) and width == 8 * k and records.flags.c_contiguous:
            # a whole, aligned window: read it in place as a k-byte integer
            order = ">" if big else "<"
            sign = "i" if kind & KIND_SIGNED else "u"
            col = np.ndarray((records.shape[0],), f"{order}{sign}{k}", records.data, b0, (records.shape[1],))
            dest[...] = col != 0 if kind & KIND_BOOL else col
            return
        v = _uint64(records, offset, width, big)
        if kind & KIND_BOOL:
            v = v != 0
        elif kind & KIND_SIGNED and width < 64:
            sign = _U64(1 << (width - 1))
            v ^= sign
            v -= sign  # the two's complement bits of the sign-extended value
        dest[...] = v

    def _extract_many(self, records, plan, outs):
        for out, (offset, width, big, kind, out_offset) in zip(outs, plan.specs):
            self._extract(records, offset, width, big, kind, out, out_offset)

    def _extract_frames(self, runs, plan, outs, scale, bases):
        done, size = 0, plan.size
        for r, (buf, start, n, planar) in enumerate(runs):
            if not n:
                continue
            flat = np.frombuffer(buf, np.uint8, n * size, start)
            records = flat.reshape(size, n).T if planar else flat.reshape(n, size)
            part = [out[done : done + n] for out in outs]
            self._extract_many(records, plan, part)
            if bases is not None:
                axis = part[-1].view(_U64)
                np.multiply(axis, _U64(scale), out=axis)
                np.add(axis, bases[r], out=axis)
            done += n

    def _pack(self, records, offset, width, big, kind, values, in_offset):
        src = _element(values, in_offset, kind & KIND_SIZE_MASK, signed=bool(kind & KIND_SIGNED))
        v = src.astype(_U64)  # a signed element is sign-extended first
        if width < 64:
            v &= _U64((1 << width) - 1)
        for j in range(offset // 8, (offset + width - 1) // 8 + 1):
            lo = max(0, 8 * j - offset)
            hi = min(width - 1, 8 * j + 7 - offset)
            nbits = hi - lo + 1
            if big:
                part = v >> _U64(width - 1 - hi)
                pos = 7 - (offset + hi - 8 * j)
            else:
                part = v >> _U64(lo)
                pos = offset + lo - 8 * j
            part = (part & _U64((1 << nbits) - 1)).astype(np.uint8) << np.uint8(pos)
            keep = np.uint8(0xFF ^ (((1 << nbits) - 1) << pos))
            records[:, j] = (records[:, j] & keep) | part

    def _gather(self, records, byte0, nbytes, out):
        out[...] = records[:, byte0 : byte0 + nbytes]

    # ---------------------------------------------------------------- transpose
    def transpose(self, data, count, size):
        with memoryview(data) as mv:
            check_size(mv.nbytes, count, size)
            return np.frombuffer(mv, np.uint8, count * size).reshape(count, size).T.tobytes()

    def untranspose(self, data, count, size):
        with memoryview(data) as mv:
            check_size(mv.nbytes, count, size)
            return np.frombuffer(mv, np.uint8, count * size).reshape(size, count).T.tobytes()

    # ---------------------------------------------------------------- tails
    def walk_tails(self, data, pos, n, v):
        starts, ends = [], []
        end = len(data)
        for _ in range(n * v):
            if pos + 4 > end:
                return TAIL_PREFIX, pos, [], []
            (length,) = _U32.unpack_from(data, pos)
            pos += 4
            if pos + length > end:
                return TAIL_PAST_END, pos, [], []
            starts.append(pos)
            pos += length
            ends.append(pos)
        if pos != end:
            return TAIL_LEFTOVER, pos, [], []
        return TAIL_OK, pos, starts, ends

    # ---------------------------------------------------------------- group
    def _group_rows(self, group, ngroups, starts, rows, columns, moved):
        kept = np.flatnonzero(group < ngroups)
        g = group[kept]
        rows[...] = kept[np.argsort(g, kind="stable")]
        np.cumsum(np.bincount(g, minlength=ngroups), out=starts[1:])
        for src, dst in zip(columns, moved):
            dst[...] = src[rows]

    def _key_groups(self, keys, max_distinct):
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        if len(uniq) > max_distinct:
            return None
        order = np.argsort(first)  # by first appearance
        rank = np.empty(len(uniq), np.uint32)
        rank[order] = np.arange(len(uniq), dtype=np.uint32)
        return uniq[order], rank[inverse.reshape(-1)]

    def _linear(self, raw, kind, a, b, out):
        out[...] = raw  # the nearest double of each value
        with np.errstate(all="ignore"):
            out *= b
            out += a

    # ---------------------------------------------------------------- scan
    def _scan_frames(self, buf, pos, base, cap):
        rows, _heads, pos, status = self._walk(buf, pos, base, cap, False)
        return np.array(rows, FRAME_DTYPE), pos, status

    def _scan_data_frames(self, buf, pos, base, cap):
        rows, heads, pos, status = self._walk(buf, pos, base, cap, True)
        return np.array(rows, FRAME_DTYPE), np.array(heads, HEAD_DTYPE), pos, status

    def _walk(self, buf, pos, base, cap, want_heads):
        rows, heads = [], []
        status = SCAN_END
        crc = self.crc32c
        with memoryview(buf) as mv:
            size = mv.nbytes
            check_scan(pos, base, cap, size)
            while size - pos >= 8:
                plen, ftype, flags, sid = _FRAME_HEADER.unpack_from(mv, pos)
                end = pos + 12 + plen
                if end > size:
                    status = SCAN_PAST_END
                    break
                if len(rows) == cap:
                    status = SCAN_FULL
                    break
                if crc(mv[pos : end - 4], 0) != _U32.unpack_from(mv, end - 4)[0]:
                    status = SCAN_CRC
                    break
                rows.append((base + pos, plen, sid, ftype, flags))
                if want_heads:
                    if ftype == FRAME_DATA and plen >= DATA_HEAD_SIZE:
                        axis, count, run_id, codec, filt, reserved, raw_size = _DATA_HEAD.unpack_from(mv, pos + 8)
                        heads.append((raw_size, axis, count, run_id, codec, filt, reserved, 1))
                    else:
                        heads.append(_NO_HEAD)
                pos = end
        return rows, heads, pos, status

    # ---------------------------------------------------------------- zstd
    def _zstd_frames_ok(self, buf, frames):
        with memoryview(buf) as mv:
            b = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
            for i, (start, end, raw_size) in enumerate(frames.tolist()):
                if not start <= end <= len(b):
                    return i
                code, _size, most, content = self._zstd_frame_bound(b[start:end])
                if code or content != raw_size or most < raw_size or not raw_size:
                    return i
            return len(frames)

    def _zstd_frame_bound(self, buf):
        """zstdframe.c, step for step (RFC 8878 §3.1.1)."""
        with memoryview(buf) as mv:
            b = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
            n = len(b)
            if n < 4 or int.from_bytes(b[:4], "little") != _ZSTD_MAGIC:
                return ZSTD_NOT_ZSTD, 0, 0, None
            if n < 5:
                return ZSTD_HEADER_SHORT, 0, 0, None
            fhd = b[4]
            single, did_flag, fcs_flag = fhd >> 5 & 1, fhd & 3, fhd >> 6
            fcs_bytes = _ZSTD_FCS_SIZE[fcs_flag] if fcs_flag else single
            if n < 5 + (not single) + _ZSTD_DID_SIZE[did_flag] + fcs_bytes:
                return ZSTD_HEADER_SHORT, 0, 0, None
            if fhd & 0x08:
                return ZSTD_RESERVED_BIT, 0, 0, None
            pos, window = 5, 0
            if not single:
                wd = b[pos]
                pos += 1
                log = (wd >> 3) + 10
                if log > 31:
                    return ZSTD_WINDOW, 0, 0, None
                window = (1 << log) + ((1 << log) >> 3) * (wd & 7)
            did_bytes = _ZSTD_DID_SIZE[did_flag]
            if did_bytes and int.from_bytes(b[pos : pos + did_bytes], "little"):
                return ZSTD_DICTIONARY, 0, 0, None
            pos += did_bytes
            content = None
            if fcs_bytes:
                content = int.from_bytes(b[pos : pos + fcs_bytes], "little") + (256 if fcs_bytes == 2 else 0)
                pos += fcs_bytes
            if single:
                window = content
            block_max = window if window and window < _ZSTD_BLOCK_MAX else _ZSTD_BLOCK_MAX
            bound, last = 0, False
            while not last:
                if n - pos < 3:
                    return ZSTD_INCOMPLETE, 0, 0, None
                head = int.from_bytes(b[pos : pos + 3], "little")
                last, kind, size = head & 1, head >> 1 & 3, head >> 3
                pos += 3
                if kind == 3:
                    return ZSTD_RESERVED_BLOCK, 0, 0, None
                stored = 1 if kind == 1 else size  # RLE: one byte, repeated
                if stored > n - pos:
                    return ZSTD_INCOMPLETE, 0, 0, None
                pos += stored
                bound += block_max if kind == 2 else size
            if fhd >> 2 & 1:
                if n - pos < 4:
                    return ZSTD_INCOMPLETE, 0, 0, None
                pos += 4
            if pos < n:
                return ZSTD_TRAILING, 0, 0, None
            return ZSTD_OK, pos, bound, content

"""The C backend: every kernel of logb._kernels as a call into cbridge
(`logb._cbridge`, built by cffi from cbridge/). `Kernels` has checked every
argument first, so no Python input can make C read or write outside its
buffers; what is left here is handing C the pointers and strides."""

from ._kernels import FRAME_DTYPE, HEAD_DTYPE, BackendUnavailable, Kernels, check_range, check_scan, check_size

CRC_ENV = "LOGB_CRC"
CRC_MODES = ("auto", "hw", "sw")


class CKernels(Kernels):
    name = "c"
    reads_planar = True  # bits.c reads either record layout through its strides

    def __init__(self, ffi, lib, crc_mode="auto"):
        import numpy

        self.ffi, self.lib, self._np = ffi, lib, numpy
        # cpuid can trap in a VM: asked once, here
        self.hw_name = ffi.string(lib.logb_crc32c_hw_name()).decode()
        self.hw_available = bool(lib.logb_crc32c_hw_available())
        self.set_crc(crc_mode)

    # ---------------------------------------------------------------- CRC-32C
    def set_crc(self, mode):
        """'auto' (hardware when the CPU has it), 'hw' (required) or 'sw' (slice-by-8)."""
        mode = (mode or "auto").lower()
        if mode not in CRC_MODES:
            raise ValueError(f"{CRC_ENV}={mode!r}: expected auto, hw or sw")
        if mode == "hw" and not self.hw_available:
            raise BackendUnavailable("no CRC-32C instruction on this CPU (or not compiled in)")
        if mode != "sw" and self.hw_available:
            self._crc, self.crc_impl = self.lib.logb_crc32c_hw, self.hw_name
        else:
            self._crc, self.crc_impl = self.lib.logb_crc32c_sw, "slice-by-8"
        # scan.c takes the CRC as a function pointer (firmware has no logb_crc32c_hw)
        self._crc_fn = self.ffi.addressof(self.lib, self._crc.__name__)
        self.crc_mode = mode

    def crc32c(self, data, crc=0):
        with self.ffi.from_buffer("uint8_t[]", data) as p:
            return self._crc(crc, p, len(p))

    def crc32c_range(self, buf, start, end):
        with self.ffi.from_buffer("uint8_t[]", buf) as p:
            check_range(start, end, len(p))
            return self._crc(0, p + start, end - start)

    # ---------------------------------------------------------------- fields
    def _ptr(self, a, offset=0, ctype="uint8_t *"):
        # (the address stays valid while the caller holds `a`)
        return self.ffi.cast(ctype, a.__array_interface__["data"][0] + offset)

    def _extract(self, records, offset, width, big, kind, out, out_offset):
        rs, bs = records.strides
        rc = self.lib.logb_extract(self._ptr(records), records.shape[0], rs, bs, offset, width, 1 if big else 0,
                                   kind, self._ptr(out, out_offset), out.strides[0])
        if rc:
            raise ValueError(f"logb_extract: invalid field (bit {offset}, {width} bits, kind {kind:#x})")

    def _extract_many(self, records, plan, outs):
        ffi = self.ffi
        specs = plan.native
        if specs is None:  # built once per plan, read-only after: safe to share between threads
            specs = plan.native = ffi.new("logb_field_spec[]", [s[:4] for s in plan.specs])
        where = []
        for out, spec in zip(outs, plan.specs):
            # from_buffer (contiguous items only) is ~6x quicker than __array_interface__
            at = int(ffi.cast("uintptr_t", ffi.from_buffer(out))) if out.flags.c_contiguous \
                else out.__array_interface__["data"][0]
            where += (at + spec[4], out.strides[0])
        rs, bs = records.strides
        rc = self.lib.logb_extract_many(self._ptr(records), records.shape[0], rs, bs, specs, len(outs),
                                        ffi.new("uintptr_t[]", where))
        if rc:
            raise ValueError("logb_extract_many: invalid field")

    def _extract_frames(self, runs, plan, outs, scale, bases):
        ffi, np = self.ffi, self._np
        specs = plan.native
        if specs is None:
            specs = plan.native = ffi.new("logb_field_spec[]", [s[:4] for s in plan.specs])
        where = []
        for out, spec in zip(outs, plan.specs):
            where += (out.__array_interface__["data"][0] + spec[4], out.strides[0])
        held, at = {}, []  # id(buffer) -> (its cffi view, its address): held until the call returns
        for buf, start, _count, _planar in runs:
            view = held.get(id(buf))
            if view is None:
                p = ffi.from_buffer("uint8_t[]", buf)
                view = held[id(buf)] = (p, int(ffi.cast("uintptr_t", p)))
            at.append(view[1] + start)
        counts = np.fromiter((run[2] for run in runs), np.uint64, len(runs))
        planar = ffi.new("uint8_t[]", [1 if run[3] else 0 for run in runs])
        rc = self.lib.logb_extract_frames(
            ffi.new("uintptr_t[]", at), self._ptr(counts, 0, "uint64_t *"), planar, len(runs), plan.size, specs,
            len(outs), ffi.new("uintptr_t[]", where), scale,
            ffi.NULL if bases is None else self._ptr(bases, 0, "uint64_t *"))
        if rc:
            raise ValueError("logb_extract_frames: invalid field")

    def _pack(self, records, offset, width, big, kind, values, in_offset):
        rs, bs = records.strides
        rc = self.lib.logb_pack(self._ptr(records), records.shape[0], rs, bs, offset, width, 1 if big else 0,
                                kind, self._ptr(values, in_offset), values.strides[0])
        if rc:
            raise ValueError(f"logb_pack: invalid field (bit {offset}, {width} bits, kind {kind:#x})")

    def _gather(self, records, byte0, nbytes, out):
        rs, bs = records.strides
        self.lib.logb_gather(self._ptr(records), records.shape[0], rs, bs, byte0, nbytes, self._ptr(out))

    # ---------------------------------------------------------------- transpose
    def _transposed(self, fn, data, count, size):
        out = self._np.empty(count * size, self._np.uint8)
        with self.ffi.from_buffer("uint8_t[]", data) as src:
            check_size(len(src), count, size)
            fn(src, self._ptr(out), count, size)
        return out.tobytes()

    def transpose(self, data, count, size):
        return self._transposed(self.lib.logb_transpose, data, count, size)

    def untranspose(self, data, count, size):
        return self._transposed(self.lib.logb_untranspose, data, count, size)

    # ---------------------------------------------------------------- tails
    def walk_tails(self, data, pos, n, v):
        np = self._np
        offs = np.empty(n * v, np.uint64)
        lens = np.empty(n * v, np.uint32)
        end = self.ffi.new("size_t *")
        with self.ffi.from_buffer("uint8_t[]", data) as p:
            rc = self.lib.logb_walk_tails(p, len(p), pos, n, v, self._ptr(offs, 0, "uint64_t *"),
                                          self._ptr(lens, 0, "uint32_t *"), end)
        if rc:
            return rc, end[0], [], []
        return rc, end[0], offs.tolist(), (offs + lens).tolist()

    # ---------------------------------------------------------------- group
    def _group_rows(self, group, ngroups, starts, rows, columns, moved):
        cols = []
        for src, dst in zip(columns, moved):
            cols += (src.__array_interface__["data"][0], dst.__array_interface__["data"][0], src.strides[0])
        self.lib.logb_group_rows(self._ptr(group, 0, "uint32_t *"), group.shape[0], ngroups,
                                 self._ptr(starts, 0, "uint64_t *"), self._ptr(rows, 0, "int64_t *"), len(columns),
                                 self.ffi.new("uintptr_t[]", cols))

    def _key_groups(self, keys, max_distinct):
        np = self._np
        log2 = max(1, (2 * max_distinct - 1).bit_length())
        slots = np.empty(2 << log2, np.uint32)
        distinct = np.empty(max_distinct, np.uint32)
        group = np.empty(keys.shape[0], np.uint32)
        u32 = "uint32_t *"
        count = self.lib.logb_key_groups(self._ptr(keys, 0, u32), keys.shape[0], self._ptr(slots, 0, u32), log2,
                                         self._ptr(distinct, 0, u32), max_distinct, self._ptr(group, 0, u32))
        if count > max_distinct:
            return None
        return distinct[:count].copy(), group

    def _linear(self, raw, kind, a, b, out):
        self.lib.logb_linear(self._ptr(raw, 0, "void *"), raw.shape[0], kind, a, b, self._ptr(out, 0, "double *"))

    # ---------------------------------------------------------------- scan
    def _scan_frames(self, buf, pos, base, cap):
        # cffi releases the GIL around the call: other threads run while it walks
        table = self._np.empty(cap, FRAME_DTYPE)
        stop = self.ffi.new("size_t *")
        status = self.ffi.new("int *")
        # from_buffer, not _ptr: __array_interface__ costs ~10 µs a call, most of a short scan's time
        with self.ffi.from_buffer("uint8_t[]", buf) as p, self.ffi.from_buffer("logb_frame[]", table) as out:
            check_scan(pos, base, cap, len(p))
            n = self.lib.logb_scan_frames(p, len(p), pos, base, self._crc_fn, out, cap, stop, status)
        return table[:n], stop[0], status[0]

    def _scan_data_frames(self, buf, pos, base, cap):
        ffi = self.ffi
        table = self._np.empty(cap, FRAME_DTYPE)
        heads = self._np.empty(cap, HEAD_DTYPE)
        stop = ffi.new("size_t *")
        status = ffi.new("int *")
        with ffi.from_buffer("uint8_t[]", buf) as p, ffi.from_buffer("logb_frame[]", table) as out, \
                ffi.from_buffer("logb_data_head[]", heads) as hout:
            check_scan(pos, base, cap, len(p))
            n = self.lib.logb_scan_data_frames(p, len(p), pos, base, self._crc_fn, out, hout, cap, stop, status)
        return table[:n], heads[:n], stop[0], status[0]

    def _zstd_frame_bound(self, buf):
        info = self.ffi.new("uint64_t[4]")  # per call: verify calls it from several threads
        with self.ffi.from_buffer("uint8_t[]", buf) as p:
            code = self.lib.logb_zstd_frame_bound(p, len(p), info)
        if code:
            return code, 0, 0, None
        return 0, info[0], info[1], info[2] if info[3] else None

    def _zstd_frames_ok(self, buf, frames):
        ffi = self.ffi
        with ffi.from_buffer("uint8_t[]", buf) as p, ffi.from_buffer("uint64_t[]", frames) as f:
            return self.lib.logb_zstd_frames_ok(p, len(p), f, frames.shape[0])

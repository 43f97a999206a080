"""DATA/ATTACH codecs and the transpose filter (SPEC §8).

Decoding never allocates more than the declared raw_size, and rejects a
stream that decodes to anything but exactly raw_size bytes or carries bytes
after its end.
"""

import threading
import zlib

import numpy as np

from . import _backend
from .errors import InvalidDataError, UnsupportedCodecError, UnsupportedFilterError
from .tables import Codec, Filter

# An LZ4 block cannot expand by more than 255x plus a small constant; a
# raw_size beyond that is a lie that would make lz4.block allocate it.
_LZ4_MAX_RATIO = 256
# DEFLATE's maximum expansion is 1032:1 (258-byte matches at ~2 bits each).
_DEFLATE_MAX_RATIO = 1032


def _zstd():
    import zstandard

    return zstandard


def _zstd_compress(data, level):
    return _zstd().ZstdCompressor(level=3 if level is None else level).compress(data)


def _lz4_compress(data, level):
    import lz4.block

    return lz4.block.compress(bytes(data), store_size=False)


def _deflate_compress(data, level):
    c = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def _none_decode(stored, raw_size):
    if len(stored) != raw_size:
        raise InvalidDataError(f"raw_size {raw_size} but {len(stored)} bytes stored")
    return stored


def _codec(codec):
    try:
        return CODECS[codec]
    except KeyError:
        raise UnsupportedCodecError(f"unknown codec {codec}") from None


def compress(data, codec, level=None):
    return _codec(codec)[0](data, level)


def decompress(stored, codec, raw_size):
    """Decode `stored` to exactly raw_size bytes."""
    out = _codec(codec)[1](stored, raw_size)
    if len(out) != raw_size:
        raise InvalidDataError(f"decoded {len(out)} bytes, raw_size says {raw_size}")
    return out


def _deflate_decode(stored, raw_size):
    if raw_size > _DEFLATE_MAX_RATIO * len(stored) + 64:
        # Also keeps raw_size + 1 a valid max_length (a C ssize_t) below.
        raise InvalidDataError(f"raw_size {raw_size} is more than a DEFLATE stream of {len(stored)} bytes can hold")
    d = zlib.decompressobj(-15)
    try:
        out = d.decompress(stored, raw_size + 1)
    except zlib.error as exc:
        raise InvalidDataError(f"deflate: {exc}") from None
    if len(out) > raw_size:
        raise InvalidDataError(f"deflate stream decodes past raw_size {raw_size}")
    if not d.eof:
        raise InvalidDataError("deflate stream is incomplete")
    if d.unused_data:
        raise InvalidDataError("bytes after the end of the deflate stream")
    return out


_local = threading.local()


def _zstd_decompressor():
    """One ZstdDecompressor per thread (they are not thread-safe): making one
    per frame cost more than decompressing a small frame."""
    d = getattr(_local, "zstd", None)
    if d is None:
        d = _local.zstd = _zstd().ZstdDecompressor()
    return d


# zstd_frame_bound's codes (logb._kernels.ZSTD_*, 1..8) as the reason a frame is rejected
_ZSTD_PROBLEMS = (None, "zstd: not a zstd frame (a skippable frame counts as trailing bytes)",
                  "zstd frame header is incomplete", "zstd: reserved bit set in the frame header",
                  "zstd: window over 2**31 bytes", "zstd frame needs a dictionary", "zstd: reserved block type",
                  "zstd frame is incomplete", "bytes after the end of the zstd frame")


def _zstd_frame_bound(stored):
    """(compressed size, most bytes it can decode to, stated content size or
    None) of the one zstd frame that `stored` must be (RFC 8878 §3.1.1), from
    its header and block headers alone: a raw or RLE block states its size, a
    compressed one decodes to at most Block_Maximum_Size. Nothing is
    decompressed (the backend's zstd_frame_bound kernel)."""
    code, size, bound, content = _backend.active.zstd_frame_bound(stored)
    if code:
        raise InvalidDataError(_ZSTD_PROBLEMS[code])
    return size, bound, content


def _zstd_decode(stored, raw_size):
    # What the frame can decode to is known before decompressing, and the
    # output buffer is exactly raw_size: a bomb costs nothing past raw_size.
    _size, bound, content = _zstd_frame_bound(stored)
    if content is not None and content != raw_size:
        raise InvalidDataError(f"zstd frame holds {content} bytes, raw_size says {raw_size}")
    if bound < raw_size:
        raise InvalidDataError(f"zstd frame decodes to at most {bound} bytes, raw_size says {raw_size}")
    zstandard = _zstd()
    try:
        # max_output_size=0 would mean "unbounded": an empty region gets room for 1 byte (then rejected)
        return _zstd_decompressor().decompress(stored, max_output_size=max(raw_size, 1))
    except zstandard.ZstdError as exc:
        raise InvalidDataError(f"zstd: {exc} (past raw_size {raw_size}, or damaged)") from None


def zstd_decode_many(buf, frames, one_call=True, keep=None):
    """Zstd frames of one buffer (`frames`: a uint64 (n, 3) array of each
    one's start and end in buf and the raw_size it is to decode to),
    decompressed: `keep(i, data)` of each (default: data itself, a buffer);
    or None when any frame would be rejected or is not one this takes (then
    decompress() each one to learn which, and why). It accepts only what
    decompress() accepts: each frame passes _zstd_decode's checks first and
    must state its content size, so that both decode it in one pass into
    exactly raw_size bytes.

    `one_call`: all in one call that runs without the GIL (python-zstandard's
    multi_decompress_to_buffer), for threads beside a busy one; else a call
    per frame, each output given to `keep` and dropped before the next is
    made: ~5% quicker on one thread (the next output is the memory malloc
    just had back, still in cache, and there is no context to set up per call)."""
    d = _zstd_decompressor()
    multi = getattr(d, "multi_decompress_to_buffer", None)  # not in the cffi backend
    n = len(frames)
    if not n or (one_call and multi is None) or _backend.active.zstd_frames_ok(buf, frames) != n:
        return None
    keep = keep or (lambda _i, data: data)
    zstandard = _zstd()
    try:
        if not one_call:
            kept = []
            for i, (a, b, raw_size) in enumerate(frames.tolist()):
                data = d.decompress(buf[a:b], max_output_size=raw_size)
                if len(data) != raw_size:
                    return None
                kept.append(keep(i, data))
            return kept
        segments = np.empty((n, 2), np.uint64)  # (offset, length) pairs
        segments[:, 0] = frames[:, 0]
        segments[:, 1] = frames[:, 1] - frames[:, 0]
        out = multi(zstandard.BufferWithSegments(buf, segments.tobytes()),
                    decompressed_sizes=frames[:, 2].tobytes(), threads=1)
    except zstandard.ZstdError:
        return None
    return [keep(i, out[i]) for i in range(n)]


def _lz4_decode(stored, raw_size):
    import lz4.block

    if raw_size > _LZ4_MAX_RATIO * len(stored) + 64:
        raise InvalidDataError(f"raw_size {raw_size} is more than an LZ4 block of {len(stored)} bytes can hold")
    try:
        return lz4.block.decompress(bytes(stored), uncompressed_size=raw_size)
    except lz4.block.LZ4BlockError as exc:
        raise InvalidDataError(f"lz4: {exc}") from None


# The one codec table (ids in tables.Codec): (compress(data, level), decode(stored, raw_size)).
# A decoder never allocates past raw_size and rejects anything but exactly raw_size bytes.
CODECS = {
    Codec.none: (lambda data, level: bytes(data), _none_decode),
    Codec.zstd: (_zstd_compress, _zstd_decode),
    Codec.lz4: (_lz4_compress, _lz4_decode),
    Codec.deflate: (_deflate_compress, _deflate_decode),
}


def check_filter(filt):
    if filt not in Filter._value2member_map_:
        raise UnsupportedFilterError(f"unknown filter {filt}")


def transpose(fixed, count, size):
    """Row-major N×S records → S rows of N bytes."""
    if not count or not size:
        return bytes(fixed)
    return _backend.active.transpose(fixed, count, size)


def untranspose(stored, count, size):
    if not count or not size:
        return bytes(stored[: count * size])
    return _backend.active.untranspose(stored, count, size)

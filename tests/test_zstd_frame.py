"""The zstd frame bound (cbridge/zstdframe.c and its Python twin): what one
zstd frame can decode to, from its headers alone, checked against an oracle
built on libzstd's own header parser (zstandard.get_frame_parameters) on real
frames and on frames damaged every way a byte can be."""

import os
import random

import numpy as np
import pytest
import zstandard

from logb import _backend, _kernels, codecs
from logb.errors import InvalidDataError

BLOCK_MAX = 1 << 17


def oracle(stored):
    """(size, bound, content) or None (rejected): libzstd parses the frame
    header, the block headers are walked here (RFC 8878 §3.1.1.2)."""
    mv = memoryview(stored)
    if len(mv) < 4 or int.from_bytes(mv[:4], "little") != 0xFD2FB528:
        return None
    try:
        pos = zstandard.frame_header_size(mv)
        params = zstandard.get_frame_parameters(mv)
    except zstandard.ZstdError:
        return None
    if params.dict_id:
        return None
    block_max = min(params.window_size or BLOCK_MAX, BLOCK_MAX)
    bound, last = 0, False
    while not last:
        if pos + 3 > len(mv):
            return None
        head = int.from_bytes(mv[pos : pos + 3], "little")
        last, kind, size = head & 1, (head >> 1) & 3, head >> 3
        pos += 3
        if kind == 3:
            return None
        pos += 1 if kind == 1 else size
        bound += block_max if kind == 2 else size
    pos += 4 if params.has_checksum else 0
    if pos != len(mv):
        return None
    return pos, bound, None if params.content_size == zstandard.CONTENTSIZE_UNKNOWN else params.content_size


def bound(stored):
    code, size, most, content = _backend.active.zstd_frame_bound(stored)
    assert (code == _kernels.ZSTD_OK) == (size != 0)
    return (size, most, content) if code == _kernels.ZSTD_OK else None


def samples():
    rng = random.Random(7)
    inputs = [b"", b"x", bytes(1000), os.urandom(300), os.urandom(200_000), b"abc" * 100_000,
              bytes(rng.randrange(4) for _ in range(70_000))]
    out = []
    for data in inputs:
        for kw in ({}, {"write_content_size": False}, {"write_checksum": True},
                   {"level": 19, "write_checksum": True}, {"level": -5}, {"write_dict_id": False}):
            out.append((data, zstandard.ZstdCompressor(**kw).compress(data)))
    return out


SAMPLES = samples()


@pytest.mark.parametrize("i", range(len(SAMPLES)))
def test_real_frames(logb_backend, i):
    data, frame = SAMPLES[i]
    got = bound(frame)
    assert got == oracle(frame)
    size, most, content = got
    assert size == len(frame) and most >= len(data)
    assert content in (None, len(data))


def test_every_problem_has_its_code(logb_backend):
    good = zstandard.ZstdCompressor(write_checksum=True).compress(b"abc" * 1000)
    k = _kernels
    cases = {
        k.ZSTD_NOT_ZSTD: [b"", b"\x28\xb5\x2f", b"\x50\x2a\x4d\x18" + bytes(8), good[1:]],
        k.ZSTD_HEADER_SHORT: [good[:4], good[:5]],
        k.ZSTD_RESERVED_BIT: [good[:4] + bytes([good[4] | 0x08]) + good[5:]],
        k.ZSTD_WINDOW: [good[:4] + b"\x00\xb0" + good[6:]],  # not single-segment, window log 10 + 22
        k.ZSTD_DICTIONARY: [good[:4] + b"\x21\x05" + good[5:]],  # single segment, 1-byte dictionary id 5
        k.ZSTD_RESERVED_BLOCK: [good[:4] + b"\x20\x00\x07\x00\x00"],  # single segment, content 0, block type 3
        k.ZSTD_INCOMPLETE: [good[:-1], good[:-5], good[:8]],
        k.ZSTD_TRAILING: [good + b"\x00", good + good],
    }
    for code, inputs in cases.items():
        for stored in inputs:
            assert _backend.active.zstd_frame_bound(stored)[0] == code, (code, stored[:12].hex())
            assert oracle(stored) is None
            with pytest.raises(InvalidDataError):
                codecs.decompress(stored, 1, 3000)


def test_damaged_frames_agree_with_the_oracle(logb_backend):
    rng = random.Random(13)
    checked = 0
    for _data, frame in SAMPLES:
        # every byte of the header and first block header, every value that changes its meaning
        for pos in range(min(len(frame), 20)):
            for value in (0x00, 0xFF, frame[pos] ^ 0x08, frame[pos] ^ 0x20, frame[pos] ^ 0xC0, frame[pos] ^ 0x03,
                          frame[pos] ^ 0x04, frame[pos] ^ 0x01, frame[pos] ^ 0x06, rng.randrange(256)):
                damaged = frame[:pos] + bytes([value]) + frame[pos + 1 :]
                assert bound(damaged) == oracle(damaged), (pos, value, damaged[:24].hex())
                checked += 1
        for cut in {0, 3, 4, 5, 6, 8, 12, len(frame) - 1, len(frame) + 1, rng.randrange(len(frame) + 2)}:
            cut_frame = frame[:cut] if cut <= len(frame) else frame + b"\x00"
            assert bound(cut_frame) == oracle(cut_frame), cut
            checked += 1
    assert checked > 5000


def test_both_backends_agree_on_noise():
    c = _backend.load_c()
    if c is None:
        pytest.skip("no C backend")
    p = _backend.PY
    rng = random.Random(3)
    for _ in range(3000):
        n = rng.randrange(4, 40)
        head = b"\x28\xb5\x2f\xfd" + bytes(rng.randrange(256) for _ in range(n))
        assert c.zstd_frame_bound(head) == p.zstd_frame_bound(head)


def _packed(frames):
    """(one buffer, the (n, 3) table of zstd_frames_ok) of [(stored, raw_size)], a byte between frames."""
    buf, rows = bytearray(b"\x00"), []
    for stored, raw_size in frames:
        rows.append((len(buf), len(buf) + len(stored), raw_size))
        buf += stored + b"\x00"
    return bytes(buf), np.array(rows, np.uint64).reshape(-1, 3)


def test_many_frames_pass_until_the_first_that_does_not(logb_backend):
    z = zstandard.ZstdCompressor()
    datas = [bytes([k]) * (100 * k + 1) + os.urandom(k) for k in range(1, 9)]
    good = [(z.compress(d), len(d)) for d in datas]
    buf, table = _packed(good)
    ok = _backend.active.zstd_frames_ok
    assert ok(buf, table) == len(good)
    assert ok(buf, table[:0]) == 0
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(datas[0])
    bad = {
        "raw_size one more": (good[0][0], good[0][1] + 1),
        "raw_size 0": (z.compress(b""), 0),
        "no content size": (no_size, len(datas[0])),
        "trailing byte": (good[0][0] + b"\x00", good[0][1]),
        "cut": (good[0][0][:-1], good[0][1]),
    }
    for name, frame in bad.items():
        for at in (0, 3, 7):
            frames = good[:at] + [frame] + good[at + 1 :]
            buf, table = _packed(frames)
            assert ok(buf, table) == at, name
    buf, table = _packed(good)
    table[5, 1] = len(buf) + 1  # a range past the buffer
    assert ok(buf, table) == 5
    table[5, 1] = table[5, 0] - 1  # an end before the start
    assert ok(buf, table) == 5
    with pytest.raises(TypeError):
        ok(buf, table.astype(np.int64))
    with pytest.raises(TypeError):
        ok(buf, table[:, :2].copy())


@pytest.mark.parametrize("one_call", [True, False])
def test_decode_many_is_decompress_of_each_or_none(logb_backend, one_call):
    z = zstandard.ZstdCompressor(write_checksum=True)
    datas = [os.urandom(50) * k for k in range(1, 12)]
    buf, table = _packed([(z.compress(d), len(d)) for d in datas])
    out = codecs.zstd_decode_many(buf, table, one_call)
    assert [bytes(o) for o in out] == datas
    assert codecs.zstd_decode_many(buf, table[:0], one_call) is None
    damaged = bytearray(buf)
    damaged[int(table[4, 1]) - 2] ^= 0xFF  # frame 4's checksum: its headers are intact
    assert _backend.active.zstd_frames_ok(bytes(damaged), table) == len(datas)
    assert codecs.zstd_decode_many(bytes(damaged), table, one_call) is None
    with pytest.raises(InvalidDataError):
        codecs.decompress(bytes(damaged)[int(table[4, 0]) : int(table[4, 1])], 1, len(datas[4]))


def test_decode_many_without_the_one_call_api(logb_backend, monkeypatch):
    # python-zstandard's cffi backend has no multi_decompress_to_buffer: one call is refused (the caller
    # then checks frame by frame), a call per frame still works
    class PerFrameOnly:
        def __init__(self):
            self._d = zstandard.ZstdDecompressor()

        def decompress(self, *args, **kwargs):
            return self._d.decompress(*args, **kwargs)

    monkeypatch.setattr(codecs, "_zstd_decompressor", PerFrameOnly)
    datas = [b"ab" * 100, b"cd" * 300]
    buf, table = _packed([(zstandard.ZstdCompressor().compress(d), len(d)) for d in datas])
    assert codecs.zstd_decode_many(buf, table, one_call=True) is None
    assert codecs.zstd_decode_many(buf, table, one_call=False) == datas

"""CRC-32C (G1) against RFC 3720 B.4 and an independent crcmod oracle."""

import crcmod
import pytest

from logb.crc import crc32c, crc32c_pure

# Independent oracle: built from the polynomial, not from crcmod.predefined
# (which is what logb.crc uses).
oracle = crcmod.mkCrcFun(0x11EDC6F41, rev=True, initCrc=0, xorOut=0xFFFFFFFF)

IMPLS = [pytest.param(crc32c, id="crc32c"), pytest.param(crc32c_pure, id="crc32c_pure")]

# RFC 3720 Appendix B.4: the CRC bytes are listed as stored (little-endian).
ISCSI_READ_PDU = bytes([
    0x01, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
    0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
    0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
])

VECTORS = [
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (ISCSI_READ_PDU, 0xD9963A56),
    (b"123456789", 0xE3069283),
    (b"", 0x00000000),
]


@pytest.mark.parametrize("fn", IMPLS)
@pytest.mark.parametrize("data,expected", VECTORS, ids=[
    "zeros", "ones", "ascending", "descending", "iscsi-read", "check", "empty"])
def test_rfc3720_vectors(fn, data, expected):
    assert fn(data) == expected


@pytest.mark.parametrize("data,expected", VECTORS)
def test_oracle_agrees_with_rfc(data, expected):
    # The oracle itself must be right, or the sweep below proves nothing.
    assert oracle(data) == expected


def test_stored_little_endian_in_file_header():
    from logb.framing import encode_file_header

    head = encode_file_header()
    assert head[12:16] == oracle(head[:12]).to_bytes(4, "little")


def test_every_chunk_size_at_every_offset():
    import random

    rng = random.Random(0xC5C)
    buf = bytes(rng.randrange(256) for _ in range(64 + 16))
    for offset in range(16):
        for size in range(65):
            chunk = buf[offset : offset + size]
            want = oracle(chunk)
            assert crc32c(chunk) == want, (offset, size)
            assert crc32c_pure(chunk) == want, (offset, size)
            # memoryview slices (what the scanner passes) give the same answer
            mv = memoryview(buf)[offset : offset + size]
            assert crc32c(mv) == want
            assert crc32c_pure(mv) == want


@pytest.mark.parametrize("fn", IMPLS)
def test_incremental_equals_one_shot(fn):
    import random

    rng = random.Random(7)
    for _ in range(200):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
        cuts = sorted(rng.randrange(len(data) + 1) for _ in range(rng.randrange(0, 4)))
        crc, prev = 0, 0
        for cut in cuts + [len(data)]:
            crc = fn(data[prev:cut], crc)
            prev = cut
        assert crc == oracle(data) == fn(data)


def test_continuation_mixes_implementations():
    data = bytes(range(256)) * 3
    assert crc32c_pure(data[300:], crc32c(data[:300])) == oracle(data)
    assert crc32c(data[300:], crc32c_pure(data[:300])) == oracle(data)


def test_detects_single_bit_flips():
    data = bytearray(b"logb frame payload" * 4)
    base = crc32c(bytes(data))
    for i in range(len(data) * 8):
        data[i // 8] ^= 1 << (i % 8)
        assert crc32c(bytes(data)) != base
        data[i // 8] ^= 1 << (i % 8)

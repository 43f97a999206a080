"""tools/filter_proto.py, the raw-bus filter proposed in BENCHMARKS.md (formats): every
variant is undone exactly, on classic and FD records, for any number of records, ids that
repeat or not, and t wrapping past 2**32 within an id."""

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools"))
import filter_proto  # noqa: E402

pytestmark = pytest.mark.single_backend  # numpy only: no logb kernel in the loop


def _records(n, size, ids, rng):
    fixed = rng.integers(0, 256, (n, size), dtype=np.uint8)
    fixed[:, filter_proto.ID] = rng.choice(np.asarray(ids, "<u4"), n).view(np.uint8).reshape(-1, 4) if n else 0
    return fixed


@pytest.mark.parametrize("size", [18, 74])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 4096])
@pytest.mark.parametrize("variant", sorted(filter_proto.VARIANTS))
def test_decode_undoes_encode(size, n, variant):
    xor, dt, group, _transposed = filter_proto.VARIANTS[variant]
    rng = np.random.default_rng(n * size)
    for ids in ([0x123], [0x1, 0x7FF, 0x1FFFFFFF, 0x18FF0000], list(range(n or 1))):
        fixed = _records(n, size, ids, rng)
        enc = filter_proto.encode(fixed, xor, dt, group)
        assert enc.shape == fixed.shape
        assert np.array_equal(filter_proto.decode(enc, xor, dt, group), fixed)


def test_what_each_step_stores():
    """One id twice, then another: the second record of id 5 holds XOR and Δt against the first;
    grouped, id 5's records come first while the id column stays in arrival order."""
    fixed = np.zeros((3, 18), np.uint8)
    fixed[:, filter_proto.ID] = np.array([5, 9, 5], "<u4").view(np.uint8).reshape(-1, 4)
    fixed[:, filter_proto.T] = np.array([100, 150, 2**32 - 1], "<u4").view(np.uint8).reshape(-1, 4)
    fixed[:, 10] = [0xF0, 0x0F, 0xFF]
    enc = filter_proto.encode(fixed, xor=True, dt="id", group=True)
    t = enc[:, filter_proto.T].copy().view("<u4")[:, 0]
    assert t.tolist() == [100, (2**32 - 1 - 100), 150]
    assert enc[:, 10].tolist() == [0xF0, 0x0F, 0x0F]
    assert enc[:, filter_proto.ID].copy().view("<u4")[:, 0].tolist() == [5, 9, 5]

"""Prototype of a CAN raw-bus DATA filter (a proposal, not in SPEC.md nor in host/logb):
what the raw bus stream (SPEC §13.1) would take per frame if a filter ran before
transpose + zstd, measured on the DATA frames of real Logb files.

The filter works on a DATA frame's fixed region of N records of S bytes (18 for `raw`,
74 for `raw-fd`: t u32 at bytes 0..3, id u29 at 4..7, flags 8, dlc 9, data 10..S), alone
(every DATA frame still decodes on its own), in up to three steps:

- `xor`: flags, dlc and data of a record XORed with those of the previous record of the
  same id in the frame (the first of each id kept): a message's unchanged bytes become 0.
- `dt`: t replaced by its difference (mod 2**32) to the previous record's (`dt=all`) or to
  the previous record of the same id (`dt=id`: near the message's cycle time).
- `group`: every column but id permuted into stable id order (the records of one id
  together); the id column stays in arrival order, and is all a decoder needs to undo the
  permutation (a stable argsort of it).

Then the v0.1 transpose and zstd. `encode` and `decode` are exact inverses; `measure`
checks that on every frame it counts. Usage:

    python tools/filter_proto.py FILE.logb [...] [--level 3 ...]

bench_formats.py calls `file_sizes` for its tables (BENCHMARKS.md, formats).
"""

import argparse
import sys

import numpy as np

T, ID, FLAGS = slice(0, 4), slice(4, 8), 8  # byte columns of a raw bus record
VARIANTS = {  # name: (xor, dt, group, transposed)
    "none (v0.1)": (False, None, False, False),
    "transpose (v0.1)": (False, None, False, True),
    "dt=all": (False, "all", False, True),
    "xor + dt=id": (True, "id", False, True),
    "group": (False, None, True, True),
    "group + xor": (True, None, True, True),
    "group + dt=id": (False, "id", True, True),
    "group + xor + dt=id": (True, "id", True, True),
}
PROPOSED = "group + xor + dt=id"


def _chains(ids):
    """(order, start): the stable id order of the records, and whether each position of it
    starts its id's run (the first record of that id in the frame)."""
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    start = np.ones(len(s), bool)
    start[1:] = s[1:] != s[:-1]
    return order, start


def encode(fixed, xor=False, dt=None, group=False):
    """The filtered fixed region (N, S) uint8 → (N, S) uint8, before transpose."""
    out = fixed.copy()
    ids = fixed[:, ID].copy().view("<u4")[:, 0]
    t = fixed[:, T].copy().view("<u4")[:, 0]
    order, start = _chains(ids)
    prev = np.full(len(ids), -1)  # the previous record of the same id, in arrival order
    prev[order[~start]] = order[np.flatnonzero(~start) - 1]
    has = prev >= 0
    if xor:
        out[has, FLAGS:] ^= fixed[prev[has], FLAGS:]
    if dt == "all":
        d = t.copy()
        d[1:] = t[1:] - t[:-1]
        out[:, T] = d.view(np.uint8).reshape(-1, 4)
    elif dt == "id":
        d = t.copy()
        d[has] = t[has] - t[prev[has]]
        out[:, T] = d.view(np.uint8).reshape(-1, 4)
    if group:
        keep = out[:, ID].copy()
        out = out[order]
        out[:, ID] = keep
    return out


def decode(stored, xor=False, dt=None, group=False):
    """The inverse of `encode`."""
    ids = stored[:, ID].copy().view("<u4")[:, 0]
    order, start = _chains(ids)
    if group:
        out = np.empty_like(stored)
        out[order] = stored
        out[:, ID] = stored[:, ID]
    else:
        out = stored.copy()
    # in id order a chain is contiguous: undo both steps as segmented prefix sums
    run = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    if xor:
        s = out[order, FLAGS:]
        acc = np.bitwise_xor.accumulate(s, axis=0)
        before = np.zeros_like(s[:1]).repeat(len(first), 0)
        before[1:] = acc[first[1:] - 1]
        out[order, FLAGS:] = acc ^ before[run]
    if dt is not None:
        d = out[:, T].copy().view("<u4")[:, 0].astype(np.uint64)
        if dt == "all":
            t = np.cumsum(d) & 0xFFFFFFFF
        else:
            acc = np.cumsum(d[order])
            before = np.zeros(len(first), np.uint64)
            before[1:] = acc[first[1:] - 1]
            t = np.empty_like(d)
            t[order] = (acc - before[run]) & 0xFFFFFFFF
        out[:, T] = t.astype("<u4").view(np.uint8).reshape(-1, 4)
    return out


def raw_fixed_regions(path):
    """(file size, [(stored bytes of the frame, its fixed region (N, S))]) of every DATA
    frame of the raw bus streams of a Logb file."""
    import os

    import logb
    from logb import codecs
    from logb.can.formats import raw_bus_streams
    from logb.tables import Filter

    out = []
    with logb.LogbFile(str(path)) as f:
        for s in raw_bus_streams(f):
            for fl in s.frames:
                h = fl.header
                a, b = fl.stored_slice
                stored = bytes(f.buf[a:b])
                raw = codecs.decompress(stored, h.codec, h.raw_size)
                size = h.raw_size // h.record_count if h.record_count else 0
                if h.filter == Filter.transpose:
                    raw = codecs.untranspose(raw, h.record_count, size)
                out.append((len(stored), np.frombuffer(raw, np.uint8).reshape(h.record_count, size)))
    return os.path.getsize(path), out


def file_sizes(path, cases):
    """{(variant, codec, level): the file's size with its raw bus DATA frames re-encoded so}
    for each (variant name of VARIANTS, logb.tables.Codec, level or None for the writer's
    default) in `cases`, through logb.codecs.compress (what the writer calls); each
    encoding is decoded back and compared."""
    from logb import codecs

    total, frames = raw_fixed_regions(path)
    base = total - sum(n for n, _ in frames)
    sizes = {}
    for name, codec, level in cases:
        xor, dt, group, transposed = VARIANTS[name]
        stored = 0
        for _, fixed in frames:
            enc = encode(fixed, xor, dt, group)
            if not np.array_equal(decode(enc, xor, dt, group), fixed):
                raise AssertionError(f"{name}: decode(encode(x)) != x")
            stored += len(codecs.compress((np.ascontiguousarray(enc.T) if transposed else enc).tobytes(),
                                          codec, level))
        sizes[(name, codec, level)] = base + stored
    return sizes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--level", type=int, action="append", help="zstd level (repeatable; default 3)")
    args = ap.parse_args(argv)
    from logb.tables import Codec

    cases = [(name, Codec.zstd, level) for level in args.level or [3] for name in VARIANTS]
    for path in args.files:
        sizes = file_sizes(path, cases)
        ref = sizes[cases[1]]
        for (name, _codec, level), n in sizes.items():
            print(f"{path}\t{name}\tzstd {level}\t{n}\t{n / ref:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

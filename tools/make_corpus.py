#!/usr/bin/env python3
"""Write the Logb conformance corpus: corpus/<name>.logb, corpus/<name>.expect.json
and corpus/README.md.

Every fixture is assembled byte by byte with `struct` from the layouts in
docs/SPEC.md (through tests/handmade.py, which is independent of the logb
package), never through logb.Writer. Every expectation is written by hand
below from what SPEC.md says; the reader is never run here. Offsets in the
expected skipped ranges are taken from the bytes as they are assembled.

Usage: python tools/make_corpus.py [OUTDIR]      (default: corpus/)

Expectation file (one JSON object per fixture):
  rule, spec            what the fixture exercises, and the SPEC sections
  exit                  the documented exit status of `logb info` / `logb dump`
                        (README "Exit status": 0 intact, 1 damaged, truncated or
                        rejected records, 2 not Logb, 3 unsupported version)
  error                 for exit 2/3: the error class SPEC §11.1 names
  streams               {uuid-hex: {name, records, rejected}}: exactly the streams
  skipped               [[start, end, cause], ...] in file order
  truncated             bool
  sessions              number of writer sessions
  runs                  (optional) per session: [{run_id, index, params}]
  records               (optional) every record `logb dump --records --json` prints,
                        in file order
  axis_ulps             (optional) {uuid-hex: n}: axis values of that stream may
                        differ by n ulp (log axes, SPEC §5.2)
  rejections            (optional) {uuid-hex: [[offset, records], ...]}: exactly the
                        frames of that stream that were rejected, in file order
  index                 (optional) [[offset, valid], ...]: every INDEX frame, valid when
                        it was checked against the frames and agrees (so it is usable)
  attachments           (optional) [{name, media_type, raw_size, available}]: every
                        ATTACH, in file order; available: its data decodes
  reported              (optional) [offset, ...]: the report notes a condition at each
  dump                  (optional) false: too many records for the test to dump them
                        (it counts them with `logb info` only)
"""

import importlib.util
import json
import math
import pathlib
import struct
import sys
import zlib

import lz4.block
import zstandard

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("_handmade", ROOT / "tests" / "handmade.py")
hm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hm)

MAX_FIXTURE = 4096

# SPEC tables, by hand.
SYNC, SCHEMA, META, RUN, DATA, END, SIGN = 0x01, 0x10, 0x11, 0x13, 0x20, 0x40, 0x50
UINT, SINT, FLOAT, BOOL, BYTES, STRING, COMPLEX = range(7)
LITTLE, BIG = 0, 1
TIME, FREQUENCY, ANGLE, DISTANCE, INDEX, OTHER = range(6)
IMPLICIT, EXPLICIT, IMPLICIT_LOG = range(3)
C_NONE, C_ZSTD, C_LZ4, C_DEFLATE = range(4)
F_NONE, F_TRANSPOSE = 0, 1
VARIABLE = 1

UNDATED = {"ns": None, "basis": "undated", "uncertainty_ns": None, "extrapolated": False}


def U(n):
    """A recognisable 16-byte stream uuid."""
    return bytes([n]) * 16


def unix(ns):
    return {"ns": ns, "basis": "unix", "uncertainty_ns": None, "extrapolated": False}


def anchored(ns, unc, extrapolated):
    return {"ns": ns, "basis": "anchored", "uncertainty_ns": unc, "extrapolated": extrapolated}


# ---------------------------------------------------------------- conversions (SPEC §7.2)

IDENT = b"\x00"


def linear(a, b):
    return b"\x01" + struct.pack("<dd", a, b)


def rational(*p):
    return b"\x02" + struct.pack("<6d", *p)


def table(pairs, ctype=3):
    return bytes([ctype]) + struct.pack("<I", len(pairs)) + b"".join(struct.pack("<dd", k, v) for k, v in pairs)


def table_interp(pairs):
    return table(pairs, 4)


def value_to_text(pairs, default):
    return (b"\x05" + struct.pack("<I", len(pairs))
            + b"".join(struct.pack("<d", k) + hm.s(t) for k, t in pairs) + hm.s(default))


def range_to_text(triples, default):
    return (b"\x06" + struct.pack("<I", len(triples))
            + b"".join(struct.pack("<dd", lo, hi) + hm.s(t) for lo, hi, t in triples) + hm.s(default))


# ---------------------------------------------------------------- frames not in handmade.py

def schema_frame(sid, *args, **kwargs):
    return hm.frame(SCHEMA, hm.schema(*args, **kwargs), sid=sid)


def run_frame(run_id, index, params):
    return hm.frame(RUN, struct.pack("<III", run_id, index, len(params))
                    + b"".join(hm.s(k) + hm.s(v) for k, v in params))


def sb(raw):
    """A SPEC `string` from raw bytes (which need not be UTF-8)."""
    return struct.pack("<I", len(raw)) + raw


def meta_payload(pairs):
    return struct.pack("<I", len(pairs)) + b"".join(hm.s(k) + hm.s(v) for k, v in pairs)


def data_f64(sid, records, count, base, **kw):
    return hm.data(sid, records, count, base_f64=base, **kw)


def transpose(fixed, n, size):
    """SPEC §8.2: stored byte j*N + i is byte j of record i."""
    return bytes(fixed[i * size + j] for j in range(size) for i in range(n))


def zstd(data):
    return zstandard.ZstdCompressor(level=3).compress(data)


def lz4_block(data):
    return lz4.block.compress(data, store_size=False)


def raw_deflate(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


class Build:
    """Bytes being assembled, with the offset of every part."""

    def __init__(self, *parts):
        self.buf = bytearray()
        for p in parts:
            self.put(p)

    def put(self, part):
        off = len(self.buf)
        self.buf += part
        return off

    def __len__(self):
        return len(self.buf)


def rec(uuid, name, axis, raw, phys=None, wall=None, run_id=0):
    """One expected `logb dump --records --json` line (SPEC §10.8 values)."""
    return {"stream": uuid.hex(), "name": name, "run_id": run_id, "axis": axis,
            "raw": raw, "phys": dict(raw) if phys is None else phys, "wall": wall}


def streams(*entries):
    return {u.hex(): {"name": name, "records": n, "rejected": r} for u, name, n, r in entries}


FIXTURES = []


def fixture(rule, spec):
    def deco(fn):
        FIXTURES.append((fn.__name__, rule, spec, fn))
        return fn
    return deco


def u8_stream(uuid, name, sid=1, step=1, exp=-3):
    """A time stream (implicit, 10^exp s ticks) of one uint8 field `v`."""
    return schema_frame(sid, uuid, name, 8, [hm.field("v", 0, 8, UINT)], kind=TIME, mode=IMPLICIT,
                        exp=exp, step=step)


def u8_records(uuid, name, values, base=0, step=1, wall=UNDATED, run_id=0):
    return [rec(uuid, name, base + i * step, {"v": v}, wall=wall, run_id=run_id) for i, v in enumerate(values)]


# ================================================================ valid files

@fixture("minimal valid file: header, SYNC, SCHEMA, DATA; no META, so the session is undated",
         "§2.1, §3.1, §4.4, §5.2, §5.4, §6.1, §8.1")
def minimal():
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, U(1), "minimal", 8, [hm.field("v", 0, 8, UINT)], kind=TIME, mode=IMPLICIT,
                       exp=-3, step=10))
    b.put(hm.data(1, bytes([7, 200]), 2, base=1000))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None,
        "streams": streams((U(1), "minimal", 2, 0)),
        "records": [rec(U(1), "minimal", 1000, {"v": 7}, wall=UNDATED),
                    rec(U(1), "minimal", 1010, {"v": 200}, wall=UNDATED)],
    }


@fixture("header-only file is a valid empty file", "§2.4 step 4, §3.1")
def header_only():
    return hm.header(), {"exit": 0, "truncated": False, "sessions": 0, "skipped": [], "streams": {},
                         "records": []}


@fixture("every data type with identity conversions: uint64, sint, 5-bit sint, bool, float16/32/64, "
         "big-endian float32, complex64/128, fixed bytes, fixed string (trailing NULs kept), "
         "variable bytes and string (empty value, non-ASCII text)", "§6.3, §6.4, §7.3, §10.8")
def all_types():
    u = U(2)
    fields = [
        hm.field("u64", 0, 64, UINT),
        hm.field("s16", 64, 16, SINT),
        hm.field("s5", 80, 5, SINT),
        hm.field("flag", 85, 1, BOOL),
        hm.field("h", 88, 16, FLOAT),
        hm.field("f32", 104, 32, FLOAT),
        hm.field("f64", 136, 64, FLOAT),
        hm.field("z64", 200, 64, COMPLEX),
        hm.field("z128", 264, 128, COMPLEX),
        hm.field("fb", 392, 24, BYTES),
        hm.field("fs", 416, 32, STRING),
        hm.field("f32be", 448, 32, FLOAT, order=BIG),
        hm.field("vb", 0, 0, BYTES, flags=VARIABLE),
        hm.field("vs", 0, 0, STRING, flags=VARIABLE),
    ]

    def fixed(u64, s16, s5, flag, h, f32, f64, z64, z128, fb, fs, f32be):
        r = bytearray(60)
        struct.pack_into("<Q", r, 0, u64)
        struct.pack_into("<h", r, 8, s16)
        r[10] = (s5 & 0x1F) | (flag << 5)  # bits 80..84 and bit 85 (LSB numbering)
        struct.pack_into("<e", r, 11, h)
        struct.pack_into("<f", r, 13, f32)
        struct.pack_into("<d", r, 17, f64)
        struct.pack_into("<ff", r, 25, *z64)
        struct.pack_into("<dd", r, 33, *z128)
        r[49:52] = fb
        r[52:56] = fs
        struct.pack_into(">f", r, 56, f32be)
        return bytes(r)

    r0 = fixed(2**64 - 1, -12345, -3, 1, 1.5, -0.25, 3.141592653589793, (2.0, -3.0), (0.5, 1e100),
               b"\xab\xcd\xef", b"hi\x00\x00", 1.25)
    r1 = fixed(0, 32767, 15, 0, -2.0, 100.0, 1e-300, (0.0, 1.0), (-1.5, 2.0),
               b"\x00\x01\x02", "éa".encode() + b"\x00", -0.5)
    tails = (struct.pack("<I", 2) + b"\x00\xff" + struct.pack("<I", 5) + b"hello"
             + struct.pack("<I", 0) + struct.pack("<I", 2) + "Ω".encode())
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, u, "all_types", 480, fields, kind=INDEX, mode=IMPLICIT, exp=0, unit="",
                       step=1.0, scale=0.0))
    b.put(data_f64(1, r0 + r1 + tails, 2, 0.0))
    raw0 = {"u64": 18446744073709551615, "s16": -12345, "s5": -3, "flag": True, "h": 1.5, "f32": -0.25,
            "f64": 3.141592653589793, "z64": [2.0, -3.0], "z128": [0.5, 1e100], "fb": "abcdef",
            "fs": "hi\u0000\u0000", "f32be": 1.25, "vb": "00ff", "vs": "hello"}
    raw1 = {"u64": 0, "s16": 32767, "s5": 15, "flag": False, "h": -2.0, "f32": 100.0, "f64": 1e-300,
            "z64": [0.0, 1.0], "z128": [-1.5, 2.0], "fb": "000102", "fs": "éa\u0000", "f32be": -0.5,
            "vb": "", "vs": "Ω"}
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "all_types", 2, 0)),
        "records": [rec(u, "all_types", 0.0, raw0), rec(u, "all_types", 1.0, raw1)],
    }


# The normative conformance vectors of SPEC §6.2, copied from its table:
# (record bytes, byte_order, bit_offset, bit_width, raw, as sint or None)
VECTORS = [
    ("12 34", LITTLE, 0, 16, 0x3412, None),
    ("12 34", BIG, 0, 16, 0x1234, None),
    ("12 34", LITTLE, 4, 12, 0x341, None),
    ("12 34", BIG, 3, 12, 0x91A, None),
    ("00 20", LITTLE, 13, 1, 0x1, None),
    ("00 20", BIG, 10, 1, 0x1, None),
    ("78 56 34 12", LITTLE, 0, 32, 0x12345678, None),
    ("12 34 56 78", BIG, 0, 32, 0x12345678, None),
    ("FF 0F", LITTLE, 0, 12, 0xFFF, -1),
    ("FF F0", BIG, 0, 12, 0xFFF, -1),
    ("A5", LITTLE, 1, 6, 0x12, None),
    ("A5", BIG, 1, 6, 0x12, None),
    ("00 12 34", BIG, 11, 12, 0x91A, None),
    ("07 F0", BIG, 5, 8, 0xFE, -2),
    ("00 34 12", LITTLE, 12, 8, 0x23, None),
]


@fixture("the 15 bit-numbering conformance vectors (incl. G16's big-endian unaligned signed field) "
         "laid side by side in one record, each field shifted by its vector's byte position",
         "§6.2 conformance vectors, §6.3")
def bit_vectors():
    u = U(3)
    record, fields, raw = b"", [], {}
    for i, (hexbytes, order, off, width, value, signed) in enumerate(VECTORS, 1):
        base = 8 * len(record)
        record += bytes.fromhex(hexbytes)
        fields.append(hm.field(f"v{i:02d}", base + off, width, UINT, order=order))
        raw[f"v{i:02d}"] = value
        if signed is not None:
            fields.append(hm.field(f"v{i:02d}s", base + off, width, SINT, order=order))
            raw[f"v{i:02d}s"] = signed
    assert len(record) == 34
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, u, "vectors", 8 * len(record), fields, kind=OTHER, mode=IMPLICIT, exp=0, unit="",
                       step=1.0, scale=0.0))
    b.put(data_f64(1, record, 1, 0.0))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "vectors", 1, 0)),
        "records": [rec(u, "vectors", 0.0, raw)],
    }


@fixture("all 7 conversions: identity, linear, rational (incl. zero denominator -> inf), table "
         "(first duplicate key wins, miss -> null), table_interp (clamp below/above, interpolate), "
         "value_to_text and range_to_text (first match wins, default); bool enters as 0/1; "
         "uint64 above 2^53 rounds to nearest double; complex linear is component-wise",
         "§7.1, §7.2, §7.3")
def conversions():
    u = U(4)
    fields = [
        hm.field("ident", 0, 8, UINT),
        hm.field("lin", 8, 8, UINT, conv=linear(-40.0, 0.5)),
        hm.field("rat", 16, 8, UINT, conv=rational(1.0, 0.0, 1.0, 0.0, 0.0, 2.0)),
        hm.field("ratz", 24, 8, UINT, conv=rational(0.0, 1.0, 0.0, 0.0, 1.0, -2.0)),
        hm.field("tab", 32, 8, UINT, conv=table([(1.0, 10.0), (1.0, 99.0), (2.0, 20.0)])),
        hm.field("interp", 40, 8, UINT, conv=table_interp([(2.0, 1.0), (6.0, 3.0), (10.0, 11.0)])),
        hm.field("v2t", 48, 8, UINT, conv=value_to_text([(1.0, "one"), (2.0, "two"), (1.0, "uno")], "other")),
        hm.field("r2t", 56, 8, UINT, conv=range_to_text([(0.0, 9.0, "low"), (5.0, 20.0, "mid"),
                                                          (21.0, 10.0, "never")], "high")),
        hm.field("flag", 64, 1, BOOL, conv=linear(0.0, 2.0)),
        hm.field("s", 72, 8, SINT, conv=linear(0.0, 1.0)),
        hm.field("big", 80, 64, UINT, conv=linear(0.0, 1.0)),
        hm.field("zc", 144, 128, COMPLEX, conv=linear(1.0, 2.0)),
    ]

    def record(ident, lin, rat, ratz, tab, interp, v2t, r2t, flag, s, big, zc):
        return (bytes([ident, lin, rat, ratz, tab, interp, v2t, r2t, flag]) + struct.pack("<b", s)
                + struct.pack("<Q", big) + struct.pack("<dd", *zc))

    recs = (record(5, 10, 3, 2, 1, 0, 1, 7, 1, -1, 2**53 + 1, (1.5, -2.0))
            + record(6, 255, 0, 4, 3, 4, 2, 15, 0, 127, 2**64 - 1, (0.0, 0.0))
            + record(7, 0, 1, 0, 2, 12, 7, 30, 1, -128, 0, (-1.0, 0.25)))
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, u, "conv", 272, fields, kind=INDEX, mode=IMPLICIT, exp=0, unit="", step=1.0,
                       scale=0.0))
    b.put(data_f64(1, recs, 3, 0.0))
    inf = float("inf")
    raws = [
        {"ident": 5, "lin": 10, "rat": 3, "ratz": 2, "tab": 1, "interp": 0, "v2t": 1, "r2t": 7, "flag": True,
         "s": -1, "big": 9007199254740993, "zc": [1.5, -2.0]},
        {"ident": 6, "lin": 255, "rat": 0, "ratz": 4, "tab": 3, "interp": 4, "v2t": 2, "r2t": 15,
         "flag": False, "s": 127, "big": 18446744073709551615, "zc": [0.0, 0.0]},
        {"ident": 7, "lin": 0, "rat": 1, "ratz": 0, "tab": 2, "interp": 12, "v2t": 7, "r2t": 30, "flag": True,
         "s": -128, "big": 0, "zc": [-1.0, 0.25]},
    ]
    phys = [
        # lin: -40 + 0.5*x; rat: (x*x + 1) / 2; ratz: x / (x - 2), 2/0 = +inf
        {"ident": 5, "lin": -35.0, "rat": 5.0, "ratz": inf, "tab": 10.0, "interp": 1.0, "v2t": "one",
         "r2t": "low", "flag": 2.0, "s": -1.0, "big": 9007199254740992.0, "zc": [4.0, -3.0]},
        # tab: 3 has no entry -> null; interp: 1 + ((4-2)*(3-1))/(6-2) = 2; r2t: 15 only in [5, 20]
        {"ident": 6, "lin": 87.5, "rat": 0.5, "ratz": 2.0, "tab": None, "interp": 2.0, "v2t": "two",
         "r2t": "mid", "flag": 0.0, "s": 127.0, "big": 18446744073709551616.0, "zc": [1.0, 1.0]},
        # interp: 12 above the last key -> clamped 11; v2t: default; r2t: default ([21, 10] never matches)
        {"ident": 7, "lin": -40.0, "rat": 1.0, "ratz": -0.0, "tab": 20.0, "interp": 11.0, "v2t": "other",
         "r2t": "high", "flag": 2.0, "s": -128.0, "big": 0.0, "zc": [-1.0, 1.5]},
    ]
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "conv", 3, 0)),
        "records": [rec(u, "conv", float(i), raws[i], phys[i]) for i in range(3)],
    }


@fixture("table_interp arithmetic is evaluated as written: v_j + ((x - k_j) * (v_j+1 - v_j)) / (k_j+1 - k_j) "
         "(not slope-first), so 5 between keys 0 and 7 gives 5/7 exactly rounded", "§7.3")
def conv_interp_rounding():
    u = U(5)
    fields = [hm.field("x", 0, 8, UINT, conv=table_interp([(0.0, 0.0), (7.0, 1.0)]))]
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, u, "interp", 8, fields, kind=INDEX, mode=IMPLICIT, exp=0, unit="", step=1.0,
                       scale=0.0))
    b.put(data_f64(1, bytes([5, 1, 3]), 3, 0.0))
    # 0.0 + ((x - 0.0) * (1.0 - 0.0)) / (7.0 - 0.0)
    expected = [(5, 5.0 / 7.0), (1, 1.0 / 7.0), (3, 3.0 / 7.0)]
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "interp", 3, 0)),
        "records": [rec(u, "interp", float(i), {"x": x}, {"x": p}) for i, (x, p) in enumerate(expected)],
    }


@fixture("non-time axes: implicit f64 (base + (i*step)), explicit from a sint16 field and from a float32 "
         "field (base + x*scale), implicit_log (base * pow(ratio, i), 1 ulp allowed); wall is null",
         "§5.1, §5.2, §10.8")
def axes():
    ua, ub, uc, ud = U(0x31), U(0x32), U(0x33), U(0x34)
    ratio = 10.0 ** 0.25
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, ua, "sweep", 8, [hm.field("g", 0, 8, UINT)], kind=FREQUENCY, mode=IMPLICIT, exp=0,
                       unit="Hz", step=0.1, scale=0.0))
    b.put(schema_frame(2, ub, "crank", 24, [hm.field("pos", 0, 16, SINT), hm.field("p", 16, 8, UINT)],
                       kind=ANGLE, mode=EXPLICIT, exp=0, unit="deg", step=0.0, scale=0.5, axis_field=0))
    b.put(schema_frame(3, uc, "ac", 8, [hm.field("m", 0, 8, UINT)], kind=FREQUENCY, mode=IMPLICIT_LOG, exp=0,
                       unit="Hz", step=ratio, scale=0.0))
    b.put(schema_frame(4, ud, "odo", 32, [hm.field("d", 0, 32, FLOAT)], kind=DISTANCE, mode=EXPLICIT, exp=0,
                       unit="m", step=0.0, scale=2.0, axis_field=0))
    b.put(data_f64(1, bytes([1, 2, 3, 4]), 4, 100.0))
    b.put(data_f64(2, struct.pack("<hB", -4, 1) + struct.pack("<hB", 0, 2) + struct.pack("<hB", 7, 3), 3, 10.0))
    b.put(data_f64(3, bytes(range(9)), 9, 1.0))
    b.put(data_f64(4, struct.pack("<ff", 0.25, 1.5), 2, -1.0))
    records = [rec(ua, "sweep", 100.0 + (i * 0.1), {"g": g}) for i, g in enumerate([1, 2, 3, 4])]
    records += [rec(ub, "crank", 10.0 + (x * 0.5), {"pos": x, "p": p}) for x, p in [(-4, 1), (0, 2), (7, 3)]]
    records += [rec(uc, "ac", 1.0 * math.pow(ratio, i), {"m": i}) for i in range(9)]
    records += [rec(ud, "odo", -1.0 + (d * 2.0), {"d": d}) for d in (0.25, 1.5)]
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((ua, "sweep", 4, 0), (ub, "crank", 3, 0), (uc, "ac", 9, 0), (ud, "odo", 2, 0)),
        "records": records, "axis_ulps": {uc.hex(): 1},
    }


W = 1_700_000_000_000_000_000


@fixture("monotonic time base, axis_exp -12 (ps ticks), two anchors (the second written after the DATA): "
         "ticks->ns round half even, interpolation with exact rounding, extrapolation on both sides, "
         "uncertainty per result", "§5.3, §5.4, §5.5, §5.6")
def time_anchors():
    u = U(6)
    b = Build(hm.header(), hm.sync(0, wall=123))
    b.put(hm.meta([("logb.time_base", "monotonic"), ("logb.session", "a1" * 16)]))
    b.put(schema_frame(1, u, "ps", 8, [hm.field("v", 0, 8, UINT)], kind=TIME, mode=IMPLICIT, exp=-12, step=500))
    b.put(hm.meta([("logb.anchor.axis_ns", "0"), ("logb.anchor.wall_ns", str(W)),
                   ("logb.anchor.source", "gps"), ("logb.anchor.uncertainty_ns", "5")]))
    b.put(hm.data(1, bytes(range(14)), 14, base=-1500))
    b.put(hm.meta([("logb.anchor.axis_ns", "4"), ("logb.anchor.wall_ns", str(W + 10)),
                   ("logb.anchor.source", "gps"), ("logb.anchor.uncertainty_ns", "7")]))
    # ticks = -1500 + 500 i; a = round_half_even(ticks / 1000):
    #   -1500 -> -2 (tie, even), -1000 -> -1, -500 -> 0 (tie), 0, 500 -> 0 (tie), 1000 -> 1, 1500 -> 2 (tie),
    #   2000 -> 2, 2500 -> 2 (tie), 3000 -> 3, 3500 -> 4 (tie), 4000 -> 4, 4500 -> 4 (tie), 5000 -> 5
    # anchors (0, W, ±5) and (4, W+10, ±7): wall = W + round_half_even(a * 10 / 4)
    walls = {
        -2: anchored(W - 5, 7, True),     # -20/4 = -5, extrapolated with the first pair
        -1: anchored(W - 2, 7, True),     # -10/4 = -2.5 -> -2 (even)
        0: anchored(W, 5, False),         # exactly on the first anchor: its own uncertainty
        1: anchored(W + 2, 7, False),     # 10/4 = 2.5 -> 2
        2: anchored(W + 5, 7, False),
        3: anchored(W + 8, 7, False),     # 30/4 = 7.5 -> 8
        4: anchored(W + 10, 7, False),    # on the second anchor
        5: anchored(W + 12, 7, True),     # 50/4 = 12.5 -> 12, extrapolated with the last pair
    }
    a_of = [-2, -1, 0, 0, 0, 1, 2, 2, 2, 3, 4, 4, 4, 5]
    records = [rec(u, "ps", -1500 + 500 * i, {"v": i}, wall=walls[a_of[i]]) for i in range(14)]
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "ps", 14, 0)), "records": records,
    }


@fixture("unix time base: wall = ticks * 10^(axis_exp+9) exactly; explicit axis from a u32 field; a u64 "
         "axis field >= 2^63 is used unsigned (base -2^63); a wall time outside i64 is null/undated; a "
         "later segment declaring another time base does not change the session's", "§5.2, §5.4, §5.6")
def time_unix():
    u1, u2 = U(0x41), U(0x42)
    base = 1_700_000_000_000_000  # µs
    b = Build(hm.header(), hm.sync(0))
    b.put(hm.meta([("logb.time_base", "unix"), ("logb.session", "b2" * 16)]))
    b.put(schema_frame(1, u1, "can", 48, [hm.field("t", 0, 32, UINT), hm.field("id", 32, 16, UINT)],
                       kind=TIME, mode=EXPLICIT, exp=-6, step=0, scale=1, axis_field=0))
    b.put(schema_frame(2, u2, "edge", 64, [hm.field("t", 0, 64, UINT)], kind=TIME, mode=EXPLICIT, exp=-6,
                       step=0, scale=1, axis_field=0))
    b.put(hm.data(1, struct.pack("<IH", 0, 0x100) + struct.pack("<IH", 1, 0x200) + struct.pack("<IH", 250, 0x7FF),
                  3, base=base))
    b.put(hm.data(2, struct.pack("<QQ", 2**63 + 5, 2**64 - 1), 2, base=-2**63))
    records = [rec(u1, "can", base + t, {"t": t, "id": i}, wall=unix((base + t) * 1000))
               for t, i in [(0, 0x100), (1, 0x200), (250, 0x7FF)]]
    records += [rec(u2, "edge", 5, {"t": 2**63 + 5}, wall=unix(5000)),
                # (2^63 - 1) µs = (2^63 - 1) * 1000 ns does not fit i64
                rec(u2, "edge", 2**63 - 1, {"t": 2**64 - 1}, wall=UNDATED)]
    # a later segment of the same session declares another time base: the first stands
    b.put(hm.sync(1))
    b.put(hm.meta([("logb.time_base", "relative"), ("logb.session", "b2" * 16)]))
    b.put(schema_frame(1, u1, "can", 48, [hm.field("t", 0, 32, UINT), hm.field("id", 32, 16, UINT)],
                       kind=TIME, mode=EXPLICIT, exp=-6, step=0, scale=1, axis_field=0))
    b.put(hm.data(1, struct.pack("<IH", 7, 0x123), 1, base=base))
    records.append(rec(u1, "can", base + 7, {"t": 7, "id": 0x123}, wall=unix((base + 7) * 1000)))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u1, "can", 4, 0), (u2, "edge", 2, 0)), "records": records,
    }


@fixture("relative time base: never dated, even with an anchor in the session", "§5.4, §5.6")
def time_relative():
    u = U(7)
    b = Build(hm.header(), hm.sync(0))
    b.put(hm.meta([("logb.time_base", "relative"), ("logb.session", "c3" * 16)]))
    b.put(hm.meta([("logb.anchor.axis_ns", "0"), ("logb.anchor.wall_ns", str(W))]))
    b.put(u8_stream(u, "sim", step=1000, exp=-9))
    b.put(hm.data(1, bytes([1, 2, 3]), 3, base=0))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "sim", 3, 0)),
        "records": u8_records(u, "sim", [1, 2, 3], step=1000),
    }


@fixture("loss counters: a stream META with logb.lost.controller, .buffer and .invalid (frames no record "
         "could hold as given) is valid; the records around it are read as they are", "§4.5, §13.1")
def loss_counters():
    b = Build(hm.header(), hm.sync(0), u8_stream(U(0x1D), "counted", step=10))
    b.put(hm.data(1, bytes([1, 2]), 2, base=0))
    b.put(hm.meta([("logb.lost.controller", "3"), ("logb.lost.buffer", "0"), ("logb.lost.invalid", "7")], sid=1))
    b.put(hm.data(1, bytes([3]), 1, base=20))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None,
        "streams": streams((U(0x1D), "counted", 3, 0)),
        "records": u8_records(U(0x1D), "counted", [1, 2, 3], step=10),
    }


@fixture("loss counters restated inside a segment: the writer states a stream's counters again after "
         "the first frame it seals once a count changed; the last value in the session (40) is its total, "
         "whether or not the file reaches close", "§4.5")
def loss_counters_restated():
    b = Build(hm.header(), hm.sync(0), u8_stream(U(0x1E), "overrun", step=10))
    b.put(hm.meta([("logb.lost.controller", "0"), ("logb.lost.buffer", "0")], sid=1))
    b.put(hm.data(1, bytes([1, 2]), 2, base=0))
    b.put(hm.meta([("logb.lost.controller", "3"), ("logb.lost.buffer", "0")], sid=1))
    b.put(hm.data(1, bytes([3]), 1, base=20))
    b.put(hm.meta([("logb.lost.controller", "40"), ("logb.lost.buffer", "2")], sid=1))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None,
        "streams": streams((U(0x1E), "overrun", 3, 0)),
        "records": u8_records(U(0x1E), "overrun", [1, 2, 3], step=10),
        "lost": {U(0x1E).hex(): {"buffer": 2, "controller": 40}},
    }


def _sink_segments(first, second):
    """Two segments of one session, each restating the session and logb.lost.sink (`first`, then
    `second`): what the device writer writes when a write between its frames failed."""
    u = U(0x5C)
    b = Build(hm.header(), hm.sync(0), u8_stream(u, "sunk", step=10))
    b.put(hm.meta([("logb.session", "5c" * 16), ("logb.lost.sink", first)]))
    b.put(hm.data(1, bytes([1, 2]), 2, base=0))
    b.put(hm.sync(1) + u8_stream(u, "sunk", step=10))
    b.put(hm.meta([("logb.session", "5c" * 16), ("logb.lost.sink", second)]))
    b.put(hm.data(1, bytes([5]), 1, base=40))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None,
        "streams": streams((u, "sunk", 3, 0)),
        "records": u8_records(u, "sunk", [1, 2], step=10) + u8_records(u, "sunk", [5], base=40),
    }


@fixture("sink losses: a file-scope logb.lost.sink of 120 in the second segment (bytes its writer could "
         "not write, the frames between records 2 and 5): the file is intact, the session states 120 lost "
         "bytes, verify exits 4", "§4.5")
def sink_loss_counted():
    data, expect = _sink_segments("0", "120")
    return data, {**expect, "lost_sink": [120], "verify": 4}


@fixture("sink losses: logb.lost.sink restated as 0 in every segment: nothing lost, verify exits 0", "§4.5")
def sink_loss_zero():
    data, expect = _sink_segments("0", "0")
    return data, {**expect, "lost_sink": [0], "verify": 0}


@fixture("sink losses: a logb.lost.sink that is no decimal count states a loss of unknown size (-1 in "
         "info --json): verify exits 4", "§4.5")
def sink_loss_unreadable():
    data, expect = _sink_segments("0", "12 bytes")
    return data, {**expect, "lost_sink": [-1], "verify": 4}


@fixture("runs: RUN frames declare run 1 and 2; DATA frames carry run_id; each run's axis restarts",
         "§6.5, §8.1")
def runs():
    u = U(8)
    b = Build(hm.header(), hm.sync(0))
    b.put(hm.meta([("logb.time_base", "relative")]))
    b.put(run_frame(1, 0, [("R1", "1.0e3")]))
    b.put(run_frame(2, 1, [("R1", "2.2e3"), ("corner", "ss")]))
    b.put(schema_frame(1, u, "vout", 16, [hm.field("v", 0, 16, SINT, unit="mV")], kind=TIME, mode=IMPLICIT,
                       exp=-9, step=100))
    b.put(hm.data(1, struct.pack("<3h", 10, -20, 30), 3, base=0, run_id=1))
    b.put(hm.data(1, struct.pack("<2h", 400, -500), 2, base=0, run_id=2))
    records = [rec(u, "vout", 100 * i, {"v": v}, wall=UNDATED, run_id=1) for i, v in enumerate([10, -20, 30])]
    records += [rec(u, "vout", 100 * i, {"v": v}, wall=UNDATED, run_id=2) for i, v in enumerate([400, -500])]
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "vout", 5, 0)),
        "runs": [[{"run_id": 1, "index": 0, "params": {"R1": "1.0e3"}},
                  {"run_id": 2, "index": 1, "params": {"R1": "2.2e3", "corner": "ss"}}]],
        "records": records,
    }


def _concat_part(header, session, parts):
    b = Build()
    if header:
        b.put(hm.header())
    sync_at = b.put(hm.sync(0))
    b.put(hm.meta([("logb.time_base", "relative"), ("logb.session", session)]))
    for p in parts:
        b.put(p)
    b.put(hm.end(0, len(b) - sync_at))
    return bytes(b.buf)


@fixture("concatenation (second part appended without its header): END mid-file does not stop the read, "
         "two sessions, stream_id 1 reused for a different uuid, same uuid on another stream_id merges",
         "§3.3, §3.4, §6.6, §6.8")
def concat_sessions():
    u1, u2 = U(0x51), U(0x52)
    temp = hm.schema(u1, "temp", 8, [hm.field("v", 0, 8, UINT)], kind=TIME, mode=IMPLICIT, exp=-3, step=1)
    other = hm.schema(u2, "other", 8, [hm.field("v", 0, 8, UINT)], kind=TIME, mode=IMPLICIT, exp=-3, step=1)
    a = _concat_part(True, "aa" * 16, [hm.frame(SCHEMA, temp, sid=1), hm.data(1, bytes([1, 2]), 2, base=0)])
    b = _concat_part(False, "bb" * 16, [hm.frame(SCHEMA, other, sid=1), hm.frame(SCHEMA, temp, sid=2),
                                         hm.data(1, bytes([9]), 1, base=50),
                                         hm.data(2, bytes([3, 4, 5]), 3, base=100)])
    records = (u8_records(u1, "temp", [1, 2]) + u8_records(u2, "other", [9], base=50)
               + u8_records(u1, "temp", [3, 4, 5], base=100))
    return a + b, {
        "exit": 0, "truncated": False, "sessions": 2, "skipped": [],
        "streams": streams((u1, "temp", 5, 0), (u2, "other", 1, 0)), "records": records,
    }


@fixture("frames that need a segment before the first SYNC are ignored (outside segment), not counted",
         "§3.2")
def outside_segment():
    u = U(9)
    b = Build(hm.header())
    b.put(u8_stream(u, "early"))
    b.put(hm.data(1, bytes([1, 2]), 2))
    b.put(hm.sync(0))
    b.put(u8_stream(u, "early"))
    b.put(hm.data(1, bytes([3]), 1))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "early", 1, 0)), "records": u8_records(u, "early", [3]),
    }


@fixture("unknown frame type 0x7E (also before the first SYNC) and SIGN 0x50 are skipped by length; "
         "the file is otherwise clean", "§4.2, §10.7")
def unknown_frames():
    u = U(10)
    b = Build(hm.header(), hm.frame(0x7E, b"future frame"), hm.sync(0))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([1, 2]), 2, base=0))
    b.put(hm.frame(0x7E, b"\x00" * 5))
    b.put(hm.frame(SIGN, bytes(range(32))))
    b.put(hm.data(1, bytes([3]), 1, base=2))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 3, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [3], base=2),
    }


@fixture("zstd (+transpose), lz4 block, raw deflate (+transpose) and none (+transpose) DATA frames; a "
         "variable-length tail after a transposed fixed region (zstd)", "§6.4, §8.2, §8.3")
def codecs():
    u1, u2 = U(0x61), U(0x62)
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, u1, "pair", 24, [hm.field("a", 0, 16, UINT), hm.field("b", 16, 8, UINT)],
                       kind=TIME, mode=IMPLICIT, exp=-3, step=1))
    b.put(schema_frame(2, u2, "msg", 16, [hm.field("n", 0, 16, UINT), hm.field("text", 0, 0, STRING, flags=VARIABLE)],
                       kind=TIME, mode=IMPLICIT, exp=-3, step=1))
    records = []
    plan = [(C_ZSTD, F_TRANSPOSE), (C_LZ4, F_NONE), (C_DEFLATE, F_TRANSPOSE), (C_NONE, F_TRANSPOSE)]
    for k, (codec, filt) in enumerate(plan):
        vals = [(1000 * (k + 1) + i, 16 * k + i) for i in range(4)]
        fixed = b"".join(struct.pack("<HB", a, bb) for a, bb in vals)
        stored = transpose(fixed, 4, 3) if filt == F_TRANSPOSE else fixed
        stored = {C_ZSTD: zstd, C_LZ4: lz4_block, C_DEFLATE: raw_deflate, C_NONE: bytes}[codec](stored)
        b.put(hm.data(1, stored, 4, base=4 * k, codec=codec, filt=filt, raw_size=12))
        records += [rec(u1, "pair", 4 * k + i, {"a": a, "b": bb}, wall=UNDATED) for i, (a, bb) in enumerate(vals)]
    ns, texts = [0x0102, 0x0304, 0x0506], ["a", "", "ccc"]
    fixed = b"".join(struct.pack("<H", n) for n in ns)
    tail = b"".join(struct.pack("<I", len(t)) + t.encode() for t in texts)
    region = transpose(fixed, 3, 2) + tail
    b.put(hm.data(2, zstd(region), 3, base=0, codec=C_ZSTD, filt=F_TRANSPOSE, raw_size=len(region)))
    records += [rec(u2, "msg", i, {"n": n, "text": t}, wall=UNDATED) for i, (n, t) in enumerate(zip(ns, texts))]
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u1, "pair", 16, 0), (u2, "msg", 3, 0)), "records": records,
    }


@fixture("session splitting: same id + seq 1 continues; END then seq 0 splits (`cat a a`); differing "
         "logb.session splits; id on one side only continues; lower seq splits; equal non-zero seq continues",
         "§3.3 (a), (b), (c)")
def session_rules():
    u = U(11)
    b = Build(hm.header())
    first = None
    plan = [  # (segment_seq, logb.session or None, END before this segment?)   -> session
        (0, "dd" * 16, False),   # 0
        (1, "dd" * 16, False),   # 0: same id, seq + 1
        (0, "dd" * 16, True),    # 1: END read since the previous segment, and seq 0
        (1, "ef" * 16, False),   # 2: both carry logb.session and the values differ
        (2, None, False),        # 2: id on one side only; seq increases
        (1, None, False),        # 3: seq lower than the previous segment's
        (1, None, False),        # 3: equal non-zero seq continues (reported)
    ]
    for k, (seq, session, end_before) in enumerate(plan):
        if end_before:
            b.put(hm.end(0, len(b) - first))
        at = b.put(hm.sync(seq))
        first = at if first is None or end_before else first
        if session:
            b.put(hm.meta([("logb.session", session)]))
        b.put(u8_stream(u, "s"))
        b.put(hm.data(1, bytes([k]), 1, base=k))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 4, "skipped": [],
        "streams": streams((u, "s", 7, 0)),
        "records": [r for k in range(7) for r in u8_records(u, "s", [k], base=k)],
    }


@fixture("logb.session is compared with the previous segment, not the session: X, then a segment without "
         "an id, then Y (seq increasing, no END) is one session", "§3.3 (a)")
def session_id_previous_segment():
    u = U(0x71)
    b = Build(hm.header())
    for seq, session in [(0, "11" * 16), (1, None), (2, "22" * 16)]:
        b.put(hm.sync(seq))
        if session:
            b.put(hm.meta([("logb.session", session)]))
        b.put(u8_stream(u, "s"))
        b.put(hm.data(1, bytes([seq]), 1, base=seq))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 3, 0)),
        "records": [r for k in range(3) for r in u8_records(u, "s", [k], base=k)],
    }


@fixture("a segment's session facts are the META keys before its first DATA frame: a different "
         "logb.session written after the DATA does not start a new session", "§3.3")
def session_facts_before_data():
    u = U(0x72)
    b = Build(hm.header(), hm.sync(0))
    b.put(hm.meta([("logb.session", "33" * 16)]))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([1]), 1))
    b.put(hm.sync(1))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([2]), 1, base=1))
    b.put(hm.meta([("logb.session", "44" * 16)]))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 2, 0)),
        "records": u8_records(u, "s", [1]) + u8_records(u, "s", [2], base=1),
    }


@fixture("run contiguity violated (run 1, 2, then 1 again in one segment): reported, every record keeps "
         "the run_id of its own frame", "§6.5")
def run_contiguity():
    u = U(0x73)
    b = Build(hm.header(), hm.sync(0))
    b.put(run_frame(1, 0, [("T", "25")]))
    b.put(run_frame(2, 1, [("T", "85")]))
    b.put(u8_stream(u, "s"))
    for run_id, v in [(1, 10), (2, 20), (1, 11)]:
        b.put(hm.data(1, bytes([v]), 1, base=0, run_id=run_id))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 3, 0)),
        "runs": [[{"run_id": 1, "index": 0, "params": {"T": "25"}},
                  {"run_id": 2, "index": 1, "params": {"T": "85"}}]],
        "records": [r for rid, v in [(1, 10), (2, 20), (1, 11)] for r in u8_records(u, "s", [v], run_id=rid)],
    }


@fixture("monotonic time base with ONE valid anchor (axis_exp -6): wall = w0 + (a - a0), extrapolated "
         "unless a = a0, uncertainty absent = unknown; a later anchor at the same axis_ns and a "
         "malformed anchor are ignored", "§5.5, §5.6")
def time_one_anchor():
    u = U(0x74)
    b = Build(hm.header(), hm.sync(0))
    b.put(hm.meta([("logb.time_base", "monotonic")]))
    b.put(hm.meta([("logb.anchor.axis_ns", "1000"), ("logb.anchor.wall_ns", str(W))]))
    b.put(u8_stream(u, "us", step=1, exp=-6))
    b.put(hm.data(1, bytes([0, 1, 2, 3]), 4, base=0))
    b.put(hm.meta([("logb.anchor.axis_ns", "1000"), ("logb.anchor.wall_ns", str(W + 999))]))  # duplicate
    b.put(hm.meta([("logb.anchor.axis_ns", "0"), ("logb.anchor.wall_ns", "12x")]))           # malformed
    # ticks 0..3 µs -> a = 0, 1000, 2000, 3000 ns; wall = W + (a - 1000)
    walls = [anchored(W - 1000, None, True), anchored(W, None, False),
             anchored(W + 1000, None, True), anchored(W + 2000, None, True)]
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "us", 4, 0)),
        "records": [rec(u, "us", i, {"v": i}, wall=walls[i]) for i in range(4)],
    }


@fixture("second, different SCHEMA for a stream_id in one segment: the first stands (DATA decodes with it)",
         "§6.8")
def schema_rebind():
    u = U(12)
    b = Build(hm.header(), hm.sync(0))
    b.put(u8_stream(u, "s"))
    b.put(schema_frame(1, u, "s", 16, [hm.field("v", 0, 16, UINT)], kind=TIME, mode=IMPLICIT, exp=-3, step=1))
    b.put(hm.data(1, bytes([9, 10]), 2))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 2, 0)), "records": u8_records(u, "s", [9, 10]),
    }


@fixture("DATA for a stream_id no SCHEMA binds: reported and skipped, not counted against any uuid; "
         "a SCHEMA after DATA in a segment applies from that point on", "§3.2, §4.2, §8.3 step 1")
def unbound_stream_id():
    u, u2 = U(13), U(0x13)
    b = Build(hm.header(), hm.sync(0))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(5, bytes([1, 2]), 2))
    b.put(hm.data(1, bytes([3]), 1))
    b.put(hm.data(2, bytes([4]), 1))      # stream_id 2 is not bound yet
    b.put(u8_stream(u2, "late", sid=2))   # a SCHEMA after DATA applies from here on
    b.put(hm.data(2, bytes([5]), 1))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 1, 0), (u2, "late", 1, 0)),
        "records": u8_records(u, "s", [3]) + u8_records(u2, "late", [5]),
    }


# ================================================================ rejected frames and streams

@fixture("DATA with unknown codec 9: frame rejected, its record_count counted as rejected", "§8.3 step 3")
def unknown_codec():
    u = U(14)
    b = Build(hm.header(), hm.sync(0))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, b"???", 3, codec=9, raw_size=3))
    b.put(hm.data(1, bytes([1, 2]), 2, base=3))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 2, 3)), "records": u8_records(u, "s", [1, 2], base=3),
    }


@fixture("DATA with unknown filter 7: frame rejected, records counted as rejected", "§8.3 step 3")
def unknown_filter():
    u = U(15)
    b = Build(hm.header(), hm.sync(0))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([1, 2]), 2, filt=7))
    b.put(hm.data(1, bytes([3]), 1, base=2))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 1, 2)), "records": u8_records(u, "s", [3], base=2),
    }


@fixture("unknown axis_mode 3: that stream's schema is invalid and its DATA rejected; other streams fine",
         "§5.1, §6.7")
def unknown_axis_mode():
    ua, ub = U(16), U(17)
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, ua, "future", 8, [hm.field("v", 0, 8, UINT)], kind=TIME, mode=3, exp=-3, step=1))
    b.put(u8_stream(ub, "fine", sid=2))
    b.put(hm.data(1, bytes([1, 2]), 2))
    b.put(hm.data(2, bytes([4, 5, 6]), 3))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((ua, "future", 0, 2), (ub, "fine", 3, 0)), "records": u8_records(ub, "fine", [4, 5, 6]),
    }


@fixture("implicit_log with axis_kind time: schema invalid, its DATA rejected; other streams fine",
         "§5.1, §6.7")
def log_time_rejected():
    ua, ub = U(18), U(19)
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, ua, "logtime", 8, [hm.field("v", 0, 8, UINT)], kind=TIME, mode=IMPLICIT_LOG, exp=-3,
                       step=2))
    b.put(u8_stream(ub, "fine", sid=2))
    b.put(hm.data(1, bytes([1, 2]), 2))
    b.put(hm.data(2, bytes([4]), 1))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((ua, "logtime", 0, 2), (ub, "fine", 1, 0)), "records": u8_records(ub, "fine", [4]),
    }


@fixture("schema conflict across segments: the same uuid with a different SCHEMA in a later segment is "
         "rejected (never merged); restating the canonical schema afterwards is accepted", "§6.8")
def schema_conflict():
    u = U(20)
    b = Build(hm.header())
    for seq, schema, data in [
        (0, u8_stream(u, "conf"), hm.data(1, bytes([1, 2]), 2)),
        (1, schema_frame(1, u, "conf", 16, [hm.field("v", 0, 16, UINT)], kind=TIME, mode=IMPLICIT, exp=-3, step=1),
         hm.data(1, struct.pack("<3H", 7, 8, 9), 3)),
        (2, u8_stream(u, "conf"), hm.data(1, bytes([3]), 1, base=10)),
    ]:
        b.put(hm.sync(seq))
        b.put(hm.meta([("logb.session", "ee" * 16)]))
        b.put(schema)
        b.put(data)
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "conf", 3, 3)),
        "records": u8_records(u, "conf", [1, 2]) + u8_records(u, "conf", [3], base=10),
    }


@fixture("one uuid bound to two stream_ids in a segment: the second binding is rejected, its records "
         "counted as rejected", "§6.8")
def duplicate_uuid_binding():
    u = U(21)
    b = Build(hm.header(), hm.sync(0))
    b.put(u8_stream(u, "s", sid=1))
    b.put(u8_stream(u, "s", sid=2))
    b.put(hm.data(1, bytes([1, 2]), 2))
    b.put(hm.data(2, bytes([3, 4, 5]), 3))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 2, 3)), "records": u8_records(u, "s", [1, 2]),
    }


@fixture("a zstd frame followed by trailing garbage, and one followed by a skippable frame: both rejected",
         "§8.2, §8.3 step 5")
def zstd_trailing_garbage():
    u = U(22)
    region = struct.pack("<3H", 1, 2, 3)
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, u, "z", 16, [hm.field("v", 0, 16, UINT)], kind=TIME, mode=IMPLICIT, exp=-3, step=1))
    b.put(hm.data(1, zstd(region) + b"\x00\x00\x00", 3, codec=C_ZSTD, raw_size=6))
    b.put(hm.data(1, zstd(region) + struct.pack("<II", 0x184D2A50, 4) + b"skip", 3, codec=C_ZSTD, raw_size=6))
    b.put(hm.data(1, zstd(region), 3, base=10, codec=C_ZSTD, raw_size=6))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "z", 3, 6)), "records": u8_records(u, "z", [1, 2, 3], base=10),
    }


@fixture("raw_size mismatches reject the frame: raw_size != N*S (no variable fields); codec none with "
         "stored size != raw_size; zstd decoding past raw_size; deflate decoding short of raw_size",
         "§8.3 steps 4, 5")
def raw_size_mismatch():
    u = U(23)
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, u, "r", 16, [hm.field("v", 0, 16, UINT)], kind=TIME, mode=IMPLICIT, exp=-3, step=1))
    b.put(hm.data(1, struct.pack("<2H", 1, 2) + b"\x00", 2, raw_size=5))
    b.put(hm.data(1, struct.pack("<2H", 1, 2) + b"\x00", 2, raw_size=4))
    b.put(hm.data(1, zstd(struct.pack("<3H", 1, 2, 3)), 2, codec=C_ZSTD, raw_size=4))
    b.put(hm.data(1, raw_deflate(b"\x01\x00\x02"), 2, codec=C_DEFLATE, raw_size=4))
    b.put(hm.data(1, struct.pack("<2H", 7, 8), 2, base=20))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "r", 2, 8)), "records": u8_records(u, "r", [7, 8], base=20),
    }


@fixture("invalid UTF-8 in a fixed and in a variable string field rejects the whole DATA frame",
         "§6.3, §8.3 step 8")
def bad_utf8_string():
    u = U(24)
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, u, "txt", 24, [hm.field("id", 0, 8, UINT), hm.field("tag", 8, 16, STRING),
                                          hm.field("note", 0, 0, STRING, flags=VARIABLE)],
                       kind=TIME, mode=IMPLICIT, exp=-3, step=1))

    def region(rows):
        fixed = b"".join(bytes([i]) + tag for i, tag, _ in rows)
        return fixed + b"".join(struct.pack("<I", len(n)) + n for _, _, n in rows)

    r1 = region([(1, b"ok", b""), (2, b"\xff\xfe", b"")])
    r2 = region([(3, b"ok", b"\xc3\x28")])
    r3 = region([(4, b"hi", b"fine")])
    b.put(hm.data(1, r1, 2))
    b.put(hm.data(1, r2, 1, base=2))
    b.put(hm.data(1, r3, 1, base=3))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "txt", 1, 3)),
        "records": [rec(u, "txt", 3, {"id": 4, "tag": "hi", "note": "fine"}, wall=UNDATED)],
    }


@fixture("schema validation: 13 invalid schemas (duplicate field name, field past record_bits, bool width 2, "
         "misaligned fixed bytes, variable uint, text conversion on complex, table_interp keys not increasing, "
         "axis_field >= field_count, time axis on a float field, invalid UTF-8 in a unit, unknown data_type, "
         "unknown conversion type, log ratio 1) reject their streams; lenient cases (unknown field flag bits, "
         "NaN table key, lo > hi range, duplicate inline meta keys, record_bits 0 with no fields) are valid",
         "§6.7")
def schema_validation():
    def bad_unit_field():
        return hm.s("v") + struct.pack("<IIBBB", 0, 8, UINT, LITTLE, 0) + sb(b"\xff") + hm.s("") + IDENT

    t = dict(kind=TIME, mode=IMPLICIT, exp=-3, step=1)
    invalid = [
        ("dupname", 8, [hm.field("a", 0, 8, UINT), hm.field("a", 0, 8, UINT)], t),
        ("pastend", 8, [hm.field("v", 0, 16, UINT)], t),
        ("boolwide", 8, [hm.field("v", 0, 2, BOOL)], t),
        ("misaligned", 16, [hm.field("v", 4, 8, BYTES)], t),
        ("varuint", 8, [hm.field("v", 0, 8, UINT), hm.field("w", 0, 0, UINT, flags=VARIABLE)], t),
        ("textcomplex", 64, [hm.field("z", 0, 64, COMPLEX, conv=value_to_text([(1.0, "one")], "?"))], t),
        ("interpkeys", 8, [hm.field("v", 0, 8, UINT, conv=table_interp([(2.0, 0.0), (2.0, 1.0)]))], t),
        ("axisfield", 8, [hm.field("v", 0, 8, UINT)], dict(kind=TIME, mode=EXPLICIT, exp=-3, step=0, scale=1,
                                                            axis_field=3)),
        ("timefloat", 32, [hm.field("v", 0, 32, FLOAT)], dict(kind=TIME, mode=EXPLICIT, exp=-3, step=0, scale=1,
                                                                axis_field=0)),
        ("badunit", 8, [bad_unit_field()], t),
        ("unknowntype", 8, [hm.field("v", 0, 8, 7)], t),
        ("unknownconv", 8, [hm.field("v", 0, 8, UINT, conv=b"\x07")], t),
        ("ratio1", 8, [hm.field("v", 0, 8, UINT)], dict(kind=FREQUENCY, mode=IMPLICIT_LOG, exp=0, step=1.0,
                                                         scale=0.0)),
    ]
    b = Build(hm.header(), hm.sync(0))
    expected = []
    for k, (name, bits, fields, axis) in enumerate(invalid):
        u = U(0x80 + k)
        b.put(schema_frame(k + 1, u, name, bits, fields, unit="s", **axis))
        size = (bits + 7) // 8
        if axis["kind"] == TIME:
            b.put(hm.data(k + 1, bytes(size), 1))
        else:
            b.put(data_f64(k + 1, bytes(size), 1, 1.0))
        expected.append((u, name, 0, 1))
    ul, ue = U(0x9A), U(0x9B)
    lenient = [
        hm.field("v", 0, 8, UINT, flags=0x80),
        hm.field("t", 8, 8, UINT, conv=table([(float("nan"), 1.0), (3.0, 30.0)])),
        hm.field("r", 16, 8, UINT, conv=range_to_text([(5.0, 1.0, "never"), (0.0, 9.0, "low")], "high")),
    ]
    b.put(schema_frame(20, ul, "lenient", 24, lenient, kind=TIME, mode=IMPLICIT, exp=-3, step=1,
                       meta_pairs=(("k", "1"), ("k", "2"))))
    b.put(schema_frame(21, ue, "empty", 0, [], kind=TIME, mode=IMPLICIT, exp=-3, step=5))
    b.put(hm.data(20, bytes([3, 3, 3]), 1))
    b.put(hm.data(21, b"", 2, base=100))
    expected += [(ul, "lenient", 1, 0), (ue, "empty", 2, 0)]
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams(*expected),
        "records": [rec(ul, "lenient", 0, {"v": 3, "t": 3, "r": 3}, {"v": 3, "t": 30.0, "r": "low"}, wall=UNDATED),
                    rec(ue, "empty", 100, {}, wall=UNDATED), rec(ue, "empty", 105, {}, wall=UNDATED)],
    }


@fixture("an invalid first SCHEMA never becomes canonical: the later valid one does, and a third, different "
         "valid one is a schema conflict", "§6.7, §6.8")
def invalid_then_valid_schema():
    u = U(0x75)
    b = Build(hm.header())
    plan = [
        (0, schema_frame(1, u, "multi", 8, [hm.field("v", 0, 8, UINT), hm.field("v", 0, 8, UINT)], kind=TIME,
                         mode=IMPLICIT, exp=-3, step=1), hm.data(1, bytes([1]), 1)),
        (1, schema_frame(1, u, "multi", 16, [hm.field("v", 0, 16, UINT)], kind=TIME, mode=IMPLICIT, exp=-3,
                         step=1), hm.data(1, struct.pack("<2H", 300, 301), 2, base=1)),
        (2, u8_stream(u, "multi"), hm.data(1, bytes([4, 5, 6]), 3, base=3)),
    ]
    for seq, schema, data in plan:
        b.put(hm.sync(seq))
        b.put(schema)
        b.put(data)
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "multi", 2, 4)),
        "records": [rec(u, "multi", 1 + i, {"v": v}, wall=UNDATED) for i, v in enumerate([300, 301])],
    }


@fixture("tail region errors reject the frame: a tail running past raw_size, bytes left over after the "
         "last tail, raw_size below N*S + 4*V*N; a zero-record frame is valid", "§6.4, §8.3 steps 4, 7")
def tail_errors():
    u = U(0x76)
    b = Build(hm.header(), hm.sync(0))
    b.put(schema_frame(1, u, "tail", 8, [hm.field("n", 0, 8, UINT), hm.field("t", 0, 0, BYTES, flags=VARIABLE)],
                       kind=TIME, mode=IMPLICIT, exp=-3, step=1))
    b.put(hm.data(1, bytes([1]) + struct.pack("<I", 10) + b"ab", 1))
    b.put(hm.data(1, bytes([2]) + struct.pack("<I", 1) + b"x" + b"yy", 1))
    b.put(hm.data(1, bytes([3, 3]) + b"\x00\x00\x00", 2))
    b.put(hm.data(1, b"", 0, base=50))
    b.put(hm.data(1, bytes([4]) + struct.pack("<I", 2) + b"ab", 1, base=7))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "tail", 1, 4)),
        "records": [rec(u, "tail", 7, {"n": 4, "t": "6162"}, wall=UNDATED)],
    }


@fixture("time axis values are exact integers: a final value outside i64 rejects the frame; an "
         "intermediate overflow (raw * axis_scale) whose sum fits is fine", "§5.2, §8.3 step 9")
def time_axis_overflow():
    u1, u2 = U(0x77), U(0x78)
    b = Build(hm.header(), hm.sync(0))
    b.put(u8_stream(u1, "imp", step=1, exp=-9))
    b.put(schema_frame(2, u2, "exp", 8, [hm.field("v", 0, 8, UINT)], kind=TIME, mode=EXPLICIT, exp=-9, step=0,
                       scale=2**62, axis_field=0))
    b.put(hm.data(1, bytes([1, 2, 3]), 3, base=2**63 - 2))   # last: 2^63 -> rejected
    b.put(hm.data(1, bytes([4, 5, 6]), 3, base=2**63 - 3))   # last: 2^63 - 1 fits
    b.put(hm.data(2, bytes([3]), 1, base=-2**63))            # -2^63 + 3 * 2^62 = 2^62
    b.put(hm.data(2, bytes([0, 4]), 2, base=-2**63))         # -2^63 + 4 * 2^62 = 2^63 -> rejected
    records = [rec(u1, "imp", 2**63 - 3 + i, {"v": v}, wall=UNDATED) for i, v in enumerate([4, 5, 6])]
    records.append(rec(u2, "exp", 2**62, {"v": 3}, wall=UNDATED))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u1, "imp", 3, 3), (u2, "exp", 1, 2)), "records": records,
    }


@fixture("trailing bytes after the known fields of SYNC, SCHEMA, RUN and END are ignored (a later minor "
         "version may grow them), and a higher version_minor is accepted", "§2.3, §4.3")
def growable_frames():
    u = U(0x79)
    b = Build(hm.header(minor=7))
    sync_at = b.put(hm.frame(SYNC, hm.PATTERN + struct.pack("<Qq", 0, 0) + b"future!!"))
    b.put(hm.meta([("logb.time_base", "unix")]))
    b.put(hm.frame(RUN, struct.pack("<III", 3, 0, 1) + hm.s("k") + hm.s("v") + b"new"))
    b.put(hm.frame(SCHEMA, hm.schema(u, "grown", 8, [hm.field("v", 0, 8, UINT)], kind=TIME, mode=IMPLICIT,
                                     exp=-9, step=2) + b"\x01\x02\x03\x04", sid=1))
    b.put(hm.data(1, bytes([1, 2]), 2, base=10, run_id=3))
    b.put(hm.frame(END, struct.pack("<QQ", 0, len(b) - sync_at) + b"more!"))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "grown", 2, 0)),
        "runs": [[{"run_id": 3, "index": 0, "params": {"k": "v"}}]],
        "records": [rec(u, "grown", 10, {"v": 1}, wall=unix(10), run_id=3),
                    rec(u, "grown", 12, {"v": 2}, wall=unix(12), run_id=3)],
    }


@fixture("malformed payloads are ignored: a META with a trailing byte (its time base does not count, "
         "records undated) and a malformed SYNC, which closes the segment so the next DATA is outside "
         "any segment; they are damage (SPEC §10.5), so the file is not intact", "§4.3, §4.4, §4.5, §10.5")
def malformed_frames():
    u = U(0x7A)
    b = Build(hm.header(), hm.sync(0))
    b.put(hm.frame(META, meta_payload([("logb.time_base", "unix")]) + b"\x00"))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([1, 2]), 2))
    b.put(hm.frame(SYNC, b"NOT THE PATTERN!" + struct.pack("<Qq", 1, 0)))
    b.put(hm.data(1, bytes([3]), 1, base=2))
    b.put(hm.sync(1))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([4]), 1, base=3))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [],
        "streams": streams((u, "s", 3, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [4], base=3),
    }


# ================================================================ damage and truncation

def _two_segments(damage):
    """Segment 0 (DATA A good, DATA B damaged by `damage`, DATA C good), then segment 1.
    Returns the bytes, the offsets of B, C and the second SYNC, and the uuid."""
    u = U(25)
    b = Build(hm.header(), hm.sync(0))
    b.put(hm.meta([("logb.session", "f0" * 16)]))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([1, 2]), 2, base=0))
    bad = bytearray(hm.data(1, bytes([3, 4, 5]), 3, base=2))
    damage(bad)
    at_b = b.put(bytes(bad))
    at_c = b.put(hm.data(1, bytes([6]), 1, base=5))
    at_sync = b.put(hm.sync(1))
    b.put(hm.meta([("logb.session", "f0" * 16)]))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([7, 8]), 2, base=6))
    return b.buf, at_b, at_c, at_sync, u


@fixture("G17 resume at the damaged frame's own end: a flipped record byte leaves the length intact, "
         "the frame there (DATA of a bound stream_id) is trusted, so only the damaged frame is lost",
         "§10.1 step 4, §10.2, §10.3 rule A")
def crc_mismatch_resync():
    def flip(frame):
        frame[8 + 28] ^= 0xFF  # first record byte; the CRC is left as it was

    buf, at_b, at_c, _at_sync, u = _two_segments(flip)
    return buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_b, at_c, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 5, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [6], base=5) + u8_records(u, "s", [7, 8], base=6),
    }


@fixture("G17 resume at the next trusted frame: a length running past the end gives no own end, so the "
         "search finds the next frame (DATA of a bound stream_id); 'length past end' range up to it",
         "§10.1 step 3, §10.2, §10.3 rule B")
def length_past_end():
    def grow(frame):
        frame[0:4] = struct.pack("<I", 0xFFFFFF00)

    buf, at_b, at_c, _at_sync, u = _two_segments(grow)
    return buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_b, at_c, "length past end"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 5, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [6], base=5) + u8_records(u, "s", [7, 8], base=6),
    }


# ================================================================ G17: frame-level resync inside a segment

def _bad_crc(frame):
    """The frame with its CRC broken and its length intact (its own end is right)."""
    frame = bytearray(frame)
    frame[-1] ^= 0xFF
    return bytes(frame)


def _bad_length(frame):
    """The frame one byte longer than it is, CRC broken (its own end is wrong)."""
    frame = bytearray(frame)
    frame[0:4] = struct.pack("<I", len(frame) - 12 + 1)
    frame[-4:] = b"\xff" * 4  # what the walk meets after a frame read inside it: a length past the end
    return bytes(frame)


def _g17_start(u, sid=1):
    """Header, SYNC 0, SCHEMA binding `sid`, DATA A [1, 2] at axis 0."""
    b = Build(hm.header(), hm.sync(0), u8_stream(u, "s", sid=sid))
    b.put(hm.data(sid, bytes([1, 2]), 2, base=0))
    return b


def _carrier(inner, base=2):
    """A DATA frame (stream_id 1, one u8 record per byte) whose records are `inner`'s bytes."""
    return hm.data(1, inner, len(inner), base=base)


@fixture("G17 the damaged frame's own end wins over a CRC-valid frame inside its payload: the inner frame "
         "is never read (polarity: own end trusted)", "§10.3 rule A")
def g17_inner_frame_not_read():
    u = U(0x71)
    b = _g17_start(u)
    at_b = b.put(_bad_crc(_carrier(hm.data(1, bytes([9]), 1, base=100))))
    at_c = b.put(hm.data(1, bytes([6]), 1, base=5))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_b, at_c, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 3, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [6], base=5),
    }


@fixture("G17 frames found inside a damaged frame: its own end is not trusted (its length is wrong), so the "
         "earliest trusted frame after the damage is the one inside its payload, which is read "
         "(polarity: own end untrusted)", "§10.3 rule B, frames inside damaged ones")
def g17_inner_frame_read():
    u = U(0x72)
    b = _g17_start(u)
    inner = hm.data(1, bytes([9]), 1, base=100)
    at_b = b.put(_bad_length(_carrier(inner)))
    at_inner = at_b + 8 + 28
    at_c = b.put(hm.data(1, bytes([6]), 1, base=5))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1,
        "skipped": [[at_b, at_inner, "crc mismatch"], [at_inner + len(inner), at_c, "length past end"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 4, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [9], base=100) + u8_records(u, "s", [6], base=5),
    }


@fixture("G17 a stream-scoped frame is trusted only with a stream_id the segment binds: at the damaged "
         "frame's own end a DATA for unbound stream_id 9 is not, so the range runs to the next trusted frame "
         "(polarity: unbound)", "§10.3 trusted frames")
def g17_unbound_not_trusted():
    u = U(0x73)
    b = _g17_start(u)
    at_b = b.put(_bad_crc(hm.data(1, bytes([3, 4]), 2, base=2)))
    b.put(hm.data(9, bytes([5]), 1, base=4))
    at_c = b.put(hm.data(1, bytes([6]), 1, base=5))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_b, at_c, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 3, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [6], base=5),
    }


@fixture("G17 the same file with stream_id 9 bound by a SCHEMA in the segment: the DATA at the damaged "
         "frame's own end is trusted and read (polarity: bound)", "§10.3 trusted frames, rule A")
def g17_bound_trusted():
    u, t = U(0x74), U(0x75)
    b = Build(hm.header(), hm.sync(0), u8_stream(u, "s"), u8_stream(t, "t", sid=9))
    b.put(hm.data(1, bytes([1, 2]), 2, base=0))
    at_b = b.put(_bad_crc(hm.data(1, bytes([3, 4]), 2, base=2)))
    at_x = b.put(hm.data(9, bytes([5]), 1, base=4))
    b.put(hm.data(1, bytes([6]), 1, base=5))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_b, at_x, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 3, 0), (t, "t", 1, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(t, "t", [5], base=4) + u8_records(u, "s", [6], base=5),
    }


def _lost_segment(t):
    """A segment whose SYNC is damaged: its SCHEMA binds stream_id 1 to another stream (uuid t, field
    `w` uint16), its DATA D is [4]; then SYNC 2 with the same binding and DATA E [5]. Returns the
    bytes and the offset of SYNC 2 within them."""
    sync1 = _bad_crc(hm.sync(1))
    other = schema_frame(1, t, "t", 16, [hm.field("w", 0, 16, UINT)], kind=TIME, mode=IMPLICIT, exp=-3)
    lost = sync1 + other + hm.data(1, struct.pack("<H", 4), 1, base=50)
    return lost + hm.sync(2) + other + hm.data(1, struct.pack("<H", 5), 1, base=60), len(lost)


@fixture("G17 SCHEMA evidence at the own end: a damaged SYNC whose own end is a SCHEMA binding stream_id 1 "
         "(trusted, and evidence of a lost SYNC): the range runs to the next SYNC, so the lost segment's "
         "DATA is never decoded with the old segment's binding", "§10.3 lost SYNC")
def g17_schema_evidence_at_own_end():
    u, t = U(0x76), U(0x77)
    b = _g17_start(u)
    lost, to_sync2 = _lost_segment(t)
    at = b.put(lost)
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at, at + to_sync2, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 2, 0), (t, "t", 1, 0)),
        "records": u8_records(u, "s", [1, 2]) + [rec(t, "t", 60, {"w": 5}, wall=UNDATED)],
    }


@fixture("G17 SCHEMA evidence in the search: a DATA frame with a wrong length, then a segment whose SYNC "
         "is damaged; the search meets its SCHEMA first, so the range runs to the next SYNC "
         "(polarity: a SCHEMA between the damage and the resume point counts)", "§10.3 rule B, lost SYNC")
def g17_schema_evidence_in_search():
    u, t = U(0x78), U(0x79)
    b = _g17_start(u)
    at_b = b.put(_bad_length(hm.data(1, bytes([3]), 1, base=2)))
    lost, to_sync2 = _lost_segment(t)
    at = b.put(lost)
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_b, at + to_sync2, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 2, 0), (t, "t", 1, 0)),
        "records": u8_records(u, "s", [1, 2]) + [rec(t, "t", 60, {"w": 5}, wall=UNDATED)],
    }


@fixture("G17 a CRC-valid SCHEMA inside the payload of a damaged frame whose own end is trusted is not "
         "evidence: only the damage start and the own end count (polarity: SCHEMA between, own end)",
         "§10.3 lost SYNC")
def g17_schema_in_payload_not_evidence():
    u = U(0x7A)
    b = _g17_start(u)
    at_b = b.put(_bad_crc(_carrier(u8_stream(U(0x7C), "x"))))
    at_c = b.put(hm.data(1, bytes([6]), 1, base=5))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_b, at_c, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 3, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [6], base=5),
    }


@fixture("G17 file header evidence: a DATA frame with a wrong length, then a second file (header, a file "
         "META, SYNC seq 1, ...): the search meets the header first, so the range runs to that file's SYNC, "
         "not to its META (trusted as file scope)", "§10.3 rule B, lost SYNC")
def g17_header_evidence():
    u = U(0x7D)
    b = _g17_start(u)
    at_b = b.put(_bad_length(hm.data(1, bytes([3]), 1, base=2)))
    b.put(hm.header())
    b.put(hm.meta([("k", "v")]))
    at_sync = b.put(hm.sync(1))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([7]), 1, base=100))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_b, at_sync, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 3, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [7], base=100),
    }


@fixture("G17 a CRC-valid file header inside the payload of a damaged frame whose own end is trusted is not "
         "evidence (polarity: header between, own end)", "§10.3 lost SYNC")
def g17_header_in_payload_not_evidence():
    u = U(0x7E)
    b = _g17_start(u)
    at_b = b.put(_bad_crc(_carrier(hm.header() + hm.sync(7))))
    at_c = b.put(hm.data(1, bytes([6]), 1, base=5))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_b, at_c, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 3, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [6], base=5),
    }


def _after_end(with_end):
    u = U(0x7F)
    b = _g17_start(u)
    if with_end:
        b.put(hm.end())
    at_x = b.put(_bad_crc(hm.data(1, bytes([3]), 1, base=2)))
    at_c = b.put(hm.data(1, bytes([6]), 1, base=5))
    at_sync = b.put(hm.sync(1))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([7]), 1, base=100))
    return b.buf, u, at_x, at_c, at_sync


@fixture("G17 after END only a SYNC is trusted: the DATA at the damaged frame's own end is not, the range "
         "runs to the next SYNC (polarity: after END)", "§10.3 trusted frames, §9.2")
def g17_after_end_only_sync():
    buf, u, at_x, _at_c, at_sync = _after_end(True)
    return buf, {
        "exit": 1, "truncated": False, "sessions": 2, "skipped": [[at_x, at_sync, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 3, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [7], base=100),
    }


@fixture("G17 the same file without the END: the DATA at the damaged frame's own end is trusted "
         "(polarity: segment open)", "§10.3 rule A")
def g17_before_end_trusted():
    buf, u, at_x, at_c, _at_sync = _after_end(False)
    return buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at_x, at_c, "crc mismatch"]],
        "strict": "CorruptFrameError",
        "streams": streams((u, "s", 4, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [6], base=5) + u8_records(u, "s", [7], base=100),
    }

def _cut_file():
    u = U(26)
    b = Build(hm.header(), hm.sync(0))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([1, 2]), 2, base=0))
    last = b.put(hm.data(1, bytes([3, 4, 5]), 3, base=2))
    return b.buf, last, u


@fixture("file cut in the middle of a DATA frame: earlier frames intact, the torn tail is a 'truncated' range",
         "§1 rule 2, §10.1 step 3, §10.4")
def truncated_mid_data():
    buf, last, u = _cut_file()
    cut = last + 20
    return buf[:cut], {
        "exit": 1, "truncated": True, "sessions": 1, "skipped": [[last, cut, "truncated"]], "strict": None,
        "streams": streams((u, "s", 2, 0)), "records": u8_records(u, "s", [1, 2]),
    }


@fixture("file cut inside an 8-byte frame header (5 bytes left): 'truncated' range", "§10.1 step 2")
def truncated_frame_header():
    buf, last, u = _cut_file()
    cut = last + 5
    return buf[:cut], {
        "exit": 1, "truncated": True, "sessions": 1, "skipped": [[last, cut, "truncated"]],
        "streams": streams((u, "s", 2, 0)), "records": u8_records(u, "s", [1, 2]),
    }


@fixture("10-byte input that is a prefix of a file header: empty truncated file, range [0, 10)",
         "§2.4 step 1")
def magic_prefix_10():
    return hm.header()[:10], {"exit": 1, "truncated": True, "sessions": 0, "skipped": [[0, 10, "truncated"]],
                              "streams": {}, "records": []}


@fixture("0-byte input matches the magic 'as far as it goes': empty truncated file, truncated = true, "
         "no skipped range (L = 0)", "§2.4 step 1")
def empty_input():
    return b"", {"exit": 1, "truncated": True, "sessions": 0, "skipped": [], "streams": {}, "records": []}


@fixture("byte-wise `cat a b`: b's 16-byte header is an 'embedded file header' range and b is still read "
         "(a new session: END before it, segment_seq 0)", "§6.6, §10.1 step 1, §10.2")
def embedded_header():
    u = U(27)

    def part(session, values, base):
        b = Build(hm.header())
        sync_at = b.put(hm.sync(0))
        b.put(hm.meta([("logb.session", session)]))
        b.put(u8_stream(u, "s"))
        b.put(hm.data(1, bytes(values), len(values), base=base))
        b.put(hm.end(0, len(b) - sync_at))
        return bytes(b.buf)

    a, bb = part("01" * 16, [1, 2], 0), part("02" * 16, [3], 100)
    return a + bb, {
        "exit": 1, "truncated": False, "sessions": 2, "skipped": [[len(a), len(a) + 16, "embedded file header"]],
        "streams": streams((u, "s", 3, 0)),
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [3], base=100),
    }


@fixture("CRC mismatch in the last frame with no SYNC after it: 'crc mismatch' range to the end, "
         "truncated = true", "§10.1 step 4, §10.2")
def crc_mismatch_at_tail():
    buf, last, u = _cut_file()
    buf = bytearray(buf)
    buf[last + 8 + 28] ^= 0xFF
    return buf, {
        "exit": 1, "truncated": True, "sessions": 1, "skipped": [[last, len(buf), "crc mismatch"]],
        "streams": streams((u, "s", 2, 0)), "records": u8_records(u, "s", [1, 2]),
    }


@fixture("an embedded file header of unknown major: the rest of the input is one 'unsupported version' "
         "range, which does not set truncated", "§6.6, §10.2")
def embedded_header_v1():
    u = U(0x7B)
    b = Build(hm.header())
    sync_at = b.put(hm.sync(0))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([1, 2]), 2))
    b.put(hm.end(0, len(b) - sync_at))
    at = b.put(hm.header(major=1, minor=0))
    b.put(hm.sync(0))
    b.put(u8_stream(u, "s"))
    b.put(hm.data(1, bytes([3]), 1))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [[at, len(b), "unsupported version"]],
        "streams": streams((u, "s", 2, 0)), "records": u8_records(u, "s", [1, 2]),
    }


# ================================================================ reader limits (SPEC §8.3 "Reader limits")

ATTACH, INDEX_FRAME = 0x12, 0x30
MIB32 = 32 << 20  # one frame's raw_size limit for an input under 32 MiB: max(32 MiB, L)
ZERO_SIZE_BUDGET = 1 << 16  # zero-size records of one input under 64 KiB: max(2^16, L)
ZSTD_BLOCK = 1 << 17  # Block_Maximum_Size with a 128 KiB window (RFC 8878 §3.1.1.2)


def zstd_by_hand(blocks, content_size=None, window_exp=7):
    """One zstd frame (RFC 8878) from raw and RLE blocks: ("raw", bytes) or ("rle", byte, n). A
    stated content size takes 4 bytes (FCS_Flag 2); the window is 2^(10 + window_exp)."""
    fhd = 0x80 if content_size is not None else 0x00
    out = bytearray(struct.pack("<IB", 0xFD2FB528, fhd) + bytes([window_exp << 3]))
    if content_size is not None:
        out += struct.pack("<I", content_size)
    for i, blk in enumerate(blocks):
        last = i == len(blocks) - 1
        if blk[0] == "raw":
            out += (last | 0 << 1 | len(blk[1]) << 3).to_bytes(3, "little") + blk[1]
        else:
            out += (last | 1 << 1 | blk[2] << 3).to_bytes(3, "little") + bytes([blk[1]])
    return bytes(out)


def zeros_then(n_zeros, tail):
    """A zstd frame of RLE blocks: `n_zeros` zero bytes, then the raw bytes `tail` (no stated content size)."""
    blocks = [("rle", 0, ZSTD_BLOCK)] * (n_zeros // ZSTD_BLOCK)
    if n_zeros % ZSTD_BLOCK:
        blocks.append(("rle", 0, n_zeros % ZSTD_BLOCK))
    return zstd_by_hand(blocks + [("raw", tail)])


def zero_size_stream(uuid, name):
    """A time stream whose records have no bytes: record_bits 0, no fields."""
    return schema_frame(1, uuid, name, 0, [], kind=TIME, mode=IMPLICIT, exp=-3, step=1)


@fixture("reader limit: one zero-size-record budget per input, shared by every frame: DATA frames of 2 and "
         "2^16 - 1 zero-size records (each alone under max(2^16, L)) total more than it, so the second is "
         "rejected; a rejected frame charges nothing, so a third of 1 record still fits (polarity: over)",
         "§8.3 Reader limits")
def limit_zero_size_shared_over():
    u = U(0xA0)
    b = Build(hm.header(), hm.sync(0), zero_size_stream(u, "z"))
    b.put(hm.data(1, b"", 2, base=0))
    at = b.put(hm.data(1, b"", ZERO_SIZE_BUDGET - 1, base=2))
    b.put(hm.data(1, b"", 1, base=ZERO_SIZE_BUDGET + 1))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [], "strict": "MalformedPayloadError",
        "streams": streams((u, "z", 3, ZERO_SIZE_BUDGET - 1)),
        "rejections": {u.hex(): [[at, ZERO_SIZE_BUDGET - 1]]},
        "records": [rec(u, "z", a, {}, wall=UNDATED) for a in (0, 1, ZERO_SIZE_BUDGET + 1)],
    }


@fixture("reader limit: the same budget's edge: DATA frames of 1 and 2^16 - 1 zero-size records total exactly "
         "max(2^16, L), which is within it: all are returned (polarity: within; 2^16 records, so the test "
         "counts them with `info` rather than dumping them)", "§8.3 Reader limits")
def limit_zero_size_shared_within():
    u = U(0xA1)
    b = Build(hm.header(), hm.sync(0), zero_size_stream(u, "z"))
    b.put(hm.data(1, b"", 1, base=0))
    b.put(hm.data(1, b"", ZERO_SIZE_BUDGET - 1, base=1))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None, "dump": False,
        "streams": streams((u, "z", ZERO_SIZE_BUDGET, 0)), "rejections": {u.hex(): []},
    }


def _big_record_stream(uuid, size):
    """A stream of `size`-byte records whose one field `v` is the last byte."""
    return schema_frame(1, uuid, "big", 8 * size, [hm.field("v", 8 * (size - 1), 8, UINT)], kind=TIME,
                        mode=IMPLICIT, exp=-3, step=1)


@fixture("reader limit: a DATA frame whose raw_size is one byte over max(32 MiB, L) is rejected from its "
         "header (a zstd frame of RLE blocks that would decode to it exactly); the rest of the file is "
         "read (polarity: over)", "§8.3 step 4, Reader limits")
def limit_frame_raw_size_over():
    u, t = U(0xA2), U(0xA3)
    b = Build(hm.header(), hm.sync(0), _big_record_stream(u, MIB32 + 1))
    b.put(u8_stream(t, "s", sid=2))
    at = b.put(hm.data(1, zeros_then(MIB32, b"\x2a"), 1, codec=C_ZSTD, raw_size=MIB32 + 1))
    b.put(hm.data(2, bytes([7]), 1, base=0))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [], "strict": "MalformedPayloadError",
        "streams": streams((u, "big", 0, 1), (t, "s", 1, 0)), "rejections": {u.hex(): [[at, 1]], t.hex(): []},
        "records": u8_records(t, "s", [7]),
    }


@fixture("reader limit: a DATA frame whose raw_size is exactly max(32 MiB, L) is decoded (polarity: at the "
         "limit): one 32 MiB record, its last byte 42", "§8.3 Reader limits")
def limit_frame_raw_size_at():
    u = U(0xA4)
    b = Build(hm.header(), hm.sync(0), _big_record_stream(u, MIB32))
    b.put(hm.data(1, zeros_then(MIB32 - 1, b"\x2a"), 1, codec=C_ZSTD, raw_size=MIB32))
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None,
        "streams": streams((u, "big", 1, 0)), "rejections": {u.hex(): []},
        "records": [rec(u, "big", 0, {"v": 42}, wall=UNDATED)],
    }


def index_frame(index_at, entries_by_uuid):
    """INDEX (SPEC §9.1) written at offset `index_at`: {uuid: [(data offset, first_axis, count, run_id)]}."""
    body = struct.pack("<I", len(entries_by_uuid))
    for uuid, entries in entries_by_uuid.items():
        body += uuid + struct.pack("<I", len(entries))
        body += b"".join(struct.pack("<QqII", index_at - at, first, n, run) for at, first, n, run in entries)
    return hm.frame(INDEX_FRAME, body)


def _indexed_session(b, u, values, base, indexes):
    """SYNC 0, SCHEMA, one DATA frame, `indexes` INDEX frames listing it, END pointing to the first INDEX.
    Returns the INDEX offsets."""
    sync_at = b.put(hm.sync(0))
    b.put(u8_stream(u, "s"))
    data_at = b.put(hm.data(1, bytes(values), len(values), base=base))
    offsets = []
    for _ in range(indexes):
        offsets.append(len(b))
        b.put(index_frame(len(b), {u: [(data_at, base, len(values), 0)]}))
    end_at = len(b)
    b.put(hm.end(end_at - offsets[0], end_at - sync_at))
    return offsets


@fixture("reader limit: only a writer session's first INDEX is compared with the frames: a second INDEX in "
         "the same session, though it agrees with them, is reported and unused (not valid); not damage",
         "§8.3 Reader limits, §9.1")
def limit_index_second_in_session():
    u = U(0xA5)
    b = Build(hm.header())
    first, second = _indexed_session(b, u, [1, 2], 0, indexes=2)
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None,
        "streams": streams((u, "s", 2, 0)), "index": [[first, True], [second, False]], "reported": [second],
        "records": u8_records(u, "s", [1, 2]),
    }


@fixture("reader limit: one INDEX per writer session in a concatenation (the second part appended without "
         "its header): each session's INDEX is checked against its own frames and valid (polarity: one per "
         "session)", "§8.3 Reader limits, §9.1, §6.6")
def limit_index_one_per_session():
    u = U(0xA6)
    b = Build(hm.header())
    (first,) = _indexed_session(b, u, [1, 2], 0, indexes=1)
    (second,) = _indexed_session(b, u, [3], 100, indexes=1)
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 2, "skipped": [], "strict": None,
        "streams": streams((u, "s", 3, 0)), "index": [[first, True], [second, True]],
        "records": u8_records(u, "s", [1, 2]) + u8_records(u, "s", [3], base=100),
    }


def _u16_stream(u):
    return schema_frame(1, u, "z", 16, [hm.field("v", 0, 16, UINT)], kind=TIME, mode=IMPLICIT, exp=-3, step=1)


@fixture("reader limit: a zstd frame whose headers contradict raw_size 6 is rejected: a stated content size "
         "of 8 over 6 bytes of raw blocks; no stated size and raw blocks bounding it to 4; a correct stated "
         "size of 6 over blocks bounding it to 4; a correct stated size over blocks of 8 (decoding stops at "
         "raw_size + 1); then a correct frame is read (polarity: headers disagree)",
         "§8.2, §8.3 step 5, Reader limits")
def limit_zstd_bound_rejected():
    u = U(0xA7)
    region = struct.pack("<3H", 1, 2, 3)
    b = Build(hm.header(), hm.sync(0), _u16_stream(u))
    at = [b.put(hm.data(1, z, 3, base=10 * i, codec=C_ZSTD, raw_size=6)) for i, z in enumerate([
        zstd_by_hand([("raw", region)], content_size=8),
        zstd_by_hand([("raw", region[:4])]),
        zstd_by_hand([("raw", region[:2]), ("rle", 0, 2)], content_size=6),
        zstd_by_hand([("raw", region), ("raw", b"\x04\x00")], content_size=6),
    ])]
    b.put(hm.data(1, zstd_by_hand([("raw", region)], content_size=6), 3, base=100, codec=C_ZSTD, raw_size=6))
    return b.buf, {
        "exit": 1, "truncated": False, "sessions": 1, "skipped": [], "strict": "MalformedPayloadError",
        "streams": streams((u, "z", 3, 12)), "rejections": {u.hex(): [[a, 3] for a in at]},
        "records": u8_records(u, "z", [1, 2, 3], base=100),
    }


@fixture("reader limit: zstd frames whose headers bound them to at least raw_size decode (polarity: headers "
         "agree): a stated size of 6 over a raw and an RLE block of exactly 6; no stated size, an RLE and a "
         "raw block of exactly 6; no stated size and a compressed block (bound: the 1 KiB window) with a "
         "checksum; a single-segment frame whose window is its stated size of 32",
         "§8.2, §8.3 step 5, Reader limits")
def limit_zstd_bound_accepted():
    u = U(0xA8)
    pattern = struct.pack("<4H", 1, 2, 3, 4) * 4
    b = Build(hm.header(), hm.sync(0), _u16_stream(u))
    b.put(hm.data(1, zstd_by_hand([("raw", b"\x05\x00"), ("rle", 0, 4)], content_size=6), 3, base=0,
                  codec=C_ZSTD, raw_size=6))
    b.put(hm.data(1, zstd_by_hand([("rle", 0, 4), ("raw", b"\x09\x00")]), 3, base=10, codec=C_ZSTD, raw_size=6))
    no_size = zstandard.ZstdCompressor(level=3, write_content_size=False, write_checksum=True).compress(pattern)
    b.put(hm.data(1, no_size, 16, base=20, codec=C_ZSTD, raw_size=32))
    b.put(hm.data(1, zstd(pattern), 16, base=40, codec=C_ZSTD, raw_size=32))
    values = [1, 2, 3, 4] * 4
    return b.buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None,
        "streams": streams((u, "z", 38, 0)), "rejections": {u.hex(): []},
        "records": (u8_records(u, "z", [5, 0, 0], base=0) + u8_records(u, "z", [0, 0, 9], base=10)
                    + u8_records(u, "z", values, base=20) + u8_records(u, "z", values, base=40)),
    }


def attach_frame(name, media_type, codec, raw_size, data):
    """ATTACH (SPEC §4.6)."""
    return hm.frame(ATTACH, hm.s(name) + hm.s(media_type) + struct.pack("<B3xQ", codec, raw_size) + data)


def _attached(raw_size):
    u = U(0xA9)
    b = Build(hm.header(), hm.sync(0), u8_stream(u, "s"))
    at = b.put(attach_frame("big.bin", "application/octet-stream", C_ZSTD, raw_size,
                            zeros_then(raw_size - 1, b"\x2a")))
    b.put(hm.data(1, bytes([1, 2]), 2, base=0))
    return b.buf, at, u


@fixture("reader limit: an ATTACH whose raw_size is one byte over max(32 MiB, L) is listed with its data "
         "unavailable and reported; that is not damage (polarity: over)", "§4.6, §8.3 Reader limits, §10.5")
def limit_attach_over():
    buf, at, u = _attached(MIB32 + 1)
    return buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None,
        "streams": streams((u, "s", 2, 0)), "reported": [at],
        "attachments": [{"name": "big.bin", "media_type": "application/octet-stream", "raw_size": MIB32 + 1,
                         "available": False}],
        "records": u8_records(u, "s", [1, 2]),
    }


@fixture("reader limit: an ATTACH whose raw_size is exactly max(32 MiB, L) decodes, its data available "
         "(polarity: at the limit)", "§4.6, §8.3 Reader limits")
def limit_attach_at():
    buf, _at, u = _attached(MIB32)
    return buf, {
        "exit": 0, "truncated": False, "sessions": 1, "skipped": [], "strict": None,
        "streams": streams((u, "s", 2, 0)),
        "attachments": [{"name": "big.bin", "media_type": "application/octet-stream", "raw_size": MIB32,
                         "available": True}],
        "records": u8_records(u, "s", [1, 2]),
    }


# ================================================================ not readable

def _body():
    u = U(28)
    return hm.sync(0) + u8_stream(u, "s") + hm.data(1, bytes([1]), 1)


@fixture("bad header CRC: not a Logb file (NotLogbError, exit 2)", "§2.4 step 2, §11.1")
def bad_header():
    head = bytearray(hm.header())
    head[15] ^= 0x01
    return bytes(head) + _body(), {"exit": 2, "error": "NotLogbError"}


@fixture("short input that is not a magic prefix: not Logb (exit 2)", "§2.4 step 1, §11.1")
def short_not_magic():
    return b"LOGB!", {"exit": 2, "error": "NotLogbError"}


@fixture("valid header with version_major 1: unsupported version (UnsupportedVersionError, exit 3)",
         "§2.3, §2.4 step 3, §11.1")
def version_major_1():
    return hm.header(major=1, minor=0) + _body(), {"exit": 3, "error": "UnsupportedVersionError"}


# ================================================================ output

def build(outdir):
    """Write every fixture, its expectation and the README into `outdir`."""
    outdir = pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, rule, spec, fn in FIXTURES:
        data, expect = fn()
        data = bytes(data)
        assert len(data) < MAX_FIXTURE, (name, len(data))
        expect = {"fixture": name, "rule": rule, "spec": spec, "size": len(data), **expect}
        (outdir / f"{name}.logb").write_bytes(data)
        (outdir / f"{name}.expect.json").write_text(json.dumps(expect, indent=1, ensure_ascii=False) + "\n",
                                                    encoding="utf-8")
        polarity = {0: "valid", 1: "damaged/rejected", 2: "not Logb", 3: "unsupported"}[expect["exit"]]
        rows.append(f"| `{name}` | {len(data)} | {polarity} | {rule} | {spec} |")
    readme = README.format(count=len(FIXTURES), rows="\n".join(rows))
    (outdir / "README.md").write_text(readme, encoding="utf-8")


README = """# Logb conformance corpus

{count} small fixtures, each `NAME.logb` with its expectation `NAME.expect.json`.
Generated by `tools/make_corpus.py` (do not edit by hand; run
`python tools/make_corpus.py` and commit the result). `tests/test_corpus.py`
checks that regenerating gives byte-identical files, and that `logb info --json`,
`logb dump --records --json` and their exit statuses match every expectation.

How they are made:

- The bytes are assembled with `struct` from the layouts in `docs/SPEC.md`
  (via `tests/handmade.py`), never through `logb.Writer`.
- The expectations are written by hand from SPEC.md, never by running the
  reader: per stream uuid the records returned and rejected, the exact skipped
  ranges `[start, end, cause]` (offsets taken from the assembled bytes), the
  `truncated` flag, the number of writer sessions, and for most fixtures every
  decoded record (axis, raw, phys, run_id, wall).
- `exit` is the documented exit status (README "Exit status"): 0 intact,
  1 damaged, truncated or rejected records, 2 not a Logb file, 3 unsupported
  version.
- Compressed DATA payloads come from the `zstandard`, `lz4` and `zlib`
  libraries of the test environment; if a library upgrade changes their
  output, the drift test fails: regenerate, check, commit.
- Where the reader disagrees with the spec, the expectation stays spec-derived
  and the test is marked `xfail(strict=True)` with the disagreement as reason
  (see `XFAIL` in `tests/test_corpus.py`).

| fixture | bytes | polarity | rule exercised | SPEC |
|---|---|---|---|---|
{rows}
"""


if __name__ == "__main__":
    build(sys.argv[1] if len(sys.argv) > 1 else ROOT / "corpus")

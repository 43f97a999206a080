"""The C backend (cbridge via cffi) against the pure-Python backend, side by
side: CRC-32C (RFC 3720 B.4, every chunk size at every offset, hardware and
slice-by-8), field extraction and packing (the spec's conformance vectors and
property tests over random layouts), transpose and tail walking; plus how the
backend is chosen and how a C backend that cannot load is reported.

This module chooses backends itself, so it runs once (single_backend); every
other test module runs under both (tests/conftest.py)."""

import os
import random
import subprocess
import sys

import crcmod
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logb
from logb import ByteOrder, DataType, Field, _backend
from logb import batch as batchmod
from logb import codecs, fields
from logb.crc import crc32c, crc32c_pure, crc32c_range
from logb._kernels import Kernels
from logb.errors import InvalidDataError, LogbError

from test_bits import ALL_ROWS, ref_get, ref_signed
from test_crc import VECTORS

pytestmark = pytest.mark.single_backend

ORACLE = crcmod.mkCrcFun(0x11EDC6F41, rev=True, initCrc=0, xorOut=0xFFFFFFFF)
FORCED_PYTHON = os.environ.get("LOGB_BACKEND", "").strip().lower() == "python"


@pytest.fixture(scope="module")
def C():
    k = _backend.load_c()
    if k is None:
        if FORCED_PYTHON:
            pytest.skip("LOGB_BACKEND=python: the C backend is not tested")
        pytest.fail(f"the C backend should load but does not: {_backend.load_error}")
    return k


@pytest.fixture
def both(C):
    """Run a callable under each backend; returns {name: result}."""
    def run(fn):
        out = {}
        for name in ("c", "python"):
            with _backend.using(name):
                out[name] = fn()
        return out
    return run


@pytest.fixture(params=["hw", "sw"])
def crc_mode(request, C):
    if request.param == "hw" and not C.hw_available:
        pytest.skip(f"this CPU has no CRC-32C instruction the build targets ({C.hw_name or 'none compiled'})")
    before = C.crc_mode
    C.set_crc(request.param)
    with _backend.using("c"):
        yield request.param
    C.set_crc(before)


# ---------------------------------------------------------------- selection

def test_default_backend_is_c_unless_python_is_forced():
    if FORCED_PYTHON:
        assert logb.backend == "python"
    else:
        # A build that lost its extension must fail here, not quietly run 100x slower.
        assert _backend.C is not None, f"C backend did not load: {_backend.load_error}"
        assert logb.backend == _backend.current


def test_use_switches_logb_backend(C):
    before = _backend.current
    with _backend.using("python"):
        assert logb.backend == "python" and _backend.active is _backend.PY
        with _backend.using("c"):
            assert logb.backend == "c" and _backend.active is C
        assert logb.backend == "python"
    assert logb.backend == before
    with pytest.raises(ValueError):
        _backend.use("fortran")


def _run_python(code, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("LOGB_BACKEND", "LOGB_CRC")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_environment_forces_a_backend(C):
    r = _run_python("import logb; print(logb.backend)", LOGB_BACKEND="python")
    assert r.returncode == 0 and r.stdout.strip() == "python" and "Warning" not in r.stderr
    r = _run_python("import logb; print(logb.backend)", LOGB_BACKEND="c")
    assert r.returncode == 0 and r.stdout.strip() == "c" and r.stderr == ""
    r = _run_python("import logb; print(logb.backend)")
    assert r.returncode == 0 and r.stdout.strip() == "c" and r.stderr == ""
    r = _run_python("import logb", LOGB_BACKEND="fortran")
    assert r.returncode != 0 and "LOGB_BACKEND" in r.stderr


# Make `from . import _cbridge` fail as it does when the extension was never built.
_BROKEN = "import sys; sys.modules['logb._cbridge'] = None\n"


def test_missing_extension_is_loud_not_silent():
    r = _run_python(_BROKEN + "import logb; print(logb.backend)")
    assert r.returncode == 0 and r.stdout.strip() == "python"
    assert "RuntimeWarning" in r.stderr and "C backend" in r.stderr and "LOGB_BACKEND=python" in r.stderr


def test_missing_extension_with_c_forced_is_an_error():
    r = _run_python(_BROKEN + "import logb", LOGB_BACKEND="c")
    assert r.returncode != 0 and "BackendUnavailable" in r.stderr


def test_missing_extension_with_python_forced_is_quiet():
    r = _run_python(_BROKEN + "import logb; print(logb.backend)", LOGB_BACKEND="python")
    assert r.returncode == 0 and r.stdout.strip() == "python" and r.stderr == ""


def test_crc_can_be_forced_to_software(C):
    r = _run_python("from logb import _backend; print(_backend.C.crc_impl)", LOGB_CRC="sw")
    assert r.stdout.strip() == "slice-by-8"
    if C.hw_available:
        assert C.hw_name in ("sse4.2", "armv8-crc")
        r = _run_python("from logb import _backend; print(_backend.C.crc_impl)")
        assert r.stdout.strip() == C.hw_name
    with pytest.raises(ValueError):
        C.set_crc("fast")


# A small file that reaches every kernel: CRCs, the scan kernel and a resync
# past damage, a transposed frame (packed,
# transposed, then read), every field kind and variable-length tails; each
# public kernel of both backend objects counts its calls.
_EXERCISE = """
import json, sys
import numpy as np
import logb
from logb import _backend, AxisKind, AxisMode, ByteOrder, DataType, Field, Schema

KERNELS = ("crc32c", "crc32c_range", "extract", "pack", "gather", "transpose", "untranspose", "walk_tails",
           "scan_frames", "extract_many")
calls = {}
for k in filter(None, (_backend.PY, _backend.C)):
    for name in KERNELS:
        def counted(*a, _fn=getattr(k, name), _key=f"{k.name}.{name}", **kw):
            calls[_key] = calls.get(_key, 0) + 1
            return _fn(*a, **kw)
        setattr(k, name, counted)

schema = Schema(uuid=bytes(16), name="s", record_bits=8 * 14, axis_kind=AxisKind.index,
                axis_mode=AxisMode.implicit, axis_step=1,
                fields=(Field("u", 0, 12, DataType.uint), Field("i", 12, 20, DataType.sint, ByteOrder.big),
                        Field("f", 32, 32, DataType.float), Field("b", 64, 1, DataType.bool),
                        Field("p", 72, 40, DataType.bytes), Field("t", 0, 0, DataType.string, flags=1)))
path = sys.argv[1]
with logb.Writer(path, time_base="relative", session="s", wall_clock=lambda: 0, monotonic=lambda: 0.0) as w:
    s = w.add_stream(schema, transpose=True)
    n = 50
    s.write_batch({"u": np.arange(n) % 4096, "i": -np.arange(n), "f": np.linspace(0, 1, n, dtype=np.float32),
                   "b": np.arange(n) % 2 == 0, "p": np.zeros((n, 5), np.uint8), "t": ["x" * (i % 3) for i in range(n)]})
with logb.LogbFile(path) as f:
    cols = f.stream("s").columns()
    logb.fields.extract_uint(np.zeros((2, 2), np.uint8), 0, 12, False)  # columns() reads through extract_many
    assert f.report.clean and cols.raw["i"].tolist() == (-np.arange(n)).tolist()
with open(path, "rb") as f:
    data = f.read()
logb.codecs.untranspose(data, 3, 4)
# damage: the scan kernel stops at it, the resync search checks candidates' CRCs itself (crc32c_range)
at = next(ev.offset for ev in logb.scan.FrameScanner().scan(data) if getattr(ev, "type", None) == 0x20) + 40
with logb.LogbFile(data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]) as f:
    assert f.report.skipped
print(json.dumps({"backend": logb.backend, "active": _backend.active.name, "crc": _backend.active.crc_impl,
                  "cffi_imported": "logb._cbridge" in sys.modules, "calls": calls}))
"""


def _exercise(tmp_path, **env):
    import json

    path = tmp_path / "f.logb"
    full = {k: v for k, v in os.environ.items() if k not in ("LOGB_BACKEND", "LOGB_CRC")}
    full.update(env)
    r = subprocess.run([sys.executable, "-c", _EXERCISE, str(path)], capture_output=True, text=True, env=full,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


_KERNELS = ("crc32c", "crc32c_range", "extract", "pack", "gather", "transpose", "untranspose", "walk_tails",
           "scan_frames", "extract_many")


def test_forced_python_backend_never_loads_or_calls_c(tmp_path):
    got = _exercise(tmp_path, LOGB_BACKEND="python")
    assert got["backend"] == got["active"] == "python"
    assert not got["cffi_imported"]  # the C extension was not even imported
    assert got["crc"] in ("crcmod", "pure")
    assert {k for k, v in got["calls"].items() if v} == {f"python.{k}" for k in _KERNELS}


def test_forced_c_backend_runs_every_kernel_in_c(C, tmp_path):
    got = _exercise(tmp_path, LOGB_BACKEND="c")
    assert got["backend"] == got["active"] == "c" and got["cffi_imported"]
    # every kernel ran in C, and not one in Python (untranspose only as called
    # directly: the C reader reads a transposed frame in place)
    assert {k for k, v in got["calls"].items() if v} == {f"c.{k}" for k in _KERNELS}


@pytest.mark.parametrize("mode", ["sw", "hw"])
def test_forced_crc_mode_is_the_one_that_runs(C, tmp_path, mode):
    if mode == "hw" and not C.hw_available:
        pytest.skip(f"this CPU has no CRC-32C instruction the build targets ({C.hw_name or 'none compiled'})")
    got = _exercise(tmp_path, LOGB_BACKEND="c", LOGB_CRC=mode)
    assert got["crc"] == ("slice-by-8" if mode == "sw" else C.hw_name)
    r = _run_python("from logb import _backend; k = _backend.active\n"
                    "print(k._crc == k.lib.logb_crc32c_" + mode + ")", LOGB_CRC=mode)
    assert r.stdout.strip() == "True", r.stderr


def test_forcing_hw_crc_without_the_instruction_is_an_error(C, monkeypatch):
    monkeypatch.setattr(C, "hw_available", False)
    with pytest.raises(_backend.BackendUnavailable) as exc:
        C.set_crc("hw")
    assert isinstance(exc.value, LogbError) and isinstance(exc.value, ImportError)


def test_each_backend_writes_each_kernel_once_and_shares_the_checks(C):
    for k in (C, _backend.PY):
        assert isinstance(k, Kernels) and k.name in _backend.NAMES and k.crc_impl
        for name in ("crc32c", "crc32c_range", "transpose", "untranspose", "walk_tails",
                     "_extract", "_pack", "_gather"):
            assert name in type(k).__dict__, (k.name, name)
        for name in ("records", "extract", "pack", "gather"):  # the checked entry points
            assert getattr(type(k), name) is getattr(Kernels, name), (k.name, name)


# ---------------------------------------------------------------- CRC-32C

@pytest.mark.parametrize("data,expected", VECTORS, ids=[
    "zeros", "ones", "ascending", "descending", "iscsi-read", "check", "empty"])
def test_rfc3720_vectors_both_backends(crc_mode, data, expected):
    assert crc32c(data) == expected
    with _backend.using("python"):
        assert crc32c(data) == expected


def test_every_chunk_size_at_every_offset(crc_mode):
    """Sizes 0..64 at buffer offsets 0..15 (real misalignment: one buffer, moving start)."""
    rng = random.Random(0x3720)
    buf = bytes(rng.randrange(256) for _ in range(64 + 16))
    for offset in range(16):
        for size in range(65):
            want = ORACLE(buf[offset:offset + size])
            assert crc32c_range(buf, offset, offset + size) == want, (offset, size)
            assert crc32c(memoryview(buf)[offset:offset + size]) == want, (offset, size)
            with _backend.using("python"):
                assert crc32c_range(buf, offset, offset + size) == want


def test_large_buffers_cross_every_block_path(crc_mode):
    # The hardware path interleaves 3 blocks of 8192 and of 256 bytes: sizes
    # around those thresholds, at unaligned starts, and chained pieces.
    rng = random.Random(11)
    big = bytes(rng.randrange(256) for _ in range(3 * 8192 * 2 + 3 * 256 + 50))
    sizes = [3 * 256 - 1, 3 * 256, 3 * 256 + 7, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 3 * 256 + 9, len(big) - 16]
    for size in sizes:
        for start in (0, 1, 7, 13):
            if start + size <= len(big):
                assert crc32c_range(big, start, start + size) == ORACLE(big[start:start + size]), (start, size)
    a, b = big[:10000], big[10000:]
    assert crc32c(b, crc32c(a)) == ORACLE(big)
    assert crc32c_pure(b, crc32c(a)) == ORACLE(big)


def test_hardware_equals_software_on_random_buffers(C):
    if not C.hw_available:
        pytest.skip("no CRC instruction on this CPU")
    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.integers(0, 200_000))
        data = rng.integers(0, 256, n, np.uint8).tobytes()
        start = int(rng.integers(0, 16))
        seed = int(rng.integers(0, 1 << 32))
        hw = C.lib.logb_crc32c_hw(seed, C.ffi.from_buffer("uint8_t[]", data) + min(start, n), n - min(start, n))
        sw = C.lib.logb_crc32c_sw(seed, C.ffi.from_buffer("uint8_t[]", data) + min(start, n), n - min(start, n))
        assert hw == sw


def test_crc_accepts_every_buffer_kind(C, both):
    data = bytes(range(256)) * 5
    kinds = [data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)]
    for obj in kinds:
        got = both(lambda: crc32c(obj))
        assert got == {"c": ORACLE(data), "python": ORACLE(data)}


def test_crc_range_checks_bounds(C, both):
    for start, end in ((-1, 3), (4, 3), (0, 11)):
        for name in ("c", "python"):
            with _backend.using(name), pytest.raises(ValueError):
                crc32c_range(b"0123456789", start, end)


def test_crc_of_an_mmap_leaves_it_closable(C, tmp_path):
    import mmap

    p = tmp_path / "f"
    p.write_bytes(bytes(range(256)) * 100)
    with open(p, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        for name in ("c", "python"):
            with _backend.using(name):
                assert crc32c_range(m, 100, 20000) == ORACLE(p.read_bytes()[100:20000])
                assert crc32c(m) == ORACLE(p.read_bytes())
        m.close()  # raises BufferError if a buffer export leaked


# ---------------------------------------------------------------- fields: conformance vectors

@pytest.mark.parametrize("hexbytes,order,offset,width,raw,as_sint", ALL_ROWS)
@pytest.mark.parametrize("layout", ["rows", "planar"])
def test_conformance_vectors_both_backends(C, both, hexbytes, order, offset, width, raw, as_sint, layout):
    rec = bytes.fromhex(hexbytes)
    recs = np.frombuffer(rec * 5, np.uint8).reshape(5, len(rec))
    if layout == "planar":  # how a transposed frame is read by the C backend
        recs = np.ascontiguousarray(recs.T).T
    bo = ByteOrder.big if order == "big" else ByteOrder.little
    got = both(lambda: (fields.extract(recs, Field("u", offset, width, DataType.uint, bo)),
                        fields.extract(recs, Field("s", offset, width, DataType.sint, bo))))
    for name, (u, s) in got.items():
        assert u.dtype == fields.int_dtype(width, False) and u.tolist() == [raw] * 5, name
        assert s.dtype == fields.int_dtype(width, True) and s.tolist() == [ref_signed(raw, width)] * 5, name
        if as_sint is not None:
            assert int(s[0]) == as_sint
    packed = both(lambda: _packed_uint(len(rec), offset, width, order == "big", raw))
    assert packed["c"] == packed["python"]


def _packed_uint(stride, offset, width, big, raw):
    arr = np.zeros((3, stride), np.uint8)
    fields.pack_uint(arr, offset, width, big, np.array([raw] * 3, np.uint64))
    return arr.tobytes()


# ---------------------------------------------------------------- fields: properties

SETTINGS = settings(max_examples=250, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@st.composite
def field_layouts(draw):
    """A random record stride and one fixed field of any type that fits it."""
    stride = draw(st.integers(1, 24))
    dt = draw(st.sampled_from([DataType.uint, DataType.sint, DataType.float, DataType.bool,
                               DataType.complex, DataType.bytes]))
    bits = 8 * stride
    if dt in (DataType.uint, DataType.sint):
        width = draw(st.integers(1, min(64, bits)))
    elif dt == DataType.float:
        width = draw(st.sampled_from([w for w in (16, 32, 64) if w <= bits] or [None]))
    elif dt == DataType.complex:
        width = draw(st.sampled_from([w for w in (64, 128) if w <= bits] or [None]))
    elif dt == DataType.bool:
        width = 1
    else:
        width = 8 * draw(st.integers(0, stride))
    if width is None:
        dt, width = DataType.uint, draw(st.integers(1, min(64, bits)))
    if dt == DataType.bytes:
        offset = 8 * draw(st.integers(0, stride - width // 8))
    else:
        offset = draw(st.integers(0, bits - width))
    order = draw(st.sampled_from([ByteOrder.little, ByteOrder.big]))
    n = draw(st.integers(0, 70))
    data = draw(st.binary(min_size=n * stride, max_size=n * stride))
    return Field("f", offset, width, dt, order), stride, n, data


def _views(data, n, stride):
    """The same records as row-major, transposed-planar, padded and stepped arrays."""
    rows = np.frombuffer(data, np.uint8, n * stride).reshape(n, stride)
    planar = np.ascontiguousarray(rows.T).T
    padded = np.zeros((n, stride + 3), np.uint8)
    padded[:, 2:2 + stride] = rows
    stepped = np.zeros((n, 2 * stride), np.uint8)  # neither stride is 1: the generic C loop
    stepped[:, ::2] = rows
    return {"rows": rows, "planar": planar, "padded": padded[:, 2:2 + stride], "stepped": stepped[:, ::2]}


def _same_column(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":  # compare bit patterns: NaN payloads must survive
        return a.tobytes() == b.tobytes()
    return np.array_equal(a, b)


@SETTINGS
@given(field_layouts())
def test_extract_c_equals_python_on_random_fields(C, layout):
    field, stride, n, data = layout
    for kind, recs in _views(data, n, stride).items():
        with _backend.using("c"):
            got_c = fields.extract(recs, field)
        with _backend.using("python"):
            got_py = fields.extract(recs, field)
        assert _same_column(got_c, got_py), (kind, field, got_c, got_py)
        if field.data_type in (DataType.uint, DataType.sint) and n:
            big = field.byte_order == ByteOrder.big
            want = [ref_get(data[i * stride:(i + 1) * stride], field.bit_offset, field.bit_width, big)
                    for i in range(n)]
            if field.data_type == DataType.sint:
                want = [ref_signed(v, field.bit_width) for v in want]
            assert got_c.tolist() == want


_INT_DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64, np.bool_]


@SETTINGS
@given(field_layouts(), st.data())
def test_pack_c_equals_python_on_random_fields(C, layout, data):
    field, stride, n, raw = layout
    base = np.frombuffer(raw, np.uint8, n * stride).reshape(n, stride)
    with _backend.using("python"):
        column = fields.extract(np.frombuffer(data.draw(st.binary(min_size=n * stride, max_size=n * stride)),
                                              np.uint8, n * stride).reshape(n, stride), field)
    inputs = [column]
    if field.data_type in (DataType.uint, DataType.sint) and n:
        dtype = data.draw(st.sampled_from(_INT_DTYPES))
        inputs.append(column.astype(dtype))  # narrower / other-signed columns, as a caller may pass
        inputs.append(column.tolist())
    for values in inputs:
        out = {}
        for name in ("c", "python"):
            for kind in ("rows", "planar"):
                recs = np.array(base) if kind == "rows" else np.array(base.T).T
                with _backend.using(name):
                    fields.pack(recs, field, values)
                out[name, kind] = np.ascontiguousarray(recs).tobytes()
        assert len(set(out.values())) == 1, (field, values, out)


@SETTINGS
@given(st.integers(0, 300), st.integers(0, 40), st.data())
def test_transpose_c_equals_python(C, n, s, data):
    raw = data.draw(st.binary(min_size=n * s, max_size=n * s))
    with _backend.using("c"):
        t_c = codecs.transpose(raw, n, s)
        u_c = codecs.untranspose(t_c, n, s)
    with _backend.using("python"):
        t_py = codecs.transpose(raw, n, s)
        u_py = codecs.untranspose(t_py, n, s)
    assert t_c == t_py and u_c == u_py == raw
    assert type(t_c) is type(t_py) is bytes


def test_transpose_rejects_short_input(C):
    with _backend.using("c"), pytest.raises(ValueError):
        codecs.transpose(b"12345", 2, 3)


def test_c_kernels_check_bounds(C):
    recs = np.zeros((4, 3), np.uint8)
    with pytest.raises(ValueError):  # field past the record end
        C.extract(recs, 20, 8, False, 8, np.empty(4, np.uint64))
    with pytest.raises(ValueError):  # wrong output length
        C.extract(recs, 0, 8, False, 8, np.empty(3, np.uint64))
    with pytest.raises(ValueError):  # element too small for the width
        C.extract(recs, 0, 16, False, 1, np.empty(4, np.uint8))
    ro = np.zeros((4, 3), np.uint8)
    ro.setflags(write=False)
    with pytest.raises(ValueError):  # read-only destination
        C.pack(ro, 0, 8, False, 8, np.zeros(4, np.uint64))
    with pytest.raises(TypeError):
        C.extract(np.zeros((4, 3), np.int16), 0, 8, False, 8, np.empty(4, np.uint64))


# ---------------------------------------------------------------- tails

def _tail_schema():
    from logb import AxisKind, AxisMode, Schema

    return Schema(uuid=bytes(16), name="t", record_bits=8, axis_kind=AxisKind.index, axis_mode=AxisMode.implicit,
                  axis_step=1, fields=(Field("a", 0, 8, DataType.uint),
                                       Field("s", 0, 0, DataType.string, flags=1),
                                       Field("b", 0, 0, DataType.bytes, flags=1)))


def _tails(values):
    import struct

    return b"".join(struct.pack("<I", len(v)) + v for v in values)


@pytest.mark.parametrize("region,error", [
    (_tails([b"hi", b"\x00\x01", "ü".encode(), b""]), None),
    (_tails([b"hi", b"\x00\x01", b"x", b""])[:-2], "ends inside a length prefix"),
    (_tails([b"hi", b"\x00\x01", b"x", b"yy"])[:-1], "runs past raw_size"),
    (_tails([b"hi", b"\x00\x01", b"x", b""]) + b"zz", "2 bytes left over"),
    (_tails([b"hi", b"\xff\xfe", b"\xc3", b""]), "invalid UTF-8"),
])
def test_tails_c_equals_python(C, both, region, error):
    schema = _tail_schema()
    data = bytes([7, 9]) + region

    def walk():
        try:
            return batchmod._walk_tails(schema, data, 2, 2)
        except InvalidDataError as exc:
            return str(exc)

    got = both(walk)
    if error is None:
        c, py = got["c"], got["python"]
        assert c.keys() == py.keys() == {"s", "b"}
        assert c["s"].tolist() == py["s"].tolist() == ["hi", "ü"]
        assert c["b"].tolist() == py["b"].tolist() == [b"\x00\x01", b""]
    else:
        assert got["c"] == got["python"] and error in got["c"]


# ---------------------------------------------------------------- whole files

def test_decoded_files_identical_under_both_backends(C, both, tmp_path):
    """A mixed-type stream, each codec and filter: same bytes written, same columns read."""
    from logb import AxisKind, AxisMode, Codec, Schema

    rng = np.random.default_rng(3)
    n = 5000
    schema = Schema(uuid=logb.stream_uuid("t", "mix"), name="mix", record_bits=8 * 27,
                    axis_kind=AxisKind.time, axis_mode=AxisMode.explicit, axis_exp=-6, axis_scale=1, axis_field=0,
                    fields=(Field("ts", 0, 32, DataType.uint),
                            Field("s12", 35, 12, DataType.sint, ByteOrder.big),
                            Field("f32", 48, 32, DataType.float),
                            Field("f16", 80, 16, DataType.float, ByteOrder.big),
                            Field("flag", 99, 1, DataType.bool),
                            Field("u61", 101, 61, DataType.uint, ByteOrder.big),
                            Field("pay", 168, 48, DataType.bytes),
                            Field("txt", 0, 0, DataType.string, flags=1)))
    cols = {"ts": np.sort(rng.integers(0, 1 << 31, n)).astype(np.uint32),
            "s12": rng.integers(-2048, 2048, n), "f32": rng.standard_normal(n).astype(np.float32),
            "f16": rng.standard_normal(n).astype(np.float16), "flag": rng.integers(0, 2, n).astype(bool),
            "u61": rng.integers(0, 1 << 61, n, dtype=np.uint64),
            "pay": rng.integers(0, 256, (n, 6), dtype=np.uint8), "txt": [f"r{i}" * (i % 3) for i in range(n)]}

    def write(codec, transpose):
        path = tmp_path / f"{_backend.current}-{int(codec)}-{transpose}.logb"
        with logb.Writer(str(path), time_base="relative", session="s", wall_clock=lambda: 0,
                         monotonic=lambda: 0.0) as w:
            s = w.add_stream(schema, codec=codec, transpose=transpose)
            for i in range(0, n, 1024):
                s.write_batch({k: v[i:i + 1024] for k, v in cols.items()}, axis_base=100)
        return path.read_bytes()

    def read(raw):
        with logb.LogbFile(raw) as f:
            c = f.stream("mix").columns()
            return f.report.clean, c.axis, {k: v for k, v in c.raw.items()}

    for codec in (Codec.none, Codec.zstd, Codec.lz4, Codec.deflate):
        for transpose in (False, True):
            written = both(lambda: write(codec, transpose))
            assert written["c"] == written["python"], (codec, transpose)
            decoded = both(lambda: read(written["c"]))
            (ok_c, ax_c, raw_c), (ok_py, ax_py, raw_py) = decoded["c"], decoded["python"]
            assert ok_c and ok_py and np.array_equal(ax_c, ax_py)
            for k in raw_py:
                if raw_py[k].dtype == object:
                    assert raw_c[k].tolist() == raw_py[k].tolist()
                else:
                    assert _same_column(raw_c[k], raw_py[k]), k
            assert np.array_equal(raw_c["s12"], cols["s12"]) and np.array_equal(raw_c["pay"], cols["pay"])
            assert raw_c["u61"].tolist() == cols["u61"].tolist()

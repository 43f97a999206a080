"""The C sources in cbridge/ as C: the portability rules they promise (C99,
only <stdint.h>/<stddef.h>, no allocation, no writable static data, const
tables), the firmware builds for Cortex-M0+ and Cortex-M4F, a plain-C
self-test natively and on aarch64 under qemu (the ARMv8 CRC path), and the
firmware configuration (generic loops, bytewise CRC table) against the
Python reference through ctypes.

Cross compilers come from Debian (tools/setup.d/20-cbridge.sh installs them on
`./run` when it can); where one is missing its tests skip and say so."""

import ctypes
import importlib.util
import pathlib
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import handmade
from logb import _backend, _kernels, fields

pytestmark = pytest.mark.single_backend

ROOT = pathlib.Path(__file__).resolve().parent.parent
CB = ROOT / "cbridge"
PORTABLE = ["crc32c.c", "bits.c", "transpose.c", "tails.c", "scan.c", "zstdframe.c"]
HOST_ONLY = ["crc32c_hw.c"]
HEADERS = ["logb_cbridge.h", "crc32c_tables.h"]
STRICT = ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"]

FIRMWARE = {
    "cortex-m0plus": ["-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft"],
    "cortex-m4f": ["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
}
FIRMWARE_FLAGS = ["-Os", *STRICT, "-ffreestanding", "-ffunction-sections", "-fdata-sections"]

HOST_CC = shutil.which("cc") or shutil.which("gcc")
ARM_CC = shutil.which("arm-none-eabi-gcc")
A64_CC = shutil.which("aarch64-linux-gnu-gcc")
QEMU_A64 = shutil.which("qemu-aarch64")
NO_ARM = "arm-none-eabi-gcc is not installed (Debian: apt-get install gcc-arm-none-eabi; ./run does when it can)"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def _sections(size_tool, obj):
    """{section: bytes} from `size -A`."""
    out = {}
    for line in _run([size_tool, "-A", obj]).splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            out[parts[0]] = out.get(parts[0], 0) + int(parts[1])
    return out


def _writable(sections):
    return {k: v for k, v in sections.items() if v and (k.startswith(".data") or k.startswith(".bss"))}


# ---------------------------------------------------------------- the sources

def test_tables_are_what_the_generator_writes():
    gen = _load("gen_tables", CB / "gen_tables.py")
    assert (CB / "crc32c_tables.h").read_text() == gen.render(), "run python cbridge/gen_tables.py"


_FUNCTION = re.compile(r"\b(logb_\w+)\s*\(")
_DEFINE = re.compile(r"#define\s+(LOGB_\w+)\s+\(?(-?\w+)\)?")


def test_cdef_is_the_header():
    """The generated cdef declares every function and constant the header does, and nothing else."""
    header = (CB / "logb_cbridge.h").read_text()
    cdef = _load("cffi_build", CB / "cffi_build.py").CDEF
    assert set(_FUNCTION.findall(header)) == set(_FUNCTION.findall(cdef))
    assert set(re.findall(r"#define (LOGB_\w+) \.\.\.", cdef)) == set(dict(_DEFINE.findall(header)))
    assert "extern" not in cdef and "/*" not in cdef and "#include" not in cdef


def test_cdef_filter_keeps_declarations_and_drops_the_rest():
    build = _load("cffi_build", CB / "cffi_build.py")
    cdef = build.cdef_from_header(
        "/* a\n * comment */\n#ifndef G\n#define G\n#include <stdint.h>\n#ifdef __cplusplus\n"
        'extern "C" {\n#endif\n#define X_MAX (-1) /* why */\nint f(int a, // the a\n      int b);\n'
        "#ifdef __cplusplus\n}\n#endif\n#endif\n")
    assert cdef.split("\n") == ["#define X_MAX ...", "int f(int a, ", "      int b);", ""]


def test_built_module_has_the_header_api_and_values():
    c = _backend.load_c()
    if c is None:
        pytest.skip(f"the C backend is not built: {_backend.load_error}")
    header = (CB / "logb_cbridge.h").read_text()
    for name in _FUNCTION.findall(header):
        assert callable(getattr(c.lib, name)), name
    for name, value in _DEFINE.findall(header):
        assert getattr(c.lib, name) == int(value, 0), name


def test_kernel_vocabulary_is_the_headers():
    """The constants the Python side of every backend uses are cbridge's."""
    from logb import _kernels

    header = dict(_DEFINE.findall((CB / "logb_cbridge.h").read_text()))
    for name in ("KIND_SIZE_MASK", "KIND_SIGNED", "KIND_BOOL", "TAIL_PREFIX", "TAIL_PAST_END", "TAIL_LEFTOVER"):
        assert getattr(_kernels, name) == int(header["LOGB_" + name], 0), name
    assert _kernels.TAIL_OK == int(header["LOGB_OK"], 0)


@pytest.mark.parametrize("name", PORTABLE + HEADERS)
def test_portable_sources_need_only_stdint_and_stddef(name):
    text = (CB / name).read_text()
    system = set(re.findall(r"#\s*include\s*<([^>]+)>", text))
    local = set(re.findall(r'#\s*include\s*"([^"]+)"', text))
    assert system <= {"stdint.h", "stddef.h"}, system
    assert local <= set(HEADERS), local
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    assert not re.search(r"\b(malloc|calloc|realloc|free|memcpy|memset|memmove|printf|abort)\s*\(", code)
    # no writable static data: every static that is not a function is const
    assert not re.search(r"^\s*static\s+(?!const\b)[^;{(=]*[=;]", code, flags=re.M), name


@pytest.mark.skipif(HOST_CC is None, reason="no host C compiler")
@pytest.mark.parametrize("name", PORTABLE + HOST_ONLY)
@pytest.mark.parametrize("opt", ["-O2", "-Os"])
def test_host_build_is_strict_c99_without_writable_data(tmp_path, name, opt):
    obj = tmp_path / (name + ".o")
    _run([HOST_CC, opt, *STRICT, "-I", CB, "-c", CB / name, "-o", obj])
    assert not _writable(_sections("size", obj))


# ---------------------------------------------------------------- firmware builds

def _firmware_objects(tmp_path, target, slices):
    objs = []
    for name in PORTABLE:
        obj = tmp_path / f"{target}-{slices}-{name}.o"
        _run([ARM_CC, *FIRMWARE[target], *FIRMWARE_FLAGS, f"-DLOGB_CRC32C_SLICES={slices}", "-I", CB,
              "-c", CB / name, "-o", obj])
        objs.append(obj)
    return objs


@pytest.mark.skipif(ARM_CC is None, reason=NO_ARM)
@pytest.mark.parametrize("slices", [8, 1])
@pytest.mark.parametrize("target", list(FIRMWARE))
def test_firmware_build(tmp_path, target, slices):
    objs = _firmware_objects(tmp_path, target, slices)
    linked = tmp_path / "cbridge.o"
    _run(["arm-none-eabi-ld", "-r", *objs, "-o", linked])
    sec = _sections("arm-none-eabi-size", linked)
    assert not _writable(sec), sec
    rodata = sum(v for k, v in sec.items() if k.startswith(".rodata"))
    assert rodata == 4 * 256 * slices  # the CRC tables and nothing else
    text = sum(v for k, v in sec.items() if k.startswith(".text"))
    assert 0 < text < 8192, text
    undefined = _run(["arm-none-eabi-nm", "-u", linked]).split()
    undefined = {u for u in undefined if u != "U"}
    # Only libgcc's EABI helpers (64-bit shifts on Thumb-1): no libc, no allocator.
    assert all(u.startswith("__aeabi_") for u in undefined), undefined


# ---------------------------------------------------------------- self-test in C

def _selftest(cc, tmp_path, extra, run=()):
    exe = tmp_path / "selftest"
    sources = [CB / "test" / "selftest.c", *(CB / s for s in PORTABLE)]
    if "-DLOGB_NO_HW" not in extra:
        sources.append(CB / "crc32c_hw.c")
    _run([cc, *STRICT, *extra, "-I", CB, *sources, "-o", exe])
    out = _run([*run, exe])
    assert re.search(r"selftest: \d+ checks, 0 failed", out), out
    return out


@pytest.mark.skipif(HOST_CC is None, reason="no host C compiler")
def test_selftest_host(tmp_path):
    out = _selftest(HOST_CC, tmp_path, ["-O2"])
    c = _backend.load_c()
    if c is not None and c.hw_available:
        assert f"hw={c.hw_name}" in out


@pytest.mark.skipif(HOST_CC is None, reason="no host C compiler")
def test_selftest_firmware_configuration(tmp_path):
    _selftest(HOST_CC, tmp_path, ["-Os", "-DLOGB_SMALL", "-DLOGB_CRC32C_SLICES=1", "-DLOGB_NO_HW"])


@pytest.mark.skipif(A64_CC is None or QEMU_A64 is None,
                    reason="aarch64-linux-gnu-gcc or qemu-aarch64 is not installed (Debian: gcc-aarch64-linux-gnu, "
                           "qemu-user; ./run installs them when it can)")
def test_selftest_aarch64_under_qemu_uses_armv8_crc(tmp_path):
    out = _selftest(A64_CC, tmp_path, ["-O2", "-static"], run=[QEMU_A64, "-cpu", "cortex-a53"])
    assert "hw=armv8-crc" in out


# ---------------------------------------------------------------- firmware configuration vs Python

@pytest.fixture(scope="module")
def small_lib(tmp_path_factory):
    if HOST_CC is None:
        pytest.skip("no host C compiler")
    so = tmp_path_factory.mktemp("small") / "libcbridge_small.so"
    _run([HOST_CC, "-shared", "-fPIC", "-Os", "-DLOGB_SMALL", "-DLOGB_CRC32C_SLICES=1", *STRICT, "-I", CB,
          *(CB / s for s in PORTABLE), "-o", so])
    lib = ctypes.CDLL(str(so))
    sz, u32, p = ctypes.c_size_t, ctypes.c_uint32, ctypes.c_void_p
    lib.logb_crc32c_sw.restype = u32
    lib.logb_crc32c_sw.argtypes = [u32, p, sz]
    lib.logb_extract.argtypes = [p, sz, sz, sz, u32, u32, ctypes.c_int, ctypes.c_int, p, sz]
    lib.logb_pack.argtypes = [p, sz, sz, sz, u32, u32, ctypes.c_int, ctypes.c_int, p, sz]
    return lib


@st.composite
def layouts(draw):
    stride = draw(st.integers(1, 12))
    width = draw(st.integers(1, min(64, 8 * stride)))
    offset = draw(st.integers(0, 8 * stride - width))
    n = draw(st.integers(1, 40))
    data = draw(st.binary(min_size=n * stride, max_size=n * stride))
    return stride, offset, width, draw(st.booleans()), n, data


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(layouts(), st.sampled_from(["rows", "planar", "stepped"]))
def test_firmware_configuration_equals_python(small_lib, layout, kind):
    stride, offset, width, big, n, data = layout
    rows = np.frombuffer(data, np.uint8).reshape(n, stride)
    if kind == "planar":
        recs = np.ascontiguousarray(rows.T).T
    elif kind == "stepped":  # neither stride is 1: the fully generic loop
        wide = np.zeros((n, 2 * stride), np.uint8)
        wide[:, ::2] = rows
        recs = wide[:, ::2]
    else:
        recs = rows
    rs, bs = recs.strides
    with _backend.using("python"):
        want = fields.extract_uint(rows, offset, width, big)
        packed_want = np.zeros((n, stride), np.uint8)
        fields.pack_uint(packed_want, offset, width, big, want)
    got = np.empty(n, np.uint64)
    assert small_lib.logb_extract(recs.ctypes.data, n, rs, bs, offset, width, big, 8, got.ctypes.data, 8) == 0
    assert got.tolist() == want.tolist()
    out = np.zeros((n, 2 * stride), np.uint8)[:, ::2] if kind == "stepped" else np.zeros((n, stride), np.uint8)
    if kind == "planar":
        out = np.zeros((stride, n), np.uint8).T
    assert small_lib.logb_pack(out.ctypes.data, n, out.strides[0], out.strides[1], offset, width, big, 8,
                               got.ctypes.data, 8) == 0
    assert np.ascontiguousarray(out).tobytes() == packed_want.tobytes()
    assert small_lib.logb_crc32c_sw(0, rows.ctypes.data, rows.size) == \
        _backend_crc_python(rows.tobytes())


def _backend_crc_python(data):
    from logb.crc import crc32c_pure

    return crc32c_pure(data)


# ---------------------------------------------------------------- the frame walk (scan.c, issue 13)

def _walk_reference(data, pos, base):
    """The frame table scan.c promises, spelled out with the test's own CRC."""
    rows = []
    while len(data) - pos >= 8:
        plen, ftype, flags, sid = struct.unpack_from("<IBBH", data, pos)
        end = pos + 12 + plen
        if end > len(data):
            return rows, pos, _kernels.SCAN_PAST_END
        if handmade._crc(data[pos : end - 4]) != struct.unpack_from("<I", data, end - 4)[0]:
            return rows, pos, _kernels.SCAN_CRC
        rows.append((base + pos, plen, sid, ftype, flags))
        pos = end
    return rows, pos, _kernels.SCAN_END


@st.composite
def frame_runs(draw):
    """Frames in a row after a few stray bytes, then damage: a flipped byte, a
    cut, a hostile length, junk or none; and where to start walking."""
    frames = [handmade.frame(draw(st.integers(0, 255)), draw(st.binary(max_size=40)), draw(st.integers(0, 0xFFFF)),
                             draw(st.integers(0, 255))) for _ in range(draw(st.integers(0, 8)))]
    data = bytearray(draw(st.binary(max_size=5)) + b"".join(frames))
    damage = draw(st.sampled_from(["none", "flip", "cut", "length", "junk"]))
    if data and damage == "flip":
        data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
    elif damage == "cut":
        del data[draw(st.integers(0, len(data))):]
    elif damage == "length":
        data += struct.pack("<IBBH", draw(st.sampled_from([0xFFFFFFFF, 0xFFFFFFF4, 1 << 31, 100])), 0x11, 0, 1)
    elif damage == "junk":
        data += draw(st.binary(max_size=30))
    return bytes(data), draw(st.integers(0, 5)), draw(st.integers(0, 1 << 40))


def _c_kernels():
    c = _backend.load_c()
    if c is None:
        pytest.fail(f"the C backend should load but does not: {_backend.load_error}", pytrace=False)
    return c


def _scan_all(kernels, data, pos, base, cap):
    """scan_frames called again while the table fills, as the scanner calls it."""
    rows = []
    while True:
        table, pos, status = kernels.scan_frames(data, pos, base, cap)
        rows += table.tolist()
        if status != _kernels.SCAN_FULL:
            return rows, pos, status


@settings(max_examples=300, deadline=None)
@given(frame_runs(), st.sampled_from([1, 2, 3, _kernels.SCAN_CAP]))
def test_scan_kernel_tables_are_the_python_twins_and_the_reference(run, cap):
    data, pos, base = run
    pos = min(pos, len(data))
    want = _walk_reference(data, pos, base)
    c = _c_kernels()
    assert _scan_all(_backend.PY, data, pos, base, cap) == want
    try:
        for mode in ("sw", "auto"):  # slice-by-8 and the CRC instruction, through the function pointer
            c.set_crc(mode)
            assert _scan_all(c, data, pos, base, cap) == want
    finally:
        c.set_crc("auto")


def test_scan_kernel_reports_a_full_table_and_resumes():
    data = b"".join(handmade.frame(0x20, bytes(i)) for i in range(5))
    for kernels in (_c_kernels(), _backend.PY):
        table, stop, status = kernels.scan_frames(data, 0, 0, 2)
        assert (table["payload_len"].tolist(), stop, status) == ([0, 1], 25, _kernels.SCAN_FULL)
        table, stop, status = kernels.scan_frames(data, stop, 0, 10)
        assert (table["payload_len"].tolist(), stop, status) == ([2, 3, 4], len(data), _kernels.SCAN_END)


@pytest.mark.parametrize("pos, base, cap", [(-1, 0, 1), (11, 0, 1), (0, -1, 1), (0, 0, 0)])
def test_scan_kernel_refuses_arguments_outside_the_buffer(pos, base, cap):
    for kernels in (_c_kernels(), _backend.PY):
        with pytest.raises(ValueError):
            kernels.scan_frames(bytes(10), pos, base, cap)


def test_scan_kernel_constants_are_the_headers():
    header = dict(_DEFINE.findall((CB / "logb_cbridge.h").read_text()))
    for name in ("SCAN_END", "SCAN_PAST_END", "SCAN_CRC", "SCAN_FULL"):
        assert getattr(_kernels, name) == int(header["LOGB_" + name], 0), name
    assert _c_kernels().ffi.sizeof("logb_frame") == _kernels.FRAME_DTYPE.itemsize


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(frame_runs())
def test_scan_firmware_configuration_equals_the_reference(small_lib, run):
    data, pos, base = run
    pos = min(pos, len(data))
    fn = small_lib.logb_scan_frames
    sz = ctypes.c_size_t
    fn.restype = sz
    fn.argtypes = [ctypes.c_char_p, sz, sz, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p, sz,
                   ctypes.POINTER(sz), ctypes.POINTER(ctypes.c_int)]
    table = np.zeros(16, _kernels.FRAME_DTYPE)
    stop, status = sz(), ctypes.c_int()
    n = fn(data, len(data), pos, base, ctypes.cast(small_lib.logb_crc32c_sw, ctypes.c_void_p), table.ctypes.data,
           len(table), ctypes.byref(stop), ctypes.byref(status))
    assert (table[:n].tolist(), stop.value, status.value) == _walk_reference(data, pos, base)

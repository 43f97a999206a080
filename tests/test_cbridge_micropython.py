"""The MicroPython glue of the C kernels (cbridge/micropython/) in real
MicroPython 1.28 builds (tools/micropython_build.py):

- the unix port's built-in `logbc` (user C module, make port) and the x64
  natmod `logbc.mpy` imported by that port run tests/cbridge_mp/check_logbc.py
  on random cases; every result is compared with the host's pure-Python
  kernels (logb._pykernels) and crcmod;
- the qemu Cortex-M3 image's built-in `logbc` and the armv6m natmod (Thumb-1
  runs on the M3) run the same script on fewer cases; the armv7emsp natmod is
  built and linked, its header checked;
- the CMake user-module file goes through MicroPython's own py/usermod.cmake
  and its sources are compiled with the include folders it declares;
- the commands cbridge/micropython/README.md shows are the ones the build
  tool runs.

A build that fails is a test failure; only a missing build tool skips."""

import json
import pathlib
import random
import re
import shutil
import subprocess
import sys

import crcmod
import numpy as np
import pytest

from logb._backend import PY
from logb._kernels import KIND_BOOL, KIND_SIGNED

sys.path.insert(0, str(pathlib.Path(__file__).parent / "firmware"))
import mpreal  # noqa: E402
from mpreal import micropython_build as mb  # noqa: E402

pytestmark = pytest.mark.single_backend

ROOT = pathlib.Path(__file__).resolve().parent.parent
MP = ROOT / "cbridge" / "micropython"
CHECK = pathlib.Path(__file__).parent / "cbridge_mp" / "check_logbc.py"
CMAKE_PROJECT = pathlib.Path(__file__).parent / "cbridge_mp" / "cmake"
README = MP / "README.md"

# Independent oracle, as tests/test_crc.py: built from the polynomial.
oracle = crcmod.mkCrcFun(0x11EDC6F41, rev=True, initCrc=0, xorOut=0xFFFFFFFF)
NAMES = ["BOOL", "SIGNED", "crc32c", "crc32c_update", "extract", "pack", "transpose", "untranspose"]
ST_SENTINEL = 0xABCD  # st[2]: crc32c_update owns st[0] and st[1] only


# ---------------------------------------------------------------- cases and what the host says of them
def crc_case(rng, size, data=None):
    data = rng.randbytes(size) if data is None else data
    size = len(data)
    inner = sorted(rng.randint(0, size) for _ in range(rng.randint(0, 5)))  # repeats: empty pieces
    reg = oracle(data) ^ 0xFFFFFFFF  # the register before the final xor
    return ({"op": "crc", "data": data.hex(), "cuts": [0, *inner, size]},
            {"crc": oracle(data), "chained": oracle(data), "st": [reg & 0xFFFFFF, reg >> 24, ST_SENTINEL]})


def _elements(buf, n, stride, dtype):
    return np.array([int.from_bytes(buf[i * stride:i * stride + dtype.itemsize], "little",
                                    signed=dtype.kind == "i") for i in range(n)], dtype)


def field_case(rng, op, max_n):
    """One field of n random records, row-major (rs=S, bs=1) or planar (rs=1,
    bs=n), to or from elements `stride` bytes apart in a buffer whose other
    bytes are random and must stay as they are."""
    width = rng.choice([1, 7, 8, 9, 16, 17, 31, 32, 33, 57, 58, 63, 64, rng.randint(1, 64)])
    big = rng.random() < 0.5
    if op == "extract" and width == 1 and rng.random() < 0.3:
        kind = 1 | KIND_BOOL
    else:
        es = rng.choice([e for e in (1, 2, 4, 8) if op == "pack" or 8 * e >= width])
        kind = es | (KIND_SIGNED if rng.random() < 0.5 else 0)
    es = kind & 0x0F
    size = (width + 7) // 8 + rng.randint(0, 3)
    off = rng.randint(0, 8 * size - width)
    n = rng.randint(0, max_n)
    planar = rng.random() < 0.5
    stride = es * rng.choice([1, 1, 2, 3])
    io = bytearray(rng.randbytes((n - 1) * stride + es + rng.randint(0, 3) if n else rng.randint(0, 3)))
    records = np.frombuffer(rng.randbytes(n * size), np.uint8).reshape(n, size).copy()
    layout = (1, n) if planar else (size, 1)

    def as_passed(recs):
        return (recs.T if planar else recs).tobytes()

    case = {"op": op, "rec": as_passed(records).hex(), "io": io.hex(), "n": n, "rs": layout[0], "bs": layout[1],
            "off": off, "width": width, "big": int(big), "kind": kind, "stride": stride}
    signed = kind & KIND_SIGNED
    dtype = np.dtype(f"{'i' if signed else 'u'}{es}")
    if op == "extract":
        out = PY.extract(records, off, width, big, kind, np.zeros(n, dtype))
        want_io = bytearray(io)
        for i, v in enumerate(out):
            want_io[i * stride:i * stride + es] = v.astype(f"<{dtype.str[1:]}").tobytes()
        return case, {"rec": case["rec"], "io": want_io.hex()}
    PY.pack(records, off, width, big, kind, _elements(io, n, stride, dtype))
    return case, {"rec": as_passed(records).hex(), "io": io.hex()}


def transpose_case(rng, op, max_n):
    n, s, extra = rng.randint(0, max_n), rng.randint(0, 12), rng.randint(0, 3)
    src = rng.randbytes(n * s + extra)
    want = getattr(PY, op)(src[:n * s], n, s) + bytes(extra)
    return {"op": op, "src": src.hex(), "dst": n * s + extra, "n": n, "s": s}, {"dst": want.hex()}


def b(n):
    return {"b": bytes(range(n)).hex()}


def st(code="I", items=(0xFFFFFF, 0xFF)):
    return {code: list(items)}


# Calls the glue must refuse (ValueError) before any kernel runs.
REFUSED = [
    ("crc32c_update", [b(10), 5, 4, st()]),  # start after end
    ("crc32c_update", [b(10), -1, 4, st()]),
    ("crc32c_update", [b(10), 0, 11, st()]),  # end past the buffer
    ("crc32c_update", [b(10), 0, 1, st("I", [0xFFFFFF])]),  # one item
    ("crc32c_update", [b(10), 0, 1, st("H", [0xFFFF, 0xFF, 0, 0])]),  # enough bytes, wrong type
    ("crc32c_update", [b(10), 0, 1, st("i")]),  # signed items
    ("crc32c_update", [b(10), 0, 1, b(8)]),  # a bytearray
    ("extract", [b(16), 4, 4, 1, 0, 32, 0, 4, b(15), 4]),  # out one byte short
    ("extract", [b(15), 4, 4, 1, 0, 32, 0, 4, b(16), 4]),  # records one byte short
    ("extract", [b(16), 4, 4, 1, 0, 0, 0, 4, b(16), 4]),  # width 0
    ("extract", [b(16), 1, 16, 1, 0, 65, 0, 8, b(8), 8]),  # width 65
    ("extract", [b(16), 4, 4, 1, 0, 32, 0, 3, b(16), 4]),  # element size 3
    ("extract", [b(16), 4, 4, 1, 0, 17, 0, 2, b(16), 4]),  # 17 bits do not fit 2 bytes
    ("extract", [b(16), -1, 4, 1, 0, 8, 0, 1, b(16), 1]),  # negative count
    ("pack", [b(16), 4, 4, 1, 0, 1, 0, 1 | KIND_BOOL, b(4), 1]),  # bool is extract-only
    ("pack", [b(16), 4, 4, 1, 0, 32, 0, 4, b(15), 4]),  # values one byte short
    ("transpose", [b(11), b(12), 3, 4]),  # source short
    ("untranspose", [b(12), b(11), 3, 4]),  # destination short
]


def make_cases(seed, max_n, crc_sizes):
    rng = random.Random(seed)
    pairs = [({"op": "names"}, None)]
    pairs.append(crc_case(rng, 0, b"123456789"))
    assert pairs[-1][1]["crc"] == 0xE3069283  # the check value of CRC-32C: the oracle is the right CRC
    pairs += [crc_case(rng, size) for size in crc_sizes]
    pairs += [crc_case(rng, rng.randint(0, 300)) for _ in range(8)]
    for op in ("extract", "pack"):
        pairs += [field_case(rng, op, max_n) for _ in range(60)]
    for op in ("transpose", "untranspose"):
        pairs += [transpose_case(rng, op, max_n) for _ in range(10)]
    pairs += [({"op": "raises", "fn": fn, "args": args}, {"raised": "ValueError", "untouched": True})
              for fn, args in REFUSED]
    return pairs


def check(pairs, results, file):
    """Every case's result is the host's; `file` is what the module's __file__ must match."""
    assert len(results) == len(pairs), results[-3:]
    for (case, want), got in zip(pairs, results):
        if case["op"] == "names":
            assert got["names"] == NAMES and got["kinds"] == [KIND_SIGNED, KIND_BOOL]
            assert file(got["file"]), got["file"]
        else:
            assert got == want, case


def parse(out):
    lines = out.strip().splitlines()
    assert lines and lines[-1] == "done", out[-3000:]
    return [json.loads(line) for line in lines[:-1]]


CRC_SIZES = [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4099]


@pytest.fixture(scope="module")
def unix_cases():
    return make_cases(20240515, 40, CRC_SIZES)


@pytest.fixture(scope="module")
def qemu_cases():
    return make_cases(20240516, 6, [0, 9, 64, 300])


def run_unix_check(tmp_path, module, pairs):
    (tmp_path / "cases.json").write_text(json.dumps([c for c, _ in pairs]))
    r = mpreal.run_unix(CHECK, module, tmp_path / "cases.json", lib=tmp_path, heap="8M")
    return parse(r.stdout)


# ---------------------------------------------------------------- unix port (x86-64)
def test_unix_builtin_logbc_matches_the_host_kernels(tmp_path, unix_cases):
    check(unix_cases, run_unix_check(tmp_path, "logbc", unix_cases), lambda f: f is None)


def test_x64_natmod_matches_the_host_kernels(tmp_path, unix_cases):
    # another name than the built-in module's, which would shadow it
    shutil.copy(mpreal.natmod("x64"), tmp_path / "logbc_nat.mpy")
    check(unix_cases, run_unix_check(tmp_path, "logbc_nat", unix_cases),
          lambda f: f == str(tmp_path / "logbc_nat.mpy"))


def test_the_check_script_catches_a_wrong_result(tmp_path, unix_cases):
    # the comparison is not vacuous: a corrupted expectation fails it
    results = run_unix_check(tmp_path, "logbc", unix_cases[:2])
    case, want = unix_cases[1]
    with pytest.raises(AssertionError):
        check([unix_cases[0], (case, dict(want, crc=want["crc"] ^ 1))], results, lambda f: f is None)


def test_heap_lock_refuses_allocation(tmp_path):
    # heap_lock() really refuses allocation in this build: what makes the crc cases' locked loop a proof
    script = tmp_path / "locked.py"
    script.write_text("import micropython\nmicropython.heap_lock()\ntry:\n    x = bytearray(100)\n"
                      "    print('allocated')\nexcept MemoryError:\n    print('refused')\n"
                      "micropython.heap_unlock()\n")
    assert mpreal.run_unix(script, lib=tmp_path).stdout.strip() == "refused"


def test_firmware_crc_hook_picks_the_built_in_logbc(tmp_path):
    # firmware/logb/crc.py (as .mpy, as deployed) chooses logbc.crc32c_update over viper
    data = random.Random(7).randbytes(1000)
    script = tmp_path / "hook.py"
    script.write_text(f"import logb.crc as c\nd = {data!r}\nprint(c.backend, c.crc32c(d[500:], c.crc32c(d[:500])))\n")
    assert mpreal.run_unix(script).stdout.split() == ["c", str(oracle(data))]


def test_make_port_objects_stay_in_the_build_folder():
    # py.mk puts a source listed outside USER_C_MODULES beside the port (ports/unix/crc32c.o),
    # where every variant and board would share it; logbc/kernels.c keeps them inside build-*/
    mpreal.built("unix")
    mpreal.built("qemu")
    tree = mb.paths()["tree"]
    for port in ("unix", "qemu"):
        assert not list((tree / "ports" / port).glob("*.o")), port
    assert list((tree / "ports" / "unix" / "build-standard" / "logbc").glob("kernels.o"))


# ---------------------------------------------------------------- ARM natmods and the Cortex-M3 image
def native_arch(name):
    """MicroPython's number for an .mpy arch (py/persistentcode.h's enum, in order)."""
    src = (mb.paths()["tree"] / "py" / "persistentcode.h").read_text()
    body = src[src.index("MP_NATIVE_ARCH_NONE = 0"):]
    return re.findall(r"MP_NATIVE_ARCH_(\w+)", body[:body.index("}")]).index(name.upper())


def mpy_header(path):
    h = pathlib.Path(path).read_bytes()[:4]
    src = (mb.paths()["tree"] / "py" / "persistentcode.h").read_text()
    version = int(re.search(r"#define MPY_VERSION (\d+)", src).group(1))
    sub = int(re.search(r"#define MPY_SUB_VERSION (\d+)", src).group(1))
    assert h[:1] == b"M" and h[1] == version and h[2] & 3 == sub, h
    return h[2] >> 2


@pytest.mark.parametrize("arch", mb.NATMOD_ARCHS)
def test_natmod_is_built_for_its_arch(arch):
    path = mpreal.natmod(arch)
    assert mpy_header(path) == native_arch(arch)
    log = (path.parent / "build.log").read_text()
    text = int(re.search(r"text size:\s+(\d+)", log).group(1))
    print(f"logbc.mpy {arch}: {path.stat().st_size} bytes, text {text}")
    assert 0 < text < path.stat().st_size


def qemu_script(path, module, pairs, prefix=""):
    path.write_text(prefix + f"ARGS = ({module!r}, {json.dumps([c for c, _ in pairs])!r})\n" + CHECK.read_text())
    return path


def test_qemu_builtin_logbc(qemu_cases, tmp_path):
    out = mpreal.run_qemu(qemu_script(tmp_path / "builtin.py", "logbc", qemu_cases))
    check(qemu_cases, parse(out), lambda f: f is None)


# A filesystem in RAM for the qemu image (which has none): enough of the VFS
# protocol for import to stat and read one file.
MEMFS = """
import io, sys, vfs
from binascii import unhexlify
class MemFS:
    def __init__(self, files): self.files = files
    def mount(self, readonly, mkfs): pass
    def umount(self): pass
    def chdir(self, path): pass
    def stat(self, path):
        data = self.files.get(path.lstrip('/'))
        if data is None: raise OSError(2)
        return (0x8000, 0, 0, 0, 0, 0, len(data), 0, 0, 0)
    def open(self, path, mode): return io.BytesIO(self.files[path.lstrip('/')])
vfs.mount(MemFS({'logbc_nat.mpy': unhexlify(MPY)}), '/mem')
sys.path.append('/mem')
del MPY
"""


def test_qemu_runs_the_armv6m_natmod(qemu_cases, tmp_path):
    mpy = mpreal.natmod("armv6m").read_bytes()
    script = qemu_script(tmp_path / "natmod.py", "logbc_nat", qemu_cases, f"MPY = {mpy.hex()!r}\n" + MEMFS)
    check(qemu_cases, parse(mpreal.run_qemu(script)), lambda f: f == "/mem/logbc_nat.mpy")


# ---------------------------------------------------------------- CMake ports
def cmake_user_c_modules(logb):
    """USER_C_MODULES for a CMake port (the README's, under a root)."""
    return logb / "cbridge" / "micropython" / "micropython.cmake"


def test_cmake_user_module_compiles_through_usermod_cmake(tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    mpreal.built("unix")  # its configuration and generated qstr headers stand in for a port's
    tree = mb.paths()["tree"]
    unix = tree / "ports" / "unix"
    port_includes = ";".join(map(str, (unix, unix / "build-standard", unix / "variants" / "standard")))
    r = subprocess.run(["cmake", "-S", str(CMAKE_PROJECT), "-B", str(tmp_path), f"-DMICROPY_DIR={tree}",
                        f"-DUSER_C_MODULES={cmake_user_c_modules(ROOT)}", f"-DPORT_INCLUDES={port_includes}"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    listed = re.search(r"usermod sources: (.*)", r.stdout).group(1).split(";")
    # the same sources as the make ports'
    mk = (MP / "logbc" / "micropython.mk").read_text()
    assert sorted(pathlib.Path(p).name for p in listed) == sorted(re.findall(r"\$\(LOGBC_MOD_DIR\)/(\w+\.c)", mk))
    r = subprocess.run(["cmake", "--build", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    syms = subprocess.run(["nm", "-g", "--defined-only", str(tmp_path / "libfirmware.a")],
                          capture_output=True, text=True, check=True).stdout
    for sym in ("logbc_user_cmodule", "logb_crc32c_sw", "logb_extract", "logb_pack", "logb_transpose"):
        assert re.search(rf" {sym}$", syms, re.M), sym


# ---------------------------------------------------------------- the README shows what is run
LOGB, MPDIR = pathlib.Path("/path/to/logb"), pathlib.Path("/path/to/micropython")


def readme_sh_blocks():
    text = README.read_text()
    return [block.strip().splitlines() for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def test_readme_make_commands_are_the_build_tools():
    blocks = readme_sh_blocks()
    steps = mb.make_steps(MPDIR, LOGB)
    assert {t for t, _, _ in steps} == set(mb.TARGETS)
    for target, folder, args in steps:
        line = " ".join(["make", *args])
        where = [(lines, i) for lines in blocks for i, x in enumerate(lines) if x == line]
        assert where, f"README lacks the {target} build: {line}"
        lines, i = where[0]
        if folder is None:  # a natmod: a fresh folder holding the one-line Makefile
            fresh = max(j for j in range(i) if re.fullmatch(r"mkdir (\S+) && cd \1", lines[j]))
            assert f"echo '{mb.natmod_makefile(LOGB).strip()}' > Makefile" in lines[fresh:i]
            assert f"pip install {' '.join(mb.NATMOD_PYPI)}" in lines[:fresh]
        else:
            before = [x for x in lines[:i] if x.startswith("cd ")]
            assert before and before[-1] == f"cd {folder}", (target, before)


def test_readme_qemu_and_cmake_commands_are_the_tests():
    lines = [x for block in readme_sh_blocks() for x in block]
    elf = mb.paths(k="k")["qemu"].relative_to(mb.paths(k="k")["tree"] / "ports" / "qemu")
    assert any(f'"execpty:{mpreal.QEMU_CMD.format(elf=elf)}"' in x for x in lines)
    assert any(x.startswith("make ") and f"USER_C_MODULES={cmake_user_c_modules(LOGB)}" in x.split()
               for x in lines)

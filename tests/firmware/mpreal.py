"""Real MicroPython v1.28 for the firmware tests and benchmarks: the unix
port (with the logbc C module) and the qemu Cortex-M3 image (logbc built in,
firmware/logb frozen), as tools/micropython_build.py builds them.

A test that needs one gets it built on demand (incremental, usually a no-op:
the set-up step built it); it skips only when a build tool itself is missing
and says which, and fails on any other build error."""

import os
import pathlib
import subprocess
import sys

from fwload import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import micropython_build  # noqa: E402

# sleep=off: while the guest waits in WFI the virtual clock jumps to the next timer instead of
# following the host's clock, so counts do not depend on when the script arrived over the UART.
QEMU_CMD = ("qemu-system-arm -machine mps2-an385 -icount shift=0,sleep=off -nographic -monitor null "
            "-semihosting -serial pty -kernel {elf}")


def built(target):
    """The artefact of a build target (see micropython_build.TARGETS), built if stale."""
    import pytest  # here: benchmarks import this module without pytest

    try:
        p = micropython_build.ensure(target)
    except micropython_build.ToolMissing as e:
        pytest.skip(f"MicroPython {target}: {e}")
    except micropython_build.BuildError as e:
        pytest.fail(f"MicroPython {target} build failed: {e}")
    return p[target]


def unix_binary(bits=64):
    """The x86-64 unix port, or (bits=32) the i386 one: a board's object sizes,
    small ints below 2**30 and ticks wrapping at 2**30."""
    return built("unix32" if bits == 32 else "unix")


def firmware_mpy(march="x64"):
    """firmware/logb compiled by this tree's mpy-cross (viper for `march`), as a
    folder holding `logb/*.mpy`; cached by the sources' hash. On the x64 unix
    port the package from .mpy holds ~47 KiB of heap after import (from .py
    more), so the 20-stream writer needs a 128K heap there, not 64K."""
    mpy_cross = built("mpy")
    base = micropython_build.paths()["base"] / "fw-mpy"
    out = base / f"{micropython_build._hash_files(micropython_build.firmware_sources())}-{march}"
    if not (out / "logb" / "writer.mpy").exists():
        import deploy_fw

        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        os.environ["MPY_CROSS"] = str(mpy_cross)
        deploy_fw.build(tmp, march)
        os.replace(tmp, out)  # concurrent runs: whichever lands, both are the same bytes
    return out


def unix_command(script, *args, heap="64K", lib=None, binary=None, bits=64):
    """(argv, env) of `micropython -X heapsize=HEAP script args…` with `lib`
    (the folder that holds the `logb` package; default: the .mpy build, viper
    included) first on sys.path: for a long-running process (Popen)."""
    exe = binary or unix_binary(bits)
    lib = lib or firmware_mpy("x86" if bits == 32 else "x64")
    env = dict(os.environ, MICROPYPATH=f".frozen:{lib}")
    return [str(exe), "-X", f"heapsize={heap}", str(script), *map(str, args)], env


def run_unix(script, *args, cwd=None, heap="64K", lib=None, timeout=300, check=True, binary=None, bits=64):
    """unix_command run to completion; fails (check) on a non-zero exit."""
    cmd, env = unix_command(script, *args, heap=heap, lib=lib, binary=binary, bits=bits)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    if check and r.returncode != 0:
        raise AssertionError(f"micropython failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def run_qemu(script, *, timeout=600):
    """Run a script on the emulated MPS2-AN385 (Cortex-M3, `-icount shift=0`:
    time.ticks_us() counts thousands of guest instructions) through its UART
    REPL with MicroPython's pyboard.py; returns what the script printed."""
    elf = built("qemu")
    tree = micropython_build.paths()["tree"]
    cmd = [sys.executable, str(tree / "tools" / "pyboard.py"), "-d", "execpty:" + QEMU_CMD.format(elf=elf),
           str(script)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"qemu run failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


def natmod(arch):
    return pathlib.Path(built("natmod")[arch])

"""The firmware's build tooling: mpy-cross compiles every module (which also
proves MicroPython's own compiler parses them), the viper CRC compiles to
Cortex-M0+ and Cortex-M4F machine code, and the package type-checks against
MicroPython's stubs (not CPython's typeshed)."""

import os
import subprocess

import pytest

import fwload
import fwtools

pytestmark = pytest.mark.single_backend

MODULES = sorted((fwtools.FIRMWARE / "logb").glob("*.py"))
# Every script that runs on a board (MicroPython-side tests and benchmarks): found, not listed.
SCRIPTS = sorted([fwload.ROOT / "boards" / "sim" / "main.py", fwload.ROOT / "tests" / "firmware" / "scenario.py",
                  *(fwload.ROOT / "tests" / "firmware").glob("mp_*.py"), *(fwtools.FIRMWARE / "bench").glob("mp_*.py")])
ARCH = {"armv6m": 4, "armv7emsp": 7}  # MP_NATIVE_ARCH_* in the .mpy header


def mpy_cross():
    exe = fwtools.fw_bin("mpy-cross")
    fwtools.need("mpy-cross", exe)
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout
    assert "v1.27" in out and "mpy v6.3" in out, out
    return str(exe)


@pytest.mark.parametrize("src", MODULES + SCRIPTS, ids=lambda p: p.name)
def test_mpy_cross_compiles(src, tmp_path):
    exe = mpy_cross()
    out = tmp_path / (src.stem + ".mpy")
    text = src.read_text()
    # viper and inline assembler compile only for an architecture (the benchmark's asm is Thumb-2)
    march = ["-march=armv7m"] if "asm_thumb" in text else ["-march=armv6m"] if "micropython.viper" in text else []
    r = subprocess.run([exe, *march, "-o", str(out), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    head = out.read_bytes()[:4]
    assert head[0] == ord("M") and head[1] == 6  # .mpy version 6 (MicroPython 1.27 loads v6.3)


@pytest.mark.parametrize("march", sorted(ARCH))
def test_viper_crc_compiles_to_machine_code(march, tmp_path):
    exe = mpy_cross()
    out = tmp_path / "crc_viper.mpy"
    r = subprocess.run([exe, f"-march={march}", "-o", str(out), str(fwtools.FIRMWARE / "logb" / "crc_viper.py")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    head = out.read_bytes()
    assert head[2] >> 2 == ARCH[march] and head[2] & 3 == 3  # native arch in the header, sub-version 3
    # without an architecture the viper function cannot be compiled at all
    r = subprocess.run([exe, "-o", str(tmp_path / "x.mpy"), str(fwtools.FIRMWARE / "logb" / "crc_viper.py")],
                       capture_output=True, text=True)
    assert r.returncode != 0


def test_typecheck_against_micropython_stubs(tmp_path):
    mypy = fwtools.fw_bin("mypy")
    stubs = fwtools.tools_dir() / "stubs"
    fwtools.need("mypy + micropython stubs", mypy and (stubs / "stdlib").is_dir() and (stubs / "machine.pyi").exists())
    env = dict(os.environ, MYPYPATH=str(stubs))
    cmd = [str(mypy), "--config-file", str(fwtools.FIRMWARE / "mypy.ini"), "--custom-typeshed-dir", str(stubs),
           "--cache-dir", os.devnull, str(fwtools.FIRMWARE / "logb")]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=fwtools.FIRMWARE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success" in r.stdout
    # the stubs are MicroPython's: a CPython-only call is an error there
    bad = tmp_path
    (bad / "probe.py").write_text("import time\ntime.monotonic_ns()\n")
    r = subprocess.run([str(mypy), "--custom-typeshed-dir", str(stubs), "--no-site-packages", "--cache-dir",
                        os.devnull, str(bad / "probe.py")], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "monotonic_ns" in r.stdout


def test_deploy_tool_builds_every_module(tmp_path):
    import sys

    exe = mpy_cross()
    sys.path.insert(0, str(fwload.ROOT / "tools"))
    import deploy_fw

    os.environ["MPY_CROSS"] = exe
    files = deploy_fw.build(tmp_path, march="armv6m")
    assert sorted(f.stem for f in files) == sorted(p.stem for p in MODULES)

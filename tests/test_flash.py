"""`logb flash` (host/logb/deploy.py, docs/FLASH.md): the plan, its errors, and a real flash into
the emulated MPS2-AN385 board (boards/qemu-mps2: tools/micropython_build.py qemu-repl, MicroPython
1.28 with a littlefs RAM disk at /) over a pseudo-terminal, which the tool reaches only as a user's
serial port. What it flashed is then run there: `logb` imported from /lib records CAN frames
through the flashed config, and the recording, copied off with mpremote, decodes on the host.
qemu is started with the command of boards/qemu-mps2/README.md, and one test runs that README's
commands as they are written. The three real boards' plans are checked with --dry-run."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import pytest

from logb.cli.main import main as logb_main
from logb.reader import open as logb_open

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE / "firmware"))
import mpreal  # noqa: E402

pytest.importorskip("mpremote")
pytestmark = pytest.mark.single_backend
ROOT = HERE.parent
BOARD = ROOT / "boards" / "qemu-mps2"
VENV_BIN = pathlib.Path(sys.executable).parent  # `python`, `logb` and `mpremote` of the README
DBC = """VERSION ""

BU_: ECU

BO_ 291 Engine: 8 ECU
 SG_ Speed : 0|16@1+ (0.1,0) [0|6553.5] "rpm" ECU
"""


def readme_blocks():
    """The shell commands of each ```sh block of boards/qemu-mps2/README.md, one per line."""
    text = (BOARD / "README.md").read_text()
    return [[ln for ln in b.splitlines() if ln.strip()] for b in re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)]


def shell(line, cwd, **kw):
    """A README line as a user's shell runs it, with this venv's programs first on PATH."""
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return ["bash", "-c", line], dict(cwd=cwd, env=env, **kw)


def flash(*args, capsys):
    rc = logb_main(["flash", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def rows(out):
    """{device path: (bytes, action)} of the table `logb flash` printed."""
    return {m[1]: (int(m[2]), m[3]) for m in re.finditer(r"^(/\S+)\s+(\d+)\s+(copied|unchanged|copy unless identical)",
                                                           out, re.M)}


def core():
    """The firmware package's modules, as firmware/package.json (what mip installs) lists them."""
    urls = json.loads((ROOT / "firmware" / "package.json").read_text())["urls"]
    return sorted(pathlib.PurePosixPath(src).stem for _dest, src in urls)


# ---------------------------------------------------------------- without a device
def test_dry_run_lists_the_plan(capsys):
    rc, out, err = flash(BOARD, "--dry-run", capsys=capsys)
    assert rc == 0, err
    table = rows(out)
    want = {f"/lib/logb/{m}.mpy" for m in core()} | {"/main.py"}
    assert set(table) == want
    assert table["/main.py"][0] == (BOARD / "main.py").stat().st_size
    assert re.search(r"^/lib/logb/writer\.mpy .* firmware/logb/writer\.py$", out, re.M)
    assert all(a == "copy unless identical" for _n, a in table.values())
    assert "/config.lbcf on the board is left as it is" in out


def test_dry_run_with_a_dbc_plans_the_compiled_config(tmp_path, capsys):
    (tmp_path / "v.dbc").write_text(DBC)
    rc, out, err = flash(BOARD, "--dry-run", "--dbc", tmp_path / "v.dbc", capsys=capsys)
    assert rc == 0, err
    size = subprocess.run([sys.executable, "-m", "logb.cli.main", "dbc", "compile", str(tmp_path / "v.dbc"), "-o",
                           str(tmp_path / "v.lbcf")], capture_output=True, text=True)
    assert size.returncode == 0, size.stderr
    assert rows(out)["/config.lbcf"][0] == (tmp_path / "v.lbcf").stat().st_size


def test_bytecode_only_board_leaves_the_viper_module_out(tmp_path, capsys):
    board = tmp_path / "plain"
    shutil.copytree(BOARD, board)
    text = (board / "board.json").read_text().replace('"march": "armv7m"', '"march": null')
    (board / "board.json").write_text(text)
    rc, out, err = flash(board, "--dry-run", capsys=capsys)
    assert rc == 0, err
    assert "/lib/logb/crc_viper.mpy" not in rows(out) and "/lib/logb/crc.mpy" in rows(out)


def test_a_boards_lib_modules_go_with_the_package_once(tmp_path, capsys):
    board = tmp_path / "driver"
    shutil.copytree(BOARD, board)
    (board / "board.json").write_text((board / "board.json").read_text().replace(
        '"lib": []', '"lib": ["logb/mcp2515.py", "logb/board.py"]'))
    rc, out, err = flash(board, "--dry-run", capsys=capsys)
    assert rc == 0, err
    assert "mcp2515" in core() and "board" in core()  # the drivers are part of the package mip installs
    listed = re.findall(r"^(/lib/\S+)", out, re.M)
    assert sorted(listed) == sorted(set(listed)) == sorted(f"/lib/logb/{m}.mpy" for m in core())


@pytest.mark.parametrize("name", ["stm32", "rp2040-mcp2515", "esp32-mcp2515"])
def test_dry_run_of_each_real_board(name, tmp_path, capsys):
    """What a new user sees first (the READMEs' --dry-run line): the package with the board's own
    drivers, the viper CRC for its architecture, its files, the config compiled from the DBC, and
    the micropython-lib packages it needs."""
    folder = ROOT / "boards" / name
    meta = json.loads((folder / "board.json").read_text())
    (tmp_path / "vehicle.dbc").write_text(DBC)
    rc, out, err = flash(name, "--dry-run", "--dbc", tmp_path / "vehicle.dbc", capsys=capsys)
    assert rc == 0, err
    assert out.startswith(f"board {name} ({meta['march']}): ")
    table = rows(out)
    lib = {f"/lib/{pathlib.PurePosixPath(m).with_suffix('.mpy')}" for m in meta["lib"]}
    files = {"/" + f for f in meta["files"]}
    assert lib <= table.keys() and files <= table.keys() and "main.py" in meta["files"]
    assert set(table) == {f"/lib/logb/{m}.mpy" for m in core()} | files | {meta["config"]}
    assert "/lib/logb/crc_viper.mpy" in table  # the board has a native emitter: its march
    for f in meta["files"]:
        assert table["/" + f][0] == (folder / f).stat().st_size
    assert re.search(rf"^{re.escape(meta['config'])}\s+\d+\s+copy unless identical\s+.*vehicle\.dbc \(compiled\)$",
                     out, re.M)
    needs = re.findall(r"^note: the board needs (\S+) \(micropython-lib\)", out, re.M)
    assert needs == meta["requires"]  # sdcard for the MCP2515 boards' SPI card, nothing for the stm32's SDIO


def test_dry_run_names_the_micropython_lib_packages(capsys):
    rc, out, err = flash("rp2040-mcp2515", "--dry-run", capsys=capsys)
    assert rc == 0, err
    assert re.search(r"^note: .*needs sdcard \(micropython-lib\).*mip install sdcard", out, re.M), out


def test_usage_errors(tmp_path, capsys):
    rc, _out, err = flash("no-such-board", "--dry-run", capsys=capsys)
    assert rc == 64 and "no board 'no-such-board'" in err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "board.json").write_text('{"name": "bad", "files": ["main.py"]}')
    rc, _out, err = flash(bad, "--dry-run", capsys=capsys)
    assert rc == 64 and "lists main.py" in err
    (tmp_path / "x.lbcf").write_bytes(b"not a config")
    rc, _out, err = flash(BOARD, "--dry-run", "--config", tmp_path / "x.lbcf", capsys=capsys)
    assert rc == 64 and "not an LBCF config" in err


def test_no_port(capsys):
    rc, _out, err = flash(BOARD, "--port", "/dev/logb-no-such-port", capsys=capsys)
    assert rc == 69 and "cannot open" in err


def test_a_port_with_no_micropython_on_it(capsys):
    master, slave = os.openpty()  # a serial line whose far end never answers
    try:
        rc, _out, err = flash(BOARD, "--port", os.ttyname(slave), "--timeout", "2", capsys=capsys)
    finally:
        os.close(slave)
        os.close(master)
    assert rc == 69 and "no MicroPython REPL answers" in err


# ---------------------------------------------------------------- the emulated board
@pytest.fixture(scope="module")
def board_port():
    """The qemu-repl board running, its UART on a pseudo-terminal: the pty's path. Built and
    started with the README's first block, from the clone's root, as it says."""
    if not shutil.which("qemu-system-arm"):
        pytest.skip("qemu-system-arm is not installed (tools/setup.d/40-micropython.sh)")
    build, start = readme_blocks()[0]
    mpreal.built("qemu-repl")  # builds the image (or fails with the reason) before the README's own build line
    cmd, kw = shell(build, ROOT)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, **kw)
    assert r.returncode == 0, r.stdout + r.stderr
    assert start.startswith("qemu-system-arm ")
    cmd, kw = shell("exec " + start, ROOT)  # exec: the process is qemu itself, killed at the end
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, **kw)
    try:
        seen = []
        for line in proc.stdout:  # qemu names the pty before the guest starts
            seen.append(line)
            m = re.search(r"char device redirected to (\S+)", line)
            if m:
                break
        else:
            pytest.fail(f"qemu named no pty: {''.join(seen)}")
        yield m.group(1)
    finally:
        proc.kill()
        proc.wait(timeout=60)


def device_exec(port, code, timeout=60):
    """Run code on the board with mpremote's own CLI, as a user would; its output."""
    r = subprocess.run([sys.executable, "-m", "mpremote", "connect", port, "exec", code], capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_flash_the_emulated_board(board_port, tmp_path, capsys):
    (tmp_path / "v.dbc").write_text(DBC)
    mpy_cross = str(mpreal.built("mpy"))  # the board's own MicroPython's mpy-cross
    rc, out, err = flash(BOARD, "--port", board_port, "--dbc", tmp_path / "v.dbc", "--mpy-cross", mpy_cross,
                         "--timeout", "60", capsys=capsys)
    assert rc == 0, err
    first = rows(out)
    assert set(first) == {f"/lib/logb/{m}.mpy" for m in core()} | {"/main.py", "/config.lbcf"}
    assert "armv7em" in out and "sha256 on the device" in out

    # the same again: everything is already there
    rc, out, err = flash(BOARD, "--port", board_port, "--dbc", tmp_path / "v.dbc", "--mpy-cross", mpy_cross,
                         capsys=capsys)
    assert rc == 0, err
    assert {a for _n, a in rows(out).values()} == {"unchanged"}
    assert rows(out).keys() == first.keys()

    # one board file edited: only it is written
    board = tmp_path / "edited"
    shutil.copytree(BOARD, board)
    with open(board / "main.py", "a") as f:
        f.write("EDITED = 1\n")
    rc, out, err = flash(board, "--port", board_port, "--dbc", tmp_path / "v.dbc", "--mpy-cross", mpy_cross,
                         capsys=capsys)
    assert rc == 0, err
    assert {n for n, (_b, a) in rows(out).items() if a == "copied"} == {"/main.py"}
    assert "1 copied" in out

    # what was flashed runs: logb from /lib (nothing frozen in this image) records through the config
    start = time.monotonic()
    text = device_exec(board_port, "import logb, main; print(logb.__file__, main.EDITED, main.record(n=40))")
    path, edited, size = text.split()
    assert path == "/lib/logb/__init__.mpy" and edited == "1"
    r = subprocess.run([sys.executable, "-m", "mpremote", "connect", board_port, "cp", ":/rec.logb",
                        str(tmp_path / "rec.logb")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "rec.logb").stat().st_size == int(size)
    f = logb_open(str(tmp_path / "rec.logb"))
    assert f.stream("Engine").records == 40
    print(f"recorded and copied back in {time.monotonic() - start:.1f} s")


def test_mpy_version_mismatch(board_port, tmp_path, capsys):
    old = tmp_path / "mpy-cross"
    old.write_text("#!/bin/sh\necho 'MicroPython v1.19.1 on 2022-06-18; mpy-cross emitting mpy v6'\n")
    old.chmod(0o755)
    rc, _out, err = flash(BOARD, "--port", board_port, "--mpy-cross", old, "--timeout", "60", capsys=capsys)
    assert rc == 65
    assert "loads .mpy v6.3" in err and "emits v6.0" in err


def test_wrong_architecture(board_port, tmp_path, capsys):
    board = tmp_path / "esp"
    shutil.copytree(BOARD, board)
    (board / "board.json").write_text((board / "board.json").read_text().replace("armv7m", "xtensawin"))
    rc, _out, err = flash(board, "--port", board_port, "--timeout", "60", capsys=capsys)
    assert rc == 65 and "board qemu-mps2 is xtensawin" in err


def test_disk_full(board_port, tmp_path, capsys):
    mpy = str(mpreal.built("mpy"))
    rc, _out, err = flash(BOARD, "--port", board_port, "--mpy-cross", mpy, capsys=capsys)
    assert rc == 0, err  # the board holds the profile: what follows adds to it
    board = tmp_path / "big"
    shutil.copytree(BOARD, board)
    meta = (board / "board.json").read_text()
    (board / "blob.bin").write_bytes(os.urandom(600 << 10))  # the RAM disk is 512 KiB
    (board / "board.json").write_text(meta.replace('["main.py"]', '["main.py", "blob.bin"]'))
    rc, _out, err = flash(board, "--port", board_port, "--mpy-cross", mpy, capsys=capsys)
    assert rc == 73 and "filesystem is full" in err and "new files" in err  # seen before writing
    # a file the board has grows past the free space: the write itself fails (ENOSPC). The disk is
    # filled on the board first, where it is quick (the serial link carries ~5 KB/s).
    free = int(device_exec(board_port, "import os\ns = os.statvfs('/')\nprint(s[0] * s[3])"))
    device_exec(board_port, f"f = open('/filler', 'wb')\nb = bytes(1024)\nfor i in range({free // 1024 - 8}):\n"
                            "    f.write(b)\nf.close()")
    (board / "board.json").write_text(meta)
    (board / "main.py").write_bytes((BOARD / "main.py").read_bytes() + b"#" * (24 << 10) + b"\n")
    try:
        rc, _out, err = flash(board, "--port", board_port, "--mpy-cross", mpy, capsys=capsys)
    finally:
        device_exec(board_port, "import os\nos.remove('/filler')")
    assert rc == 73 and "full writing /main.py" in err


def test_missing_micropython_lib_package_is_named(board_port, tmp_path, capsys):
    board = tmp_path / "needs"
    shutil.copytree(BOARD, board)
    (board / "board.json").write_text((board / "board.json").read_text().replace('"requires": []',
                                                                               '"requires": ["sdcard", "json"]'))
    rc, out, err = flash(board, "--port", board_port, "--mpy-cross", str(mpreal.built("mpy")), "--timeout", "60",
                         capsys=capsys)
    assert rc == 0, err
    assert f"needs sdcard (micropython-lib), which it lacks: mpremote connect {board_port} mip install sdcard" in out
    assert "needs json" not in out  # built into the port


def test_the_readme_commands(board_port, tmp_path):
    """boards/qemu-mps2/README.md's second block, line by line as a user types it (their DBC as
    vehicle.dbc, qemu's pty for /dev/pts/N), in a fresh folder: flash, record, copy, read."""
    (tmp_path / "vehicle.dbc").write_text(DBC)
    lines = readme_blocks()[1]
    assert [ln.split()[0] for ln in lines] == ["logb", "mpremote", "mpremote", "logb"]
    out = []
    for line in lines:
        cmd, kw = shell(line.replace("/dev/pts/N", board_port), tmp_path)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
        assert r.returncode == 0, f"{line}:\n{r.stdout}{r.stderr}"
        out.append(r.stdout)
    assert re.search(r"^/main\.py\s+\d+\s+(copied|unchanged)$", out[0], re.M) and "/config.lbcf" in out[0]
    size = int(out[1].split()[-1])
    assert (tmp_path / "rec.logb").stat().st_size == size
    assert logb_open(str(tmp_path / "rec.logb")).stream("Engine").records == 40
    assert "Engine" in out[3]

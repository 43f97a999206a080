"""Run the simulated logger (boards/sim/main.py on MicroPython in Node.js):
replay a real CAN trace into the firmware writer and record to a host file.

    python boards/sim/run.py [--trace T] [--dbc D | --raw-only] [-o OUT.logb]
                             [--speed X] [--limit N] [--durability frame|segment|close] ...

--speed 0 (default) replays as fast as the writer takes frames, on the
trace's own clock (deterministic: the same inputs give the same file);
--speed 1 replays at real time. The DBC is compiled on the host (`logb dbc
compile`) into the LBCF config the board loads from /flash/config.lbcf.
Needs `./run test` or tools/setup.d/30-firmware.sh to have installed
MicroPython for Node.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SHARED = ROOT.parent / "shared"
DEFAULT_TRACE = SHARED / "data" / "traces" / "durango-aconoff-candump.log"
DEFAULT_DBC = SHARED / "data" / "dbc" / "fca_giorgio.dbc"
MP_MJS = ("node", "node_modules", "@micropython", "micropython-webassembly-pyscript", "micropython.mjs")


def micropython_mjs():
    env = os.environ.get("LOGB_MICROPYTHON_MJS")
    cands = [env] if env else []
    cands += [os.path.join(os.environ.get("LOGB_FW_TOOLS", os.path.join(sys.prefix, "fw")), *MP_MJS),
              str(ROOT / ".venv" / "fw" / pathlib.Path(*MP_MJS))]
    for c in cands:
        if c and os.path.exists(c):
            return c
    raise SystemExit("MicroPython for Node not found: run ./run test once (tools/setup.d/30-firmware.sh)")


def build_config(dbc, device, path):
    """Compile the DBC (or a raw-bus-only config) into LBCF at `path`."""
    from logb.can.config import ConfigEntry, config_entries, encode_config

    if dbc:
        from logb.can.dbc import compile_dbc

        data = encode_config(config_entries(compile_dbc(str(dbc), device=device)))
    else:
        from logb.can.dbc import raw_stream_uuid
        from logb.can.layout import raw_bus_schema

        s = raw_bus_schema(raw_stream_uuid("can0", device, False), "can0")
        data = encode_config([ConfigEntry(0, 0, 0, 8, s.record_size, s.encode())])
    pathlib.Path(path).write_bytes(data)
    return path


def command(out, config, trace=DEFAULT_TRACE, speed=0.0, limit=0, durable_log=None, chunk=0, seed=1,
            heap=64 * 1024, lib=None, settings=None, sd_ns_per_byte=0, serial=None, files=None):
    """The node command line that runs the board (used by the power-cut tests too).
    serial: a tty the board serves the Logb link on (docs/LINK.md) while it
    records, and after it (link_setup.py, link_serve.py); files: the SD
    card's directory as the link sees it (default: the directory of out)."""
    scripts = ["--script", str(HERE / "main.py")]
    if serial:
        scripts = ["--script", str(HERE / "link_setup.py")] + scripts + ["--script", str(HERE / "link_serve.py"),
                                                                          "--serial", str(serial)]
        if files:
            scripts += ["--files", str(files)]
    cmd = ["node", str(HERE / "host.mjs"), *scripts, "--sd", str(out),
           "--put", f"{config}:/flash/config.lbcf", "--trace", str(trace), "--heap", str(heap),
           "--seed", str(seed)]
    if speed:
        cmd += ["--speed", str(speed)]
    if limit:
        cmd += ["--limit", str(limit)]
    if durable_log:
        cmd += ["--durable-log", str(durable_log)]
    if chunk:
        cmd += ["--chunk", str(chunk)]
    if sd_ns_per_byte:
        cmd += ["--sd-ns-per-byte", str(sd_ns_per_byte)]
    if lib:
        cmd += ["--lib", str(lib)]
    for k, v in (settings or {}).items():
        cmd += ["--set", f"{k}={v}"]
    return cmd, dict(os.environ, LOGB_MICROPYTHON_MJS=micropython_mjs())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default=str(DEFAULT_TRACE))
    ap.add_argument("--dbc", default=str(DEFAULT_DBC))
    ap.add_argument("--raw-only", action="store_true", help="no DBC: every frame to the raw bus stream")
    ap.add_argument("-o", "--out", default=str(ROOT / "out" / "sim.logb"))
    ap.add_argument("--speed", type=float, default=0.0, help="0: as fast as possible; 1: real time")
    ap.add_argument("--limit", type=int, default=0, help="replay only the first N frames")
    ap.add_argument("--durability", default="frame", choices=("frame", "segment", "close"))
    ap.add_argument("--page", type=int, default=512)
    ap.add_argument("--segment-bytes", type=int, default=1 << 20)
    ap.add_argument("--flush-ms", type=int, default=1000)
    ap.add_argument("--codec", default="none", choices=("none", "deflate"))
    ap.add_argument("--mirror", action="store_true", help="routed frames also to the raw bus stream (SPEC §13.7)")
    ap.add_argument("--device", default="sim-logger")
    ap.add_argument("--session", default=None, help="fixed session id (32 hex digits)")
    ap.add_argument("--lib", default=None, help="firmware package dir to mount (default firmware/logb)")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--serial", metavar="TTY", help="serve the Logb link (docs/LINK.md) on this tty while "
                    "recording and after it, until stopped")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    settings = {"durability": args.durability, "page": args.page, "segment_bytes": args.segment_bytes,
                "flush_ms": args.flush_ms, "codec": args.codec, "mirror": int(args.mirror), "device": args.device}
    if args.session:
        settings["session"] = args.session
    with tempfile.TemporaryDirectory() as tmp:
        cfg = build_config(None if args.raw_only else args.dbc, args.device, pathlib.Path(tmp) / "config.lbcf")
        cmd, env = command(out, cfg, args.trace, args.speed, args.limit, lib=args.lib, settings=settings,
                           serial=args.serial)
        r = subprocess.run(cmd, env=env, timeout=None if args.serial else args.timeout)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())

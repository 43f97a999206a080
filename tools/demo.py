"""The README's demo, end to end (`./run demo`):

1. the simulated board (boards/sim: the MicroPython writer, firmware/logb,
   on MicroPython 1.27 in Node.js, with an SD card that is a host file)
   records a real CAN trace (../shared/data/traces/durango-aconoff-candump.log,
   replayed at 3x real time) through the config compiled from a real DBC
   (../shared/data/dbc/fca_giorgio.dbc, `logb dbc compile`), and serves the
   Logb serial link (firmware/logb/link.py) on its "USB serial port": one end
   of a pseudo-terminal pair;
2. `logb tail` decodes what it records, live, over that port;
3. `logb pull` copies the recording while it is still being written (up to
   its last flushed frame, verified), and again once it is closed (only the
   new bytes; the whole copy verified against the device's CRC-32C);
4. `logb verify`, `logb decode --dbc` (CSV) and `logb plot` (PNG) on the copy.

Usage: python tools/demo.py [OUT_DIR]   (default: out/demo)

Without MicroPython for Node.js (tools/setup.d/30-firmware.sh installs it
when node and npm exist) the same firmware code runs under CPython instead,
and the demo says so.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import time
import tty

from logb.cli.main import main as logb_main

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
TRACE = SHARED / "traces" / "durango-aconoff-candump.log"
DBC = SHARED / "dbc" / "fca_giorgio.dbc"
SPEED = 3.0
SIGNALS = ["NEW_MSG_11C.VEHICLE_SPEED", "ABS_6.BRAKE_PRESSURE_1", "coolant.temp"]
sys.path.insert(0, str(ROOT / "boards" / "sim"))
sys.path.insert(0, str(ROOT / "tests" / "firmware"))


def step(text):
    print(f"\n$ {text}", flush=True)


class Board:
    """The logger on the far end of the pseudo-terminal; `lines` is what it prints."""

    def __init__(self, cmd, env, master):
        self.proc = subprocess.Popen(cmd, env=env, pass_fds=(master,), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines = []

    def wait_for(self, prefix, timeout):
        end = time.monotonic() + timeout
        os.set_blocking(self.proc.stdout.fileno(), False)
        while time.monotonic() < end:
            line = self.proc.stdout.readline()
            if line:
                self.lines.append(line.rstrip())
                if line.startswith(prefix):
                    return line.rstrip()
                continue
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit(f"demo: the board never printed {prefix!r}:\n" + "\n".join(self.lines[-20:]))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_board(sd, master):
    """The simulated board (MicroPython in Node.js), or the same firmware code under CPython."""
    import fwtools
    import run as sim

    mjs = fwtools.micropython_mjs()
    if mjs is not None and shutil.which("node"):
        cfg = sim.build_config(DBC, "sim-logger", sd.parent / "vehicle.lbcf")
        cmd, env = sim.command(sd / "rec-0001.logb", cfg, trace=TRACE, speed=SPEED, serial=f"fd:{master}",
                               settings={"flush_ms": 250, "device": "sim-logger"})
        env["LOGB_MICROPYTHON_MJS"] = str(mjs)
        board = Board(cmd, env, master)
        board.wait_for("READY", 60)
        return board, "the simulated board: firmware/logb on MicroPython 1.27 (WebAssembly) in Node.js"
    print("demo: MicroPython for Node.js is not installed (tools/setup.d/30-firmware.sh needs node and npm):\n"
          "      running the same firmware code (firmware/logb: writer + link) under CPython instead")
    cfg = sim.build_config(DBC, "sim-logger", sd.parent / "vehicle.lbcf")
    cmd = [sys.executable, str(ROOT / "tests" / "serial" / "cpython_device.py"), "--tty", f"fd:{master}",
           "--dir", str(sd), "--record", str(TRACE), "--name", "rec-0001.logb", "--speed", str(SPEED),
           "--config", str(cfg)]
    board = Board(cmd, dict(os.environ), master)
    board.wait_for("READY", 60)
    return board, "firmware/logb (writer + link) under CPython"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = pathlib.Path(argv[0]) if argv else ROOT / "out" / "demo"
    if out.exists():
        shutil.rmtree(out)
    sd = out / "board-sd"  # the board's SD card (what the host sees of it is only the serial link)
    copies = out / "pulled"
    sd.mkdir(parents=True)
    master, slave = os.openpty()
    tty.setraw(slave)
    os.set_blocking(master, False)
    port = os.ttyname(slave)
    board, what = start_board(sd, master)
    rc = 1
    try:
        print(f"logger: {what}\n        recording {TRACE.name} at {SPEED:g}x real time through "
              f"{DBC.name}'s config; its USB serial port is {port}")
        # tail shows the recording's last segment: let the board write a few seconds' worth first
        recording = sd / "rec-0001.logb"
        deadline = time.monotonic() + 60
        while not (recording.exists() and recording.stat().st_size > 64 << 10):
            if time.monotonic() > deadline:
                raise SystemExit("demo: the board has not recorded 64 KiB within 60 s")
            time.sleep(0.1)
        watch = ["NEW_MSG_11C", "ABS_6", "EPS_3", "coolant"]
        step(f"logb tail --port {port} --dbc {DBC.name} --messages {' '.join(watch)} --count 12")
        logb_main(["tail", "--port", port, "--dbc", str(DBC), "--messages", *watch, "--count", "12"])
        step(f"logb pull --port {port} --all {copies.relative_to(ROOT) if copies.is_relative_to(ROOT) else copies}"
             "        (while it records)")
        if logb_main(["pull", "--port", port, "--all", str(copies)]) != 0:
            raise SystemExit("demo: the pull failed")
        board.wait_for("DONE" if "MicroPython" in what else "RECORDED", 120)
        print("\n(the logger closed the recording)")
        step(f"logb pull --port {port} --all {copies.name}        (again: only the new bytes)")
        if logb_main(["pull", "--port", port, "--all", str(copies)]) != 0:
            raise SystemExit("demo: the pull failed")
        rec = copies / "rec-0001.logb"
        same = rec.read_bytes() == (sd / "rec-0001.logb").read_bytes()
        print(f"(byte-identical to the board's SD card file: {same})")
        step(f"logb verify {rec.name}")
        rc = logb_main(["verify", str(rec)])
        csv = out / "signals.csv"
        step(f"logb decode {rec.name} --dbc {DBC.name} -o {csv.name}")
        rc = logb_main(["decode", str(rec), "--dbc", str(DBC), "-o", str(csv)]) or rc
        with open(csv) as f:
            head = [next(f) for _ in range(3)]
        print("".join(line if len(line) < 160 else line[:157] + "...\n" for line in head), end="")
        png = out / "signals.png"
        step(f"logb plot {rec.name} {' '.join(SIGNALS)} --dbc {DBC.name} -o {png.name}")
        rc = logb_main(["plot", str(rec), *SIGNALS, "--dbc", str(DBC), "-o", str(png),
                        "--title", f"{TRACE.name} recorded by the simulated logger, pulled over serial"]) or rc
        print(f"\ndemo: {out}/ holds the board's SD card, the pulled copy, {csv.name} and {png.name}")
        if not same:
            rc = 1
    finally:
        board.stop()
        os.close(master)
        os.close(slave)
    return rc


if __name__ == "__main__":
    sys.exit(main())

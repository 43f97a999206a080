"""Test rig of the serial link: a pty cable (ptylink.Cable, with its fault
injector) and a device on its far end — firmware/logb/link.py under CPython
(cpython_device.py) or under MicroPython on the simulated board
(boards/sim, Node.js). Every device process has a deadline."""

import os
import pathlib
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "firmware"))
sys.path.insert(0, str(ROOT / "boards" / "sim"))

from ptylink import Cable  # noqa: E402,F401

TRACES = ROOT.parent / "shared" / "data" / "traces"
DBCS = ROOT.parent / "shared" / "data" / "dbc"
DURANGO = TRACES / "durango-aconoff-candump.log"
LANCER = TRACES / "lancer-candump.log"
GIORGIO = DBCS / "fca_giorgio.dbc"


class Device:
    """A device process; `lines` collects its stdout (READY, RECORDED, DONE, SERVING)."""

    def __init__(self, cmd, env=None, deadline=120, pass_fds=()):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                     pass_fds=pass_fds)
        self.lines = []
        self._cv = threading.Condition()
        self._t = threading.Thread(target=self._pump, daemon=True)
        self._t.start()
        self._killer = threading.Timer(deadline, self.kill)
        self._killer.daemon = True
        self._killer.start()

    def _pump(self):
        for line in self.proc.stdout:
            with self._cv:
                self.lines.append(line.rstrip("\n"))
                self._cv.notify_all()

    def wait_for(self, prefix, timeout=60):
        end = time.monotonic() + timeout
        with self._cv:
            while True:
                for line in self.lines:
                    if line.startswith(prefix):
                        return line
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self._t.is_alive():
                    raise AssertionError(f"device never printed {prefix!r}:\n" + "\n".join(self.lines[-30:]))
                self._cv.wait(min(left, 0.5))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self._killer.cancel()


def cpython_device(tty, directory, record=None, name="rec-0001.logb", speed=1.0, limit=0, chunk=2048, idle=10,
                   config=None, deadline=120):
    cmd = [sys.executable, str(HERE / "cpython_device.py"), "--tty", str(tty), "--dir", str(directory),
           "--chunk", str(chunk), "--idle", str(idle)]
    if record:
        cmd += ["--record", str(record), "--name", name, "--speed", str(speed), "--limit", str(limit)]
    if config:
        cmd += ["--config", str(config)]
    d = Device(cmd, deadline=deadline)
    d.wait_for("READY", 60)
    return d


def micropython_device(tty, sd, trace=DURANGO, dbc=GIORGIO, speed=0.0, limit=0, settings=None, deadline=120):
    """The simulated board recording `trace` to the host file `sd` and serving the link on `tty`."""
    import fwtools
    import run as sim

    fwtools.need_micropython()
    sd = pathlib.Path(sd)
    cfg = sim.build_config(dbc, "sim-logger", sd.parent / f"{sd.stem}.lbcf")
    cmd, env = sim.command(sd, cfg, trace=trace, speed=speed, limit=limit, serial=tty,
                           settings=dict({"flush_ms": 200}, **(settings or {})))
    env["LOGB_MICROPYTHON_MJS"] = str(fwtools.micropython_mjs())
    d = Device(cmd, env=env, deadline=deadline)
    d.wait_for("READY", 120)  # Node + MicroPython start-up on a loaded machine
    return d


def logb(*args, timeout=120):
    """The logb CLI in a subprocess: (returncode, stdout, stderr)."""
    r = subprocess.run([sys.executable, "-m", "logb.cli.main", *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def wait_until(cond, timeout=60, step=0.05):
    """True once cond() holds, False after `timeout` seconds (generous: a
    failing wait is a test failure, never a hang; a passing one returns at once)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return False


def same_bytes(a, b):
    return pathlib.Path(a).read_bytes() == pathlib.Path(b).read_bytes()


def no_temp_files(d):
    return [p.name for p in pathlib.Path(d).iterdir() if p.name.startswith(".")]


os.environ.setdefault("PYTHONUNBUFFERED", "1")

"""The bench rig: cut a logger's power N times at random moments and check what survives.

    python tools/rig.py --relay serial-relay:/dev/ttyUSB0 --port /dev/ttyACM0 --cycles 1000 --out rig-run/
    python tools/rig.py --relay gpio:'gpioset gpiochip0 17={v}' --port /dev/ttyACM0 --cycles 1000 --out rig-run/
    python tools/rig.py --relay sim --cycles 1000 --seed 1 --out rig-sim/     # the simulated logger

Each cycle: power on; wait until the logger's link answers (a generous timeout, polled, no fixed
sleep); pull every recording over the serial link (`logb pull`, which fetches the recording being
written up to its last flushed frame); read each with the host logb reader; let it record a random
time (--min-on .. --max-on seconds) and cut the power. After the last cut the logger is powered once
more and pulled a final time. Checked against the previous pull:
  - records only grow: every recording's records from an earlier pull are a prefix of its later pull;
  - durability: the records a pull saw (they were flushed: the link serves only the durable part)
    are still there after the cut that followed;
  - the loss counters the files carry never go down.
"lost since last" of a cycle: records the logger had appended before the cut minus the records
of that recording after the cut, at least 0 ("appended_kept" holds the two counts). Only the sim
relay knows what was appended: its logger writes the count after every loop pass that took frames,
so a cut between a pump that sealed a frame and that write can leave it a few records short, and
the loss is a lower bound; with hardware it is null. report.json holds per cycle: seconds on, files,
records, lost since last, problems; lost_per_cut.png plots records lost per cut. Exit status 0: no problem in any cycle.

A full run is 1,000 cycles (`--cycles 1000`, on for 1–5 s each: about 2 h on hardware, as long
with the sim relay); it measures, per cut, the records lost between the last durable frame and
the cut, and that no cut ever costs a record that had been durable, nor breaks the filesystem for
the files before it. Measured with the sim relay (20 cuts, raw bus stream only, ~500 frames/s):
median 9, at most 25 records per cut, less than one frame of the raw bus stream (26 records):
sealed frames reached the card long before the profile's flush_ms of 1000 ms.

Relays (`--relay KIND[:ARGS]`, class Relay: on(), off()):
  serial-relay:DEV  a USB relay module of the LCUS-1 kind on a serial port (9600 baud): it takes
                    A0 01 01 A2 (relay 1 on) and A0 01 00 A1 (relay 1 off); the logger's supply
                    goes through the normally-open contact.
  gpio:TEMPLATE     a shell command with {v} replaced by 1 (power on) or 0 (cut), e.g. a GPIO of a
                    second board driving a MOSFET or relay.
  sim               the simulated logger: a MicroPython unix-port process running boards/stm32 with
                    boards/simparts, its SD card a FAT image file (OUT/sd.img) that survives the cut;
                    on = start the process (on a fresh pty each boot), off = SIGKILL of its group.
"""

import argparse
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


class Relay:
    """Switches the logger's supply. `port` is the logger's serial link (the sim relay makes its own)."""

    port = None

    def on(self):
        raise NotImplementedError

    def off(self):
        raise NotImplementedError

    def progress(self):
        """Records the logger had appended at the last cut, if it can tell (the sim logger can)."""
        return None

    def alive(self):
        """False once the logger is known to have died (the sim relay knows)."""
        return True

    def close(self):
        pass


class SerialRelay(Relay):
    """An LCUS-1 USB relay module: 4-byte commands A0 <relay> <state> <sum>."""

    ON = bytes.fromhex("A00101A2")
    OFF = bytes.fromhex("A00100A1")

    def __init__(self, dev):
        import serial

        self.ser = serial.Serial(dev, 9600, timeout=1)

    def on(self):
        self.ser.write(self.ON)
        self.ser.flush()

    def off(self):
        self.ser.write(self.OFF)
        self.ser.flush()

    def close(self):
        self.ser.close()


class GpioRelay(Relay):
    """A command template run with {v} = 1 (on) or 0 (off)."""

    def __init__(self, template):
        self.template = template

    def _set(self, v):
        subprocess.run(self.template.format(v=v), shell=True, check=True, timeout=30)

    def on(self):
        self._set(1)

    def off(self):
        self._set(0)


class SimRelay(Relay):
    """The stm32 profile on the unix port; power = the process, the card = work/sd.img."""

    def __init__(self, work, seconds=60):
        sys.path.insert(0, str(ROOT / "tests" / "firmware"))
        sys.path.insert(0, str(ROOT / "tests" / "serial"))
        import fwtools
        import mpreal

        self.mpreal = mpreal
        self.work = pathlib.Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / "config.lbcf").write_bytes(fwtools.raw_only_config())
        if not (self.work / "sd.img").exists():
            (self.work / "sd.img").write_bytes(bytes(8 << 20))  # formatted at the first power-on
        # the bus: the lancer trace, a quarter of its frames (~500 frames/s), repeated over `seconds`
        base = fwtools.read_candump(ROOT.parent / "shared" / "data" / "traces" / "lancer-candump.log")[::4]
        span = base[-1][0] + 1000
        frames, k = [], 0
        while k * span < seconds * 1_000_000:
            frames += [(t + k * span, cid, fl, d) for t, cid, fl, d in base]
            k += 1
        (self.work / "frames.bin").write_bytes(fwtools.encode_frames(frames))
        self.frames = frames
        self.proc = None
        self.cable = None
        self.log = None

    def on(self):
        from ptylink import Cable

        self.cable = Cable(self.work)  # a fresh pty each boot, as a USB CDC port re-enumerates
        self.port = self.cable.host
        (self.work / "progress").write_bytes(bytes(4))
        boards = ROOT / "boards"
        cmd, env = self.mpreal.unix_command(ROOT / "tests" / "firmware" / "mp_rig.py", boards / "stm32",
                                            boards / "simparts", self.work, self.cable.device, heap="16M",
                                            lib=ROOT / "firmware")
        self.log = open(self.work / "device.log", "ab")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def off(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)
            self.proc = None
            self.log.close()
        if self.cable is not None:
            self.cable.close()
            self.cable = None

    def progress(self):
        return int.from_bytes((self.work / "progress").read_bytes()[:4], "little")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def close(self):
        self.off()


def make_relay(spec, out, max_on=5.0):
    kind, _, arg = spec.partition(":")
    if kind == "serial-relay":
        return SerialRelay(arg)
    if kind == "gpio":
        return GpioRelay(arg)
    if kind == "sim":
        return SimRelay(pathlib.Path(out) / "sim", seconds=max_on + 60)
    raise SystemExit(f"rig: unknown relay {kind!r} (serial-relay:DEV, gpio:TEMPLATE, sim)")


def wait_link(port, timeout=120.0, alive=lambda: True):
    """Seconds until the logger's link answered on `port` (polled, up to `timeout`)."""
    from logb.serial.client import Client, LinkError

    t0 = time.monotonic()
    while True:
        c = Client(port, hello_timeout=0.5)
        try:
            c.connect(attempts=1)
            c.bye()
            return time.monotonic() - t0
        except (LinkError, OSError):
            c.close()
        if not alive():
            raise RuntimeError("the logger died before its link answered")
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"the logger's link did not answer on {port} within {timeout:.0f} s")
        time.sleep(0.2)


def read_recording(path):
    """(records of the raw bus stream as (t, id, flags, data), lost counters' sum, problem or None)."""
    import logb
    from logb.can.bus import bus_frames

    try:
        f = logb.LogbFile(pathlib.Path(path).read_bytes())
        b = bus_frames(f)
        recs = [(int(b.t[i]), int(b.id[i]), int(b.flags[i]), bytes(b.data[i][:int(b.dlc[i])]))
                for i in range(len(b))]
        lost = int(f.stream("can0").lost.get("logb.lost.controller", 0))
        return recs, lost, None
    except Exception as exc:  # noqa: BLE001 - a recording the reader rejects is a finding, not a crash
        return [], 0, f"{type(exc).__name__}: {exc}"


def pull(port, dest):
    """Pull every recording into dest (a fresh folder); {name: status}."""
    import io

    from logb.cli.main import main as logb_main

    out = io.StringIO()
    logb_main(["pull", "--all", "--json", "--quiet", "--timeout", "20", "--port", port, str(dest)], out=out)
    return {r["name"]: r.get("status") for r in map(json.loads, out.getvalue().splitlines()) if "name" in r}


def run(relay, cycles, out, seed=0, min_on=1.0, max_on=5.0, say=print):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(seed)
    seen = {}  # name -> records at the previous pull
    lost_seen = {}
    report = {"relay": type(relay).__name__, "seed": seed, "cycles": []}
    on_for = cut_file = appended = None
    for c in range(cycles + 1):
        relay.on()
        problems = []
        try:
            up = wait_link(relay.port, alive=relay.alive)
            dest = out / "pulls" / f"{c:05d}"
            status = pull(relay.port, dest)
            files, lost_since = {}, None
            for name in sorted(status):
                if status[name] != "pulled" or not (dest / name).exists():
                    problems.append(f"{name}: pull {status[name]}")
                    continue
                recs, lost, err = read_recording(dest / name)
                if err:
                    problems.append(f"{name}: {err}")
                files[name] = len(recs)
                before = seen.get(name)
                if before is not None and recs[:len(before)] != before:
                    problems.append(f"{name}: the {len(before)} records of the previous pull are not a prefix "
                                    f"of the {len(recs)} now (durable records lost)")
                if lost < lost_seen.get(name, 0):
                    problems.append(f"{name}: loss counter went down ({lost_seen[name]} -> {lost})")
                seen[name], lost_seen[name] = recs, lost
            gone = sorted(set(seen) - set(status))
            problems += [f"{n}: recording gone" for n in gone]
            appended_kept = None
            if cut_file in files and appended is not None:
                appended_kept = [appended, files[cut_file]]
                lost_since = max(0, appended - files[cut_file])
            report["cycles"].append({"cycle": c, "on_s": on_for, "link_s": round(up, 3), "files": len(files),
                                     "records": sum(files.values()), "lost_since_last": lost_since,
                                     "appended_kept": appended_kept,
                                     "problems": problems})
            say(f"cycle {c}: {len(files)} files, {sum(files.values())} records, lost since last {lost_since}"
                + (f", PROBLEMS {problems}" if problems else ""))
            if c == cycles:
                break
            cut_file = max(files) if files else None  # this boot's own recording: the newest
            on_for = round(rnd.uniform(min_on, max_on), 3)
            time.sleep(on_for)  # the recording time itself (the logger is up: waited for above)
        finally:
            appended = relay.progress()
            relay.off()
    report["problems"] = sum(len(x["problems"]) for x in report["cycles"])
    (out / "report.json").write_text(json.dumps(report, indent=1))
    plot(report, out / "lost_per_cut.png")
    return report


def plot(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [(x["cycle"], x["lost_since_last"]) for x in report["cycles"] if x["lost_since_last"] is not None]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.bar([p[0] for p in pts], [p[1] for p in pts])
    ax.set_xlabel("cut")
    ax.set_ylabel("records lost")
    ax.set_title(f"records lost per power cut ({report['relay']})")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--relay", required=True, help="serial-relay:DEV, gpio:TEMPLATE or sim")
    ap.add_argument("--port", help="the logger's serial link (not with sim)")
    ap.add_argument("--cycles", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-on", type=float, default=1.0)
    ap.add_argument("--max-on", type=float, default=5.0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    relay = make_relay(a.relay, a.out, a.max_on)
    if a.port:
        relay.port = a.port
    try:
        rep = run(relay, a.cycles, a.out, a.seed, a.min_on, a.max_on)
    finally:
        relay.close()
    return 1 if rep["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""A fleet of Logb recordings as loggers upload them, for the data lake tests:
`root/<device>/<yyyy-mm-dd>/recNNNN.logb` (and a few candump `.log` traces), written
by the project's own writers (logb.Writer, logb.can.record.CanRecorder,
logb.can.formats.candump), deterministic for a seed.

Each device has one DBC (three small ones: value tables, signed and scaled signals,
an extended id, a message sent shorter than the DBC says) and carries it one way:

- "attached": the raw bus stream alone, the DBC ATTACHed (SPEC §13.6);
- "messages": the raw bus stream and per-message streams (SPEC §13.2), no DBC in the file;
- "both": both, as `logb import --dbc` writes (CanRecorder's default).

Recordings are dated (time base "unix", or "monotonic" with an anchor) on the day of
their folder, a few undated ("relative"); some also hold `env`, a 10 Hz sensor stream
(float32 temperature, uint16 voltage with a linear conversion). Kinds: "clean",
"cut" (a prefix ending at a random byte), "damaged" (a few bytes flipped in the
middle), "growing" (a prefix now, `grow()` appends the rest in 2-3 steps),
"concatenated" (two recordings of the device joined as `logb cat` does, SPEC §6.6)
and "trace" (candump `-L`).

    fleet = make_fleet(tmp_path, n=200, seed=1)
    for ff in fleet.of_kind("growing"):
        while not ff.complete:
            grow(ff.path, fleet)
"""

import datetime as dt
import io
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

import logb
from logb.can import layout
from logb.can.dbc import MEDIA_TYPE, compile_dbc
from logb.can.formats import candump
from logb.can.formats.trace import Bus, Trace
from logb.can.record import CanRecorder
from logb.errors import UsageError
from logb.framing import FILE_HEADER_SIZE
from logb.scan import Report, iter_frames

FIRST_DAY = dt.date(2024, 5, 6)  # the fleet's first UTC day folder
BUS = "can0"
WAYS = ("attached", "messages", "both")
# share of each kind but clean, rounded up (n >= 5 has every kind); the rest is clean
SHARES = (("cut", 0.05), ("damaged", 0.03), ("growing", 0.03), ("concatenated", 0.02), ("trace", 0.02))
TIME_BASES = (("unix", 0.85), ("monotonic", 0.07), ("relative", 0.08))
SEGMENT_BYTES = 24 << 10  # small segments: a recording of a few thousand frames has 1-3 of them
CHUNK = 256  # CAN frames per CanRecorder.add (and per raw bus DATA frame)
SENSOR_SHARE = 0.4
SENSOR_STEP_MS = 100

_HEAD = 'VERSION ""\n\nNS_ :\n\nBS_:\n\nBU_: ECU\n\n'

# name -> (DBC text, [(id, bit 31 for extended; payload bytes sent)], ids the DBC lacks)
BUSES = {
    "powertrain.dbc": (_HEAD + """\
BO_ 256 Engine: 8 ECU
 SG_ Speed : 7|16@0+ (0.25,0) [0|16383.75] "rpm" ECU
 SG_ Coolant : 16|8@1- (1,0) [-128|127] "degC" ECU
 SG_ Gear : 24|4@1+ (1,0) [0|15] "" ECU

BO_ 257 Pedals: 2 ECU
 SG_ Throttle : 0|8@1+ (0.4,0) [0|102] "%" ECU
 SG_ Brake : 8|1@1+ (1,0) [0|1] "" ECU

VAL_ 256 Gear 0 "P" 1 "R" 2 "N" 3 "D" ;
VAL_ 257 Brake 0 "off" 1 "on" ;
""", [(0x100, 8), (0x101, 2)], [0x7DF]),
    "body.dbc": (_HEAD + """\
BO_ 768 Doors: 2 ECU
 SG_ DoorFL : 0|1@1+ (1,0) [0|1] "" ECU
 SG_ DoorFR : 1|1@1+ (1,0) [0|1] "" ECU
 SG_ Lock : 8|2@1+ (1,0) [0|3] "" ECU

BO_ 2566844926 Climate: 8 ECU
 SG_ Cabin : 0|16@1- (0.1,0) [-3276.8|3276.7] "degC" ECU
 SG_ Fan : 16|4@1+ (1,0) [0|15] "" ECU
 SG_ Humidity : 56|8@1+ (0.5,0) [0|127.5] "%" ECU

BO_ 769 Lights: 1 ECU
 SG_ Head : 0|2@1+ (1,0) [0|3] "" ECU

VAL_ 768 Lock 0 "unlocked" 1 "locked" 2 "deadlocked" ;
VAL_ 769 Head 0 "off" 1 "low" 2 "high" ;
""", [(0x300, 2), (0x18FEF1FE | 1 << 31, 6), (0x301, 1)], [0x7E8]),  # Climate is sent 6 bytes short of Humidity
    "battery.dbc": (_HEAD + """\
BO_ 512 Pack: 8 ECU
 SG_ Voltage : 0|16@1+ (0.01,0) [0|655.35] "V" ECU
 SG_ Current : 16|16@1- (0.1,0) [-3276.8|3276.7] "A" ECU
 SG_ SOC : 32|8@1+ (0.5,0) [0|127.5] "%" ECU
 SG_ State : 40|3@1+ (1,0) [0|7] "" ECU

BO_ 513 Cells: 6 ECU
 SG_ CellMin : 0|16@1+ (0.001,0) [0|65.535] "V" ECU
 SG_ CellMax : 16|16@1+ (0.001,0) [0|65.535] "V" ECU
 SG_ TempMax : 32|8@1- (1,0) [-128|127] "degC" ECU

VAL_ 512 State 0 "idle" 1 "charge" 2 "drive" 3 "fault" ;
""", [(0x200, 8), (0x201, 6)], [0x7DF, 0x7E8]),
}

_ENV_FIELDS = (
    logb.Field("temperature", 0, 32, logb.DataType.float, unit="degC"),
    logb.Field("voltage", 32, 16, logb.DataType.uint, unit="V", conversion=logb.Conversion.linear(0.0, 0.001)),
)


@dataclass
class FleetFile:
    path: Path
    device: str
    kind: str  # clean | cut | damaged | growing | concatenated | trace
    dbc_name: str  # the device's DBC (a trace carries none: decode it with this one)
    full_bytes: object = None  # growing: the whole recording the file grows into; else None
    way: str = "trace"  # how the DBC is in the file: attached | messages | both (WAYS), or trace
    time_base: str = "unix"  # of the (first) session: unix | monotonic | relative
    start_ns: object = None  # wall time of the first CAN frame (UTC ns), None when undated
    frames: int = 0  # CAN frames written, before any cut or damage (both parts when concatenated)
    sensor: int = 0  # `env` records written (0: no sensor stream)
    steps: tuple = ()  # growing: the file's size after its first write and after each grow()

    @property
    def complete(self):
        """Has a growing file reached its full size? (Other kinds are as they stay.)"""
        return self.full_bytes is None or self.path.stat().st_size >= len(self.full_bytes)


@dataclass
class Fleet:
    root: Path
    files: list  # every path written, in generation order
    dbcs: dict  # name -> DBC text
    devices: list  # device names
    days: list  # "yyyy-mm-dd" folder names
    records: dict = field(default_factory=dict)  # path -> FleetFile

    def of_kind(self, *kinds):
        return [self.records[p] for p in self.files if self.records[p].kind in kinds]


def make_fleet(root, n=1000, seed=0, *, devices=4, days=3):
    """Write `n` recordings (and traces) under `root`; returns their Fleet."""
    root = Path(root)
    names = [f"logger-{k:02d}" for k in range(devices)]
    day_names = [(FIRST_DAY + dt.timedelta(days=d)).isoformat() for d in range(days)]
    dbc_names = list(BUSES)
    setup = {}  # device -> (DBC name, way, CompiledDbc)
    for k, device in enumerate(names):
        dbc_name = dbc_names[k % len(dbc_names)]
        compiled = replace(compile_dbc(BUSES[dbc_name][0], bus=BUS, device=device), name=dbc_name)
        setup[device] = dbc_name, WAYS[(k + k // len(dbc_names)) % len(WAYS)], compiled
    kinds = [kind for kind, share in SHARES for _ in range(math.ceil(share * n))][:n]
    kinds += ["clean"] * (n - len(kinds))
    np.random.default_rng([seed, 0]).shuffle(kinds)
    fleet = Fleet(root, [], {name: BUSES[name][0] for name in dbc_names}, names, day_names)
    for i, kind in enumerate(kinds):
        device = names[i % devices]  # every device on every day once n >= devices * days
        day = (i // devices) % days
        rng = np.random.default_rng([seed, 1, i])
        ff = _write(root / device / day_names[day], f"rec{i:04d}", kind, device, setup[device],
                    FIRST_DAY + dt.timedelta(days=day), rng)
        fleet.files.append(ff.path)
        fleet.records[ff.path] = ff
    return fleet


def grow(path, fleet):
    """Append the next piece of a growing recording (its next step in FleetFile.steps)."""
    ff = fleet.records[Path(path)]
    if ff.kind != "growing":
        raise UsageError(f"{path} is a {ff.kind} file, not a growing one")
    size = ff.path.stat().st_size
    later = [s for s in ff.steps if s > size]
    if not later:
        raise UsageError(f"{path} is complete ({size} bytes)")
    with open(ff.path, "ab") as fh:
        fh.write(ff.full_bytes[size:later[0]])


# ---------------------------------------------------------------- one file

def _write(folder, stem, kind, device, setup, day, rng):
    dbc_name, way, compiled = setup
    folder.mkdir(parents=True, exist_ok=True)
    day_ns = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp()) * 10**9
    if kind == "trace":
        path = folder / f"{stem}.log"
        t, ids, flags, dlc, data = _frames(rng, dbc_name, _start_us(rng, day_ns))
        trace = Trace({BUS: Bus(BUS, t, ids, flags, dlc, data)}, -6, True, None, candump.NAME)
        candump.write(trace, path)
        return FleetFile(path, device, kind, dbc_name, start_ns=int(t[0]) * 1000, frames=len(t))
    path = folder / f"{stem}.logb"
    data, info, end_us = _recording(rng, device, way, compiled, _start_us(rng, day_ns))
    ff = FleetFile(path, device, kind, dbc_name, way=way, **info)
    if kind == "concatenated":  # the device's next recording, minutes later, appended minus its header
        second, more, _ = _recording(rng, device, way, compiled, end_us + int(rng.integers(1, 600)) * 10**6)
        data += second[FILE_HEADER_SIZE:]
        ff.frames += more["frames"]
        ff.sensor += more["sensor"]
    elif kind == "cut":  # inside a frame: cut between two frames, a file reads clean (no END is no damage)
        at = _between(rng, len(data), 0.3, 0.97)
        data = data[: at - (at in _frame_ends(data))]
    elif kind == "damaged":
        data = bytearray(data)
        at = _between(rng, len(data), 0.35, 0.65)
        width = int(rng.integers(1, 5))  # a burst of at most 32 bits: CRC-32C always sees it
        data[at:at + width] = bytes(b ^ int(rng.integers(1, 256)) for b in data[at:at + width])
        data = bytes(data)
    elif kind == "growing":
        ff.full_bytes = data
        ff.steps = _steps(rng, data)
        data = data[: ff.steps[0]]
    path.write_bytes(data)
    return ff


def _recording(rng, device, way, compiled, start_us):
    """(bytes of one complete recording, FleetFile fields, its last frame's Unix µs) as a
    logger of `way` writes it, its first frame at `start_us` (Unix µs)."""
    time_base = _pick(rng, TIME_BASES)
    t, ids, flags, dlc, data = _frames(rng, compiled.name, start_us)
    # the session's clock: unix µs, a monotonic clock since boot, or µs since the start
    origin = {"unix": 0, "monotonic": start_us - int(rng.integers(5, 3600)) * 10**6, "relative": start_us}[time_base]
    t = t - origin
    clock = {"mono_s": 0.0, "wall_ns": 0}
    sink = io.BytesIO()
    w = logb.Writer(sink, time_base=time_base, session=rng.bytes(16).hex(), segment_bytes=SEGMENT_BYTES,
                    wall_clock=lambda: clock["wall_ns"], monotonic=lambda: clock["mono_s"],
                    clock_source="fleet fixture", meta={"logb.device": device})
    rec = CanRecorder(w, None if way == "attached" else compiled, bus=BUS, device=device, batch=CHUNK,
                      attach=way == "both", flush_s=1.0)
    if way == "attached":  # what CanRecorder does with a DBC, without the per-message streams
        w.attach(compiled.name, MEDIA_TYPE, compiled.attachment_bytes())
        w.meta({"logb.can.dbc": compiled.name}, stream=rec.raw)
    env = None
    if rng.random() < SENSOR_SHARE:
        env = w.add_stream(logb.Schema(logb.stream_uuid(device, "env"), "env", 48, logb.AxisKind.time,
                                       logb.AxisMode.implicit, axis_exp=-3, axis_step=SENSOR_STEP_MS,
                                       fields=_ENV_FIELDS))
    sensor_ms = np.arange(int(t[0]) // 1000, int(t[-1]) // 1000 + 1, SENSOR_STEP_MS)
    sensor_done = 0
    for lo in range(0, len(t), CHUNK):
        hi = min(lo + CHUNK, len(t))
        clock["mono_s"] = (int(t[lo]) - int(t[0])) / 1e6
        clock["wall_ns"] = (int(t[lo]) + origin) * 1000
        rec.add(t[lo:hi], ids[lo:hi], flags[lo:hi], dlc[lo:hi], data[lo:hi])
        if env is not None:
            upto = int(np.searchsorted(sensor_ms, int(t[hi - 1]) // 1000, "right"))
            if upto > sensor_done:
                count = upto - sensor_done
                env.write_batch({"temperature": (20 + rng.normal(0, 2, count)).astype(np.float32),
                                 "voltage": rng.integers(11800, 14400, count)}, axis_base=int(sensor_ms[sensor_done]))
                sensor_done = upto
        if lo == 0 and time_base == "monotonic":  # a GPS fix, written after the records it dates
            w.anchor(int(t[0]) * 1000, start_us * 1000, source="gps", uncertainty_ns=1000)
    rec.flush()
    w.close()
    return sink.getvalue(), {"time_base": time_base, "start_ns": None if time_base == "relative" else start_us * 1000,
                             "frames": len(t), "sensor": sensor_done}, int(t[-1]) + origin


def _frames(rng, dbc_name, start_us):
    """(t µs from start_us on, id, flags, dlc, data) of a few hundred to a few thousand frames
    of the DBC's messages and of ids it lacks, a few of them remote frames."""
    _, messages, strangers = BUSES[dbc_name]
    choices = [(ident, length) for ident, length in messages] + [(ident, 8) for ident in strangers]
    weights = np.array([4.0] * len(messages) + [0.5] * len(strangers))
    n = int(rng.integers(300, 3000))
    pick = rng.choice(len(choices), n, p=weights / weights.sum())
    full_ids = np.array([c[0] for c in choices], np.uint64)[pick]
    lengths = np.array([c[1] for c in choices], np.uint8)[pick]
    ids = (full_ids & np.uint64(0x1FFFFFFF)).astype(np.uint32)
    flags = np.where(full_ids >> np.uint64(31) != 0, layout.FLAG_EXTENDED, 0).astype(np.uint8)
    flags[rng.random(n) < 0.003] |= layout.FLAG_REMOTE
    data = rng.integers(0, 256, (n, layout.CLASSIC_PAYLOAD), np.uint8)
    past_data = np.arange(layout.CLASSIC_PAYLOAD)[None, :] >= lengths[:, None]
    data[past_data | ((flags[:, None] & layout.FLAG_REMOTE) != 0)] = 0  # zero-padded, as a raw bus record is
    rate = rng.uniform(50, 500)  # frames per second
    offsets = np.sort(rng.integers(0, int(n / rate * 1e6), n)).astype(np.int64)
    t = start_us + offsets - offsets[0]  # the first frame at start_us
    return t, ids, flags, lengths, data


def _start_us(rng, day_ns):
    """A start in the day, early enough for any recording (and a second one after it) to end within it."""
    return day_ns // 1000 + int(rng.integers(0, 22 * 3600)) * 10**6 + int(rng.integers(0, 10**6))


def _pick(rng, shares):
    names, p = zip(*shares)
    return names[int(rng.choice(len(names), p=p))]


def _between(rng, size, lo, hi):
    return int(rng.integers(int(size * lo), int(size * hi)))


def _steps(rng, data):
    """The sizes a growing file has: its first write, 1-2 more, then the whole file (2-3
    grow() calls); each a frame boundary (a logger that writes whole frames) or any byte
    (one that writes blocks), half and half."""
    ends = _frame_ends(data)[:-1]  # the last one is the whole file
    count = int(rng.integers(2, 4))
    sizes = set()
    while len(sizes) < count:
        at = _between(rng, len(data), 0.1, 0.95)
        sizes.add(ends[min(int(np.searchsorted(ends, at)), len(ends) - 1)] if rng.random() < 0.5 else at)
    return tuple(sorted(sizes)) + (len(data),)


def _frame_ends(data):
    return [fr.end for fr in iter_frames(data, Report(size=len(data)), FILE_HEADER_SIZE)]

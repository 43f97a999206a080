"""The README's demo: record a real CAN trace and two sensor streams with the
host writer, then show `logb info` and the first records of `logb dump`.

Usage: python tools/demo.py [OUT.logb]   (default: out/demo.logb)
"""

import math
import pathlib
import sys

import numpy as np

import logb
from logb import AxisKind, AxisMode, ByteOrder, Codec, Conversion, DataType, Field, Schema
from logb.cli.main import main as logb_main

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRACE = ROOT.parent / "shared" / "data" / "traces" / "lancer-candump.log"


def read_candump(path, limit):
    """(timestamps in µs, ids, payloads) from a `candump -L` log."""
    ts, ids, data = [], [], []
    with open(path) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) < 3 or "#" not in parts[2]:
                continue
            can_id, payload = parts[2].split("#", 1)
            raw = bytes.fromhex(payload)
            ts.append(round(float(parts[0].strip("()")) * 1e6))
            ids.append(int(can_id, 16))
            data.append(raw.ljust(8, b"\0")[:8] + bytes([len(raw)]))
            if len(ts) >= limit:
                break
    return np.array(ts, np.int64), np.array(ids, np.uint32), data


def bus_schema():
    return Schema(
        uuid=logb.stream_uuid("demo-logger", "can0"), name="can0", record_bits=8 * 18,
        axis_kind=AxisKind.time, axis_mode=AxisMode.explicit, axis_exp=-6, axis_unit="s",
        axis_scale=1, axis_field=0,
        fields=(
            Field("t_us", 0, 32, DataType.uint, unit="us", description="µs since the frame's axis_base"),
            Field("id", 32, 29, DataType.uint, description="CAN identifier"),
            Field("dlc", 64, 8, DataType.uint),
            Field("data", 72, 64, DataType.bytes, description="payload, zero-padded to 8 bytes"),
            Field("byte0_hi", 72, 4, DataType.uint, ByteOrder.big, description="a nibble of byte 0, Motorola"),
        ),
    )


def sensor_schema():
    return Schema(
        uuid=logb.stream_uuid("demo-logger", "coolant"), name="coolant", record_bits=16,
        axis_kind=AxisKind.time, axis_mode=AxisMode.implicit, axis_exp=-3, axis_unit="s", axis_step=100,
        fields=(
            Field("temp", 0, 12, DataType.sint, unit="degC", conversion=Conversion.linear(-40.0, 0.125)),
            Field("state", 12, 2, DataType.uint,
                  conversion=Conversion.value_to_text([(0, "cold"), (1, "warm"), (2, "hot")], "fault")),
        ),
    )


def record(out_path):
    ts, ids, data = read_candump(TRACE, 20000)
    t0 = int(ts[0])
    with logb.Writer(out_path, time_base="monotonic", clock_source="candump -L host timestamps",
                     segment_bytes=64 << 10, meta={"logb.device": "demo-logger"}) as w:
        bus = w.add_stream(bus_schema(), codec=Codec.zstd, transpose=True)
        sensor = w.add_stream(sensor_schema(), codec=Codec.deflate)
        for start in range(0, len(ts), 2000):
            sl = slice(start, start + 2000)
            base = int(ts[sl][0] - t0)
            payloads = [d[:8] for d in data[sl]]
            bus.write_batch({"t_us": ts[sl] - t0 - base, "id": ids[sl],
                             "dlc": [d[8] for d in data[sl]], "data": payloads,
                             "byte0_hi": [p[0] >> 4 for p in payloads]}, axis_base=base)
            n = 50
            k = np.arange(start // 40, start // 40 + n)
            temp_c = 60 + 30 * np.sin(k / 200.0)
            sensor.write_batch({"temp": np.round((temp_c + 40) / 0.125).astype(np.int64),
                                "state": np.digitize(temp_c, [50, 80])}, axis_base=int(k[0] * 100))
        # A GPS fix arrives after the records it dates (rule 1 allows looking back).
        w.anchor(axis_ns=0, wall_ns=int(ts[0]) * 1000, source="gps", uncertainty_ns=100)
        w.anchor(axis_ns=int(ts[-1] - t0) * 1000, wall_ns=int(ts[-1]) * 1000 + 250, source="gps",
                 uncertainty_ns=100)
    return len(ts)


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "out" / "demo.logb"
    out.parent.mkdir(parents=True, exist_ok=True)
    n = record(out)
    print(f"wrote {out} ({out.stat().st_size} bytes): {n} CAN frames from {TRACE.name} + a coolant sensor\n")
    print(f"$ logb info {out.name}")
    logb_main(["info", str(out)])
    print(f"\n$ logb dump --stream coolant {out.name}   (first 5 records)")

    class Head:
        def __init__(self, n):
            self.left = n

        def write(self, s):
            if self.left > 0:
                sys.stdout.write(s)
                self.left -= s.count("\n")

    logb_main(["dump", "--stream", "coolant", str(out)], out=Head(5))
    print(f"\n$ logb verify {out.name}")
    return logb_main(["verify", str(out)])


if __name__ == "__main__":
    sys.exit(main())

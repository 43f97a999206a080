"""Seed inputs: the conformance corpus (corpus/*.logb, small and hand-made)
and a few recordings written by logb.Writer with fixed clocks and session
ids, so the same seeds come out on every machine and a fixed-seed run is
repeatable. Between them they reach every frame type, codec, filter, axis
mode, data type and conversion, sealed and unsealed files, and sessions
that follow one another.
"""

import io
import pathlib

import numpy as np

import logb
from logb import AxisKind, AxisMode, ByteOrder, Codec, Conversion, DataType, Field, Schema

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"

TEMP = Schema(uuid=b"\x01" * 16, name="temp", record_bits=64, axis_kind=AxisKind.time,
              axis_mode=AxisMode.implicit, axis_exp=-3, axis_step=10,
              fields=(Field("raw", 0, 16, DataType.uint, unit="degC", conversion=Conversion.linear(-40, 0.01)),
                      Field("state", 16, 8, DataType.sint,
                            conversion=Conversion.value_to_text([(0, "off"), (1, "on")], "?")),
                      Field("level", 24, 32, DataType.float, ByteOrder.big,
                            conversion=Conversion.range_to_text([(0, 1, "low"), (1, 10, "high")], "none")),
                      Field("label", 0, 0, DataType.string, flags=1)))
EXPLICIT = Schema(uuid=b"\x02" * 16, name="x", record_bits=40, axis_kind=AxisKind.time,
                  axis_mode=AxisMode.explicit, axis_exp=-6, axis_scale=1, axis_field=0,
                  fields=(Field("t", 0, 16, DataType.uint), Field("v", 16, 12, DataType.sint, ByteOrder.big),
                          Field("ok", 28, 1, DataType.bool),
                          Field("gain", 32, 8, DataType.uint,
                                conversion=Conversion.table([(0, 1.0), (1, 2.0), (2, 4.0)], interpolate=True)),
                          Field("blob", 0, 0, DataType.bytes, flags=1)))
SPECTRUM = Schema(uuid=b"\x03" * 16, name="spectrum", record_bits=160, axis_kind=AxisKind.frequency,
                  axis_mode=AxisMode.implicit_log, axis_step=1.5,
                  fields=(Field("z", 0, 128, DataType.complex, conversion=Conversion.linear(1, 2)),
                          Field("tag", 128, 32, DataType.bytes)))


def _writer(bio, session, time_base="monotonic", segment_bytes=600, header=True):
    return logb.Writer(bio, time_base=time_base, session=session, segment_bytes=segment_bytes, header=header,
                       wall_clock=lambda: 1_700_000_000_000_000_000, monotonic=lambda: 0.0)


def _session(w, frames, codecs):
    temp = w.add_stream(TEMP, codec=codecs[0])
    x = w.add_stream(EXPLICIT, codec=codecs[1], transpose=False)
    spec = w.add_stream(SPECTRUM, codec=codecs[2])
    w.add_run(1, 0, {"name": "first"})
    w.add_run(2, 1, {"name": "second"})
    w.attach("notes.txt", "text/plain", b"fuzz seed " * 20, codec=codecs[0])
    for k in range(frames):
        n = 4 + k % 3
        temp.write_batch({"raw": np.arange(n) + 100 * k, "state": np.arange(n) % 3 - 1,
                          "level": np.linspace(0, 12, n, dtype=np.float32),
                          "label": [f"r{k}.{i}" for i in range(n)]}, axis_base=k * 100, run_id=1 + k % 2)
        x.write_batch({"t": np.arange(n) * 7 + k * 50, "v": np.arange(n) - 3, "ok": np.arange(n) % 2 == 0,
                       "gain": np.arange(n) % 4, "blob": [bytes([i]) * i for i in range(n)]}, axis_base=k)
        spec.write_batch({"z": np.arange(n) * (1 + 1j), "tag": np.zeros((n, 4), np.uint8) + k},
                         axis_base=1.0 + k)
        w.anchor(k * 100_000_000, 1_700_000_000_000_000_000 + k * 100_000_000, uncertainty_ns=1000)


def recordings():
    """(name, bytes) of the Writer-made seeds."""
    out = []
    bio = io.BytesIO()
    w = _writer(bio, "a" * 32)
    _session(w, 6, (Codec.zstd, Codec.lz4, Codec.deflate))
    w.close()
    out.append(("sealed", bio.getvalue()))
    sealed = bio.getvalue()
    bio = io.BytesIO()
    w = _writer(bio, "b" * 32, time_base="unix", segment_bytes=1 << 20, header=False)  # a second session
    _session(w, 3, (Codec.none, Codec.zstd, Codec.none))
    w.close(index=False)
    out.append(("two_sessions", sealed + bio.getvalue()))
    bio = io.BytesIO()
    w = _writer(bio, "c" * 32)
    _session(w, 4, (Codec.lz4, Codec.deflate, Codec.zstd))
    out.append(("unclosed", bio.getvalue()))
    return out


def seeds():
    """Every seed: (name, bytes), the corpus first, in a fixed order."""
    return [(p.stem, p.read_bytes()) for p in sorted(CORPUS.glob("*.logb"))] + recordings()

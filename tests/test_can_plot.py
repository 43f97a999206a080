"""logb.can.plot and `logb plot`: PNGs of signals against time, units on the axes, wall
time when the recording is dated."""

import pathlib

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("can")
cantools = pytest.importorskip("cantools")

import logb  # noqa: E402
from logb.can import formats, plot  # noqa: E402
from logb.errors import UnknownSignalError  # noqa: E402
from logb.cli.main import main  # noqa: E402

DBC = pathlib.Path(__file__).resolve().parents[2] / "shared" / "bench" / "trace.dbc"
needs_dbc = pytest.mark.skipif(not DBC.exists(), reason="../shared/bench/trace.dbc not present")
PNG = b"\x89PNG\r\n\x1a\n"


def frames(n=300, dated=True):
    rng = np.random.default_rng(3)
    db = cantools.database.load_file(str(DBC))
    msgs = [m for m in db.messages if m.name in ("MA_C0", "MC_200", "ME_CF00400")]
    pick = rng.integers(0, len(msgs), n)
    ids = np.array([msgs[i].frame_id for i in pick], np.uint32)
    ext = np.array([msgs[i].is_extended_frame for i in pick])
    t = (1_717_000_000_000_000 if dated else 0) + np.arange(n, dtype=np.int64) * 10_000
    bus = formats.Bus("can0", t, ids, ext.astype(np.uint8), np.full(n, 8, np.uint8),
                      rng.integers(0, 256, (n, 8), dtype=np.uint8))
    return db, formats.Trace({"can0": bus}, -6, dated, None, "test")


@needs_dbc
def test_plot_per_message_streams(tmp_path):
    db, trace = frames()
    lb = tmp_path / "p.logb"
    formats.write_logb(trace, lb, dbc=DBC)
    out = tmp_path / "p.png"
    with logb.LogbFile(str(lb)) as f:
        info = plot.plot(f, ["MA_C0.EngSpeed", "CoolantTemp", "MC_200.Status"], out, title="t")
        series = plot.collect(f, ["MA_C0.EngSpeed"])
    assert out.read_bytes()[:8] == PNG
    assert info["time"] == "utc" and info["xlabel"] == "time (UTC)"
    assert info["ylabels"] == ["rpm", "degC", "(no unit)"]
    assert info["series"] == ["MA_C0.EngSpeed", "MA_C0.CoolantTemp", "MC_200.Status"]
    # the plotted values are cantools' decode of the same frames
    bus = trace.buses["can0"]
    rows = np.flatnonzero(bus.id == 0xC0)
    want = [db.get_message_by_name("MA_C0").decode(bytes(bus.data[i]), decode_choices=False)["EngSpeed"]
            for i in rows]
    (s,) = series
    assert s.axis.tolist() == bus.t[rows].tolist()
    assert s.values.tolist() == pytest.approx(want)


@needs_dbc
def test_plot_raw_stream_with_dbc_and_window(tmp_path):
    _, trace = frames(dated=False)
    lb = tmp_path / "r.logb"
    formats.write_logb(trace, lb)
    with logb.LogbFile(str(lb)) as f:
        with pytest.raises(UnknownSignalError):
            plot.plot(f, ["MA_C0.EngSpeed"], tmp_path / "x.png")  # no DBC anywhere
        full = plot.plot(f, ["EngSpeedJ"], tmp_path / "a.png", dbc=str(DBC))
        part = plot.plot(f, ["EngSpeedJ"], tmp_path / "b.png", dbc=str(DBC), window=(0.5, 1.0))
    assert full["time"] == "axis" and full["ylabels"] == ["rpm"]
    assert 0 < part["points"] < full["points"]


def test_plot_any_stream_anchored(tmp_path):
    """STREAM.FIELD of a non-CAN stream; a monotonic clock with an anchor plots in UTC."""
    schema = logb.Schema(uuid=logb.stream_uuid("d", "temp"), name="temp", record_bits=16,
                         axis_kind=logb.AxisKind.time, axis_mode=logb.AxisMode.implicit, axis_exp=-3,
                         axis_step=100, fields=(logb.Field("t", 0, 12, logb.DataType.sint, unit="degC",
                                                           conversion=logb.Conversion.linear(-40.0, 0.125)),))
    lb = tmp_path / "a.logb"
    with logb.Writer(str(lb), time_base="monotonic") as w:
        w.add_stream(schema).write_batch({"t": np.arange(50) * 3}, axis_base=0)
        w.anchor(0, 1_700_000_000_000_000_000, source="gps", uncertainty_ns=100)
    with logb.LogbFile(str(lb)) as f:
        info = plot.plot(f, ["temp.t"], tmp_path / "a.png")
        (s,) = plot.collect(f, ["temp.t"])
    assert info["time"] == "utc" and info["ylabels"] == ["degC"]
    assert s.values.tolist() == pytest.approx((-40.0 + 0.125 * np.arange(50) * 3).tolist())


@needs_dbc
def test_cli_plot(tmp_path, capsys):
    _, trace = frames()
    lb = tmp_path / "c.logb"
    formats.write_logb(trace, lb, dbc=DBC)
    out = tmp_path / "c.png"
    assert main(["plot", str(lb), "MA_C0.EngSpeed", "EngTorque", "-o", str(out), "--window", "0:1",
                 "--size", "8x2"]) == 0
    assert "MA_C0.EngSpeed" in capsys.readouterr().out
    assert out.read_bytes()[:8] == PNG
    assert main(["plot", str(lb), "NoSuchSignal", "-o", str(out)]) == 64
    err = capsys.readouterr().err
    assert "NoSuchSignal" in err and "MA_C0.EngSpeed" in err
    assert main(["plot", str(lb), "EngSpeed", "-o", str(out), "--window", "x"]) == 64

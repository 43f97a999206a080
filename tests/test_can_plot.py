"""logb.can.plot and `logb plot`: signals against time, units on the axes, wall time when
the recording is dated; one panel per unit or per signal, steps for discrete signals,
legends outside the data, every matplotlib format by extension and a self-contained HTML
page. Checked by content: magic bytes, the Figure's axes and lines, the page's data."""

import json
import pathlib
import re

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("can")
cantools = pytest.importorskip("cantools")

import logb  # noqa: E402
from logb.can import formats, plot  # noqa: E402
from logb.errors import NothingToDecodeError  # noqa: E402
from logb.cli import plot as cli_plot  # noqa: E402
from logb.cli.common import parse_window  # noqa: E402
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


def draw(f, specs, out=None, dbc=None, time=None, window=None, panels="unit"):
    """What `logb plot` draws: (info, Figure), written to `out` too when given."""
    series = plot.collect(f, specs, dbc)
    basis, xs = cli_plot.time_axis(f, series, time, parse_window(window) if window else None)
    info = plot.write(series, xs, basis, out, plot.format_of(out), panels) if out else None
    return info, plot.figure(series, xs, basis, panels), series, xs


def lines_of(fig):
    """{label: (panel index, drawstyle, points)} of every line on the Figure."""
    return {ln.get_label(): (k, ln.get_drawstyle(), len(ln.get_xdata())) for k, ax in enumerate(fig.axes)
            for ln in ax.get_lines()}


@needs_dbc
def test_plot_per_message_streams(tmp_path):
    db, trace = frames()
    lb = tmp_path / "p.logb"
    formats.write_logb(trace, lb, dbc=DBC)
    out = tmp_path / "p.png"
    with logb.LogbFile(str(lb)) as f:
        info, fig, _, _ = draw(f, ["MA_C0.EngSpeed", "CoolantTemp", "MC_200.Status"], out)
        series = plot.collect(f, ["MA_C0.EngSpeed"])
    assert out.read_bytes()[:8] == PNG
    assert info["xlabel"] == "time (UTC)"
    assert info["ylabels"] == ["rpm", "degC", "(no unit)"]
    assert info["panels"] == [["MA_C0.EngSpeed"], ["MA_C0.CoolantTemp"], ["MC_200.Status"]]
    assert [ax.get_ylabel() for ax in fig.axes] == ["rpm", "degC", "(no unit)"]
    # the plotted values are cantools' decode of the same frames
    bus = trace.buses["can0"]
    rows = np.flatnonzero(bus.id == 0xC0)
    want = [db.get_message_by_name("MA_C0").decode(bytes(bus.data[i]), decode_choices=False)["EngSpeed"]
            for i in rows]
    (s,) = series
    assert s.axis.tolist() == bus.t[rows].tolist()
    assert s.values.tolist() == pytest.approx(want)
    assert fig.axes[0].get_lines()[0].get_ydata().tolist() == pytest.approx(want)


@needs_dbc
def test_panels_steps_and_legends(tmp_path):
    """Unitless signals never share a panel; discrete ones are steps; legends outside the axes."""
    _, trace = frames()
    lb = tmp_path / "p.logb"
    formats.write_logb(trace, lb, dbc=DBC)
    specs = ["EngSpeed", "EngSpeedJ", "Counter", "Status", "Checksum", "EngTorque"]
    with logb.LogbFile(str(lb)) as f:
        _, by_unit, series, _ = draw(f, specs)
        _, by_signal, _, _ = draw(f, specs, panels="signal")
    got = lines_of(by_unit)
    # rpm shared; Counter (16 levels), Status (value table) and Checksum (256 levels) alone
    assert len(by_unit.axes) == 5 and got["MA_C0.EngSpeed"][0] == got["ME_CF00400.EngSpeedJ"][0]
    assert len({got[k][0] for k in ("MA_C0.Counter", "MC_200.Status", "MA_C0.Checksum")}) == 3
    assert {k: v[1] for k, v in got.items()} == {
        "MA_C0.EngSpeed": "default", "ME_CF00400.EngSpeedJ": "default", "MA_C0.Counter": "steps-post",
        "MC_200.Status": "steps-post", "MA_C0.Checksum": "default", "MA_C0.EngTorque": "default"}
    assert len(by_signal.axes) == 6 and sorted(v[0] for v in lines_of(by_signal).values()) == list(range(6))
    by_unit.canvas.draw()
    for ax in by_unit.axes:
        legend, data = ax.get_legend().get_window_extent(), ax.get_window_extent()
        assert legend.x0 >= data.x1  # right of the data, not over it
    with pytest.raises(logb.LogbError, match="--panels 'x': expected unit or signal"):
        plot.panels_of(series, "x")


@needs_dbc
@pytest.mark.parametrize("ext, magic", [(".png", PNG), (".svg", b"<?xml"), (".pdf", b"%PDF"),
                                        (".jpg", b"\xff\xd8\xff"), (".jpeg", b"\xff\xd8\xff")])
def test_image_format_by_extension(ext, magic, tmp_path, capsys):
    _, trace = frames()
    lb, out = tmp_path / "p.logb", tmp_path / f"p{ext}"
    formats.write_logb(trace, lb, dbc=DBC)
    assert main(["plot", str(lb), "EngSpeed", "Status", "-o", str(out)]) == 0
    assert out.read_bytes().startswith(magic)
    if ext == ".svg":
        assert b"<svg" in out.read_bytes()[:2000]
    assert main(["plot", str(lb), "EngSpeed", "-o", str(tmp_path / "p.xyz")]) == 64
    err = capsys.readouterr().err
    assert "p.xyz: cannot tell the plot format from .xyz; supported: .html, " in err and ".png" in err
    assert not (tmp_path / "p.xyz").exists()


def page_data(page):
    return json.loads(re.search(r'<script id="logb-data" type="application/json">(.*?)</script>', page, re.S)[1])


@needs_dbc
def test_html_is_self_contained_and_holds_the_data(tmp_path, capsys, monkeypatch):
    _, trace = frames(n=3000)
    lb, out, small = tmp_path / "p.logb", tmp_path / "p.html", tmp_path / "s.html"
    formats.write_logb(trace, lb, dbc=DBC)
    assert main(["plot", str(lb), "EngSpeed", "Status", "-o", str(out), "--title", "a <b>"]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<title>a &lt;b&gt;</title>" in page
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|https?://|fetch\(|XMLHttpRequest", page)
    data = page_data(page)
    with logb.LogbFile(str(lb)) as f:
        full = plot.collect(f, ["EngSpeed", "Status"])
    t0 = trace.buses["can0"].t[0]
    for got, want in zip(data["series"], full):  # every point, seconds after the first (UTC t0_ns)
        assert got["y"] == want.values.tolist() and got["n"] == len(want.values)
        assert got["x"] == pytest.approx(((want.axis - t0) * 1e-6).tolist(), abs=1e-9)
    assert [(d["label"], d["steps"]) for d in data["series"]] == [("MA_C0.EngSpeed", False), ("MC_200.Status", True)]
    assert data["meta"]["basis"] == "utc" and data["meta"]["t0_ns"] == t0 * 1000
    assert [p["ylabel"] for p in data["meta"]["panels"]] == ["rpm", "(no unit)"] and data["meta"]["notes"] == []
    capsys.readouterr()

    monkeypatch.setattr(plot, "HTML_POINTS", 400)  # ~1000 points each: min/max of 200 buckets
    assert main(["plot", str(lb), "EngSpeed", "-o", str(small)]) == 0
    (eng,) = page_data(small.read_text())["series"]
    assert len(eng["x"]) <= 400 < eng["n"] == len(full[0].values)
    assert max(eng["y"]) == full[0].values.max() and min(eng["y"]) == full[0].values.min()
    assert page_data(small.read_text())["meta"]["notes"] == [
        f"MA_C0.EngSpeed: {eng['n']:,} points, shown as the minimum and maximum of each of 200 equal time "
        f"buckets ({len(eng['x']):,} points)"]
    assert f"MA_C0.EngSpeed: min/max per time bucket, {len(eng['x'])} of its points" in capsys.readouterr().out


def test_minmax_keeps_every_extreme():
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 100, 100_000))
    y = rng.normal(0, 1, len(x))
    y[31_337], y[77_777] = 50.0, -60.0  # a spike and a dip
    kx, ky = plot.minmax(x, y, 500)
    assert len(kx) <= 1000 and np.all(np.diff(kx) >= 0)
    assert 50.0 in ky and -60.0 in ky
    edges = np.linspace(x[0], x[-1], 501)
    for b in (0, 123, 499):  # each bucket's extremes are kept
        sel = (x >= edges[b]) & ((x < edges[b + 1]) if b < 499 else (x <= edges[b + 1]))
        inside = ky[(kx >= edges[b]) & ((kx < edges[b + 1]) if b < 499 else (kx <= edges[b + 1]))]
        assert sorted(inside.tolist()) == sorted({y[sel].min(), y[sel].max()})
    assert plot.minmax(x[:10], y[:10], 500)[1].tolist() == y[:10].tolist()


@needs_dbc
def test_plot_raw_stream_with_dbc_and_window(tmp_path):
    _, trace = frames(dated=False)
    lb = tmp_path / "r.logb"
    formats.write_logb(trace, lb)
    with logb.LogbFile(str(lb)) as f:
        with pytest.raises(NothingToDecodeError, match="no DBC"):
            plot.collect(f, ["MA_C0.EngSpeed"])  # no DBC anywhere: the input falls short
        full, _, _, _ = draw(f, ["EngSpeedJ"], tmp_path / "a.png", dbc=str(DBC))
        part, _, _, xs = draw(f, ["EngSpeedJ"], tmp_path / "b.png", dbc=str(DBC), window="0.5:1.0")
        with pytest.raises(logb.LogbError, match="--time utc: these records are undated"):
            draw(f, ["EngSpeedJ"], dbc=str(DBC), time="utc")
        with pytest.raises(logb.LogbError,
                           match=r"--window 10:20 holds no record of these signals, which spans 0\.\d+ to 2\.\d+ s"):
            draw(f, ["EngSpeedJ"], dbc=str(DBC), window="10:20")
    assert full["xlabel"] == "time [s] after the recording's start" and full["ylabels"] == ["rpm"]
    assert 0 < part["points"] < full["points"]
    assert 0.5 <= xs[0].min() and xs[0].max() <= 1.0


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
        info, _, (s,), (x,) = draw(f, ["temp.t"], tmp_path / "a.png")
        _, _, _, (device,) = draw(f, ["temp.t"], time="device")
    assert info["xlabel"] == "time (UTC)" and info["ylabels"] == ["degC"]
    assert x[0] == 1_700_000_000_000_000_000 and np.diff(x).tolist() == [100_000_000] * 49
    assert device.tolist() == pytest.approx((np.arange(50) * 0.1).tolist())
    assert s.values.tolist() == pytest.approx((-40.0 + 0.125 * np.arange(50) * 3).tolist())


@needs_dbc
def test_cli_plot(tmp_path, capsys):
    _, trace = frames()
    lb = tmp_path / "c.logb"
    formats.write_logb(trace, lb, dbc=DBC)
    out = tmp_path / "c.png"
    assert main(["plot", str(lb), "MA_C0.EngSpeed", "EngTorque", "-o", str(out), "--window", "0", "1",
                 "--size", "8x2", "--time", "relative"]) == 0
    said = capsys.readouterr().out
    assert "2 panel(s): MA_C0.EngSpeed, MA_C0.EngTorque" in said and "after the recording's start" in said
    assert out.read_bytes()[:8] == PNG
    assert main(["plot", str(lb), "NoSuchSignal", "-o", str(out)]) == 64
    err = capsys.readouterr().err
    assert "NoSuchSignal" in err and "MA_C0.EngSpeed" in err
    with pytest.raises(SystemExit) as bad:  # argparse: the window is checked with the arguments
        main(["plot", str(lb), "EngSpeed", "-o", str(out), "--window", "x"])
    assert bad.value.code == 64 and "--window 'x': expected T0 T1" in capsys.readouterr().err
    assert main(["plot", str(lb), "EngSpeed", "-o", str(out), "--size", "8"]) == 64
    assert "--size '8': expected WxH" in capsys.readouterr().err
    help_text = cli_plot.DESCRIPTION
    assert ".svg" in help_text and ".html" in help_text and "--panels" in help_text


@needs_dbc
def test_cli_plot_reads_a_trace(tmp_path, capsys):
    """A CAN trace straight in (B's open_input), decoded with --dbc."""
    _, trace = frames()
    src, out = tmp_path / "c.log", tmp_path / "c.svg"
    formats.write_trace(trace, src)
    assert main(["plot", str(src), "EngSpeed", "--dbc", str(DBC), "-o", str(out)]) == 0
    assert b"<svg" in out.read_bytes()[:2000]

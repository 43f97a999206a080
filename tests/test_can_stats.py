"""logb.can.stats and `logb stats`: per-id timing and the bus load estimate."""

import json

import numpy as np
import pytest

import logb
from logb.can import formats, layout, stats
from logb.cli.main import main

pytest.importorskip("can")


def trace_with(rows, exp=-6):
    """rows: (t ticks, id, flags, dlc)."""
    t, ids, fl, dlc = (np.array(c) for c in zip(*rows))
    fd = bool((fl & layout.FLAG_FD).any())
    bus = formats.Bus("can0", t.astype(np.int64), ids.astype(np.uint32), fl.astype(np.uint8),
                      dlc.astype(np.uint8), np.zeros((len(t), 64 if fd else 8), np.uint8))
    return formats.Trace({"can0": bus}, exp, True, None, "test")


def test_periods_jitter_gaps_dlc():
    rows = [(i * 10_000 + (500 if i % 2 else 0), 0x100, 0, 8) for i in range(100)]  # 10 ms ± 0.5 ms
    rows = [r for r in rows if not 40 <= r[0] // 10_000 < 43]  # a 40 ms hole
    rows += [(i * 100_000, 0x18FF0001, layout.FLAG_EXTENDED, 4 + i % 2) for i in range(10)]
    rows += [(5, 0x100, layout.FLAG_REMOTE, 8), (7, 0, layout.FLAG_ERROR, 0)]
    rows.sort()
    (bus,) = stats.trace_stats(trace_with(rows))
    ids = {(r["id"], r["kind"]): r for r in bus["ids"]}
    a = ids[(0x100, "data")]
    assert a["count"] == 97
    assert a["mean_period_s"] == pytest.approx((990_500 - 0) / 96 * 1e-6)
    assert a["median_period_s"] == pytest.approx(0.0095) or a["median_period_s"] == pytest.approx(0.0105)
    assert a["gaps"] == 1 and a["max_gap_s"] == pytest.approx(0.04)  # 390.5 ms → 430.5 ms
    assert a["min_period_s"] == pytest.approx(0.0095) and a["max_period_s"] == pytest.approx(0.04)
    deltas = np.diff([r[0] for r in rows if r[1] == 0x100 and r[2] == 0]) * 1e-6
    assert a["jitter_s"] == pytest.approx(deltas.std())
    assert a["dlc"] == [8] and not a["extended"]
    b = ids[(0x18FF0001, "data")]
    assert b["extended"] and b["dlc"] == [4, 5] and b["count"] == 10 and b["gaps"] == 0
    assert b["mean_period_s"] == pytest.approx(0.1) and b["jitter_s"] == pytest.approx(0.0)
    assert ids[(0x100, "remote")]["count"] == 1 and ids[(0x100, "remote")]["mean_period_s"] is None
    assert bus["error_frames"] == 1 and bus["remote_frames"] == 1 and bus["data_frames"] == 107


def test_bus_load_by_hand():
    # 1000 standard 8-byte frames in 1 s at 500 kbit/s: 111 bits each (47 + 64)
    rows = [(i * 1000, 0x123, 0, 8) for i in range(1001)]
    (bus,) = stats.trace_stats(trace_with(rows), bitrate=500_000)
    frames_bits = 1001 * 111
    assert bus["load"] == pytest.approx(frames_bits / 500_000 / 1.0)
    stuff = (34 + 64 - 1) // 4
    assert bus["load_worst"] == pytest.approx(1001 * (111 + stuff) / 500_000)
    assert bus["peak_load"] == pytest.approx(100 * 111 / 500_000 / 0.1)
    # extended ids: 67 + 8n; remote frames carry no data
    nominal, fast, _ = stats.frame_bits(np.array([layout.FLAG_EXTENDED, layout.FLAG_REMOTE], np.uint8),
                                        np.array([8, 8], np.uint8))
    assert nominal.tolist() == [131, 47] and fast.tolist() == [0, 0]


def test_fd_bits():
    F = layout
    nominal, fast, _ = stats.frame_bits(np.array([F.FLAG_FD | F.FLAG_BRS, F.FLAG_FD, F.FLAG_FD | F.FLAG_BRS],
                                                 np.uint8), np.array([15, 15, 8], np.uint8))
    # 64 bytes: 29 nominal bits (17 arbitration + 12 tail), 31 + 7 + 512 data-phase bits
    assert nominal.tolist() == [29, 29 + 550, 29] and fast.tolist() == [550, 0, 33 + 64]
    rows = [(i * 1000, 0x10, F.FLAG_FD | F.FLAG_BRS, 15) for i in range(1001)]
    (bus,) = stats.trace_stats(trace_with(rows), bitrate=500_000, data_bitrate=2_000_000)
    assert bus["load"] == pytest.approx(1001 * (29 / 500_000 + 550 / 2_000_000))


def test_cli_stats(tmp_path, capsys):
    rows = [(1_700_000_000_000_000 + i * 20_000, 0x200, 0, 8) for i in range(50)]
    lb = tmp_path / "s.logb"
    formats.write_logb(trace_with(rows), lb)
    assert main(["stats", str(lb)]) == 0
    text = capsys.readouterr().out
    assert "bus can0: 50 frames" in text and "0x200" in text and "20.000" in text
    assert main(["stats", str(lb), "--json", "--bitrate", "250000"]) == 0
    out = json.loads(capsys.readouterr().out)
    (bus,) = out["buses"]
    assert bus["bitrate"] == 250000 and bus["ids"][0]["count"] == 50
    assert bus["ids"][0]["mean_period_s"] == pytest.approx(0.02)
    assert main(["stats", str(lb), "--stream", "nope"]) == 64
    assert main(["stats", str(lb), "--bitrate", "0"]) == 64
    plain = tmp_path / "plain.logb"
    schema = logb.Schema(uuid=logb.stream_uuid("x", "y"), name="y", record_bits=8, axis_kind=logb.AxisKind.time,
                         axis_mode=logb.AxisMode.implicit, axis_exp=-3, axis_step=1,
                         fields=(logb.Field("v", 0, 8, logb.DataType.uint),))
    with logb.Writer(str(plain)) as w:
        w.add_stream(schema).write_batch({"v": np.arange(3)})
    assert main(["stats", str(plain)]) == 64  # no CAN stream


def test_cli_stats_window_time_and_load_window(tmp_path, capsys):
    """--window is a time range as everywhere (the statistics are of the frames in it), --time
    how the bus's first and last frame show, --load-window the peak-load window; the old
    --window S (the peak-load window) is a usage error now, not a silent range."""
    # 0..1 s: one frame per ms; 1..2 s: one per 10 ms
    rows = [(1_700_000_000_000_000 + i * 1000, 0x100, 0, 8) for i in range(1000)]
    rows += [(1_700_000_001_000_000 + i * 10_000, 0x100, 0, 8) for i in range(100)]
    lb = tmp_path / "w.logb"
    formats.write_logb(trace_with(rows), lb)

    def stats_json(*args):
        assert main(["stats", str(lb), "--json", *args]) == 0
        (bus,) = json.loads(capsys.readouterr().out)["buses"]
        return bus

    whole = stats_json()
    assert whole["frames"] == 1100 and whole["time"] == "utc"
    assert whole["start"] == "2023-11-14T22:13:20.000000Z" and whole["end"] == "2023-11-14T22:13:21.990000Z"
    assert whole["load_window_s"] == 0.1 and whole["peak_load"] == pytest.approx(100 * 111 / 500_000 / 0.1)
    late = stats_json("--window", "1:", "--time", "relative")
    assert late["frames"] == 100 and late["start"] == 1.0 and late["end"] == pytest.approx(1.99)
    assert late["ids"][0]["mean_period_s"] == pytest.approx(0.01)
    assert stats_json("--window", "2023-11-14T22:13:20.5Z/2023-11-14T22:13:20.6Z")["frames"] == 101
    assert stats_json("--load-window", "0.5")["peak_load"] == pytest.approx(500 * 111 / 500_000 / 0.5)
    assert main(["stats", str(lb), "--window", "5", "6"]) == 64  # outside the recording
    assert "holds no record" in capsys.readouterr().err
    assert main(["stats", str(lb), "--load-window", "0"]) == 64
    with pytest.raises(SystemExit) as exc:
        main(["stats", str(lb), "--window", "0.1"])
    assert exc.value.code == 64 and "expected T0 T1" in capsys.readouterr().err
    assert main(["stats", str(lb), "--window", "1:", "--time", "device"]) == 0
    text = capsys.readouterr().out
    assert "span 0.990 s (1700000001.000000 to 1700000001.990000 s device time)" in text
    undated = tmp_path / "u.log"
    undated.write_text("".join(f"({i / 100:.6f}) can0 123#00\n" for i in range(10)))
    assert main(["stats", str(undated), "--time", "utc"]) == 64
    assert "undated" in capsys.readouterr().err
    assert main(["stats", str(undated)]) == 0
    assert "(0.000000 to 0.090000 s after the start)" in capsys.readouterr().out

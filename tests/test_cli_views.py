"""Issue 14 on the real traces: traces read directly, one time base, no silent nothing, the CAN views."""

import csv
import json
import os

import pytest

from logb.cli.main import main

pytest.importorskip("can")
pytest.importorskip("cantools")
DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
DURANGO = os.path.join(DATA, "traces", "durango-aconoff-candump.log")
GIORGIO = os.path.join(DATA, "dbc", "fca_giorgio.dbc")
VEHICLE = os.path.join(DATA, "dbc", "cantools-vehicle.dbc")
pytestmark = pytest.mark.skipif(not os.path.isfile(DURANGO), reason="shared trace data absent")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_decode_a_trace_in_utc_and_relative_windows(tmp_path, capsys):
    out = tmp_path / "abs.csv"
    code, text, _ = run(capsys, "decode", DURANGO, "--dbc", GIORGIO, "--messages", "ABS_6", "--window", "10", "20",
                        "-o", out)
    assert code == 0 and "time time_utc" in text
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 100 and rows[0]["time_utc"].startswith("2025-03-18T23:06:55.")  # start 23:06:45.233
    assert os.listdir(tmp_path) == ["abs.csv"] and not os.path.exists(DURANGO + ".logb")
    iso = tmp_path / "iso.csv"
    assert run(capsys, "decode", DURANGO, "--dbc", GIORGIO, "--messages", "ABS_6", "--time", "relative",
               "--window", "2025-03-18T23:06:55.233154Z/2025-03-18T23:07:05.233154Z", "-o", iso)[0] == 0
    rel = [float(r["time_s"]) for r in csv.DictReader(open(iso))]
    assert len(rel) == 100 and 10 <= rel[0] < 10.1 and rel[-1] <= 20


@pytest.mark.parametrize("argv, says", [
    (["--messages", "NOPE"], "no message 'NOPE'; the messages: ABS_1"),
    (["--signals", "NOPE"], "no signal 'NOPE'; the signals: ABS_1.CHECKSUM"),
    (["--window", "1000", "2000"], "holds no frame of the chosen messages, which span 0.005153 to"),
    (["--messages", "ABS_4"], "no frame of ABS_4"),
    (["--id", "0x7FF"], "matches none of the messages' ids"),
])
def test_decode_says_why_nothing(tmp_path, capsys, argv, says):
    code, _, err = run(capsys, "decode", DURANGO, "--dbc", GIORGIO, *argv, "-o", tmp_path / "x.csv")
    assert code == 64 and says in err and not (tmp_path / "x.csv").exists()


def test_decode_window_reversed_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["decode", DURANGO, "--dbc", GIORGIO, "--window", "20:10", "-o", str(tmp_path / "x.csv")])
    assert exc.value.code == 64 and "reversed" in capsys.readouterr().err


def test_several_dbcs_merge_and_a_dbc_matching_nothing_is_an_error(tmp_path, capsys):
    code, _, err = run(capsys, "decode", DURANGO, "--dbc", VEHICLE, "-o", tmp_path / "x.csv")
    assert code == 64 and "cantools-vehicle.dbc matches no frame of bus can0" in err
    code, text, _ = run(capsys, "decode", DURANGO, "--dbc", GIORGIO, "--dbc", f"can0={GIORGIO}", "--messages",
                        "ABS_6", "-o", tmp_path / "x.csv")
    assert code == 0 and "dbc conflict: ABS_6: in fca_giorgio.dbc and fca_giorgio.dbc" not in text  # per bus wins
    code, text, _ = run(capsys, "decode", DURANGO, "--dbc", f"can0={GIORGIO}", "--dbc", f"can0={GIORGIO}",
                        "--messages", "ABS_6", "-o", tmp_path / "x.csv")
    assert code == 0 and "dbc conflict: ABS_6: in fca_giorgio.dbc and fca_giorgio.dbc" in text
    code, _, err = run(capsys, "decode", DURANGO, "--dbc", f"can9={GIORGIO}", "-o", tmp_path / "x.csv")
    assert code == 64 and "no bus 'can9'; the buses: can0" in err


def test_dump_candump_round_trips_the_trace_lines(capsys):
    code, text, _ = run(capsys, "dump", DURANGO, "--format", "candump")
    assert code == 0
    lines = text.splitlines()
    source = [" ".join(line.split()[:3]) for line in open(DURANGO) if line.strip()]
    assert len(lines) == len(source) == 75712 and lines[:50] == source[:50]
    code, text, _ = run(capsys, "dump", DURANGO, "--id", "0x101", "--window", "0:0.2")
    assert code == 0 and text.splitlines() == ["2025-03-18T23:06:45.307410Z  can0       101  [5]  40 04 09 16 00",
                                               "2025-03-18T23:06:45.407441Z  can0       101  [5]  40 04 08 16 00"]
    code, _, err = run(capsys, "dump", DURANGO, "--id", "0x7FF")
    assert code == 64 and "its ids: 0x37, 0x101" in err


def test_info_and_stats_and_export_on_a_trace(tmp_path, capsys):
    code, text, _ = run(capsys, "info", DURANGO, "--json")
    info = json.loads(text)
    assert code == 0 and info["buses"] == [{"name": "can0", "frames": 75712, "ids": 150, "fd": False}]
    assert info["span"]["start_utc"] == "2025-03-18T23:06:45.233154Z" and info["span"]["duration_s"] == 29.682301
    code, text, _ = run(capsys, "stats", DURANGO, "--id", "0x101,0x102", "--json")
    assert code == 0 and [i["id"] for i in json.loads(text)["buses"][0]["ids"]] == [0x101, 0x102]
    code, text, _ = run(capsys, "export", DURANGO, "--id", "0x101", "-o", tmp_path / "abs.log")
    assert code == 0 and text == f"wrote {tmp_path / 'abs.log'}: 297 frames as candump (can0 297)\n"

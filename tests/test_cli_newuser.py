"""Issue 14's acceptance walk, as a cantools/python-can user meets the CLI: every command on
an input it cannot use says what to do, and frames no record holds are counted, not lost."""

import io
import json

import numpy as np
import pytest

import logb
from logb import tables
from logb.cli.main import main

can = pytest.importorskip("can")
pytestmark = pytest.mark.single_backend  # CLI plumbing: the kernels are covered elsewhere


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# 0x800 has 3 hex digits: python-can reads it as an 11-bit frame, which no raw bus record holds
BAD_CANDUMP = """\
(1700000000.000000) can0 123#1122
(1700000000.001000) can0 800#33
(1700000000.002000) can0 123#4455
(1700000000.003000) can1 7FF#
"""


def test_import_refuses_and_counts_what_spec_13_1_refuses(tmp_path, capsys):
    src = tmp_path / "bad.log"
    src.write_text(BAD_CANDUMP)
    out = tmp_path / "bad.logb"
    code, text, _ = run(capsys, "import", src, "-o", out, "--json")
    summary = json.loads(text)
    assert code == 0 and summary["frames"] == 3 and summary["invalid"] == 1
    assert "can0: 1 frames" in summary["left_out"][0] and "id 0x800" in summary["left_out"][0]
    with logb.LogbFile(str(out)) as f:
        assert [int(i) for i in f.stream("can0").columns().raw["id"]] == [0x123, 0x123]  # never masked
        assert f.stream("can0").lost == {tables.LOST_INVALID: 1} and f.stream("can1").lost == {}
    code, text, _ = run(capsys, "import", src, "-o", out)
    assert code == 0 and "left out: can0: 1 frames" in text and "an id over 11 bits on a standard frame" in text


def test_info_shows_the_loss_counters(tmp_path, capsys):
    src = tmp_path / "bad.log"
    src.write_text(BAD_CANDUMP)
    out = tmp_path / "bad.logb"
    assert run(capsys, "import", src, "-o", out)[0] == 0
    code, text, _ = run(capsys, "info", out)
    assert code == 0 and "lost (the writer's counts, never written): 1 refused" in text
    code, text, _ = run(capsys, "info", out, "--json")
    streams = {s["name"]: s for s in json.loads(text)["streams"]}
    assert streams["can0"]["lost"] == {"invalid": 1} and streams["can1"]["lost"] == {}
    # the trace read directly says the same, and stderr says what the command will not see
    code, text, err = run(capsys, "info", src, "--json")
    assert {s["name"]: s["lost"] for s in json.loads(text)["streams"]}["can0"] == {"invalid": 1}
    assert "can0: 1 frames no record holds as given" in err


def test_info_lists_a_stream_whose_frames_were_all_refused(tmp_path, capsys):
    src = tmp_path / "only-bad.log"
    src.write_text("(1700000000.000000) can3 801#00\n")
    code, text, _ = run(capsys, "info", src)
    assert code == 0 and "stream 'can3'" in text and "1 refused" in text


def test_info_says_nothing_of_counters_that_are_zero(tmp_path, capsys):
    """Writers restate their counters (zeros included) at every segment: info
    prints a loss line only for what was lost, --json keeps every counter."""
    schema = logb.Schema(uuid=logb.stream_uuid("t", "z"), name="z", record_bits=8,
                         axis_kind=logb.AxisKind.time, axis_mode=logb.AxisMode.implicit, axis_exp=-3, axis_step=1,
                         fields=(logb.Field("x", 0, 8, logb.DataType.uint),))
    path = tmp_path / "zero.logb"
    with logb.Writer(str(path), time_base="relative") as w:
        sw = w.add_stream(schema)
        sw.write_batch({"x": [1]}, axis_base=0)
        w.meta({tables.LOST_BUFFER: 0, tables.LOST_INVALID: 0}, stream=sw)
    code, text, _ = run(capsys, "info", path)
    assert code == 0 and "lost (" not in text
    code, text, _ = run(capsys, "info", path, "--json")
    assert {s["name"]: s["lost"] for s in json.loads(text)["streams"]}["z"] == {"buffer": 0, "invalid": 0}


def test_loss_counters_sum_the_last_value_of_each_session():
    """SPEC G13: cumulative per writer session, the last value is the session's total."""
    schema = logb.Schema(uuid=logb.stream_uuid("t", "v"), name="v", record_bits=8,
                         axis_kind=logb.AxisKind.time, axis_mode=logb.AxisMode.implicit, axis_exp=-3, axis_step=1,
                         fields=(logb.Field("x", 0, 8, logb.DataType.uint),))
    parts = []
    for counts in ((1, 3), (5,)):
        bio = io.BytesIO()
        w = logb.Writer(bio, time_base="relative", segment_bytes=1)
        sw = w.add_stream(schema)
        for n in counts:
            sw.write_batch({"x": [1]}, axis_base=0)
            w.meta({tables.LOST_BUFFER: n, tables.LOST_CONTROLLER: "x1"}, stream=sw)
        w.close()
        parts.append(bio.getvalue())
    second = parts[1][16:]  # a concatenation: each input minus its file header (SPEC §6.6)
    f = logb.LogbFile(parts[0] + second)
    assert len(f.sessions) == 2
    assert f.stream("v").lost == {tables.LOST_BUFFER: 3 + 5}
    assert sum(n.kind == "bad-counter" for n in f.report.notes) == 3


def test_mdf4_read_refuses_the_same_frames(tmp_path, capsys):
    from logb.can import formats, layout

    bus = formats.Bus("can0", np.array([10, 20, 30], np.int64), np.array([0x100, 0x900, 0x100], np.uint32),
                      np.zeros(3, np.uint8), np.array([1, 1, 9], np.uint8), np.ones((3, 8), np.uint8))
    mf4 = tmp_path / "x.mf4"
    formats.write_trace(formats.Trace({"can0": bus}, -6, True, None, "test"), mf4)
    trace = formats.read_trace(mf4)
    kept = trace.buses["can0"]
    # 0x900 is refused on a standard frame; classic DLC 9 carries 8 bytes and is kept
    assert kept.id.tolist() == [0x100, 0x100] and kept.invalid == 1
    assert "id 0x900" in trace.left_out[0]
    assert layout.refusal(0x100, 0, 9, 1) == "1 data bytes under DLC code 9"
    assert layout.refusal(0x100, layout.FLAG_FD, 9, 12) is None and layout.refusal(0x100, 0, 16, 8) is not None


def test_a_candump_cut_mid_line_imports_up_to_the_cut(tmp_path, capsys):
    src = tmp_path / "cut.log"
    src.write_text("(1.000000) can0 123#11\n(2.000000) can0 123#22\n(3.000000) can0 12")
    code, text, _ = run(capsys, "import", src, "-o", tmp_path / "cut.logb")
    assert code == 0 and "2 frames from candump" in text and "left out: '(3.000000) can0 12'" in text
    code, text, err = run(capsys, "dump", src, "--format", "candump")
    assert code == 0 and len(text.splitlines()) == 2 and "no end of line" in err
    # a bad line inside the trace is an error naming it, not a cut
    src.write_text("(1.000000) can0 123#11\n(2.000000) can0 12\n(3.000000) can0 123#22\n")
    code, _, err = run(capsys, "import", src, "-o", tmp_path / "bad.logb")
    assert code == 1 and "line 2 '(2.000000) can0 12'" in err and not (tmp_path / "bad.logb").exists()


TWO_BUSES = "(1700000000.000000) can0 101#4004091600\n(1700000000.010000) can1 101#4004091600\n"
DBC = """VERSION ""
BS_:
BU_: ECU
BO_ 257 EngineData: 5 ECU
 SG_ EngSpeed : 0|16@1+ (0.25,0) [0|16383] "rpm" ECU
 SG_ Gear : 16|8@1+ (1,0) [0|8] "" ECU
"""


def test_names_are_looked_up_with_a_suggestion(tmp_path, capsys):
    src, dbc = tmp_path / "t.log", tmp_path / "e.dbc"
    src.write_text(TWO_BUSES)
    dbc.write_text(DBC)
    code, _, err = run(capsys, "decode", src, "--dbc", dbc, "--signals", "EngineSpeed", "-o", tmp_path / "o.csv")
    assert code == 64 and "(did you mean 'EngineData.EngSpeed'?)" in err
    code, _, err = run(capsys, "decode", src, "--dbc", dbc, "--messages", "enginedata", "-o", tmp_path / "o.csv")
    assert code == 64 and "(did you mean 'EngineData'?)" in err
    code, _, err = run(capsys, "plot", src, "EngineSpeed", "--dbc", dbc, "-o", tmp_path / "p.png")
    assert code == 64 and "(did you mean 'EngineData.EngSpeed'?)" in err
    code, _, err = run(capsys, "export", src, "--stream", "can", "-o", tmp_path / "x.log")
    assert code == 64 and "did you mean 'can0' or 'can1'" in err and "the buses: can0, can1" in err
    code, _, err = run(capsys, "dump", src, "--stream", "cna1")
    assert code == 64 and "(did you mean 'can1'?)" in err
    assert not list(tmp_path.glob("o.csv")) and not list(tmp_path.glob("p.png"))


def test_what_to_do_when_the_input_falls_short(tmp_path, capsys):
    src, dbc = tmp_path / "t.log", tmp_path / "e.dbc"
    src.write_text(TWO_BUSES)
    dbc.write_text(DBC)
    code, _, err = run(capsys, "plot", src, "EngSpeed", "-o", tmp_path / "p.png")
    assert code == 1 and "no DBC" in err and "--dbc FILE.dbc" in err  # the input falls short, as decode says
    code, _, err = run(capsys, "decode", src, "-o", tmp_path / "o.csv")
    assert code == 1 and "give one with --dbc FILE.dbc" in err
    code, _, err = run(capsys, "decode", src, "--dbc", dbc, "-o", tmp_path / "o.xlsx")
    assert code == 64 and "name it .csv or .parquet" in err and not (tmp_path / "o.xlsx").exists()
    code, _, err = run(capsys, "export", src, "-o", tmp_path / "o.csv")
    assert code == 64 and "--stream is required for csv: one of can0, can1" in err
    code, _, err = run(capsys, "decode", src, "--dbc", src, "-o", tmp_path / "o.csv")  # a trace as the DBC
    assert code == 1 and err.startswith(f"logb decode: {src}: cannot parse the DBC")
    assert f"{src}: {src}" not in err


def test_top_level_help_teaches_the_common_path(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    text = capsys.readouterr().out
    assert e.value.code == 0
    for step in ("logb info drive.blf", "logb decode drive.blf --dbc vehicle.dbc -o", "logb plot drive.blf --dbc",
                 "logb transport truck.log --j1939", "logb import drive.blf --dbc"):
        assert step in text


def test_import_of_a_directory_says_so(tmp_path, capsys):
    code, _, err = run(capsys, "import", tmp_path, "-o", tmp_path / "x.logb")
    assert code == 64 and "is a directory" in err


def test_virtual_bus_warns_it_is_one_process_only(tmp_path, capsys):
    src = tmp_path / "t.log"
    src.write_text("(1.000000) can0 123#11\n")
    code, _, err = run(capsys, "replay", src, "-i", "virtual", "-c", "newuser", "--speed", "0")
    assert code == 0 and "one process only" in err and "udp_multicast" in err

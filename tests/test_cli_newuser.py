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
    assert "can0: 1 frames" in summary["refused"][0] and "id 0x800" in summary["refused"][0]
    with logb.LogbFile(str(out)) as f:
        assert [int(i) for i in f.stream("can0").columns().raw["id"]] == [0x123, 0x123]  # never masked
        assert f.stream("can0").lost == {tables.LOST_INVALID: 1} and f.stream("can1").lost == {}
    code, text, _ = run(capsys, "import", src, "-o", out)
    assert code == 0 and "refused: can0: 1 frames" in text and "an id over 11 bits on a standard frame" in text


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
    assert "id 0x900" in trace.refused[0]
    assert layout.refusal(0x100, 0, 9, 1) == "1 data bytes under DLC code 9"
    assert layout.refusal(0x100, layout.FLAG_FD, 9, 12) is None and layout.refusal(0x100, 0, 16, 8) is not None

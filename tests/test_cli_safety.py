"""The CLI on real recordings handled roughly: --recover reads a file cut
from the middle, no command destroys its input or leaves a partial output,
and every error is one line and its documented exit status (issue 10)."""

import json
import os
import stat

import numpy as np
import pytest

import logb
from logb import AxisKind, AxisMode, DataType, Field, Schema
from logb.cli import common, export
from logb.cli.main import main
from logb.errors import UsageError
from logb.framing import encode_file_header

RECOVER_HINT = "--recover reads it from its first SYNC frame"
DBC = """VERSION ""

BU_: ECU

BO_ 256 Engine: 8 ECU
 SG_ Speed : 7|16@0+ (0.25,0) [0|16383.75] "rpm" ECU
 SG_ Temp : 16|8@1- (0.5,-40) [-104|23.5] "degC" ECU
"""


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A recording of several segments, as a logger writes them: 80,000 records of a sensor."""
    path = tmp_path_factory.mktemp("rec") / "rec.logb"
    schema = Schema(logb.stream_uuid("bench", "sensor"), "sensor", 32, AxisKind.time, AxisMode.implicit,
                    axis_exp=-3, axis_step=10,
                    fields=(Field("a", 0, 16, DataType.uint, unit="mV"), Field("b", 16, 16, DataType.sint)))
    rng = np.random.default_rng(10)
    with logb.Writer(str(path), time_base="unix", segment_bytes=16 << 10) as w:
        s = w.add_stream(schema)
        for i in range(160):
            s.write_batch({"a": rng.integers(0, 60000, 500), "b": rng.integers(-30000, 30000, 500)},
                          axis_base=i * 5000)
    return path


def cut_from(data, n, tmp_path):
    """`tail -c +N+1`: the file from byte n on, and the records its segments from the first SYNC at or after n hold."""
    with logb.LogbFile(data) as f:
        sync = min(sg.offset for sg in f.segments if sg.offset >= n)
        records = sum(fl.header.record_count for s in f.streams.values() for fl in s.frames if fl.offset > sync)
    path = tmp_path / "mid.logb"
    path.write_bytes(data[n:])
    return path, sync - n, records


def one_line_error(capsys, command):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"logb {command}: ") and "Traceback" not in err, err
    return err


# ---------------------------------------------------------------- --recover
@pytest.mark.parametrize("command", ["info", "verify", "dump", "cat", "export", "decode", "stats", "plot"])
def test_every_reading_command_has_recover(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "--recover" in capsys.readouterr().out


@pytest.mark.parametrize("n", [1, 100_001, 200_000])
def test_a_file_cut_from_the_middle_reads_from_its_first_sync_with_recover(recording, tmp_path, capsys, n):
    mid, lost, records = cut_from(recording.read_bytes(), n, tmp_path)
    assert records > 0
    for argv in (["verify"], ["info", "--json"], ["dump"]):
        assert main([*argv, str(mid)]) == 2  # without --recover: not Logb from its start, and how to read it
        err = one_line_error(capsys, argv[0])
        assert err.endswith(f"; {RECOVER_HINT}\n")
    assert main(["info", "--json", "--recover", str(mid)]) == 1  # the lost start is damage
    info = json.loads(capsys.readouterr().out)
    assert info["version"] is None and info["streams"][0]["records"] == records
    assert info["skipped"] == [{"start": 0, "end": lost, "cause": "bad file header"}]
    assert main(["verify", "--json", "--recover", str(mid)]) == 1
    assert json.loads(capsys.readouterr().out)["records"] == records
    assert main(["dump", "--json", "--recover", str(mid)]) == 1
    assert len(capsys.readouterr().out.splitlines()) == records
    out = tmp_path / "mid.csv"
    assert main(["export", "--recover", str(mid), "--stream", "sensor", "-o", str(out)]) == 1
    assert len(out.read_text().splitlines()) == records + 1


def test_cat_recover_makes_a_whole_file_of_a_cut_one(recording, tmp_path, capsys):
    data = recording.read_bytes()
    mid, lost, records = cut_from(data, 150_000, tmp_path)
    out = tmp_path / "fixed.logb"
    assert main(["cat", str(mid), "-o", str(out)]) == 2
    assert RECOVER_HINT in one_line_error(capsys, "cat") and not out.exists()
    assert main(["cat", "--recover", str(recording), str(mid), "-o", str(out)]) == 1  # it lost its start
    assert out.read_bytes() == data + mid.read_bytes()[lost:]
    assert main(["verify", "--json", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 80_000 + records


def test_recover_reads_a_whole_file_as_it_is(recording, capsys):
    assert main(["verify", "--recover", "--json", str(recording)]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 80_000


# ---------------------------------------------------------------- nothing destroyed
def _can_inputs(tmp_path):
    pytest.importorskip("can")
    pytest.importorskip("cantools")
    trace = tmp_path / "t.log"
    trace.write_text("".join(f"({1700000000 + i / 100:.6f}) can0 100#{i % 256:02X}0{i % 10}000000000000\n"
                             for i in range(300)))
    dbc = tmp_path / "v.dbc"
    dbc.write_text(DBC)
    rec = tmp_path / "can.logb"
    assert main(["import", str(trace), "--dbc", str(dbc), "-o", str(rec)]) == 0
    return trace, dbc, rec


def _writers(tmp_path, recording):
    """(argv with OUT for the output, the inputs OUT may not be) for every command that writes."""
    trace, dbc, rec = _can_inputs(tmp_path)
    r = str(recording)
    return [
        (["cat", r, str(rec), "-o", "OUT"], [recording, rec]),
        (["export", r, "--stream", "sensor", "--format", "csv", "-o", "OUT"], [recording]),
        (["export", str(rec), "--format", "candump", "-o", "OUT"], [rec]),
        (["import", str(trace), "--dbc", str(dbc), "-o", "OUT"], [trace, dbc]),
        (["decode", str(rec), "--format", "csv", "-o", "OUT"], [rec]),
        (["decode", str(rec), "--dbc", str(dbc), "--format", "csv", "-o", "OUT"], [dbc]),
        (["plot", str(rec), "Speed", "-o", "OUT"], [rec]),
        (["dbc", "compile", str(dbc), "-o", "OUT"], [dbc]),
    ]


def _listing(folder):
    return sorted(os.listdir(folder))


def test_no_command_writes_over_one_of_its_inputs(tmp_path, recording, capsys):
    pytest.importorskip("matplotlib")
    for argv, inputs in _writers(tmp_path, recording):
        for src in inputs:
            before = src.read_bytes()
            alias_link, alias_hard = tmp_path / "link", tmp_path / "hard"
            alias_link.symlink_to(src)
            os.link(src, alias_hard)
            (src.parent / "sub").mkdir(exist_ok=True)
            for out in (src, alias_link, alias_hard, src.parent / "sub" / ".." / src.name):
                listings = _listing(tmp_path), _listing(src.parent)
                assert main([str(out) if a == "OUT" else a for a in argv]) == 64, (argv, out)
                assert "the output is the input" in one_line_error(capsys, argv[0])
                assert src.read_bytes() == before, (argv, out)
                assert (_listing(tmp_path), _listing(src.parent)) == listings, (argv, out)
            alias_link.unlink()
            alias_hard.unlink()


def test_every_writing_command_writes_through_a_temporary_it_renames(tmp_path, recording, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    seen = []
    replace = os.replace

    def watching(src, dst):  # the target appears only by this rename, from a temporary beside it
        seen.append((src, dst, os.path.exists(dst)))
        return replace(src, dst)

    monkeypatch.setattr(os, "replace", watching)
    for i, (argv, _inputs) in enumerate(_writers(tmp_path, recording)):
        out = tmp_path / f"out{i}{'.png' if argv[0] == 'plot' else '.bin'}"
        before = _listing(tmp_path)
        seen.clear()
        assert main([str(out) if a == "OUT" else a for a in argv]) in (0, 1), argv
        capsys.readouterr()
        ((src, dst, existed),) = seen
        # the temporary has the target's own name (a TRC header names its file) in a private folder beside it
        assert dst == str(out) and os.path.basename(src) == out.name and not existed
        assert os.path.dirname(os.path.dirname(src)) == str(tmp_path)
        assert _listing(tmp_path) == sorted(before + [out.name]) and out.stat().st_size > 0, argv


def test_import_of_a_dbc_that_does_not_parse_leaves_nothing(tmp_path, capsys):
    trace, _dbc, _rec = _can_inputs(tmp_path)
    bad = tmp_path / "bad.dbc"
    bad.write_text("this is not a DBC\n")
    out = tmp_path / "out.logb"
    listing = _listing(tmp_path)
    assert main(["import", str(trace), "--dbc", str(bad), "-o", str(out)]) == 1
    assert "cannot parse the DBC" in one_line_error(capsys, "import")
    assert _listing(tmp_path) == listing  # no OUT (it was a 328-byte file verify called OK) and no temporary
    out.write_bytes(b"kept")
    assert main(["import", str(trace), "--dbc", str(bad), "-o", str(out)]) == 1
    assert out.read_bytes() == b"kept"  # a failed command leaves an existing OUT as it was


def test_failures_leave_no_output_and_no_temporary(tmp_path, recording, capsys):
    pytest.importorskip("matplotlib")
    _trace, _dbc, rec = _can_inputs(tmp_path)
    out = tmp_path / "out"
    failing = [
        ["export", str(recording), "--stream", "nope", "--format", "csv", "-o", str(out)],
        ["export", str(recording), "--format", "candump", "-o", str(out)],  # no CAN bus in it
        ["decode", str(rec), "--dbc", str(recording), "-o", str(out)],  # not a DBC
        ["plot", str(rec), "NoSuchSignal", "-o", str(out)],
    ]
    for argv in failing:
        listing = _listing(tmp_path)
        assert main(argv) in (1, 64), argv
        one_line_error(capsys, argv[0])
        assert _listing(tmp_path) == listing, argv


def test_output_helper_is_atomic_and_cleans_up(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old")
    target.chmod(0o640)
    with pytest.raises(KeyboardInterrupt):
        with common.output(str(target)) as tmp:
            # writers go by the extension, some write the name into the file: both are the target's
            assert os.path.basename(tmp) == "t.csv" and os.path.dirname(os.path.dirname(tmp)) == str(tmp_path)
            open(tmp, "w").write("half")
            raise KeyboardInterrupt
    assert target.read_text() == "old" and _listing(tmp_path) == ["t.csv"]
    with common.output(str(target)) as tmp:
        open(tmp, "w").write("new")
        assert target.read_text() == "old"
    assert target.read_text() == "new" and _listing(tmp_path) == ["t.csv"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the replaced file's mode is kept
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with common.output(str(link)) as tmp:
        open(tmp, "w").write("via link")
    assert link.is_symlink() and target.read_text() == "via link"  # the link still names the file
    with pytest.raises(UsageError, match="is a directory"):
        with common.output(str(tmp_path)):
            pass
    with pytest.raises(UsageError, match="no such directory"):
        with common.output(str(tmp_path / "nope" / "x.csv")):
            pass


# ---------------------------------------------------------------- errors: one line, documented status
@pytest.mark.parametrize("argv", [
    ["info", "DIR"], ["verify", "DIR"], ["dump", "--frames", "DIR"], ["cat", "DIR", "-o", "OUT"],
    ["export", "DIR", "--stream", "x", "-o", "OUT"], ["stats", "DIR"], ["cat", "FILE", "-o", "DIR"],
    ["export", "FILE", "--stream", "sensor", "-o", "DIR"],
])
def test_a_directory_argument_is_a_usage_error_in_one_line(argv, tmp_path, recording, capsys):
    subs = {"DIR": str(tmp_path), "OUT": str(tmp_path / "out"), "FILE": str(recording)}
    assert main([subs.get(a, a) for a in argv]) == 64
    assert "directory" in one_line_error(capsys, argv[0]).lower()


def test_import_and_decode_of_a_directory_are_usage_errors(tmp_path, capsys):
    trace, dbc, rec = _can_inputs(tmp_path)
    for argv in (["import", "--format", "candump", str(tmp_path), "-o", str(tmp_path / "x.logb")],
                 ["import", str(trace), "--dbc", str(tmp_path), "-o", str(tmp_path / "x.logb")],
                 ["decode", str(rec), "--dbc", str(tmp_path), "-o", str(tmp_path / "x.csv")],
                 ["dbc", "compile", str(tmp_path)]):
        assert main(argv) == 64, argv
        assert "directory" in one_line_error(capsys, argv[0]).lower()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_of_a_truncated_input_exports_what_it_holds_and_exits_1(fmt, recording, tmp_path, capsys):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    cut = tmp_path / "cut.logb"
    cut.write_bytes(recording.read_bytes()[:100_000])
    out = tmp_path / f"cut.{fmt}"
    assert main(["verify", str(cut)]) == 1
    with logb.LogbFile(str(cut)) as f:
        records = f.stream("sensor").records
    assert main(["export", str(cut), "--stream", "sensor", "-o", str(out)]) == 1
    if fmt == "csv":
        assert len(out.read_text().splitlines()) == records + 1
    else:
        import pyarrow.parquet as pq
        assert pq.read_table(out).num_rows == records


def test_cat_of_inputs_cut_inside_their_header_exits_1_not_2(recording, tmp_path, capsys):
    data = recording.read_bytes()
    tiny, empty = tmp_path / "tiny.logb", tmp_path / "empty.logb"
    tiny.write_bytes(data[:10])
    empty.write_bytes(b"")
    out = tmp_path / "out.logb"
    for cut in (tiny, empty):
        assert main(["verify", str(cut)]) == 1  # verify: truncated
        assert main(["cat", str(recording), str(cut), "-o", str(out)]) == 1
        assert out.read_bytes() == data
    assert main(["cat", str(tiny), "-o", str(out)]) == 1
    assert out.read_bytes() == encode_file_header()


def test_dump_frames_json_of_a_file_with_an_index(recording, capsys):
    assert main(["dump", "--frames", "--json", str(recording)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (index,) = [fr for fr in lines if fr["type"] == "INDEX"]
    ((uuid, entries),) = index["payload"]["streams"]
    assert uuid == logb.stream_uuid("bench", "sensor").hex() and len(entries) == 160
    assert set(entries[0]) == {"back_offset", "first_axis_raw", "record_count", "run_id"}
    assert bytes.fromhex(entries[0]["first_axis_raw"]) == bytes(8)


def test_parquet_export_of_a_zero_width_bytes_field(tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    schema = Schema(b"\x01" * 16, "s", 16, AxisKind.time, AxisMode.implicit, axis_exp=-6, axis_step=10,
                    fields=(Field("n", 0, 16, DataType.uint), Field("z", 16, 0, DataType.bytes)))
    path, out = tmp_path / "zw.logb", tmp_path / "zw.parquet"
    with logb.Writer(str(path), time_base="relative") as w:
        w.add_stream(schema).write_batch({"n": [1, 2], "z": [b"", b""]})
    assert main(["export", str(path), "--stream", "s", "-o", str(out)]) == 0
    assert pq.read_table(out).to_pydict() == {"run_id": [0, 0], "time_s": [0.0, 1e-05], "n": [1, 2],
                                              "z": [b"", b""]}


def test_an_error_is_not_masked_by_closing_the_mapped_input(recording, tmp_path, monkeypatch, capsys):
    def failing(_f, stream, _args):
        held = np.frombuffer(stream._file.buf, np.uint8)  # a view of the mapped input, alive in this frame
        raise UsageError(f"stopped with {held.size} bytes in view")

    monkeypatch.setattr(export, "_table", failing)
    out = tmp_path / "out.csv"
    assert main(["export", str(recording), "--stream", "sensor", "-o", str(out)]) == 64
    assert "stopped with" in one_line_error(capsys, "export") and not out.exists()


def test_a_trc_export_names_its_own_file_not_the_temporary(tmp_path, capsys):
    _trace, _dbc, rec = _can_inputs(tmp_path)
    out = tmp_path / "bus.trc"
    assert main(["export", str(rec), "-o", str(out)]) == 0
    header = [line for line in out.read_text().splitlines() if line.startswith(";")]
    assert ";   bus.trc" in header and not any(".tmp-" in line for line in header)

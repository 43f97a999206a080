"""The `logb` command line: the JSON contracts, exit codes, cat, export, help."""

import json
import re
import struct
import sys
from importlib import metadata

import pytest

import handmade as hm
from logb.cli.main import COMMANDS, EXTRA_OF, build_parser, failure, main, named_command
from logb.cli.common import EXIT_USAGE
from logb.errors import (CorruptFrameError, LinkError, NotFoundError, NothingToDecodeError, NotLogbError,
                         TransferError, TransferInterrupted, UnknownSignalError, UnreadableInputError,
                         UnsupportedVersionError, UsageError)

U1, U2 = b"\x11" * 16, b"\x22" * 16


def run(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr().out


def _all_types_file():
    """One stream with every data type and the interesting conversions, built by hand."""
    linear = b"\x01" + struct.pack("<dd", 1.0, 0.5)
    table = b"\x03" + struct.pack("<I", 1) + struct.pack("<dd", 3.0, 30.0)
    v2t = b"\x05" + struct.pack("<I", 1) + struct.pack("<d", 1.0) + hm.s("one") + hm.s("other")
    fields = [
        hm.field("t", 0, 16, 0),                      # uint, explicit axis
        hm.field("s", 16, 12, 1, order=1),           # sint big-endian, crossing bytes
        hm.field("flag", 24, 1, 3),                  # bool, LE bit 24 = byte 3 bit 0
        hm.field("lin", 32, 8, 0, unit="V", conv=linear),
        hm.field("tab", 40, 8, 0, conv=table),
        hm.field("txt", 48, 8, 0, conv=v2t),
        hm.field("h", 56, 16, 2),                    # float16
        hm.field("z", 72, 64, 6),                    # complex64
        hm.field("raw", 136, 16, 4),                 # fixed bytes
        hm.field("name", 152, 24, 5),                # fixed string
        hm.field("note", 0, 0, 5, flags=1),          # variable string in the tail
    ]
    body = hm.schema(U1, "all", 176, fields, kind=0, mode=1, exp=-3, step=0, scale=2, axis_field=0)
    rec = bytearray(22)
    struct.pack_into("<H", rec, 0, 5)                # t = 5 → axis = 100 + 5*2 = 110 ticks
    rec[2], rec[3] = 0xFF, 0xE0                      # s: big-endian bits 16..27 = 0xFFE → -2
    rec[3] |= 0x01                                   # flag
    rec[4] = 10                                      # lin → 1 + 0.5*10 = 6.0
    rec[5] = 4                                       # tab: no key 4 → missing
    rec[6] = 1                                       # txt → "one"
    struct.pack_into("<e", rec, 7, 1.5)
    struct.pack_into("<ff", rec, 9, 2.0, -3.0)
    rec[17:19] = b"\xab\xcd"
    rec[19:22] = b"hi\x00"
    tail = struct.pack("<I", 3) + b"abc"
    return (hm.header() + hm.sync(0)
            + hm.meta([("logb.time_base", "monotonic"), ("logb.session", "aa" * 16)])
            + hm.frame(0x10, body, sid=1) + hm.data(1, bytes(rec) + tail, 1, base=100, run_id=7)
            + hm.meta([("logb.anchor.axis_ns", "0"), ("logb.anchor.wall_ns", "1000000000000"),
                       ("logb.anchor.uncertainty_ns", "5")]))


def test_dump_records_json_contract(tmp_path, capsys):
    path = tmp_path / "all.logb"
    path.write_bytes(_all_types_file())
    code, out = run(capsys, "dump", "--records", "--json", str(path))
    assert code == 0
    (line,) = out.splitlines()
    rec = json.loads(line)
    assert rec["stream"] == U1.hex() and rec["name"] == "all" and rec["run_id"] == 7
    assert rec["axis"] == 110
    raw, phys = rec["raw"], rec["phys"]
    assert raw["s"] == -2 and raw["flag"] is True and phys["flag"] is True
    assert raw["lin"] == 10 and phys["lin"] == 6.0
    assert raw["tab"] == 4 and phys["tab"] is None
    assert phys["txt"] == "one"
    assert raw["h"] == 1.5 and raw["z"] == [2.0, -3.0]
    assert raw["raw"] == "abcd" and raw["name"] == "hi\x00" and raw["note"] == "abc"
    # 110 ticks of 1 ms → 110 ms after the single anchor at axis 0
    assert rec["wall"] == {"ns": 1_000_000_000_000 + 110_000_000, "basis": "anchored",
                           "uncertainty_ns": 5, "extrapolated": True}


def test_info_json_contract(tmp_path, capsys):
    path = tmp_path / "all.logb"
    path.write_bytes(_all_types_file())
    code, out = run(capsys, "info", "--json", str(path))
    info = json.loads(out)
    assert code == 0
    (stream,) = info["streams"]
    assert {k: stream[k] for k in ("uuid", "name", "records", "rejected")} == {
        "uuid": U1.hex(), "name": "all", "records": 1, "rejected": 0}
    assert info["skipped"] == [] and info["truncated"] is False
    assert stream["fields"][3]["unit"] == "V"
    assert info["sessions"][0]["time_base"] == "monotonic"


def test_truncated_file_exit_codes_and_report(tmp_path, capsys):
    data = _all_types_file()
    cut = len(data) - 10
    path = tmp_path / "cut.logb"
    path.write_bytes(data[:cut])
    code, out = run(capsys, "verify", "--json", str(path))
    verdict = json.loads(out)
    assert code == 1 and verdict["truncated"] is True
    (skip,) = verdict["skipped"]
    assert skip["end"] == cut and skip["cause"] == "truncated"
    code, out = run(capsys, "info", "--json", str(path))
    assert code == 1 and json.loads(out)["streams"][0]["records"] == 1


def test_verify_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.logb"
    good.write_bytes(_all_types_file())
    assert run(capsys, "verify", str(good))[0] == 0
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    assert main(["verify", str(junk)]) == 2
    assert capsys.readouterr().err.startswith(f"logb verify: {junk}: bad magic")  # the message names the file
    assert main(["verify", str(tmp_path / "missing.logb")]) == 64
    assert capsys.readouterr().err == f"logb verify: {tmp_path / 'missing.logb'}: No such file or directory\n"
    future = tmp_path / "future.logb"
    future.write_bytes(hm.header(major=1) + b"\0" * 40)
    assert run(capsys, "verify", str(future))[0] == 3
    damaged = bytearray(_all_types_file())
    damaged[200] ^= 0x40
    bad = tmp_path / "bad.logb"
    bad.write_bytes(bytes(damaged))
    assert run(capsys, "verify", str(bad))[0] == 1


def test_cat_union_with_reused_stream_id(tmp_path, capsys):
    rec = lambda v: struct.pack("<H", v)  # noqa: E731
    body_a = hm.schema(U1, "a", 16, [hm.field("x", 0, 16, 0)], kind=4, step=1.0, scale=0.0)
    body_b = hm.schema(U2, "b", 16, [hm.field("y", 0, 16, 1)], kind=4, step=1.0, scale=0.0)
    a = hm.header() + hm.sync(0) + hm.frame(0x10, body_a, 1) + hm.data(1, rec(1) + rec(2), 2, base_f64=0.0)
    b = hm.header() + hm.sync(0) + hm.frame(0x10, body_b, 1) + hm.data(1, rec(3), 1, base_f64=0.0)
    (tmp_path / "a.logb").write_bytes(a)
    (tmp_path / "b.logb").write_bytes(b)
    out_path = tmp_path / "ab.logb"
    assert run(capsys, "cat", str(tmp_path / "a.logb"), str(tmp_path / "b.logb"), "-o", str(out_path))[0] == 0
    assert out_path.read_bytes() == a + b[16:]
    code, out = run(capsys, "info", "--json", str(out_path))
    info = json.loads(out)
    assert [(s["name"], s["records"]) for s in info["streams"]] == [("a", 2), ("b", 1)]
    assert len(info["sessions"]) == 2
    # an empty input is a file cut inside its header (verify: truncated): it adds nothing, exit 1
    assert run(capsys, "cat", str(tmp_path / "a.logb"), "/dev/null", "-o", str(out_path))[0] == 1
    assert out_path.read_bytes() == a
    (tmp_path / "junk.bin").write_bytes(b"PK\x03\x04" + bytes(40))
    assert run(capsys, "cat", str(tmp_path / "a.logb"), str(tmp_path / "junk.bin"), "-o", str(out_path))[0] == 2
    (tmp_path / "future.logb").write_bytes(hm.header(major=1))
    assert run(capsys, "cat", str(tmp_path / "a.logb"), str(tmp_path / "future.logb"), "-o", str(out_path))[0] == 3
    assert run(capsys, "cat", str(tmp_path / "a.logb"), str(tmp_path / "nope.logb"), "-o", str(out_path))[0] == 64


def test_export_csv_and_parquet_units(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "all.logb"
    path.write_bytes(_all_types_file())
    csv_path, pq_path = tmp_path / "all.csv", tmp_path / "all.parquet"
    assert run(capsys, "export", str(path), "--stream", "all", "--format", "csv", "-o", str(csv_path))[0] == 0
    header, row = csv_path.read_text().splitlines()
    # a dated session: UTC at the tick's resolution (issue 14: `axis_ticks_1e-3s` was no header to read)
    assert header.split(",")[:3] == ["run_id", "time_utc", "t"]
    assert row.split(",")[:4] == ["7", "1970-01-01T00:16:40.110Z", "5", "-2"]
    assert run(capsys, "export", str(path), "--stream", "all", "--time", "device", "-o", str(csv_path))[0] == 0
    header, row = csv_path.read_text().splitlines()
    assert header.split(",")[1] == "device_time_s" and row.split(",")[1] == "0.11"
    assert run(capsys, "export", str(path), "--stream", "all", "-o", str(pq_path))[0] == 0
    table = pa.read_table(pq_path)
    assert table.schema.field("lin").metadata[b"unit"] == b"V"
    assert table.column("lin").to_pylist() == [6.0]
    assert table.column("tab").to_pylist() == [None]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_has_teaching_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "usage: logb " + command in text and len(text.splitlines()) > 5


def test_usage_errors_exit_64_not_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["info"])  # FILE missing
    assert exc.value.code == 64
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 64


@pytest.mark.parametrize("exc, status", [
    (UsageError("give a FILE"), 64),
    (NotFoundError("no raw CAN bus stream 'can7'"), 64),  # a name the caller gave
    (UnknownSignalError("no signal 'Rpm' in this file"), 64),
    (NothingToDecodeError("no CAN streams in this file"), 1),  # the input falls short
    (TransferError("link lost (gave up reconnecting after 30 s)"), 1),
    (TransferInterrupted("interrupted"), 130),
    (NotLogbError("bad magic"), 2),
    (UnsupportedVersionError("major version 1"), 3),
    (LinkError("no Logb link answered"), 69),
    (CorruptFrameError("crc mismatch"), 1),
    (UnreadableInputError("x.dbc: cannot parse"), 1),
    (FileNotFoundError(2, "No such file or directory", "x.logb"), 64),
])
def test_every_error_maps_to_its_documented_exit_status(exc, status):
    assert failure(exc)[0] == status


def test_errors_that_are_bugs_keep_their_traceback():
    assert failure(KeyError("x")) is None
    assert failure(ModuleNotFoundError("No module named 'requests'", name="requests")) is None
    assert failure(OSError(28, "No space left on device")) is None  # not about a path the command was given


def test_a_missing_optional_dependency_names_its_extra(tmp_path, monkeypatch, capsys):
    dbc = tmp_path / "v.dbc"
    dbc.write_text('VERSION ""\n')
    monkeypatch.setitem(sys.modules, "cantools", None)  # `import cantools` now fails
    assert main(["dbc", "compile", str(dbc)]) == 64
    assert capsys.readouterr().err.endswith("; install it with: pip install 'logb[can]'\n")


def test_every_install_hint_names_the_extra_that_installs_the_module():
    def norm(name):
        return re.sub(r"[-_.]+", "-", name).lower()

    provides = metadata.packages_distributions()
    requires = metadata.requires("logb")
    for module, extra in EXTRA_OF.items():
        dists = {norm(d) for d in provides[module]}
        in_extra = {norm(re.match(r"[\w.-]+", r).group()) for r in requires if f'extra == "{extra}"' in r}
        assert dists & in_extra, (module, extra)


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"logb {metadata.version('logb')}\n"


def test_version_when_the_package_is_not_installed(monkeypatch, capsys):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == "logb unknown (not installed)\n"


def test_a_command_line_builds_the_parser_of_its_command_alone():
    assert named_command(["verify", "--jobs", "2", "f.logb"]) == "verify"
    assert named_command(["--version"]) is None
    assert named_command(["nosuch", "verify"]) is None  # argparse then lists every command
    whole = build_parser()
    alone = build_parser("verify")
    assert vars(alone.parse_args(["verify", "x.logb"])) == vars(whole.parse_args(["verify", "x.logb"]))
    with pytest.raises(SystemExit):
        alone.parse_args(["info", "x.logb"])  # the other commands are not in it


def test_an_unknown_command_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["nosuch"])
    assert exc.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert all(name in err for name in COMMANDS)

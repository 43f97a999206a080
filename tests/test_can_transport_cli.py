"""`logb transport` on a hand-written candump trace and on a Logb recording of it."""

import argparse
import csv
import json

import pytest

pytest.importorskip("can")

from logb.cli import main as cli_main  # noqa: E402
from logb.cli import transport  # noqa: E402

from test_can_transport import Bus, bam, chunks, isotp_multi, tp_id  # noqa: E402

pytestmark = pytest.mark.single_backend


def logb(*argv):
    """(exit status, stdout) of `logb transport ARGV`: through logb.cli.main once it lists the
    command, else through the module with main's error mapping."""
    import io

    out = io.StringIO()
    argv = [str(a) for a in argv]
    if "transport" in cli_main.COMMANDS:
        return cli_main.main(["transport"] + argv, out), out.getvalue()
    p = cli_main._Parser(prog="logb transport")
    transport.add_arguments(p)
    args = p.parse_args(argv)
    args.command = "transport"
    try:
        return transport.run(args, out), out.getvalue()
    except Exception as exc:
        failed = cli_main.failure(exc)
        if failed is None:
            raise
        return failed[0], out.getvalue()


def write_candump(path, bus):
    with open(path, "w") as fh:
        for t, key, data in sorted(bus.frames, key=lambda f: f[0]):
            ident = f"{key & 0x1FFFFFFF:08X}" if key >> 31 else f"{key:03X}"
            fh.write(f"({1_700_000_000 + t / 1e6:.6f}) can0 {ident}#{data.hex().upper()}\n")
    return path


@pytest.fixture
def trace(tmp_path):
    bus = Bus()
    bam(bus, 0, 0x01, 0xFECA, bytes(range(20)))
    bam(bus, 10, 0x02, 0xFECA, bytes(range(35)), order=[1, 2, 4, 5])  # lost packet 3
    bus.add(500, 0x7E0, [0x03, 0x22, 0xF1, 0x90, 0, 0, 0, 0])
    isotp_multi(bus, 510, 0x7E8, 0x7E0, b"\x62\xf1\x90" + b"WDB1234567890ABCD")
    bus.add(601, 0x7E8, [0x03, 0x7F, 0x22, 0x31, 0, 0, 0, 0])
    bus.add(700, tp_id(0xEB, 0x05, 0xFF), chunks(bytes(9))[0])  # no BAM before it
    bus.add(800, 0x6F1, [0x12, 0x02, 0x3E, 0x00, 0, 0, 0, 0])  # TesterPresent, extended addressing
    return write_candump(tmp_path / "diag.log", bus)


def test_csv_lists_every_message_and_fault(trace, tmp_path, capfd):
    out = tmp_path / "t.csv"
    assert logb(trace, "--format", "csv", "--time", "relative", "-o", out)[0] == 0
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["start_s"], r["protocol"], r["kind"], r["id"], r["status"], r["service"]) for r in rows] == [
        ("0.000000", "j1939", "BAM", "0x18FECA01", "complete", ""),
        ("0.010000", "j1939", "BAM", "0x18FECA02", "incomplete", ""),
        ("0.500000", "isotp", "single", "0x7E0", "complete", "ReadDataByIdentifier"),
        ("0.510000", "isotp", "multi", "0x7E8", "complete", "ReadDataByIdentifier+"),
        ("0.601000", "isotp", "single", "0x7E8", "complete", "ReadDataByIdentifier- requestOutOfRange"),
        ("0.700000", "j1939", "frame", "0x1CEBFF05", "stray", "")]
    assert rows[1]["detail"] == "missing packet 3 of 5" and rows[1]["received"] == "14"
    assert rows[0]["payload"] == bytes(range(20)).hex() and rows[0]["pgn"] == "0x0FECA"
    assert rows[3]["payload"] == (b"\x62\xf1\x90" + b"WDB1234567890ABCD").hex() and rows[3]["partner"] == "0x7E0"
    assert rows[5]["detail"] == "TP.DT from 0x05 (packet 1): no BAM open"
    err = capfd.readouterr().err
    assert "5 messages, 1 stray frames (4 complete, 1 incomplete, 1 stray)" in err


def test_protocol_choice_ids_and_window(trace, tmp_path, capfd):
    code, text = logb(trace, "--j1939", "--format", "json", "--time", "relative")
    rows = [json.loads(line) for line in text.splitlines()]
    assert code == 0 and {r["protocol"] for r in rows} == {"j1939"} and rows[0]["start_s"] == 0.0
    code, text = logb(trace, "--isotp-ext", "0x6F1:0x612", "--format", "json")
    (row,) = [json.loads(line) for line in text.splitlines()]
    assert row["service"] == "TesterPresent" and row["address"] == "0x12" and row["start_utc"].endswith("Z")
    code, text = logb(trace, "--isotp", "0x7E0:0x7E8", "--id", "0x7E8", "--format", "json")
    assert [json.loads(x)["kind"] for x in text.splitlines()] == ["multi", "single"]
    code, text = logb(trace, "--window", "0.4", "0.6", "--format", "json")
    assert [json.loads(x)["id"] for x in text.splitlines()] == ["0x7E0", "0x7E8"]


def test_table_from_a_logb_recording(trace, tmp_path):
    from logb.cli.main import main

    rec = tmp_path / "diag.logb"
    assert main(["import", str(trace), "-o", str(rec)]) == 0
    code, text = logb(rec)
    lines = text.splitlines()
    assert code == 0 and lines[0].split()[:5] == ["start_utc", "bus", "protocol", "kind", "id"]
    assert "missing packet 3 of 5" in lines[3] and "ReadDataByIdentifier+" in text


def test_usage_errors(trace, tmp_path):
    assert logb(trace, "--isotp", "0x7E0")[0] == 64
    assert logb(trace, "--window", "50", "60")[0] == 64  # a window past the recording
    assert logb(tmp_path / "absent.log")[0] == 64
    (tmp_path / "junk.log").write_text("not a trace\n")
    assert logb(tmp_path / "junk.log")[0] == 2


def test_help_teaches():
    p = argparse.ArgumentParser(description=transport.DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    transport.add_arguments(p)
    text = p.format_help()
    for word in ("BAM", "RTS/CTS", "0x7E0", "out-of-order", "stray", "--isotp-ext", "logb decode"):
        assert word in text

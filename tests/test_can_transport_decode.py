"""J1939 multi-packet messages decoded by the DBC (logb.can.decode): recorded by the
host (mirror) and by the firmware writer (exclusive, the logger's default), decoded
from the raw bus with a DBC and from the per-message streams, against cantools."""

import csv
import io
import pathlib
import re
import sys

import numpy as np
import pytest

cantools = pytest.importorskip("cantools")

import logb  # noqa: E402
from logb.can.config import config_entries, encode_config  # noqa: E402
from logb.can.dbc import compile_dbc  # noqa: E402
from logb.can.decode import decode_file  # noqa: E402
from logb.can.record import CanRecorder  # noqa: E402
from logb.cli.main import main  # noqa: E402

from test_can_transport import Bus, bam, rts_session  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent / "firmware"))
import fwload  # noqa: E402

J1939_DBC = pathlib.Path("../shared/data/dbc/cantools-j1939.dbc")
pytestmark = pytest.mark.skipif(not J1939_DBC.exists(), reason="../shared/data/dbc not present")


def long_dbc():
    """cantools-j1939.dbc with Message2 (PGN 0x1F010: data page 1) 20 bytes long and a signal in bytes
    17..18: a multi-packet PGN only a transport protocol carries whole."""
    text = J1939_DBC.read_text()
    text = text.replace("Message2: 8 Node2", "Message2: 20 Node2")
    text, n = re.subn(r'( SG_ Signal2 : [^\n]*\n)', r'\1 SG_ Signal3 : 136|16@1+ (0.5,0) [0|0] "km"  Node1\n', text)
    assert n == 1
    return text


PAYLOADS = {0x02: bytes(range(1, 21)), 0x03: bytes(range(200, 220)), 0x04: bytes(range(40, 60))}
RTS_PAYLOAD = bytes([0x85, 1, 2, 3, 4, 5, 6, 7, 9])  # 9 bytes: 2 packets; Message1 is the first 8


def traffic():
    bus = Bus()
    for k in range(5):  # one-frame Message1 (PGN 0x13400) from 0x01
        bus.add(k * 100, (1 << 31) | 0x15340201, [k * 10, 0, 0, 0, 0, 0, 0, 0])
    bus.add(20, (1 << 31) | 0x19F01005, [0xF0, 0, 0, 0, 0, 0, 0, 0])  # Message2 in one frame: short
    bam(bus, 30, 0x02, 0x1F010, PAYLOADS[0x02])
    bam(bus, 40, 0x03, 0x1F010, PAYLOADS[0x03])  # interleaved with 0x02's
    bam(bus, 50, 0x04, 0x1F010, PAYLOADS[0x04], order=[1, 3])  # lost packet 2: never decoded
    rts_session(bus, 250, 0x05, 0x02, 0x13400, RTS_PAYLOAD, [(1, 2)])
    bus.frames.sort(key=lambda f: f[0])
    return bus


def expected(db):
    """{message: [(time_s, {signal: value})]} by cantools, of what must decode."""
    m1, m2 = db.get_message_by_name("Message1"), db.get_message_by_name("Message2")
    out = {"Message1": [(k * 0.1, m1.decode(bytes([k * 10, 0, 0, 0, 0, 0, 0, 0]))) for k in range(5)],
           "Message2": [(0.02, m2.decode(bytes([0xF0] + [0] * 7), allow_truncated=True))]}
    out["Message2"] += [(0.18, m2.decode(PAYLOADS[0x02])), (0.19, m2.decode(PAYLOADS[0x03]))]
    out["Message1"].append((0.28, m1.decode(RTS_PAYLOAD[:8])))  # RTS 250 ms, CTS, its last TP.DT 280 ms
    out["Message1"].sort(key=lambda r: r[0])
    return out


def check(decoded, db):
    want = expected(db)
    got = {d.message: d for d in decoded}
    assert sorted(got) == sorted(want)
    for name, rows in want.items():
        d = got[name]
        assert np.allclose(d.seconds(), [r[0] for r in rows]), name
        for sig in rows[0][1]:
            col = d.phys[sig]
            for j, (_, values) in enumerate(rows):
                if sig in values:
                    assert col[j] == values[sig], (name, sig, j)
                else:
                    assert np.ma.getmaskarray(col)[j], (name, sig, j)  # missing, never 0
    assert got["Message2"].reassembled == 2 and got["Message2"].short == 1
    assert got["Message1"].reassembled == 1


@pytest.fixture(scope="module")
def compiled():
    c = compile_dbc(long_dbc())
    assert not c.problems and c.fd
    return c


def host_recording(path, compiled):
    t, ids, flags, dlc, data = traffic().columns()
    with logb.Writer(str(path), time_base="relative") as w:
        with CanRecorder(w, compiled) as rec:
            rec.add(t, ids, flags, dlc, pad64(data))
    return path


def pad64(data):
    out = np.zeros((len(data), 64), np.uint8)
    out[:, :data.shape[1]] = data
    return out


def logger_recording(path, compiled):
    """The firmware writer (firmware/logb under CPython), exclusive routing."""
    fw = fwload.load()
    sink = io.BytesIO()
    now = [0]
    w = fw.Writer(sink, device="logb", ticks=lambda: now[0], mirror=False)
    w.load_config(encode_config(config_entries(compiled)))
    for t, key, data in traffic().frames:
        now[0] = t
        w.append_can(t, key & 0x1FFFFFFF, data, 1 if key >> 31 else 0, -1)
    w.close()
    path.write_bytes(sink.getvalue())
    return path


@pytest.mark.parametrize("make", [host_recording, logger_recording])
def test_multi_packet_pgns_decode_like_single_frames(tmp_path, compiled, make):
    path = make(tmp_path / "rec.logb", compiled)
    with logb.LogbFile(str(path)) as f:
        assert f.report.clean
        routing = f.stream("can0").schema.meta_dict()["logb.can.routing"]
        assert routing == ("mirror" if make is host_recording else "exclusive")
        check(decode_file(f, dbc=long_dbc()), compiled.database)  # the raw bus with a DBC
        check(decode_file(f), compiled.database)  # the per-message streams (+ the raw bus's TP frames)


def test_transport_off_decodes_single_frames_only(tmp_path, compiled):
    from logb.can.decode import decode_frames

    t, ids, flags, dlc, data = traffic().columns()
    on = {d.message: len(d) for d in decode_frames(compiled, t, ids, flags, data, dlc=dlc)}
    off = {d.message: len(d) for d in decode_frames(compiled, t, ids, flags, data, dlc=dlc, transport=False)}
    assert on == {"Message1": 6, "Message2": 3} and off == {"Message1": 5, "Message2": 1}


def test_cli_decode_with_the_j1939_dbc(tmp_path, compiled, capsys):
    path = host_recording(tmp_path / "rec.logb", compiled)
    dbc = tmp_path / "j1939.dbc"
    dbc.write_text(long_dbc())
    out = tmp_path / "signals.csv"
    assert main(["decode", str(path), "--dbc", str(dbc), "--messages", "Message2", "-o", str(out)]) == 0
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    # Signal3 = bytes 17..18 little-endian * 0.5; the one-frame Message2 lacks it
    assert [r["Message2.Signal3"] for r in rows] == ["", str((18 | 19 << 8) * 0.5), str((217 | 218 << 8) * 0.5)]
    assert "Message2: 1 of 3 frames shorter" in capsys.readouterr().out

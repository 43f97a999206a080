"""Recording CAN frames (CanRecorder) and decoding them back (decode_file,
`logb decode`, `logb dbc`), against cantools."""

import csv
import datetime
import json

import numpy as np
import pytest

cantools = pytest.importorskip("cantools")

from _can_fixtures import dbc, random_frames  # noqa: E402
import logb  # noqa: E402
from logb.can import layout  # noqa: E402
from logb.can.config import read_config  # noqa: E402
from logb.can.dbc import MEDIA_TYPE, compile_dbc  # noqa: E402
from logb.can.decode import decode_batches, decode_file, decode_frames, embedded_dbc  # noqa: E402
from logb.can.record import CanRecorder  # noqa: E402
from logb.cli.main import main  # noqa: E402

DBC = dbc('CM_ SG_ 256 Speed "engine speed";\n')


def frames(n=3000, seed=5):
    rng = np.random.default_rng(seed)
    ids, flags, data = random_frames(rng, n)
    flags[5::101] |= layout.FLAG_ERROR
    t = np.cumsum(rng.integers(100, 2000, n)).astype(np.int64) + 1_700_000_000_000_000
    return t, ids, flags, np.full(n, 8, np.uint8), data


def record(path, compiled, fr, **kw):
    with logb.Writer(str(path), time_base="unix") as w:
        with CanRecorder(w, compiled, **kw) as rec:
            t, ids, flags, dlc, data = fr
            for lo in range(0, len(t), 700):  # several calls, batches straddling them
                rec.add(t[lo:lo + 700], ids[lo:lo + 700], flags[lo:lo + 700], dlc[lo:lo + 700], data[lo:lo + 700])


@pytest.fixture
def recording(tmp_path):
    fr = frames()
    path = tmp_path / "rec.logb"
    record(path, compile_dbc(DBC), fr, batch=512)
    return path, fr


def test_raw_bus_stream_keeps_every_frame(recording):
    path, (t, ids, flags, dlc, data) = recording
    with logb.LogbFile(str(path)) as f:
        assert f.report.clean
        c = f.stream("can0").columns()
        assert np.array_equal(c.axis, t)
        assert np.array_equal(c.raw["id"], ids & 0x1FFFFFFF)
        ext = (ids >> 31).astype(bool)
        assert np.array_equal(c.raw["extended"], ext)
        assert np.array_equal(c.raw["flags"], flags | ext.astype(np.uint8))
        assert np.array_equal(c.raw["remote"], (flags & layout.FLAG_REMOTE) != 0)
        remote = (flags & layout.FLAG_REMOTE != 0) & (flags & layout.FLAG_ERROR == 0)
        assert np.array_equal(c.raw["dlc"], dlc) and np.array_equal(c.raw["data"][~remote], data[~remote])
        assert not c.raw["data"][remote].any()  # a remote frame carries no data
        (att,) = f.attachments
        assert att.media_type == MEDIA_TYPE and att.data() == DBC.encode()
        assert f.stream("can0").meta["logb.can.dbc"] == att.name
        assert embedded_dbc(f) == DBC.encode()


def test_both_decodings_equal_cantools(recording):
    path, (t, ids, flags, dlc, data) = recording
    db = cantools.database.load_string(DBC)
    with logb.LogbFile(str(path)) as f:
        per_message = decode_file(f)
        raw = decode_file(f, source="raw")
        given = decode_file(f, dbc=DBC)
    assert [d.stream for d in per_message] == [d.stream for d in raw] == [d.stream for d in given]
    assert {d.stream for d in raw} == {"Engine", "Body", "Muxed[Sel=1]", "Muxed[Sel=2]"}
    checked = 0
    for a, b, c in zip(per_message, raw, given):
        assert np.array_equal(a.axis, b.axis) and np.array_equal(b.rows, c.rows)
        for name in b.raw:
            assert np.array_equal(a.raw[name], b.raw[name]) and np.array_equal(a.phys[name], c.phys[name])
        msg = db.get_message_by_name(b.message)
        assert a.units == b.units
        for j, row in enumerate(b.rows):
            assert not flags[row] & (layout.FLAG_REMOTE | layout.FLAG_ERROR)
            assert t[row] == b.axis[j]
            want = msg.decode(bytes(data[row]), decode_choices=False)
            labels = msg.decode(bytes(data[row]))
            assert {k: b.phys[k][j] for k in want} == want
            if "Gear" in b.text:
                lab = labels["Gear"]
                assert b.text["Gear"][j] == (None if isinstance(lab, int) else str(lab))
            checked += 1
    usable = ~(flags & (layout.FLAG_REMOTE | layout.FLAG_ERROR)).astype(bool)
    mux_ok = (ids != 0x200) | np.isin(data[:, 0], [1, 2])
    assert checked == int((usable & (ids != 0x300) & mux_ok).sum())


def test_selection_and_window(recording):
    path, (t, *_rest) = recording
    t0 = (t[100] - 1) / 1e6
    t1 = t[400] / 1e6
    with logb.LogbFile(str(path)) as f:
        for source in ("messages", "raw"):
            out = decode_file(f, messages=["Engine", "Muxed[Sel=2]"], signals=["Speed", "Muxed.B"],
                              window=(t0, t1), source=source)
            assert [d.stream for d in out] == ["Engine", "Muxed[Sel=2]"]
            assert list(out[0].raw) == ["Speed"] and list(out[1].raw) == ["B"]
            for d in out:
                assert d.axis.min() >= t[100] and d.axis.max() <= t[400]
            assert out[0].units == {"Speed": "rpm"}


def test_route_and_frames_without_a_file():
    c = compile_dbc(DBC)
    assert c.route(0x100, False).name == "Engine" and c.route(0x100, True) is None
    assert c.route(0x200, False) is None  # a multiplexed message needs its payload
    assert c.route(0x200, False, b"\x02\x00").name == "Muxed[Sel=2]"
    assert c.route(0x200, False, b"\x07") is None  # a multiplexer value the DBC does not define
    assert c.route(0x18FEF1FE, True).name == "Body"
    out = decode_frames(c, np.arange(3), [0x100, 0x100, 0x101], None, np.array([[0, 4] + [0] * 6] * 3, np.uint8))
    assert len(out) == 1 and out[0].phys["Speed"].tolist() == [1.0, 1.0]


def test_classic_recorder_refuses_fd_payloads_and_fd_recorder_takes_them(tmp_path):
    with logb.Writer(str(tmp_path / "a.logb")) as w:
        rec = CanRecorder(w, None)
        with pytest.raises(ValueError):
            rec.add([0], [1], None, None, np.ones((1, 12), np.uint8))
    with logb.Writer(str(tmp_path / "b.logb")) as w:
        rec = CanRecorder(w, None, bus="canfd", fd=True)
        rec.add([0, 5], [1, 2], [layout.FLAG_FD, 0], None, [bytes(range(64)), b"\x01\x02"])
    with logb.LogbFile(str(tmp_path / "b.logb")) as f:
        c = f.stream("canfd").columns()
        assert f.stream("canfd").schema.meta_dict()["logb.can.layout"] == "raw-fd"
        assert c.raw["dlc"].tolist() == [15, 2] and bytes(c.raw["data"][0]) == bytes(range(64))
        assert bytes(c.raw["data"][1]) == b"\x01\x02" + bytes(62)
        assert not f.attachments


def test_long_recordings_and_unordered_timestamps(tmp_path):
    t = np.array([0, 5, 3, 2**32 + 10, 2**33, 7], np.int64)  # > u32 µs apart, and out of order
    ids = np.full(len(t), 0x100, np.uint32)
    data = np.arange(48, dtype=np.uint8).reshape(6, 8)
    path = tmp_path / "long.logb"
    with logb.Writer(str(path), time_base="relative") as w:
        with CanRecorder(w, DBC) as rec:
            rec.add(t, ids, None, None, data)
    with logb.LogbFile(str(path)) as f:
        assert np.array_equal(f.stream("can0").columns().axis, t)
        assert np.array_equal(decode_file(f)[0].axis, t)


# ---------------------------------------------------------------- CLI


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_cli_dbc_compile_and_show(tmp_path, capsys):
    dbc = tmp_path / "v.dbc"
    dbc.write_text(DBC + "BO_ 768 Bad: 2 ECU\n SG_ Far : 8|16@1+ (1,0) [0|0] \"\" ECU\n")
    out = tmp_path / "v.lbcf"
    code, text, err = run(capsys, "dbc", "compile", dbc, "-o", out)
    assert code == 0 and "Bad.Far" in err and "wrote" in text
    entries = read_config(out.read_bytes())
    assert [e.kind for e in entries] == [0, 1, 1, 2, 2, 1]  # DBC order: Engine, Body, Muxed ×2, Bad
    assert run(capsys, "dbc", "compile", dbc, "--strict")[0] == 1
    code, text, _ = run(capsys, "dbc", "compile", dbc, "--json")
    doc = json.loads(text)
    assert doc["problems"][0]["name"] == "Bad.Far"
    engine = next(e for e in doc["entries"] if e["name"] == "Engine")
    speed = next(x for x in engine["schema"]["fields"] if x["name"] == "Speed")
    assert speed["byte_order"] == "big" and speed["bit_offset"] == 32 and speed["unit"] == "rpm"
    assert speed["conversion"] == {"type": "linear", "coeffs": [0.0, 0.25]}
    code, text, _ = run(capsys, "dbc", "show", out, "--json")
    assert code == 0 and [e["name"] for e in json.loads(text)["entries"]][:2] == ["can0", "Engine"]
    assert run(capsys, "dbc", "show", dbc)[0] == 1  # not a config


def test_cli_decode_csv_parquet(recording, tmp_path, capsys):
    path, (t, ids, flags, dlc, data) = recording
    out = tmp_path / "s.csv"
    code, text, _ = run(capsys, "decode", path, "-o", out)
    assert code == 0
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    # a dated recording shows UTC (issue 14: decode used to write axis seconds where plot showed UTC)
    assert list(rows[0])[:3] == ["time_utc", "bus", "message"] and "Engine.Gear.text" in rows[0]
    first = next(r for r in rows if r["message"] == "Engine")
    i = next(i for i in range(len(t)) if ids[i] == 0x100 and not flags[i] & 6)
    when = datetime.datetime.fromisoformat(first["time_utc"])
    assert first["time_utc"].endswith("Z") and round(when.timestamp() * 1e6) == t[i]
    want = cantools.database.load_string(DBC).get_message_by_name("Engine").decode(bytes(data[i]), decode_choices=False)
    assert float(first["Engine.Speed"]) == want["Speed"] and first["Body.Door"] == ""
    pq = pytest.importorskip("pyarrow.parquet")
    out2 = tmp_path / "s.parquet"
    assert run(capsys, "decode", path, "--dbc", DBC_PATH(tmp_path), "--layout", "long", "--signals", "Speed",
               "--time", "relative", "-o", out2)[0] == 0
    table = pq.read_table(out2)
    assert set(table.column("signal").to_pylist()) == {"Speed"}
    assert table.schema.field("time_s").metadata[b"unit"] == b"s"
    raw_only = tmp_path / "raw.logb"
    record(raw_only, None, frames(50))
    assert run(capsys, "decode", raw_only, "-o", tmp_path / "x.csv")[0] == 1  # no DBC anywhere


def DBC_PATH(tmp_path):
    p = tmp_path / "given.dbc"
    p.write_text(DBC)
    return p


def test_bytes_past_the_dlc_are_zero(tmp_path):
    path = tmp_path / "dlc.logb"
    data = np.full((4, 8), 0xEE, np.uint8)
    flags = np.array([0, layout.FLAG_REMOTE, layout.FLAG_ERROR, 0], np.uint8)
    with logb.Writer(str(path)) as w:
        CanRecorder(w, None).add([0, 1, 2, 3], [1, 2, 3, 4], flags, [3, 2, 0, 9], data)
    with logb.LogbFile(str(path)) as f:
        got = f.stream("can0").columns().raw["data"]
    assert bytes(got[0]) == b"\xee" * 3 + bytes(5) and bytes(got[1]) == bytes(8)
    assert bytes(got[2]) == b"\xee" * 8 and bytes(got[3]) == b"\xee" * 8  # error frame; DLC 9 = 8 bytes


def test_signal_selection_skips_other_messages(recording):
    path, _ = recording
    with logb.LogbFile(str(path)) as f:
        for source in ("messages", "raw"):
            out = decode_file(f, signals=["Lamp"], source=source)
            assert [d.stream for d in out] == ["Body"] and list(out[0].raw) == ["Lamp"]


def test_signals_past_a_short_frame_are_missing_not_zero(tmp_path, capsys):
    # Engine is 8 bytes: Speed in bytes 0-1, Temp byte 2, Gear byte 3. A 2-byte frame has Speed
    # only; a 3-byte one Speed and Temp; the bytes that were never on the bus are not zeros.
    path = tmp_path / "short.logb"
    data = np.full((3, 8), 0x11, np.uint8)
    with logb.Writer(str(path), time_base="unix") as w:
        with CanRecorder(w, compile_dbc(DBC)) as rec:
            rec.add([10, 20, 30], [0x100] * 3, None, [8, 2, 3], data)
    db = cantools.database.load_string(DBC).get_message_by_name("Engine")
    with logb.LogbFile(str(path)) as f:
        for source in ("messages", "raw"):
            (d,) = decode_file(f, source=source, messages=["Engine"])
            assert d.short == 2
            for j, n in enumerate((8, 2, 3)):
                want = db.decode(bytes(data[j, :n]), decode_choices=False, allow_truncated=True)
                assert {s for s, col in d.phys.items() if not np.ma.getmaskarray(col)[j]} == set(want)
                assert all(d.phys[s][j] == v for s, v in want.items())
            assert d.text["Gear"][1] is None and d.text["Gear"][0] is not None
    out = tmp_path / "short.csv"
    code, text, _ = run(capsys, "decode", path, "-o", out)
    assert code == 0 and "Engine: 2 of 3 frames shorter than the message" in text
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    assert [r["Engine.Temp"] for r in rows] == ["-31.5", "", "-31.5"]
    assert [r["Engine.Gear"] for r in rows] == ["1", "", ""] and rows[1]["Engine.Speed"] != ""
    pq = pytest.importorskip("pyarrow.parquet")
    code, _, _ = run(capsys, "decode", path, "--layout", "long", "-o", tmp_path / "short.parquet")
    long = pq.read_table(tmp_path / "short.parquet").to_pylist()
    assert [r["value"] for r in long if r["signal"] == "Gear"] == [1, None, None]
    code, text, _ = run(capsys, "stats", path, "--json")
    assert json.loads(text)["buses"][0]["short_frames"] == {"Engine": {"short": 2, "frames": 3, "length": 8}}


DURANGO = "../shared/data/traces/durango-aconoff-candump.log"
GIORGIO = "../shared/data/dbc/fca_giorgio.dbc"


def test_durango_abs6_frames_lack_their_last_bytes(tmp_path, capsys):
    # the real trace: ABS_6 frames carry 5 bytes (`101#4004091600`) where the DBC says 8
    pytest.importorskip("can")
    path = tmp_path / "durango.logb"
    assert run(capsys, "import", DURANGO, "--dbc", GIORGIO, "-o", path)[0] == 0
    out = tmp_path / "durango.csv"
    code, text, _ = run(capsys, "decode", path, "--messages", "ABS_6", "-o", out)
    assert code == 0 and "ABS_6: 297 of 297 frames shorter than the message" in text
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 297 and {r["ABS_6.BRAKE_PRESSURE_2"] for r in rows} == {""}
    assert {r["ABS_6.CHECKSUM"] for r in rows} == {""} and all(r["ABS_6.BRAKE_PRESSURE_1"] for r in rows)
    code, text, _ = run(capsys, "stats", path)
    assert "ABS_6: 297 of 297 shorter than its 8 bytes" in text


def test_a_cut_import_decodes_from_the_raw_bus_stream(tmp_path, capsys):
    # per-message DATA of the tail is lost with the cut; the raw bus frames and the DBC survive
    pytest.importorskip("can")
    path = tmp_path / "durango.logb"
    assert run(capsys, "import", DURANGO, "--dbc", GIORGIO, "-o", path)[0] == 0
    cut = tmp_path / "cut.logb"
    cut.write_bytes(path.read_bytes()[:300001])
    out = tmp_path / "cut.csv"
    code, text, _ = run(capsys, "decode", cut, "-o", out)
    assert code == 1  # damaged input, decoded as far as it goes
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    with logb.LogbFile(str(cut)) as f:
        assert not f.report.clean
        whole = decode_file(f, source="raw")
        # import interleaves per-message DATA with the raw frames, so they cover (nearly) the same span
        assert sum(len(d) for d in decode_file(f, source="messages")) <= sum(len(d) for d in whole)
    assert len(rows) == sum(len(d) for d in whole) > 4000


def _joined(parts):
    """{stream: Decoded fields concatenated over decode_batches' lists, in order}."""
    out = {}
    for part in parts:
        assert len({d.stream for d in part}) == len(part)  # one Decoded per stream in a batch
        for d in part:
            out.setdefault(d.stream, []).append(d)
    joined = {}
    for name, ds in out.items():
        cat = lambda cols: {k: np.ma.concatenate([c[k] for c in cols]) for k in cols[0]}  # noqa: E731
        joined[name] = (np.concatenate([d.axis for d in ds]), cat([d.raw for d in ds]), cat([d.phys for d in ds]),
                        {k: np.concatenate([d.text[k] for d in ds]) for k in ds[0].text},
                        None if ds[0].rows is None else np.concatenate([d.rows for d in ds]),
                        sum(d.short for d in ds), len(ds))
    return joined


@pytest.mark.parametrize("source,dbc", [("messages", None), ("raw", None), ("auto", DBC)])
@pytest.mark.parametrize("window", [None, (1_700_000_000.3, 1_700_000_001.9)])
def test_decode_batches_are_decode_file_in_pieces(recording, source, dbc, window):
    path, _fr = recording
    with logb.LogbFile(str(path)) as f:
        whole = decode_file(f, dbc=dbc, window=window, source=source)
        parts = list(decode_batches(f, dbc=dbc, window=window, source=source, records=300))
    got = _joined(parts)
    assert list(got) == [d.stream for d in whole]
    if window is None:
        assert max(n for *_, n in got.values()) > 1  # really in pieces
    for d in whole:
        axis, raw, phys, text, rows, short, _n = got[d.stream]
        assert np.array_equal(axis, d.axis)
        for k in d.raw:
            assert raw[k].dtype == d.raw[k].dtype and np.array_equal(raw[k], d.raw[k])
            assert np.ma.allequal(phys[k], d.phys[k]) and phys[k].dtype == d.phys[k].dtype
        assert {k: v.tolist() for k, v in text.items()} == {k: v.tolist() for k, v in d.text.items()}
        assert (rows is None and d.rows is None) or np.array_equal(rows, d.rows)
        assert short == d.short


def test_decode_batches_refuse_empty_batches(recording):
    path, _fr = recording
    with logb.LogbFile(str(path)) as f:
        with pytest.raises(ValueError):
            next(decode_batches(f, records=0))

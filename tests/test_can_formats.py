"""CAN trace formats in and out of Logb (logb.can.formats, `logb import`, `logb export`).

Every trace in ../shared/data/traces is imported and checked against what
python-can itself reads from it, then exported back to its own format and read
again with python-can: every id, flag, DLC, payload byte and timestamp (to the
format's resolution) must survive. A synthetic trace with every frame kind
(classic, extended, remote, error, CAN FD 64-byte with BRS/ESI, Tx) goes
through every format, checking what each format can hold."""

import math
import pathlib

import numpy as np
import pytest

can = pytest.importorskip("can")

import logb  # noqa: E402
from logb import tables  # noqa: E402
from logb.can import formats, layout  # noqa: E402
from logb.can.formats.pycan import bus_name  # noqa: E402
from logb.errors import UsageError  # noqa: E402
from logb.cli.main import main  # noqa: E402

TRACES = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
SOURCES = sorted(p.name for p in TRACES.glob("*")) if TRACES.exists() else []
READABLE = list(formats.READERS)  # the formats read back (through python-can)
EXT = {name: m.EXTENSIONS[0] for name, m in formats.REGISTRY.items()}
needs_traces = pytest.mark.skipif(not SOURCES, reason="../shared/data/traces not present")


def pycan_messages(path):
    """python-can's own view of a trace (absolute stamps where the format has them)."""
    if formats.format_for(path).NAME == "asc":
        reader = can.ASCReader(str(path), relative_timestamp=False)
    else:
        reader = can.LogReader(str(path))
    return list(reader)


def key(m, loose=False):
    """The fields compared. loose: ASC CANFD lines of up to 8 bytes, whose FD and remote bits
    python-can guesses (formats.asc reads them from the line's Flags column instead)."""
    exact = () if loose else (m.is_remote_frame, m.is_fd, m.bitrate_switch, m.error_state_indicator, m.dlc)
    return (m.channel, m.arbitration_id, m.is_extended_id, m.is_error_frame, m.is_rx,
            bytes(m.data or b"")) + exact


def refused(m):
    """SPEC §13.1: no raw bus record holds these as given (an 11-bit frame with an id over
    0x7FF: both python-can test BLFs hold two); import counts them, never alters them."""
    return not m.is_extended_id and not m.is_error_frame and m.arbitration_id > 0x7FF


def guessed(m, fmt):
    return fmt == "asc" and m.is_fd and not m.is_error_frame and len(m.data or b"") <= 8


def by_time(msgs):
    return sorted(msgs, key=lambda m: round(m.timestamp * 1e6))


def flags_of(m):
    return ((layout.FLAG_EXTENDED if m.is_extended_id else 0) | (layout.FLAG_REMOTE if m.is_remote_frame else 0)
            | (layout.FLAG_ERROR if m.is_error_frame else 0) | (layout.FLAG_FD if m.is_fd else 0)
            | (layout.FLAG_BRS if m.bitrate_switch else 0) | (layout.FLAG_ESI if m.error_state_indicator else 0)
            | (0 if m.is_rx else layout.FLAG_TX))


def logb_frames(path):
    """(bus, seconds, id, flags, dlc, payload bytes on the wire) of every frame in a Logb file."""
    out = []
    with logb.LogbFile(str(path)) as f:
        assert f.report.clean
        tr = formats.read_logb(f)
    for name, b in tr.buses.items():
        for i in range(len(b)):
            n = formats.payload_len(int(b.flags[i]), int(b.dlc[i]))
            out.append((name, int(b.t[i]) * 10.0 ** tr.axis_exp, int(b.id[i]), int(b.flags[i]), int(b.dlc[i]),
                        b.data[i, :n].tobytes()))
    return tr, out


@needs_traces
@pytest.mark.parametrize("name", SOURCES)
def test_import_holds_what_python_can_reads(name, tmp_path):
    src = TRACES / name
    fmt = formats.format_for(src)
    out = tmp_path / "t.logb"
    trace, problems = formats.import_trace(src, out)
    assert problems == []
    everything = pycan_messages(src)
    expected = [m for m in everything if not refused(m)]
    tr, frames = logb_frames(out)
    assert len(frames) == len(expected) == trace.frames
    with logb.LogbFile(str(out)) as f:
        lost = {s.name: s.lost.get(tables.LOST_INVALID, 0) for s in formats.raw_bus_streams(f)}
    assert sum(lost.values()) == sum(b.invalid for b in trace.buses.values()) == len(everything) - len(expected)
    assert len(trace.left_out) == sum(1 for n in lost.values() if n)
    # group python-can's messages by bus in file order, like the raw bus streams
    per_bus = {}
    for m in expected:
        ch = m.channel
        if fmt.NAME == "trc":
            ch = ch - 1  # python-can's TRC reader counts buses from 1, every other reader from 0
        per_bus.setdefault(bus_name(ch), []).append(m)
    got = {}
    for fr in frames:
        got.setdefault(fr[0], []).append(fr)
    assert sorted(per_bus) == sorted(got)
    for bus, msgs in per_bus.items():
        for m, (_, sec, ident, fl, code, payload) in zip(msgs, got[bus]):
            assert ident == m.arbitration_id
            if guessed(m, fmt.NAME):
                assert fl & ~(layout.FLAG_FD | layout.FLAG_REMOTE | layout.FLAG_BRS | layout.FLAG_ESI) == \
                    flags_of(m) & ~(layout.FLAG_FD | layout.FLAG_REMOTE | layout.FLAG_BRS | layout.FLAG_ESI)
                continue
            assert fl == flags_of(m), (bus, m)
            if m.is_remote_frame:
                assert payload == b""
                assert layout.dlc_to_len(code) == layout.dlc_to_len(fmt.dlc_code(m))
            else:
                assert payload == bytes(m.data or b"")[: len(payload)]
                assert len(payload) == len(m.data or b"") or (not m.is_fd and len(m.data) > 8)
            # python-can's float stamps are ~0.24 µs coarse at today's epoch
            assert abs(sec - m.timestamp) < 1e-6 or (abs(sec) > 1e9 and math.isclose(sec, m.timestamp,
                                                                                      rel_tol=1e-15))


@needs_traces
@pytest.mark.parametrize("name", SOURCES)
def test_round_trip_to_own_format(name, tmp_path):
    """source → Logb → same format: python-can reads the same frames as from the source."""
    src = TRACES / name
    fmt = formats.format_for(src).NAME
    lb = tmp_path / "t.logb"
    formats.import_trace(src, lb)
    back = tmp_path / ("back" + EXT[fmt])
    with logb.LogbFile(str(lb)) as f:
        _, warnings = formats.export_trace(f, back)
    assert warnings == []
    a, b = by_time([m for m in pycan_messages(src) if not refused(m)]), by_time(pycan_messages(back))
    assert len(a) == len(b)
    assert [key(x, guessed(x, fmt)) for x in a] == [key(y, guessed(x, fmt)) for x, y in zip(a, b)]
    resolution = 1e-6 if fmt != "blf" else 1e-6  # python-can's float stamps for BLF: ~0.24 µs
    for x, y in zip(a, b):
        assert abs(x.timestamp - y.timestamp) < resolution or math.isclose(x.timestamp, y.timestamp, rel_tol=1e-15)
    # and the integer ticks read back are identical
    again = formats.read_trace(back)
    first = formats.read_trace(src)
    assert again.dated == first.dated
    for name, bus in first.buses.items():
        if not len(bus):  # its frames all refused (refused()): nothing to write back
            continue
        other = again.buses[name]
        assert np.array_equal(bus.t, other.t)
        for col in ("id", "flags", "dlc", "data"):
            assert np.array_equal(getattr(bus, col), getattr(other, col)), col


@needs_traces
@pytest.mark.parametrize("name,time_base,exp", [
    ("lancer-candump.log", "unix", -6), ("camaro-reverse-pcan.trc", "unix", -6),
    ("pycan-logfile.asc", "unix", -6), ("pycan-issue_1905.blf", "unix", -6),
    ("pycan-test_CanFdMessage64.blf", "relative", -6), ("pycan-test_CanMessage.trc", "unix", -6),
])
def test_time_base_and_resolution(name, time_base, exp, tmp_path):
    out = tmp_path / "t.logb"
    trace, _ = formats.import_trace(TRACES / name, out)
    with logb.LogbFile(str(out)) as f:
        assert f.sessions[0].time_base == time_base
        for s in formats.raw_bus_streams(f):
            assert s.schema.axis_exp == exp
            assert s.schema.meta_dict()["logb.can.layout"] == ("raw-fd" if trace.buses[s.name].fd else "raw")
        meta = f.sessions[0].meta
        assert meta["can.import.format"] == formats.format_for(name).NAME
        if time_base == "unix" and trace.start is not None:
            # the source's measurement start, and the first frame's wall time is an epoch
            assert int(meta["can.import.start_ns"]) == trace.start * 10 ** (9 + exp)
            s = formats.raw_bus_streams(f)[0]
            assert s.columns().wall(0).basis == "unix"


@needs_traces
def test_asc_start_of_measurement_kept(tmp_path):
    """ASC stamps are relative to the measurement start: the export keeps the source's start
    (python-can's writer would restart at the first frame)."""
    lb, back = tmp_path / "t.logb", tmp_path / "b.asc"
    formats.import_trace(TRACES / "pycan-logfile.asc", lb)
    with logb.LogbFile(str(lb)) as f:
        formats.export_trace(f, back)
    src_lines = [ln.split()[0] for ln in (TRACES / "pycan-logfile.asc").read_text().splitlines()
                 if "ErrorFrame" in ln or " Rx " in ln or " Tx " in ln]
    out_lines = [ln.split()[0] for ln in back.read_text().splitlines() if "ErrorFrame" in ln or " Rx " in ln
                 or " Tx " in ln]
    assert "2.501000" in src_lines and "2.501000" in out_lines
    assert sorted(set(out_lines)) == sorted(set(src_lines) - {"3.297743", "20.305233"})  # J1939TP lines


@needs_traces
def test_asc_canfd_flags_column(tmp_path):
    """python-can reads every CANFD line as CAN FD and every empty one as a remote frame; the
    line's Flags column (EDL 0x1000, BRS 0x2000, RTR 0x10, as in BLF) says otherwise."""
    trace = formats.read_trace(TRACES / "pycan-logfile.asc")
    c1, c2 = trace.buses["can1"], trace.buses["can2"]
    i = c1.id.tolist().index(0x300)  # CANFD line, flags 0x303000: FD + BRS, 8 bytes
    assert c1.flags[i] == layout.FLAG_FD | layout.FLAG_BRS and c1.dlc[i] == 8
    j = c2.id.tolist().index(0x50005)  # CANFD line, flags 0x200050, 0 bytes: a classic remote frame
    assert c2.flags[j] == layout.FLAG_EXTENDED | layout.FLAG_REMOTE | layout.FLAG_TX and c2.dlc[j] == 5
    assert not c2.fd
    # an FD frame of 0 bytes stays a data frame through ASC (python-can alone would say remote)
    bus = formats.Bus("can0", np.array([10, 20], np.int64), np.array([1, 2], np.uint32),
                      np.array([layout.FLAG_FD, layout.FLAG_FD | layout.FLAG_BRS], np.uint8),
                      np.array([0, 9], np.uint8), np.zeros((2, 64), np.uint8))
    out = tmp_path / "z.asc"
    formats.write_trace(formats.Trace({"can0": bus}, -6, False, None, "x"), out)
    back = formats.read_trace(out).buses["can0"]
    assert back.flags.tolist() == bus.flags.tolist() and back.dlc.tolist() == [0, 9]


def synthetic_trace(exp=-6, dated=True):
    """Two buses with every frame kind."""
    rng = np.random.default_rng(7)
    base = 1_700_000_000_000_000 * 10 ** (-6 - exp) if dated else 5
    step = 10 ** (-3 - exp)  # 1 ms

    def bus(name, rows, fd):
        n = len(rows)
        width = 64 if fd else 8
        data = np.zeros((n, width), np.uint8)
        for i, (_, fl, code) in enumerate(rows):
            k = formats.payload_len(fl, code)
            data[i, :k] = rng.integers(0, 256, k)
        t = base + np.arange(n, dtype=np.int64) * step + (np.arange(n) % 3) * (1 if exp == -9 else 0) * 7
        if name == "can1":
            t += step // 2
        return formats.Bus(name, t, np.array([r[0] for r in rows], np.uint32),
                           np.array([r[1] for r in rows], np.uint8), np.array([r[2] for r in rows], np.uint8), data)

    E, R, ERR, FD, BRS, ESI, TX = (layout.FLAG_EXTENDED, layout.FLAG_REMOTE, layout.FLAG_ERROR, layout.FLAG_FD,
                                   layout.FLAG_BRS, layout.FLAG_ESI, layout.FLAG_TX)
    classic = [(0x123, 0, code) for code in range(9)] + [
        (0x1ABCDEF0, E, 8), (0x7FF, TX, 8), (0x0, 0, 0), (0x1FFFFFFF, E | TX, 5),
        (0x321, R, 3), (0x18FF0000, E | R, 8), (0x100, R | TX, 0), (0x0, E | ERR, 0)]
    fd = [(0x200, FD, code) for code in range(16)] + [
        (0x201, FD | BRS, 15), (0x202, FD | ESI, 13), (0x1C4D80A7, E | FD | BRS | ESI | TX, 15),
        (0x203, 0, 8), (0x204, TX, 4)]
    return formats.Trace({"can0": bus("can0", classic, False), "can1": bus("can1", fd, True)}, exp, dated,
                         None, "synthetic")


# What each format cannot hold (python-can's view of it), besides these the frames must be equal.
def _representable(fmt, fl):
    if fmt == "trc" and fl & layout.FLAG_ERROR:
        return False  # dropped (with a warning)
    return True


def _expected_flags(fmt, fl):
    E, ERR, FD, BRS, ESI = (layout.FLAG_EXTENDED, layout.FLAG_ERROR, layout.FLAG_FD, layout.FLAG_BRS,
                            layout.FLAG_ESI)
    if fl & ERR:
        if fmt == "blf":
            return (fl & E) | ERR  # CAN_ERROR_EXT: no FD flag, no direction
        if fmt == "asc":
            return (fl | E) & ~(BRS | ESI) if fl & FD else ERR | E  # ASC error lines name no id
        if fmt == "candump":
            return ERR | E  # SocketCAN error frames: no direction, no FD
    return fl


@pytest.mark.parametrize("fmt", READABLE)
@pytest.mark.parametrize("exp", [-6, -9])
def test_every_frame_kind_through_every_format(fmt, exp, tmp_path):
    trace = synthetic_trace(exp)
    lb = tmp_path / "s.logb"
    formats.write_logb(trace, lb)
    out = tmp_path / ("s" + EXT[fmt])
    with logb.LogbFile(str(lb)) as f:
        tr, warnings = formats.export_trace(f, out)
    if fmt == "trc":
        assert any("error frames" in w for w in warnings)
    back = formats.read_trace(out)
    assert back.dated
    for name, bus in trace.buses.items():
        got = back.buses[name]
        keep = np.array([_representable(fmt, int(x)) for x in bus.flags])
        assert len(got) == keep.sum()
        exp_flags = np.array([_expected_flags(fmt, int(x)) for x in bus.flags[keep]], np.uint8)
        assert got.flags.tolist() == exp_flags.tolist(), name
        assert got.id.tolist() == [0 if f & layout.FLAG_ERROR and fmt == "asc" else i
                                   for i, f in zip(bus.id[keep].tolist(), bus.flags[keep].tolist())]
        data_frames = (bus.flags[keep] & (layout.FLAG_ERROR | layout.FLAG_REMOTE)) == 0
        assert got.dlc[data_frames].tolist() == bus.dlc[keep][data_frames].tolist()
        remote = (bus.flags[keep] & layout.FLAG_REMOTE) != 0
        assert got.dlc[remote].tolist() == bus.dlc[keep][remote].tolist()
        width = min(got.data.shape[1], bus.data.shape[1])
        assert np.array_equal(got.data[:, :width], bus.data[keep][:, :width])
        # stamps: ns in BLF, µs elsewhere (rounded)
        scale = 10 ** (back.axis_exp - exp) if back.axis_exp > exp else 1
        want = bus.t[keep] if back.axis_exp == exp else np.floor_divide(bus.t[keep] + scale // 2, scale)
        if back.axis_exp < exp:
            want = bus.t[keep] * 10 ** (exp - back.axis_exp)
        assert got.t.tolist() == want.tolist()


@pytest.mark.parametrize("fmt", READABLE)
def test_undated_trace_stays_relative(fmt, tmp_path):
    trace = synthetic_trace(-6, dated=False)
    out = tmp_path / ("u" + EXT[fmt])
    formats.write_trace(trace, out)
    back = formats.read_trace(out)
    assert not back.dated
    for name, bus in trace.buses.items():
        keep = np.array([_representable(fmt, int(x)) for x in bus.flags])
        assert back.buses[name].t.tolist() == bus.t[keep].tolist()


CANDUMP = """\
(1700000000.000001) can0 123#DEADBEEF R
(1700000000.000002) can0 1ABCDEF0#0102 T
(1700000000.000003) can0 321#R3 R
(1700000000.000004) can0 20000004#0004000000000000
(1700000000.000005) can0 20000080#0000000000000000
(1700000000.000006) can1 300##3000102030405060708090A0B R
(1700000000.000007) can1 301##0AABB T
"""


def test_candump_fixes(tmp_path):
    """python-can loses error frames' class bits, data and channel, and remote frames' DLC on
    write; formats.candump keeps them. The candump text survives byte for byte."""
    src = tmp_path / "in.log"
    src.write_text(CANDUMP)
    trace = formats.read_trace(src)
    c0, c1 = trace.buses["can0"], trace.buses["can1"]
    assert c0.id.tolist() == [0x123, 0x1ABCDEF0, 0x321, 0x4, 0x80]
    F = layout
    assert c0.flags.tolist() == [0, F.FLAG_EXTENDED | F.FLAG_TX, F.FLAG_REMOTE, F.FLAG_ERROR | F.FLAG_EXTENDED,
                                 F.FLAG_ERROR | F.FLAG_EXTENDED]
    assert c0.dlc.tolist() == [4, 2, 3, 8, 8]
    assert c0.data[3].tolist() == [0, 4, 0, 0, 0, 0, 0, 0]
    assert c1.fd and c1.dlc.tolist() == [9, 2]
    assert c1.flags.tolist() == [F.FLAG_FD | F.FLAG_BRS | F.FLAG_ESI, F.FLAG_FD | F.FLAG_TX]
    assert c1.data[0, :12].tolist() == list(range(12))
    lb, out = tmp_path / "t.logb", tmp_path / "out.log"
    formats.write_logb(trace, lb)
    with logb.LogbFile(str(lb)) as f:
        formats.export_trace(f, out)
    assert out.read_text() == CANDUMP


def test_format_for():
    assert formats.format_for("a.LOG") is formats.candump
    assert formats.format_for("x.csv", "blf") is formats.blf
    assert formats.format_for("x.MF4") is formats.mdf4 and formats.format_for("x.mdf", "mdf4") is formats.mdf4
    with pytest.raises(UsageError):
        formats.format_for("x.csv")
    with pytest.raises(UsageError):
        formats.format_for("x.log", "pcap")
    assert formats.format_for("x.mf4", reading=True) is formats.mdf4  # MDF4 is read too (asammdf)
    with pytest.raises(UsageError, match="candump, asc, blf, trc, mdf4"):
        formats.format_for("x.txt", reading=True)


def test_registry():
    """Every format module exposes the same interface, and its extensions are its own."""
    extensions = [e for m in formats.REGISTRY.values() for e in m.EXTENSIONS]
    assert len(extensions) == len(set(extensions))
    for name, m in formats.REGISTRY.items():
        assert m.NAME == name and m.EXTENSIONS and callable(m.write) and isinstance(m.REQUIRES, str)
        assert all(formats.for_path("x" + e.upper()) is m for e in m.EXTENSIONS)
        assert (m.read is not None) == (name in formats.READERS) == bool(m.LOSSES)
        if m.LOSSES:
            assert m.LOSSES in formats.LOSSES


def test_long_gaps_and_out_of_order_stamps(tmp_path):
    """More than 2**32 ticks between frames, and stamps going backwards (as in merged BLFs)."""
    t = np.array([0, 5, 3, 1 << 33, (1 << 33) - 2, 1 << 40], np.int64) + 1_700_000_000_000_000
    bus = formats.Bus("can0", t, np.arange(6, dtype=np.uint32), np.zeros(6, np.uint8), np.full(6, 1, np.uint8),
                      np.arange(48, dtype=np.uint8).reshape(6, 8))
    trace = formats.Trace({"can0": bus}, -6, True, None, "x")
    lb = tmp_path / "g.logb"
    formats.write_logb(trace, lb)
    with logb.LogbFile(str(lb)) as f:
        back = formats.read_logb(f)
    assert back.buses["can0"].t.tolist() == t.tolist()


@needs_traces
def test_import_with_dbc_writes_message_streams(tmp_path):
    dbc = TRACES.parent / "dbc" / "fca_giorgio.dbc"
    out = tmp_path / "d.logb"
    trace, problems = formats.import_trace(TRACES / "durango-aconoff-candump.log", out, dbc=dbc)
    with logb.LogbFile(str(out)) as f:
        kinds = [s.schema.meta_dict().get("logb.can.layout") for s in f.streams.values()]
        # of the DBC's 39 messages, the 7 this bus carries: a stream is bound only where it has data
        assert kinds.count("raw") == 1 and kinds.count("message") == 7
        assert all(s.records for s in f.streams.values())
        assert any(a.media_type == "application/x-dbc" for a in f.attachments)
        assert f.stream("can0").records == trace.frames


@needs_traces
@pytest.mark.parametrize("limit", [64 << 10, formats.logbfile.SEGMENT_BYTES])
def test_import_writes_like_a_logger(limit, tmp_path):
    """Segments of at most `limit` (+ one frame), each binding only the streams with data in
    it; per-message DATA interleaved in time with the raw bus stream's, so a file cut
    anywhere decodes through its per-message streams, and every frame comes back."""
    from _frames import walk
    from logb.can.decode import decode_file
    from logb.tables import FrameType
    from test_writer import bound_and_used, segments

    dbc = TRACES.parent / "dbc" / "fca_giorgio.dbc"
    trace = formats.read_trace(TRACES / "durango-aconoff-candump.log")
    out = tmp_path / "d.logb"
    formats.write_logb(trace, out, dbc=dbc, segment_bytes=limit)
    data = out.read_bytes()
    segs = segments(data)
    assert len(segs) >= (9 if limit < len(data) // 8 else 1)
    for seg in segs:
        bound, used = bound_and_used(seg)
        assert sorted(used) == bound
        assert seg[-1][0] + 12 + seg[-1][3] - seg[0][0] <= limit + 12 + max(plen for _, _, _, plen in seg)
    data_frames = [(off, sid) for off, t, sid, _ in walk(data) if t == FrameType.DATA]
    raw = 1  # CanRecorder declares the raw bus stream first
    last_raw = max(off for off, sid in data_frames if sid == raw)
    messages = [off for off, sid in data_frames if sid != raw]
    assert len(messages) > 100 and sum(off < last_raw for off in messages) > 0.9 * len(messages)
    for cut in (40_001, 100_001, 300_001, 450_001):
        with logb.LogbFile(data[:cut]) as f:
            assert f.report.truncated
            # the per-message records of at most about one raw DATA frame's span are cut off
            rows = sum(len(d) for d in decode_file(f, source="messages"))
            assert rows > 0.5 * sum(len(d) for d in decode_file(f, source="raw")) > 0
    with logb.LogbFile(str(out)) as f:
        assert f.report.clean and all(f.index_valid.values())
        back = formats.read_logb(f)
    for name, b in trace.buses.items():
        got = back.buses[name]
        assert got.t.tolist() == b.t.tolist() and got.id.tolist() == b.id.tolist()
        assert got.flags.tolist() == b.flags.tolist() and got.dlc.tolist() == b.dlc.tolist()
        assert np.array_equal(got.data, b.data)


# ---------------------------------------------------------------- CLI

def test_cli_import_export(tmp_path, capsys):
    src = tmp_path / "in.log"
    src.write_text(CANDUMP)
    lb = tmp_path / "t.logb"
    assert main(["import", str(src), "-o", str(lb)]) == 0
    assert "7 frames from candump" in capsys.readouterr().out
    assert main(["import", str(src), "-o", str(lb), "--json"]) == 0
    import json
    summary = json.loads(capsys.readouterr().out)
    assert summary["frames"] == 7 and summary["time_base"] == "unix"
    assert {b["name"]: b["fd"] for b in summary["buses"]} == {"can0": False, "can1": True}
    other = tmp_path / "in.txt"
    other.write_text(CANDUMP)
    assert main(["import", str(other), "-o", str(lb)]) == 0  # the content tells the format (issue 14)
    assert main(["import", str(other), "--format", "candump", "-o", str(lb)]) == 0
    assert main(["import", str(other), "--format", "asc", "-o", str(lb)]) == 64  # the content is candump
    (tmp_path / "notes.txt").write_text("no trace here\n")
    assert main(["import", str(tmp_path / "notes.txt"), "-o", str(lb)]) == 64
    assert main(["import", str(tmp_path / "missing.log"), "-o", str(lb)]) == 64
    with pytest.raises(SystemExit) as exc:
        main(["import", str(src), "-o", str(lb), "--segment-bytes", "0"])
    assert exc.value.code == 64
    assert main(["import", str(src), "-o", str(lb), "--segment-bytes", "200"]) == 0
    with logb.LogbFile(str(lb)) as f:
        assert len(f.segments) > 1 and f.report.clean
    bad = tmp_path / "bad.blf"
    bad.write_bytes(b"not a blf file at all" * 20)
    assert main(["import", str(bad), "-o", str(lb)]) == 1
    capsys.readouterr()
    for fmt in READABLE:
        out = tmp_path / ("o" + EXT[fmt])
        assert main(["export", str(lb), "-o", str(out)]) == 0
        assert formats.read_trace(out).frames in (7, 5)  # TRC drops the two error frames
    one = tmp_path / "one.log"
    assert main(["export", str(lb), "--stream", "can1", "--format", "candump", "-o", str(one)]) == 0
    assert one.read_text() == "".join(CANDUMP.splitlines(keepends=True)[5:])
    assert main(["export", str(lb), "--stream", "nope", "-o", str(one)]) == 64
    assert main(["export", str(lb), "-o", str(tmp_path / "x.csv")]) == 64  # csv needs --stream


def test_anchored_recording_exports_wall_time(tmp_path):
    """A logger's file (monotonic clock + GPS anchors, CanRecorder) exports with wall-clock
    stamps: the anchors' mapping, here a constant offset and a 250 ns drift."""
    from logb.can.record import CanRecorder

    lb = tmp_path / "m.logb"
    t = np.arange(0, 2_000_000, 1000, dtype=np.int64)  # 2 s of µs ticks
    wall0 = 1_701_998_281_317_190_000
    with logb.Writer(str(lb), time_base="monotonic") as w:
        rec = CanRecorder(w, None, bus="can0")
        rec.add(t, np.full(len(t), 0x123), None, np.full(len(t), 2), np.zeros((len(t), 8), np.uint8))
        w.anchor(0, wall0, source="gps", uncertainty_ns=100)
        w.anchor(2_000_000_000, wall0 + 2_000_000_000 + 250_000, source="gps", uncertainty_ns=100)
    out = tmp_path / "m.log"
    with logb.LogbFile(str(lb)) as f:
        trace, _ = formats.export_trace(f, out)
        clock = f.sessions[0].clock
        assert trace.dated
        for i in (0, 1, 777, 1999):
            assert trace.buses["can0"].t[i] == clock.wall(int(t[i]), -6).ns // 1000
    back = formats.read_trace(out)
    assert back.dated and back.buses["can0"].t.tolist() == trace.buses["can0"].t.tolist()
    assert back.buses["can0"].t[1999] - back.buses["can0"].t[0] == 1_999_000 + 250 * 1999 // 2000


def test_a_multi_bus_import_attaches_the_dbc_once(tmp_path):
    trace = synthetic_trace()
    assert len(trace.buses) >= 2
    lb = tmp_path / "s.logb"
    formats.write_logb(trace, lb, dbc=str(TRACES.parent / "dbc" / "cantools-motohawk.dbc"))
    with logb.LogbFile(str(lb)) as f:
        dbcs = [a for a in f.attachments if a.media_type == "application/x-dbc"]
    assert len(dbcs) == 1

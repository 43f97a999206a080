"""logb.can.formats.mdf4 and `logb export --format mdf4`: MDF4 in the ASAM CAN bus-logging layout.
asammdf reads back our frames, python-can's MF4Reader too, and asammdf's
extract_bus_logging decodes the same signal values as logb.can.decode. The attached DBC
opens in asammdf without errors (clean_dbc)."""

import logging
import pathlib

import numpy as np
import pytest

asammdf = pytest.importorskip("asammdf")
can = pytest.importorskip("can")
cantools = pytest.importorskip("cantools")

import logb  # noqa: E402
from logb.can import formats, layout  # noqa: E402
from logb.can.formats import mdf4  # noqa: E402
from logb.can.decode import decode_file  # noqa: E402
from logb.cli.main import main  # noqa: E402

from test_can_formats import synthetic_trace  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2] / "shared"
DBC = ROOT / "bench" / "trace.dbc"
LANCER = ROOT / "data" / "traces" / "lancer-candump.log"
DBCS = ROOT / "data" / "dbc"
DURANGO = ROOT / "data" / "traces" / "durango-aconoff-candump.log"


def _frames_of(trace):
    """Every frame as (seconds, bus channel, id, flags, dlc, wire payload), time-sorted."""
    out = []
    for i, name in enumerate(sorted(trace.buses)):
        b = trace.buses[name]
        for k in range(len(b)):
            n = formats.payload_len(int(b.flags[k]), int(b.dlc[k]))
            out.append((int(b.t[k]), mdf4.bus_channel(name, i), int(b.id[k]), int(b.flags[k]), int(b.dlc[k]),
                        b.data[k, :n].tobytes()))
    out.sort(key=lambda r: r[0])
    return out


@pytest.mark.parametrize("compression", [0, 2])
def test_frames_read_back(tmp_path, compression):
    trace = synthetic_trace(-6)
    lb, out = tmp_path / "s.logb", tmp_path / "s.mf4"
    formats.write_logb(trace, lb)
    with logb.LogbFile(str(lb)) as f:
        assert mdf4.write(formats.read_logb(f), out, compression=compression) == []
    n_err = sum(int((b.flags & layout.FLAG_ERROR != 0).sum()) for b in trace.buses.values())
    n_rtr = sum(int(((b.flags & layout.FLAG_REMOTE != 0) & (b.flags & layout.FLAG_ERROR == 0)).sum())
                for b in trace.buses.values())
    m = asammdf.MDF(str(out))
    try:
        written = {g.channels[1].name: g.channel_group.cycles_nr for g in m.groups}
        assert written == {"CAN_DataFrame": trace.frames - n_err - n_rtr, "CAN_ErrorFrame": n_err,
                           "CAN_RemoteFrame": n_rtr}
        start_us = int(m.header.start_time.timestamp() * 1e6 + 0.5)
        got = []
        for group in mdf4.GROUPS:
            try:
                sig = m.get(group)
            except Exception:
                continue
            s = sig.samples
            ts = np.round(sig.timestamps * 1e6).astype(np.int64) + start_us
            for k in range(len(s)):
                fl = ((layout.FLAG_EXTENDED if s[f"{group}.IDE"][k] else 0)
                      | (layout.FLAG_TX if s[f"{group}.Dir"][k] else 0)
                      | (layout.FLAG_REMOTE if group == "CAN_RemoteFrame" else 0)
                      | (layout.FLAG_ERROR if group == "CAN_ErrorFrame" else 0))
                payload = b""
                if group != "CAN_RemoteFrame":
                    fl |= ((layout.FLAG_FD if s[f"{group}.EDL"][k] else 0)
                           | (layout.FLAG_BRS if s[f"{group}.BRS"][k] else 0)
                           | (layout.FLAG_ESI if s[f"{group}.ESI"][k] else 0))
                    payload = s[f"{group}.DataBytes"][k][: s[f"{group}.DataLength"][k]].tobytes()
                got.append((int(ts[k]), int(s[f"{group}.BusChannel"][k]), int(s[f"{group}.ID"][k]), fl,
                            int(s[f"{group}.DLC"][k]), payload))
    finally:
        m.close()
    assert sorted(got) == sorted(_frames_of(trace))
    # python-can's MF4Reader opens it too: same frames, channel = BusChannel
    msgs = list(can.MF4Reader(str(out)))
    assert len(msgs) == trace.frames
    want = sorted((r[0], r[1], r[2], bool(r[3] & layout.FLAG_ERROR), bool(r[3] & layout.FLAG_REMOTE),
                   bool(r[3] & layout.FLAG_TX)) for r in _frames_of(trace))
    have = sorted((round(x.timestamp * 1e6), x.channel, x.arbitration_id, x.is_error_frame, x.is_remote_frame,
                   not x.is_rx) for x in msgs)
    assert have == want


def _same_signals(m, dbc, ours):
    """asammdf's extract_bus_logging of the open MDF `m` with `dbc` decodes exactly `ours`
    ({(message, signal): (axis µs, raw, phys, has value table)} from logb.can.decode): the same
    signals, timestamps, raw values and physical values (asammdf turns value-table hits into
    NaN when ignoring value-to-text conversions). Values logb masks (past a short frame's data)
    are not compared: asammdf decodes the zero padding there. Returns the values compared."""
    start_us = int(m.header.start_time.timestamp() * 1e6 + 0.5)
    ext_mdf = m.extract_bus_logging({"CAN": [(str(dbc), 0)]})
    theirs = {}
    for gi, g in enumerate(ext_mdf.groups):
        for ch in g.channels[1:]:
            sig = ext_mdf.get(ch.name, gi)
            message = next(k for k, v in sig.display_names.items() if v == "message").split(".")[0]
            theirs[(message, ch.name)] = (sig, ext_mdf.get(ch.name, gi, raw=True))
    assert sorted(theirs) == sorted(ours)
    compared = 0
    for k, (axis, raw, phys, has_table) in ours.items():
        sig, sig_raw = theirs[k]
        assert (np.round(sig.timestamps * 1e6).astype(np.int64) + start_us).tolist() == axis.tolist(), k
        here = ~np.ma.getmaskarray(raw)
        assert np.asarray(sig_raw.samples)[here].astype(np.int64).tolist() \
            == np.ma.getdata(raw)[here].astype(np.int64).tolist(), k
        s = np.asarray(sig.samples, np.float64)[here]
        nan = np.isnan(s)
        assert not nan.any() or has_table, k
        assert s[~nan].tolist() == np.asarray(np.ma.getdata(phys), np.float64)[here][~nan].tolist(), k
        compared += int(here.sum())
    ext_mdf.close()
    return compared


@pytest.mark.skipif(not DBC.exists(), reason="../shared/bench/trace.dbc not present")
def test_asammdf_decodes_what_we_decode(tmp_path):
    """All 126 signals of trace.dbc over random payloads: asammdf's extract_bus_logging on the
    exported MDF4 gives our raw values, our physical values (asammdf turns value-table hits
    into NaN when ignoring value-to-text conversions), and our timestamps."""
    db = cantools.database.load_file(str(DBC))
    rng = np.random.default_rng(11)
    n = 6000
    pick = rng.integers(0, len(db.messages), n)
    ids = np.array([db.messages[i].frame_id for i in pick], np.uint32)
    ext = np.array([db.messages[i].is_extended_frame for i in pick])
    t = 1_717_000_000_123_456 + np.cumsum(rng.integers(50, 900, n)).astype(np.int64)
    bus = formats.Bus("can0", t, ids, ext.astype(np.uint8), np.full(n, 8, np.uint8),
                      rng.integers(0, 256, (n, 8), dtype=np.uint8))
    lb, out = tmp_path / "v.logb", tmp_path / "v.mf4"
    formats.write_logb(formats.Trace({"can0": bus}, -6, True, None, "test"), lb, dbc=DBC)
    with logb.LogbFile(str(lb)) as f:
        formats.export_trace(f, out)
        ours = {(d.message, s): (d.axis, d.raw[s], d.phys[s], s in d.text) for d in decode_file(f) for s in d.phys}
    m = asammdf.MDF(str(out))
    assert [a.file_name.name if hasattr(a.file_name, "name") else str(a.file_name) for a in m.attachments] \
        == ["trace.dbc"]
    assert len(ours) == 126
    assert _same_signals(m, DBC, ours) > 6000
    m.close()


@pytest.mark.skipif(not LANCER.exists(), reason="../shared/data/traces not present")
def test_real_trace_and_cli(tmp_path, capsys):
    lb, out = tmp_path / "l.logb", tmp_path / "l.mf4"
    assert main(["import", str(LANCER), "-o", str(lb)]) == 0
    assert main(["export", str(lb), "-o", str(out)]) == 0  # mdf4 from the extension
    trace = formats.read_trace(LANCER)
    msgs = list(can.MF4Reader(str(out)))
    b = trace.buses["can0"]
    assert len(msgs) == len(b)
    assert [x.arbitration_id for x in msgs] == b.id.tolist()
    assert [bytes(x.data) for x in msgs] == [b.data[k, : b.dlc[k]].tobytes() for k in range(len(b))]
    assert [round(x.timestamp * 1e6) for x in msgs] == b.t.tolist()
    assert main(["export", str(lb), "--format", "mdf4", "--stream", "can0", "-o", str(tmp_path / "x.bin")]) == 0
    assert asammdf.MDF(str(tmp_path / "x.bin")).groups[0].channel_group.cycles_nr == len(b)


@pytest.mark.skipif(not (DURANGO.exists() and DBCS.exists()), reason="../shared/data not present")
@pytest.mark.parametrize("trace, dbc, note", [
    (DURANGO, "fca_giorgio.dbc", "id with more than 11 bits and no extended flag, written as extended "
                                 "(as logb decodes it): CAM_UNKNOWN_6 (0x1E36001E)"),
    (LANCER, "opendbc-toyota_2017_ref_pt.dbc", "no CAN id (more than 29 bits), left out: BDB1F01_14, "),
])
def test_attached_dbc_opens_clean_and_still_decodes(trace, dbc, note, tmp_path, capfd, caplog):
    """The real DBCs cantools refuses: asammdf opens the MF4 without a word from canmatrix,
    cantools loads the attached DBC strictly, it holds every message logb compiled (ids and
    signals), and asammdf decodes the trace with it exactly as logb does."""
    from logb.can.dbc import load_dbc

    lb, out = tmp_path / "l.logb", tmp_path / "l.mf4"
    assert main(["import", str(trace), "--dbc", str(DBCS / dbc), "-o", str(lb)]) == 0
    capfd.readouterr()
    assert main(["export", str(lb), "-o", str(out)]) == 0
    assert f"logb export: warning: MDF4: the attached {dbc}: {note}" in capfd.readouterr().err
    with caplog.at_level(logging.DEBUG):
        m = asammdf.MDF(str(out))
    said = capfd.readouterr()
    assert said.out == said.err == ""  # canmatrix printed "error with line no: 228" here
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    try:
        payload, name, _md5 = m.extract_attachment(0)
        assert pathlib.Path(name).name == dbc
        cleaned = cantools.database.load_string(payload.decode("utf-8"), database_format="dbc", strict=True)
        db, *_, problems, _notes, placeholders = load_dbc(str(DBCS / dbc))
        dropped = {p[0] for p in problems}
        assert {(x.name, x.frame_id, x.is_extended_frame, tuple(g.name for g in x.signals)) for x in db.messages
                if x.name not in dropped} \
            == {(x.name, x.frame_id, x.is_extended_frame, tuple(g.name for g in x.signals)) for x in cleaned.messages}
        assert len(dropped) == len(placeholders)
        (tmp_path / dbc).write_bytes(payload)
        with logb.LogbFile(str(lb)) as f:
            ours = {(d.message, s): (d.axis, d.raw[s], d.phys[s], s in d.text) for d in decode_file(f)
                    for s in d.phys}
        assert _same_signals(m, tmp_path / dbc, ours) > 20_000
    finally:
        m.close()


def test_clean_dbc_keeps_the_rest_byte_for_byte():
    """Only what cantools refuses changes: a 12..29-bit id without the extended flag gets it
    everywhere it is named; a pseudo message goes with its signals, comments (one holding
    `;` and a line break), attributes and value tables; the rest is left as it was."""
    head = 'VERSION ""\n\nBU_: A\n\nBO_ 100 Plain: 8 A\n SG_ S : 0|8@1+ (1,0) [0|255] "" A\n\n'
    wide = 'BO_ 506855454 Wide: 1 A\n SG_ W : 0|8@1+ (1,0) [0|255] "" A\n\n'
    pseudo = 'BO_ 1075054137 Pseudo: 8 A\n SG_ P : 0|8@1+ (1,0) [0|255] "" A\n\n'
    tail = ('CM_ BO_ 100 "kept";\nCM_ SG_ 1075054137 P "gone; across\nlines";\nCM_ SG_ 506855454 W "wide";\n'
            'BA_DEF_ BO_ "GenMsgCycleTime" INT 0 1000;\nBA_ "GenMsgCycleTime" BO_ 1075054137 100;\n'
            'BA_ "GenMsgCycleTime" BO_ 100 10;\nVAL_ 1075054137 P 0 "off" 1 "on" ;\nVAL_ 100 S 0 "zero" ;\n')
    cleaned, notes = mdf4.clean_dbc((head + wide + pseudo + tail).encode())
    wide_ext = str(506855454 | 1 << 31)
    assert cleaned.decode() == (head + wide.replace("506855454", wide_ext) + "\n"  # the pseudo block's blank line
                                + 'CM_ BO_ 100 "kept";\n' + f'CM_ SG_ {wide_ext} W "wide";\n'
                                + 'BA_DEF_ BO_ "GenMsgCycleTime" INT 0 1000;\nBA_ "GenMsgCycleTime" BO_ 100 10;\n'
                                + 'VAL_ 100 S 0 "zero" ;\n')
    assert notes == ["id with more than 11 bits and no extended flag, written as extended (as logb decodes it): "
                     "Wide (0x1E36001E)", "no CAN id (more than 29 bits), left out: Pseudo"]
    assert mdf4.clean_dbc(b"BO_ 100 M: 8 A\n SG_ S : 0|8@1+ (1,0) [0|255] \"\" A\n") == \
        (b"BO_ 100 M: 8 A\n SG_ S : 0|8@1+ (1,0) [0|255] \"\" A\n", [])
    payload, notes = mdf4.clean_dbc(b"BO_ 100 M: 8 A\n SG_ S : 0|8@9+ nonsense\n")
    assert payload is None and notes[-1].startswith("cantools cannot load it (") and notes[-1].endswith("not attached")


def test_bus_channel():
    assert mdf4.bus_channel("can0", 5) == 1 and mdf4.bus_channel("vcan3", 0) == 4
    assert mdf4.bus_channel("body", 2) == 3


# ---------------------------------------------------------------- reading MF4 (logb import, every reading command)

TRACES = ROOT / "data" / "traces"


def _frames(trace, exp=-9):
    """{bus: [(ns or µs ticks at 10**exp, id, flags, dlc, data on the wire)]} of a Trace, in bus order."""
    out = {}
    for name, b in trace.buses.items():
        scale = 10 ** (trace.axis_exp - exp)
        out[name] = [(int(b.t[k]) * scale, int(b.id[k]), int(b.flags[k]), int(b.dlc[k]),
                      b.data[k, :formats.payload_len(int(b.flags[k]), int(b.dlc[k]))].tobytes())
                     for k in range(len(b))]
    return out


def _bus_after_mdf(name):
    """What a bus name becomes through MDF's one-byte BusChannel (mdf4.LOSSES)."""
    return f"can{min(int(name[3:]), 254)}" if name.startswith("can") and name[3:].isdigit() else name


@pytest.mark.parametrize("path", sorted(TRACES.glob("*")) if TRACES.exists() else [], ids=lambda p: p.name)
def test_mf4_export_reads_back_as_the_same_frames(tmp_path, path):
    """Every real trace: logb export --format mdf4, then the MF4 read (as `logb import` and every
    reading command do): the same buses, ids, flags, DLCs, data and times (to the ns), but for
    what mdf4.LOSSES says MDF cannot hold (times are exact: an integer master)."""
    mf4 = tmp_path / "x.mf4"
    assert main(["export", str(path), "-o", str(mf4)]) == 0
    want = formats.read_trace(path)
    got = formats.read_trace(mf4)
    assert got.dated == want.dated and got.source_format == "mdf4"
    # a bus whose frames were all refused (SPEC §13.1, counted in logb.lost.invalid) has none to write
    expect = {_bus_after_mdf(k): [_after_mdf(r) for r in v] for k, v in _frames(want).items() if v}
    have = _frames(got)
    assert sorted(have) == sorted(expect)
    for name, rows in expect.items():
        assert have[name] == rows, name


def _after_mdf(row):
    """A frame as MDF holds it (mdf4.LOSSES): a remote frame keeps no FD, BRS or ESI flag."""
    t, ident, fl, dlc, data = row
    if fl & layout.FLAG_REMOTE and not fl & layout.FLAG_ERROR:
        fl &= ~(layout.FLAG_FD | layout.FLAG_BRS | layout.FLAG_ESI)
    return t, ident, fl, dlc, data


def test_mf4_every_frame_kind_and_the_cli(tmp_path, capsys):
    """Error, remote, FD (BRS, ESI), extended and sent frames of two buses, dated and undated,
    µs and ns stamps; then `logb import` of the MF4 and `logb dump` of it equal the source's."""
    for exp, dated in ((-6, True), (-9, True), (-6, False)):
        trace = synthetic_trace(exp, dated)
        mf4 = tmp_path / f"s{exp}{dated}.mf4"
        assert mdf4.write(trace, mf4) == []
        got = formats.read_as(mf4, mdf4)
        assert formats.sniff(mf4) is mdf4 and got.dated == dated
        assert _frames(got) == _frames(trace), (exp, dated)
        assert got.axis_exp == (-9 if exp == -9 else -6)  # ns only when some stamp needs it
    src, mf4, lb = tmp_path / "src.logb", tmp_path / "s-6True.mf4", tmp_path / "back.logb"
    formats.write_logb(synthetic_trace(-6, True), src)
    assert main(["import", str(mf4), "-o", str(lb)]) == 0
    capsys.readouterr()
    dumps = []
    for f in (src, lb, mf4):
        main(["dump", str(f), "--format", "candump"])
        dumps.append(capsys.readouterr().out)
    assert dumps[0] == dumps[1] == dumps[2] and dumps[0].count("\n") == synthetic_trace().frames


def test_mf4_written_by_python_can_reads_the_same(tmp_path):
    """python-can's MF4Writer (header start: now, local; BusChannel 0 for "can0"): the frames
    python-can was given come back, times to the µs."""
    if not hasattr(can, "MF4Writer"):
        pytest.skip("python-can has no MF4Writer")
    trace = synthetic_trace(-6, True)
    merged = formats.trace.merged(trace)
    out = tmp_path / "pycan.mf4"
    w = can.MF4Writer(str(out))
    for k in range(len(merged.t)):
        fl, code = int(merged.flags[k]), int(merged.dlc[k])
        n = formats.payload_len(fl, code)
        w.on_message_received(can.Message(
            timestamp=int(merged.t[k]) / 1e6, arbitration_id=int(merged.id[k]),
            is_extended_id=bool(fl & layout.FLAG_EXTENDED), is_remote_frame=bool(fl & layout.FLAG_REMOTE),
            is_error_frame=bool(fl & layout.FLAG_ERROR), is_fd=bool(fl & layout.FLAG_FD),
            bitrate_switch=bool(fl & layout.FLAG_BRS), error_state_indicator=bool(fl & layout.FLAG_ESI),
            is_rx=not fl & layout.FLAG_TX, channel=merged.names[merged.bus[k]],
            dlc=layout.dlc_to_len(code) if fl & layout.FLAG_FD else code, data=merged.data[k, :n].tobytes()))
    w.stop()
    got = formats.read_trace(out)
    assert sorted(got.buses) == ["can0", "can1"] and got.dated
    for name, rows in _frames(trace, -6).items():
        have = _frames(got, -6)[name]
        assert [r[1:] for r in have] == [r[1:] for r in rows], name
        # python-can stores float seconds after a float start: within a µs
        assert max(abs(a[0] - b[0]) for a, b in zip(have, rows)) <= 1, name


@pytest.mark.skipif(not LANCER.exists(), reason="../shared/data/traces not present")
def test_times_are_integer_ticks_smaller_than_python_cans_and_exact(tmp_path):
    """The master channel is int64 µs with a linear conversion to seconds: asammdf's get and
    to_dataframe give float seconds exact to the µs, and the file is smaller than python-can's
    MF4Writer's of the same frames (float64 seconds, which deflate badly)."""
    from asammdf.blocks import v4_constants as v4c

    from logb.can.formats import pycan

    trace = formats.read_trace(LANCER)
    ours, theirs = tmp_path / "ours.mf4", tmp_path / "pycan.mf4"
    mdf4.write(trace, ours)
    w = can.MF4Writer(str(theirs))
    for _tick, msg in pycan.messages(trace):
        msg.channel = pycan.channel_int(msg.channel)
        w.on_message_received(msg)
    w.stop()
    assert ours.stat().st_size < 0.95 * theirs.stat().st_size
    b = trace.buses["can0"]
    m = asammdf.MDF(str(ours))
    try:
        master = m.groups[0].channels[m.masters_db[0]]
        assert master.data_type == v4c.DATA_TYPE_SIGNED_INTEL and master.bit_count == 64
        assert master.conversion.conversion_type == v4c.CONVERSION_TYPE_LIN
        assert (master.conversion.a, master.conversion.b) == (1e-6, 0.0)
        start_us = int(m.header.start_time.timestamp() * 1e6 + 0.5)
        sig = m.get("CAN_DataFrame")
        assert sig.timestamps.dtype == np.float64
        assert (np.round(sig.timestamps * 1e6).astype(np.int64) + start_us).tolist() == b.t.tolist()
        df = m.to_dataframe(time_from_zero=False)
        assert len(df) == len(b)
        assert (np.round(df.index.to_numpy() * 1e6).astype(np.int64) + start_us).tolist() == b.t.tolist()
    finally:
        m.close()
    got = formats.read_trace(ours).buses["can0"]
    assert got.t.tolist() == b.t.tolist() and got.data.tolist() == b.data.tolist()


def test_undated_far_stamps_are_exact(tmp_path):
    """An undated trace is written from the epoch: ns stamps past 10^6 s (which float seconds
    held only to ~0.5 µs) come back exact."""
    rng = np.random.default_rng(3)
    t = 3 * 10**15 + np.cumsum(rng.integers(1, 10**6, 500)).astype(np.int64)
    bus = formats.Bus("can0", t, np.full(500, 0x123, np.uint32), np.zeros(500, np.uint8), np.full(500, 8, np.uint8),
                      rng.integers(0, 256, (500, 8), dtype=np.uint8))
    out = tmp_path / "u.mf4"
    mdf4.write(formats.Trace({"can0": bus}, -9, False, None, "test"), out)
    got = formats.read_trace(out)
    assert not got.dated and got.axis_exp == -9 and got.buses["can0"].t.tolist() == t.tolist()


@pytest.mark.parametrize("a, exact", [(1e-5, True), (2.5e-7, False)])
def test_integer_master_of_another_writer(tmp_path, a, exact):
    """A logger's integer master in other units: a = 10^-k s is read as exact integers (10 µs
    ticks far from the start, where float seconds would be off), any other factor through
    asammdf's float seconds, rounded to the ns."""
    from asammdf import MDF, Signal
    from asammdf.blocks import v4_constants as v4c
    from asammdf.blocks.v4_blocks import ChannelConversion

    ticks = np.uint64(10**14) + np.arange(0, 3000, 7, dtype=np.uint64)
    rec = np.zeros(len(ticks), mdf4._dtype("CAN_DataFrame", 8))
    rec["CAN_DataFrame.BusChannel"] = 1
    rec["CAN_DataFrame.ID"] = np.arange(len(ticks)) % 0x7FF
    rec["CAN_DataFrame.DLC"] = rec["CAN_DataFrame.DataLength"] = 8
    m = MDF(version="4.10")
    m.header.start_time = mdf4.EPOCH  # undated: the ticks are the times
    m.append(Signal(name="CAN_DataFrame", samples=rec, timestamps=ticks), acq_name="CAN")
    m.groups[0].channels[0].conversion = ChannelConversion(conversion_type=v4c.CONVERSION_TYPE_LIN, a=a, b=0.0)
    out = tmp_path / "other.mf4"
    m.save(str(out), overwrite=True, compression=2)
    m.close()
    got = formats.read_trace(out).buses["can0"]
    if exact:
        assert got.t.tolist() == (ticks.astype(np.int64) * 10).tolist()  # 10 µs ticks, read as µs
    else:
        want = np.round(ticks.astype(np.float64) * a * 1e9).astype(np.int64)
        assert np.abs(got.t - want).max() <= 64  # float seconds near 2.5e7 s: ~4 ns steps, rounded
    assert got.id.tolist() == rec["CAN_DataFrame.ID"].tolist()


def test_a_cut_or_foreign_mf4_is_a_clear_error(tmp_path):
    """A cut MF4 (a copy stopped early) and one that only starts like MDF: exit 1, one line
    naming the file and asammdf's reason, no traceback of asammdf's clean-up."""
    import subprocess
    import sys

    whole = tmp_path / "w.mf4"
    mdf4.write(synthetic_trace(), whole)
    cut, junk = tmp_path / "cut.mf4", tmp_path / "junk.mf4"
    cut.write_bytes(whole.read_bytes()[:3000])
    junk.write_bytes(b"MDF     junk")
    for path in (cut, junk):
        r = subprocess.run([sys.executable, "-m", "logb.cli.main", "dump", str(path)], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 1 and r.stdout == ""
        assert "cannot read as mdf4" in r.stderr and str(path) in r.stderr
        assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr, r.stderr

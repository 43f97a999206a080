"""logb.can.formats.mdf4 and `logb export --format mdf4`: MDF4 in the ASAM CAN bus-logging layout.
asammdf reads back our frames, python-can's MF4Reader too, and asammdf's
extract_bus_logging decodes the same signal values as logb.can.decode."""

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
    start_us = int(m.header.start_time.timestamp() * 1e6 + 0.5)
    ext_mdf = m.extract_bus_logging({"CAN": [(str(DBC), 0)]})
    theirs = {}
    for gi, g in enumerate(ext_mdf.groups):
        for ch in g.channels[1:]:
            sig = ext_mdf.get(ch.name, gi)
            message = next(k for k, v in sig.display_names.items() if v == "message").split(".")[0]
            theirs[(message, ch.name)] = (sig, ext_mdf.get(ch.name, gi, raw=True))
    assert len(ours) == len(theirs) == 126
    for k, (axis, raw, phys, has_table) in ours.items():
        sig, sig_raw = theirs[k]
        assert (np.round(sig.timestamps * 1e6).astype(np.int64) + start_us).tolist() == axis.tolist(), k
        assert np.asarray(sig_raw.samples).astype(np.int64).tolist() == raw.astype(np.int64).tolist(), k
        s = np.asarray(sig.samples, np.float64)
        nan = np.isnan(s)
        assert not nan.any() or has_table, k
        assert s[~nan].tolist() == np.asarray(phys, np.float64)[~nan].tolist(), k
    m.close()
    ext_mdf.close()


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


def test_bus_channel():
    assert mdf4.bus_channel("can0", 5) == 1 and mdf4.bus_channel("vcan3", 0) == 4
    assert mdf4.bus_channel("body", 2) == 3

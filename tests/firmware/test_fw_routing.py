"""Routing (docs/SPEC.md §13.4): the device writer's default `exclusive` routing
against `mirror`, over the same frames. Nothing is lost either way, and every
whole-bus consumer — logb.can.bus.bus_frames, `logb stats`, `logb export`
(candump, TRC, MDF4), `logb decode` (per-message streams, and a DBC) — gives
the same result for both recordings. The recordings are written by the
firmware writer (firmware/logb) under CPython."""

import io
import json

import numpy as np
import pytest

import logb
from logb.can import formats, layout
from logb.can.bus import bus_frames, buses, merge_order
from logb.can.config import ConfigEntry, config_entries, encode_config
from logb.can.dbc import compile_dbc, raw_stream_uuid
from logb.can.decode import decode_file
from logb.can.formats import read_logb
from logb.can.layout import len_to_dlc
from logb.can.stats import trace_stats
from logb.cli.main import main as logb_main
from logb.framing import FILE_HEADER_SIZE

import fwload
import scenario

fw = fwload.load()
fwconfig = fwload.submodule("config")
fwschema = fwload.submodule("schema")

# Exact messages (Engine, Short, and Body: an extended id that is no J1939 message),
# a multiplexed message (branches), a J1939 message (matched by PGN) and a 16-byte CAN
# FD message (which makes the raw bus stream CAN FD, 64-byte payloads).
DBC = '''VERSION ""

NS_ :

BS_:

BU_: ECU

BO_ 256 Engine: 8 ECU
 SG_ Speed : 7|16@0+ (0.25,0) [0|16383.75] "rpm" ECU
 SG_ Gear : 24|4@1+ (1,0) [0|15] "" ECU

BO_ 291 Short: 3 ECU
 SG_ Level : 0|12@1+ (0.1,0) [0|0] "%" ECU

BO_ 2566844926 Body: 8 ECU
 SG_ Door : 0|1@1+ (1,0) [0|1] "" ECU
 SG_ Lamp : 15|12@0- (1,0) [0|0] "" ECU

BO_ 512 Muxed: 8 ECU
 SG_ Sel M : 0|8@1+ (1,0) [0|0] "" ECU
 SG_ A m1 : 8|16@1+ (0.1,0) [0|0] "V" ECU
 SG_ B m2 : 8|16@1- (1,0) [0|0] "A" ECU

BO_ 2365513728 Dist: 8 ECU
 SG_ Odo : 0|32@1+ (5,0) [0|0] "m" ECU

BO_ 768 Wide: 16 ECU
 SG_ W0 : 0|16@1+ (1,0) [0|0] "" ECU
 SG_ W1 : 64|16@1+ (1,0) [0|0] "" ECU

VAL_ 256 Gear 0 "P" 1 "R" 2 "N" 3 "D" ;
BA_DEF_ BO_ "VFrameFormat" ENUM "StandardCAN","ExtendedCAN","reserved","J1939PG";
BA_DEF_DEF_ "VFrameFormat" "StandardCAN";
BA_ "VFrameFormat" BO_ 2365513728 3;
'''
FD, BRS, ESI, TX = layout.FLAG_FD, layout.FLAG_BRS, layout.FLAG_ESI, layout.FLAG_TX
WRAP = 1 << 30


def make_frames(n=4000, seed=11, start=WRAP - 300_000):
    """[(ticks mod 2**30, id, flags, data, dlc)]: every kind of frame the routing rule
    separates. dlc -1: the writer derives it from the length."""
    rnd = np.random.default_rng(seed)
    exact = [(0x100, 0, 8), (0x123, 0, 3), (0x18FEF1FE, 1, 8)]
    out, t = [], start
    for i in range(n):
        t += int(rnd.integers(50, 400))
        r = rnd.random()
        cid, ext, ln = exact[int(rnd.integers(0, 3))]
        flags, dlc = ext, -1
        if r < 0.40:  # classic, its message's length: goes to its exact stream alone
            pass
        elif r < 0.47:  # another length: raw bus stream alone
            ln = int(rnd.choice([k for k in range(9) if k != ln]))
        elif r < 0.51:  # CAN FD (some with BRS/ESI), classic lengths and longer
            flags |= FD | int(rnd.choice([0, BRS, BRS | ESI]))
            ln = int(rnd.choice([ln, 8, 12, 64]))
        elif r < 0.54:  # transmitted by the logger
            flags |= TX
        elif r < 0.56:  # a classic frame with DLC 9..15 (8 bytes)
            cid, ext, ln = 0x100, 0, 8
            flags, dlc = 0, int(rnd.integers(9, 16))
        elif r < 0.64:  # J1939 by PGN: any priority and source address
            cid = 0x0CFEE000 | int(rnd.integers(0, 256)) | (int(rnd.integers(0, 8)) << 26)
            flags, ln = 1, 8
        elif r < 0.72:  # multiplexed: branch 1, 2 or an undefined value
            cid, flags, ln = 0x200, 0, 8
        elif r < 0.78:  # the CAN FD message
            cid, flags, ln = 0x300, FD | int(rnd.choice([0, BRS])), int(rnd.choice([12, 16, 64]))
        elif r < 0.83:  # remote frames, with the requested length
            flags |= layout.FLAG_REMOTE
            ln, dlc = 0, int(rnd.integers(0, 9))
        elif r < 0.85:  # error frames
            cid, flags, ln = int(rnd.integers(0, 0x800)), layout.FLAG_ERROR, 8
        else:  # ids no message has
            if rnd.random() < 0.5:
                cid, flags = int(rnd.integers(0x600, 0x700)), 0
            else:
                cid, flags = int(rnd.integers(0, 1 << 29)) | 0x1000000, 1
            ln = int(rnd.integers(0, 9))
        data = bytes(int(x) for x in rnd.integers(0, 256, ln))
        if cid == 0x200:
            data = bytes([int(rnd.choice([1, 2, 7]))]) + data[1:]
        out.append((t % WRAP, cid, flags, data, dlc))
    return out


def unwrapped(frames):
    cur, last, out = None, None, []
    for t, *_ in frames:
        cur = t if cur is None else cur + ((t - last + (1 << 29)) & (WRAP - 1)) - (1 << 29)
        last = t
        out.append(cur)
    return out


def record(cfg, frames, mirror, session=scenario.SESSION, device="routing"):
    sink = io.BytesIO()
    clock = scenario.Clock(frames[0][0])
    w = fw.Writer(sink, device=device, session=session, ticks=clock, segment_bytes=20000, mirror=mirror)
    w.load_config(cfg)
    for i, (t, cid, flags, data, dlc) in enumerate(frames):
        clock.now = t
        w.append_can(t, cid, data, flags, dlc)
        if i % 64 == 63:
            w.poll()
    w.close()
    return sink.getvalue(), w


@pytest.fixture(scope="module")
def setup():
    compiled = compile_dbc(DBC)
    assert compiled.fd and not compiled.problems
    cfg = encode_config(config_entries(compiled))
    frames = make_frames()
    excl, wx = record(cfg, frames, mirror=False)
    mirr, wm = record(cfg, frames, mirror=True)
    assert wx.errors == wm.errors == 0 and wx.streams[0].lost_buffer == 0
    return compiled, cfg, frames, excl, mirr


def columns_equal(a, b):
    for k in ("t", "session", "id", "flags", "dlc", "data"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    assert a.axis_exp == b.axis_exp and a.name == b.name


# ---------------------------------------------------------------- what is written where

def test_routing_is_declared_and_nothing_is_lost(setup):
    compiled, _, frames, excl, mirr = setup
    fx, fm = logb.LogbFile(excl), logb.LogbFile(mirr)
    assert fx.report.clean and fm.report.clean
    rx, rm = fx.stream("can0"), fm.stream("can0")
    assert rx.schema.meta_dict()["logb.can.routing"] == "exclusive"
    assert rm.schema.meta_dict()["logb.can.routing"] == "mirror"
    # the device's mirror schema is the host's (CanRecorder's) byte for byte: one uuid per bus
    assert rm.schema_payload == compiled.raw_schema.encode() and rm.uuid == raw_stream_uuid("can0", "logb", True)
    assert rx.uuid == layout.routing_uuid(rm.uuid, "exclusive") != rm.uuid
    # mirror: every frame in the raw bus stream; exclusive: exactly the ones the rule keeps there
    assert rm.records == len(frames)
    alone = 0
    for _, cid, fl, data, dlc in frames:
        e = None if fl & 6 else compiled.route(cid, bool(fl & 1), data)
        alone += e is not None and e.exact and fl & 0xFE == 0 and len(data) == e.payload_len and dlc in (-1, len(data))
    assert 1000 < alone < len(frames) - 1000
    assert rx.records == len(frames) - alone
    # per-message streams of exact messages hold fewer records when exclusive (their lossy
    # frames are in the raw bus stream alone); PGN-matched, branch and CAN FD ones the same
    for e in compiled.entries:
        nx, nm = fx.stream(e.name).records, fm.stream(e.name).records
        assert (nx < nm) if e.exact else (nx == nm), e.name
    for f in (fx, fm):
        b = bus_frames(f)
        want_t = unwrapped(frames)
        assert b.t.tolist() == want_t and b.session.tolist() == [0] * len(frames)
        assert b.id.tolist() == [cid for _, cid, _, _, _ in frames]
        assert b.flags.tolist() == [fl for _, _, fl, _, _ in frames]
        assert b.dlc.tolist() == [len_to_dlc(len(d)) if dlc < 0 else dlc for _, _, _, d, dlc in frames]
        assert [bytes(x) for x in b.data] == [d.ljust(64, b"\0") for _, _, _, d, _ in frames]
    assert bus_frames(fx).from_messages == alone and bus_frames(fm).from_messages == 0
    assert bus_frames(fx).routing == "exclusive" and bus_frames(fm).routing == "mirror"


def test_j1939_fd_remote_and_error_frames_are_never_alone_in_a_message_stream(setup):
    """A frame goes to a per-message stream alone only when that stream rebuilds it."""
    compiled, _, frames, excl, _ = setup
    f = logb.LogbFile(excl)
    raw = f.stream("can0").columns()
    in_raw = set(zip(raw.axis.tolist(), raw.raw["id"].tolist()))
    for tu, (_, cid, fl, data, dlc) in zip(unwrapped(frames), frames):
        j1939 = fl & 1 and (cid & 0x3FFFF00) == 0x0FEE000
        if fl & 0xFE or j1939 or cid in (0x200, 0x300) or dlc > 8:
            assert (tu, cid) in in_raw, (hex(cid), fl)
    # the J1939 stream got every PGN match, with the source address kept in the raw bus stream
    dist = f.stream("Dist").columns()
    pgn = [tu for tu, (_, cid, fl, _, _) in zip(unwrapped(frames), frames) if fl == 1 and (cid & 0x3FFFF00) == 0xFEE000]
    assert dist.axis.tolist() == pgn and len(pgn) > 100


# ---------------------------------------------------------------- the consumers agree

def test_stats_and_exports_are_identical(setup, tmp_path):
    _, _, frames, excl, mirr = setup
    outs = {}
    for key, data in (("excl", excl), ("mirr", mirr)):
        path = tmp_path / f"{key}.logb"
        path.write_bytes(data)
        with logb.LogbFile(str(path)) as f:
            tr = read_logb(f)
            stats = trace_stats(tr)
        res = {"stats": stats, "trace": tr}
        for fmt in ("candump", "trc"):
            out = tmp_path / f"{key}.{fmt}"
            assert logb_main(["export", str(path), "--format", fmt, "-o", str(out)], out=io.StringIO()) == 0
            # TRC headers name the file written (excl.trc, mirr.trc): not compared
            res[fmt] = b"".join(x for x in out.read_bytes().splitlines(True) if out.name.encode() not in x)
        sio = io.StringIO()
        assert logb_main(["stats", str(path), "--json"], out=sio) == 0
        res["stats_cli"] = json.loads(sio.getvalue())["buses"]
        outs[key] = res
    a, b = outs["excl"], outs["mirr"]
    assert a["stats"] == b["stats"] and a["stats_cli"] == b["stats_cli"]
    assert a["stats"][0]["frames"] == len(frames)
    assert a["candump"] == b["candump"] and a["trc"] == b["trc"]
    assert a["candump"].count(b"\n") == len(frames)
    ta, tb = a["trace"].buses["can0"], b["trace"].buses["can0"]
    for k in ("t", "id", "flags", "dlc", "data"):
        assert np.array_equal(getattr(ta, k), getattr(tb, k))


def test_mdf4_export_is_identical(setup, tmp_path):
    pytest.importorskip("asammdf")
    from asammdf import MDF

    _, _, frames, excl, mirr = setup
    got = []
    for key, data in (("excl", excl), ("mirr", mirr)):
        out = tmp_path / f"{key}.mf4"
        formats.export_trace(logb.LogbFile(data), out, "mdf4")
        mdf = MDF(str(out))
        try:
            written = {g.channels[1].name: g.channel_group.cycles_nr for g in mdf.groups}
            sig = mdf.get("CAN_DataFrame")
            got.append((written, sig.timestamps.copy(), sig.samples.copy()))
        finally:
            mdf.close()
    assert got[0][0] == got[1][0] and sum(got[0][0].values()) == len(frames)
    assert np.array_equal(got[0][1], got[1][1]) and np.array_equal(got[0][2], got[1][2])


def decoded_equal(a, b):
    assert [d.stream for d in a] == [d.stream for d in b]
    for x, y in zip(a, b):
        assert np.array_equal(x.axis, y.axis), x.stream
        assert x.raw.keys() == y.raw.keys() and x.text.keys() == y.text.keys()
        for k in x.raw:
            nan = x.raw[k].dtype.kind == "f"
            assert np.array_equal(x.raw[k], y.raw[k], equal_nan=nan)
            assert np.array_equal(x.phys[k], y.phys[k], equal_nan=nan)
        for k in x.text:
            assert list(x.text[k]) == list(y.text[k])


def test_decode_gives_every_frame_once(setup, tmp_path):
    compiled, _, frames, excl, mirr = setup
    fx, fm = logb.LogbFile(excl), logb.LogbFile(mirr)
    routed = sum(1 for _, cid, fl, data, _ in frames if not fl & 6 and compiled.route(cid, bool(fl & 1), data))
    # per-message streams (no DBC): an exclusive file adds the raw bus stream's frames
    # that its exact streams could not hold
    px, pm = decode_file(fx), decode_file(fm)
    decoded_equal(px, pm)
    assert sum(len(d) for d in px) == routed
    # with a DBC: over the whole bus
    dx, dm = decode_file(fx, dbc=DBC), decode_file(fm, dbc=DBC)
    decoded_equal(dx, dm)
    assert sum(len(d) for d in dx) == routed
    assert all(np.array_equal(x.rows, y.rows) for x, y in zip(dx, dm))
    decoded_equal(sorted(px, key=lambda d: d.stream), sorted(dx, key=lambda d: d.stream))
    # a window, and the CLI
    w = (1074.0, 1074.4)
    decoded_equal(decode_file(fx, window=w), decode_file(fm, window=w))
    assert 0 < sum(len(d) for d in decode_file(fx, window=w)) < routed
    csv = []
    for key, data in (("excl", excl), ("mirr", mirr)):
        path = tmp_path / f"{key}.logb"
        path.write_bytes(data)
        out = tmp_path / f"{key}.csv"
        assert logb_main(["decode", str(path), "-o", str(out)], out=io.StringIO()) == 0
        csv.append(out.read_text())
    assert csv[0] == csv[1] and csv[0].count("\n") == routed + 1


# (id, flags, data, stream, its `missing`, {signal: masked}): frames shorter than their
# message on the streams that take them with either routing (a branch, a PGN match, the
# CAN FD message) and, with mirror routing, on exact streams too; a longer frame lacks nothing
SHORT_FRAMES = [
    (0x100, 0, b"\x12\x34\x56", "Engine", 5, {"Speed": False, "Gear": True}),
    (0x100, 0, bytes(range(8)), "Engine", 0, {"Speed": False, "Gear": False}),
    (0x123, 0, bytes(range(8)), "Short", 0, {"Level": False}),
    (0x123, 0, b"\x07", "Short", 2, {"Level": True}),
    (0x200, 0, b"\x01\x10", "Muxed[Sel=1]", 6, {"Sel": False, "A": True}),
    (0x200, 0, b"\x01\x10\x20", "Muxed[Sel=1]", 5, {"Sel": False, "A": False}),
    (0x0CFEE0AB, 1, b"\x01\x02\x03", "Dist", 5, {"Odo": True}),
    (0x0CFEE0AB, 1, b"\x01\x02\x03\x04", "Dist", 4, {"Odo": False}),
    (0x300, FD, bytes(range(12)), "Wide", 4, {"W0": False, "W1": False}),
    (0x300, FD, bytes(range(8)), "Wide", 8, {"W0": False, "W1": True}),
    (0x100, layout.FLAG_REMOTE, b"", None, None, None),  # no data: the raw bus stream alone
]


def test_short_frames_record_their_shortfall_and_decode_masked(setup):
    """Missing is missing (SPEC §13.2): a per-message record the device writes for a frame
    shorter than its message says how many bytes it lacked, and decoding masks exactly the
    signals with a byte past the frame's data, alike for both routings."""
    _, cfg, *_ = setup
    frames = [(1000 + 500 * i, cid, fl, data, -1) for i, (cid, fl, data, *_) in enumerate(SHORT_FRAMES)]
    want = {}
    for _, _, data, stream, missing, masked in SHORT_FRAMES:
        if stream is not None:
            want.setdefault(stream, []).append((missing, masked, len(data)))
    exact = {"Engine": 8, "Short": 3}
    decoded = []
    for mirror in (True, False):
        data, w = record(cfg, frames, mirror)
        assert w.errors == 0
        f = logb.LogbFile(data)
        for name, rows in want.items():
            got = f.stream(name).columns().raw[layout.MISSING].tolist()
            # exclusive: an exact stream holds the frames of its length alone, the others are in
            # the raw bus stream
            assert got == [m for m, _, n in rows if mirror or exact.get(name, n) == n], (name, mirror)
        d = {x.stream: x for x in decode_file(f)}
        assert d.keys() == want.keys()
        for name, rows in want.items():
            assert len(d[name]) == len(rows) and d[name].short == sum(1 for m, _, _ in rows if m)
            for sig in rows[0][1]:
                masked = [m[sig] for _, m, _ in rows]
                assert np.ma.getmaskarray(d[name].raw[sig]).tolist() == masked, (name, sig)
                assert np.ma.getmaskarray(d[name].phys[sig]).tolist() == masked, (name, sig)
        decoded.append(sorted(d.values(), key=lambda x: x.stream))
    decoded_equal(*decoded)


def test_a_config_from_before_missing_is_refused(setup):
    """Its message records (t and the payload) have no room for `missing`: compile it again."""
    compiled, *_ = setup
    entries = config_entries(compiled)
    e = entries[1]
    old = ConfigEntry(e.match_id, e.match_mask, e.kind, e.payload_len, e.record_size - 1, e.schema_bytes)
    w = fw.Writer(io.BytesIO(), session=scenario.SESSION, ticks=scenario.Clock(0))
    with pytest.raises(ValueError, match="compile it again"):
        w.load_config(encode_config([entries[0], old] + entries[2:]))


def test_window_of_the_bus(setup):
    _, _, frames, excl, mirr = setup
    full = bus_frames(logb.LogbFile(excl))
    lo, hi = int(full.t[1000]), int(full.t[1500])
    for data in (excl, mirr):
        b = bus_frames(logb.LogbFile(data), "can0", window=(lo * 1e-6, hi * 1e-6))
        assert b.t.tolist() == full.t[1000:1501].tolist() and np.array_equal(b.data, full.data[1000:1501])


# ---------------------------------------------------------------- sessions, old files, the config

def test_concatenated_mirror_and_exclusive_sessions_are_one_bus(setup):
    """`logb cat` of a mirror and an exclusive session: two raw bus streams (their uuids
    differ in one bit, each with one schema: no conflict), one bus."""
    compiled, cfg, frames, excl, mirr = setup
    other, _ = record(cfg, frames[:500], mirror=False, session="7" * 32)
    data = mirr + excl[FILE_HEADER_SIZE:] + other[FILE_HEADER_SIZE:]
    f = logb.LogbFile(data)
    assert f.report.clean, f.report.notes
    (g,) = buses(f)
    assert g.name == "can0" and len(g.streams) == 2 and g.routings == ["exclusive", "mirror"]
    b = bus_frames(f)
    assert b.routing == "mixed" and len(b) == 2 * len(frames) + 500
    assert b.session.tolist() == [0] * len(frames) + [1] * len(frames) + [2] * 500
    one = bus_frames(logb.LogbFile(mirr))
    assert np.array_equal(b.t[:len(frames)], one.t) and np.array_equal(b.t[len(frames):2 * len(frames)], one.t)
    assert np.array_equal(b.data[len(frames):2 * len(frames)], one.data)
    d = decode_file(f)
    assert sum(len(x) for x in d) == sum(len(x) for x in decode_file(logb.LogbFile(mirr))) * 2 + \
        sum(len(x) for x in decode_file(logb.LogbFile(other)))


def test_a_raw_bus_stream_without_the_routing_key_is_mirror():
    """Files and configs from before `logb.can.routing`: the reader takes mirror; the
    device builds the raw bus stream's schema itself (the config's uuid is the mirror one)."""
    uuid = raw_stream_uuid("can0", "old")
    s = layout.raw_bus_schema(uuid, "can0")
    old = s.__class__(**{**s.__dict__, "meta": (("logb.can.layout", "raw"),)})
    assert layout.routing_of(old) == "mirror"
    cfg = encode_config([ConfigEntry(0, 0, 0, 8, old.record_size, old.encode())])
    for mirror in (False, True):
        data, _ = record(cfg, [(100, 0x10, 0, b"\x01", -1), (200, 0x11, 2, b"", 3)], mirror)
        f = logb.LogbFile(data)
        (st,) = [x for x in f.streams.values() if x.name == "can0"]
        routing = "mirror" if mirror else "exclusive"
        assert st.schema_payload == layout.raw_bus_schema(layout.routing_uuid(uuid, routing), "can0",
                                                          routing=routing).encode()
        assert bus_frames(f).id.tolist() == [0x10, 0x11]


@pytest.mark.parametrize("fd", [False, True])
@pytest.mark.parametrize("routing", ["mirror", "exclusive"])
def test_device_raw_schema_equals_the_host_one(fd, routing):
    uuid = raw_stream_uuid("can7", "dev", fd)  # the mirror one
    assert raw_stream_uuid("can7", "dev", fd, routing) == layout.routing_uuid(uuid, routing)
    host = layout.raw_bus_schema(layout.routing_uuid(uuid, routing), "can7", fd=fd, routing=routing).encode()
    assert fwschema.raw_schema(layout.routing_uuid(uuid, routing), "can7", fd, routing) == host
    # switching a config's schema: the value and the uuid's last bit
    other = "exclusive" if routing == "mirror" else "mirror"
    sw, changed = fwconfig.raw_routing(host, other)
    assert changed and sw == layout.raw_bus_schema(layout.routing_uuid(uuid, other), "can7", fd=fd,
                                                   routing=other).encode()
    assert fwconfig.raw_routing(host, routing) == (host, False)


def test_device_exactness_matches_the_host(setup):
    compiled, cfg, *_ = setup
    entries = list(fwconfig.entries(io.BytesIO(cfg), bytearray(16)))  # (16: an LBCF entry header)
    assert [e.exclusive() for e in entries[1:]] == [e.exact for e in compiled.entries]
    assert [e.exact for e in compiled.entries] == [True, True, True, False, False, False, False]


def test_merge_keeps_the_base_order():
    # the base goes back in time (as a bus can): it keeps its order; an added record goes
    # after every base record whose running maximum is at or below it
    order = merge_order(np.zeros(4, np.int32), np.array([10, 30, 20, 40]), np.zeros(3, np.int32),
                        np.array([25, 5, 30]))
    assert order.tolist() == [5, 0, 4, 1, 2, 6, 3]
    # sessions first: an added record of session 1 goes after all of session 0
    order = merge_order(np.array([0, 0, 1]), np.array([10, 20, 5]), np.array([1, 0]), np.array([1, 15]))
    assert order.tolist() == [0, 4, 1, 3, 2]


def test_exclusive_routing_costs_fewer_bytes(setup):
    _, _, frames, excl, mirr = setup
    assert len(excl) < 0.9 * len(mirr)

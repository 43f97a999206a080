"""The firmware writer (firmware/logb) under CPython: its bytes are checked by
the host reader; the same code runs under MicroPython in test_fw_unix.py."""

import hashlib
import io
import struct

import numpy as np
import pytest

import logb
from logb.crc import crc32c as host_crc
from logb.framing import encode_file_header, encode_frame
from logb.scan import Report, check_header, iter_frames

import fwload
import fwtools
import scenario

pytestmark = pytest.mark.single_backend  # the device writer; the host reader's backends are tested elsewhere

fw = fwload.load()
crc = fwload.submodule("crc")
fwschema = fwload.submodule("schema")
sinks = fwload.submodule("sinks")
writer_mod = fwload.submodule("writer")


@pytest.fixture(scope="module")
def trace_cfg():
    return fwtools.compile_config()


def record(cfg, frames, params=None, sink=None, sensor=True):
    """Run scenario.py under CPython; returns the file bytes."""
    params = dict(params or {})
    params.setdefault("sensor", sensor)
    sink = sink if sink is not None else io.BytesIO()
    clock = scenario.Clock(frames[0][0] if frames else 0)
    w, _, sen = scenario.make_writer(sink, cfg, params, clock)
    scenario.feed(w, sen, frames, clock, 0, len(frames))
    scenario.finish(w, clock)
    return sink.getvalue() if hasattr(sink, "getvalue") else None, w


def frames_of(data):
    rep = Report()
    return list(iter_frames(data, rep, check_header(data, rep)))


# ---------------------------------------------------------------- CRC
@pytest.mark.parametrize("data,value", [(b"123456789", 0xE3069283), (bytes(32), 0x8A9136AA),
                                        (b"\xff" * 32, 0x62A8AB43), (bytes(range(32)), 0x46DD794E),
                                        (bytes(range(31, -1, -1)), 0x113FDB5C)])
def test_crc_vectors(data, value):  # check value and RFC 3720 B.4
    assert crc.crc32c(data) == value


def test_crc_every_length_and_offset():
    blob = bytes((i * 73 + 11) & 0xFF for i in range(100))
    st = crc.state()
    out = bytearray(4)
    for off in range(4):
        for n in range(0, 70):
            crc.begin(st)
            crc.update(blob, off, off + n, st)
            crc.store(st, out, 0)
            assert int.from_bytes(out, "little") == host_crc(blob[off:off + n])
    # chained pieces equal one pass
    crc.begin(st)
    for a, b in ((0, 3), (3, 50), (50, 51), (51, 100)):
        crc.update(blob, a, b, st)
    crc.store(st, out, 0)
    assert int.from_bytes(out, "little") == host_crc(blob)


def test_crc_backends_under_cpython():
    assert crc.select("auto") == "pure"  # no cbridge module, no viper here
    with pytest.raises(Exception):
        crc.select("viper")
    assert crc.select("pure") == "pure"


# ---------------------------------------------------------------- frames and schemas
def test_header_and_frames_equal_the_host_encoder():
    sink = io.BytesIO()
    fw.Writer(sink, session="0" * 32)
    assert sink.getvalue() == b""  # nothing handed over before a page fills or a flush
    w = fw.Writer(sink, session="0" * 32)
    w.close()
    data = sink.getvalue()
    assert data[:16] == encode_file_header()
    for fr in frames_of(data):
        payload = data[fr.offset + 8:fr.offset + 8 + fr.payload_len]
        assert data[fr.offset:fr.end] == encode_frame(fr.type, payload, fr.stream_id)


def test_sensor_schema_equals_the_host_schema():
    from logb import AxisKind, AxisMode, Conversion, DataType, Field, Schema

    payload, fmt, size = fwschema.sensor_schema(
        "coolant", [("temp", "h", "degC", -40.0, 0.125), ("rpm", "H", "1/min"), ("p", "f", "bar")], device="dev-1")
    host = Schema(uuid=logb.stream_uuid("dev-1", "coolant"), name="coolant", record_bits=8 * size,
                  axis_kind=AxisKind.time, axis_mode=AxisMode.explicit, axis_exp=-6, axis_unit="s", axis_step=0,
                  axis_scale=1, axis_field=0,
                  fields=(Field("t", 0, 32, DataType.uint, description="ticks since the frame's axis_base"),
                          Field("temp", 32, 16, DataType.sint, unit="degC", conversion=Conversion.linear(-40.0, 0.125)),
                          Field("rpm", 48, 16, DataType.uint, unit="1/min"),
                          Field("p", 64, 32, DataType.float, unit="bar")))
    assert payload == host.encode()
    assert (fmt, size) == ("<hHf", 12)
    host.validate()


@pytest.mark.parametrize("n", [0, 1, 55, 56, 63, 64, 65, 119, 200])
def test_pure_sha1_and_uuid5(n):
    data = bytes((i * 7) & 0xFF for i in range(n))
    assert fwschema._sha1(data) == hashlib.sha1(data).digest()
    assert fwschema.stream_uuid("dev", "s%d" % n) == logb.stream_uuid("dev", "s%d" % n)


# ---------------------------------------------------------------- recording
def expected_routes(compiled, frames, mirror=False):
    """Per stream name, the (ticks unwrapped, payload) the device must store
    (docs/SPEC.md §13.4). mirror: every frame in the raw bus stream, matching
    data frames in their per-message stream too. exclusive (the default): a
    classic data frame of its exact message's length goes to that stream alone;
    other frames matching an exact message go to the raw bus stream alone; a
    frame matched by PGN or a branch goes to both; the rest to the raw bus stream."""
    out = {}
    for (t, cid, fl, data), tu in zip(frames, unwrapped(frames)):
        e = None if fl & 6 else compiled.route(cid, bool(fl & 1), data)
        alone = e is not None and e.exact and not fl & 0xFE and len(data) == e.payload_len
        if e is not None and (mirror or not e.exact or alone):
            out.setdefault(e.name, []).append((tu, bytes(data[:e.payload_len]).ljust(e.payload_len, b"\0")))
        if mirror or not alone:
            out.setdefault("can0", []).append((tu, cid, fl, bytes(data)))
    return out


def unwrapped(frames):
    """The frames' ticks unwrapped (ticks_diff semantics: steps of less than half a period either way)."""
    unwrap, cur, last = [], None, None
    for t, _, _, _ in frames:
        cur = t if cur is None else cur + ((t - last + (1 << 29)) & ((1 << 30) - 1)) - (1 << 29)
        last = t
        unwrap.append(cur)
    return unwrap


def assert_whole_bus(f, frames, width=8):
    """logb.can.bus.bus_frames gives back every frame, whatever the routing."""
    from logb.can.bus import bus_frames

    b = bus_frames(f)
    assert b.t.tolist() == unwrapped(frames)
    assert b.id.tolist() == [cid for _, cid, _, _ in frames]
    assert b.flags.tolist() == [fl for _, _, fl, _ in frames]
    assert b.dlc.tolist() == [len(d) for _, _, _, d in frames]
    assert [bytes(x) for x in b.data] == [d.ljust(width, b"\0") for _, _, _, d in frames]
    return b


@pytest.mark.parametrize("mirror", [False, True])
def test_recording_decodes_to_the_routed_frames(trace_cfg, mirror):
    cfg, compiled = trace_cfg
    frames = fwtools.synth_frames(compiled, 6000)
    data, w = record(cfg, frames, {"segment_bytes": 40000, "mirror": mirror})
    f = logb.LogbFile(data)
    assert f.report.clean, f.report.skipped
    assert len(f.segments) >= 3 and len(f.sessions) == 1 and f.sessions[0].ended
    want = expected_routes(compiled, frames, mirror)
    for name, rows in want.items():
        cols = f.stream(name).columns()
        assert cols.axis.tolist() == [r[0] for r in rows], name
        if name == "can0":
            assert cols.raw["id"].tolist() == [r[1] for r in rows]
            assert cols.raw["flags"].tolist() == [r[2] for r in rows]
            assert cols.raw["dlc"].tolist() == [len(r[3]) for r in rows]
            assert [bytes(x) for x in cols.raw["data"]] == [r[3].ljust(8, b"\0") for r in rows]
        else:
            assert [bytes(x) for x in cols.raw["data"]] == [r[1] for r in rows]
    got = {s.name for s in f.streams.values() if s.records}
    assert got == set(want) | {"coolant"}
    assert f.stream("coolant").columns().raw["temp"].size == len(frames) // 64
    b = assert_whole_bus(f, frames)
    assert b.routing == ("mirror" if mirror else "exclusive")
    assert (b.from_messages == 0) == mirror
    # the axis crossed the 2**30 wrap of the ticks counter
    assert f.stream("can0").columns().axis.max() > 1 << 30


def test_session_facts_loss_counters_anchor_and_end(trace_cfg):
    cfg, compiled = trace_cfg
    frames = fwtools.synth_frames(compiled, 3000)
    sink = io.BytesIO()
    clock = scenario.Clock(frames[0][0])
    w, streams, sen = scenario.make_writer(sink, cfg, {"segment_bytes": 30000}, clock)
    w.lost(controller=3, buffer=2)
    scenario.feed(w, sen, frames, clock, 0, len(frames))
    scenario.finish(w, clock)
    data = sink.getvalue()
    f = logb.LogbFile(data)
    s = f.sessions[0]
    assert s.time_base == "monotonic" and s.id == scenario.SESSION
    assert s.meta["logb.device"] == "scenario" and s.meta["logb.firmware"].startswith("logb-micropython")
    assert s.meta["logb.durability"].startswith("frame;")
    assert "unwrapped to 64 bit" in s.meta["logb.clock_source"]
    assert len(s.anchors) == 1 and s.anchors[0].source == "gps"
    # every segment restates schemas, session META and a loss META per stream, before its DATA
    metas = [fr for fr in frames_of(data) if fr.type == 0x11 and fr.stream_id == 1]
    assert len(metas) == len(f.segments) + 1  # each segment boundary, and close
    last = metas[-1]
    payload = data[last.offset + 8:last.offset + 8 + last.payload_len]
    assert payload == (struct.pack("<II", 3, 20) + b"logb.lost.controller\x01\x00\x00\x003" + struct.pack("<I", 16)
                       + b"logb.lost.buffer\x01\x00\x00\x002" + struct.pack("<I", 17) + b"logb.lost.invalid"
                       + b"\x01\x00\x00\x000")
    assert f.stream("can0").meta == {"logb.lost.controller": "3", "logb.lost.buffer": "2", "logb.lost.invalid": "0"}
    ends = [fr for fr in frames_of(data) if fr.type == 0x40]
    assert len(ends) == 1
    index_back, session_bytes = struct.unpack_from("<QQ", data, ends[0].offset + 8)
    assert index_back == 0 and session_bytes == ends[0].offset - 16


def test_every_cut_is_a_valid_file():
    """Rule 2 for the device writer's output: every prefix reads without an
    exception and returns exactly the records of its complete frames."""
    cfg = fwtools.raw_only_config()
    frames = fwtools.read_candump(fwtools.TRACES / "lancer-candump.log", 60)
    data, _ = record(cfg, frames, {"stream_bytes": 128, "raw_bytes": 160, "page": 256, "segment_bytes": 1200},
                     sensor=False)
    ends = [16] + [fr.end for fr in frames_of(data)]
    full = logb.LogbFile(data).stream("can0").columns()
    counts = {}
    for fr in frames_of(data):
        if fr.type == 0x20:
            counts[fr.end] = int.from_bytes(data[fr.offset + 16:fr.offset + 20], "little")
    for n in range(len(data) + 1):
        f = logb.LogbFile(data[:n])
        last = max(e for e in ends if e <= n) if n >= 16 else 0
        k = sum(c for e, c in counts.items() if e <= n)
        got = f.stream("can0").columns().axis if k else np.array([])
        assert len(got) == k and (got == full.axis[:k]).all()
        if n >= 16:
            assert f.report.truncated == (last < n)
            expected = [] if last == n else [(last, n, "truncated")]
            assert [(r.start, r.end, r.cause) for r in f.report.skipped] == expected


class Recorder:
    """A sink recording every write and flush (write(buf) only: no offsets)."""

    def __init__(self):
        self.data = bytearray()
        self.writes = []
        self.flushes = []

    def write(self, b):
        self.writes.append((len(self.data), len(b)))
        self.data += bytes(b)

    def flush(self):
        self.flushes.append(len(self.data))


@pytest.mark.parametrize("durability", ["frame", "segment", "close"])
def test_durability_points_and_page_writes(trace_cfg, durability):
    cfg, compiled = trace_cfg
    frames = fwtools.synth_frames(compiled, 3000)
    rec = Recorder()
    _, w = record(cfg, frames, {"durability": durability, "segment_bytes": 30000}, sink=rec)
    data = bytes(rec.data)
    fl = frames_of(data)
    ends = {fr.end for fr in fl}
    page = 512
    # writes never cross a page boundary of the file; all but flushes are whole pages
    for off, n in rec.writes:
        assert off // page == (off + n - 1) // page
    assert all(n == page for off, n in rec.writes[:-1] if (off + n) not in rec.flushes) or durability != "close"
    # every flush point is a frame boundary
    assert set(rec.flushes) <= ends
    data_ends = [fr.end for fr in fl if fr.type == 0x20]
    syncs = [fr.offset for fr in fl if fr.type == 0x01]
    if durability == "frame":
        assert set(data_ends) <= set(rec.flushes)
    elif durability == "segment":
        assert set(syncs[1:]) <= set(rec.flushes) and len(rec.flushes) == len(syncs)
    else:
        assert rec.flushes == [len(data)]
    assert rec.flushes[-1] == len(data)
    assert logb.LogbFile(data).report.clean


def test_block_sink_holds_the_same_bytes(trace_cfg):
    cfg, compiled = trace_cfg
    frames = fwtools.synth_frames(compiled, 2500)
    ref, _ = record(cfg, frames)
    dev = sinks.RamBlockDevice(4096)
    clock = scenario.Clock(frames[0][0])
    bs = sinks.BlockSink(dev, first=3)
    w, _, sen = scenario.make_writer(bs, cfg, {}, clock)
    scenario.feed(w, sen, frames, clock, 0, len(frames))
    scenario.finish(w, clock)
    image = bytes(dev.data[3 * 512:])
    assert image[:len(ref)] == ref and not any(image[len(ref):])


def test_sink_errors_are_counted_not_raised(trace_cfg):
    cfg, compiled = trace_cfg

    class Flaky(Recorder):
        def write(self, b):
            if len(self.writes) % 7 == 3:
                self.writes.append((-1, 0))
                raise OSError(5, "EIO")
            super().write(b)

    frames = fwtools.synth_frames(compiled, 3000)
    _, w = record(cfg, frames, sink=Flaky())
    assert w.errors > 0


def test_fd_frames_and_a_classic_raw_bus_stream(trace_cfg):
    cfg, compiled = trace_cfg
    sink = io.BytesIO()
    clock = scenario.Clock(100)
    w, _, _ = scenario.make_writer(sink, cfg, {"sensor": False}, clock)
    w.append_can(100, 0x7FF, bytes(64), 8)  # CAN FD into a classic raw bus stream: counted as lost
    w.append_can(110, 0x7FF, bytes(3), 0)
    w.close()
    f = logb.LogbFile(sink.getvalue())
    assert f.stream("can0").records == 1 and w.streams[0].lost_buffer == 1
    # an FD config stores it with the DLC code
    cfg_fd = fwtools.raw_only_config(fd=True)
    sink = io.BytesIO()
    w = fw.Writer(sink, session="1" * 32, ticks=lambda: 0)
    w.load_config(cfg_fd)
    w.append_can(5, 0x123, bytes(range(48)), 8 | 16)
    w.append_can(6, 0x124, b"", 2, dlc=4)  # remote frame: dlc is the requested length
    w.close()
    cols = logb.LogbFile(sink.getvalue()).stream("can0").columns()
    assert cols.raw["dlc"].tolist() == [14, 4] and cols.raw["flags"].tolist() == [24, 2]
    assert bytes(cols.raw["data"][0]) == bytes(range(48)) + bytes(16)


def test_multiplexed_and_j1939_routing_matches_the_host():
    for dbc in ("cantools-multiplex_2.dbc", "cantools-j1939.dbc"):
        cfg, compiled = fwtools.compile_config(fwtools.SHARED / "data" / "dbc" / dbc)
        rnd = __import__("random").Random(5)
        frames = []
        t = 1000
        ids = [(e.frame_id, e.extended, e.payload_len) for e in compiled.entries]
        for i in range(3000):
            t += 100
            cid, ext, ln = rnd.choice(ids)
            if ext and rnd.random() < 0.5:
                cid ^= rnd.choice((0x1C000000, 0xFF, 0x3F00))  # other priority / source / destination
            data = bytes(rnd.choice((0, 1, 2, 3, rnd.randrange(256))) for _ in range(ln))
            frames.append((t, cid, 1 if ext else 0, data))
        data, _ = record(cfg, frames, sensor=False)
        f = logb.LogbFile(data)
        assert f.report.clean
        want = expected_routes(compiled, frames)
        for name, rows in want.items():
            assert f.stream(name).columns().axis.tolist() == [r[0] for r in rows], (dbc, name)
        # PGN-matched (J1939) and branch frames are in the raw bus stream too: nothing lost
        routed = {e.name for e in compiled.entries if not e.exact}
        assert routed and all(len(want.get(n, [])) <= len(want["can0"]) for n in routed)
        assert_whole_bus(f, frames)


def test_time_rules_gaps_backwards_and_flush_interval(trace_cfg):
    cfg, compiled = trace_cfg
    mid = compiled.entries[0]
    frames = []
    t = (1 << 30) - 500
    for step in (100, 100, 300_000, 100, -50, -200, 100, 2_000_000, 100):  # gaps, steps back, a wrap
        t = (t + step) & ((1 << 30) - 1)
        frames.append((t, mid.frame_id, 0, bytes(mid.payload_len)))
    data, _ = record(cfg, frames, {"flush_ms": 200}, sensor=False)
    f = logb.LogbFile(data)
    cols = f.stream(mid.name).columns()
    assert cols.axis.tolist() == [r[0] for r in expected_routes(compiled, frames)[mid.name]]
    # a new DATA frame after a gap of flush_ms or more, and for a record before its frame's axis_base
    counts = [int.from_bytes(data[fr.offset + 16:fr.offset + 20], "little")
              for fr in frames_of(data) if fr.type == 0x20 and fr.stream_id == 2]
    assert counts == [2, 3, 2, 2]


def test_deflate_frames_decode_like_codec_none():
    cfg = fwtools.raw_only_config()
    frames = fwtools.read_candump(fwtools.TRACES / "lancer-candump.log", 3000)
    plain, _ = record(cfg, frames, sensor=False)
    packed, _ = record(cfg, frames, {"codec": "deflate"}, sensor=False)
    a = logb.LogbFile(plain).stream("can0").columns()
    b = logb.LogbFile(packed).stream("can0").columns()
    assert len(packed) < 0.8 * len(plain)
    assert (a.axis == b.axis).all() and all((a.raw[k] == b.raw[k]).all() for k in a.raw)
    codecs = {p[0] for p in iter_data_codecs(packed)}
    assert 3 in codecs


def iter_data_codecs(data):
    for fr in frames_of(data):
        if fr.type == 0x20:
            yield (data[fr.offset + 8 + 16],)


def test_writer_never_seeks_and_ram_does_not_grow(trace_cfg):
    cfg, compiled = trace_cfg

    class NoSeek:
        def __init__(self):
            self.n = 0

        def write(self, b):
            self.n += len(b)

    clock = scenario.Clock(0)
    w, _, sen = scenario.make_writer(NoSeek(), cfg, {"segment_bytes": 20000}, clock)
    frames = fwtools.synth_frames(compiled, 4000)
    scenario.feed(w, sen, frames, clock, 0, 2000)
    before = {k: (len(v) if hasattr(v, "__len__") else v) for k, v in vars(w).items() if not k.startswith("__")}
    scenario.feed(w, sen, frames, clock, 2000, 4000)
    after = {k: (len(v) if hasattr(v, "__len__") else v) for k, v in vars(w).items() if not k.startswith("__")}
    for k in ("_streams", "_exact", "_branch", "_masked", "_out", "_ctl"):
        assert before[k] == after[k]


def test_cbridge_hook_is_used_when_present(trace_cfg, monkeypatch):
    """A firmware with the cbridge C module (cbridge/micropython: `logbc`) exposes
    logbc.crc32c_update(buf, start, end, st); crc.select picks it first. Stand-in
    here: a module doing the same through the host's CRC (the C glue itself is
    checked against this contract in tests/test_cbridge_micropython.py)."""
    import sys
    import types

    calls = []

    def crc32c_update(buf, start, end, st):
        raw = host_crc(bytes(buf[start:end]), (st[0] | (st[1] << 24)) ^ 0xFFFFFFFF) ^ 0xFFFFFFFF
        st[0], st[1] = raw & 0xFFFFFF, raw >> 24
        calls.append(end - start)

    monkeypatch.setitem(sys.modules, "logbc", types.SimpleNamespace(crc32c_update=crc32c_update))
    try:
        assert crc.select("auto") == "c"
        cfg, compiled = trace_cfg
        frames = fwtools.synth_frames(compiled, 1500)
        with_c, _ = record(cfg, frames)
    finally:
        monkeypatch.delitem(sys.modules, "logbc")
        assert crc.select("auto") == "pure"
    assert calls and with_c == record(cfg, frames)[0]


# ---------------------------------------------------------------- inputs outside the contract
def test_socketcan_ids_normalised_and_unrecordable_frames_counted():
    """docs/SPEC.md §13.1: bit 31/30/29 of a SocketCAN id become the extended,
    remote and error flags; what still does not fit (an id of 2**32, a wide id on
    a standard frame, DLC 16, a DLC that disagrees with the data, flag bit 7) is
    never written but counted in the raw bus stream's logb.lost.invalid."""
    sink = io.BytesIO()
    w = fw.Writer(sink, session="2" * 32, ticks=lambda: 0)
    w.load_config(fwtools.raw_only_config())
    good = [  # (t, id as given, data, flags, dlc) -> stored (id, flags)
        ((10, (1 << 31) | 0x18FEF100, bytes(8), 0, -1), (0x18FEF100, 1)),  # CAN_EFF_FLAG
        ((11, (1 << 31) | (1 << 30) | 0x1234, b"", 0, 3), (0x1234, 3)),  # CAN_EFF_FLAG | CAN_RTR_FLAG
        ((12, (1 << 29) | 0x40, bytes(8), 0, -1), (0x40, 4)),  # CAN_ERR_FLAG: an error frame
        ((13, (1 << 30) | 0x123, b"", 0, 2), (0x123, 2)),  # CAN_RTR_FLAG on a standard id
        ((14, 0x321, bytes(8), 0, 9), (0x321, 0)),  # classic DLC 9: 8 bytes
        ((15, 0x1FFFFFFF, bytes(2), 1, -1), (0x1FFFFFFF, 1)),
    ]
    bad = [(20, 1 << 32, bytes(8), 1, -1), (21, -5, b"", 0, -1), (22, 0x800, bytes(8), 0, -1),
           (23, (1 << 30) | 0x800, b"", 0, 0), (24, 0x100, bytes(8), 0, 16), (25, 0x100, bytes(8), 0, 5),
           (26, 0x100, bytes(12), 8, 8), (27, 0x100, bytes(12), 0, -1), (28, 0x100, b"", 0x80, -1),
           (29, 0x100, bytes(3), 0, -2), (30, 0x100, bytes(65), 8, -1),
           (31, 0x123, b"\x01", 256, -1)]  # flags past the byte (MicroPython would truncate, CPython raise)
    for (t, cid, data, fl, dlc), _ in good:
        w.append_can(t, cid, data, fl, dlc)
    for t, cid, data, fl, dlc in bad:
        w.append_can(t, cid, data, fl, dlc)
    w.close()
    assert w.streams[0].lost_invalid == len(bad) and w.streams[0].lost_buffer == 0
    assert w.stats()["streams"][0][5] == len(bad)
    f = logb.LogbFile(sink.getvalue())
    assert f.report.clean
    assert f.stream("can0").meta["logb.lost.invalid"] == str(len(bad))
    cols = f.stream("can0").columns()
    assert list(zip(cols.raw["id"].tolist(), cols.raw["flags"].tolist())) == [want for _, want in good]
    assert cols.raw["dlc"].tolist() == [8, 3, 8, 2, 9, 2]
    # the padding bits 61..63 and flag bit 7 stay zero in every stored record
    data = sink.getvalue()
    for fr in frames_of(data):
        if fr.type == 0x20 and fr.stream_id == 1:
            body = data[fr.offset + 36:fr.offset + 36 + 18 * 6]
            assert all(body[r * 18 + 7] & 0xE0 == 0 and body[r * 18 + 8] & 0x80 == 0 for r in range(6))


def test_anchor_text_equals_the_meta_encoder():
    """anchor_utc writes its META in place from small ints; its bytes are the
    generic meta_payload's for the same values, across wraps of the ticks
    counter and wall times far past 2**62 ns."""
    import random

    rnd = random.Random(5)
    cases = [(0, 0, 0, 0, 0, None), (3, 12345, 1, 7, 86399, 0)]
    for _ in range(40):
        cases.append((rnd.randrange(1 << 30), rnd.randrange(20000), rnd.randrange(1 << 30), rnd.randrange(106000),
                      rnd.randrange(86400), rnd.choice([None, 0, rnd.randrange(1 << 40)])))
    for wraps, _, t, days, second, unc in cases:
        ns = rnd.randrange(10 ** 9)
        w = fw.Writer(io.BytesIO(), session="3" * 32, ticks=lambda: t, header=False)
        w._rotate()
        w._wraps, w._last = wraps, t
        start = w.position
        w.anchor_utc(days, second, ns, t=t, source="gps", uncertainty_ns=unc)
        w.flush()
        frame = w._sink.getvalue()[start:]
        pairs = [("logb.anchor.axis_ns", (wraps * (1 << 30) + t) * 1000),
                 ("logb.anchor.wall_ns", (days * 86400 + second) * 10 ** 9 + ns), ("logb.anchor.source", "gps")]
        if unc is not None:
            pairs.append(("logb.anchor.uncertainty_ns", unc))
        assert frame == bytes(writer_mod.frame_bytes(0x11, 0, writer_mod.meta_payload(pairs)))


def test_anchor_forms_agree_and_date_the_session():
    wall = 1701998281317190123  # 2023-12-08 01:18:01.317190123 UTC
    days = fw.civil_days(2023, 12, 8)
    assert days == 19699 and (days * 86400 + 4681) * 10 ** 9 + 317190123 == wall
    out = []
    for form in ("int", "parts"):
        sink = io.BytesIO()
        w = fw.Writer(sink, session="4" * 32, ticks=lambda: 5000)
        s = w.add_sensor("v", [("x", "H", "")])
        s.append(5000, 7)
        if form == "int":
            w.anchor(wall, source="gps", uncertainty_ns=100)
        else:
            w.anchor_utc(days, 4681, 317190123, source="gps", uncertainty_ns=100)
        w.close()
        out.append(sink.getvalue())
    assert out[0] == out[1]
    f = logb.LogbFile(out[0])
    assert f.sessions[0].basis == "anchored" and f.stream("v").columns().wall(0).ns == wall
    for y, m, d in ((1970, 1, 1), (2000, 2, 29), (2024, 3, 1), (2100, 12, 31)):
        import datetime

        assert fw.civil_days(y, m, d) == (datetime.date(y, m, d) - datetime.date(1970, 1, 1)).days
    w = fw.Writer(io.BytesIO(), session="4" * 32)
    for bad in ((-1, 0, 0), (0, 86400, 0), (0, 0, 10 ** 9)):
        with pytest.raises(ValueError):
            w.anchor_utc(*bad)
    with pytest.raises(ValueError):
        w.anchor(-1)


def test_losses_are_stated_with_the_next_frame_not_only_at_the_next_segment(trace_cfg):
    """A file cut by a power loss (no close, mid-segment) states every loss counted before the
    last frame it holds of that stream (SPEC §4.5); at most one loss META per sealed frame."""
    cfg, compiled = trace_cfg
    frames = fwtools.synth_frames(compiled, 3000)
    sink = io.BytesIO()
    clock = scenario.Clock(frames[0][0])
    w, _, sen = scenario.make_writer(sink, cfg, {"segment_bytes": 1 << 20}, clock)
    scenario.feed(w, sen, frames, clock, 0, 1000)
    w.lost(controller=7)
    for i in range(1000, 2000):  # an overflow flag on every frame: one META per sealed frame, not per count
        scenario.feed(w, sen, frames, clock, i, i + 1)
        w.lost(buffer=1)
    w.flush()
    f = logb.LogbFile(sink.getvalue())  # the card as the power cut left it: no close, one segment
    assert len(f.segments) == 1 and not f.sessions[0].ended
    assert f.stream("can0").lost == {"logb.lost.controller": 7, "logb.lost.buffer": 1000, "logb.lost.invalid": 0}
    fr = frames_of(sink.getvalue())
    metas = [x for x in fr if x.type == 0x11 and x.stream_id == 1]  # can0 is stream_id 1
    datas = [x for x in fr if x.type == 0x20 and x.stream_id == 1]
    assert 1 < len(metas) <= len(datas) + 1


def test_loss_counters_past_2_30_are_exact():
    """Counters are kept as 24-bit halves (no int >= 2**30 on a 32-bit port);
    the META text and the totals stay exact past 2**30 and 2**48."""
    sink = io.BytesIO()
    w = fw.Writer(sink, session="5" * 32, ticks=lambda: 0)
    w.load_config(fwtools.raw_only_config())
    step = (1 << 29) - 3
    for _ in range(5):
        w.lost(controller=step, buffer=1)
    w.streams[0].lost(buffer=(1 << 50) + 9)  # one huge call: correct, if not allocation-free
    with pytest.raises(ValueError):
        w.lost(controller=-1)
    w.close()
    s = w.streams[0]
    assert s.lost_controller == 5 * step and s.lost_buffer == (1 << 50) + 14
    meta = logb.LogbFile(sink.getvalue()).stream("can0").meta
    assert meta["logb.lost.controller"] == str(5 * step) and meta["logb.lost.buffer"] == str((1 << 50) + 14)


def test_stream_append_packs_up_to_8_values():
    sink = io.BytesIO()
    w = fw.Writer(sink, session="6" * 32, ticks=lambda: 0)
    s1 = w.add_sensor("one", [("a", "h", "")])
    s8 = w.add_sensor("eight", [(c, "B", "") for c in "abcdefgh"])
    s9 = w.add_sensor("nine", [(c, "B", "") for c in "abcdefghi"])
    s1.append(1, -5)
    s8.append(2, 1, 2, 3, 4, 5, 6, 7, 8)
    with pytest.raises(ValueError):
        s9.append(3, 1, 2, 3, 4, 5, 6, 7, 8)
    raw = w.load_config(fwtools.raw_only_config())[0]
    with pytest.raises(ValueError):  # a CAN stream's records come from append_can
        raw.append(4, 1)
    w.close()
    f = logb.LogbFile(sink.getvalue())
    assert f.stream("one").columns().raw["a"].tolist() == [-5]
    assert [f.stream("eight").columns().raw[c].tolist() for c in "abcdefgh"] == [[i] for i in range(1, 9)]
    assert writer_mod._nvalues("<3h4sBx") == 5


class OneArgSink:
    def __init__(self):
        self.data = bytearray()
        self.sizes = []

    def write(self, b):
        self.data += bytes(b)
        self.sizes.append(len(b))
        return len(b)


def test_pieces_writes_every_range_in_power_of_two_pieces():
    """_port.Pieces (what a one-argument sink gets on MicroPython): every
    range arrives whole, in order, in at most log2(page) writes."""
    port = fwload.submodule("_port")
    src = bytes(range(256)) * 8
    for page in (64, 512):
        sink = OneArgSink()
        pieces = port.Pieces(sink.write, page)
        want = bytearray()
        for off, n in ((0, 1), (5, page - 1), (3, 37), (0, page // 2), (100, 1), (9, page), (0, len(src))):
            k0 = len(sink.sizes)
            assert pieces(src, off, n) == n
            want += src[off:off + n]
            assert len(sink.sizes) - k0 <= (page.bit_length() if n < page else len(src))
        assert sink.data == want and all(s & (s - 1) == 0 for s in sink.sizes[:-1])


def test_one_argument_sink_gets_the_same_bytes(trace_cfg):
    cfg, compiled = trace_cfg
    frames = fwtools.synth_frames(compiled, 2000)
    want, _ = record(cfg, frames)
    sink = OneArgSink()
    record(cfg, frames, sink=sink)
    assert bytes(sink.data) == want

"""The serial link's pieces without a serial port: the device side
(firmware/logb/link.py, under CPython) driven through an in-memory port by
the host's parser, and the host-side pieces (CRC combine, message parser,
frame checker, live decoder, port detection). docs/LINK.md."""

import io
import os
import pathlib
import random
import struct
import sys

import pytest

import logb
from logb.crc import crc32c
from logb.serial import protocol as P
from logb.serial.live import LiveDecoder
from logb.serial.ports import find_port
from logb.errors import UnsupportedVersionError
from logb.framing import FILE_HEADER_SIZE
from logb.scan import FrameRef, FrameScanner, Skip, sync_frames
from logb.serial import pull as pull_mod
from logb.serial.pull import FrameCheck
from logb.tables import FrameType

sys.path.insert(0, str(pathlib.Path(__file__).parent / "firmware"))
import fwload  # noqa: E402
import fwtools  # noqa: E402

link = fwload.submodule("link")
fw = fwload.load()


# ---------------------------------------------------------------- an in-memory cable
class Port:
    """The device's end: what the host sent waits in `inbox`; what the device
    writes goes to `outbox`, at most `room` bytes per write call."""

    def __init__(self, room=1 << 30):
        self.inbox = bytearray()
        self.outbox = bytearray()
        self.room = room
        self.writes = 0

    def readinto(self, buf, off, n):
        k = min(n, len(self.inbox))
        buf[off:off + k] = self.inbox[:k]
        del self.inbox[:k]
        return k

    def write(self, buf, off, n):
        k = min(n, self.room)
        self.outbox += bytes(memoryview(buf)[off:off + k])
        self.writes += 1
        return k


class CountingStorage(link.VfsStorage):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.reads = 0

    def readinto(self, h, pos, buf, off, n):
        self.reads += 1
        return super().readinto(h, pos, buf, off, n)


class Host:
    def __init__(self, dev, port):
        self.dev, self.port, self.parser, self.tag = dev, port, P.Parser(), 0

    def send(self, typ, payload=b"", raw=None):
        self.tag = self.tag % 255 + 1
        self.port.inbox += raw if raw is not None else P.encode(typ, self.tag, payload)
        return self.tag

    def messages(self, polls=200000, until=None):
        out = []
        for _ in range(polls):
            self.dev.poll()
            if self.port.outbox:
                self.parser.feed(bytes(self.port.outbox))
                self.port.outbox.clear()
                while (m := self.parser.next()) is not None:
                    out.append(m)
            if until is not None and until(out):
                return out
        return out

    def one(self, typ, payload=b"", want=None):
        tag = self.send(typ, payload)
        got = self.messages(until=lambda ms: any(m.tag == tag and m.type != P.R_DATA for m in ms))
        m = [m for m in got if m.tag == tag and m.type != P.R_DATA][-1]
        if want is not None:
            assert m.type == want, (hex(m.type), m.payload)
        return m

    def read(self, name, off=0, n=1 << 40, typ=P.T_READ):
        tag = self.send(typ, struct.pack("<QQ", off, n) + P.pack_str(name))
        got = self.messages(until=lambda ms: any(m.tag == tag and m.type in (P.R_END, P.R_ERR) for m in ms))
        data, run = bytearray(), 0
        for m in got:
            if m.tag == tag and m.type == P.R_DATA:
                run = crc32c(m.payload, run)
                assert run == m.crc  # the running CRC of the range
                data += m.payload
        end = [m for m in got if m.tag == tag and m.type in (P.R_END, P.R_ERR)][-1]
        return bytes(data), end, got


def err_code(m):
    assert m.type == P.R_ERR
    return struct.unpack_from("<H", m.payload)[0]


@pytest.fixture
def files(tmp_path):
    rnd = random.Random(5)
    d = tmp_path / "sd"
    d.mkdir()
    (d / "a.logb").write_bytes(bytes(rnd.randrange(256) for _ in range(10000)))
    (d / "b.logb").write_bytes(b"")
    (d / "notes.txt").write_bytes(b"not a recording")
    return d


def connect(d, chunk=1024, room=1 << 30, recorder=None, **kw):
    port = Port(room)
    storage = CountingStorage(str(d), recorder)
    dev = link.Link(port, storage, device="dev-1", firmware="fw-1", chunk=chunk, **kw)
    host = Host(dev, port)
    return host, dev, port, storage


@pytest.fixture
def clock(monkeypatch):
    """The device's microsecond ticks, moved only by the test: its timeouts
    (a stale partial request, idle_s, tick_ms) neither need a sleep nor fire
    because the machine was slow. Returns advance(seconds)."""
    now = [1 << 29]
    monkeypatch.setattr(link, "ticks_us", lambda: now[0])

    def advance(seconds):
        now[0] = (now[0] + int(seconds * 1e6)) & ((1 << 30) - 1)

    return advance


def enter(host):
    host.port.inbox += b"console text " + P.ESCAPE
    got = host.messages(until=lambda ms: any(m.type == P.R_HELLO for m in ms))
    hello = [m for m in got if m.type == P.R_HELLO][0]
    assert hello.tag == 0
    return hello


# ---------------------------------------------------------------- device
def test_console_until_escape_then_hello(files):
    host, dev, port, _ = connect(files)
    host.send(P.T_LIST, struct.pack("<I", 0))  # a request before the escape is console input: ignored
    assert host.messages(polls=50) == [] and not dev.active
    hello = enter(host)
    version, flags, chunk, boot = struct.unpack_from("<HHII", hello.payload)
    dev_name, pos = P.unpack_str(hello.payload, 12)
    fw_name, pos = P.unpack_str(hello.payload, pos)
    assert (version, flags, chunk, dev_name, fw_name) == (1, 0, 1024, "dev-1", "fw-1") and dev.active


def test_list_stat_and_names(files, tmp_path):
    for i in range(40):  # enough long names to need several LIST pages at 512-byte messages
        (files / (f"{i:03d}-" + "x" * 60 + ".logb")).write_bytes(b"z" * i)
    host, *_ = connect(files, chunk=512)
    enter(host)
    entries, start = [], 0
    while True:
        m = host.one(P.T_LIST, struct.pack("<I", start), P.R_LIST)
        total, _s, count = struct.unpack_from("<IIH", m.payload)
        pos = 10
        for _ in range(count):
            size, flags = struct.unpack_from("<QB", m.payload, pos)
            name, pos = P.unpack_str(m.payload, pos + 9)
            entries.append((name, size))
        start += count
        assert count and len(m.payload) <= 512
        if start >= total:
            break
    assert start > 40 and dict(entries)["a.logb"] == 10000 and "notes.txt" not in dict(entries)
    assert struct.unpack_from("<QB", host.one(P.T_STAT, P.pack_str("a.logb"), P.R_STAT).payload) == (10000, 0)
    assert err_code(host.one(P.T_STAT, P.pack_str("nope.logb"))) == P.E_NOENT
    for bad in ("../a.logb", "x/a.logb", "", ".."):
        assert err_code(host.one(P.T_STAT, P.pack_str(bad))) == P.E_REQUEST


def test_read_streams_bounded_messages_with_a_running_crc(files):
    host, dev, port, storage = connect(files, chunk=1024)
    enter(host)
    want = (files / "a.logb").read_bytes()
    tag = host.send(P.T_READ, struct.pack("<QQ", 100, 5000) + P.pack_str("a.logb"))
    msgs, per_poll = [], []
    for _ in range(1000):
        r0, n0 = storage.reads, len(port.outbox)
        dev.poll()
        per_poll.append((storage.reads - r0, len(port.outbox) - n0))
        host.parser.feed(bytes(port.outbox))
        port.outbox.clear()
        while (m := host.parser.next()) is not None:
            msgs.append(m)
        if any(m.type == P.R_END for m in msgs):
            break
    # bounded work: at most one storage read and one message per poll
    assert max(r for r, _ in per_poll) <= 1 and max(n for _, n in per_poll) <= 1024 + 16
    data = b"".join(m.payload for m in msgs if m.type == P.R_DATA)
    assert data == want[100:5100] and all(len(m.payload) <= 1024 for m in msgs)
    off, count, crc, status = struct.unpack_from("<QQIB", msgs[-1].payload)
    assert (off, count, crc, status, msgs[-1].tag) == (100, 5000, crc32c(want[100:5100]), P.S_COMPLETE, tag)
    data, end, _ = host.read("a.logb", 9000, 5000)  # past the end: what there is, status short
    assert data == want[9000:] and struct.unpack_from("<QQIB", end.payload)[3] == P.S_SHORT
    data, end, _ = host.read("b.logb")
    assert data == b"" and struct.unpack_from("<QQIB", end.payload)[1:] == (0, 0, P.S_SHORT)


def test_partial_port_writes_and_pipelined_requests(files):
    host, dev, port, _ = connect(files, chunk=512, room=7)  # the port takes 7 bytes per write
    enter(host)
    want = (files / "a.logb").read_bytes()
    t1 = host.send(P.T_READ, struct.pack("<QQ", 0, 3000) + P.pack_str("a.logb"))
    t2 = host.send(P.T_HASH, struct.pack("<QQ", 3000, 7000) + P.pack_str("a.logb"))
    got = host.messages(until=lambda ms: any(m.type == P.R_HASH for m in ms))
    assert b"".join(m.payload for m in got if m.tag == t1 and m.type == P.R_DATA) == want[:3000]
    h = [m for m in got if m.tag == t2][0]
    assert struct.unpack_from("<QQIB", h.payload) == (3000, 7000, crc32c(want[3000:]), P.S_COMPLETE)


def test_requests_split_damaged_or_among_noise(files):
    host, dev, port, _ = connect(files)
    enter(host)
    msg = P.encode(P.T_STAT, 9, P.pack_str("a.logb"))
    for b in msg:  # one byte at a time
        port.inbox.append(b)
        dev.poll()
    got = host.messages(polls=20)
    assert [(m.type, m.tag) for m in got] == [(P.R_STAT, 9)]
    bad = bytearray(P.encode(P.T_STAT, 10, P.pack_str("a.logb")))
    bad[14] ^= 0x20  # payload damaged: the header is fine, so the device says which request
    port.inbox += b"\x00\xa7noise\xa7L" + bad + os.urandom(50).replace(b"\xa7", b"") + \
        P.encode(P.T_STAT, 11, P.pack_str("a.logb"))
    got = host.messages(polls=50)
    assert [(m.type, m.tag) for m in got] == [(P.R_ERR, 10), (P.R_STAT, 11)]
    assert err_code(got[0]) == P.E_CRC


def test_a_lost_byte_in_a_request_is_given_up_after_a_second(files, clock):
    host, dev, port, _ = connect(files)
    enter(host)
    msg = P.encode(P.T_STAT, 12, P.pack_str("a.logb"))
    port.inbox += msg[:-1]  # the last byte never comes: the device waits for it
    assert host.messages(polls=20) == []
    clock(1.1)
    assert host.messages(polls=50) == []  # given up quietly ...
    port.inbox += P.encode(P.T_STAT, 13, P.pack_str("a.logb"))
    got = host.messages(polls=200, until=lambda ms: any(m.tag == 13 for m in ms))
    # ... so the next request is answered alone (kept, the partial one would swallow its first byte: an ERR)
    assert [(m.type, m.tag) for m in got] == [(P.R_STAT, 13)]


def test_delete_only_with_the_files_size_and_crc(files):
    host, *_ = connect(files)
    enter(host)
    data = (files / "a.logb").read_bytes()
    crc = crc32c(data)
    for size, c in ((len(data) - 1, crc), (len(data), crc ^ 1)):
        assert err_code(host.one(P.T_DELETE, struct.pack("<QI", size, c) + P.pack_str("a.logb"))) == P.E_MISMATCH
        assert (files / "a.logb").exists()
    assert err_code(host.one(P.T_DELETE, struct.pack("<QI", 1, 0) + P.pack_str("zz.logb"))) == P.E_NOENT
    host.one(P.T_DELETE, struct.pack("<QI", len(data), crc) + P.pack_str("a.logb"), P.R_OK)
    assert not (files / "a.logb").exists()


def test_cancel_queue_bye_and_idle(files, clock):
    host, dev, port, _ = connect(files, chunk=512, idle_s=0.3)
    enter(host)
    tag = host.send(P.T_READ, struct.pack("<QQ", 0, 10000) + P.pack_str("a.logb"))
    host.messages(polls=3)
    c = host.one(P.T_CANCEL, b"", P.R_OK)
    assert c
    assert [m for m in host.messages(polls=50) if m.tag == tag] == []  # nothing after the OK
    for _ in range(8):  # more requests than the queue holds while a job runs
        host.send(P.T_HASH, struct.pack("<QQ", 0, 10000) + P.pack_str("a.logb"))
    got = host.messages(until=lambda ms: sum(m.type in (P.R_HASH, P.R_ERR) for m in ms) == 8)
    assert sum(m.type == P.R_ERR and err_code(m) == P.E_BUSY for m in got) >= 3
    host.one(P.T_BYE, b"", P.R_OK)
    host.messages(polls=5)
    assert not dev.active
    host.send(P.T_STAT, P.pack_str("a.logb"))
    assert host.messages(polls=20) == []  # console again: requests are ignored
    enter(host)
    clock(0.2)
    host.messages(polls=5)
    assert dev.active
    clock(0.2)
    host.messages(polls=5)
    assert not dev.active  # no request for idle_s: the port is given back
    tag = host.send(P.T_PING)
    assert host.messages(polls=20) == []


def test_tail_follows_the_recorder_up_to_its_flushes(files, clock):
    sink = open(files / "rec.logb", "wb")
    rec = link.Recorder(sink, "rec.logb")
    host, dev, port, _ = connect(files, chunk=512, recorder=rec, tick_ms=1)
    enter(host)
    assert struct.unpack_from("<QB", host.one(P.T_STAT, P.pack_str("rec.logb"), P.R_STAT).payload) == (0, 1)
    tag = host.send(P.T_TAIL, struct.pack("<Q", 0) + P.pack_str(""))  # "": the active recording
    rec.write(b"A" * 1000)
    got = host.messages(polls=50)
    assert [m for m in got if m.type == P.R_DATA] == []  # written, not flushed: not served
    rec.flush()
    rec.write(bytearray(b"B" * 300), 100, 50)
    got = host.messages(polls=50)
    assert b"".join(m.payload for m in got if m.type == P.R_DATA) == b"A" * 1000
    rec.flush()
    got = host.messages(polls=50)
    assert b"".join(m.payload for m in got if m.type == P.R_DATA) == b"B" * 50
    clock(0.01)
    tick = [m for m in host.messages(polls=20) if m.type == P.R_TICK]
    assert tick and struct.unpack_from("<QB", tick[0].payload) == (1050, 1)  # idle: the readable size
    host.one(P.T_CANCEL, b"", P.R_OK)  # a TAIL holds the link until CANCEL (requests wait behind it)
    err = host.one(P.T_DELETE, struct.pack("<QI", 1050, crc32c(b"A" * 1000 + b"B" * 50)) + P.pack_str("rec.logb"))
    assert err_code(err) == P.E_REFUSED  # never the file being recorded
    tag = host.send(P.T_TAIL, struct.pack("<Q", 1000) + P.pack_str("rec.logb"))
    rec.close()
    got = host.messages(until=lambda ms: any(m.type == P.R_END for m in ms))
    end = [m for m in got if m.type == P.R_END][0]
    assert end.tag == tag and struct.unpack_from("<QQIB", end.payload) == (1000, 50, crc32c(b"B" * 50), P.S_CLOSED)


def test_recorder_under_the_firmware_writer(files):
    """The writer writes through the Recorder; the durable size always ends a frame."""
    sink = io.BytesIO()
    rec = link.Recorder(sink, "r.logb")
    clock = [1 << 29]
    w = fw.Writer(rec, session="c" * 32, ticks=lambda: clock[0], flush_ms=50)
    w.load_config(fwtools.raw_only_config())
    sizes = set()
    for i, (t, cid, flags, data) in enumerate(fwtools.read_candump(fwtools.TRACES / "lancer-candump.log", 3000)):
        clock[0] = ((1 << 29) + t) & ((1 << 30) - 1)
        w.append_can(clock[0], cid, data, flags)
        w.poll()
        sizes.add(rec.durable())
    w.close()
    full = sink.getvalue()
    rec.close()
    assert rec.durable() == len(full) and not rec.active
    for size in sorted(sizes)[1:]:
        f = logb.LogbFile(full[:size])
        assert not f.report.truncated and f.report.clean, size


# ---------------------------------------------------------------- host pieces
def test_crc32c_combine():
    rnd = random.Random(2)
    for la, lb in ((0, 0), (1, 0), (0, 7), (3, 1000), (12345, 65536), (5, 1 << 20)):
        a, b = rnd.randbytes(la), rnd.randbytes(lb)
        assert P.crc32c_combine(crc32c(a), crc32c(b), lb) == crc32c(a + b)


def test_parser_splits_noise_and_damage():
    msgs = [P.encode(P.R_OK, i, bytes([i]) * i) for i in range(1, 30)]
    stream = bytearray(b"boot text >>> ")
    for i, m in enumerate(msgs):
        m = bytearray(m)
        if i == 5:
            m[3] ^= 1  # header CRC fails: skipped
        if i == 9:
            m[-2] ^= 1  # payload CRC fails: skipped
        stream += m + (b"\xa7" if i % 7 == 0 else b"")
    p = P.Parser()
    got = []
    rnd = random.Random(1)
    pos = 0
    while pos < len(stream):
        k = rnd.randint(1, 40)
        p.feed(bytes(stream[pos:pos + k]))
        pos += k
        while (m := p.next()) is not None:
            got.append(m.tag)
    assert got == [i for i in range(1, 30) if i not in (6, 10)] and p.bad >= 2


def recording(frames=4000, segment_bytes=8192):
    """A recording of the Lancer trace by the firmware writer (CPython)."""
    clock = [1 << 29]
    out = io.BytesIO()
    w = fw.Writer(out, session="d" * 32, ticks=lambda: clock[0], flush_ms=50, segment_bytes=segment_bytes,
                  device="x")
    w.load_config(fwtools.raw_only_config())
    for t, cid, flags, data in fwtools.read_candump(fwtools.TRACES / "lancer-candump.log", frames):
        clock[0] = ((1 << 29) + t) & ((1 << 30) - 1)
        w.append_can(clock[0], cid, data, flags)
        w.poll()
    w.close()
    return out.getvalue()


def test_frame_check_in_pieces_and_damage():
    src = recording()
    ref = logb.LogbFile(src)
    assert ref.report.clean
    for chunk in (1, 7, 512, 1 << 20):
        fc = FrameCheck()
        for i in range(0, len(src), chunk):
            fc.feed(src[i:i + chunk])
        fc.close()
        assert (fc.frames, fc.damage, fc.boundary) == (ref.report.frames, [], len(src))
    bad = bytearray(src)
    bad[len(bad) // 2] ^= 0x40
    fc = FrameCheck()
    for i in range(0, len(bad), 333):
        fc.feed(bytes(bad[i:i + 333]))
    fc.close()
    skipped = logb.LogbFile(bytes(bad)).report.skipped
    assert [o for o, _ in fc.damage] == [s.start for s in skipped] and len(skipped) == 1
    cut = src[:len(src) - 5]  # a growing file read mid-frame: the boundary is the last whole frame
    fc = FrameCheck()
    fc.feed(cut)
    fc.close()
    assert fc.boundary < len(cut) and logb.LogbFile(cut[:fc.boundary]).report.clean
    assert fc.cut_tail and fc.damage == [(fc.boundary, "truncated")]


def scanner_check(data):
    """What FrameCheck must report: the reader's scanner fed everything from byte 0."""
    sc = FrameScanner(recover=True)
    try:
        events = sc.feed(data) + sc.close()
    except UnsupportedVersionError:
        return 0, [(0, "unsupported version")], 0
    frames = [ev for ev in events if isinstance(ev, FrameRef)]
    damage = [(ev.start, ev.cause) for ev in events if type(ev) is Skip]
    boundary = frames[-1].end if frames else FILE_HEADER_SIZE if sc.header is not None else 0
    return len(frames), damage, boundary


RECORDING = recording(1500, segment_bytes=4096)


def damaged(src):
    """Recordings damaged in every way the frame walk must hand over to the scanner for."""
    syncs = list(sync_frames(src))
    mid = syncs[len(syncs) // 2]
    flip = lambda b, i, x=0x40: b[:i] + bytes([b[i] ^ x]) + b[i + 1:]  # noqa: E731
    huge = src[:mid] + struct.pack("<I", 0xFFFFFF00) + src[mid + 4:]  # a length no scanner waits for
    longer = src[:mid] + struct.pack("<I", struct.unpack_from("<I", src, mid)[0] + 100) + src[mid + 4:]
    schema = next(f.offset for f in FrameScanner().scan(src) if isinstance(f, FrameRef) and f.type == FrameType.SCHEMA)
    newer = bytearray(src)
    newer[8] += 1  # another major version: not checked, the copy goes on
    out = {
        "clean": src, "payload": flip(src, len(src) // 2), "sync": flip(src, mid + 12),
        "schema": flip(src, schema + 10), "two": flip(flip(src, len(src) // 3), 2 * len(src) // 3),
        "huge length": huge, "longer length": longer, "cut": src[:-5], "header": flip(src, 3),
        "embedded header": src + src, "text first": b"boot>>>" + src, "newer": bytes(newer),
        "last sync": flip(src, syncs[-1] + 1), "empty": b"", "header only": src[:16],
    }
    assert tuple(out) == DAMAGE
    return out


DAMAGE = ("clean", "payload", "sync", "schema", "two", "huge length", "longer length", "cut", "header",
          "embedded header", "text first", "newer", "last sync", "empty", "header only")


@pytest.mark.parametrize("case", DAMAGE)
def test_frame_check_walk_hands_damage_to_the_scanner(case, monkeypatch):
    """The kernel walks the clean runs; whatever else there is, FrameCheck
    reports exactly what the reader's scanner reports reading it whole —
    also when it holds too much since a SYNC and hands over early."""
    data = damaged(RECORDING)[case]
    want = scanner_check(data)
    assert case in ("clean", "empty", "header only") or want[1], "the damage was not damage"
    for replay_max, chunk in ((pull_mod.REPLAY_MAX, 97), (pull_mod.REPLAY_MAX, 4096), (pull_mod.REPLAY_MAX, 1 << 20),
                              (700, 4096)):
        monkeypatch.setattr(pull_mod, "REPLAY_MAX", replay_max)
        fc = FrameCheck()
        for i in range(0, len(data), chunk):
            end = min(i + chunk, len(data))
            fc.feed(*[data[j:min(j + 31, end)] for j in range(i, end, 31)])  # a batch of messages
        fc.close()
        assert (fc.frames, fc.damage, fc.boundary) == want, (case, chunk, replay_max)


def test_live_decoder_matches_the_reader():
    a = recording()
    two = a + a[16:]  # `logb cat` of the recording with itself
    dec = LiveDecoder()
    events = []
    rnd = random.Random(3)
    pos = 0
    while pos < len(two):
        k = rnd.randint(1, 3000)
        events += dec.feed(two[pos:pos + k])
        pos += k
    ids = [int(x) for ev in events if ev[0] == "records" for x in ev[2].raw["id"]]
    ref = logb.LogbFile(two).stream("can0").columns()
    assert ids == [int(x) for x in ref.raw["id"]]
    assert [ev[1] for ev in events if ev[0] == "session"] == ["d" * 32]  # the same session id twice: one
    assert [ev[0] for ev in events].count("end") == 2
    # from a SYNC in the middle, with the records before `show_from` left out
    q = a.index(b"LOGBSYNC", 9000) - 8
    dec = LiveDecoder(q, show_from=len(a) - 3000)
    events = dec.feed(a[q:])
    recs = [ev for ev in events if ev[0] == "records"]
    assert recs and sum(b.count for _, _, b in recs) < len(ref.raw["id"]) // 4
    assert events[0][0] == "session"


def test_find_port_by_vid_pid(monkeypatch):
    class P_:
        def __init__(self, device, vid, pid):
            self.device, self.vid, self.pid = device, vid, pid

    monkeypatch.delenv("LOGB_PORT", raising=False)
    pico = P_("/dev/ttyACM0", 0x2E8A, 0x0005)
    cp210x = P_("/dev/ttyUSB0", 0x10C4, 0xEA60)
    mouse = P_("/dev/ttyS0", None, None)
    assert find_port(None, [mouse, cp210x, pico]) == "/dev/ttyACM0"  # a MicroPython board before a bridge
    assert find_port(None, [mouse, cp210x]) == "/dev/ttyUSB0"
    assert find_port("/dev/x", [pico]) == "/dev/x"
    monkeypatch.setenv("LOGB_PORT", "/dev/y")
    assert find_port(None, [pico]) == "/dev/y"
    monkeypatch.delenv("LOGB_PORT")
    from logb.serial.client import LinkError

    with pytest.raises(LinkError, match="no MicroPython board"):
        find_port(None, [mouse])
    with pytest.raises(LinkError, match="several boards"):
        find_port(None, [pico, P_("/dev/ttyACM1", 0xF055, 0x9802)])

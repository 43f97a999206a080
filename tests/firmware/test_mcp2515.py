"""The MCP2515 driver (firmware/logb/mcp2515.py) against the simulated chip
(boards/simparts/mcp2515_chip.py) under CPython: bit timing, registers,
filters, rollover, overflow counting, and a real trace recorded by the
writer and decoded on the host. The same pair on the real unix port, heap
locked around pump(): test_unix_port_heap_locked (tests/firmware/mp_mcp2515.py)."""

import collections
import io
import json
import sys

import pytest

import logb
from logb.can.bus import bus_frames

import fwload
import fwtools
import mpreal

sys.path.insert(0, str(fwload.ROOT / "boards" / "simparts"))
import mcp2515_chip as chipmod  # noqa: E402

fw = fwload.load()
drv = fwload.submodule("mcp2515")
TRACE = fwtools.TRACES / "lancer-candump.log"
HERE = fwload.ROOT / "tests" / "firmware"
pytestmark = pytest.mark.single_backend  # the host backends only decode here


class Rec:
    """A writer stand-in for register-level tests: what pump() hands over."""

    def __init__(self):
        self.frames = []

    def append_can(self, t, cid, data, flags, dlc):
        self.frames.append((t, cid, flags, bytes(data), dlc))

    def lost(self, controller, buffer, stream):
        pass


class LossRec(Rec):
    def lost(self, controller, buffer, stream):
        self.lost_n = getattr(self, "lost_n", 0) + controller


def rig(bitrate=500_000, osc=16_000_000, spi_hz=10_000_000, **kw):
    clk = chipmod.Clock(1000)
    chip = chipmod.MCP2515Chip(clk, bitrate, spi_hz)
    d = drv.MCP2515(chip.spi, chip.cs, chip.int_pin, bitrate, osc, ticks=clk.ticks_us, **kw)
    return clk, chip, d


# ---------------------------------------------------------------- bit timing
def decode_cnf(c1, c2, c3, osc):
    brp, sjw = c1 & 0x3F, (c1 >> 6) + 1
    prop, ps1, ps2 = (c2 & 7) + 1, (c2 >> 3 & 7) + 1, (c3 & 7) + 1
    ntq = 1 + prop + ps1 + ps2
    return osc / (2 * (brp + 1) * ntq), ntq, prop, ps1, ps2, sjw, c2 & 0x80


@pytest.mark.parametrize("osc", [8_000_000, 16_000_000])
@pytest.mark.parametrize("rate", [125_000, 250_000, 500_000, 1_000_000])
def test_bit_timing_rules(osc, rate):
    if rate == 1_000_000 and osc == 8_000_000:  # 4 MHz of tq clock: 4 tq per bit, below the chip's 8
        with pytest.raises(ValueError):
            drv.bit_timing(rate, osc)
        return
    c1, c2, c3, sp = drv.bit_timing(rate, osc)
    got, ntq, prop, ps1, ps2, sjw, btl = decode_cnf(c1, c2, c3, osc)
    assert got == rate and btl  # exact rate; PS2 from CNF3 (BTLMODE)
    assert 8 <= ntq <= 25 and ps2 >= 2 and prop + ps1 >= ps2 and ps2 > sjw >= 1  # datasheet §5.3
    assert sp == (ntq - ps2) * 1000 // ntq and 750 <= sp <= 875
    assert max(prop, ps1, ps2) <= 8


def test_bit_timing_table():
    """The values the driver programs (what a board with that crystal gets)."""
    table = {(r, o): drv.bit_timing(r, o) for o in (8_000_000, 16_000_000)
             for r in (125_000, 250_000, 500_000, 1_000_000) if (r, o) != (1_000_000, 8_000_000)}
    assert table == {(125_000, 8_000_000): (0x01, 0xB5, 0x01, 875), (250_000, 8_000_000): (0x00, 0xB5, 0x01, 875),
                     (500_000, 8_000_000): (0x00, 0x91, 0x01, 750), (125_000, 16_000_000): (0x03, 0xB5, 0x01, 875),
                     (250_000, 16_000_000): (0x01, 0xB5, 0x01, 875), (500_000, 16_000_000): (0x00, 0xB5, 0x01, 875),
                     (1_000_000, 16_000_000): (0x00, 0x91, 0x01, 750)}


# ---------------------------------------------------------------- registers
def test_start_programs_the_chip_listen_only():
    clk, chip, d = rig(250_000, 8_000_000)
    chip.regs[0x2A] = 0x55  # garbage a RESET must clear
    d.start()
    r = chip.regs
    assert (r[0x2A], r[0x29], r[0x28]) == drv.bit_timing(250_000, 8_000_000)[:3]
    assert r[0x0E] >> 5 == 3 and r[0x2B] == 0x03  # listen-only; RX0IE | RX1IE
    assert r[0x60] == 0x64 and r[0x70] == 0x60  # receive any, BUKT rollover
    assert chip.int_pin._handler is not None and chip.int_pin.hard
    # configuration registers are locked outside configuration mode (the chip ignores the write)
    d.write(0x2A, 0x3F)
    assert r[0x2A] == drv.bit_timing(250_000, 8_000_000)[0]
    d.stop()
    assert r[0x0E] >> 5 == 4 and chip.int_pin._handler is None


def test_irq_without_hard_argument():
    """esp32's Pin.irq() has no `hard`: the driver sets the handler without it."""
    clk, chip, d = rig()
    plain = chip.int_pin.irq

    def irq(handler=None, trigger=3):
        plain(handler, trigger)

    chip.int_pin.irq = irq
    d.start()
    chip.feed([(0, 0x42, 0, b"\x01")], start=clk.now + 5)
    clk.advance(500)
    w = Rec()
    d.pump(w)
    assert [(f[0], f[1]) for f in w.frames] == [(chip.arrival[0], 0x42)]


def test_normal_mode_on_request():
    clk, chip, d = rig(listen_only=False)
    d.start()
    assert chip.regs[0x0E] >> 5 == 0


def test_no_chip_raises():
    clk, chip, d = rig()
    chip.regs[0x0E] = 0  # a chip that does not reset into configuration mode: a dead or absent one
    chip._reset = lambda: None
    with pytest.raises(OSError):
        d.start()


def test_frame_formats_and_timestamps():
    """Standard, extended, remote (both formats), every length; the stamp is the
    IRQ's (the arrival) when the frame is alone in the chip."""
    frames = [(0, 0x123, 0, b""), (500, 0x7FF, 0, b"\x01"), (1000, 0x1ABCDEF1, 1, bytes(range(8))),
              (1500, 0x100, 2, b""), (2000, 0x1FFFFFFF, 3, b""), (2500, 0, 0, b"\xaa" * 5),
              (3000, 0x555, 4, b"\x00" * 8), (3500, 0x10, 8, bytes(12))]  # an error frame, a CAN FD frame
    clk, chip, d = rig()
    d.start()
    chip.feed(frames, start=clk.now + 10)
    w = Rec()
    while chip.next_at >= 0:
        clk.advance(100)
        d.pump(w)
    assert [f[1:4] for f in w.frames] == [(c, fl, data) for _, c, fl, data in frames[:6]]
    assert [f[4] for f in w.frames] == [0, 1, 8, 0, 0, 5]
    assert [f[0] for f in w.frames] == chip.arrival[:6]
    assert list(chip.outcome) == [1] * 6 + [chipmod.UNRECEIVABLE] * 2


def test_rollover_order_and_overflow():
    """Three frames back to back while the loop is away: RXB0, RXB1 by rollover, the third
    lost (RX1OVR); pump reads them oldest first, stamps the first with its IRQ time and
    counts the overflow once, then clears it."""
    clk, chip, d = rig()
    d.start()
    f = [(0, 0x10, 0, b"\x01"), (0, 0x11, 0, b"\x02"), (0, 0x12, 0, b"\x03"), (900, 0x13, 0, b"\x04")]
    chip.feed(f, start=clk.now)
    clk.advance(600)
    assert chip.regs[0x2C] & 3 == 3 and chip.regs[0x2D] & 0x80 and chip.int_pin.value() == 0
    w = LossRec()
    assert d.pump(w) == 2
    assert [x[1] for x in w.frames] == [0x10, 0x11] and w.lost_n == 1 == d.overflows == chip.overflows
    assert w.frames[0][0] == chip.arrival[0] and chip.regs[0x2D] == 0 and chip.int_pin.value() == 1
    clk.advance(1000)
    assert d.pump(w) == 1 and w.frames[2][1] == 0x13 and w.lost_n == 1
    assert list(chip.outcome) == [1, 1, chipmod.LOST, 1]


def test_rxb1_older_after_rxb0_refills():
    """Both full, RXB0 read, a new frame into RXB0 while RXB1 still waits: RXB1 is
    read next. SPI at 100 kHz: RX STATUS takes 160 µs, READ RX BUFFER 1,120 µs."""
    clk, chip, d = rig(spi_hz=100_000)
    d.start()
    f = [(0, 0x20, 0, b"\x00"), (0, 0x21, 0, b"\x01"), (1650, 0x22, 0, b"\x02"), (9000, 0x23, 0, b"\x03")]
    chip.feed(f, start=clk.now)
    clk.advance(300)  # F0 in RXB0, F1 in RXB1 (rollover)
    w = LossRec()
    d.pump(w)  # status, RXB0 (ends at 1,580 µs), status (F2 lands in RXB0 meanwhile), RXB1, RXB0
    assert chip.arrival[2] > 1580 and [x[1] for x in w.frames] == [0x20, 0x21, 0x22]
    clk.advance(10_000)
    d.pump(w)
    assert [x[1] for x in w.frames] == [0x20, 0x21, 0x22, 0x23] and list(chip.outcome) == [1] * 4


# ---------------------------------------------------------------- filters
def accepted(filters, frames):
    clk, chip, d = rig(filters=filters)
    d.start()
    chip.feed(frames, start=clk.now)
    w = Rec()
    while chip.next_at >= 0:  # pumped well within a frame time: a buffer reached by its own filters is one deep
        clk.advance(100)
        d.pump(w)
    assert chip.lost == 0
    return {(x[1], x[2] & 1) for x in w.frames}, chip


def test_filters_exact_ids():
    want = [(0x123, 0x7FF, False), (0x456, 0x7FF, False), (0x18FEF100, 0x1FFFFFFF, True)]
    ids = [(0x123, 0), (0x124, 0), (0x456, 0), (0x18FEF100, 1), (0x18FEF101, 1), (0x123, 1), (0x7FF, 0)]
    frames = [(i * 400, c, fl, b"\xff\xee\x01") for i, (c, fl) in enumerate(ids)]
    got, chip = accepted(want, frames)
    assert got == {(0x123, 0), (0x456, 0), (0x18FEF100, 1)}
    assert chip.outcome.count(chipmod.FILTERED) == 4


def test_filters_merge_never_narrower():
    """Ten exact ids and a J1939-style PGN mask: six filters, two masks; every wanted
    frame passes, and what passes beyond them is what the merged masks allow."""
    want = [(0x100 + 3 * i, 0x7FF, False) for i in range(10)] + [(0x0CF00400, 0x03FFFF00, True)]
    masks, fs = drv.plan_filters(want)
    assert len(fs) == 6
    ids = [(c, 0) for c in range(0x0F0, 0x130)] + [(0x0CF00400 | p << 26 | sa, 1) for p in range(8)
                                                   for sa in (0, 0x17)] + [(0x0CF00500, 1)]
    frames = [(i * 300, c, fl, b"\x00\x00") for i, (c, fl) in enumerate(ids)]
    got, _ = accepted(want, frames)
    wanted = {(c, fl) for c, fl in ids for fid, m, ext in want if (c & m) == (fid & m) and fl == ext}
    assert wanted <= got and len(got) < len(ids)


def test_filter_slots_never_match_id_zero():
    got, _ = accepted([(0x321, 0x7FF, False)], [(0, 0, 0, b""), (400, 0x321, 0, b"")])
    assert got == {(0x321, 0)}


def test_config_filters(tmp_path):
    cfg, compiled = fwtools.compile_config()
    p = tmp_path / "c.lbcf"
    p.write_bytes(cfg)
    got = drv.config_filters(str(p))
    exact = {(e.frame_id, bool(e.extended)) for e in compiled.entries if not e.mux}
    assert {(i, e) for i, m, e in got} >= exact and all(m for _, m, _ in got)
    p.write_bytes(fwtools.raw_only_config())
    assert drv.config_filters(str(p)) == []


# ---------------------------------------------------------------- a real trace into the writer
def record_trace(frames, loop_us, bitrate=500_000, speed=(1, 1)):
    """The driver + writer (raw-bus-only config) on the chip fed `frames`, the loop taking
    loop_us between pumps; returns (file bytes, chip, driver, writer)."""
    clk, chip, d = rig(bitrate)
    clk = chip.clock
    sink = io.BytesIO()
    w = fw.Writer(sink, device="mcp", session="ab" * 16, ticks=clk.ticks_us)
    w.load_config(fwtools.raw_only_config())
    d.start()
    chip.feed(frames, start=clk.now + 100, speed_num=speed[0], speed_den=speed[1])
    while chip.next_at >= 0:
        clk.advance(loop_us)
        d.pump(w)
        w.poll()
    clk.advance(10_000)
    d.pump(w)
    w.close()
    return sink.getvalue(), chip, d, w


def decoded(data):
    b = bus_frames(logb.LogbFile(data))
    return [(int(b.id[i]), int(b.flags[i]), bytes(b.data[i][:b.dlc[i] if not b.flags[i] & 2 else 0]))
            for i in range(len(b))], b


@pytest.mark.parametrize("loop_us,speed", [(150, (1, 1)), (1500, (1, 1)), (400, (1, 4))],
                         ids=["keeps-up", "slow-loop", "4x-speed"])
def test_trace_recording_equals_trace_minus_lost(loop_us, speed):
    frames = fwtools.read_candump(TRACE, limit=6000)
    data, chip, d, w = record_trace(frames, loop_us, speed=speed)
    got, b = decoded(data)
    kept = [(c, fl, bytes(x)) for (_, c, fl, x), o in zip(frames, chip.outcome) if o == chipmod.RECEIVED]
    assert got == kept
    assert len(kept) + chip.lost == len(frames) == chip.outcome.count(1) + chip.outcome.count(chipmod.LOST)
    meta = logb.LogbFile(data).stream("can0").meta
    assert int(meta["logb.lost.controller"]) == d.overflows == chip.overflows  # what the chip reports
    assert chip.overflows <= chip.lost  # a flag stands for one frame or more
    if loop_us == 150:
        assert chip.lost == 0
    else:
        assert chip.lost > 0
    # times: every frame stamped at or after its arrival, the IRQ-stamped ones exactly
    arr = [a for a, o in zip(chip.arrival, chip.outcome) if o == chipmod.RECEIVED]
    t0 = arr[0]
    t = [int(x) - int(b.t[0]) + t0 for x in b.t]
    late = [ti - a for ti, a in zip(t, arr)]
    assert min(late) == 0 and max(late) <= 3 * loop_us + 1000
    assert sum(1 for x in late if x == 0) > len(late) // 3


def test_status_counts_and_errors():
    clk, chip, d = rig()
    d.start()
    chip.set_errors(130, 7)
    s = d.status()
    assert s["tec"] == 130 and s["rec"] == 7 and s["error_passive"] and not s["bus_off"] and s["mode"] == 3


# ---------------------------------------------------------------- the unix port, heap locked
def test_unix_port_heap_locked(tmp_path):
    frames = fwtools.read_candump(TRACE, limit=4000)
    (tmp_path / "frames.bin").write_bytes(fwtools.encode_frames(frames))
    (tmp_path / "config.lbcf").write_bytes(fwtools.raw_only_config())
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "mcp2515_chip.py").symlink_to(fwload.ROOT / "boards" / "simparts" / "mcp2515_chip.py")
    common = collections.Counter(c for _, c, fl, _ in frames if not fl & 1).most_common(5)
    (tmp_path / "filters.json").write_text(json.dumps([[c, 0x7FF, 0] for c, _ in common]))
    res = {}
    runs = (("fast", 150, (), 64), ("slow", 1500, (), 64), ("filters", 150, (tmp_path / "filters.json",), 64),
            ("slow-i386", 1500, (), 32))  # i386: a board's 31-bit small ints and ticks wrapping at 2**30
    for case, loop_us, extra, bits in runs:
        out = tmp_path / f"rec-{case}.logb"
        r = mpreal.run_unix(HERE / "mp_mcp2515.py", tmp_path, out, loop_us, *extra, heap="2M", bits=bits,
                            lib=f"{lib}:{mpreal.firmware_mpy('x86' if bits == 32 else 'x64')}")
        res[case] = fwtools.result_line(r.stdout)
        got, _ = decoded(out.read_bytes())
        lost = set(res[case]["lost_idx"])
        kept = [(c, fl, bytes(x)) for i, (_, c, fl, x) in enumerate(frames) if i not in lost]
        assert got == kept and res[case]["locked"] and res[case]["moved"] == len(kept)
        meta = logb.LogbFile(out.read_bytes()).stream("can0").meta
        assert int(meta["logb.lost.controller"]) == res[case]["overflows"]
    assert not res["fast"]["lost_idx"] and res["slow"]["chip_lost"] > 0 and res["filters"]["chip_lost"] == 0
    assert res["slow-i386"]["lost_idx"] == res["slow"]["lost_idx"]  # the same bus and loop timing: the same losses
    wanted = {c for c, _ in common}
    assert res["filters"]["filtered"] == sum(1 for _, c, fl, _ in frames if fl & 1 or c not in wanted) > 0

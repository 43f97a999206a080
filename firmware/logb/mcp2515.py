"""MCP2515 CAN controller over SPI: a CAN source for the board loop
(docs: the issue 11 contract; start / pump / stop / status).

    from machine import SPI, Pin
    can = MCP2515(SPI(0, baudrate=10_000_000), Pin(17, Pin.OUT), Pin(20, Pin.IN),
                  bitrate=500_000, osc_hz=16_000_000)
    can.start()
    while True:
        can.pump(w)          # every frame since the last call into w.append_can
        w.poll()

Listen-only by default: a logger must not ACK or send error frames on a
bus it only watches (`listen_only=False` for normal mode, e.g. a bench bus
with no other node to ACK). Both receive buffers are used with rollover
(BUKT): a frame finding RXB0 full goes to RXB1, so the loop may take up to
two frame times to come back.

Losses: a frame finding both buffers full is lost by the chip, which only
sets a flag (EFLG.RX1OVR; RX0OVR without rollover) and counts nothing. pump()
reads EFLG after draining RXB1, clears the flags it finds and adds one per
flag to w.lost(controller=n): `logb.lost.controller` from this driver counts
overflow events, a lower bound on the frames lost (it is exact only when no
two losses fall between two pumps). Frames the chip drops while a flag is
already set leave no trace in any register (REC/TEC count bus errors, not
overruns), so no reading makes it exact; pumping often keeps each flag's
window short. `overflows` in status() is the same count.

Timestamps: the INT pin's falling-edge handler stores time.ticks_us() in a
preallocated ring. INT falls when the chip goes from "no receive flag" to
"a receive flag", i.e. for the first frame of each burst; a frame arriving
while INT is already low (the other buffer still full) makes no edge and is
stamped when pump() reads it (late by at most its wait in the buffer).
Because INT can only rise again after every flag is cleared, a ring entry
taken after the previous frame's read belongs to the frame read next.

What the handler may do: with hard=True (rp2: the GPIO interrupt itself)
it must not allocate, and it does not: ticks_us() returns a small int,
storing it in an array('i') item and bumping an int attribute allocate
nothing, and the bound method is made once in start(). No SPI in the
handler (the main loop may be mid-transaction). On esp32 Pin.irq() takes
no `hard` (start() then calls it without): its GPIO ISR only schedules the
handler, so the stamp is taken when the scheduler runs it (between two
bytecodes of the main loop, or later while a C call such as an SD write
blocks): later than rp2's. A frame read before its scheduled handler ran
takes the read time; pump() drops a stamp older than the end of the
previous read (it belongs to a frame already stamped). A handler scheduled
so late that it runs after that read still hands its stamp to the next
frame, early by up to the gap between the two: on esp32 stamps are good to
the main loop's latency, on rp2 (hard IRQ) to the handler's few µs.
"""

from array import array

from ._port import sleep_ms, ticks_diff, ticks_us

try:
    from micropython import const
except ImportError:  # CPython
    from ._const import const

# SPI instructions (datasheet DS20001801 §12)
_RESET = const(0xC0)
_READ = const(0x03)
_WRITE = const(0x02)
_BIT_MODIFY = const(0x05)
_RX_STATUS = const(0xB0)
_READ_RXB0 = const(0x90)  # READ RX BUFFER from RXB0SIDH; clears RX0IF when CS rises
_READ_RXB1 = const(0x94)  # READ RX BUFFER from RXB1SIDH; clears RX1IF
# registers
_CANSTAT = const(0x0E)
_CANCTRL = const(0x0F)
_TEC = const(0x1C)
_CNF3 = const(0x28)
_CANINTE = const(0x2B)
_CANINTF = const(0x2C)
_EFLG = const(0x2D)
_RXB0CTRL = const(0x60)
_RXB1CTRL = const(0x70)
_RXM0 = const(0x20)
_FILTER_ADDR = const(b"\x00\x04\x08\x10\x14\x18")  # RXF0..RXF5 (RXF0/1 for RXB0, RXF2..5 for RXB1)
# bits
_MODE_NORMAL = const(0x00)
_MODE_LISTEN = const(0x60)
_MODE_CONFIG = const(0x80)
_MODE_MASK = const(0xE0)
_RXM_ANY = const(0x60)  # RXBnCTRL.RXM = 11: filters off, every frame
_BUKT = const(0x04)
_RX_IE = const(0x03)  # RX0IE | RX1IE: INT follows the receive flags only
_OVR = const(0xC0)  # EFLG.RX1OVR | RX0OVR
_IDE = const(0x08)  # SIDL: extended frame
_SRR = const(0x10)  # SIDL of a standard frame: remote request
_RTR = const(0x40)  # DLC register of an extended frame: remote request
_EXIDE = const(0x08)
_F_EXT = const(0x01)  # Writer.append_can flags
_F_RTR = const(0x02)
_RING = const(16)  # timestamps the handler can hold (more than the two buffers can have pending)
_RING_M = const(_RING - 1)

# bit timing: tq = 2 (BRP + 1) / osc; a bit is 1 (sync) + prop + ps1 + ps2 tq
_MIN_TQ = const(8)
_MAX_TQ = const(25)
_SP_TARGET = const(875)  # per mille: CiA 301's recommended sample point


def bit_timing(bitrate, osc_hz):
    """(cnf1, cnf2, cnf3, sample point per mille) for `bitrate` with an `osc_hz`
    crystal, by the datasheet's rules (§5): 8..25 tq per bit, PS2 >= 2 tq,
    PropSeg + PS1 >= PS2, PS2 > SJW, each segment 1..8 tq; the sample point
    nearest 87.5% (at most 87.5%), then the most tq. ValueError when no
    setting gives the exact bit rate (e.g. 1 Mbit/s from 8 MHz: 4 tq)."""
    best = None
    for brp in range(64):
        div = 2 * (brp + 1) * bitrate
        if osc_hz % div:
            continue
        ntq = osc_hz // div
        if not _MIN_TQ <= ntq <= _MAX_TQ:
            continue
        for ps2 in range(2, 9):
            rest = ntq - 1 - ps2  # prop + ps1
            if rest < ps2 or rest > 16:
                continue
            sp = (ntq - ps2) * 1000 // ntq
            if sp > _SP_TARGET:
                continue
            prop = rest // 2 if rest // 2 <= 8 else rest - 8
            ps1 = rest - prop
            if ps1 > 8 or prop > 8:
                prop, ps1 = rest - 8, 8
            sjw = min(4, ps2 - 1, ps1)
            key = (sp, ntq)
            if best is None or key > best[0]:
                best = (key, ((sjw - 1) << 6 | brp, 0x80 | (ps1 - 1) << 3 | (prop - 1), ps2 - 1, sp))
    if best is None:
        raise ValueError("no MCP2515 bit timing for %d bit/s at %d Hz" % (bitrate, osc_hz))
    return best[1]


# ---------------------------------------------------------------- filters
# Register space: a filter or mask is 29 bits laid out as the chip's SID10:0 | EID17:0;
# a standard id sits in the SID bits (id << 18), its EID bits (which the chip compares
# with data bytes 0 and 1 of standard frames) kept out of every mask.
def _pop(v):
    n = 0
    while v:
        v &= v - 1
        n += 1
    return n


def _reg(fid, mask, ext):
    return (fid, mask, True) if ext else ((fid & 0x7FF) << 18, (mask & 0x7FF) << 18, False)


def plan_filters(filters):
    """The chip's acceptance set-up for `filters`, a list of (id, mask, extended)
    (a mask bit 1: that id bit must match): ((mask0, mask1), six (value, extended)
    filters RXF0..5), in register space; None: accept every frame. Never narrower
    than asked: with more than six entries (or more distinct masks than the chip's
    two) entries are merged by keeping only the bits they agree on, so the chip
    may pass extra frames (the writer routes them as usual), never drop one."""
    if not filters:
        return None
    fs = [_reg(i, m, e) for i, m, e in filters]
    fs = [(v & m, m, e) for v, m, e in fs]
    if any(m == 0 for _, m, _ in fs):
        return None
    fs = list(dict.fromkeys(fs))
    while len(fs) > 6:  # merge the pair (same format) that keeps the most mask bits
        best = None
        for i in range(len(fs)):
            for j in range(i + 1, len(fs)):
                (a, ma, ea), (b, mb, eb) = fs[i], fs[j]
                if ea != eb:
                    continue
                m = ma & mb & ~(a ^ b)
                if best is None or _pop(m) > best[0]:
                    best = (_pop(m), i, j, (a & m, m, ea))
        _, i, j, f = best  # type: ignore[misc]
        fs = [x for k, x in enumerate(fs) if k not in (i, j)] + [f]
    best = None
    n = len(fs)
    for i in range(n):  # RXB0 takes one or two entries, RXB1 the rest (at most four)
        for j in range(i, n):
            b0 = [fs[i]] if i == j else [fs[i], fs[j]]
            b1 = [f for k, f in enumerate(fs) if k not in (i, j)]
            if len(b1) > 4:
                continue
            m0 = _and(b0)
            m1 = _and(b1) if b1 else m0
            score = _pop(m0) * len(b0) + _pop(m1) * len(b1)
            if best is None or score > best[0]:
                best = (score, m0, m1, b0, b1 or b0)  # type: ignore[assignment]
    _, m0, m1, b0, b1 = best  # type: ignore[misc]
    # unused slots repeat a used filter of their buffer: a zero filter would match id 0
    slots = [b0[k % len(b0)] for k in range(2)] + [b1[k % len(b1)] for k in range(4)]
    masks = (m0, m1)
    out = []
    for k, (v, _, e) in enumerate(slots):
        out.append((v & masks[0 if k < 2 else 1], e))
    return masks, tuple(out)


def _and(fs):
    m = 0x1FFFFFFF
    for _, mk, _ in fs:
        m &= mk
    return m


def config_filters(path):
    """(id, mask, extended) of the message entries of the LBCF config at `path`, for
    `filters=`: the chip then passes only the config's messages (unknown ids, which
    the raw bus stream would keep, are dropped in hardware). An entry whose mask
    does not fix the frame format gives both formats; None when one matches every id."""
    from .config import entries

    out = []
    h = bytearray(16)
    with open(path, "rb") as f:
        for e in entries(f, h):
            if e.index == 0 or not e.reachable:
                continue
            m = e.kmask & 0x1FFFFFFF
            if not m:
                return None
            fid = e.key & 0x1FFFFFFF
            if e.kmask >> 29 & 1:
                out.append((fid, m, bool(e.key >> 29 & 1)))
            else:
                out += [(fid, m, False), (fid, m, True)]
    return out


def _id_bytes(buf, off, v, ext):
    """SIDH, SIDL, EID8, EID0 of a register-space value (filters and masks)."""
    buf[off] = v >> 21 & 0xFF
    buf[off + 1] = (v >> 13 & 0xE0) | (_EXIDE if ext else 0) | (v >> 16 & 0x03)
    buf[off + 2] = v >> 8 & 0xFF
    buf[off + 3] = v & 0xFF


class MCP2515:
    def __init__(self, spi, cs, irq, bitrate=500_000, osc_hz=16_000_000, listen_only=True, filters=None,
                 ticks=ticks_us, stream=None):
        self.spi = spi
        self.cs = cs
        self.irq_pin = irq
        self.bitrate = bitrate
        self.osc_hz = osc_hz
        self.listen_only = listen_only
        self.filters = filters
        self.ticks = ticks
        self.stream = stream  # the writer stream losses are counted on (None: the raw bus stream)
        self.timing = bit_timing(bitrate, osc_hz)
        self._plan = plan_filters(filters)
        # preallocated transfers: READ RX BUFFER (instruction + 13 bytes), RX STATUS, EFLG read/clear
        self._rx = bytearray(14)
        self._rd = (bytearray(14), bytearray(14))
        self._rd[0][0] = _READ_RXB0
        self._rd[1][0] = _READ_RXB1
        self._data = tuple(memoryview(self._rx)[6:6 + n] for n in range(9))
        self._st_tx = bytearray((_RX_STATUS, 0))
        self._st = bytearray(2)
        self._ef_tx = bytearray((_READ, _EFLG, 0))
        self._ef = bytearray(3)
        self._ef_clr = bytearray((_BIT_MODIFY, _EFLG, _OVR, 0))
        self._ring = array("i", bytes(4 * _RING))
        self._head = 0  # written by the IRQ handler only
        self._tail = 0  # by pump only
        self._b1_old = False  # RXB1 holds a frame older than whatever RXB0 has
        self._prev = 0  # ticks after the last frame read: older ring stamps are stale
        self._isr = None
        self.frames = 0
        self.overflows = 0

    # ------------------------------------------------------------ registers
    def _xfer(self, tx, rx):
        self.cs(0)
        self.spi.write_readinto(tx, rx)
        self.cs(1)

    def _cmd(self, *b):
        """A short transaction (set-up and diagnostics only: allocates)."""
        rx = bytearray(len(b))
        self._xfer(bytes(b), rx)
        return rx

    def write(self, addr, *vals):
        self._cmd(_WRITE, addr, *vals)

    def read(self, addr, n=1):
        return bytes(self._cmd(_READ, addr, *bytes(n))[2:])

    def set_mode(self, mode):
        self.write(_CANCTRL, mode)
        for _ in range(100):  # the chip changes mode at the next bus idle (11 recessive bits)
            if self.read(_CANSTAT)[0] & _MODE_MASK == mode:
                return
            sleep_ms(1)
        raise OSError("MCP2515 did not enter mode 0x%02x" % mode)

    # ------------------------------------------------------------ source interface
    def start(self):
        self.cs(1)
        self._cmd(_RESET)
        sleep_ms(1)  # oscillator start-up after reset (128 OSC1 cycles; more after power-up)
        if self.read(_CANSTAT)[0] & _MODE_MASK != _MODE_CONFIG:
            raise OSError("no MCP2515 answering on this SPI bus / CS pin")
        c1, c2, c3, _ = self.timing
        self.write(_CNF3, c3, c2, c1)
        if self._plan is None:
            self.write(_RXB0CTRL, _RXM_ANY | _BUKT)
            self.write(_RXB1CTRL, _RXM_ANY)
        else:
            masks, fs = self._plan
            b = bytearray(8)
            _id_bytes(b, 0, masks[0], False)  # masks have no EXIDE bit
            _id_bytes(b, 4, masks[1], False)
            self.write(_RXM0, *b)
            for k in range(6):
                _id_bytes(b, 0, fs[k][0], fs[k][1])
                self.write(_FILTER_ADDR[k], *b[:4])
            self.write(_RXB0CTRL, _BUKT)
            self.write(_RXB1CTRL, 0)
        self.write(_CANINTF, 0)
        self.write(_CANINTE, _RX_IE)
        self._head = self._tail = 0
        self._b1_old = False
        self._prev = self.ticks()
        self._isr = self._on_int
        p = self.irq_pin
        try:
            p.irq(handler=self._isr, trigger=p.IRQ_FALLING, hard=True)
        except TypeError:  # esp32: Pin.irq has no `hard` (its handlers are always scheduled)
            p.irq(handler=self._isr, trigger=p.IRQ_FALLING)
        self.set_mode(_MODE_LISTEN if self.listen_only else _MODE_NORMAL)

    def _on_int(self, pin):
        self._ring[self._head & _RING_M] = self.ticks()
        self._head += 1

    def pump(self, w):
        """Move every received frame into w.append_can and new overflows into
        w.lost(controller=n). Allocates nothing. Returns the frames moved."""
        pin = self.irq_pin
        if pin.value():  # INT high: no frame waiting, and no overflow since the last pump
            return 0
        n = 0
        cs = self.cs
        spi = self.spi
        st = self._st
        rx = self._rx
        full1 = 0
        while True:
            cs(0)
            spi.write_readinto(self._st_tx, st)
            cs(1)
            b = st[1] & 0xC0  # RX STATUS bit 6: RXB0 full, bit 7: RXB1 full
            if not b:
                break
            full1 |= b & 0x80
            if b == 0xC0:  # both: the older first (RXB1 unless it filled after RXB0, by rollover)
                k = 1 if self._b1_old else 0
                self._b1_old = not k
            else:
                k = 1 if b == 0x80 else 0
                self._b1_old = False
            t = self.ticks()
            while self._tail != self._head:  # an edge after the previous read: this frame's IRQ time
                ts = self._ring[self._tail & _RING_M]
                self._tail += 1
                if ticks_diff(ts, self._prev) >= 0:
                    t = ts
                    break
            cs(0)
            spi.write_readinto(self._rd[k], rx)
            cs(1)
            self._prev = self.ticks()  # the next frame's edge follows this read (INT rises as it clears the flag)
            sidl = rx[2]
            dlc = rx[5] & 0x0F
            if sidl & _IDE:
                cid = (rx[1] << 21 | (sidl & 0xE0) << 13 | (sidl & 0x03) << 16 | rx[3] << 8 | rx[4])
                fl = _F_EXT | _F_RTR if rx[5] & _RTR else _F_EXT
            else:
                cid = rx[1] << 3 | sidl >> 5
                fl = _F_RTR if sidl & _SRR else 0
            w.append_can(t, cid, self._data[0 if fl & _F_RTR else (dlc if dlc < 8 else 8)], fl, dlc)
            n += 1
            if pin.value():  # INT high: both buffers empty (a C call instead of another RX STATUS)
                break
        self.frames += n
        # An overflow needs RXB1 full (rollover, or its own filters) until this pump read it:
        # EFLG is read only then.
        if full1:
            ef = self._ef
            self._xfer(self._ef_tx, ef)
            o = ef[2] & _OVR
            if o:
                cs(0)
                spi.write(self._ef_clr)
                cs(1)
                o = 2 if o == _OVR else 1
                self.overflows += o
                w.lost(o, 0, self.stream)
        return n

    def stop(self):
        self.irq_pin.irq(handler=None)
        self._isr = None
        self.set_mode(_MODE_CONFIG)

    def status(self):
        tec, rec = self.read(_TEC, 2)
        eflg = self.read(_EFLG)[0]
        return {"tec": tec, "rec": rec, "eflg": eflg, "error_passive": bool(eflg & 0x18),
                "bus_off": bool(eflg & 0x20), "overflows": self.overflows, "frames": self.frames,
                "mode": self.read(_CANSTAT)[0] >> 5, "bitrate": self.bitrate,
                "sample_point": self.timing[3] / 1000}

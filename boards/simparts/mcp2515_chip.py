"""A simulated MCP2515 for tests and benchmarks (MicroPython and CPython).

It speaks the chip's SPI instruction set (RESET, READ, WRITE, BIT MODIFY,
READ STATUS, RX STATUS, READ RX BUFFER, LOAD TX BUFFER, RTS) on its register
map, receives a CAN trace at bus timing into its two receive buffers (with
BUKT rollover and the RXF0-5 / RXM0-1 acceptance filters), loses a frame
that finds its buffer full the way the chip does (EFLG.RX0OVR / RX1OVR, and
CANINTF.ERRIF), and drives its INT pin (low while CANINTF & CANINTE).

Time: one Clock shared with the driver (its `ticks_us` is the driver's and
the writer's clock). Nothing moves unless someone advances it: the test's
loop (the CPU time its code would take) and every SPI transfer (bytes x 8 /
baud rate). A frame arrives when its end-of-frame passes: at its trace time
(x speed_num / speed_den), or later when the bus is still busy with the
previous one (frame_us: bits at the bit rate, stuffing estimated). On
arrival the INT pin's handler runs at once, with the clock reading the
arrival time: a hard IRQ preempting the main loop.

Per-frame work allocates nothing once fed (outcomes and arrival times live
in lists made by feed()), so a test may hold micropython.heap_lock() over
the driver's pump *and* the simulated chip behind it.

Not modelled: transmission (RTS sets TXREQ, nothing is sent), bus errors
(set_errors() sets TEC/REC for diagnostics), the mode change waiting for
bus idle (it is immediate), the RXnBF pins.
"""

# outcomes of trace frames (MCP2515Chip.outcome)
PENDING = 0
RECEIVED = 1  # put in a receive buffer
LOST = 2  # found its buffer full: overflow
FILTERED = 3  # rejected by the acceptance filters
OFFLINE = 4  # arrived while the chip was not receiving (configuration mode, before start)
UNRECEIVABLE = 5  # an error frame or a CAN FD frame: not something a classic controller stores

_IRQ_FALLING = 2
_IRQ_RISING = 1
_CANSTAT = 0x0E
_CANCTRL = 0x0F
_TEC = 0x1C
_REC = 0x1D
_CANINTE = 0x2B
_CANINTF = 0x2C
_EFLG = 0x2D
_RXB0CTRL = 0x60
_RXB1CTRL = 0x70
_RXB_BASE = (0x61, 0x71)
_READ_RXB_ADDR = (0x61, 0x66, 0x71, 0x76)  # READ RX BUFFER n,m = 00, 01, 10, 11
_LOAD_TX_ADDR = (0x31, 0x36, 0x41, 0x46, 0x51, 0x56)
_FILTERS = (0x00, 0x04, 0x08, 0x10, 0x14, 0x18)
_MASKS = (0x20, 0x24)


def frame_bits(ext, n, remote=False):
    """Bits on the wire of a classic frame with n data bytes, interframe space
    included, and the expected stuff bits: one per 32 stuffable bits (SOF to CRC), the
    average measured on real traffic (Nolte et al. 2001: ~3 for an 8-byte
    frame; the worst case is one per 4)."""
    n = 0 if remote else n
    if ext:
        return 67 + 8 * n + (54 + 8 * n) // 32
    return 47 + 8 * n + (34 + 8 * n) // 32


class Clock:
    """Microseconds since the simulation began (an unbounded int on the host;
    on a 64-bit MicroPython port a small int for 146,000 years)."""

    def __init__(self, start=0, period=1 << 30):
        self.now = start
        self._mask = period - 1
        self._chips = []

    def ticks_us(self):
        return self.now & self._mask

    def advance(self, us):
        """Let `us` µs pass: every chip receives what arrives meanwhile, in time order."""
        target = self.now + us
        chips = self._chips
        while True:
            first = None
            for c in chips:
                if c.next_at >= 0 and (first is None or c.next_at < first.next_at):
                    first = c
            if first is None or first.next_at > target:
                break
            if first.next_at > self.now:
                self.now = first.next_at
            first._arrive()
        self.now = target

    def run_out(self, step=1000):
        """Advance until every chip has taken its last trace frame."""
        while any(c.next_at >= 0 for c in self._chips):
            self.advance(step)


class Pin:
    """The chip's INT output (or any input a test drives): value(), irq()."""

    IRQ_FALLING = _IRQ_FALLING
    IRQ_RISING = _IRQ_RISING
    IN = 0
    OUT = 1

    def __init__(self, value=1):
        self._v = value
        self._handler = None
        self._trigger = 0

    def value(self, v=None):
        if v is None:
            return self._v
        self._drive(1 if v else 0)

    __call__ = value

    def on(self):
        self._drive(1)

    def off(self):
        self._drive(0)

    def irq(self, handler=None, trigger=_IRQ_FALLING | _IRQ_RISING, hard=False):
        self._handler = handler
        self._trigger = trigger
        self.hard = hard

    def _drive(self, v):
        old = self._v
        self._v = v
        h = self._handler
        if h is not None and old != v and self._trigger & (_IRQ_RISING if v else _IRQ_FALLING):
            h(self)


class _CS(Pin):
    def __init__(self, chip):
        Pin.__init__(self, 1)
        self._chip = chip

    def _drive(self, v):
        old = self._v
        self._v = v
        if old and not v:
            self._chip._begin()
        elif v and not old:
            self._chip._end()


class _SPI:
    """The machine.SPI methods the driver uses, wired to the chip; each call
    lets the transfer's time pass on the clock first."""

    def __init__(self, chip, baudrate):
        self._chip = chip
        self.baudrate = baudrate
        self._ns_per_byte = 8 * 1_000_000_000 // baudrate

    def init(self, baudrate=None, **kw):
        if baudrate:
            self.__init__(self._chip, baudrate)

    def write(self, buf):
        c = self._chip
        c._spend(len(buf) * self._ns_per_byte)
        for b in buf:
            c._byte(b)

    def readinto(self, buf, write=0):
        c = self._chip
        n = len(buf)
        c._spend(n * self._ns_per_byte)
        for i in range(n):
            buf[i] = c._byte(write)

    def write_readinto(self, wbuf, rbuf):
        c = self._chip
        n = len(wbuf)
        c._spend(n * self._ns_per_byte)
        for i in range(n):
            rbuf[i] = c._byte(wbuf[i])


class MCP2515Chip:
    """One chip on a Clock. `spi` (baud rate `spi_hz`), `cs` and `int_pin` are
    what the driver is given; `feed()` a trace; `outcome[i]` says what became of
    trace frame i, `arrival[i]` when its end-of-frame passed (µs on the clock)."""

    def __init__(self, clock, bitrate=500_000, spi_hz=10_000_000):
        if 1_000_000 % bitrate:
            raise ValueError("bit rate must divide 1 Mbit/s (whole µs per bit)")
        self.clock = clock
        self.bitrate = bitrate
        self._us_per_bit = 1_000_000 // bitrate
        self.spi = _SPI(self, spi_hz)
        self.cs = _CS(self)
        self.int_pin = Pin(1)
        self.regs = bytearray(128)
        self._ns = 0  # SPI time not yet moved onto the clock (below 1 µs)
        self._active = False
        self._op = -1
        self._pos = 0
        self._addr = 0
        self._mask = 0
        self.frames = ()
        self.outcome = bytearray(0)
        self.arrival = []
        self.next_at = -1
        self._i = 0
        self.lost = 0  # frames dropped by overflow
        self.overflows = 0  # times an overflow flag went from clear to set
        self.received = 0
        clock._chips.append(self)
        self._reset()

    # ------------------------------------------------------------ trace feed
    def feed(self, frames, start=0, speed_num=1, speed_den=1):
        """frames: [(t_us, id, flags, data)] (Writer.append_can flags; t from the trace's
        start), arriving from clock time `start` at t x speed_num / speed_den."""
        self.frames = frames
        self._start = start
        self._num = speed_num
        self._den = speed_den
        n = len(frames)
        self.outcome = bytearray(n)
        self.arrival = [0] * n
        self._i = 0
        self._busy_until = start
        self.next_at = self._arrival_of(0) if n else -1

    def frame_us(self, i):
        _, cid, fl, data = self.frames[i]
        return frame_bits(fl & 1, len(data), fl & 2) * self._us_per_bit

    def _arrival_of(self, i):
        at = self._start + self.frames[i][0] * self._num // self._den
        earliest = self._busy_until + self.frame_us(i)
        return at if at > earliest else earliest

    def _arrive(self):
        i = self._i
        at = self.next_at
        self.arrival[i] = at
        self._busy_until = at
        self._i = i + 1
        self.next_at = self._arrival_of(i + 1) if i + 1 < len(self.frames) else -1
        _, cid, fl, data = self.frames[i]
        self.outcome[i] = self._receive(cid, fl, data)

    def _receive(self, cid, fl, data):
        r = self.regs
        mode = r[_CANSTAT] >> 5
        if mode != 0 and mode != 3:  # normal or listen-only receive; sleep/config/loopback do not
            return OFFLINE
        if fl & 0x0C:  # error frame, CAN FD
            return UNRECEIVABLE
        ext = fl & 1
        if ext:
            v = cid & 0x1FFFFFFF
        else:  # standard frames: EID15:0 of filters/masks meet data bytes 0 and 1
            v = (cid & 0x7FF) << 18 | (data[0] << 8 if len(data) > 0 else 0) | (data[1] if len(data) > 1 else 0)
        intf = r[_CANINTF]
        if r[_RXB0CTRL] & 0x60 == 0x60 or self._hit(0, v, ext) >= 0:
            if not intf & 1:
                return self._load(0, cid, fl, data, self._hit(0, v, ext))
            if r[_RXB0CTRL] & 0x04:  # BUKT: roll over into RXB1, whatever its filters
                if not intf & 2:
                    return self._load(1, cid, fl, data, self._hit(0, v, ext))
                return self._overflow(0x80)
            return self._overflow(0x40)
        if r[_RXB1CTRL] & 0x60 == 0x60 or self._hit(1, v, ext) >= 0:
            if not intf & 2:
                return self._load(1, cid, fl, data, self._hit(1, v, ext))
            return self._overflow(0x80)
        return FILTERED

    def _hit(self, buf, v, ext):
        """The first filter of buffer `buf` accepting v (register space), or -1."""
        r = self.regs
        m = self._reg_value(_MASKS[buf])
        if not ext:
            m &= ~0x30000  # EID17:16 have no data bits to meet
        for k in range(0 if buf == 0 else 2, 2 if buf == 0 else 6):  # RXF0-1 or RXF2-5
            a = _FILTERS[k]
            if (r[a + 1] >> 3 & 1) != ext:  # EXIDE: a filter takes one format
                continue
            f = self._reg_value(a)
            if not ext:
                f &= ~0x30000
            if (v ^ f) & m == 0:
                return k
        return -1

    def _reg_value(self, a):
        r = self.regs
        return r[a] << 21 | (r[a + 1] & 0xE0) << 13 | (r[a + 1] & 3) << 16 | r[a + 2] << 8 | r[a + 3]

    def _load(self, buf, cid, fl, data, hit):
        r = self.regs
        b = _RXB_BASE[buf]
        n = len(data)
        remote = fl & 2
        if fl & 1:
            r[b] = cid >> 21 & 0xFF
            r[b + 1] = (cid >> 13 & 0xE0) | 0x08 | (cid >> 16 & 3)
            r[b + 2] = cid >> 8 & 0xFF
            r[b + 3] = cid & 0xFF
            r[b + 4] = (0x40 if remote else 0) | (0 if remote else n)
        else:
            r[b] = cid >> 3 & 0xFF
            r[b + 1] = (cid & 7) << 5 | (0x10 if remote else 0)
            r[b + 2] = 0
            r[b + 3] = 0
            r[b + 4] = 0 if remote else n
        for j in range(0 if remote else n):
            r[b + 5 + j] = data[j]
        ctrl = b - 1
        if buf == 0:  # FILHIT0, RXRTR
            r[ctrl] = (r[ctrl] & 0x64) | (0x08 if remote else 0) | (1 if hit == 1 else 0)
        else:  # FILHIT2:0 (0/1 after a rollover from RXB0)
            r[ctrl] = (r[ctrl] & 0x60) | (0x08 if remote else 0) | (hit if hit >= 0 else 0)
        r[_CANINTF] |= 1 << buf
        self.received += 1
        self._update_int()
        return RECEIVED

    def _overflow(self, bit):
        r = self.regs
        self.lost += 1
        if not r[_EFLG] & bit:
            self.overflows += 1
        r[_EFLG] |= bit
        r[_CANINTF] |= 0x20  # ERRIF: an EFLG condition
        self._update_int()
        return LOST

    def _update_int(self):
        r = self.regs
        self.int_pin._drive(0 if r[_CANINTF] & r[_CANINTE] else 1)

    # ------------------------------------------------------------ diagnostics a test sets
    def set_errors(self, tec, rec):
        r = self.regs
        r[_TEC] = tec
        r[_REC] = rec
        e = r[_EFLG] & 0xC0
        e |= (0x20 if tec >= 255 else 0) | (0x10 if tec >= 128 else 0) | (0x08 if rec >= 128 else 0)
        e |= (0x04 if tec >= 96 else 0) | (0x02 if rec >= 96 else 0) | (0x01 if tec >= 96 or rec >= 96 else 0)
        r[_EFLG] = e

    # ------------------------------------------------------------ SPI side
    def _spend(self, ns):
        ns += self._ns
        us = ns // 1000
        self._ns = ns - us * 1000
        if us:
            self.clock.advance(us)

    def _reset(self):
        r = self.regs
        for i in range(128):
            r[i] = 0
        r[_CANCTRL] = 0x87  # REQOP configuration, CLKEN, CLKPRE /8
        r[_CANSTAT] = 0x80
        self._update_int()

    def _begin(self):
        self._active = True
        self._op = -1
        self._pos = 0

    def _end(self):
        op = self._op
        self._active = False
        self._op = -1
        if op & 0xF9 == 0x90:  # READ RX BUFFER: releasing CS clears the buffer's RXnIF
            self.regs[_CANINTF] &= ~(1 if op & 0x04 == 0 else 2)
            self._update_int()

    def _rx_status(self):
        r = self.regs
        f = r[_CANINTF] & 3
        if not f:
            return 0
        buf = 0 if f & 1 else 1
        b = _RXB_BASE[buf]
        ext = r[b + 1] >> 3 & 1
        remote = (r[b + 4] >> 6 & 1) if ext else (r[b + 1] >> 4 & 1)
        hit = r[_RXB0CTRL] & 1 if buf == 0 else r[_RXB1CTRL] & 7
        return f << 6 | ext << 4 | remote << 3 | hit

    def _read_status(self):
        r = self.regs
        i = r[_CANINTF]
        return ((i & 1) | (i >> 1 & 1) << 1 | (r[0x30] >> 3 & 1) << 2 | (i >> 2 & 1) << 3
                | (r[0x40] >> 3 & 1) << 4 | (i >> 3 & 1) << 5 | (r[0x50] >> 3 & 1) << 6 | (i >> 4 & 1) << 7)

    def _byte(self, b):
        """One byte of the current transaction in; the byte the chip drives on SO out."""
        if not self._active:
            return 0xFF  # CS high: SO is high impedance
        pos = self._pos
        self._pos = pos + 1
        if pos == 0:
            self._op = b
            if b == 0xC0:
                self._reset()
            elif b & 0xF9 == 0x90:
                self._addr = _READ_RXB_ADDR[b >> 1 & 3]
            elif 0x40 <= b <= 0x45:
                self._addr = _LOAD_TX_ADDR[b & 7]
            elif b & 0xF8 == 0x80 and b & 7:  # RTS: flag TXREQ (nothing is transmitted)
                for k in range(3):
                    if b >> k & 1:
                        self.regs[0x30 + 0x10 * k] |= 0x08
            return 0
        op = self._op
        if op == 0x03 or op == 0x02 or op == 0x05:
            if pos == 1:
                self._addr = b & 0x7F
                return 0
            a = self._addr
            if op == 0x03:
                self._addr = (a + 1) & 0x7F
                return self._read(a)
            if op == 0x02:
                self._addr = (a + 1) & 0x7F
                self._write(a, b)
                return 0
            if pos == 2:
                self._mask = b
            elif pos == 3:
                m = self._mask
                self._write(a, (self._read(a) & ~m) | (b & m))
            return 0
        if op & 0xF9 == 0x90:
            a = self._addr
            self._addr = (a + 1) & 0x7F
            return self.regs[a]
        if 0x40 <= op <= 0x45:
            a = self._addr
            self._addr = (a + 1) & 0x7F
            self.regs[a] = b
            return 0
        if op == 0xB0:
            return self._rx_status()
        if op == 0xA0:
            return self._read_status()
        return 0

    def _read(self, a):
        if a & 0x0F == 0x0E:  # CANSTAT and CANCTRL appear at the end of every row
            return self.regs[_CANSTAT]
        if a & 0x0F == 0x0F:
            return self.regs[_CANCTRL]
        return self.regs[a]

    def _write(self, a, v):
        r = self.regs
        low = a & 0x0F
        if low == 0x0E or a == _TEC or a == _REC:
            return  # read-only
        if low == 0x0F:
            r[_CANCTRL] = v
            r[_CANSTAT] = (r[_CANSTAT] & 0x1F) | (v & 0xE0)  # the mode changes at once (no bus-idle wait)
            return
        config = r[_CANSTAT] & 0xE0 == 0x80
        if a < 0x0E or 0x10 <= a < 0x1C or 0x20 <= a <= 0x2A:  # filters, masks, CNF1-3, TXRTSCTRL
            if config:
                r[a] = v
            return
        if a == _EFLG:  # only the overflow flags are writable
            r[a] = (r[a] & 0x3F) | (v & 0xC0)
            return
        if a == _RXB0CTRL:
            r[a] = (r[a] & 0x0B) | (v & 0x64)
            return
        if a == _RXB1CTRL:
            r[a] = (r[a] & 0x0F) | (v & 0x60)
            return
        r[a] = v
        if a == _CANINTF or a == _CANINTE:
            self._update_int()

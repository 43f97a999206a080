"""A `machine` stand-in for running a board profile off hardware (tests:
sys.modules["machine"] = this module before main.py is imported).

Pin: value(), on()/off(), irq(handler, trigger); an input's level can be
scripted against the bus clock (`script_pin`). CAN: the machine.CAN API of
MicroPython 1.28 (recv(list), get_counters(list), set_filters, state) fed from
a trace at its own timing: a frame arrives at its trace time on the sim
clock, into a receive FIFO of `fifo` frames; one arriving while it is full is
lost and counted in rx_overruns, as bxCAN loses it. `lost` marks the
trace frames lost (1 per index), for tests. SDCard: boards/simparts/sdcard.py."""

try:
    from time import ticks_diff, ticks_us
except ImportError:  # CPython
    import time as _t

    def ticks_us():
        return (_t.monotonic_ns() // 1000) & ((1 << 30) - 1)

    def ticks_diff(a, b):
        return ((a - b + (1 << 29)) & ((1 << 30) - 1)) - (1 << 29)

_T0 = [ticks_us()]
SDCard = None  # the test sets the card: a boards/simparts/sdcard.py SDCard
_PINS = {}  # pin id -> function(elapsed µs) -> level
_DEVS = {}  # pin id or ("spi", bus) -> the simulated part's own pin / SPI (an MCP2515Chip's)
_SYNC = [None]  # called before a part is touched: lets a part's clock catch up with real time


def attach(key, dev):
    """Route Pin(key) / SPI(bus) (key ("spi", bus)) to a part's object."""
    _DEVS[key] = dev


def on_touch(fn):
    _SYNC[0] = fn


def _sync():
    if _SYNC[0] is not None:
        _SYNC[0]()


def elapsed_us():
    return ticks_diff(ticks_us(), _T0[0])


def script_pin(pid, fn):
    _PINS[pid] = fn


class Pin:
    IN = 0
    OUT = 1
    PULL_UP = 1
    IRQ_FALLING = 4
    IRQ_RISING = 8

    def __init__(self, pid, mode=IN, pull=None, value=None):
        self.id = pid
        self.v = value or 0
        self.handler = None
        self.dev = _DEVS.get(pid)
        if self.dev is not None and value is not None:
            self.dev.value(value)

    def value(self, v=None):
        if self.dev is not None:
            _sync()
            return self.dev.value(v)
        if v is None:
            fn = _PINS.get(self.id)
            if fn is not None:
                return fn(elapsed_us())
            return self.v
        self.v = v

    def __call__(self, v=None):
        return self.value(v)

    def on(self):
        self.value(1)

    def off(self):
        self.value(0)

    def irq(self, handler=None, trigger=IRQ_FALLING, hard=False):
        self.handler = handler
        if self.dev is not None:
            self.dev.irq(handler, trigger, hard)


class SPI:
    """SPI(bus, baudrate=..., sck=, mosi=, miso=) delegating to the attached part."""

    def __init__(self, bus, baudrate=1000000, **kw):
        self.dev = _DEVS.get(("spi", bus))

    def write(self, buf):
        _sync()
        return self.dev.write(buf)

    def readinto(self, buf, write=0):
        _sync()
        return self.dev.readinto(buf, write)

    def write_readinto(self, wbuf, rbuf):
        _sync()
        return self.dev.write_readinto(wbuf, rbuf)


SoftSPI = SPI


class CAN:
    MODE_NORMAL = 0
    MODE_SLEEP = 1
    MODE_LOOPBACK = 2
    MODE_SILENT = 3
    FLAG_RTR = 1
    FLAG_EXT_ID = 2
    RECV_ERR_FULL = 1
    RECV_ERR_OVERRUN = 2
    trace = []  # [(µs from start, id, logb flags, data)]: set by the test
    fifo = 3

    def __init__(self, bus, bitrate, mode=0, **kw):
        self.bus = bus
        self.bitrate = bitrate
        self.mode = mode
        self.next = 0  # next trace frame to arrive
        self.ring = [0] * _CAN.fifo  # trace indexes in the FIFO (a ring: nothing allocated per frame)
        self.head = 0
        self.n = 0
        self.overruns = 0
        self.lost = bytearray(len(_CAN.trace))  # 1 where the trace frame was lost
        buf = bytearray(8)
        self.views = [memoryview(buf)[:k] for k in range(9)]  # recv's memoryview of each length
        self.t0 = elapsed_us()

    def _arrive(self):
        tr = _CAN.trace
        now = elapsed_us() - self.t0
        while self.next < len(tr) and tr[self.next][0] <= now:
            if self.n < _CAN.fifo:
                self.ring[(self.head + self.n) % _CAN.fifo] = self.next
                self.n += 1
            else:
                self.overruns += 1
                self.lost[self.next] = 1
                self._dropped()
            self.next += 1

    def _dropped(self):
        pass  # the controller's overrun interrupt (pyb.CAN's rxcallback: boards/simparts/pyb.py)

    def done(self):
        return self.next >= len(_CAN.trace) and not self.n

    def set_filters(self, filters):
        self.filters = filters

    def recv(self, res=None):
        self._arrive()
        if not self.n:
            return None
        _, cid, fl, data = _CAN.trace[self.ring[self.head]]
        self.head = (self.head + 1) % _CAN.fifo
        self.n -= 1
        if res is None:
            res = [0, None, 0, 0]
        # the real recv shortens the list's memoryview in place; one view per length here
        mv = res[1] = self.views[len(data)]
        mv[:] = data
        res[0] = cid
        res[2] = (_CAN.FLAG_EXT_ID if fl & 1 else 0) | (_CAN.FLAG_RTR if fl & 2 else 0)
        res[3] = 0
        return res

    def get_counters(self, lst=None):
        lst = lst if lst is not None else [0] * 8
        lst[0] = lst[1] = 0
        lst[6] = self.n
        lst[7] = self.overruns
        return lst

    def state(self):
        return 1

    def deinit(self):
        self.next = len(_CAN.trace)


_CAN = CAN  # the methods' own name for it: a test may del machine.CAN (a port without it)

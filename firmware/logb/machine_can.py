"""CAN sources for the board loop (logb.board) on the controllers MicroPython
drives itself: `machine.CAN` (stm32, MicroPython 1.28) and `pyb.CAN` (stm32
before 1.28, and CAN FD on H7).

Contract (shared with logb.mcp2515): start(), pump(w) -> frames moved,
stop(), status() -> dict. pump() receives into one preallocated result list
(`recv` reuses it and resizes its memoryview in place: no allocation per
frame); new losses go to w.lost(controller=n). Timestamps are taken when
pump() reads the frame (neither API gives the receive time).

Losses: machine.CAN counts every frame its FIFO dropped (get_counters()
rx_overruns, read into a preallocated list). pyb.CAN counts nothing
(info() holds TEC/REC, error-state entries and pending counts, no
overruns); it calls rxcallback(fifo, fn) with reason 2 on each FIFO overrun
interrupt, which PybCAN counts: one per lost frame while that interrupt is
served between frames, fewer (a lower bound) when interrupts are held off.
"""

try:
    from micropython import const
except ImportError:  # CPython
    from ._const import const

from ._port import ticks_us

_FLAG_RTR = const(1)  # machine.CAN.FLAG_RTR
_FLAG_EXT = const(2)  # machine.CAN.FLAG_EXT_ID
_MODE_NORMAL = const(0)  # machine.CAN.MODE_NORMAL
_MODE_SILENT = const(3)  # machine.CAN.MODE_SILENT: listen-only, no ACK
_OVERRUNS = const(7)  # get_counters() index of rx_overruns
_LOST = const(2)  # pyb.CAN rxcallback reason: a message lost, the FIFO full


def _pumped(src, w, n, lost):
    """The end of a pump() that moved n frames: the losses since the last one (lost:
    the running count, src.seen: the part already reported) go to w. Returns n."""
    k = lost - src.seen
    if k:
        src.seen = lost
        w.lost(controller=k)
    src.frames += n
    return n


class MachineCAN:
    """machine.CAN(bus, bitrate, mode=...) as a board-loop CAN source."""

    def __init__(self, can_cls, bus=1, bitrate=500000, listen_only=True, filters=None, ticks=ticks_us):
        self.cls = can_cls
        self.bus = bus
        self.bitrate = bitrate
        self.mode = _MODE_SILENT if listen_only else _MODE_NORMAL
        self.filters = filters
        self.ticks = ticks
        self.can = None
        self.res = None
        self.cnt = [0] * 8
        self.seen = 0  # overruns already counted
        self.frames = 0

    def start(self):
        can = self.can = self.cls(self.bus, self.bitrate, mode=self.mode)
        f = self.filters
        can.set_filters(None if f is None else [(i, m, _FLAG_EXT if e else 0) for i, m, e in f])
        self.res = [0, memoryview(bytearray(8)), 0, 0]
        can.get_counters(self.cnt)
        self.seen = self.cnt[_OVERRUNS]

    def pump(self, w):
        can = self.can
        res = self.res
        tk = self.ticks
        n = 0
        while can.recv(res) is not None:  # type: ignore[union-attr]
            fl = res[2]  # type: ignore[index]
            # logb flags: bit 0 extended, bit 1 remote (machine.CAN: bit 1 extended, bit 0 RTR)
            w.append_can(tk(), res[0], res[1], (1 if fl & _FLAG_EXT else 0) | (2 if fl & _FLAG_RTR else 0))  # type: ignore[index]
            n += 1
        can.get_counters(self.cnt)  # type: ignore[union-attr]
        return _pumped(self, w, n, self.cnt[_OVERRUNS])

    def stop(self):
        if self.can is not None:
            self.can.deinit()

    def status(self):
        c = self.can.get_counters()  # type: ignore[union-attr]
        return {"tec": c[0], "rec": c[1], "overflows": c[_OVERRUNS], "frames": self.frames}


class PybCAN:
    """pyb.CAN(bus, mode, baudrate=...) as a board-loop CAN source, on one FIFO.
    filters: (id, mask, extended) each to a MASK32 bank; None: one bank with a
    zero mask (no bit compared: every frame, standard or extended)."""

    def __init__(self, can_cls, bus=1, bitrate=500000, listen_only=True, filters=None, ticks=ticks_us, fifo=0):
        self.cls = can_cls
        self.bus = bus
        self.bitrate = bitrate
        self.listen_only = listen_only
        self.filters = filters
        self.ticks = ticks
        self.fifo = fifo
        self.can = None
        self.lst = [0, False, False, 0, memoryview(bytearray(8))]
        self.overflows = 0  # rxcallback reason-2 calls (an IRQ: an int add, nothing allocated)
        self.seen = 0  # overflows already counted
        self.frames = 0

    def _cb(self, bus, reason):
        if reason == _LOST:
            self.overflows += 1

    def start(self):
        c = self.cls
        can = self.can = c(self.bus, c.SILENT if self.listen_only else c.NORMAL, baudrate=self.bitrate)
        for bank, (i, m, e) in enumerate(self.filters or [(0, 0, False)]):
            can.setfilter(bank, c.MASK32, self.fifo, (i, m), extframe=e)
        self.seen = self.overflows
        can.rxcallback(self.fifo, self._cb)

    def pump(self, w):
        can = self.can
        lst = self.lst
        fifo = self.fifo
        tk = self.ticks
        n = 0
        while can.any(fifo):  # type: ignore[union-attr]
            can.recv(fifo, lst)  # type: ignore[union-attr]
            w.append_can(tk(), lst[0], lst[4], (1 if lst[1] else 0) | (2 if lst[2] else 0))
            n += 1
        return _pumped(self, w, n, self.overflows)

    def stop(self):
        if self.can is not None:
            self.can.rxcallback(self.fifo, None)
            self.can.deinit()

    def status(self):
        i = self.can.info()  # type: ignore[union-attr]
        return {"tec": i[0], "rec": i[1], "warning": i[2], "passive": i[3], "bus_off": i[4],
                "overflows": self.overflows, "frames": self.frames}

"""CAN sources for the board loop (logb.board) on the controllers MicroPython
drives itself: `machine.CAN` (stm32, MicroPython 1.28) and `pyb.CAN`.

Contract (shared with logb.mcp2515): start(), pump(w) -> frames moved,
stop(), status() -> dict. pump() receives into one preallocated result list
(`recv(list)` reuses it and its memoryview: no allocation per frame) and
reads the controller's overrun counter through `get_counters(list)` into a
preallocated list too; new overruns go to w.lost(controller=n).
Timestamps are taken when pump() reads the frame (machine.CAN gives none).
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
        while can.recv(res) is not None:
            fl = res[2]
            # logb flags: bit 0 extended, bit 1 remote (machine.CAN: bit 1 extended, bit 0 RTR)
            w.append_can(tk(), res[0], res[1], (1 if fl & _FLAG_EXT else 0) | (2 if fl & _FLAG_RTR else 0))
            n += 1
        can.get_counters(self.cnt)
        k = self.cnt[_OVERRUNS] - self.seen
        if k:
            self.seen += k
            w.lost(controller=k)
        self.frames += n
        return n

    def stop(self):
        if self.can is not None:
            self.can.deinit()

    def status(self):
        c = self.can.get_counters()
        return {"tec": c[0], "rec": c[1], "overflows": c[_OVERRUNS], "frames": self.frames}

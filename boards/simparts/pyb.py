"""A `pyb` stand-in with pyb.CAN (classic bxCAN, as on stm32 F4/F7) fed from
the trace of boards/simparts/machine.py's CAN (the same FIFO and loss model):
CAN(bus, mode, baudrate=...), setfilter, any(fifo), recv(fifo, list) into the
caller's list, info(list), rxcallback(fifo, fn) called with
reason 2 for every frame the full FIFO drops (the FOVR interrupt, served at
once here). Tests: sys.modules["pyb"] = this module."""

import machine

_CAN = machine.CAN


class CAN(_CAN):
    NORMAL = 0
    LOOPBACK = 1
    SILENT = 2
    SILENT_LOOPBACK = 3
    LIST16 = 0
    MASK16 = 1
    LIST32 = 2
    MASK32 = 3

    def __init__(self, bus, mode=NORMAL, baudrate=0, **kw):
        super().__init__(bus, baudrate, mode=mode)
        self.banks = {}
        self.cb = None
        self.res = [0, None, 0, 0]

    def setfilter(self, bank, mode, fifo, params, rtr=None, extframe=False):
        self.banks[bank] = (mode, fifo, tuple(params), extframe)

    def rxcallback(self, fifo, fn):
        self.cb = fn

    def _dropped(self):
        if self.cb is not None:
            self.cb(self, 2)

    def any(self, fifo):
        self._arrive()
        return self.n > 0

    def recv(self, fifo, lst=None, timeout=5000):
        res = _CAN.recv(self, self.res)
        if res is None:
            raise OSError(116)  # ETIMEDOUT: the real recv waits up to timeout ms
        if lst is None:
            lst = [0, False, False, 0, bytes(res[1])]
        else:
            # the real recv resizes the list's memoryview in place; Python cannot: a preallocated
            # view of the frame's length takes its place
            lst[4] = res[1]
        lst[0] = res[0]
        lst[1] = bool(res[2] & _CAN.FLAG_EXT_ID)
        lst[2] = bool(res[2] & _CAN.FLAG_RTR)
        lst[3] = 0
        return lst

    def info(self, lst=None):
        lst = lst if lst is not None else [0] * 8
        for i in range(6):
            lst[i] = 0
        lst[6] = self.n
        lst[7] = 0
        return lst

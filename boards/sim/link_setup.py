# The serial link on the simulated board (issue 6, docs/LINK.md). host.mjs
# runs this before main.py when boards/sim/run.py is given --serial TTY: it
# hooks firmware/logb/link.py into the recording loop without changing
# main.py — every Writer.poll() also polls the link, so pulls and tails are
# served while the writer records — and link_serve.py, run after main.py,
# keeps serving once the recording is closed.
#   SD card as the link sees it: the --files directory (default: the
#   directory of --sd); the --sd file is the active recording, readable up
#   to its last flush (simhw.sd_durable(): a frame boundary).
#   Settings: link_chunk (payload bytes per DATA message, default 2048),
#   link_crc = native (the JS stand-in for a native CRC, as the firmware
#   benchmark uses) | pure (the firmware's pure-Python CRC), link_idle_s.
import json

import simhw
import uctypes

import logb
from logb import crc as _crc
from logb import link


class SimPort:
    """The board's USB serial port: one end of a pseudo-terminal pair."""

    def readinto(self, buf, off, n):
        k = simhw.serial_read(uctypes.addressof(buf) + off, n)
        if k < 0:
            raise OSError(5)
        return k

    def write(self, buf, off, n):
        k = simhw.serial_write(uctypes.addressof(buf) + off, n)
        if k < 0:
            raise OSError(5)
        return k


class SimStorage:
    """The recordings on the simulated SD card (host files)."""

    def __init__(self):
        self.on = True
        self.name = simhw.sd_name()

    def names(self):
        return json.loads(simhw.files_list())

    def active(self, name):
        return self.on and name == self.name

    def recording(self):
        return self.name if self.on else ""

    def size(self, name):
        if self.active(name):
            return int(simhw.sd_durable())
        return int(simhw.files_size(name))

    def open(self, name):
        if int(simhw.files_size(name)) < 0:
            raise OSError(2)
        return name

    def close(self, h):
        simhw.files_close(h)

    def readinto(self, h, pos, buf, off, n):
        k = simhw.files_read(h, str(pos), uctypes.addressof(buf) + off, n)
        if k < 0:
            raise OSError(5)
        return k

    def remove(self, name):
        if simhw.files_remove(name) < 0:
            raise OSError(5)


def _native_crc(buf, start, end, st):
    simhw.crc32c_update(uctypes.addressof(buf) + start, end - start, uctypes.addressof(st))


def _arg(key, default):
    v = simhw.arg(key, None)
    return default if v is None else type(default)(v)


LINK_STORAGE = SimStorage()
LINK = link.Link(SimPort(), LINK_STORAGE, device=_arg("device", "sim-logger"), firmware=logb.FIRMWARE,
                 chunk=_arg("link_chunk", 2048), idle_s=_arg("link_idle_s", 10),
                 crc=_native_crc if _arg("link_crc", "native") == "native" else _crc.update)
_REALTIME = simhw.realtime()
_poll = logb.Writer.poll
LINK_STATS = {"polls": 0, "max_poll_us": 0, "busy_us": 0}  # the link's share of the recording loop


def _poll_with_link(self):
    _poll(self)
    t = simhw.perf_us()
    busy = LINK.poll()
    dt = (simhw.perf_us() - t) & 0x3FFFFFFF
    st = LINK_STATS
    st["polls"] += 1
    if busy:
        st["busy_us"] += dt
    if dt > st["max_poll_us"]:
        st["max_poll_us"] = dt
    if not busy and _REALTIME and not LINK.sending:
        simhw.sleep_ms(1)  # idle at real time: let the host have the CPU


logb.Writer.poll = _poll_with_link

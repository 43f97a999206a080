"""The board main loop, written once for every profile (boards/*/main.py).

    from logb import board
    board.run(Profile)      # Profile declares parts; this module is the logic

Profile attributes (functions are called once, at start):
  can()            -> list of CAN sources (logb.mcp2515.MCP2515, logb.machine_can.MachineCAN / PybCAN)
  storage()        -> the folder recordings go to, mounted (board.mount() helps)
  led(), button()  -> machine.Pin or None (button: pressed reads 0)
  serial()         -> a logb.link port (StdioPort, StreamPort) or None: serves `logb pull`
                      (logb.link is imported only then)
  sensors(w)       -> optional: a function step(now) called every loop
  CONFIG           -> the LBCF config path (`logb dbc compile`)
  DEVICE, WRITER   -> logb.device, Writer keyword settings
  ROTATE_BYTES     -> start a new file past this size (default 64 MiB)

Files are ROOT/rec-00001.logb, the next free number. A short button press
closes the recording and starts the next file; holding it HOLD_MS closes the
recording and returns from run() (safe to remove the card: LED off).
The loop itself allocates nothing (heap locked on MicroPython); a new file
unlocks the heap while it opens and declares the next writer, and the serial
link runs unlocked (its requests are parsed on the heap: a pull can cost a
garbage collection in the loop).
"""

from . import Writer
from ._port import gc_collect, ticks_add, ticks_diff, ticks_us

try:
    from micropython import heap_lock, heap_unlock
except ImportError:  # CPython
    def heap_lock():  # type: ignore[misc]
        pass

    def heap_unlock():  # type: ignore[misc]
        pass

HOLD_MS = 1500
_BLINK_US = 500000


def mount(bdev, root="/sd", fs="fat"):
    """Mount a block device (sdcard.SDCard, pyb.SDCard) at root: FAT as cards
    come, or littlefs ("lfs", power-safe; format it once with vfs.VfsLfs2.mkfs)."""
    import vfs

    vfs.mount(vfs.VfsLfs2(bdev) if fs == "lfs" else vfs.VfsFat(bdev), root)
    return root


def mcp2515_sd(pins, machine, sdcard):
    """The Profile of a board with an MCP2515 and an SD card, each on its own SPI
    bus: the boards differ only in their pins module (boards/*-mcp2515/pins.py).
    machine and sdcard (micropython-lib) come from main.py: logb is type-checked
    without them."""
    from .mcp2515 import MCP2515

    SPI = machine.SPI
    Pin = machine.Pin

    class Profile:
        CONFIG = "/config.lbcf"
        DEVICE = pins.DEVICE
        WRITER = {"flush_ms": 1000}

        @staticmethod
        def can():
            spi = SPI(pins.CAN_SPI, baudrate=10_000_000, sck=Pin(pins.CAN_SCK), mosi=Pin(pins.CAN_MOSI),
                      miso=Pin(pins.CAN_MISO))
            return [MCP2515(spi, Pin(pins.CAN_CS, Pin.OUT, value=1), Pin(pins.CAN_INT, Pin.IN, Pin.PULL_UP),
                            bitrate=pins.BITRATE, osc_hz=pins.OSC_HZ)]

        @staticmethod
        def storage():
            spi = SPI(pins.SD_SPI, baudrate=1_000_000, sck=Pin(pins.SD_SCK), mosi=Pin(pins.SD_MOSI),
                      miso=Pin(pins.SD_MISO))
            return mount(sdcard.SDCard(spi, Pin(pins.SD_CS, Pin.OUT, value=1)), "/sd")

        @staticmethod
        def led():
            return Pin(pins.LED, Pin.OUT)

        @staticmethod
        def button():
            return Pin(pins.BUTTON, Pin.IN, Pin.PULL_UP)

    return Profile


def next_name(root, prefix="rec-", suffix=".logb"):
    import os

    top = 0
    for n in os.listdir(root):
        if n.startswith(prefix) and n.endswith(suffix):
            try:
                top = max(top, int(n[len(prefix):-len(suffix)]))
            except ValueError:
                pass
    return "%s%05d%s" % (prefix, top + 1, suffix)


class Board:
    def __init__(self, profile):
        self.p = profile
        self.root = profile.storage().rstrip("/")
        self.sources = profile.can()
        self.led = profile.led() if hasattr(profile, "led") else None
        self.btn = profile.button() if hasattr(profile, "button") else None
        port = profile.serial() if hasattr(profile, "serial") else None
        self.storage = None
        self.link = None
        if port is not None:  # logb.link only then: ~9 KB of heap a board without a link keeps
            from . import link

            self.storage = link.VfsStorage(self.root)
            self.link = link.Link(port, self.storage, device=getattr(profile, "DEVICE", ""))
        self.limit = getattr(profile, "ROTATE_BYTES", 64 << 20)
        self.w = None
        self.rec = None
        self.names = []  # the files this run recorded
        self.step = None

    def open(self):
        gc_collect()
        p = self.p
        name = next_name(self.root)
        self.rec = open(self.root + "/" + name, "wb")
        if self.link is not None:  # the link serves the growing file up to its last flush
            from .link import Recorder

            self.rec = self.storage.recorder = Recorder(self.rec, name)  # type: ignore[union-attr]
        self.w = w = Writer(self.rec, device=getattr(p, "DEVICE", ""), **getattr(p, "WRITER", {}))
        w.load_config(p.CONFIG)
        self.step = p.sensors(w) if hasattr(p, "sensors") else None
        self.names.append(name)
        gc_collect()

    def close(self):
        for s in self.sources:
            s.pump(self.w)
        self.w.close()  # type: ignore[union-attr]
        self.rec.close()  # type: ignore[union-attr]
        self.w = None
        self.step = None  # it holds the writer's stream: the writer is freed before the next opens

    def next_file(self):
        """Close this recording and start the next (heap unlocked)."""
        self.close()
        self.open()

    def run(self):
        for s in self.sources:
            s.start()
        self.open()
        self.down = -1  # ticks when the button went down, -1: up
        self.blink = ticks_us()
        try:
            # the loop runs in its own frame, left before each new file: a stale slot of that frame's
            # stack (MicroPython scans it) would keep the old writer alive while the next is built
            while self._record():
                self.next_file()
        finally:
            if self.w is not None:
                self.close()
            for s in self.sources:
                s.stop()
            if self.led is not None:
                self.led.value(0)

    def _record(self):
        """Record into self.w with the heap locked; True: start the next file, False: stop."""
        w = self.w
        sources = self.sources
        link = self.link
        led = self.led
        btn = self.btn
        down = self.down
        blink = self.blink
        heap_lock()
        try:
            while True:
                for s in sources:
                    s.pump(w)
                now = ticks_us()
                if self.step is not None:
                    self.step(now)
                w.poll()  # type: ignore[union-attr]
                if link is not None:
                    # a request is parsed and a file opened on the heap (logb.link): unlocked while it
                    # runs; a pull streams from preallocated buffers
                    heap_unlock()
                    try:
                        link.poll()
                    finally:
                        heap_lock()
                if led is not None and ticks_diff(now, blink) >= 0:
                    led.value(not led.value())
                    blink = ticks_add(now, _BLINK_US)
                if btn is not None:
                    if not btn.value():
                        if down < 0:
                            down = now
                        elif ticks_diff(now, down) >= HOLD_MS * 1000:
                            return False
                    elif down >= 0:
                        down = -1
                        return True
                if w.position >= self.limit:  # type: ignore[union-attr]
                    return True
        finally:
            heap_unlock()
            self.down = down
            self.blink = blink


def run(profile):
    """Record until the button is held (or Ctrl-C); returns the Board."""
    b = Board(profile)
    b.run()
    return b

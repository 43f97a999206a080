# A board profile's main.py on the unix port against boards/simparts: argv = board folder, simparts
# folder, work folder (frames.bin, config.lbcf, sd.img: a FAT image; out/ gets the recordings).
# Button: a short press at 1.0 s of the trace (a new file), held from 0.3 s after its end (stop).
import json
import sys

import vfs

board_dir, parts, work = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, parts)
sys.path.insert(0, board_dir)
import machine  # noqa: E402  (boards/simparts/machine.py)
import sdcard  # noqa: E402

sys.modules["machine"] = machine
blob = open(work + "/frames.bin", "rb").read()
trace = []
p = 0
while p < len(blob):
    t = blob[p] | blob[p + 1] << 8 | blob[p + 2] << 16 | blob[p + 3] << 24
    cid = blob[p + 4] | blob[p + 5] << 8 | blob[p + 6] << 16 | blob[p + 7] << 24
    n = blob[p + 9]
    trace.append((t, cid, blob[p + 8], bytes(blob[p + 10:p + 10 + n])))
    p += 10 + n
machine.CAN.trace = trace
if sys.argv[4] == "pyb":  # a firmware with pyb.CAN and no machine.CAN
    import pyb

    sys.modules["pyb"] = pyb
    del machine.CAN
chip = None
if sys.argv[4] == "mcp2515":  # the MCP2515 profiles: the simulated chip on the CAN SPI bus, clocked by real time
    import time

    import mcp2515_chip

    pins = __import__("pins")
    clk = mcp2515_chip.Clock(0, period=time.ticks_add(0, -1) + 1)
    chip = mcp2515_chip.MCP2515Chip(clk, 500_000, 10_000_000)
    machine.attach(("spi", pins.CAN_SPI), chip.spi)
    machine.attach(pins.CAN_CS, chip.cs)
    machine.attach(pins.CAN_INT, chip.int_pin)
    chip.feed(trace, start=200000)

    def catch_up():
        d = machine.elapsed_us() - clk.now
        if d > 0:
            clk.advance(d)

    machine.on_touch(catch_up)
card = sdcard.SDCard(path=work + "/sd.img")
vfs.VfsFat.mkfs(card)  # a fresh card, formatted as cards come
machine.SDCard = sdcard.SDCard = lambda *a, **k: card  # the port's SD class or micropython-lib's over SPI
end = trace[-1][0]
pins = __import__("pins")
machine.script_pin(pins.BUTTON, lambda us: 0 if 1000000 <= us < 1200000 or us >= end + 300000 else 1)
from logb import board, machine_can, mcp2515  # noqa: E402,F401  (imported before / moves: sys.path is host paths)
import sdcard  # noqa: E402,F401,F811

main = open(board_dir + "/main.py").read()
# the device's root is the work folder: /config.lbcf is work/config.lbcf
vfs.umount("/")
vfs.mount(vfs.VfsPosix(work), "/")

runs = []
_run = board.run
board.run = lambda profile: runs.append(_run(profile))
exec(main, {"__name__": "__main__"})
b = runs[0]
if chip is None:
    can = b.sources[0].can
    lost = [i for i in range(len(trace)) if can.lost[i]]
    counted = can.overruns  # pyb: the rxcallback calls, one per frame dropped
else:
    lost = [i for i in range(len(trace)) if chip.outcome[i] != mcp2515_chip.RECEIVED]
    counted = chip.overflows  # the chip sets its overflow flag once per run of lost frames
for n in b.names:
    with open("/sd/" + n, "rb") as f, open("/out/" + n, "wb") as g:
        g.write(f.read())
print("RESULT " + json.dumps({"source": type(b.sources[0]).__name__, "files": b.names, "lost": lost,
                              "overruns": counted, "errors": b.w.errors if b.w else 0}))

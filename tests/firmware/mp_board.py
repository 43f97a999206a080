# A board profile's main.py on the unix port against boards/simparts: argv = board folder, simparts
# folder, work folder (frames.bin, config.lbcf, sd.img: a FAT image; out/ gets the recordings), CAN
# part (machine, pyb, mcp2515), and optionally a JSON file of what the test changes in the profile:
#   rotate: ROTATE_BYTES; fs: "lfs" (the card formatted and mounted as littlefs); sensor: a sensor
#   stream "coolant" stepped every 10 ms by the loop's sensor hook; tty: the serial link on that tty,
#   the recordings in work/sdp (a host folder, so the test sees them) and the loop stopped (button held)
#   once a host pulled something after the second file started and left link mode.
# Button: a short press at 1.0 s of the trace (a new file), held from 0.3 s after its end (stop).
import json
import sys

import vfs

board_dir, parts, work = sys.argv[1], sys.argv[2], sys.argv[3]
opts = json.load(open(sys.argv[5])) if len(sys.argv) > 5 else {}
MEM = {}  # opts "mem": live heap (after a collection) at each step


def mem(step):
    if opts.get("mem"):
        import gc

        gc.collect()
        MEM[step] = gc.mem_alloc()


mem("start")
sys.path.insert(0, parts)
sys.path.insert(0, board_dir)
import machine  # noqa: E402  (boards/simparts/machine.py)
import sdcard  # noqa: E402

sys.modules["machine"] = machine
mem("simparts")
blob = open(work + "/frames.bin", "rb").read()
trace = []
p = 0
while p < len(blob):
    t = blob[p] | blob[p + 1] << 8 | blob[p + 2] << 16 | blob[p + 3] << 24
    cid = blob[p + 4] | blob[p + 5] << 8 | blob[p + 6] << 16 | blob[p + 7] << 24
    n = blob[p + 9]
    trace.append((t, cid, blob[p + 8], bytes(blob[p + 10:p + 10 + n])))
    p += 10 + n
del blob
mem("trace")
machine.CAN.trace = trace
if sys.argv[4] == "pyb":  # a firmware with pyb.CAN and no machine.CAN
    import pyb

    sys.modules["pyb"] = pyb
    del machine.CAN
chip = None
import time  # noqa: E402

if sys.argv[4] == "mcp2515":  # the MCP2515 profiles: the simulated chip on the CAN SPI bus, clocked by real time
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
if opts.get("fs") == "lfs":
    vfs.VfsLfs2.mkfs(card)  # formatted once, as the README says
else:
    vfs.VfsFat.mkfs(card)  # a fresh card, formatted as cards come
machine.SDCard = sdcard.SDCard = lambda *a, **k: card  # the port's SD class or micropython-lib's over SPI
mem("parts")  # the simulation's share ends here: what follows is the board's
end = trace[-1][0]
pins = __import__("pins")
# what the profile imports, imported before / moves (sys.path holds host paths): the modules its board.json lists
for m in json.load(open(board_dir + "/board.json"))["lib"]:
    __import__(m[:-3].replace("/", "."))
if opts.get("sensor"):
    from logb import schema  # noqa: E402,F401  (add_sensor imports it)
if "tty" in opts:
    from logb import link  # noqa: E402,F401  (the board loop imports it for a serial link)
from logb import board  # noqa: E402

mem("logb")

B = [None]  # the Board
if "tty" in opts:
    import mp_board_tty  # noqa: E402

    port = mp_board_tty.TtyPort(opts["tty"])

    def pulled():
        ln = B[0].link
        return len(B[0].names) >= 2 and ln.requests > 0 and not ln.active

    machine.script_pin(pins.BUTTON, lambda us: 0 if 1000000 <= us < 1200000 or us >= end + 300000 and pulled()
                       else 1)
else:
    machine.script_pin(pins.BUTTON, lambda us: 0 if 1000000 <= us < 1200000 or us >= end + 300000 else 1)
if opts.get("fs") == "lfs":
    _mount = board.mount
    board.mount = lambda bdev, root="/sd", fs="fat": _mount(bdev, root, "lfs")
SENSED = [0, 0]  # records appended, next due (ticks)


def sensors(w):
    s = w.add_sensor("coolant", [("n", "I", ""), ("ok", "B", "")])

    def step(now):
        if time.ticks_diff(now, SENSED[1]) >= 0:
            s.append(now, SENSED[0], 1)
            SENSED[0] += 1
            SENSED[1] = time.ticks_add(now, 10000)
    return step


class _Board(board.Board):
    def __init__(self, profile):
        if "rotate" in opts:
            profile.ROTATE_BYTES = opts["rotate"]
        if opts.get("sensor"):
            SENSED[1] = time.ticks_us()
            profile.sensors = sensors
        if "tty" in opts:
            profile.serial = lambda: port
            profile.storage = lambda: "/sdp"
        B[0] = self
        super().__init__(profile)

    def open(self):
        super().open()
        mem("file%d" % len(self.names))  # the writer of each file declared


board.Board = _Board

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
mem("end")
chunk = bytearray(512)
for n in b.names:
    with open(b.root + "/" + n, "rb") as f, open("/out/" + n, "wb") as g:
        while True:
            k = f.readinto(chunk)
            if not k:
                break
            g.write(chunk if k == 512 else chunk[:k])
print("RESULT " + json.dumps({"source": type(b.sources[0]).__name__, "files": b.names, "lost": lost,
                              "sensed": SENSED[0], "mem": MEM, "requests": b.link.requests if b.link else 0,
                              "overruns": counted, "errors": b.w.errors if b.w else 0}))

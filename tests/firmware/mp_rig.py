# One boot of the bench rig's simulated logger (tools/rig.py, relay "sim"): the stm32 profile on the unix
# port, its SD card a FAT image in a host file that outlives the process (power cut: SIGKILL), the link on
# a tty. argv = board folder, simparts folder, work folder (frames.bin: the bus, config.lbcf, sd.img,
# progress: written here), tty. The card is formatted only when it holds no FAT yet (first power-on).
# The sensors hook writes the frames the writer took so far to work/progress whenever it changed (4 bytes,
# no allocation), so the rig knows what was appended when the power went, to within the last pass of
# the loop (a cut between a pump that sealed a frame and this write leaves the count short).
import struct
import sys

import vfs

board_dir, parts, work, tty = sys.argv[1:5]
sys.path.insert(0, parts)
sys.path.insert(0, board_dir)
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])  # mp_board_tty
import machine  # noqa: E402  (boards/simparts/machine.py)
import sdcard  # noqa: E402

sys.modules["machine"] = machine
blob = open(work + "/frames.bin", "rb").read()
trace = []
p = 0
while p < len(blob):
    t, cid, fl, n = struct.unpack_from("<IIBB", blob, p)
    trace.append((t, cid, fl, bytes(blob[p + 10:p + 10 + n])))
    p += 10 + n
del blob
machine.CAN.trace = trace
card = sdcard.SDCard(path=work + "/sd.img")
try:
    vfs.mount(vfs.VfsFat(card), "/probe")
    vfs.umount("/probe")
except OSError:
    vfs.VfsFat.mkfs(card)
machine.SDCard = sdcard.SDCard = lambda *a, **k: card
pins = __import__("pins")
import json  # noqa: E402

for m in json.load(open(board_dir + "/board.json"))["lib"]:
    __import__(m[:-3].replace("/", "."))
from logb import board, link  # noqa: E402,F401
import mp_board_tty  # noqa: E402

port = mp_board_tty.TtyPort(tty)
machine.script_pin(pins.BUTTON, lambda us: 1)  # never pressed: the power cut ends the recording
prog = open(work + "/progress", "wb")
pbuf = bytearray(4)
last = [-1]


class _Board(board.Board):
    def __init__(self, profile):
        profile.serial = lambda: port
        profile.sensors = self.sensors
        super().__init__(profile)

    def sensors(self, w):
        src = self.sources[0]

        def step(now):
            if src.frames != last[0]:
                last[0] = src.frames
                struct.pack_into("<I", pbuf, 0, src.frames)
                prog.seek(0)
                prog.write(pbuf)
        return step


board.Board = _Board
main = open(board_dir + "/main.py").read()
vfs.umount("/")
vfs.mount(vfs.VfsPosix(work), "/")
print("BOOT")
exec(main, {"__name__": "__main__"})

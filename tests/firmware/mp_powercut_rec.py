# The recording side of the filesystem power-cut study (tools/powercut_fs.py):
# `micropython mp_powercut_rec.py PARAMS.json`. Formats the image (FAT or
# littlefs) on mp_powercut_bdev.FileDevice, mounts it at /sd and records
# tests/firmware/scenario.py's feed of IN/frames.bin through the firmware
# writer into /sd/rec.logb (the file wrapped in link.Recorder, which notes the
# durable bytes at each flush). Prints "READY w" (block writes so far: the
# format's), then after every flush of the writer "D w records bytes": the
# block writes done, the records and bytes the writer has declared durable
# (every record of a sealed frame, every byte handed over, when flush()
# returns), and "DONE w errors" after close. With params "cut" the device stops the
# process at that block write (the image file is then the card after the cut).
import json
import sys

import vfs

P = json.load(open(sys.argv[1]))
sys.path.append(P["dir"])
import mp_powercut_bdev  # noqa: E402
import scenario  # noqa: E402
from logb.link import Recorder  # noqa: E402

dev = mp_powercut_bdev.FileDevice(P["image"], P["blocks"], P.get("cut", 0), P.get("torn", 512), P.get("journal"))
if P["fs"] == "fat":
    vfs.VfsFat.mkfs(dev)
    fs = vfs.VfsFat(dev)
else:
    vfs.VfsLfs2.mkfs(dev)
    fs = vfs.VfsLfs2(dev)
vfs.mount(fs, "/sd")
print("READY", dev.writes)

with open(P["in"] + "/frames.bin", "rb") as f:
    items = scenario.parse_frames(f.read())
with open(P["in"] + "/config.lbcf", "rb") as f:
    cfg = f.read()
W = []


class Probe(Recorder):
    def flush(self):
        Recorder.flush(self)
        n = 0
        if W:
            for st in W[0].streams:
                n += st.records
        print("D", dev.writes, n, self.durable())


sink = Probe(open("/sd/rec.logb", "wb"), "rec.logb")
clock = scenario.Clock(items[0][0])
w, _, sensor = scenario.make_writer(sink, cfg, P, clock)
W.append(w)


def appended():
    n = 0
    for st in w.streams:
        n += st.records + st.n
    return n


dev.count = appended
scenario.feed(w, sensor, items, clock, 0, len(items))
scenario.finish(w, clock)
sink.close()
vfs.umount("/sd")
print("DONE", dev.writes, w.errors)
dev.close()

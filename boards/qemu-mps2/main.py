# The emulated MPS2-AN385 (boards/qemu-mps2/README.md; its RAM disk at /), which has no CAN:
# record(n) writes n CAN frames through /config.lbcf into /rec.logb with logb from /lib.
import os

import logb


def record(path="/rec.logb", n=40):
    f = open(path, "wb")
    w = logb.Writer(f, device="qemu-flash")
    w.load_config("/config.lbcf")
    data = bytearray(8)
    for i in range(n):
        data[0] = i
        w.append_can(1000 * i, 0x123, data, 0)
    w.close()
    f.close()
    return os.stat(path)[6]

# The rig test's independent read of the simulated logger's card (tests/test_rig.py): mount IMAGE
# read-only with the unix port's FAT code and copy every file at its root to OUT.
# argv = image, out folder. Prints "F name size" per file, then "DONE".
import sys

import vfs

img, out = sys.argv[1:3]


class Image:
    def __init__(self, path):
        self.f = open(path, "rb")
        self.f.seek(0, 2)
        self.n = self.f.tell() // 512

    def readblocks(self, n, buf, off=0):
        self.f.seek(n * 512 + off)
        self.f.readinto(buf)

    def writeblocks(self, n, buf, off=0):
        raise OSError(30)  # EROFS: a read must not change the card

    def ioctl(self, op, arg):
        return self.n if op == 4 else 512 if op == 5 else 0


vfs.mount(vfs.VfsFat(Image(img)), "/img", readonly=True)
import os  # noqa: E402

buf = bytearray(4096)
for name in sorted(os.listdir("/img")):
    with open("/img/" + name, "rb") as f, open(out + "/" + name, "wb") as g:
        size = 0
        while True:
            k = f.readinto(buf)
            if not k:
                break
            g.write(buf if k == len(buf) else buf[:k])
            size += k
    print("F", name, size)
print("DONE")

# A FAT image made by MicroPython's own VfsFat (FatFs), for the host's FAT reader
# (tests/test_recover_fat.py): `micropython mp_powercut_mkfat.py DIR IMAGE BLOCKS`
# formats IMAGE (BLOCKS blocks of 512 B) on mp_powercut_bdev.FileDevice and
# writes files of several sizes, a long name, a subfolder and a deleted file;
# prints "F path size" for each file left on it.
import sys

import vfs

sys.path.append(sys.argv[1])
import mp_powercut_bdev  # noqa: E402

dev = mp_powercut_bdev.FileDevice(sys.argv[2], int(sys.argv[3]))
vfs.VfsFat.mkfs(dev)
vfs.mount(vfs.VfsFat(dev), "/sd")


def put(path, n, seed):
    b = bytearray(n)
    x = seed
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        b[i] = x >> 16 & 0xFF
    with open(path, "wb") as f:
        f.write(b)


put("/sd/gone.bin", 3000, 9)
put("/sd/a.logb", 700, 1)
put("/sd/empty.logb", 0, 2)
import os  # noqa: E402

os.mkdir("/sd/2026-12-02")
put("/sd/2026-12-02/recording with a long name.logb", 20000, 3)
os.remove("/sd/gone.bin")
put("/sd/2026-12-02/B.LOG", 5000, 4)


def walk(d):
    for name in sorted(os.listdir(d)):
        p = d + "/" + name
        if os.stat(p)[0] & 0x4000:
            walk(p)
        else:
            print("F", p[3:], os.stat(p)[6])


walk("/sd")
vfs.umount("/sd")
dev.close()

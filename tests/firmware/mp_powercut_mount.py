# The checking side of the filesystem power-cut study (tools/powercut_fs.py):
# `micropython mp_powercut_mount.py PARAMS.json`. Rebuilds each cut of a
# recorded run in RAM — the formatted image, then the run's journal of block
# writes (mp_powercut_bdev.FileDevice) applied up to the cut, the cut write's
# first `torn` bytes last — or takes an image file as it is ("images"), mounts
# it read-only with the same filesystem code the logger ran, and copies every
# .logb file out to OUT/<cut>.logb. Prints per cut "M i ok SIZE" or
# "M i fail ERROR" (the mount or the copy failed).
import json
import struct
import sys

import vfs

P = json.load(open(sys.argv[1]))
sys.path.append(P["dir"])
import mp_powercut_bdev  # noqa: E402

FS = vfs.VfsFat if P["fs"] == "fat" else vfs.VfsLfs2
buf = bytearray(512)


def check(i, img):
    try:
        fs = FS(mp_powercut_bdev.RamDevice(img))
        vfs.mount(fs, "/img", readonly=True)
    except Exception as e:
        print("M", i, "fail", repr(e).replace(" ", "_"))
        return
    try:
        size = 0
        for name in vfs_list():
            with open("/img/" + name, "rb") as src, open(P["out"] + "/%d.logb" % i, "wb") as dst:
                while True:
                    n = src.readinto(buf)
                    if not n:
                        break
                    dst.write(memoryview(buf)[:n])
                    size += n
        print("M", i, "ok", size)
    except Exception as e:
        print("M", i, "fail", repr(e).replace(" ", "_"))
    vfs.umount("/img")


def vfs_list():
    import os

    return [n for n in os.listdir("/img") if n.endswith(".logb")]


if "images" in P:
    for i, path in enumerate(P["images"]):
        with open(path, "rb") as f:
            check(i, bytearray(f.read()))
else:
    with open(P["base"], "rb") as f:
        img = bytearray(f.read())
    j = open(P["journal"], "rb")
    hdr = bytearray(12)
    n = 0  # writes applied
    for i, (cut, torn) in enumerate(P["cuts"]):  # sorted by cut
        while n < cut - 1:
            j.readinto(hdr)
            blk, off, ln = struct.unpack("<IHHI", hdr)[:3]
            p = blk * 512 + off
            j.readinto(memoryview(img)[p:p + ln])
            n += 1
        if torn:
            pos = j.tell()
            j.readinto(hdr)
            blk, off, ln = struct.unpack("<IHHI", hdr)[:3]
            p = blk * 512 + off
            keep = bytes(img[p:p + ln])
            j.readinto(memoryview(img)[p:p + min(torn, ln)])
            check(i, img)
            img[p:p + ln] = keep
            j.seek(pos)
        else:
            check(i, img)

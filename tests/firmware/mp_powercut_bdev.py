# Block devices of the filesystem power-cut study (tools/powercut_fs.py), for
# MicroPython's vfs.VfsFat and vfs.VfsLfs2 on the unix port: 512-byte blocks,
# the SD card's sector. Erase (ioctl 6) does nothing, as on an SD card: both
# filesystems then see the same medium.
#
# FileDevice: blocks in a host file. Every 512-byte block write (a FAT
# multi-block write counts once per block, a littlefs program once per call)
# is numbered from 1; with cut=N the N-th is the power cut: only its first
# `torn` bytes reach the file (512: the whole write lands, 0: none of it),
# every later write is dropped and the process stops (SystemExit, raised
# through the filesystem's C code: nothing it does afterwards reaches the
# card). `count` (set by the recorder) gives the records appended so far: the
# cut prints "CUT w records" first. With `journal`, every write is also logged
# (u32 block, u16 offset, u16 length, u32 records appended, the bytes) so any
# cut can be rebuilt from one run.
#
# RamDevice: an image in RAM (the checker rebuilds cuts into it); writes are
# refused, so mounting and reading cannot change what is checked.
import struct

BLOCK = 512


class PowerCut(SystemExit):
    pass


class FileDevice:
    def __init__(self, path, blocks, cut=0, torn=BLOCK, journal=None):
        self.f = open(path, "r+b")
        self.blocks = blocks
        self.cut = cut
        self.torn = torn
        self.writes = 0
        self.dead = False
        self.j = open(journal, "wb") if journal else None
        self.hdr = bytearray(12)
        self.count = None

    def readblocks(self, block, buf, off=0):
        self.f.seek(block * BLOCK + off)
        self.f.readinto(buf)

    def _write(self, pos, mv):
        if self.dead:
            raise PowerCut(3)
        self.writes += 1
        if self.writes == self.cut:
            self.dead = True
            print("CUT", self.writes, self.count() if self.count else 0)
            if self.torn:
                self.f.seek(pos)
                self.f.write(mv[:self.torn])
            self.f.close()
            raise PowerCut(3)
        self.f.seek(pos)
        self.f.write(mv)
        if self.j is not None:
            struct.pack_into("<IHHI", self.hdr, 0, pos // BLOCK, pos % BLOCK, len(mv),
                             self.count() if self.count else 0)
            self.j.write(self.hdr)
            self.j.write(mv)

    def writeblocks(self, block, buf, off=None):
        mv = memoryview(buf)
        if off is None:  # FAT: whole blocks, maybe several
            for i in range(len(buf) // BLOCK):
                self._write((block + i) * BLOCK, mv[i * BLOCK:(i + 1) * BLOCK])
        else:  # littlefs: one program, at most a block
            self._write(block * BLOCK + off, mv)

    def ioctl(self, op, arg):
        if op == 4:
            return self.blocks
        if op == 5:
            return BLOCK
        if op == 3 and not self.dead:
            self.f.flush()
            if self.j is not None:
                self.j.flush()
        return 0

    def close(self):
        self.f.close()
        if self.j is not None:
            self.j.close()


class RamDevice:
    def __init__(self, img):
        self.img = img
        self.blocks = len(img) // BLOCK

    def readblocks(self, block, buf, off=0):
        p = block * BLOCK + off
        buf[:] = memoryview(self.img)[p:p + len(buf)]

    def writeblocks(self, block, buf, off=None):
        raise OSError(30)  # EROFS

    def ioctl(self, op, arg):
        if op == 4:
            return self.blocks
        if op == 5:
            return BLOCK
        return 0

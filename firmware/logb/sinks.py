"""Sinks for the writer besides a plain VFS file.

A file opened on a VFS (FAT on an SD card, littlefs on internal flash) is
the normal sink: `Writer(open("/sd/rec.logb", "wb"))`; its `flush()` makes
the data durable (f_sync / lfs_file_sync).

`BlockSink` writes straight to a block device with `readblocks`/
`writeblocks` (an SD card driver such as `sdcard.SDCard`, or a RAM disk),
no filesystem: the recording occupies consecutive blocks from `first`.
The writer's page must equal the block size. A partial block (a durability
flush) is written zero-padded and rewritten in place when it fills up: the
bytes already handed over never change, only the zero padding after them.
Copying a partial block costs a Python loop, so it is done only at flushes.
"""


class BlockSink:
    def __init__(self, bdev, first=0, block=512, blocks=None):
        self.bdev = bdev
        self.block = block
        self.blk = first
        self.end = None if blocks is None else first + blocks
        self.img = bytearray(block)  # the current partial block
        self.p = 0

    def _put(self, buf):
        if self.end is not None and self.blk >= self.end:
            raise OSError(28)  # ENOSPC: the writer counts it in Writer.errors
        self.bdev.writeblocks(self.blk, buf)

    def write(self, buf, off=0, n=-1):
        if n < 0:
            n = len(buf) - off
        bs = self.block
        if self.p == 0 and off == 0 and n == bs and len(buf) == bs:
            self._put(buf)  # the usual case: one whole page
            self.blk += 1
            return n
        img = self.img
        done = 0
        while done < n:
            k = min(bs - self.p, n - done)
            for i in range(k):
                img[self.p + i] = buf[off + done + i]
            self.p += k
            done += k
            self._put(img)
            if self.p == bs:
                self.blk += 1
                self.p = 0
                for i in range(bs):
                    img[i] = 0
        return n

    def flush(self):
        ioctl = getattr(self.bdev, "ioctl", None)
        if ioctl is not None:
            ioctl(3, 0)  # MP_BLOCKDEV_IOCTL_SYNC


class RamBlockDevice:
    """A block device in RAM (tests, and a model of an SD card's interface)."""

    def __init__(self, blocks, block=512):
        self.block = block
        self.data = bytearray(blocks * block)

    def readblocks(self, n, buf, off=0):
        p = n * self.block + off
        buf[:] = self.data[p:p + len(buf)]

    def writeblocks(self, n, buf, off=0):
        p = n * self.block + off
        self.data[p:p + len(buf)] = buf

    def ioctl(self, op, arg):
        if op == 4:
            return len(self.data) // self.block
        if op == 5:
            return self.block
        return 0

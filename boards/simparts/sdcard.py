"""A block-device SD card for tests (boards/simparts): `SDCard(spi, cs)` with
micropython-lib's constructor, but blocks kept in a host file (`path`) or a
bytearray, not the SPI card protocol. Mountable by vfs.VfsFat / VfsLfs2 on
the unix port; readblocks/writeblocks/ioctl as the VFS calls them."""


class SDCard:
    def __init__(self, spi=None, cs=None, baudrate=0, path=None, blocks=2048):
        self.path = path
        self.blocks = blocks
        if path is None:
            self.mem = bytearray(blocks * 512)
        else:
            self.f = open(path, "r+b")
            self.f.seek(0, 2)
            self.blocks = self.f.tell() // 512

    def readblocks(self, n, buf, off=0):
        p = n * 512 + off
        if self.path is None:
            buf[:] = self.mem[p:p + len(buf)]
        else:
            self.f.seek(p)
            self.f.readinto(buf)

    def writeblocks(self, n, buf, off=0):
        p = n * 512 + off
        if self.path is None:
            self.mem[p:p + len(buf)] = buf
        else:
            self.f.seek(p)
            self.f.write(buf)

    def ioctl(self, op, arg):
        if op == 3 and self.path is not None:  # sync
            self.f.flush()
        if op == 4:
            return self.blocks
        if op == 5:
            return 512
        return 0

# A tty as logb.link's port on the unix port (the board loop's serial(), tests/firmware/mp_board.py;
# mp_rig.py; mp_link.py):
# the unix port has no O_NONBLOCK, so raw mode with VMIN = VTIME = 0 makes a read return what is
# there (0: nothing); a write goes out only when poll() says the tty has room (at most PIECE bytes:
# a blocking tty write would wait for all of it). Nothing is allocated per call.
import select

PIECE = 512


class TtyPort:
    def __init__(self, path):
        import termios

        self.f = open(path, "r+b")
        fd = self.f.fileno()
        termios.setraw(fd)
        a = termios.tcgetattr(fd)
        a[6][6] = 0  # VMIN (Linux's index; the module exports no names for them)
        a[6][5] = 0  # VTIME
        termios.tcsetattr(fd, termios.TCSANOW, a)
        self.room = select.poll()
        self.room.register(self.f, select.POLLOUT)
        self.rbuf = bytearray(512)

    def readinto(self, buf, off, n):
        k = self.f.readinto(self.rbuf, n if n < 512 else 512) or 0
        rb = self.rbuf
        for i in range(k):  # requests are small: a copy, not a view of buf per call
            buf[off + i] = rb[i]
        return k

    def write(self, buf, off, n):
        for _ in self.room.ipoll(0):  # ipoll: a reused tuple, no list
            return self.f.write(buf, off, n if n < PIECE else PIECE) or 0
        return 0

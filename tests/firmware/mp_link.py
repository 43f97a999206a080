# The serial link on the unix port (run by tests/test_pull_micropython.py):
#
#     micropython mp_link.py TTY DIR CONFIG MESSAGES.json FRAMES
#
# Records FRAMES CAN frames (the config's messages in turn, 10 per ms of real
# time) into DIR/rec-0001.logb through link.Recorder while link.Link serves
# DIR on the tty TTY; prints READY, RECORDED when the recording is closed,
# and after DIR/stop appears one line "RESULT {json}".
#
# Every other loop pass whose link work cannot allocate (idle, or a READ in
# mid-stream: one storage read, one CRC pass, one port write) runs recording
# and link.poll() under micropython.heap_lock(), with the port's reads held
# for the next unlocked pass: parsing a request, opening a file and the END
# message allocate, by design (firmware/logb/link.py).
import json
import os
import sys
import time

import micropython
import mp_board_tty

import logb
from logb import link

TTY, DIR, CFG, MSGS = sys.argv[1:5]
FRAMES = int(sys.argv[5])
CHUNK = 2048
J_NONE, J_READ = 0, 1  # link.py's job kinds (_J_NONE, _J_READ)


class TtyPort(mp_board_tty.TtyPort):
    """mp_board_tty's tty port (on the script's folder, sys.path[0]) whose reads the loop can
    hold, counting the bytes written; super() calls allocate nothing, as under heap_lock()."""

    def __init__(self, path):
        super().__init__(path)
        self.hold = False
        self.sent = 0

    def readinto(self, buf, off, n):
        if self.hold:
            return 0
        return super().readinto(buf, off, n)

    def write(self, buf, off, n):
        k = super().write(buf, off, n)
        self.sent += k
        return k


with open(MSGS) as f:
    MESSAGES = [(cid, 1 if ext else 0, bytes(range(n))) for cid, ext, n in json.load(f)]
clk = [1000]


def ticks():
    return clk[0]


port = TtyPort(TTY)
rec = link.Recorder(open(DIR + "/rec-0001.logb", "wb"), "rec-0001.logb")
w = logb.Writer(rec, device="unix-logger", session="5e" * 16, ticks=ticks, flush_ms=100, segment_bytes=64 << 10)
w.load_config(CFG)
storage = link.VfsStorage(DIR, rec)
ln = link.Link(port, storage, device="unix-logger", firmware=logb.FIRMWARE, chunk=CHUNK, kbd=False, idle_s=30)
S = {"locked_passes": 0, "locked_streaming": 0, "locked_sent": 0, "recorded": 0, "memory_error": None}
BOX = [0, 0]  # frames recorded, phase of a MemoryError (1 recording, 2 link): ints, set under the lock
print("READY")


def quiet():
    """The next link.poll() can only stream DATA or idle."""
    if ln._queue or ln._pong >= 0 or ln._leave or ln._rxn:
        return False
    if ln._job == J_NONE:
        return True
    if ln._job != J_READ or ln._jh is None:
        return False
    left = ln._jend - ln._jpos
    return left > 2 * CHUNK and storage.size(ln._jname) - ln._jpos > 2 * CHUNK


def step(due):
    """Record the frames due, then one link.poll()."""
    n = len(MESSAGES)
    i = BOX[0]
    while i < due:
        BOX[1] = 1
        clk[0] += 100
        cid, fl, d = MESSAGES[i % n]
        w.append_can(clk[0], cid, d, fl)
        i += 1
    BOX[0] = i
    w.poll()
    BOX[1] = 2
    busy = ln.poll()
    BOX[1] = 0
    return busy


def locked_step(due):
    micropython.heap_lock()
    try:
        step(due)
    except MemoryError:
        return False
    finally:
        micropython.heap_unlock()
    return True


t0 = time.ticks_ms()
recording = True
k = 0
while True:
    k += 1
    due = min(FRAMES, 10 * time.ticks_diff(time.ticks_ms(), t0)) if recording else BOX[0]
    if k & 1 and quiet():
        streaming = ln._job == J_READ
        s0 = port.sent
        port.hold = True
        ok = locked_step(due)
        port.hold = False
        if not ok:
            S["memory_error"] = "recording" if BOX[1] == 1 else "link"
            break
        S["locked_passes"] += 1
        if streaming:
            S["locked_streaming"] += 1
            S["locked_sent"] += port.sent - s0
    elif not step(due) and not recording:
        time.sleep_ms(1)
    if recording and BOX[0] >= FRAMES:
        w.close()
        rec.close()
        recording = False
        print("RECORDED")
    if k & 255 == 0:
        try:
            os.stat(DIR + "/stop")
            break
        except OSError:
            pass
S["recorded"] = BOX[0]
S["requests"] = ln.requests
S["errors"] = w.errors
print("RESULT " + json.dumps(S))

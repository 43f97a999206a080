"""The device side of the serial link under real MicroPython 1.27 (the
WebAssembly port in Node.js): streaming a recording and idling in link mode
allocate nothing — both run with micropython.heap_lock() held — so a pull
costs the logger a fixed, preallocated amount of RAM."""

import pathlib
import struct
import sys

import pytest

from logb.serial import protocol as P

sys.path.insert(0, str(pathlib.Path(__file__).parent / "firmware"))
import fwtools  # noqa: E402

pytestmark = pytest.mark.single_backend

SCRIPT = r'''
import gc, os, json, micropython
from logb import link
os.mkdir('/sd')
with open('/sd/a.logb', 'wb') as f:
    for i in range(100):
        f.write(bytes([i]) * 2000)
with open('/in/req.bin', 'rb') as f:
    REQ = f.read()


class MemPort:
    """Hands the requests over once; takes every byte the link writes."""

    def __init__(self):
        self.p = 0
        self.sent = 0

    def readinto(self, buf, off, n):
        k = min(len(REQ) - self.p, n)
        for i in range(k):
            buf[off + i] = REQ[self.p + i]
        self.p += k
        return k

    def write(self, buf, off, n):
        self.sent += n
        return n


port = MemPort()
ln = link.Link(port, link.VfsStorage('/sd'), chunk=2048, kbd=False)
for _ in range(10):  # escape, HELLO, the READ starts (opening the file allocates)
    ln.poll()
res = {"stream_alloc": 0, "stream_bytes": 0, "stream_locked": False, "idle_locked": False}  # no dict growth later
ok = [False, False]
gc.collect()
gc.disable()
a0, s0 = gc.mem_alloc(), port.sent
for _ in range(40):
    ln.poll()
res["stream_alloc"], res["stream_bytes"] = gc.mem_alloc() - a0, port.sent - s0
micropython.heap_lock()
try:
    for _ in range(30):
        ln.poll()
    ok[0] = True
except MemoryError:
    pass
micropython.heap_unlock()
for _ in range(100):  # to the END (it allocates: the range's CRC as an int, the message)
    ln.poll()
gc.collect()
a0 = gc.mem_alloc()
micropython.heap_lock()
try:
    for _ in range(200):
        ln.poll()  # link mode, nothing to do
    ok[1] = True
except MemoryError:
    pass
micropython.heap_unlock()
res["stream_locked"], res["idle_locked"] = ok
gc.enable()
res["active"] = ln.active
res["sent"] = port.sent
print("RESULT " + json.dumps(res))
'''


def test_streaming_and_idling_allocate_nothing(tmp_path):
    req = tmp_path / "req.bin"
    req.write_bytes(P.ESCAPE + P.encode(P.T_READ, 5, struct.pack("<QQ", 0, 200000) + P.pack_str("a.logb")))
    script = tmp_path / "alloc.py"
    script.write_text(SCRIPT)
    r = fwtools.run_board([script], put=[f"{req}:/in/req.bin"], heap=256 * 1024, timeout=60)
    res = fwtools.result_line(r.stdout)
    assert res["stream_bytes"] >= 40 * 2048  # 40 polls, one 2 KiB DATA message each
    assert res["stream_alloc"] == 0 and res["stream_locked"] and res["idle_locked"], res
    assert res["active"] and res["sent"] > 200000

# Runs under MicroPython: calls a `logbc` module (the built-in one, a natmod
# .mpy under another name, or the qemu image's) on the cases the host wrote,
# and prints one JSON line of results per case, then "done". It computes
# nothing itself: tests/test_cbridge_micropython.py compares the results with
# the host's kernels. Shared by every build, so each one is held to the same
# checks.
#
# Input: the global ARGS = (module name, cases JSON) when the host prepends it
# (qemu, where a script has no argv), else argv[1] and the file argv[2].
import json
import sys
from array import array
from binascii import hexlify, unhexlify

import micropython

_args = globals().get("ARGS") or (sys.argv[1], open(sys.argv[2]).read())
mod = __import__(_args[0])


def hx(b):
    return hexlify(b).decode()


def arg(a):
    # JSON stand-ins for buffers: {"b": hex} a bytearray, {"I": [...]} an array of that typecode
    if isinstance(a, dict):
        ((code, v),) = a.items()
        return bytearray(unhexlify(v)) if code == "b" else array(code, v)
    return a


def run(c):
    op = c["op"]
    if op == "crc":
        data = unhexlify(c["data"])
        cuts = c["cuts"]
        chained = 0
        for i in range(len(cuts) - 1):
            chained = mod.crc32c(data[cuts[i]:cuts[i + 1]], chained)
        # the third item must survive: only the first two are the register
        st = array("I", [0xFFFFFF, 0xFF, 0xABCD])
        update = mod.crc32c_update
        micropython.heap_lock()  # any allocation now raises MemoryError
        try:
            for i in range(len(cuts) - 1):
                update(data, cuts[i], cuts[i + 1], st)
        finally:
            micropython.heap_unlock()
        return {"crc": mod.crc32c(data), "chained": chained, "st": list(st)}
    if op in ("extract", "pack"):
        rec = bytearray(unhexlify(c["rec"]))
        io = bytearray(unhexlify(c["io"]))
        getattr(mod, op)(rec, c["n"], c["rs"], c["bs"], c["off"], c["width"], c["big"], c["kind"], io,
                         c["stride"])
        return {"rec": hx(rec), "io": hx(io)}
    if op in ("transpose", "untranspose"):
        dst = bytearray(c["dst"])
        getattr(mod, op)(unhexlify(c["src"]), dst, c["n"], c["s"])
        return {"dst": hx(dst)}
    if op == "raises":
        args = [arg(a) for a in c["args"]]
        before = [bytes(a) for a in args if not isinstance(a, int)]
        try:
            getattr(mod, c["fn"])(*args)
            err = None
        except Exception as e:  # noqa: BLE001  (the host checks which)
            err = type(e).__name__
        # a rejected call must not have written any buffer
        return {"raised": err, "untouched": before == [bytes(a) for a in args if not isinstance(a, int)]}
    if op == "names":
        return {"names": sorted(k for k in dir(mod) if not k.startswith("__")),
                "kinds": [mod.SIGNED, mod.BOOL], "file": getattr(mod, "__file__", None)}
    raise ValueError(op)


for case in json.loads(_args[1]):
    print(json.dumps(run(case)))
print("done")

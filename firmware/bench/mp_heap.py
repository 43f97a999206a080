# Live heap of the frozen firmware on the emulated Cortex-M3 (a 32-bit port:
# 4-byte object slots, ints of 2**30 or more boxed). firmware/bench/qemu_count.py
# prepends CFGS = [(name, LBCF bytes), ...]. Prints "HEAP base B" (interpreter),
# "HEAP import B", "HEAP free B" and micropython.mem_info() (its "max free sz" is in 16-byte
# blocks) after `import logb`, then per config "HEAP name live_B startup_peak_B
# streams": the live heap after Writer + load_config and a collection (a
# config given as bytes keeps its SCHEMA payloads in RAM: there is no file
# system here), or "HEAP name MemoryError".
import gc

import micropython

gc.collect()
print("HEAP base", gc.mem_alloc())
import logb  # noqa: E402

gc.collect()
print("HEAP import", gc.mem_alloc())
print("HEAP free", gc.mem_free())
micropython.mem_info()


class Null:
    def write(self, buf, off=0, n=-1):
        return n

    def flush(self):
        pass


for name, cfg in CFGS:  # noqa: F821 (from the host)
    gc.collect()
    a0 = gc.mem_alloc()
    try:
        w = logb.Writer(Null(), device="heap", session="h" * 32, ticks=lambda: 0)
        w.load_config(cfg)
    except MemoryError:
        w = None
        print("HEAP", name, "MemoryError", gc.mem_alloc() - a0, gc.mem_free())
        continue
    peak = gc.mem_alloc() - a0
    gc.collect()
    print("HEAP", name, gc.mem_alloc() - a0, peak, len(w.streams))
    w = None
print("HEAP DONE")

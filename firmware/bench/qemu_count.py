"""Guest instruction counts of the firmware writer on the emulated Cortex-M3
(qemu MPS2-AN385 with the firmware frozen in and `logbc` built in; see
tests/firmware/mpreal.py): firmware/bench/mp_count.py with its inputs
written into the script, since the board has no filesystem."""

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import inputs  # noqa: E402
import mpreal  # noqa: E402  (tests/firmware, on the path through inputs)

def script(cfg, frames, laps, cases):
    head = (f"CFG = {cfg!r}\nBLOB = {inputs.encode(frames)!r}\nNFRAMES = {len(frames)}\nLAPS = {laps}\n"
            f"CASES = {cases!r}\n")
    return head + (HERE / "mp_count.py").read_text()


def run(cfg, frames, laps, cases, tmp):
    """{name: (instructions, units, seals, rotations)} of one qemu run."""
    p = pathlib.Path(tmp) / "count.py"
    p.write_text(script(cfg, frames, laps, cases))
    out = mpreal.run_qemu(p)  # (-icount shift=0,sleep=off: see mpreal.QEMU_CMD)
    if "COUNTS DONE" not in out:
        raise AssertionError(f"qemu count did not finish:\n{out[-3000:]}")
    res = {}
    for line in out.splitlines():
        if line.startswith("COUNT "):
            name, *nums = line.split()[1:]
            res[name] = tuple(int(x) for x in nums)
    return res


def heap(cfgs, tmp):
    """firmware/bench/mp_heap.py on the board, a fresh boot per config (the
    script's own bytes literal takes heap too): ({name: (live B, start-up peak
    B, streams) or None (MemoryError)} of each (name, LBCF bytes), {"base",
    "import", "free", "max_free"} B of a run without any config)."""
    rows, top = {}, {}
    for cfg in [None] + list(cfgs):
        p = pathlib.Path(tmp) / "heap.py"
        p.write_text(f"CFGS = {[cfg] if cfg else []!r}\n" + (HERE / "mp_heap.py").read_text())
        out = mpreal.run_qemu(p)
        if "HEAP DONE" not in out:
            raise AssertionError(f"qemu heap run did not finish:\n{out[-3000:]}")
        for line in out.splitlines():
            f = line.split()
            if line.startswith("HEAP ") and len(f) == 5:
                rows[f[1]] = None if f[2] == "MemoryError" else tuple(int(x) for x in f[2:])
            elif cfg is None and line.startswith("HEAP ") and len(f) == 3:
                top[f[1]] = int(f[2])
            elif cfg is None and "max free sz:" in line:
                top["max_free"] = 16 * int(line.rsplit(":", 1)[1])  # 16-byte GC blocks on a 32-bit port
    return rows, top

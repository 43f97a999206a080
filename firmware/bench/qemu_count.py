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

# The counts are exact only if the virtual clock jumps to the next timer while the
# guest waits in WFI (qemu's sleep=off; with sleep=on it advances with host time).
if "sleep=off" not in mpreal.QEMU_CMD:
    mpreal.QEMU_CMD = mpreal.QEMU_CMD.replace("-icount shift=0", "-icount shift=0,sleep=off")


def script(cfg, frames, laps, cases):
    head = (f"CFG = {cfg!r}\nBLOB = {inputs.encode(frames)!r}\nNFRAMES = {len(frames)}\nLAPS = {laps}\n"
            f"CASES = {cases!r}\n")
    return head + (HERE / "mp_count.py").read_text()


def run(cfg, frames, laps, cases, tmp):
    """{name: (instructions, units, seals, rotations)} of one qemu run."""
    p = pathlib.Path(tmp) / "count.py"
    p.write_text(script(cfg, frames, laps, cases))
    out = mpreal.run_qemu(p)
    if "COUNTS DONE" not in out:
        raise AssertionError(f"qemu count did not finish:\n{out[-3000:]}")
    res = {}
    for line in out.splitlines():
        if line.startswith("COUNT "):
            name, *nums = line.split()[1:]
            res[name] = tuple(int(x) for x in nums)
    return res

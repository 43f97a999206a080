"""Firmware benchmarks: the writer under real MicroPython 1.28 (the unix port
for time and heap, the qemu Cortex-M3 image for guest instruction counts), all
in one run; replaces the `firmware` block of BENCHMARKS.md (<!-- firmware:begin
--> ... end, tools/benchmd.py) and nothing else. tools/bench.py (`./run bench`)
runs it.

    python firmware/bench/run_bench.py [--frames 20000] [--laps 3] [--reps 9]
        [--qemu-frames 600] [--qemu-laps 3] [--no-write] [--from-json FILE] [--output FILE]

Inputs (firmware/bench/inputs.py): the real Lancer trace; the raw bus workload
is every frame with a raw-bus-only config, the per-message one the frames of
its 20 most frequent ids with a config of those 20 messages. Nothing here
passes or fails: time is only ever a ratio to a floor measured in the same
run, instruction counts are exact (qemu -icount), heap is gc.mem_alloc().
"""

import argparse
import datetime
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tools"))
import benchmd  # noqa: E402
import inputs  # noqa: E402
import mpreal  # noqa: E402  (tests/firmware, on the path through inputs)
import qemu_count  # noqa: E402

BUS_FPS = 8000  # a fully loaded 1 Mbit/s classic CAN bus, roughly
BUDGET = 7800  # Cortex-M instructions per frame: the RP2040 at 8,000 frames/s with 2x headroom (issue 15)
RP2040_MHZ = 125
CPI = (1.3, 2.0)  # M0+ cycles per instruction: all fetches hit the XIP cache .. frequent misses (see section)
HEAPS = (1, 5, 20, 50)
CRCS = ("pure", "viper", "c")
VM_FILES = ("vm", "runtime", "map", "obj", "objtype", "objfun", "binary", "modstruct", "objarray")


def _cases(prefix, extra=()):
    return [[f"{prefix}_floor", "floor", {}]] + [[f"{prefix}_{c}", c, {}] for c in CRCS] + list(extra)


def unix_times(n, laps, reps, tmp):
    """{case: (best µs, frames, bytes written)} of mp_time.py on the unix port, per workload."""
    out = {}
    extra = {"raw": [["raw_c_2k", "c", {"page": 2048, "stream_bytes": 2048, "raw_bytes": 2048}]], "msg": []}
    for name, (cfg, frames) in inputs.workloads(n).items():
        d = pathlib.Path(tmp)
        (d / f"{name}.lbcf").write_bytes(cfg)
        (d / f"{name}.bin").write_bytes(inputs.encode(frames))
        (d / f"{name}.json").write_text(json.dumps(_cases(name, extra[name])))
        r = mpreal.run_unix(HERE / "mp_time.py", d / f"{name}.lbcf", d / f"{name}.bin", laps, reps,
                            d / f"{name}.json", heap="16M", lib=mpreal.firmware_mpy(), timeout=1800)
        for line in r.stdout.splitlines():
            if line.startswith("TIME "):
                case, *nums = line.split()[1:]
                out[case] = [int(x) for x in nums]
    return out


def unix_heap(tmp):
    """{k: mp_ram.py's RESULT} for k message streams + raw bus from .mpy on the
    32-bit unix port (a board's object sizes): under -X heapsize=64K, and when
    that fails again under 512K to measure it."""
    out = {}
    d = pathlib.Path(tmp)
    for k in HEAPS:
        msgs = inputs.synthetic_messages(k)
        cfg, _ = inputs.compile_messages(msgs)
        (d / f"h{k}.lbcf").write_bytes(cfg)
        (d / f"h{k}.json").write_text(json.dumps([[c, e, n] for c, e, n in msgs]))
        failed = None
        for heap in ("64K", "512K"):
            r = mpreal.run_unix(ROOT / "tests" / "firmware" / "mp_ram.py", d / f"h{k}.lbcf", d / f"h{k}.json",
                                2000, heap=heap, bits=32)
            res = json.loads(r.stdout.rsplit("RESULT ", 1)[1])
            if res["memory_error"] is None:
                break
            failed = failed or res["memory_error"]
        res["error_64k"] = failed  # the phase that ran out of a 64 KiB heap, or None: it fits
        out[k] = res
    return out


def qemu_counts(n, laps, tmp):
    """qemu_count.run per workload: per-CRC appends, the pack_into floor, frame buffers of 128 B
    (more seals) and small segments (more rotations) for the per-seal and per-rotation costs.
    The per-message run takes the routed frames of the first n/3 trace frames over 3x the laps
    (about as many frames counted, each 512 B frame buffer filled and sealed): its 20-stream
    config parsed on the board per case (a ~75 KB start-up transient), the sink's room for a
    segment head of 20 SCHEMAs and more frames do not fit the 140 KB heap."""
    raw_cfg, raw = inputs.workloads(n)["raw"]
    msg_cfg, msg = inputs.workloads(n // 3)["msg"]
    c = qemu_count.run(raw_cfg, raw, laps, [
        ["raw_floor", "floor", {}], ["raw_pure", "pure", {}], ["raw_viper", "viper", {}], ["raw_c", "c", {}],
        ["raw_c_128", "c", {"raw_bytes": 128}], ["raw_c_seg", "c", {"segment_bytes": 4096}],
        ["sensor_append", "append", {}], ["sensor_pend", "pend", {}]], tmp)
    c.update(qemu_count.run(msg_cfg, msg, 3 * laps, [
        ["msg_floor", "floor", {}], ["msg_pure", "pure", {}], ["msg_viper", "viper", {}], ["msg_c", "c", {}]],
        tmp))
    return c


def qemu_heap(tmp):
    cfgs = [(f"k{k}", inputs.compile_messages(inputs.synthetic_messages(k))[0]) for k in HEAPS]
    rows, top = qemu_count.heap(cfgs, tmp)
    return {"rows": rows, **top}


def _static(obj):
    """Instructions in an object file's code (arm-none-eabi-objdump -d), or None."""
    tool = shutil.which("arm-none-eabi-objdump")
    if not tool or not pathlib.Path(obj).exists():
        return None
    text = subprocess.run([tool, "-d", str(obj)], capture_output=True, text=True, check=True).stdout
    return len(re.findall(r"^\s+[0-9a-f]+:\t[0-9a-f ]+\t[a-z]", text, re.M))


def thumb(tmp):
    """Thumb-1 (armv6m, the M0+) against Thumb-2 (the M3/M4) for the three kinds of code on the
    per-frame path: logbc's C (natmod .mpy sizes, and static instructions of its crc32c.o),
    crc_viper's machine code (mpy-cross -march armv6m vs armv7m), and the VM's C (the qemu
    image's hottest py/ sources compiled for each with its flags: static instructions)."""
    d = pathlib.Path(tmp)
    nat = {a: mpreal.natmod(a) for a in ("armv6m", "armv7emsp")}
    R = {"natmod_bytes": {a: p.stat().st_size for a, p in nat.items()},
         "natmod_crc_instr": {a: _static(p.parent / "build" / ROOT.relative_to("/") / "cbridge" / "crc32c.o")
                              for a, p in nat.items()}}
    mpy_cross = mpreal.built("mpy")
    R["viper_bytes"] = {}
    for march in ("armv6m", "armv7m"):
        out = d / f"crc_viper.{march}.mpy"
        subprocess.run([str(mpy_cross), f"-march={march}", "-o", str(out), str(ROOT / "firmware" / "logb" /
                        "crc_viper.py")], check=True)
        R["viper_bytes"][march] = out.stat().st_size
    R["vm_instr"] = vm_static(d)
    return R


def vm_static(d):
    """{file: [M3, M0+] static instructions} of VM_FILES built with the qemu image's flags."""
    gcc = shutil.which("arm-none-eabi-gcc")
    port = mpreal.micropython_build.paths()["tree"] / "ports" / "qemu"
    build = port / "build-MPS2_AN385"
    if not gcc or not build.exists():
        return {}
    flags = ["-mthumb", "-mfloat-abi=soft", "-DQEMU_SOC_MPS2", "-DMICROPY_HEAP_SIZE=143360",
             "-DMICROPY_FLOAT_IMPL=MICROPY_FLOAT_IMPL_FLOAT", "-fsingle-precision-constant", "-I.", "-I../..",
             f"-I{build}", "-std=gnu99", "-DNDEBUG", "-ffunction-sections", "-fdata-sections",
             "-DMICROPY_ROM_TEXT_COMPRESSION=1", "-DMICROPY_QSTR_EXTRA_POOL=mp_qstr_frozen_const_pool",
             "-DMICROPY_MODULE_FROZEN_MPY"]
    out = {}
    for f in VM_FILES:
        row = []
        for cpu in ("cortex-m3", "cortex-m0plus"):
            obj = d / f"{f}.{cpu}.o"
            opt = "-O3" if f == "vm" else "-Os"  # the port builds vm.c at -O3
            subprocess.run([gcc, f"-mcpu={cpu}", *flags, opt, "-c", "-o", str(obj), f"../../py/{f}.c"],
                           cwd=port, check=True)
            row.append(_static(obj))
        out[f] = row
    return out


def measure(args):
    with tempfile.TemporaryDirectory() as tmp:
        R = {"frames": args.frames, "laps": args.laps, "reps": args.reps, "qemu_frames": args.qemu_frames,
             "qemu_laps": args.qemu_laps}
        R["times"] = unix_times(args.frames, args.laps, args.reps, tmp)
        R["heap"] = unix_heap(tmp)
        R["counts"] = qemu_counts(args.qemu_frames, args.qemu_laps, tmp)
        R["qheap"] = qemu_heap(tmp)
        R["thumb"] = thumb(tmp)
    return R


# ---------------------------------------------------------------- the section

def fmt(x, nd=0):
    return f"{x:,.{nd}f}"


def per_frame(counts, key):
    i, n, _, _ = counts[key]
    return i / n


def derived(R):
    """Per-seal and per-rotation instructions from the differences between the raw bus runs."""
    c = R["counts"]
    i0, _, s0, r0 = c["raw_c"]
    i1, _, s1, r1 = c["raw_c_128"]
    i2, _, s2, r2 = c["raw_c_seg"]
    seal = (i1 - i0) / (s1 - s0)  # same bytes, more frames: the fixed part of a seal
    rot = (i2 - i0 - seal * (s2 - s0)) / (r2 - r0)  # rotations, net of the extra seals they force
    return seal, rot


def thumb_factor(T):
    """Thumb-1/Thumb-2 static instruction ratio of the VM's hot C (the bulk of the per-frame cost)."""
    rows = [v for v in T.get("vm_instr", {}).values() if None not in v]
    if not rows:
        return None
    return sum(b for _, b in rows) / sum(a for a, _ in rows)


def section(R, seconds):
    t, c, T = R["times"], R["counts"], R["thumb"]
    lines = ["## Firmware writer (MicroPython)", ""]
    lines += [
        "The device writer (`firmware/logb`) under real MicroPython 1.28 (tests/firmware/mpreal.py builds both "
        "ports): the unix port for time (as a ratio to a floor in the same run) and heap, the qemu MPS2-AN385 "
        "image (Cortex-M3, the firmware frozen in, `logbc` built in) for guest instruction counts. All in one "
        f"run of `python firmware/bench/run_bench.py` ({seconds:.0f} s, {datetime.date.today().isoformat()}). "
        "Writer: `append_can` per frame, `poll()` every 64 frames, into a RAM sink, page and DATA frame "
        "buffers 512 B, durability `frame`, steady state (a warm-up lap first). Workloads from the real Lancer "
        "trace (`firmware/bench/inputs.py`): **raw bus**, every frame with a raw-bus-only config (18-byte "
        "records); **per-message**, the frames of its 20 most frequent ids with a config of those 20 messages, "
        "each frame routed to its message stream alone (t + payload + missing). The floor is a bare "
        "`struct.pack_into` of the same record (the routed stream's format) per frame into a preallocated buffer.",
        "",
        f"**Unix port** (x64, `.mpy` package, `time.ticks_us`): {R['frames']:,} trace frames, {R['laps']} laps "
        f"per run, best of {R['reps']} runs.",
        "",
        "| workload | CRC | µs per frame | vs pack_into floor | bytes per frame |",
        "| --- | --- | --- | --- | --- |",
    ]
    for wl, label in (("raw", "raw bus"), ("msg", "per-message")):
        fus, fn, _ = t[f"{wl}_floor"]
        lines.append(f"| {label} | floor: `struct.pack_into` | {fus / fn:.3f} | 1.0× | |")
        for crc in CRCS + (("c_2k",) if wl == "raw" else ()):
            us, n, b = t[f"{wl}_{crc}"]
            name = {"pure": "pure Python", "viper": "viper", "c": "C (`logbc`)",
                    "c_2k": "C, 2 KiB page and frames"}[crc]
            lines.append(f"| {label} | {name} | {us / n:.3f} | {us / n / (fus / fn):.1f}× | {b / n:.2f} |")
    cr = t["raw_c"][0] / t["raw_c"][1] / (t["raw_floor"][0] / t["raw_floor"][1])
    cm = t["msg_c"][0] / t["msg_c"][1] / (t["msg_floor"][0] / t["msg_floor"][1])
    lines += ["", f"Goal: ≤ 4× the floor with the C CRC. Measured {cr:.1f}× (raw bus) and {cm:.1f}× (per-message): "
              + ("met." if max(cr, cm) <= 4 else "not met."), ""]

    seal, rot = derived(R)
    lines += [
        f"**Cortex-M3 instruction counts** (qemu `-icount shift=0,sleep=off`: one instruction per ns of virtual "
        "time, each count starts on a timer tick after a WFI, so the numbers repeat exactly — "
        f"tests/firmware/test_fw_qemu.py; counted with the heap locked, so nothing counted allocates): raw bus, the "
        f"first {R['qemu_frames']:,} trace frames, {R['qemu_laps']} laps; per-message, the routed ones of the first "
        f"{R['qemu_frames'] // 3:,}, {3 * R['qemu_laps']} laps (what the 140 KB heap holds next to that config); "
        "counted after a warm-up lap, per frame all-in (its share of seals and `poll()`).",
        "",
        "| case | instructions per unit | vs pack_into floor | DATA frames sealed |",
        "| --- | --- | --- | --- |",
    ]
    for wl, label in (("raw", "raw bus"), ("msg", "per-message")):
        fl = per_frame(c, f"{wl}_floor")
        lines.append(f"| {label}: floor, `struct.pack_into` | {fmt(fl)} | 1.0× | |")
        for crc in CRCS:
            k = f"{wl}_{crc}"
            name = {"pure": "pure-Python CRC", "viper": "viper CRC", "c": "C CRC"}[crc]
            lines.append(f"| {label}: `append_can`, {name} | {fmt(per_frame(c, k))} | "
                         f"{per_frame(c, k) / fl:.1f}× | {c[k][2]:,} |")
    lines += [
        f"| sensor record, `append(t, v, ok)` | {fmt(per_frame(c, 'sensor_append'))} | | {c['sensor_append'][2]:,} |",
        f"| sensor record, `pend` + `pack_into` + `finish` | {fmt(per_frame(c, 'sensor_pend'))} | | "
        f"{c['sensor_pend'][2]:,} |",
        f"| DATA frame seal, fixed part (128 B vs 512 B raw frames) | {fmt(seal)} | | |",
        f"| segment rotation (4 KiB segments; SYNC, SCHEMA, META) | {fmt(rot)} | | |",
        "",
    ]
    best = min(per_frame(c, "raw_c"), per_frame(c, "msg_c"))
    worst = max(per_frame(c, "raw_c"), per_frame(c, "msg_c"))
    lines += [f"Goal: ≤ {BUDGET:,} instructions per frame all-in. Measured {fmt(best)}–{fmt(worst)} with the C CRC: "
              + ("met." if worst <= BUDGET else f"not met ({worst / BUDGET:.1f}× the budget)."), ""]

    lines += heap_lines(R)
    lines += rp2040_lines(R, T)
    return "\n".join(lines)


def heap_lines(R):
    H, Q = R["heap"], R["qheap"]
    lines = [
        "**Heap after set-up** (`gc.mem_alloc()` after a collection; K synthetic 8-byte message streams + the "
        "raw bus stream; then 2,000 frames with the heap locked). Unix port built 32-bit (i386: a board's "
        "4-byte object slots, small ints below 2**30), package from `.mpy`, SCHEMAs restated from the open "
        "config file, run under `-X heapsize=64K` (a hard cap) and, "
        "when that fails, under 512K to measure it:",
        "",
        "| message streams | interpreter + code | writer state | live total | start-up transient | fits 64 KiB | "
        "locked steady state |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k in HEAPS:
        h = H[k]
        fits = f"**no** (MemoryError in `{h['error_64k']}`)" if h["error_64k"] else "yes"
        locked = "no allocation" if h["steady_locked_ok"] else "ALLOCATED"
        lines.append(f"| {k} | {fmt(h['code'])} B | {fmt(h['writer'] - h['inputs'])} B | {fmt(h['writer'])} B | "
                     f"{fmt(h['init_peak'])} B | {fits} | {locked} |")
    rows = Q["rows"]
    cells = "; ".join(f"{k}: {fmt(rows[f'k{k}'][0])} B" if rows.get(f"k{k}") else f"{k}: MemoryError"
                      for k in HEAPS)
    k20 = rows.get("k20")
    lines += [
        "",
        f"On the 32-bit qemu image (frozen code, 4-byte slots) `import logb` leaves {fmt(Q['import'] - Q['base'])} B "
        f"live (the CRC tables and module state) and a largest free block of {fmt(Q['max_free'])} B; the writer "
        f"after set-up, with the config given as bytes so its SCHEMAs stay in RAM (no file system there): {cells} "
        "(its heap is 140 KB, and the board script holds the config's bytes too)."
        + (f" 20 message streams + raw bus: {fmt(Q['import'] + k20[0])} B live with the package, which fits "
           "64 KiB." if k20 and Q["import"] + k20[0] < 65536 else ""),
        "",
    ]
    return lines


def rp2040_lines(R, T):
    c = R["counts"]
    f = thumb_factor(T)
    nb, vb = T["natmod_bytes"], T["viper_bytes"]
    ni = T["natmod_crc_instr"]
    vm = T.get("vm_instr", {})
    m3 = per_frame(c, "raw_c"), per_frame(c, "msg_c")
    lines = [
        f"**RP2040 estimate** (Cortex-M0+ at {RP2040_MHZ} MHz). The counts above are Cortex-M3 (Thumb-2) "
        "instructions; the M0+ runs Thumb-1, so the same C needs more instructions. Measured here, per kind of "
        "code on the per-frame path:",
        "",
        "- the VM and runtime (almost all of the cost: the writer is bytecode, frozen or `.mpy`, whose "
        "interpretation is the port's C): the qemu image's hottest sources ("
        + ", ".join(f"`{k}.c`" for k in vm) + ") compiled with its flags for `cortex-m3` and `cortex-m0plus`: "
        + (f"{sum(a for a, _ in vm.values()):,} vs {sum(b for _, b in vm.values()):,} static instructions, "
           f"**×{f:.2f}** (`vm.c` alone ×{vm['vm'][1] / vm['vm'][0]:.2f})" if f else "not measured (no arm gcc)")
        + ";",
        f"- `logbc` (the C CRC): natmod `.mpy` {nb['armv6m']:,} B for armv6m vs {nb['armv7emsp']:,} B for armv7emsp"
        + (f", `crc32c.o` {ni['armv6m']:,} vs {ni['armv7emsp']:,} static instructions" if None not in ni.values()
           else "") + ";",
        f"- `crc_viper` compiled by mpy-cross: {vb['armv6m']:,} B (`-march=armv6m`) vs {vb['armv7m']:,} B "
        "(`-march=armv7m`); the bytecode itself is the same for both.",
        "",
    ]
    if not f:
        return lines
    lo, hi = (min(m3) * f * CPI[0] / RP2040_MHZ, max(m3) * f * CPI[1] / RP2040_MHZ)
    budget_us = 1e6 / BUS_FPS
    lines += [
        f"Estimate: M0+ instructions = M3 count × {f:.2f} (the VM factor for all of it; the C CRC is a small "
        f"share with `logbc`). Cycles per instruction {CPI[0]} to {CPI[1]}: {CPI[0]} when every fetch hits the "
        "16 KB XIP cache (on the M0+ loads, stores and taken branches take 2 cycles, ~30% of VM code), up to "
        f"{CPI[1]} when the VM loop, the runtime functions it calls and the frozen bytecode (all in flash) do "
        "not fit the cache together and lines are refetched over QSPI. "
        f"Per frame with the C CRC: {fmt(min(m3) * f)}–{fmt(max(m3) * f)} M0+ instructions, {lo:.0f}–{hi:.0f} µs; "
        f"a fully loaded bus ({BUS_FPS:,} frames/s) leaves {budget_us:.0f} µs per frame, so the writer would take "
        f"{lo / budget_us:.0%}–{hi / budget_us:.0%} of the CPU: headroom {budget_us / hi:.2f}×–{budget_us / lo:.2f}× "
        f"against the goal's 2× (below 1× it falls behind); it keeps up to {1e6 / hi:,.0f}–{1e6 / lo:,.0f} frames/s. "
        + (f"The {BUDGET:,}-instruction budget is {max(m3) / BUDGET:.1f}× short for the worse workload."
           if max(m3) > BUDGET else f"Both workloads are inside the {BUDGET:,}-instruction budget."),
    ]
    return lines


def write_section(text, path=ROOT / "BENCHMARKS.md"):
    """Replace the `firmware` block of BENCHMARKS.md (tools/benchmd.py); nothing else changes."""
    benchmd.splice(path, "firmware", text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=20000, help="unix port: trace frames per lap")
    ap.add_argument("--laps", type=int, default=3, help="unix port: laps per timed run")
    ap.add_argument("--reps", type=int, default=9, help="unix port: timed runs per case (the best counts)")
    ap.add_argument("--qemu-frames", type=int, default=600, help="qemu: trace frames per lap")
    ap.add_argument("--qemu-laps", type=int, default=3, help="qemu: counted laps")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--from-json", default=None, help="reformat a previous run's JSON (its last output line)")
    ap.add_argument("--output", type=pathlib.Path, default=ROOT / "BENCHMARKS.md",
                    help="the file whose `firmware` block is replaced (default BENCHMARKS.md)")
    args = ap.parse_args(argv)
    t = datetime.datetime.now()
    if args.from_json:
        R = json.loads(pathlib.Path(args.from_json).read_text().strip().splitlines()[-1])
        R["heap"] = {int(k): v for k, v in R["heap"].items()}
    else:
        R = measure(args)
        R["seconds"] = (datetime.datetime.now() - t).total_seconds()
    text = section(R, R.get("seconds", 0))
    print(text)
    print(json.dumps(R))
    if not args.no_write:
        write_section(text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())

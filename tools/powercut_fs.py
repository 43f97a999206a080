"""Power cuts through the real filesystem (issue 16, items 1-3).

The firmware writer (firmware/logb, as .mpy on the MicroPython 1.28 unix
port) records the real durango candump trace, routed through the LBCF config
compiled from fca_giorgio.dbc (as boards/sim/run.py does), into /sd/rec.logb
on vfs.VfsFat or vfs.VfsLfs2 mounted on a block device whose 512-byte blocks
live in a host file (tests/firmware/mp_powercut_bdev.py, mp_powercut_rec.py).
The clock is the trace's own (scenario.py), so the run is deterministic: one
uncut run with a journal of its block writes gives every cut. Cut N (the
N-th block write, counted from the format's first) leaves writes 1..N-1 on
the card and, torn, the first k bytes of write N. tests/firmware/
test_powercut_fs.py checks that a process the device really stops at write N
leaves exactly that image.

Each cut is mounted read-only by a second unix-port process with the same
filesystem code (mp_powercut_mount.py), which copies the recording out; the
host then checks, with the host reader:

1. the mount and the copy work (else the cut counts as a mount failure);
2. the copy is a byte prefix of what CPython's run of the same writer and
   inputs wrote (tests/firmware/scenario.py), so its records are exactly a
   prefix of what was appended (checked per stream, every field, by LogbFile);
3. every record and byte the writer had declared durable before the cut
   (the recorder prints them after each flush) is there;
4. FAT only: `logb.fat.recover` gives a recording that is still a prefix of
   the reference and holds at least the plain file's records.

Records lost per cut = records the writer had been handed before the cut
(sealed or not) - records recovered. "Beyond" = bytes of the recording on
the card past the file's recorded size (FAT: the clusters after its end,
compared with the reference; littlefs: not measured — an unsynced write's
blocks are not reachable from its metadata).

    python tools/powercut_fs.py                 # 200 cuts per run spread evenly + 40 torn (~7 min)
    python tools/powercut_fs.py --full          # every N of every run (~27,000 cuts, about an hour)
    python tools/powercut_fs.py --output BENCHMARKS.md   # splice the "powercut" block
"""

import argparse
import json
import pathlib
import random
import statistics
import struct
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
FW_TESTS = ROOT / "tests" / "firmware"
for _p in (FW_TESTS, ROOT / "boards" / "sim", ROOT / "tools"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
import fwload  # noqa: E402
import fwtools  # noqa: E402
import mpreal  # noqa: E402
import run as sim  # noqa: E402

FILESYSTEMS = ("fat", "lfs")
# (durability, flush_ms): the writer's three policies, and the frame policy at three flush intervals
POLICIES = (("frame", 1000), ("frame", 200), ("frame", 50), ("segment", 1000), ("close", 1000))
BLOCKS = 2048  # a 1 MiB card: FAT12 with 1-sector clusters, or 2048 littlefs blocks
HEAP = "4M"


class Study:
    """The inputs (trace frames, config) of every run, in `workdir`."""

    def __init__(self, workdir, frames=10000, segment_bytes=65536, blocks=BLOCKS):
        self.dir = pathlib.Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        sim.build_config(sim.DEFAULT_DBC, "sim-logger", self.dir / "config.lbcf")
        self.config = (self.dir / "config.lbcf").read_bytes()
        items = fwtools.read_candump(sim.DEFAULT_TRACE, limit=frames)
        (self.dir / "frames.bin").write_bytes(fwtools.encode_frames(items))
        self.segment_bytes = segment_bytes
        self.blocks = blocks
        self._refs = {}
        # one snapshot of firmware/logb for every run of the study: its .mpy build for MicroPython, and the
        # CPython reference loaded now (a source edited during a long study would otherwise split the two)
        self.lib = mpreal.firmware_mpy()
        fwload.load()

    def params(self, fs, durability, flush_ms, **kw):
        return dict(fs=fs, durability=durability, flush_ms=flush_ms, segment_bytes=self.segment_bytes,
                    blocks=self.blocks, dir=str(FW_TESTS), **{"in": str(self.dir)}, **kw)

    def reference(self, durability, flush_ms):
        """What CPython's writer makes of the same inputs: the bytes every cut must be a prefix of."""
        key = (durability, flush_ms)
        if key not in self._refs:
            self._refs[key] = Reference(fwtools.cpython_bytes(self.dir, self.config,
                                                              self.params("", durability, flush_ms)))
        return self._refs[key]

    def record(self, fs, durability, flush_ms, cut=0, torn=512, tag="run"):
        """One recording on the unix port; with cut, stopped by the device at that block write."""
        image = self.dir / f"{tag}.img"
        image.write_bytes(bytes(512 * self.blocks))
        journal = self.dir / f"{tag}.journal"  # with a cut: the writes before it
        p = self.params(fs, durability, flush_ms, image=str(image), cut=cut, torn=torn, journal=str(journal))
        pf = self.dir / f"{tag}.json"
        pf.write_text(json.dumps(p))
        r = mpreal.run_unix(FW_TESTS / "mp_powercut_rec.py", pf, heap=HEAP, lib=self.lib, check=False, timeout=600)
        run = Run(image, journal, r.stdout)
        if (cut and run.cut is None) or (not cut and run.done is None):
            raise AssertionError(f"recording failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        return run

    def mount(self, fs, run, cuts, tag="chk"):
        """Each (N, torn) cut of `run` rebuilt from its journal and mounted by MicroPython:
        [(ok, data or error)], in the order given."""
        out = self.dir / f"{tag}.out"
        out.mkdir(exist_ok=True)
        order = sorted(range(len(cuts)), key=lambda i: cuts[i])
        base = self.dir / "blank.img"
        if not base.exists():
            base.write_bytes(bytes(512 * self.blocks))
        p = dict(fs=fs, dir=str(FW_TESTS), base=str(base), journal=str(run.journal), out=str(out),
                 cuts=[list(cuts[i]) for i in order])
        return self._mount(p, order, out, tag)

    def mount_images(self, fs, images, tag="img"):
        out = self.dir / f"{tag}.out"
        out.mkdir(exist_ok=True)
        p = dict(fs=fs, dir=str(FW_TESTS), images=[str(i) for i in images], out=str(out))
        return self._mount(p, list(range(len(images))), out, tag)

    def _mount(self, p, order, out, tag):
        pf = self.dir / f"{tag}.json"
        pf.write_text(json.dumps(p))
        r = mpreal.run_unix(FW_TESTS / "mp_powercut_mount.py", pf, heap=HEAP, lib=self.lib, timeout=1800)
        res = [None] * len(order)
        for line in r.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] == "M":
                k = int(parts[1])
                f = out / f"{k}.logb"
                if parts[2] == "ok":
                    res[order[k]] = (True, f.read_bytes() if f.exists() else b"")
                else:
                    res[order[k]] = (False, parts[3])
                if f.exists():
                    f.unlink()
        if None in res:
            raise AssertionError(f"the mount checker stopped early:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        return res


class Run:
    """A recording's stdout: READY (writes of the format), D (durable after each flush), CUT, DONE."""

    def __init__(self, image, journal, stdout):
        self.image, self.journal = image, journal
        self.ready = self.done = self.cut = None
        self.durable = []  # (block writes done, records, bytes) after each flush
        for line in stdout.splitlines():
            p = line.split()
            if not p:
                continue
            if p[0] == "READY":
                self.ready = int(p[1])
            elif p[0] == "D":
                self.durable.append(tuple(map(int, p[1:4])))
            elif p[0] == "CUT":
                self.cut = (int(p[1]), int(p[2]))
            elif p[0] == "DONE":
                self.done = int(p[1])
                self.errors = int(p[2])

    def writes(self):
        """[(block, offset, data, records appended)] of the journal."""
        out = []
        j = self.journal.read_bytes()
        p = 0
        while p < len(j):
            blk, off, ln, recs = struct.unpack_from("<IHHI", j, p)
            out.append((blk, off, j[p + 12:p + 12 + ln], recs))
            p += 12 + ln
        return out

    def declared(self, n):
        """(records, bytes) declared durable when block write n is the cut (writes 1..n-1 done)."""
        best = (0, 0)
        for w, recs, nbytes in self.durable:
            if w <= n - 1:
                best = (recs, nbytes)
        return best


def clockless(fs, img):
    """The card without what FatFs takes from the clock (the volume serial, the root directory's
    timestamps), so two runs of the same recording compare equal; littlefs stores no time."""
    if fs != "fat":
        return bytes(img)
    from logb import fat

    out = bytearray(img)
    out[39:43] = bytes(4)
    v = fat.FatImage(out)
    for o in range(v.root_offset, v.data_offset, 32):
        if out[o] not in (0, 0xE5) and out[o + 11] != 0x0F:
            out[o + 13:o + 20] = bytes(7)  # creation time and date, access date
            out[o + 22:o + 26] = bytes(4)  # write time and date
    return bytes(out)


def image_at(writes, blocks, n, torn):
    """The card after cut (n, torn), built on the host from the journal."""
    img = bytearray(512 * blocks)
    for blk, off, data, _ in writes[:n - 1]:
        p = blk * 512 + off
        img[p:p + len(data)] = data
    if torn and n <= len(writes):
        blk, off, data, _ = writes[n - 1]
        p = blk * 512 + off
        k = min(torn, len(data))
        img[p:p + k] = data[:k]
    return img


class Reference:
    """The uninterrupted run (CPython): its bytes and records per stream."""

    def __init__(self, data):
        import logb

        self.bytes = data
        f = logb.LogbFile(data)
        assert f.report.clean, f.report.skipped
        self.columns = {u: (s.columns().axis, s.columns().raw) for u, s in f.streams.items()}
        self.records = sum(len(a) for a, _ in self.columns.values())


def records_of(ref, data):
    """Records in `data` (a cut recording), checked to be exactly a prefix of each stream's
    records in the reference (axis and every raw field); AssertionError otherwise."""
    import logb

    if len(data) < 16:
        return 0
    f = logb.LogbFile(data)
    total = 0
    for uuid, s in f.streams.items():
        axis, raw = ref.columns[uuid]
        cols = s.columns()
        k = len(cols.axis)
        assert k <= len(axis) and (cols.axis == axis[:k]).all(), f"stream {uuid.hex()}: axis not a prefix"
        for name, col in raw.items():
            assert (cols.raw[name] == col[:k]).all(), f"stream {uuid.hex()}: field {name} not a prefix"
        total += k
    return total


def check_cut(ref, fs, run, writes, n, torn, mounted, image=None):
    """Checks 1-4 of the module docstring for one cut; a result dict (AssertionError on a broken promise)."""
    appended = writes[n - 1][3] if n <= len(writes) else ref.records
    d_records, d_bytes = run.declared(n)
    res = {"n": n, "torn": torn, "appended": appended, "durable": d_records}
    ok, data = mounted
    res["mounted"] = ok
    if not ok:
        res["error"] = data
        return res
    assert ref.bytes[:len(data)] == data, f"cut {n}/{torn}: the file is not a byte prefix of the reference"
    got = records_of(ref, data)
    assert len(data) >= d_bytes, f"cut {n}/{torn}: {len(data)} bytes, {d_bytes} declared durable"
    assert got >= d_records, f"cut {n}/{torn}: {got} records, {d_records} declared durable"
    res.update(size=len(data), records=got, lost=appended - got)
    if fs == "fat":
        from logb import fat

        img = image if image is not None else image_at(writes, BLOCKS, n, torn)
        rec = [r for r in fat.recover(img) if r.path.endswith("rec.logb")]
        if rec:
            r = rec[0]
            assert r.data == ref.bytes[:len(r.data)], f"cut {n}/{torn}: recover-fat is not a prefix"
            more = records_of(ref, r.data)
            assert more >= got, f"cut {n}/{torn}: recover-fat has {more} records, the file {got}"
            res.update(recovered=more, beyond=on_card(img, r.size, ref), recovered_bytes=len(r.data))
    return res


def on_card(img, size, ref):
    """Bytes of the reference past `size` that the card holds where recover's heuristic looks."""
    from logb import fat

    v = fat.FatImage(img)
    e = next(e for e in v.entries() if e.path.endswith("rec.logb"))
    orphans = v.orphans()
    data = v.beyond(e, orphans[0] if orphans and not e.cluster else None)
    n = 0
    lim = min(len(data), len(ref.bytes))
    while size + n < lim and data[size + n] == ref.bytes[size + n]:
        n += 1
    return n


def cut_list(run, nwrites, sample, torn_sample, seed=1):
    """Cuts after the format: every N (sample 0) or `sample` spread evenly; plus torn ones."""
    first = run.ready + 1
    ns = list(range(first, nwrites + 2))  # nwrites + 1: the card after the whole run
    if sample and sample < len(ns):
        ns = [ns[i * (len(ns) - 1) // (sample - 1)] for i in range(sample)]
    rnd = random.Random(seed)
    cuts = [(n, 0) for n in ns]
    pool = list(range(first, nwrites + 1))
    for n in rnd.sample(pool, min(torn_sample, len(pool))):
        cuts.append((n, rnd.randrange(1, 512)))
    return cuts


def study(st, fs, durability, flush_ms, sample=0, torn_sample=40, log=print):
    ref = st.reference(durability, flush_ms)
    tag = f"{fs}-{durability}-{flush_ms}"
    run = st.record(fs, durability, flush_ms, tag=tag)
    writes = run.writes()
    final = None
    cuts = cut_list(run, len(writes), sample, torn_sample)
    mounted = st.mount(fs, run, cuts, tag=tag + "-chk")
    results = []
    img = bytearray(512 * st.blocks)
    applied = 0
    for (n, torn), m in sorted(zip(cuts, mounted), key=lambda x: x[0]):
        while applied < n - 1:  # the card after the cut, built incrementally (FAT recovery reads it)
            blk, off, data, _ = writes[applied]
            img[blk * 512 + off:blk * 512 + off + len(data)] = data
            applied += 1
        image = img
        if torn and n <= len(writes):
            image = bytearray(img)
            blk, off, data, _ = writes[n - 1]
            k = min(torn, len(data))
            image[blk * 512 + off:blk * 512 + off + k] = data[:k]
        results.append(check_cut(ref, fs, run, writes, n, torn, m, image if fs == "fat" else None))
        if n == len(writes) + 1:
            final = results[-1]
    assert final is not None and final["mounted"] and final["records"] == ref.records, "the whole run is not whole"
    rec_writes = len(writes) - run.ready
    summary = summarize(results)
    summary.update(fs=fs, durability=durability, flush_ms=flush_ms, records=ref.records, file_bytes=len(ref.bytes),
                   block_writes=rec_writes, flushes=len(run.durable),
                   card_bytes=sum(len(w[2]) for w in writes[run.ready:]))
    log(f"{tag}: {json.dumps(summary)}")
    return summary, results, run


def summarize(results):
    lost = [r["lost"] for r in results if r["mounted"]]
    out = {"cuts": len(results), "torn": sum(1 for r in results if r["torn"]),
           "mount_failures": sum(1 for r in results if not r["mounted"]),
           "lost_median": statistics.median(lost) if lost else None, "lost_max": max(lost) if lost else None}
    beyond = [r["beyond"] for r in results if "beyond" in r]
    if beyond:
        gained = [r["recovered"] - r["records"] for r in results if "recovered" in r]
        out.update(beyond_median=statistics.median(beyond), beyond_max=max(beyond),
                   recovered_cuts=sum(1 for g in gained if g > 0), recovered_mean=statistics.fmean(gained),
                   recovered_max=max(gained))
    return out


def markdown(rows, args):
    lines = ["## Power cuts through the filesystem (issue 16)", "",
             f"`python tools/powercut_fs.py{' --cuts %d' % args.cuts if args.cuts else ''}`: the firmware writer on "
             "the MicroPython 1.28 unix port records the first "
             f"{args.frames} frames of the durango candump trace (config from fca_giorgio.dbc, segments of "
             f"{args.segment_bytes} B) into a file on FAT or littlefs on a 512-byte-block device of "
             f"{BLOCKS * 512 // 1024} KiB; the device is cut at block write N "
             f"({'every N' if not args.cuts else f'{args.cuts} N spread evenly'}, plus {args.torn} torn writes "
             "keeping the first 1..511 bytes), the card is mounted by MicroPython and read by the host. In every "
             "cut the recording was a byte prefix of the uninterrupted run's and held every record the policy "
             "had declared durable (the tool stops otherwise). Lost = records handed to the writer before the "
             "cut and not in the file; beyond = bytes of the recording on the card past the FAT file's size; "
             "recover = records `logb recover-fat` adds to the file's.", "",
             "| fs | policy | flush_ms | cuts (torn) | mount failures | lost median | lost max | beyond median/max B "
             "| recover: cuts gaining / +records mean / max | flushes | block writes/record | card B/record "
             "| Logb B/record |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in rows:
        beyond = f"{s['beyond_median']:g} / {s['beyond_max']}" if "beyond_median" in s else "n/a"
        recov = (f"{s['recovered_cuts']} / {s['recovered_mean']:.0f} / {s['recovered_max']}"
                 if "recovered_cuts" in s else "n/a")
        lines.append(f"| {s['fs']} | {s['durability']} | {s['flush_ms']} | {s['cuts']} ({s['torn']}) | "
                     f"{s['mount_failures']} | {s['lost_median']:g} | {s['lost_max']} | {beyond} | {recov} | "
                     f"{s['flushes']} | {s['block_writes'] / s['records']:.3f} | "
                     f"{s['card_bytes'] / s['records']:.1f} | {s['file_bytes'] / s['records']:.1f} |")
    lines += ["", f"{rows[0]['records']} records per run. Flushes: the writer's flush() calls (its durability "
              "points); block writes and card bytes: what the filesystem wrote to the device for the recording "
              "(format excluded); Logb: the file's own bytes."]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuts", type=int, default=200, help="cuts N per run, spread evenly (0: every N)")
    ap.add_argument("--full", action="store_true", help="every N (the default; overrides --cuts)")
    ap.add_argument("--torn", type=int, default=40, help="torn cuts per run (random N, 1..511 bytes)")
    ap.add_argument("--frames", type=int, default=10000)
    ap.add_argument("--segment-bytes", type=int, default=65536)
    ap.add_argument("--fs", choices=FILESYSTEMS, action="append")
    ap.add_argument("--json", help="write every summary here")
    ap.add_argument("--output", help="splice the `powercut` block into this markdown file (BENCHMARKS.md)")
    args = ap.parse_args(argv)
    if args.full:
        args.cuts = 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        st = Study(tmp, frames=args.frames, segment_bytes=args.segment_bytes)
        for fs in args.fs or FILESYSTEMS:
            for dur, ms in POLICIES:
                rows.append(study(st, fs, dur, ms, sample=args.cuts, torn_sample=args.torn)[0])
    md = markdown(rows, args)
    print(md)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.output:
        import benchmd

        benchmd.splice(args.output, "powercut", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Power-cut trials for the firmware writer (issue 5, item 4d).

The simulated logger (boards/sim/main.py on MicroPython in Node.js) replays
a real CAN trace on the trace's own clock and writes through a JS sink that
writes a host file (cut into random 1..16-byte writes at 333 kB/s, so a
kill can land inside any frame) and fsyncs it on flush(); after each fsync it logs the
durable byte count. Each trial SIGKILLs the Node process once its file holds
a random number of bytes (so every cut lands inside the recording, however
loaded the machine) and checks, with the host reader:

1. the file is a byte prefix of an uninterrupted run's file (append-only,
   nothing rewritten, no garbage; the run is deterministic);
2. it holds at least the last durable offset: everything the declared
   durability policy promised reached the medium;
3. `logb.LogbFile` opens it without an exception, and the report is honest:
   no skipped range except one `truncated` range from the end of the last
   complete frame to the end of the file, `truncated` set exactly then;
4. every stream returns exactly the records of the complete DATA frames in
   the cut, equal (axis and every raw field) to the same records of the
   uninterrupted run — so every frame the policy promised is recovered.

    python tools/powercut.py --trials 1000 --jobs 2      # the soak
    python tools/powercut.py --trials 20 --durability segment

tests/firmware/test_fw_powercut.py runs 100 trials of this in CI.
"""

import argparse
import concurrent.futures as cf
import json
import pathlib
import random
import select
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "boards" / "sim"))
import run as sim  # noqa: E402

SESSION = "c0ffee00c0ffee00c0ffee00c0ffee00"


class Reference:
    """An uninterrupted run: its bytes, frame ends and records per stream."""

    def __init__(self, workdir, frames=4000, durability="frame", segment_bytes=96 * 1024, flush_ms=200,
                 trace=sim.DEFAULT_TRACE, dbc=sim.DEFAULT_DBC, page=512):
        self.dir = pathlib.Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = sim.build_config(dbc, "sim-logger", self.dir / "config.lbcf")
        self.settings = {"durability": durability, "segment_bytes": segment_bytes, "flush_ms": flush_ms,
                         "session": SESSION, "page": page}
        self.frames, self.trace = frames, trace
        out = self.dir / "reference.logb"
        t = time.monotonic()
        cmd, env = self.command(out, self.dir / "reference.durable", seed=1)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        if r.returncode != 0 or "DONE" not in r.stdout:
            raise RuntimeError(f"reference run failed: {r.stdout[-2000:]} {r.stderr[-2000:]}")
        self.seconds = time.monotonic() - t
        self.bytes = out.read_bytes()
        self._index()

    def command(self, out, durable, seed):
        # an SD card writing 333 kB/s in pieces of 1..16 bytes: cuts land inside frames too
        return sim.command(out, self.config, self.trace, limit=self.frames, durable_log=durable, chunk=16,
                           seed=seed, settings=self.settings, sd_ns_per_byte=3000)

    def _index(self):
        import logb
        from logb.scan import Report, check_header, iter_frames

        rep = Report()
        self.frame_list = list(iter_frames(self.bytes, rep, check_header(self.bytes, rep)))
        self.ends = [16] + [fr.end for fr in self.frame_list]
        f = logb.LogbFile(self.bytes)
        assert f.report.clean, f.report.skipped
        self.columns = {}
        for uuid, s in f.streams.items():
            cols = s.columns()
            self.columns[uuid] = (cols.axis, cols.raw)

    def last_complete(self, n):
        """End of the last complete frame (or the header) within n bytes."""
        best = 0
        for e in self.ends:
            if e <= n:
                best = e
        return best


def check(ref, cut, durable):
    """Checks 1-4 of the module docstring; returns a summary dict or raises AssertionError."""
    import logb

    n = len(cut)
    assert ref.bytes[:n] == cut, "the cut file is not a prefix of the uninterrupted run"
    assert n >= durable, f"{n} bytes on the medium but {durable} were declared durable"
    f = logb.LogbFile(cut)  # must not raise
    rep = f.report
    last = ref.last_complete(n)
    if n < 16:
        expected = [(0, n, "truncated")] if n else []
        assert rep.truncated, "a cut inside the header must be reported truncated"
    else:
        expected = [] if last == n else [(last, n, "truncated")]
        assert rep.truncated == (last < n), f"truncated={rep.truncated} but the last frame ends at {last} of {n}"
    got = [(s.start, s.end, s.cause) for s in rep.skipped]
    assert got == expected, f"skipped {got}, expected {expected}"
    records = 0
    for uuid, (axis, raw) in ref.columns.items():
        k = sum(fr_records(ref, fr) for fr in ref.frame_list
                if fr.type == 0x20 and fr.end <= n and ref_uuid(ref, fr) == uuid)
        if uuid not in f.streams:
            assert k == 0, f"stream {uuid.hex()} missing, {k} records expected"
            continue
        cols = f.streams[uuid].columns()
        assert len(cols.axis) == k, f"stream {uuid.hex()}: {len(cols.axis)} records, expected {k}"
        assert (cols.axis == axis[:k]).all()
        for name, col in raw.items():
            assert (cols.raw[name] == col[:k]).all(), f"field {name} differs"
        records += k
    durable_records = sum(fr_records(ref, fr) for fr in ref.frame_list if fr.type == 0x20 and fr.end <= durable)
    return {"size": n, "durable": durable, "truncated": rep.truncated, "records": records,
            "durable_records": durable_records}


def fr_records(ref, fr):
    return int.from_bytes(ref.bytes[fr.offset + 8 + 8:fr.offset + 8 + 12], "little")


_UUIDS = {}


def ref_uuid(ref, fr):
    """The uuid bound to a DATA frame's stream_id (stream ids are fixed per session here)."""
    key = (id(ref), fr.stream_id)
    if key not in _UUIDS:
        for sf in ref.frame_list:
            if sf.type == 0x10 and sf.stream_id == fr.stream_id:
                _UUIDS[key] = ref.bytes[sf.offset + 8:sf.offset + 24]
                break
    return _UUIDS[key]


def trial(ref, i, seed):
    """One power cut: start the board, kill it once the card holds a random
    number of bytes (the board's progress, not the clock, picks the moment:
    a loaded machine moves every cut later in time, none of them out of the
    recording), check."""
    rnd = random.Random(seed)
    out = ref.dir / f"cut{i}.logb"
    durable_log = ref.dir / f"cut{i}.durable"
    cut_at = rnd.randrange(len(ref.bytes))
    cmd, env = ref.command(out, durable_log, seed=seed)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = _line_within(p, START_S)
        if "READY" not in line:
            raise AssertionError(f"board did not start within {START_S} s: {line!r}")
        _grown_to(out, cut_at, p, RECORD_S)
        p.send_signal(signal.SIGKILL)
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=60)
        p.stdout.close()
    cut = out.read_bytes()
    lines = durable_log.read_text().split("\n")
    durable = int(lines[-2]) if len(lines) >= 2 and lines[-2] else 0
    killed = p.returncode == -signal.SIGKILL
    result = check(ref, cut, durable)
    result.update(trial=i, killed=killed, cut_at=cut_at)
    out.unlink()
    durable_log.unlink()
    return result


START_S = 120  # Node + MicroPython start-up, generous for a loaded 2-core machine
RECORD_S = 300  # the recording itself (about a second on an idle machine)


def _line_within(p, seconds):
    """The board's first stdout line, or AssertionError after `seconds`."""
    ready, _, _ = select.select([p.stdout], [], [], seconds)
    if not ready:
        raise AssertionError(f"the board printed nothing within {seconds} s")
    return p.stdout.readline()


def _grown_to(path, size, p, seconds):
    """Wait until `path` holds `size` bytes or the board has exited; AssertionError after `seconds`."""
    end = time.monotonic() + seconds
    while p.poll() is None and (not path.exists() or path.stat().st_size < size):
        if time.monotonic() > end:
            raise AssertionError(f"{path} did not reach {size} bytes within {seconds} s")
        time.sleep(0.001)  # a stat per millisecond: the card writes ~333 bytes in that time


def run_trials(ref, trials, jobs=2, seed=0):
    results = []
    with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = [ex.submit(trial, ref, i, seed * 100003 + i) for i in range(trials)]
        for fut in cf.as_completed(futs):
            results.append(fut.result())
    return sorted(results, key=lambda r: r["trial"])


def main(argv=None):
    ap = argparse.ArgumentParser(description="SIGKILL the simulated logger at random moments; check recovery.")
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--frames", type=int, default=4000, help="trace frames per run")
    ap.add_argument("--durability", default="frame", choices=("frame", "segment", "close"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args(argv)
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="logb-powercut-"))
    ref = Reference(work, frames=args.frames, durability=args.durability)
    print(f"reference run: {len(ref.bytes)} bytes, {len(ref.frame_list)} frames, {ref.seconds:.2f} s", flush=True)
    t = time.monotonic()
    results = run_trials(ref, args.trials, args.jobs, args.seed)
    killed = sum(r["killed"] for r in results)
    truncated = sum(r["truncated"] for r in results)
    summary = {"trials": len(results), "killed_mid_run": killed, "ended_mid_frame": truncated,
               "durability": args.durability, "seconds": round(time.monotonic() - t, 1),
               "min_size": min(r["size"] for r in results), "max_size": max(r["size"] for r in results),
               "all_promised_frames_recovered": True}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

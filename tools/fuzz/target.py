"""The fuzz target: the whole read path on one input, and its checks.

`check(data, path)` reads the input (written at `path`) under each backend
through every reading entry point — logb.detect, LogbFile (and recovery
mode), every stream's columns, phys, wall and windows, attachments,
validate, the END→INDEX path (seal.IndexedFile) and the CLI's `verify`,
`info --json`, `dump --json` and `dump --frames --json` called in-process —
and raises Finding when:

- anything but a LogbError escapes a step (the CLI: when main() lets an
  error through, or exits with a status it does not document);
- a step takes more than STEP_CPU_S of CPU or the process's resident set
  peaks above RSS_LIMIT_MB during it (inputs up to 1 MB; issue 10);
- the C and Python backends disagree on any step's outcome (the same records,
  the same report, the same error class).
"""

import contextlib
import hashlib
import io
import json
import math
import resource
import time
import traceback
import warnings

import numpy as np

import logb
from logb import _backend
from logb.cli.main import main as cli_main
from logb.errors import LogbError
from logb.seal import IndexedFile

STEP_CPU_S = 5.0
RSS_LIMIT_MB = 256
# What a fresh interpreter holds with logb and numpy imported (about 41 MB): a step is
# charged this plus what it adds to the process, not what earlier steps left resident.
FRESH_PROCESS_MB = 48
MAX_STREAMS = 64  # streams (and attachments) exercised one by one; the CLI steps still read them all
CLI_EXITS = (0, 1, 2, 3, 4)  # what a reading command may exit with (`logb --help`; 4: verify, sink losses), 64 aside
CLI_COMMANDS = (("verify",), ("info", "--json"), ("dump", "--json"), ("dump", "--frames", "--json"))


class Finding(Exception):
    """A read-path failure: `kind` (exception, cpu, rss, disagree, crash, exit),
    the `step` it happened in, a one-line `detail` and a traceback summary."""

    def __init__(self, kind, step, detail, trace=""):
        super().__init__(f"{kind} in {step}: {detail}")
        self.kind, self.step, self.detail, self.trace = kind, step, detail, trace

    @property
    def signature(self):
        """What two inputs share when they are the same bug (for dedup and minimising)."""
        step = self.step.split("[")[0].split(":")[-1]  # the same bug under either backend
        if self.kind in ("exception", "disagree", "exit"):  # the error class (or what differs) tells bugs apart
            return f"{self.kind}:{step}:{self.detail.split(':')[0]}"
        return f"{self.kind}:{step}"  # cpu, rss, hang, crash: the numbers vary from run to run

    def as_json(self):
        return {"kind": self.kind, "step": self.step, "detail": self.detail, "trace": self.trace}

    @classmethod
    def from_json(cls, obj):
        return cls(obj["kind"], obj["step"], obj["detail"], obj.get("trace", ""))


def backends():
    return ("c", "python") if _backend.load_c() is not None else ("python",)


# ---------------------------------------------------------------- limits
class Guard:
    """Runs one step: turns LogbError into an outcome, anything else into a
    Finding, and checks the step's CPU time and peak RSS. `enforce` also sets
    RLIMIT_CPU so a step that never ends is killed (a watchdog child only)."""

    def __init__(self, enforce=False, progress=None):
        self.enforce = enforce
        self.progress = progress
        self.rss_reset = _reset_peak_rss()

    def __call__(self, step, fn):
        step = f"{_backend.current}:{step}"
        if self.progress is not None:
            self.progress(step)
        if self.rss_reset:
            _reset_peak_rss()
        resident = peak_rss_mb()  # just after the reset: what the process holds now
        start = time.process_time()
        if self.enforce:
            used = resource.getrusage(resource.RUSAGE_SELF)
            spent = used.ru_utime + used.ru_stime
            soft = math.ceil(spent + STEP_CPU_S + 1)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.getrlimit(resource.RLIMIT_CPU)[1]))
        try:
            outcome = ("ok", fn())
        except LogbError as exc:
            outcome = ("error", type(exc).__name__)
        except Finding:
            raise
        except Exception as exc:  # the bug this fuzzer exists to find
            raise Finding("exception", step, f"{type(exc).__name__}: {str(exc)[:200]}", _trace(exc)) from None
        cpu = time.process_time() - start
        if cpu > STEP_CPU_S:
            raise Finding("cpu", step, f"{cpu:.1f} s CPU (limit {STEP_CPU_S:g} s)")
        peak = peak_rss_mb() - resident + FRESH_PROCESS_MB
        if self.rss_reset and peak > RSS_LIMIT_MB:
            raise Finding("rss", step, f"peak RSS {peak:.0f} MB as a fresh process (limit {RSS_LIMIT_MB} MB)")
        return outcome


def _reset_peak_rss():
    """Reset the kernel's peak-RSS mark (Linux clear_refs 5); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _trace(exc):
    """The innermost frames of a traceback, one line each (where to route it)."""
    frames = traceback.extract_tb(exc.__traceback__)[-4:]
    return " <- ".join(f"{f.filename.rsplit('/host/', 1)[-1]}:{f.lineno} {f.name}" for f in reversed(frames))


# ---------------------------------------------------------------- digests
def digest(value):
    """A stable, comparable summary of a value the read path returned."""
    h = hashlib.sha256()
    _feed(h, value)
    return h.hexdigest()[:16]


def _feed(h, v):
    if isinstance(v, np.ma.MaskedArray):
        h.update(b"M")
        _feed(h, np.ma.getmaskarray(v))
        _feed(h, v.filled(0) if v.dtype != object else v.data)
    elif isinstance(v, np.ndarray):
        h.update(f"A{v.dtype.str}{v.shape}".encode())
        h.update(repr(v.tolist()).encode() if v.dtype == object else np.ascontiguousarray(v).tobytes())
    elif isinstance(v, dict):
        h.update(b"D")
        for k in v:
            _feed(h, k)
            _feed(h, v[k])
    elif isinstance(v, (list, tuple)):
        h.update(f"L{len(v)}".encode())
        for x in v:
            _feed(h, x)
    elif isinstance(v, (bytes, bytearray, memoryview)):
        h.update(b"B")  # as they are: repr() of an attachment costs 8 bytes of memory per byte
        h.update(v)
    else:
        h.update(repr(v).encode())


# ---------------------------------------------------------------- the read path
def _report(f):
    r = f.report
    return ([s.as_json() for s in r.skipped], r.truncated, r.truncated_at, r.frames,
            [(n.offset, n.kind) for n in r.notes],
            [(s.uuid.hex(), s.name, s.records, s.rejected) for s in f.streams.values()])


def _columns(c):
    return [c.raw, c.axis, c.run_id, c.session]


def _windows(c):
    """Windows to ask for: everything, and the middle half of what was read."""
    if c.schema.is_time:
        out = [(-(1 << 63), (1 << 63) - 1)]
    else:
        out = [(-math.inf, math.inf)]
    if len(c.axis):
        lo, hi = np.sort(c.axis)[[len(c.axis) // 4, (3 * len(c.axis)) // 4]]
        out.append((lo.item(), hi.item()))
    return out


def _stream_steps(guard, tag, s, results):
    got = guard(f"columns[{tag}]", lambda: s.columns())
    results.append(("columns", got[0], digest(_columns(got[1])) if got[0] == "ok" else got[1]))
    if got[0] != "ok":
        return
    c = got[1]
    for name in list(c.raw)[:MAX_STREAMS]:
        results.append(("phys", name) + tuple(guard(f"phys[{tag}.{name}]", lambda: digest(c.phys(name)))))
    n = len(c)
    picks = sorted({0, n // 2, n - 1}) if n else []
    results.append(("wall",) + guard(f"wall[{tag}]", lambda: [c.wall(i).as_json() for i in picks]))
    if c.schema.is_time:
        results.append(("seconds",) + guard(f"seconds[{tag}]", lambda: digest(c.seconds())))
    for lo, hi in _windows(c):
        results.append(("window",) + guard(f"window[{tag}]", lambda: digest(_columns(s.columns(window=(lo, hi))))))


def _indexed(guard, path, results):
    def open_indexed():
        return IndexedFile(path)

    got = guard("indexed.open", open_indexed)
    results.append(("indexed",) + (got if got[0] != "ok" else ("ok", "opened")))
    if got[0] != "ok":
        return
    with got[1] as f:
        for k, s in enumerate(list(f.streams.values())[:MAX_STREAMS]):
            full = (-(1 << 63), (1 << 63) - 1) if s.schema.is_time else (-math.inf, math.inf)
            results.append(("indexed.window",) + guard(
                f"indexed.window[{k}]", lambda: digest([(o, b.axis, b.raw) for o, b in s.window(*full)])))


def _cli(argv, json_lines):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli_main(list(argv), out=out)
    if code not in CLI_EXITS:
        raise Finding("exit", " ".join(argv[:-1]), f"exit status {code}: {err.getvalue().strip()[:200]}")
    lines = err.getvalue().splitlines()
    if code and len(lines) > 1 and "Traceback" in err.getvalue():
        raise Finding("exit", " ".join(argv[:-1]), f"a traceback on stderr: {lines[-1][:200]}")
    text = out.getvalue()
    if json_lines:
        for line in text.splitlines():
            json.loads(line)  # a line that does not parse is a finding (ValueError)
    return code, digest(text)


def read_path(data, path, guard):
    """Every step's outcome, in order, under the active backend."""
    results = [("detect",) + guard("detect", lambda: [logb.detect(data[:k]) for k in (0, 1, 8, 15, 16, 17)])]
    for recover in (False, True):
        got = guard(f"open[recover={recover}]", lambda: logb.LogbFile(path, recover=recover))
        results.append(("open", recover, got[0], _report(got[1]) if got[0] == "ok" else got[1]))
        if got[0] != "ok":
            continue
        with got[1] as f:
            for k, s in enumerate(list(f.streams.values())[:MAX_STREAMS]):
                _stream_steps(guard, f"{int(recover)}.{k}", s, results)
            for k, a in enumerate(f.attachments[:MAX_STREAMS]):
                results.append(("attachment",) + guard(f"attachment[{k}]", lambda: digest(a.data())))
            results.append(("validate",) + guard("validate", lambda: (f.validate(), _report(f))[1]))
    _indexed(guard, path, results)
    for argv in CLI_COMMANDS:
        results.append(argv + guard(" ".join(argv), lambda: _cli((*argv, path), "--json" in argv)))
    return results


def shape(outcomes):
    """A coarse picture of what an input made the reader do (which steps ran,
    which errors, notes and skip causes), for the feedback-free loop's pool."""
    seen = set()
    for results in outcomes.values():
        for r in results:
            status = next((x for x in r if x in ("ok", "error")), None)
            seen.add((r[0], status, r[r.index(status) + 1] if status == "error" else None))
            if r[0] == "open" and status == "ok":
                skipped, truncated, _at, _frames, notes, _streams = r[3]
                seen.update(("skip", s["cause"]) for s in skipped)
                seen.update(("note", kind) for _off, kind in notes)
                seen.add(("truncated", truncated))
    return digest(sorted(seen, key=repr))


def check(data, path, enforce=False, progress=None):
    """Run the read path on `data` (already written at `path`) under every
    backend; raise Finding for the first failure. Returns the outcomes."""
    guard = Guard(enforce, progress)
    outcomes = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy overflow warnings and the like are not findings
        for name in backends():
            with _backend.using(name):
                outcomes[name] = read_path(data, path, guard)
    if len(outcomes) == 2:
        c, py = outcomes["c"], outcomes["python"]
        for a, b in zip(c, py):
            if a != b:
                raise Finding("disagree", str(a[0]), f"c: {a[1:]!r:.160} python: {b[1:]!r:.160}")
        if len(c) != len(py):
            raise Finding("disagree", "steps", f"c ran {len(c)} steps, python {len(py)}")
    return outcomes

"""The fuzz driver. Run from the repository root:

  python -m tools.fuzz run [--iterations N | --seconds S] [--seed K]
      mutation fuzzing without coverage feedback (no atheris needed): seeds
      from seeds.py, mutants run in the watchdog; deterministic for a given
      seed and iteration count (tests/test_fuzz.py runs a short one).
  python -m tools.fuzz campaign [--seconds S] [libFuzzer args...]
      coverage-guided with atheris (`./run fuzz`): libFuzzer drives the
      structure-aware mutator over the instrumented logb package; each crash
      is replayed in the watchdog, minimised and saved; then it goes on.
  python -m tools.fuzz replay PATH...     every file (or folder of .logb files) through the watchdog
  python -m tools.fuzz minimise FILE      shrink FILE keeping its finding, print where it went

Findings are written, minimised, to corpus/fuzz/ (--out) as
KIND-STEP-DETAIL-HASH.logb, one per distinct signature.
"""

import argparse
import hashlib
import os
import pathlib
import random
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
FINDINGS = ROOT / "corpus" / "fuzz"
WORK = ROOT / "out" / "fuzz"  # a campaign's queue and raw crash artifacts (not committed)


def finding_name(finding, data):
    step = finding.step.split("[")[0].split(":")[-1]
    words = re.sub(r"[^A-Za-z0-9]+", "-", f"{step}-{finding.detail.split(':')[0]}")
    return f"{finding.kind}-{words.strip('-')[:48]}-{hashlib.sha256(data).hexdigest()[:8]}".lower()


def known_signatures(out):
    """Signatures of the findings already saved in `out` (their .txt sidecars)."""
    sigs = set()
    for txt in pathlib.Path(out).glob("*.txt"):
        for line in txt.read_text(encoding="utf-8").splitlines():
            if line.startswith("signature: "):
                sigs.add(line[len("signature: "):])
    return sigs


def save(finding, data, out):
    """Write a finding's input and a sidecar saying what it does; returns the path."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{finding_name(finding, data)}.logb"
    path.write_bytes(data)
    path.with_suffix(".txt").write_text(
        f"signature: {finding.signature}\nkind: {finding.kind}\nstep: {finding.step}\n"
        f"detail: {finding.detail}\ntrace: {finding.trace}\n", encoding="utf-8")
    return path


def triage(dog, data, out, seen, log=print, tries=None):
    """Replay `data`; if it finds something new, minimise (at most `tries`
    runs) and save it. Returns the Finding or None."""
    from .minimise import MAX_TRIES, minimise

    finding = dog.run(data)
    if finding is None or finding.signature in seen:
        return finding
    small, finding = minimise(dog, data, finding, MAX_TRIES if tries is None else tries)
    seen.add(finding.signature)
    path = save(finding, small, out)
    log(f"finding {path.name} ({len(data)} -> {len(small)} bytes): {finding}\n    {finding.trace}")
    return finding


def cmd_run(args):
    from .mutator import Context, mutate
    from .seeds import seeds
    from .watchdog import Watchdog

    found = run_mutations(args.seed, args.iterations, args.seconds, args.out, Watchdog, seeds, Context, mutate,
                          tries=args.minimise_tries)
    print(f"{len(found)} new finding(s)")
    return 1 if found else 0


def run_mutations(seed, iterations, seconds, out, watchdog_cls, seeds, context_cls, mutate, log=print, tries=None):
    """The feedback-free loop: mutate a pool member, run it, keep mutants that
    reach a new outcome shape. Returns the new findings (Finding list)."""
    rng = random.Random(seed)
    pool = [data for _name, data in seeds()]
    ctx = context_cls(others=tuple(pool))
    seen, found = known_signatures(out), []
    deadline = time.monotonic() + seconds if seconds else None
    with watchdog_cls() as dog:
        i = 0
        while (iterations is None or i < iterations) and (deadline is None or time.monotonic() < deadline):
            i += 1
            data = mutate(rng.choice(pool), rng, ctx)
            before = len(seen)
            finding = triage(dog, data, out, seen, log, tries)
            if finding is not None and len(seen) > before:
                found.append(finding)
            elif finding is None and dog.last_shape not in dog.shapes:
                dog.shapes.add(dog.last_shape)
                pool.append(data)
    return found


def cmd_replay(args):
    from .watchdog import Watchdog

    files = []
    for p in map(pathlib.Path, args.paths):
        files += sorted(p.glob("*.logb")) if p.is_dir() else [p]
    bad = 0
    with Watchdog() as dog:
        for f in files:
            finding = dog.run(f.read_bytes())
            bad += finding is not None
            print(f"{f}: {'ok' if finding is None else finding}")
    return 1 if bad else 0


def cmd_minimise(args):
    from .minimise import minimise
    from .watchdog import Watchdog

    data = pathlib.Path(args.file).read_bytes()
    with Watchdog() as dog:
        finding = dog.run(data)
        if finding is None:
            print(f"{args.file}: no finding")
            return 0
        small, finding = minimise(dog, data, finding)
    print(save(finding, small, args.out), finding)
    return 1


def cmd_campaign(args, libfuzzer_args):
    """libFuzzer stops at the first crash: triage it, then start again on the
    grown queue until the time is up."""
    from .seeds import seeds
    from .watchdog import Watchdog

    queue, artifacts = WORK / "queue", WORK / "artifacts"
    queue.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    for name, data in seeds():
        (queue / f"seed-{name}.logb").write_bytes(data)
    seen = known_signatures(args.out)
    deadline = time.monotonic() + args.seconds
    with Watchdog() as dog:
        while (left := int(deadline - time.monotonic())) > 0:
            cmd = [sys.executable, "-m", "tools.fuzz", "atheris", f"-max_total_time={left}", "-timeout=120",
                   "-rss_limit_mb=4096", f"-artifact_prefix={artifacts}/", *libfuzzer_args, str(queue)]
            subprocess.run(cmd, cwd=ROOT)
            for crash in sorted(artifacts.iterdir()):
                finding = triage(dog, crash.read_bytes(), args.out, seen)
                if finding is None:
                    print(f"{crash.name}: does not reproduce in the watchdog")
                crash.unlink()
    return 0


def cmd_atheris(argv):
    """One libFuzzer process (the campaign starts it): the target in-process, instrumented."""
    import atheris

    with atheris.instrument_imports(include=["logb"]):
        import logb  # noqa: F401 - instrumented here, before anything else imports it
    from .mutator import Context, mutate
    from .seeds import seeds
    from .target import Finding, check
    import resource
    import tempfile

    from .watchdog import AS_HEADROOM_MB, _vm_size

    limit = _vm_size() + (AS_HEADROOM_MB << 20) * 2  # instrumentation's counters need room too
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    ctx = Context(others=tuple(data for _n, data in seeds()))
    path = os.path.join(tempfile.mkdtemp(prefix="logb-atheris-"), "input.logb")

    def one_input(data):
        with open(path, "wb") as f:
            f.write(data)
        try:
            check(data, path)
        except Finding as finding:
            raise AssertionError(f"{finding} | {finding.trace}") from None

    def custom_mutator(data, max_size, seed):
        rng = random.Random(seed)
        if rng.random() < 0.1:  # libFuzzer's own byte-level mutations now and then
            return atheris.Mutate(data, max_size)
        return mutate(data, rng, Context(ctx.others, min(max_size, ctx.max_size)))

    atheris.Setup([sys.argv[0], *argv], one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        from .watchdog import serve

        return serve()
    if argv[:1] == ["atheris"]:
        return cmd_atheris(argv[1:])
    p = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(FINDINGS), help="where findings go (default: corpus/fuzz)")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--iterations", type=int)
    r.add_argument("--seconds", type=float)
    r.add_argument("--minimise-tries", type=int, help="watchdog runs to shrink each finding (default 300)")
    c = sub.add_parser("campaign")
    c.add_argument("--seconds", type=float, default=3600)
    rp = sub.add_parser("replay")
    rp.add_argument("paths", nargs="+")
    m = sub.add_parser("minimise")
    m.add_argument("file")
    args, rest = p.parse_known_args(argv)
    if args.cmd == "campaign":
        return cmd_campaign(args, rest)
    if rest:
        p.error(f"unrecognised arguments: {' '.join(rest)}")
    return {"run": cmd_run, "replay": cmd_replay, "minimise": cmd_minimise}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())

"""logb verify: check every frame; the exit status says whether the file is intact."""

from ..verify import Checker, default_jobs, verify
from .common import EXIT_DAMAGED, EXIT_OK, add_recover, dumps, open_logb
from .info import intact, sink_lost, sink_text

EXIT_SINK_LOST = 4  # intact as read, but its writer states bytes it could not write (logb.lost.sink)
HELP = "check every frame's CRC and every record; exit 0 intact, 1 damaged, 2 not Logb, 4 writer lost data"
DESCRIPTION = """\
Check the file header, every frame's CRC-32C, and decode every DATA frame
as far as anything can reject it (no columns are built), on --jobs cores.
With one, each frame is checked while the scan holds its bytes (nothing is
read twice); with more, compressed frames are read again by the threads
that decompress them, alongside the scan. The verdict is the same for any N.

Exit status (for scripts):
  0  intact: no damage, no truncation, no rejected records
  1  damaged or truncated, or records that could not be decoded
  2  not a Logb file
  3  a Logb version this reader does not support
  4  every frame read is intact, but the writer states that its medium did not
     take some of what it wrote (logb.lost.sink: failed or short writes; the
     frames in them are missing). Damage as well exits 1; both are printed."""


def add_arguments(p):
    p.add_argument("file", help="a .logb file, or - for standard input")
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.add_argument("--jobs", type=_jobs, default=default_jobs(), metavar="N",
                   help="check compressed DATA frames on N threads (default: the CPU count): zstd frames "
                        "while the scan goes on, others once it is done; the verdict is the same for any N")
    add_recover(p)


def _jobs(text):
    n = int(text)
    if n < 1:
        raise ValueError(text)
    return n


def run(args, out):
    with Checker(args.jobs) as checker, open_logb(args.file, recover=args.recover, on_data=checker) as f:
        verify(f, args.jobs, checker)
        rep = f.report
        ok = intact(f)
        verdict = {
            "file": args.file,
            "ok": ok,
            "size": rep.size,
            "frames": rep.frames,
            "records": sum(s.records for s in f.streams.values()),
            "rejected": sum(s.rejected for s in f.streams.values()),
            "skipped": [s.as_json() for s in rep.skipped],
            "truncated": rep.truncated,
            "truncated_at": rep.truncated_at,
            "lost_sink": {str(i): n for i, n in sink_lost(f).items()},
        }
    if args.json:
        out.write(dumps(verdict) + "\n")
    else:
        state = "DAMAGED" if not ok else "DATA LOST BY THE WRITER" if verdict["lost_sink"] else "OK"
        out.write(f"{args.file}: {state}: {verdict['frames']} frames, {verdict['records']} records, "
                  f"{verdict['rejected']} rejected, {len(verdict['skipped'])} skipped ranges"
                  f"{', truncated' if rep.truncated else ''}\n")
        for s in verdict["skipped"]:
            out.write(f"  skipped {s['start']}..{s['end']}: {s['cause']}\n")
        for i, n in verdict["lost_sink"].items():
            out.write(f"  LOST in session {i}: {sink_text(n)}\n")
    if not ok:
        return EXIT_DAMAGED
    return EXIT_SINK_LOST if verdict["lost_sink"] else EXIT_OK

"""logb pull: copy recordings off a logger over its USB serial port, verified."""

import sys

from ..errors import LinkError, TransferError, TransferInterrupted, UsageError
from .common import EXIT_DAMAGED, EXIT_OK, Progress, dumps

HELP = "copy recordings off a logger over USB serial: resumable, CRC-checked, verified before kept"
DESCRIPTION = """\
Copy recordings off a logger running the Logb link (firmware/logb/link.py)
over its USB serial port (docs/LINK.md).

Every message of the link and every Logb frame is CRC-checked as it arrives;
the data goes to DIR/.NAME.part, which becomes DIR/NAME only when its size
and CRC-32C equal the device's. An interrupted pull (cable, reboot, Ctrl-C)
continues where it stopped, within the run (reconnecting) or the next time.
A recording the logger is still writing is pulled up to its last flushed
frame; pulling it again later adds what came since. Nothing on the device is
deleted unless --delete is given, and then only a recording whose copy
verified, by a request the device checks against the file's size and CRC —
and never the recording the logger is writing (it is kept, with a note).

  logb pull --all recordings/
  logb pull --port /dev/ttyACM0 rec-0007.logb rec-0008.logb recordings/ --delete

Without --port (or $LOGB_PORT) the board is found by its USB VID/PID
(Raspberry Pi Pico, pyboard and other MicroPython boards, ESP32 native USB,
then common USB-UART bridges).

Exit status: 0 every recording pulled and verified (and deleted if asked),
1 some recording was not (each reason is printed), 64 usage error, 69 no
logger found or answering, 130 interrupted (what was verified is kept for
the next pull)."""


def add_arguments(p):
    p.add_argument("files", nargs="*", metavar="FILE", help="recordings to pull (names on the device)")
    p.add_argument("dir", metavar="DIR", help="the destination directory")
    p.add_argument("--all", action="store_true", help="pull every recording on the device")
    p.add_argument("--port", help="serial port (default: $LOGB_PORT, else found by USB VID/PID)")
    p.add_argument("--delete", action="store_true",
                   help="delete each recording on the device once its copy is verified (never the one "
                        "being recorded)")
    p.add_argument("--timeout", type=float, default=3.0, metavar="S",
                   help="seconds without data before a request is retried (default 3)")
    p.add_argument("--reconnect", type=float, default=30.0, metavar="S",
                   help="seconds to keep trying when the port goes away (default 30)")
    p.add_argument("--json", action="store_true", help="one JSON object per recording on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _fmt(n):
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def run(args, out):
    from ..serial.client import Client
    from ..serial.ports import find_port
    from ..serial.pull import pull

    names, dest = args.files, args.dir
    if args.all and names:
        raise UsageError("give recording names or --all, not both")
    if not args.all and not names:
        raise UsageError("name the recordings to pull, or --all (then the destination directory)")
    port = find_port(args.port)  # LinkError: no logger found (exit 69)

    def say(msg):
        print(f"logb pull: {msg}", file=sys.stderr, flush=True)

    def progress(total, label):
        return Progress(total, label, enabled=False if args.quiet else None)

    cl = Client(port, timeout=args.timeout)
    try:
        hello = cl.connect()  # LinkError: no logger answering (exit 69)
        if not args.json:
            rec = f", recording {hello.recording}" if hello.recording else ""
            print(f"{port}: {hello.device or 'logger'} ({hello.firmware}){rec}", file=out)
        try:
            results = pull(cl, None if args.all else names, dest, delete=args.delete, say=say,
                           progress=progress, reconnect_s=args.reconnect)
        except LinkError as exc:
            raise TransferError(str(exc)) from exc
        except KeyboardInterrupt:
            raise TransferInterrupted("interrupted: what was verified is kept in DIR/.NAME.part; "
                                      "pull again to resume") from None
        except OSError as exc:
            raise TransferError(f"{dest}: {exc}") from exc
    finally:
        cl.bye()
    failed = 0
    for r in results:
        if args.json:
            out.write(dumps({"name": r.name, "status": r.status, "ok": not r.error, "size": r.size,
                             "crc32c": f"{r.crc:08x}", "transferred": r.transferred, "frames": r.frames,
                             "damage": [{"offset": o, "cause": c} for o, c in r.damage], "cut": r.cut,
                             "retries": r.retries, "deleted": r.deleted, "kept": r.kept or None,
                             "error": r.error or None,
                             "seconds": round(r.seconds, 3)}) + "\n")
        if r.error:
            failed += 1
            if not args.json:
                print(f"{r.name}: {r.status}: {r.error}", file=out)
            continue
        if args.json:
            continue
        rate = f", {r.transferred / r.seconds / 1e6:.2f} MB/s" if r.transferred and r.seconds > 0 else ""
        line = (f"{r.name}: {r.status}, {_fmt(r.size)}, CRC-32C {r.crc:08x} verified against the device"
                f" ({_fmt(r.transferred)} transferred{rate}")
        line += f", {r.retries} retries" if r.retries else ""
        line += ")"
        if r.cut:
            line += f"; still recording: the last {r.cut} bytes (not a whole frame yet) are left for the next pull"
        if r.damage:
            line += (f"; the recording itself has {len(r.damage)} damaged range(s) (first at byte "
                     f"{r.damage[0][0]}: {r.damage[0][1]}): the copy is identical to the device's, "
                     f"see `logb verify`")
        if r.deleted:
            line += "; deleted on the device"
        if r.kept:
            line += f"; kept on the device: {r.kept}"
        print(line, file=out)
    return EXIT_DAMAGED if failed else EXIT_OK

"""logb cat: concatenate Logb files without rewriting a byte of them."""

import os
import sys

from ..framing import encode_file_header
from ..scan import Report, check_header
from ..source import open_source
from .common import EXIT_DAMAGED, EXIT_OK, Progress, add_recover, opening, output

HELP = "concatenate Logb files (each minus its header) into one"
DESCRIPTION = """\
Write OUT as the first file's header followed by every input minus its own
16-byte header. Each input is checked to be Logb of the same major version
first. Nothing is rewritten: stream ids rebind at each SYNC, and streams with
the same uuid merge when the result is read. Inputs' INDEX frames stay valid
(their offsets are self-relative).

An input cut inside its file header (fewer than 16 bytes, 0 included) holds
nothing and adds nothing. With --recover, an input whose start is missing or
damaged adds its bytes from its first SYNC frame (those before are lost).

OUT is written to a temporary file beside it and renamed only when complete;
an OUT that is one of the inputs is refused.

Exit status: 0 written, 1 written but an input was truncated or lost its
start, 2 an input is not Logb (without --recover), 3 unsupported version,
64 usage error."""

_CHUNK = 1 << 20


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE", help="Logb files, in order")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file, or - for stdout")
    add_recover(p)


def _first_frame(path, recover):
    """(offset of the first byte to copy or None for nothing, file header or None, bytes lost before it)."""
    with opening(path), open_source(path) as src:
        report = Report(size=src.size)
        start = check_header(src.buf, report, recover)
        return start, report.header, sum(s.end - s.start for s in report.skipped)


def run(args, out):
    starts, minors, damaged = [], [], False
    for path in args.files:
        start, header, lost = _first_frame(path, args.recover)
        starts.append(start)
        if header is not None:
            minors.append(header.minor)
        if start is None or lost:
            damaged = True
            why = "is cut inside its file header: it adds nothing" if start is None else \
                f"lost its first {lost} bytes: copied from its first SYNC frame"
            print(f"logb cat: {path} {why}", file=sys.stderr)
    header = encode_file_header(minor=max(minors)) if minors else encode_file_header()
    if args.output == "-":
        _copy(sys.stdout.buffer, header, args.files, starts)
    else:
        with output(args.output, args.files) as tmp, open(tmp, "wb") as sink:
            _copy(sink, header, args.files, starts)
    return EXIT_DAMAGED if damaged else EXIT_OK


def _copy(sink, header, paths, starts):
    chosen = [(p, s) for p, s in zip(paths, starts) if s is not None]
    bar = Progress(sum(os.path.getsize(p) - s for p, s in chosen), "cat")
    sink.write(header)
    for path, start in chosen:
        with open(path, "rb") as f:
            f.seek(start)
            while chunk := f.read(_CHUNK):
                sink.write(chunk)
                bar.advance(len(chunk))
    bar.close()

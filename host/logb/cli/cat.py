"""logb cat: concatenate Logb files without rewriting a byte of them."""

import os
import sys

from ..framing import FILE_HEADER_SIZE, decode_file_header, encode_file_header
from .common import EXIT_OK, Progress, about

HELP = "concatenate Logb files (each minus its header) into one"
DESCRIPTION = """\
Write OUT as the first file's header followed by every input minus its own
16-byte header. Each input is checked to be Logb of the same major version
first. Nothing is rewritten: stream ids rebind at each SYNC, and streams with
the same uuid merge when the result is read. Inputs' INDEX frames stay valid
(their offsets are self-relative)."""

_CHUNK = 1 << 20


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE", help="Logb files, in order")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file, or - for stdout")


def run(args, out):
    headers = []
    for path in args.files:
        with open(path, "rb") as f, about(path):
            headers.append(decode_file_header(f.read(FILE_HEADER_SIZE)))
    minor = max(h.minor for h in headers)
    sink = sys.stdout.buffer if args.output == "-" else open(args.output, "wb")
    try:
        total = sum(os.path.getsize(p) for p in args.files)
        bar = Progress(total, "cat")
        sink.write(encode_file_header(minor=minor))
        for path in args.files:
            with open(path, "rb") as f:
                f.seek(FILE_HEADER_SIZE)
                while chunk := f.read(_CHUNK):
                    sink.write(chunk)
                    bar.advance(len(chunk))
        bar.close()
    finally:
        if sink is not sys.stdout.buffer:
            sink.close()
    return EXIT_OK

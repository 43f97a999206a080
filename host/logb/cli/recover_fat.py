"""logb recover-fat: Logb recordings from a FAT card image, with the frames past each file's recorded size."""

import json
import os

from ..errors import NothingToDecodeError, UsageError
from ..fat import FatImage, recover
from .common import EXIT_OK, output

HELP = "get a FAT card's recordings back, with the whole frames written past each file's recorded size"
DESCRIPTION = """\
Read IMAGE (a FAT12/16/32 volume: a card's partition, e.g. `dd if=/dev/sdX1`)
read-only and, for each .logb file, keep its bytes plus the whole frames the
card holds past its recorded size. FAT writes a file's size into its
directory entry only when the file is synced or closed, so after a power cut
the last data written may be on the card but outside the file.

Where it looks: the rest of the file's cluster chain, then the free clusters
right after its last cluster, in order (FatFs, MicroPython's FAT, gives a
growing file the next free cluster after its last one); a file never synced
(no cluster in its entry) starts at the lowest chain no directory entry
reaches. What it keeps: from
the last whole frame inside the recorded size, frame after frame while each
header and CRC-32C is intact; the first that is not ends it. Nothing is
skipped or repaired, so what it adds are frames the writer wrote, whole. What
they do not prove: that the writer had declared them durable, or (on a card
other files were deleted from) that they are this recording's and not an
older one left in those clusters — `logb verify` the result.

  logb recover-fat card.img                   report what each file would gain
  logb recover-fat card.img -o recovered/     write each recovered file there
  logb recover-fat card.img -o rec.logb       the image's one recording

Exit status: 0 read (whether or not anything was past a file's end), 1 no
.logb file in the image."""


def add_arguments(p):
    p.add_argument("image", help="a FAT volume image")
    p.add_argument("-o", "--out", help="a folder for the recovered files, or a .logb path when the image holds one")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")


def run(args, out):
    with open(args.image, "rb") as fh:
        data = fh.read()
    found = recover(FatImage(data))
    if not found:
        raise NothingToDecodeError(f"{args.image}: no .logb file on this FAT volume")
    written = {}
    if args.out:
        as_dir = os.path.isdir(args.out) or args.out.endswith(os.sep) or len(found) > 1
        if as_dir:
            os.makedirs(args.out, exist_ok=True)
        names = [r.path.rsplit("/", 1)[1] for r in found]
        if as_dir and len(set(names)) < len(names):
            raise UsageError(f"{args.image}: files of the same name in several folders; recover one at a time")
        for r, name in zip(found, names):
            path = os.path.join(args.out, name) if as_dir else args.out
            with output(path, (args.image,)) as tmp, open(tmp, "wb") as dst:
                dst.write(r.data)
            written[r.path] = path
    rows = [{"path": r.path, "recorded_size": r.size, "size": len(r.data), "beyond": r.beyond,
             "frames_beyond": r.frames, "out": written.get(r.path)} for r in found]
    if args.json:
        out.write(json.dumps({"image": args.image, "files": rows}) + "\n")
    else:
        for row in rows:
            to = f" -> {row['out']}" if row["out"] else ""
            out.write(f"{row['path']}: recorded size {row['recorded_size']}, {row['frames_beyond']} whole frames "
                      f"({row['beyond']} bytes) past it{to}\n")
    return EXIT_OK

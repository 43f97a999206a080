"""A small read-only FAT12/16/32 reader (no dependency), and the recovery of
Logb frames a FAT card holds past a file's recorded size.

FAT updates a file's size in its directory entry only when the file is synced
or closed (FatFs `f_sync`, MicroPython's `flush()`); the data sectors are
written as they fill. A power cut between the two leaves bytes of the
recording on the card, past the size the directory gives. `recover` reads
them back from the clusters that follow the file's end:

1. the rest of the file's cluster chain, when the FAT already lists clusters
   past the recorded size (the FAT sector went out, the directory entry not);
2. then the clusters after the chain's last one, in order, as long as the FAT
   marks them free: FatFs allocates a growing file's next cluster by scanning
   forward from the last one allocated, so on a card one logger writes
   sequentially those are the clusters the file was about to get (a FAT sector
   not yet written back leaves them marked free);
3. a file whose directory entry has no cluster yet (never synced: size 0)
   starts at the lowest orphan chain — allocated clusters no directory entry
   reaches — left for it (files in directory order), else at cluster 2.

Only whole frames are kept: from the end of the last complete frame inside
the recorded size, frame after frame as long as each one's header and CRC-32C
are intact (`logb.scan.frame_at`), stopping at the first that is not. Nothing
is skipped over and nothing is repaired, so garbage or zeroed sectors end the
recovery; they never turn into data (docs/SPEC.md: what the recovered frames
do and do not prove).
"""

import struct
from dataclasses import dataclass

from .errors import UnreadableInputError
from .framing import FILE_HEADER_SIZE, is_file_header
from .scan import frame_at

_ATTR_LFN = 0x0F
_ATTR_VOLUME = 0x08
_ATTR_DIR = 0x10


@dataclass(frozen=True)
class FatEntry:
    path: str  # "/DIR/name.logb", long name when there is one
    cluster: int  # first cluster (0: none allocated)
    size: int  # the recorded size (directory entry)
    is_dir: bool


class FatImage:
    """A FAT volume in `data` (a bytes-like image of the partition, sector 0 the boot sector)."""

    def __init__(self, data):
        self.data = memoryview(data)
        if len(data) < 512 or data[510:512] != b"\x55\xaa":
            raise UnreadableInputError("not a FAT volume: no boot sector signature")
        (self.sector, self.per_cluster, reserved, nfats, root_entries, total16, _, fat16) = struct.unpack_from(
            "<HBHBHHBH", data, 11)
        total = total16 or struct.unpack_from("<I", data, 32)[0]
        fat_sectors = fat16 or struct.unpack_from("<I", data, 36)[0]
        if self.sector not in (512, 1024, 2048, 4096) or not self.per_cluster or not nfats or not fat_sectors:
            raise UnreadableInputError("not a FAT volume: bad BIOS parameter block")
        self.fat_offset = reserved * self.sector
        root_sectors = (root_entries * 32 + self.sector - 1) // self.sector
        self.root_offset = (reserved + nfats * fat_sectors) * self.sector
        self.data_offset = self.root_offset + root_sectors * self.sector
        self.root_entries = root_entries
        self.clusters = (total - self.data_offset // self.sector) // self.per_cluster
        self.kind = 12 if self.clusters < 4085 else 16 if self.clusters < 65525 else 32
        self.root_cluster = struct.unpack_from("<I", data, 44)[0] if self.kind == 32 else 0
        self.cluster_bytes = self.sector * self.per_cluster
        if self.data_offset + self.clusters * self.cluster_bytes > len(data):
            raise UnreadableInputError("FAT volume larger than its image (a partition table? give the partition)")

    # ------------------------------------------------------------ the FAT
    def next(self, c):
        """The FAT entry of cluster c: the next cluster, 0 free, >= eoc() end of chain."""
        if self.kind == 12:
            v = struct.unpack_from("<H", self.data, self.fat_offset + c + c // 2)[0]
            return v >> 4 if c & 1 else v & 0xFFF
        if self.kind == 16:
            return struct.unpack_from("<H", self.data, self.fat_offset + 2 * c)[0]
        return struct.unpack_from("<I", self.data, self.fat_offset + 4 * c)[0] & 0x0FFFFFFF

    def eoc(self):
        return {12: 0xFF7, 16: 0xFFF7, 32: 0x0FFFFFF7}[self.kind]  # bad-cluster mark and above: the chain ends

    def chain(self, c):
        """The clusters of the chain starting at c (stops at a loop or a bad entry)."""
        out, seen = [], set()
        while 2 <= c < self.clusters + 2 and c not in seen:
            out.append(c)
            seen.add(c)
            c = self.next(c)
            if c >= self.eoc():
                break
        return out

    def cluster(self, c):
        o = self.data_offset + (c - 2) * self.cluster_bytes
        return self.data[o:o + self.cluster_bytes]

    # ------------------------------------------------------------ directories
    def _dir_bytes(self, cluster):
        if cluster == 0:  # FAT12/16 root: a fixed region
            return self.data[self.root_offset:self.root_offset + 32 * self.root_entries]
        return b"".join(bytes(self.cluster(c)) for c in self.chain(cluster))

    def entries(self, cluster=None, prefix=""):
        """Every file and directory (recursively), long names where present."""
        cluster = self.root_cluster if cluster is None else cluster
        raw = self._dir_bytes(cluster)
        lfn = {}
        for o in range(0, len(raw) - 31, 32):
            e = bytes(raw[o:o + 32])
            if e[0] == 0:
                break
            if e[0] == 0xE5:
                lfn = {}
                continue
            attr = e[11]
            if attr == _ATTR_LFN:
                lfn[e[0] & 0x1F] = e[1:11] + e[14:26] + e[28:32]
                continue
            name = _long_name(lfn) if lfn else _short_name(e)
            lfn = {}
            if attr & _ATTR_VOLUME or name in (".", ".."):
                continue
            first = struct.unpack_from("<H", e, 26)[0] | (struct.unpack_from("<H", e, 20)[0] << 16
                                                          if self.kind == 32 else 0)
            entry = FatEntry(f"{prefix}/{name}", first, struct.unpack_from("<I", e, 28)[0], bool(attr & _ATTR_DIR))
            yield entry
            if entry.is_dir and first:
                yield from self.entries(first, entry.path)

    def read(self, entry):
        """The file's bytes up to its recorded size."""
        return self._bytes(self.chain(entry.cluster))[:entry.size]

    def _bytes(self, clusters):
        return b"".join(bytes(self.cluster(c)) for c in clusters)

    def orphans(self):
        """Heads of the chains no directory entry reaches, lowest first: clusters a file got
        whose directory entry was not written back."""
        reached = set()
        for e in self.entries():
            reached.update(self.chain(e.cluster) if e.cluster else ())
        reached.update(self.chain(self.root_cluster) if self.root_cluster else ())
        used = [c for c in range(2, self.clusters + 2) if self.next(c) and c not in reached]
        pointed = {self.next(c) for c in used}
        return [c for c in used if c not in pointed]

    def beyond(self, entry, orphan=None):
        """The file's chain, then the free clusters right after its last one (module docstring, 1 and 2),
        as one byte string: the recorded size's bytes followed by what the card holds past them. A file
        whose entry has no cluster yet starts at `orphan` (a head from orphans()) when given, else at
        the first cluster (FatFs scans for a free one from there)."""
        chain = self.chain(entry.cluster) if entry.cluster else self.chain(orphan) if orphan else []
        last = chain[-1] if chain else 1
        nxt = last + 1
        while nxt < self.clusters + 2 and self.next(nxt) == 0:
            chain.append(nxt)
            nxt += 1
        return self._bytes(chain)


def _short_name(e):
    base, ext = e[0:8].decode("latin-1").rstrip(), e[8:11].decode("latin-1").rstrip()
    if e[12] & 0x08:  # NT case flags: base, extension in lower case
        base = base.lower()
    if e[12] & 0x10:
        ext = ext.lower()
    return f"{base}.{ext}" if ext else base


def _long_name(parts):
    raw = b"".join(parts[k] for k in sorted(parts))
    name = raw.decode("utf-16-le", "replace")
    return name.split("\x00", 1)[0].rstrip("\uffff")


@dataclass(frozen=True)
class Recovered:
    path: str
    size: int  # the recorded size
    data: bytes  # the recording: the recorded bytes up to the last whole frame found, then the recovered frames
    frames: int  # frames recovered past the recorded size
    beyond: int  # bytes of `data` past the recorded size


def recover(image, suffix=".logb"):
    """Each `suffix` file of the FAT image with the whole frames found past its recorded size."""
    fat = image if isinstance(image, FatImage) else FatImage(image)
    out = []
    orphans = fat.orphans()
    for e in fat.entries():
        if e.is_dir or not e.path.lower().endswith(suffix):
            continue
        plain = fat.read(e)
        # an entry without a cluster takes the lowest orphan chain left (directory order)
        data = fat.beyond(e, None if e.cluster or not orphans else orphans.pop(0))
        # the last whole frame inside the recorded size: the file header (which may itself lie past the
        # size: a file never synced), then frame after frame
        pos = 0
        if is_file_header(data[:FILE_HEADER_SIZE]):
            pos = FILE_HEADER_SIZE
            while pos < len(plain):
                fr = frame_at(plain, pos)
                if fr is None:
                    break
                pos = fr.end
        n = 0
        end = pos
        if pos:
            while True:
                fr = frame_at(data, end)
                if fr is None:
                    break
                end = fr.end
                if end > len(plain):
                    n += 1
        keep = data[:end] if end > len(plain) else plain
        out.append(Recovered(e.path, e.size, bytes(keep), n, max(0, len(keep) - len(plain))))
    return out

"""What `logb lake` ingests: the sources named on its command line, and who each one is.

A source's identity is its size and a content hash of its first FINGERPRINT_BYTES (the
file's start: header, first SYNC, the session's META with its uuid), never its path: a
recording moved or copied is the same source, and one whose prefix still hashes alike
but is longer has grown (a recording still being written, or pulled again later).
"""

import glob
import hashlib
import os
from dataclasses import dataclass

from ..errors import NotFoundError

FINGERPRINT_BYTES = 64 << 10
LOGB_SUFFIXES = (".logb",)


@dataclass(frozen=True)
class Candidate:
    path: str  # absolute
    size: int
    mtime_ns: int
    device: str  # the folder it sits in under the SRC given, else its own folder's name


def expand(srcs):
    """Every file the SRC arguments name (files, folders walked recursively, globs), once,
    in a stable order. A SRC that names nothing is an error: a typo must not ingest nothing."""
    out, seen = [], set()
    for src in srcs:
        matches = sorted(glob.glob(src, recursive=True)) if glob.has_magic(src) else [src]
        if not matches or not any(os.path.exists(m) for m in matches):
            raise NotFoundError(f"{src}: no such file or folder")
        for m in matches:
            for path, top in _walk(m):
                real = os.path.realpath(path)
                if real in seen:
                    continue
                seen.add(real)
                st = os.stat(real)
                out.append(Candidate(real, st.st_size, st.st_mtime_ns, _device(path, top)))
    return out


def _walk(path):
    if os.path.isfile(path):
        yield path, None
        return
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield os.path.join(dirpath, name), path


def _device(path, top):
    """A fleet upload is laid out device/…/file: the first folder under the SRC folder
    given; a file given alone (or at the top) takes its own folder's name."""
    if top is not None:
        rel = os.path.relpath(path, top).split(os.sep)
        if len(rel) > 1:
            return rel[0]
    return os.path.basename(os.path.dirname(os.path.abspath(path))) or "unknown"


def fingerprint(path, size=None):
    """blake2b of the first FINGERPRINT_BYTES (or of the first `size` bytes, if fewer)."""
    n = FINGERPRINT_BYTES if size is None else min(size, FINGERPRINT_BYTES)
    with open(path, "rb") as fh:
        return hashlib.blake2b(fh.read(n), digest_size=16).hexdigest()


def source_id(fp, size):
    """A source's id, fixed at its first ingest (the manifest's key for it)."""
    return hashlib.blake2b(f"{fp}:{size}".encode(), digest_size=8).hexdigest()

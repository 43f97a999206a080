"""`logb pull`: copy recordings off a logger over the serial link, verified.

For each recording:

1. Bytes are requested from where the local copy stops (READ). Every DATA
   message's CRC (the device's running CRC-32C of the range) is checked as
   it arrives; only checked bytes are written, to `DIR/.NAME.part`, and
   every Logb frame's CRC is checked as it completes (FrameCheck: the
   reader's own FrameScanner).
2. Any damage, stall or disconnect: CANCEL (or reconnect) and ask again from
   the last checked byte. `DIR/.NAME.part.json` records how far the part
   file is checked and the device's CRC-32C of that prefix, so an
   interrupted pull (even a killed one) resumes there; before resuming, the
   device's CRC of the last 4 KiB before that point must match the local
   bytes (a different file under the same name starts over).
3. A recording the logger is still writing is pulled up to its durable size
   (which the device reports at a flush: a frame boundary); if the received
   bytes end inside a frame anyway, the copy is cut at the last whole frame.
4. A writer thread appends the checked bytes to the part file, fsyncs it
   every few MiB and reads back what it synced; the size and CRC-32C of the
   part file as read back must equal the device's (combined from the
   ranges it sent). Only then is it renamed to `DIR/NAME` (and the
   directory fsynced). Otherwise it is discarded and pulled once more, then
   an error.
5. With `delete=True`, a verified recording the logger is not writing is
   deleted on the device by a DELETE naming its size and CRC-32C, which the
   device checks against the file before removing it.

An existing `DIR/NAME` is never overwritten by different bytes: if the
device's file starts with it (the recording grew) the new bytes are
appended to a copy, verified and renamed over it; otherwise it is an error.
"""

import json
import os
import queue
import shutil
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .. import _backend
from .._kernels import SCAN_END, SCAN_FULL, SCAN_PAST_END
from ..crc import crc32c
from ..errors import LinkError, NotLogbError, UnsupportedVersionError
from ..framing import FILE_HEADER_SIZE, FRAME_HEADER, decode_file_header
from ..scan import MAX_HELD_PAYLOAD, TRUNCATED, UNSUPPORTED_VERSION, FrameRef, FrameScanner, Skip
from ..tables import FrameType
from . import protocol as P
from .client import DeviceError, Garbled, LinkLost, Stalled, parse_end

TAIL_CHECK = 4096  # bytes before a resume point whose device CRC must match the local copy
MAX_FAILS = 8  # consecutive attempts without progress before giving up
SAVE_EVERY = 4 << 20  # bytes between state saves (fsync + .part.json) ...
SAVE_S = 1.0  # ... or seconds, whichever comes first
REPLAY_MAX = 16 << 20  # FrameCheck holds at most this much since a SYNC; past it the scanner reads on
HANDOFF = 256 << 10  # bytes of checked messages handed to the writer thread at once (a slow link:
HANDOFF_S = 0.25  # what came in this many seconds) ...
BATCH = 64  # ... which takes at most this many handoffs at once
_SYNC = int(FrameType.SYNC)  # (numpy compares a plain int fastest)


class PullError(LinkError):
    """One recording could not be pulled and verified (the reason is the message)."""


@dataclass
class Outcome:
    name: str
    size: int = 0
    crc: int = 0
    status: str = ""  # pulled | resumed | extended | up to date | failed
    transferred: int = 0
    frames: int = 0
    damage: list = field(default_factory=list)  # (offset, cause) in the recording itself
    cut: int = 0  # bytes left off at the end of a growing recording (not a whole frame yet)
    retries: int = 0
    deleted: bool = False
    kept: str = ""  # why --delete left it on the device (not an error: the logger is recording it)
    error: str = ""
    seconds: float = 0.0


class FrameCheck:
    """Checks every Logb frame's CRC as bytes arrive, in order (SPEC §4.1),
    as the reader's scanner does: damage is noted as (offset, SPEC §10.2
    cause) and skipped to the next CRC-valid SYNC (SPEC §10.3); close() adds
    a cut tail (`truncated`). `boundary` is the end of the last whole frame
    (or of the file header).

    While the bytes are a file header and whole CRC-valid frames, the frame
    walk kernel (scan.c) checks each batch fed in one call: no Python per
    frame. Anything else (damage, a cut, a frame longer than the scanner
    waits for) is the reader's FrameScanner's to judge: it starts at the
    last SYNC frame walked, where its segment state starts afresh (SPEC
    §3.2), and is fed the bytes from there, so it reports what it would have
    reading from the start; from then on it reads the rest."""

    def __init__(self):
        self.boundary = 0
        self.frames = 0
        self.damage = []
        self._scanner = None  # the reader's scanner, once the walk handed over
        self._off = False  # not ours to check (another major version): the copy goes on, byte for byte
        self._held = bytearray()  # the walk: input[_base:], from the last SYNC walked (or 0) on
        self._base = 0
        self._base_frames = 0  # frames before _base
        self._pos = None  # the walk: where the next frame starts (None: the file header is to come)

    def feed(self, *pieces):
        if self._off:
            return
        if self._scanner is not None:
            for data in pieces:
                self._account(self._scanner.feed, data)
            return
        held = self._held
        for data in pieces:
            held += data
        if self._pos is None:
            if len(held) < FILE_HEADER_SIZE:
                return
            try:
                decode_file_header(held[:FILE_HEADER_SIZE])
            except (NotLogbError, UnsupportedVersionError):
                return self._hand_over()
            self._pos = self.boundary = FILE_HEADER_SIZE
        self._walk()

    def close(self):
        if self._scanner is None and not self._off and self._pos != self._base + len(self._held):
            self._hand_over()  # a cut tail, or no file header: the scanner says what it is
        if self._scanner is not None:
            self._account(self._scanner.close)

    def _walk(self):
        held = self._held
        while True:
            base = self._base
            table, stop, status = _backend.active.scan_frames(held, self._pos - base, base)
            if len(table):
                syncs = np.flatnonzero(table["type"] == _SYNC)
                if len(syncs):
                    k = int(syncs[-1])
                    self._base, self._base_frames = int(table["offset"][k]), self.frames + k
                    del held[:self._base - base]  # (bytearray drops its front in place)
                self.frames += len(table)
                self._pos = self.boundary = base + stop
            if status != SCAN_FULL:
                break
        i = self._pos - self._base
        # only the rest of a frame (of a length the scanner waits for) is worth waiting for here
        waiting = status == SCAN_END or (status == SCAN_PAST_END
                                         and FRAME_HEADER.unpack_from(held, i)[0] <= MAX_HELD_PAYLOAD)
        if not waiting or i > REPLAY_MAX:
            self._hand_over()

    def _hand_over(self):
        base, held = self._base, self._held
        self._held = None
        self._scanner = FrameScanner(base, header=base == 0, recover=True)
        self.frames, self.boundary = self._base_frames, base
        self._account(self._scanner.feed, held)

    def _account(self, step, *data):
        try:
            events = step(*data)
        except UnsupportedVersionError:  # not ours to check: the copy goes on, byte for byte
            self._scanner, self._off = None, True
            self.damage.append((0, UNSUPPORTED_VERSION))
            return
        if self._scanner.header is not None and not self.boundary:
            self.boundary = FILE_HEADER_SIZE
        for ev in events:
            if isinstance(ev, FrameRef):
                self.frames += 1
                self.boundary = ev.end
            elif type(ev) is Skip:
                self.damage.append((ev.start, ev.cause))

    @property
    def cut_tail(self):
        """After close(): the only damage is a cut last frame (a growing recording's)."""
        return [cause for _, cause in self.damage] == [TRUNCATED]


def _crc_file(path, size):
    crc = 0
    with open(path, "rb") as f:
        left = size
        while left > 0:
            b = f.read(min(left, 8 << 20))
            if not b:
                break
            crc = crc32c(b, crc)
            left -= len(b)
    return crc


def _fsync_dir(d):
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Puller:
    def __init__(self, client, dest, say=print, progress=None, reconnect_s=30.0):
        self.cl = client
        self.dest = os.fspath(dest)
        self.say = say
        self.progress = progress  # callable(total, label) -> object with advance(n), close()
        self.reconnect_s = reconnect_s

    # ------------------------------------------------------------ state
    def _paths(self, name):
        return (os.path.join(self.dest, name), os.path.join(self.dest, f".{name}.part"),
                os.path.join(self.dest, f".{name}.part.json"))

    def _save(self, state_path, f, name, verified, dcrc):
        f.flush()
        os.fsync(f.fileno())
        tmp = state_path + ".tmp"
        with open(tmp, "w") as s:
            json.dump({"name": name, "verified": verified, "device_crc": dcrc,
                       "device": self.cl.hello.device if self.cl.hello else ""}, s)
            s.flush()
            os.fsync(s.fileno())
        os.replace(tmp, state_path)

    def _load(self, part, state_path, name):
        try:
            with open(state_path) as s:
                st = json.load(s)
            if st.get("name") != name or not os.path.exists(part):
                return None
            verified, dcrc = int(st["verified"]), int(st["device_crc"])
            if os.path.getsize(part) < verified:
                return None
            return verified, dcrc
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _tail_matches(self, name, path, upto):
        """The device's CRC of the TAIL_CHECK bytes before `upto` equals the local file's."""
        k = min(upto, TAIL_CHECK)
        if not k:
            return True
        with open(path, "rb") as f:
            f.seek(upto - k)
            local = f.read(k)
        count, crc = self._retry(lambda: self.cl.hash(name, upto - k, k))
        return count == k and crc == crc32c(local)

    def _retry(self, fn):
        """Run a request; on a lost link, reconnect and run it again."""
        for _ in range(MAX_FAILS):
            try:
                return fn()
            except LinkLost:
                self.cl.close()
                self.cl.reconnect(self.reconnect_s, self.say)
        return fn()

    # ------------------------------------------------------------ one file
    def pull(self, entry, delete=False):
        t0 = time.monotonic()
        out = Outcome(entry.name)
        try:
            self._pull(entry, out)
            if delete:
                self._delete(entry, out)
        except LinkError as exc:  # PullError too
            out.status, out.error = out.status or "failed", str(exc)
        except OSError as exc:  # the destination: not writable, full, ...
            out.status, out.error = out.status or "failed", f"local file: {exc}"
        out.seconds = time.monotonic() - t0
        return out

    def _delete(self, entry, out):
        if out.error:
            return
        cur = self._retry(lambda: self.cl.stat(entry.name))
        if cur.active:
            out.kept = "the logger is recording it"
            return
        try:
            self._retry(lambda: self.cl.delete(entry.name, out.size, out.crc))
        except DeviceError as exc:
            out.error = f"not deleted: {exc}"
            return
        out.deleted = True

    def _pull(self, entry, out):
        name = entry.name
        final, part, state_path = self._paths(name)
        dev = self._retry(lambda: self.cl.stat(name))
        target, active = dev.size, dev.active
        prefix = None  # (verified bytes, device CRC of them) to continue from
        if os.path.exists(final):
            local = os.path.getsize(final)
            if local > target:
                raise PullError(f"{final} ({local} bytes) is longer than the device's {name} ({target} bytes): "
                                f"left alone; move it away to pull this one")
            if not self._tail_matches(name, final, local):
                raise PullError(f"{final} differs from the device's {name}: left alone; move it away to pull this one")
            crc = _crc_file(final, local)
            if local == target:
                out.status, out.size, out.crc = "up to date", local, crc
                for p in (part, state_path):  # what an interrupted extension left
                    if os.path.exists(p):
                        os.unlink(p)
                return
            shutil.copyfile(final, part)  # the local copy stays untouched until the new one is verified
            with open(part, "r+b") as f:
                self._save(state_path, f, name, local, crc)
            out.status = "extended"
        for attempt in range(2):
            prefix = self._load(part, state_path, name)
            if prefix is not None and (prefix[0] > target or not self._tail_matches(name, part, prefix[0])):
                self.say(f"{name}: the partial copy does not match the device's file; starting over")
                prefix = None
            if prefix is None:
                prefix = (0, 0)
                out.status = "pulled"
            elif out.status != "extended":
                out.status = "resumed" if prefix[0] else "pulled"
            size, dcrc, crc = self._transfer(name, part, state_path, prefix, target, active, out)
            if os.path.getsize(part) == size and crc == dcrc:
                os.replace(part, final)
                _fsync_dir(self.dest)
                try:
                    os.unlink(state_path)
                except FileNotFoundError:
                    pass
                out.size, out.crc = size, crc
                return
            self.say(f"{name}: the copy's CRC-32C {crc:08x} differs from the device's {dcrc:08x}; "
                     f"discarding it" + ("; pulling again" if attempt == 0 else ""))
            for p in (part, state_path):
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
        raise PullError(f"{name}: the copy did not verify twice; nothing was kept")

    def _transfer(self, name, part, state_path, prefix, target, active, out):
        """Bring `part` from prefix[0] to `target` bytes. Returns (size, the
        device's CRC-32C of it, the CRC-32C of the part file as read back)."""
        have, dcrc = prefix
        mode = "r+b" if os.path.exists(part) else "w+b"
        with open(part, mode) as f:
            f.truncate(have)
            f.seek(have)
            check = FrameCheck()
            local = 0
            if have:  # the checker's state, and the local CRC, over what is already here
                with open(part, "rb") as g:
                    left = have
                    while left:
                        b = g.read(min(left, 8 << 20))
                        check.feed(b)
                        local = crc32c(b, local)
                        left -= len(b)
            sink = _Sink(self, f, part, state_path, name, have, local, (dcrc, have, 0), check)
            bar = self.progress(target - have, name) if self.progress and target > have else None
            ckpts = deque([(have, dcrc, have, 0)], maxlen=64)  # (offset, device CRC before start, start, run)
            fails = 0
            try:
                while have < target:
                    start, run, got = have, 0, 0
                    batch, batched = [], 0  # checked messages not yet handed to the writer thread
                    handoff_at = time.monotonic() + HANDOFF_S
                    try:
                        tag = self.cl.read_range(name, have, target - have)
                        for m in self.cl.stream(tag):
                            if m.type == P.R_DATA:
                                run = m.crc  # checked: the device's CRC of the range so far
                                batch.append(m.payload)
                                n = len(m.payload)
                                batched += n
                                if batched >= HANDOFF or time.monotonic() >= handoff_at:
                                    sink.put(batch, (dcrc, start, run))
                                    batch, batched = [], 0
                                    handoff_at = time.monotonic() + HANDOFF_S
                                got += n
                                have += n
                                if bar is not None:
                                    bar.advance(n)
                                ckpts.append((have, dcrc, start, run))
                            elif m.type == P.R_END:
                                off, _count, _crc, status = parse_end(m.payload)
                                if off != start:
                                    raise Garbled("END disagrees with the data received")
                                if status != P.S_COMPLETE:
                                    # the file is shorter than it was (an active recording restarted?)
                                    raise PullError(f"{name}: the device's file ended at {have} bytes, "
                                                    f"not {target}: it changed during the pull; pull again")
                                break
                    except (Garbled, Stalled) as exc:
                        out.retries += 1
                        self.say(f"{name}: {exc} at byte {have}; asking again from there")
                        try:
                            self.cl.cancel()
                        except LinkLost:
                            self.cl.close()
                            self.cl.reconnect(self.reconnect_s, self.say)
                    except LinkLost as exc:
                        out.retries += 1
                        self.say(f"{name}: {exc}")
                        self.cl.close()
                        self.cl.reconnect(self.reconnect_s, self.say)
                    finally:
                        if batch:
                            sink.put(batch, (dcrc, start, run))
                        dcrc = P.crc32c_combine(dcrc, run, got)
                        sink.check()
                    fails = 0 if got else fails + 1
                    if fails >= MAX_FAILS:
                        raise PullError(f"{name}: {MAX_FAILS} attempts in a row brought no data; "
                                        f"{have} of {target} bytes are kept for the next pull")
            finally:
                if bar is not None:
                    bar.close()
                sink.close()
            out.transferred += have - prefix[0]
            local = sink.local
            check.close()
            if active and check.cut_tail:
                # the growing file's last bytes are not a whole frame: keep the copy to the frame before
                cut = check.boundary
                base, bcrc = 0, 0
                for o, before, st, r in ckpts:
                    if o <= cut:
                        base, bcrc = o, P.crc32c_combine(before, r, o - st)
                count, hcrc = self._retry(lambda: self.cl.hash(name, base, cut - base))
                if count != cut - base:
                    raise PullError(f"{name}: the device could not hash [{base}, {cut})")
                out.cut = have - cut
                have, dcrc = cut, P.crc32c_combine(bcrc, hcrc, cut - base)
                f.truncate(have)
                f.flush()
                os.fsync(f.fileno())
                local = _crc_file(part, have)
                self._save(state_path, f, name, have, dcrc)
                check.damage.clear()  # the cut frame is not in the copy
            out.frames, out.damage = check.frames, list(check.damage)
        return have, dcrc, local


class _Sink(threading.Thread):
    """Checks every Logb frame's CRC (FrameCheck) and writes the
    message-checked bytes to the part file, off the reading thread:
    every SAVE_EVERY bytes it fsyncs, reads back what it synced (the local
    CRC-32C, from the file, not from memory) and records the state — so the
    waits for the disk overlap the transfer."""

    def __init__(self, puller, f, part, state_path, name, start, local, mark, check):
        super().__init__(daemon=True)
        self.puller, self.f, self.state_path, self.name = puller, f, state_path, name
        self.check_frames = check.feed  # every Logb frame's CRC, as the bytes come
        self.back = open(part, "rb")
        self.synced = self.written = start
        self.local = local  # CRC-32C of the part file's [0, synced), read back
        self.mark = mark  # (device CRC before the range, range start, running CRC) at `written`
        self.saved_at = time.monotonic()
        self.q = queue.Queue(maxsize=32)  # at most 32 handoffs (8 MiB) in flight
        self.error = None
        self.start()

    def put(self, payloads, mark):
        """Hand over checked messages' payloads; `mark` as it is after the last."""
        self.q.put((payloads, mark))

    def check(self):
        if self.error is not None:
            raise PullError(f"{self.name}: cannot write the copy: {self.error}")

    def close(self):
        self.q.put(None)
        self.join()
        self.back.close()
        self.check()

    def run(self):
        done = False
        try:
            while not done:
                batch = [self.q.get()]
                while len(batch) < BATCH:  # what else is waiting goes with it: one frame walk, one write
                    try:
                        batch.append(self.q.get_nowait())
                    except queue.Empty:
                        break
                if batch[-1] is None:
                    done = True
                    batch.pop()
                if not batch:
                    continue
                payloads = [p for payloads, _ in batch for p in payloads]
                self.mark = batch[-1][1]
                self.check_frames(*payloads)
                self.f.write(payloads[0] if len(payloads) == 1 else b"".join(payloads))
                self.written += sum(map(len, payloads))
                if self.written - self.synced >= SAVE_EVERY or time.monotonic() - self.saved_at >= SAVE_S:
                    self._sync()
            self._sync()
        except Exception as exc:  # noqa: BLE001 - reported to the reading thread by check()
            self.error = exc
            while not done:  # drain so put() and close() return
                done = self.q.get() is None

    def _sync(self):
        self.f.flush()
        self.back.seek(self.synced)
        left = self.written - self.synced
        while left > 0:
            b = self.back.read(min(left, 8 << 20))
            if not b:
                raise OSError(f"the part file is shorter than the {self.written} bytes written")
            self.local = crc32c(b, self.local)
            left -= len(b)
        self.synced = self.written
        self.saved_at = time.monotonic()
        before, start, run = self.mark
        # fsync, then the state that points at the synced bytes
        self.puller._save(self.state_path, self.f, self.name, self.synced,
                          P.crc32c_combine(before, run, self.synced - start))


def pull(client, names, dest, delete=False, say=print, progress=None, reconnect_s=30.0):
    """Pull `names` (None: every recording) into `dest`; returns [Outcome]."""
    os.makedirs(dest, exist_ok=True)
    entries = client.list()
    if names is None:
        todo = entries
    else:
        by = {e.name: e for e in entries}
        todo = [by.get(n) or n for n in names]
    p = Puller(client, dest, say, progress, reconnect_s)
    out = []
    for e in todo:
        if isinstance(e, str):
            out.append(Outcome(e, status="failed", error="no such recording on the device"))
            continue
        out.append(p.pull(e, delete))
    return out

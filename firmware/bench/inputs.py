"""Inputs of the firmware benchmarks (host side): the real Lancer trace, a
config whose message streams are that trace's most frequent ids, and
synthetic configs of K message streams for the heap figures.

No DBC is known to match the trace (../shared/data/README.md), so the
per-message config is written from the trace itself: one message per id, its
observed length, one 8-bit signal per byte. What matters for the writer's
cost is the routing and the record sizes, not what the signals mean."""

import collections
import pathlib
import struct
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "firmware"))
import fwtools  # noqa: E402

TRACE = fwtools.TRACES / "lancer-candump.log"
N_MESSAGES = 20  # the goal's "20 message streams + raw bus"


def trace(n=None):
    """[(ticks, id, flags, data)] of the trace's first n frames, ticks from 1000 µs."""
    return [(1000 + t, cid, fl, d) for t, cid, fl, d in fwtools.read_candump(TRACE, n)]


def dbc_text(messages):
    """A DBC of [(id, extended, length)]: one 8-bit signal per payload byte."""
    lines = ['VERSION ""', "", "NS_ :", "", "BS_:", "", "BU_: ECU", ""]
    for cid, ext, ln in messages:
        lines.append(f"BO_ {cid | (1 << 31) if ext else cid} M{cid:X}: {ln} ECU")
        lines += [f' SG_ B{k} : {8 * k}|8@1+ (1,0) [0|255] "" Vector__XXX' for k in range(ln)]
        lines.append("")
    return "\n".join(lines) + "\n"


def compile_messages(messages):
    """LBCF bytes (and the compiled DBC) of a config with these message streams."""
    with tempfile.TemporaryDirectory() as tmp:
        p = pathlib.Path(tmp) / "m.dbc"
        p.write_text(dbc_text(messages))
        return fwtools.compile_config(p)


def trace_messages(frames, k=N_MESSAGES):
    """The k most frequent (id, extended, length) of frames: data frames only."""
    c = collections.Counter((cid, bool(fl & 1), len(d)) for _, cid, fl, d in frames if not fl & ~1)
    return [m for m, _ in c.most_common(k)]


def synthetic_messages(k):
    """k 8-byte standard-id messages (for the heap per stream count)."""
    return [(0x100 + 3 * i, False, 8) for i in range(k)]


def workloads(n):
    """The two CAN workloads over the trace's first n frames:
    msg: the frames of the 20 configured ids (all go to their message stream alone);
    raw: every frame, with a raw-bus-only config. Each: (config bytes, frames)."""
    frames = trace(n)
    msgs = trace_messages(frames)
    cfg, _ = compile_messages(msgs)
    keep = {(cid, ext) for cid, ext, _ in msgs}
    routed = [f for f in frames if (f[1], bool(f[2] & 1)) in keep]
    return {"msg": (cfg, routed), "raw": (fwtools.raw_only_config(), frames)}


def encode(frames):
    """Compact frame list for a board script: per frame u16 gap (µs),
    u32 id, u8 flags, u8 length, data."""
    out = bytearray()
    last = 0
    for t, cid, fl, d in frames:
        out += struct.pack("<HIBB", t - last, cid, fl, len(d)) + d
        last = t
    return bytes(out)

"""The in-memory, columnar form every trace format reads into and writes from:
`Trace`, one `Bus` of numpy columns per channel, in the raw bus stream's terms
(integer ticks, id, FLAG_* flags, the wire DLC code, zero-padded payload)."""

from dataclasses import dataclass, field, replace

import numpy as np

from .. import layout
from ..layout import FLAG_FD, FLAG_REMOTE
from ..rows import gather, pad


@dataclass
class Bus:
    """One channel's frames, in arrival order."""

    name: str
    t: np.ndarray  # int64 ticks of 10**Trace.axis_exp s (absolute Unix ticks when dated)
    id: np.ndarray  # uint32, 29 bits
    flags: np.ndarray  # uint8, layout.FLAG_*
    dlc: np.ndarray  # uint8, the wire DLC code
    data: np.ndarray  # uint8 (n, 8) classic or (n, 64) CAN FD, zero-padded
    invalid: int = 0  # frames the source had that no record holds as given (SPEC §13.1): not in the columns

    @property
    def fd(self):
        return self.data.shape[1] == layout.FD_PAYLOAD

    def __len__(self):
        return len(self.t)


@dataclass
class Trace:
    buses: dict  # name -> Bus
    axis_exp: int = -6
    dated: bool = False  # t are Unix ticks
    start: object = None  # ticks of the measurement start, when the source has one
    source_format: str = ""
    notes: list = field(default_factory=list)
    left_out: list = field(default_factory=list)  # what the source has and the Trace not: refused_note, a cut line
    attachments: list = field(default_factory=list)  # (name, bytes): the DBC of a Logb file, for MDF4

    @property
    def frames(self):
        return sum(len(b) for b in self.buses.values())

    def time_bounds(self):
        ts = [b.t for b in self.buses.values() if len(b)]
        if not ts:
            return None
        return min(int(t.min()) for t in ts), max(int(t.max()) for t in ts)


@dataclass
class Merged:
    """Every frame of a Trace, all buses merged in time order (stable: a bus keeps its
    order, earlier names first at equal ticks)."""

    names: list  # bus names, sorted
    bus: np.ndarray  # int index into names, per frame
    t: np.ndarray
    id: np.ndarray
    flags: np.ndarray
    dlc: np.ndarray
    data: np.ndarray  # (n, 64) when any bus is CAN FD, else (n, 8)


def merged(trace):
    names = sorted(trace.buses)
    buses = [trace.buses[n] for n in names]
    width = layout.FD_PAYLOAD if any(b.fd for b in buses) else layout.CLASSIC_PAYLOAD
    if not buses:
        return Merged(names, np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.uint32),
                      np.zeros(0, np.uint8), np.zeros(0, np.uint8), np.zeros((0, width), np.uint8))
    t = np.concatenate([b.t for b in buses])
    order = np.argsort(t, kind="stable")
    bus = np.concatenate([np.full(len(b), i, np.int32) for i, b in enumerate(buses)])
    data = np.concatenate([pad(b.data, width) for b in buses])
    return Merged(names, bus[order], t[order], np.concatenate([b.id for b in buses])[order],
                  np.concatenate([b.flags for b in buses])[order], np.concatenate([b.dlc for b in buses])[order],
                  gather(data, order))


def refused_note(bus, n, ident, why):
    """The Trace.left_out note for `n` frames of `bus` that layout.refusal refused (one: ident, why)."""
    return (f"{bus}: {n} frames no record holds as given (SPEC §13.1), not imported, counted in the "
            f"bus's logb.lost.invalid; for example id 0x{ident:X}: {why}")


def payload_len(flags, code):
    """Bytes of payload a frame carries on the wire (0 for remote frames)."""
    if flags & FLAG_REMOTE:
        return 0
    return layout.dlc_to_len(code, fd=bool(flags & FLAG_FD))


def select(trace, keep):
    """The Trace with only the frames `keep(bus)` (a bool mask per Bus) keeps."""
    buses = {}
    for name, b in trace.buses.items():
        m = keep(b)
        buses[name] = Bus(name, b.t[m], b.id[m], b.flags[m], b.dlc[m], b.data[m])
    return replace(trace, buses=buses)

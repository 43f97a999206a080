"""MDF4 in the ASAM CAN bus-logging layout, through asammdf (written, not read).

The layout is the one asammdf's `extract_bus_logging`, the asammdf GUI, CANape
and python-can's MF4Reader expect (and python-can's MF4Writer writes): bus-event
channel groups whose acquisition source is a CAN bus, holding structured
channels `CAN_DataFrame`, `CAN_ErrorFrame` and `CAN_RemoteFrame`:

    .BusChannel u1   the bus: the digits at the end of the Logb stream name + 1 ("can0" → 1)
    .ID u4 (29 bits), .IDE u1, .DLC u1 (the wire code), .DataLength u1 (bytes on the wire)
    .DataBytes (8,) or (64,) u1 when any bus is CAN FD, zero-padded (not the remote group)
    .Dir u1 (0 Rx, 1 Tx), .EDL, .BRS, .ESI u1 (not the remote group)

The master channel is float64 seconds after the header's start time: the
measurement start of an imported trace, else the first frame (whole µs), in
UTC; undated recordings start at the Unix epoch. Frames of every bus are merged
in time order. The trace's attachment (the DBC a Logb file carries) is attached
to the MDF file too (it is not applied: asammdf's extract_bus_logging does that).
"""

import datetime
import hashlib
import os

import numpy as np

from .. import layout
from ..layout import FLAG_BRS, FLAG_ERROR, FLAG_ESI, FLAG_EXTENDED, FLAG_FD, FLAG_REMOTE, FLAG_TX
from .trace import merged

NAME = "mdf4"
EXTENSIONS = (".mf4", ".mdf")
REQUIRES = "asammdf"
LOSSES = ""  # asammdf holds every frame
read = None  # asammdf's extract_bus_logging reads it; Logb does not
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
GROUPS = ("CAN_DataFrame", "CAN_ErrorFrame", "CAN_RemoteFrame")


def _dtype(group, width):
    cols = [("BusChannel", "<u1"), ("ID", "<u4"), ("IDE", "<u1"), ("DLC", "<u1"), ("DataLength", "<u1")]
    if group != "CAN_RemoteFrame":
        cols.append(("DataBytes", f"({width},)u1"))
    cols.append(("Dir", "<u1"))
    if group != "CAN_RemoteFrame":
        cols += [("EDL", "<u1"), ("BRS", "<u1"), ("ESI", "<u1")]
    return np.dtype([(f"{group}.{n}", t) for n, t in cols])


def bus_channel(name, index):
    """MDF BusChannel of a Logb bus name: its trailing number + 1, else its position + 1."""
    digits = ""
    for ch in reversed(name):
        if not ch.isdigit():
            break
        digits = ch + digits
    value = int(digits) + 1 if digits else index + 1
    return min(value, 255)


def write(trace, out, compression=2):
    """Write a Trace as MDF4 (4.10). compression: asammdf's 0 none, 1 deflate,
    2 transposed + deflate. Returns no warnings: every frame fits."""
    from asammdf import MDF, Signal
    from asammdf.blocks import v4_constants as v4c
    from asammdf.blocks.v4_blocks import SourceInformation

    m = merged(trace)
    t, ids, flags, dlc, data = m.t, m.id, m.flags, m.dlc, m.data
    width = data.shape[1]
    chan = np.array([bus_channel(n, i) for i, n in enumerate(m.names)], np.uint8)[m.bus]

    # the header start: measurement start (or first frame), whole µs, UTC
    if trace.dated and len(t):
        per_us = 10 ** (-6 - trace.axis_exp)
        first = int(t[0]) if trace.start is None else min(int(trace.start), int(t[0]))
        zero = (first // per_us) * per_us
        start_time = EPOCH + datetime.timedelta(microseconds=zero // per_us)
    else:
        zero, start_time = 0, EPOCH
    seconds = (t - zero).astype(np.float64) * 10.0 ** trace.axis_exp

    fd = (flags & FLAG_FD) != 0
    length = layout.dlc_lengths(dlc, fd)
    remote = (flags & FLAG_REMOTE) != 0
    error = (flags & FLAG_ERROR) != 0
    kinds = {"CAN_DataFrame": ~remote & ~error, "CAN_ErrorFrame": error, "CAN_RemoteFrame": remote & ~error}

    mdf = MDF(version="4.10")
    mdf.header.start_time = start_time
    src = SourceInformation(source_type=v4c.SOURCE_BUS, bus_type=v4c.BUS_TYPE_CAN)
    attachment = None
    if trace.attachments:  # asammdf links one embedded file to the groups
        name, payload = trace.attachments[0]
        attachment = (payload, name, hashlib.md5(payload).digest())
    for group, sel in kinds.items():
        if not sel.any():
            continue
        rec = np.zeros(int(sel.sum()), _dtype(group, width))
        rec[f"{group}.BusChannel"] = chan[sel]
        rec[f"{group}.ID"] = ids[sel]
        rec[f"{group}.IDE"] = (flags[sel] & FLAG_EXTENDED) != 0
        rec[f"{group}.DLC"] = dlc[sel]
        rec[f"{group}.DataLength"] = np.where(remote[sel], 0, length[sel])
        rec[f"{group}.Dir"] = (flags[sel] & FLAG_TX) != 0
        if group != "CAN_RemoteFrame":
            rec[f"{group}.DataBytes"] = data[sel]
            rec[f"{group}.EDL"] = fd[sel]
            rec[f"{group}.BRS"] = (flags[sel] & FLAG_BRS) != 0
            rec[f"{group}.ESI"] = (flags[sel] & FLAG_ESI) != 0
        sig = Signal(name=group, samples=rec, timestamps=seconds[sel], source=src,
                     attachment=attachment, comment=f"{group} (exported by logb)")
        mdf.append(sig, acq_name="CAN", comment=f"{group} of bus(es) {', '.join(m.names)}")
    try:
        if isinstance(out, (str, os.PathLike)):
            with open(out, "wb") as fh:  # a path would get its suffix changed to .mf4 by asammdf
                mdf.save(fh, compression=compression)
        else:
            mdf.save(out, compression=compression)
    finally:
        mdf.close()
    return []

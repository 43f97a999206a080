"""Logb CAN buses (every frame, whatever the routing) → MDF4 in the ASAM CAN bus-logging
layout, through asammdf.

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
UTC; undated recordings start at the Unix epoch. Frames of every exported bus
are merged in time order. A DBC attached to the Logb file is attached to the
MDF file too (it is not applied: asammdf's extract_bus_logging does that).
"""

import datetime
import hashlib
import os

import numpy as np

from .formats import DLC_LEN, read_logb
from .layout import FLAG_BRS, FLAG_ERROR, FLAG_ESI, FLAG_EXTENDED, FLAG_FD, FLAG_REMOTE, FLAG_TX

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


def trace_to_mdf(trace, out, compression=2, attachments=()):
    """Write a formats.Trace as MDF4 (4.10). compression: asammdf's 0 none, 1 deflate,
    2 transposed + deflate. Returns {group: frames written}."""
    from asammdf import MDF, Signal
    from asammdf.blocks import v4_constants as v4c
    from asammdf.blocks.v4_blocks import SourceInformation

    names = sorted(trace.buses)
    buses = [trace.buses[n] for n in names]
    width = 64 if any(b.fd for b in buses) else 8
    n_all = sum(len(b) for b in buses)
    t = np.concatenate([b.t for b in buses]) if buses else np.zeros(0, np.int64)
    order = np.argsort(t, kind="stable")
    t = t[order]
    chan = np.concatenate([np.full(len(b), bus_channel(n, i), np.uint8) for i, (n, b) in
                           enumerate(zip(names, buses))])[order] if buses else np.zeros(0, np.uint8)
    ids = np.concatenate([b.id for b in buses])[order] if buses else np.zeros(0, np.uint32)
    flags = np.concatenate([b.flags for b in buses])[order] if buses else np.zeros(0, np.uint8)
    dlc = np.concatenate([b.dlc for b in buses])[order] if buses else np.zeros(0, np.uint8)
    data = np.zeros((n_all, width), np.uint8)
    row = 0
    parts = []
    for b in buses:
        parts.append((row, b.data))
        row += len(b)
    for start, d in parts:
        data[start:start + len(d), : d.shape[1]] = d
    data = data[order]

    # the header start: measurement start (or first frame), whole µs, UTC
    if trace.dated and n_all:
        per_us = 10 ** (-6 - trace.axis_exp)
        first = int(t[0]) if trace.start is None else min(int(trace.start), int(t[0]))
        zero = (first // per_us) * per_us
        start_time = EPOCH + datetime.timedelta(microseconds=zero // per_us)
    else:
        zero, start_time = 0, EPOCH
    seconds = (t - zero).astype(np.float64) * 10.0 ** trace.axis_exp

    fd = (flags & FLAG_FD) != 0
    length = DLC_LEN[np.minimum(dlc, 15)]
    length = np.where(fd, length, np.minimum(length, 8))
    remote = (flags & FLAG_REMOTE) != 0
    error = (flags & FLAG_ERROR) != 0
    kinds = {"CAN_DataFrame": ~remote & ~error, "CAN_ErrorFrame": error, "CAN_RemoteFrame": remote & ~error}

    mdf = MDF(version="4.10")
    mdf.header.start_time = start_time
    src = SourceInformation(source_type=v4c.SOURCE_BUS, bus_type=v4c.BUS_TYPE_CAN)
    attachment = None
    if attachments:  # asammdf links one embedded file to the groups
        name, payload = attachments[0]
        attachment = (payload, name, hashlib.md5(payload).digest())
    written = {}
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
        mdf.append(sig, acq_name="CAN", comment=f"{group} of bus(es) {', '.join(names)}")
        written[group] = len(rec)
    try:
        if isinstance(out, (str, os.PathLike)):
            with open(out, "wb") as fh:  # a path would get its suffix changed to .mf4 by asammdf
                mdf.save(fh, compression=compression)
        else:
            mdf.save(out, compression=compression)
    finally:
        mdf.close()
    return written


def export_mdf(f, out, streams=None, compression=2):
    """A LogbFile's CAN buses (all, or those named) to MDF4. Returns (trace, written)."""
    from .dbc import MEDIA_TYPE

    trace = read_logb(f, streams)
    dbcs = [a for a in f.attachments if a.media_type == MEDIA_TYPE and not a.problem]
    attachments = [(dbcs[-1].name, dbcs[-1].data())] if dbcs else []
    return trace, trace_to_mdf(trace, out, compression=compression, attachments=attachments)

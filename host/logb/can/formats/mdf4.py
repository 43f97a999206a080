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
to the MDF file too (it is not applied: asammdf's extract_bus_logging does that),
cleaned first of the message ids cantools refuses (clean_dbc): asammdf parses an
attached DBC with canmatrix whenever the file is opened, and canmatrix prints
"error with line no" for such a BO_ line and hangs that message's signals on the
message before it.
"""

import datetime
import hashlib
import os
import re

import numpy as np

from .. import layout
from ..dbc import EXT_BITS, EXTENDED, STD_BITS
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


_BO = re.compile(r"^[ \t]*BO_[ \t]+(\d+)[ \t]+(\w+)[ \t]*:", re.M)
# a statement naming a message by id: CM_ BO_/SG_, BA_ ... BO_/SG_, VAL_, SIG_VALTYPE_, ... up to its
# `;`, over lines and through quoted strings (comments span lines, and may hold `;`)
_STATEMENT = re.compile(r'^[ \t]*(?:CM_|BA_|BA_REL_|VAL_|SIG_VALTYPE_|BO_TX_BU_|SG_MUL_VAL_|SIG_GROUP_)\b'
                        r'(?:[^";]|"(?:[^"\\]|\\.)*")*;[ \t]*\n?', re.M)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_ID_REF = r"(\b(?:BO_|SG_|VAL_|SG_MUL_VAL_|SIG_VALTYPE_|BO_TX_BU_|SIG_GROUP_)[ \t]+){}\b"


def clean_dbc(payload):
    """(DBC bytes for an MF4, notes): the DBC with the ids cantools refuses mended the way
    logb.can.dbc compiles them: an id of 12..29 bits without DBC's extended flag (bit 31) gets
    the flag; a message whose id is no CAN id (over 29 bits: a tool's pseudo message) is left
    out with every statement naming it. Everything else is kept byte for byte. (None, notes)
    when cantools cannot load even the cleaned text: then nothing is attached."""
    import cantools

    for encoding in ("utf-8", "cp1252", "latin-1"):  # latin-1 decodes anything
        try:
            text = payload.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    mended, dropped = [], []
    for m in list(_BO.finditer(text)):
        dbc_id, name = int(m.group(1)), m.group(2)
        if dbc_id <= STD_BITS or (dbc_id & EXTENDED and dbc_id & ~EXTENDED <= EXT_BITS):
            continue
        ref = re.compile(_ID_REF.format(dbc_id))
        if dbc_id <= EXT_BITS:
            text = ref.sub(lambda r: f"{r.group(1)}{dbc_id | EXTENDED}", text)
            mended.append(f"{name} (0x{dbc_id:X})")
            continue
        block = re.compile(rf"^[ \t]*BO_[ \t]+{dbc_id}[ \t]+\w+[ \t]*:[^\n]*\n?(?:[ \t]+SG_[^\n]*\n?)*", re.M)
        text = block.sub("", text)
        text = _STATEMENT.sub(lambda st: "" if ref.search(_STRING.sub('""', st.group(0))) else st.group(0), text)
        dropped.append(name)
    notes = []
    if mended:
        notes.append(f"id with more than 11 bits and no extended flag, written as extended (as logb decodes it): "
                     f"{', '.join(mended)}")
    if dropped:
        notes.append(f"no CAN id (more than 29 bits), left out: {', '.join(dropped)}")
    try:
        cantools.database.load_string(text, database_format="dbc", strict=False)
    except Exception as e:  # cantools raises several unrelated types for a DBC it cannot load
        return None, notes + [f"cantools cannot load it ({str(e).splitlines()[0][:200]}); not attached"]
    return text.encode(encoding), notes


def write(trace, out, compression=2):
    """Write a Trace as MDF4 (4.10). compression: asammdf's 0 none, 1 deflate,
    2 transposed + deflate. Returns warnings: only what clean_dbc changed in the DBC
    (every frame fits)."""
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
    attachment, warnings = None, []
    if trace.attachments:  # asammdf links one embedded file to the groups
        name, payload = trace.attachments[0]
        payload, notes = clean_dbc(payload)
        warnings = [f"MDF4: the attached {name}: {n}" for n in notes]
        if payload is not None:
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
    return warnings

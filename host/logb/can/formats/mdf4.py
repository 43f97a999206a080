"""MDF4 in the ASAM CAN bus-logging layout, through asammdf (written and read).

The layout is the one asammdf's `extract_bus_logging`, the asammdf GUI, CANape
and python-can's MF4Reader expect (and python-can's MF4Writer writes): bus-event
channel groups whose acquisition source is a CAN bus, holding structured
channels `CAN_DataFrame`, `CAN_ErrorFrame` and `CAN_RemoteFrame`:

    .BusChannel u1   the bus: the digits at the end of the Logb stream name + 1 ("can0" → 1)
    .ID u4 (29 bits), .IDE u1, .DLC u1 (the wire code), .DataLength u1 (bytes on the wire)
    .DataBytes (8,) or (64,) u1 when any bus is CAN FD, zero-padded (not the remote group)
    .Dir u1 (0 Rx, 1 Tx), .EDL, .BRS, .ESI u1 (not the remote group)

The master channel is int64 ticks of the trace (µs, or ns when it has them) after
the header's start time, with a linear conversion (a = 1e-6 or 1e-9, b = 0) to
seconds, so every reader (asammdf's get, to_dataframe, extract_bus_logging,
python-can's MF4Reader) sees float seconds while the file keeps exact integers:
their transposed bytes deflate to ~1/3 of float64 seconds' (whose mantissas are
noise), which makes the file smaller than python-can's MF4Writer's. The start is
the measurement start of an imported trace, else the first frame (whole µs), in
UTC; undated recordings start at the Unix epoch. Frames of every bus are merged
in time order. The trace's attachment (the DBC a Logb file carries) is attached
to the MDF file too (it is not applied: asammdf's extract_bus_logging does that),
cleaned first of the message ids cantools refuses (clean_dbc): asammdf parses an
attached DBC with canmatrix whenever the file is opened, and canmatrix prints
"error with line no" for such a BO_ line and hangs that message's signals on the
message before it.

Reading takes every channel group holding one of those structures, whoever wrote
it (logb, python-can's MF4Writer, a logger or CANape), by its component channels:
ID (bit 31, where a writer sets it, also means extended), IDE, DLC (else from
DataLength), DataLength, DataBytes (fixed or variable length; bytes past
DataLength are dropped), Dir, EDL, BRS, ESI, each absent one 0. Times are the
header's start plus the master channel: dated, unless the start is the Unix
epoch (what logb writes for an undated recording); µs ticks when every stamp is
a whole µs, else ns. An integer master with a conversion of a = 10^-k s (k <= 9),
b = 0 (logb's, and many loggers') is read as exact integers, any other through
asammdf's float seconds (to the ns). BusChannel n is the bus can{n-1} (ASAM counts from 1);
python-can's MF4Writer numbers "can0" 0, so a file with a BusChannel 0 is read
as counting from 0.
"""

import datetime
import gc
import hashlib
import os
import re
import sys

import numpy as np

from .. import layout
from ..dbc import EXT_BITS, EXTENDED, STD_BITS
from ..layout import FLAG_BRS, FLAG_ERROR, FLAG_ESI, FLAG_EXTENDED, FLAG_FD, FLAG_REMOTE, FLAG_TX
from .trace import Bus, Trace, merged, refused_note

NAME = "mdf4"
EXTENSIONS = (".mf4", ".mdf")
REQUIRES = "asammdf"
LOSSES = """\
- MDF4: BusChannel is one byte: a bus numbered over 254 (BLF channel 4368) becomes can254.
  CAN_RemoteFrame has no EDL/BRS/ESI (CAN FD has no remote frames): a remote frame a BLF flags
  FD loses those flags."""
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
    from asammdf.blocks.v4_blocks import ChannelConversion, SourceInformation

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
    ticks = (t - zero).astype(np.int64)

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
        sig = Signal(name=group, samples=rec, timestamps=ticks[sel], source=src,
                     attachment=attachment, comment=f"{group} (exported by logb)")
        mdf.append(sig, acq_name="CAN", comment=f"{group} of bus(es) {', '.join(m.names)}")
        # asammdf makes the master of the timestamps' dtype (int64); the conversion makes it seconds
        mdf.groups[-1].channels[mdf.masters_db[len(mdf.groups) - 1]].conversion = ChannelConversion(
            conversion_type=v4c.CONVERSION_TYPE_LIN, a=10.0 ** trace.axis_exp, b=0.0)
    try:
        if isinstance(out, (str, os.PathLike)):
            with open(out, "wb") as fh:  # a path would get its suffix changed to .mf4 by asammdf
                mdf.save(fh, compression=compression)
        else:
            mdf.save(out, compression=compression)
    finally:
        mdf.close()
    return warnings


def _column(mdf, name, index, n, dtype=np.uint8):
    """The raw samples of component channel `name` of group `index`, or zeros when it has none."""
    try:
        return np.asarray(mdf.get(name, index, raw=True).samples)
    except Exception:  # asammdf raises MdfException (or a KeyError) for a channel the group lacks
        return np.zeros(n, dtype)


def _payloads(samples, lengths, n):
    """(n, 64) zero-padded data of DataBytes samples: a fixed (n, W) array, or variable-length bytes."""
    out = np.zeros((n, layout.FD_PAYLOAD), np.uint8)
    if samples.dtype == object or samples.ndim == 1:  # VLSD: one bytes object per frame
        for k, b in enumerate(samples.tolist()):
            b = bytes(b)[:layout.FD_PAYLOAD]
            out[k, :len(b)] = np.frombuffer(b, np.uint8)
    else:
        w = min(samples.shape[1], layout.FD_PAYLOAD)
        out[:, :w] = samples[:, :w]
    out[np.arange(layout.FD_PAYLOAD)[None, :] >= lengths[:, None]] = 0  # past DataLength: not on the wire
    return out


def _open(path):
    """asammdf's MDF of `path`; what it cannot open raises ValueError saying why."""
    from asammdf import MDF

    hook, sys.unraisablehook = sys.unraisablehook, lambda _: None
    try:
        try:
            return MDF(str(path))
        except Exception as exc:  # asammdf raises several unrelated types for a file it cannot read
            why = str(exc) or type(exc).__name__
        # the half-built MDF4 is freed with the exception above, and its __del__ raises
        # AttributeError ("Exception ignored ..." on stderr) about the file it never opened
        gc.collect()
    finally:
        sys.unraisablehook = hook
    raise ValueError(why)


def _master_ns(mdf, index, seconds):
    """ns after the header's start of group `index`: exact from an integer master whose
    conversion is a = 10^-k s (k <= 9), b = 0, else `seconds` (asammdf's floats) rounded."""
    from asammdf.blocks import v4_constants as v4c

    ch_nr = mdf.masters_db.get(index)
    ch = mdf.groups[index].channels[ch_nr] if ch_nr is not None else None
    conv = ch.conversion if ch is not None else None
    if (ch is not None and ch.channel_type == v4c.CHANNEL_TYPE_MASTER and ch.data_type in v4c.INT_TYPES
            and conv is not None and conv.conversion_type == v4c.CONVERSION_TYPE_LIN and conv.b == 0):
        k = next((k for k in range(10) if conv.a == 10.0 ** -k), None)
        if k is not None:
            raw = np.asarray(mdf.get(group=index, index=ch_nr, raw=True).samples)
            return raw.astype(np.int64) * 10 ** (9 - k)
    return np.round(np.asarray(seconds, np.float64) * 1e9).astype(np.int64)


def read(path):
    """An MDF4 CAN bus-logging file as a Trace (see the module's doc)."""
    parts = []  # (BusChannel, ns after the start, id, flags, dlc, data, length)
    mdf = _open(path)
    try:
        start = mdf.header.start_time
        for index, group in enumerate(mdf.groups):
            names = {c.name for c in group.channels}
            kind = next((g for g in GROUPS if f"{g}.ID" in names), None)
            if kind is None or not group.channel_group.cycles_nr:
                continue
            ident = mdf.get(f"{kind}.ID", index, raw=True)
            n = len(ident.samples)
            raw_id = np.asarray(ident.samples).astype(np.uint32)
            ext = (_column(mdf, f"{kind}.IDE", index, n) != 0) | (raw_id & np.uint32(EXTENDED) != 0)
            flags = (ext * FLAG_EXTENDED | (_column(mdf, f"{kind}.Dir", index, n) != 0) * FLAG_TX
                     | (_column(mdf, f"{kind}.EDL", index, n) != 0) * FLAG_FD
                     | (_column(mdf, f"{kind}.BRS", index, n) != 0) * FLAG_BRS
                     | (_column(mdf, f"{kind}.ESI", index, n) != 0) * FLAG_ESI).astype(np.uint8)
            flags |= {"CAN_DataFrame": 0, "CAN_ErrorFrame": FLAG_ERROR, "CAN_RemoteFrame": FLAG_REMOTE}[kind]
            length = _column(mdf, f"{kind}.DataLength", index, n).astype(np.int64)
            if f"{kind}.DLC" in names:
                dlc = _column(mdf, f"{kind}.DLC", index, n).astype(np.uint8)
            else:
                dlc = np.array([layout.len_to_dlc(int(x)) for x in length], np.uint8)
            if kind == "CAN_RemoteFrame":
                data = np.zeros((n, layout.FD_PAYLOAD), np.uint8)
            else:
                data = _payloads(_column(mdf, f"{kind}.DataBytes", index, n), length, n)
            bus = _column(mdf, f"{kind}.BusChannel", index, n).astype(np.int64)
            if kind == "CAN_RemoteFrame":
                length = np.zeros(n, np.int64)  # its DataLength is the requested length
            parts.append((bus, _master_ns(mdf, index, ident.timestamps), raw_id & np.uint32(~EXTENDED & 0xFFFFFFFF),
                          flags, dlc, data, length))
    finally:
        mdf.close()
    return _trace(parts, start)


def _trace(parts, start):
    cols = [np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64) for k in (0, 1, 2, 3, 4, 6)]
    bus, ns, ids, flags, dlc, length = cols
    data = np.concatenate([p[5] for p in parts]) if parts else np.zeros((0, layout.FD_PAYLOAD), np.uint8)
    # the rule every trace reader applies (SPEC §13.1): refused frames are counted per bus
    why = [layout.refusal(*row) for row in zip(ids.tolist(), flags.tolist(), dlc.tolist(), length.tolist())]
    keep = np.array([w is None for w in why], bool)
    if start.tzinfo is None:  # asammdf gives the header's local time when it has no offset
        start = start.astimezone()
    delta = start - EPOCH
    start_us = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds  # a datetime holds whole µs
    dated = start_us != 0
    exp = -6 if not (ns % 1000).any() else -9
    t = ns // 1000 if exp == -6 else ns
    if dated:
        t = t + start_us * 10 ** (-6 - exp)
    first_bus = int(bus.min()) if len(bus) else 1
    buses, notes = {}, []  # notes: trace.refused_note per bus
    for ch in np.unique(bus).tolist():
        name = f"can{ch - (1 if first_bus >= 1 else 0)}"
        refused = np.flatnonzero((bus == ch) & ~keep)
        if len(refused):
            notes.append(refused_note(name, len(refused), int(ids[refused[0]]), why[refused[0]]))
        sel = np.flatnonzero((bus == ch) & keep)
        sel = sel[np.argsort(t[sel], kind="stable")]
        fd = bool((flags[sel] & FLAG_FD).any())
        buses[name] = Bus(name, t[sel], ids[sel].astype(np.uint32), flags[sel].astype(np.uint8),
                          dlc[sel].astype(np.uint8),
                          np.ascontiguousarray(data[sel, :layout.FD_PAYLOAD if fd else layout.CLASSIC_PAYLOAD]),
                          len(refused))
    return Trace(buses, exp, dated, start_us * 10 ** (-6 - exp) if dated else None, NAME, left_out=notes)

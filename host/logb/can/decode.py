"""Decode CAN signals to columns, vectorised (docs/SPEC.md §13, docs/CAN.md).

Two sources, one result (a `Decoded` per per-message stream):

- per-message streams: the file already holds every signal as a field, so
  decoding is reading columns and applying each field's conversion; no DBC.
  Where a bus was routed `exclusive` (SPEC §13.4), the data frames its exact
  per-message streams could not hold (CAN FD or other flags, another length)
  are only in the raw bus stream: they are routed there by the per-message
  streams' own schema meta (`logb.can.match`, `logb.can.select`) and decoded
  with those schemas, merged into their stream's rows in time order. Every
  frame is decoded exactly once, and a `mirror` and an `exclusive` recording
  of the same frames decode alike;
- a DBC (given, or the file's `application/x-dbc` ATTACH) over each bus's
  frames (`logb.can.bus.bus_frames`: the whole bus whatever the routing):
  frames are grouped by id (`route_rows`, the same first-match routing a
  device applies with the LBCF config), then every signal is extracted with
  `logb.fields` over the group's (N, payload) byte array at once.

Both give what cantools' `Message.decode` gives frame by frame: the raw value
(`raw`), the scaled number (`phys`; `scaling=False`/`True` with
`decode_choices=False`) and, for signals with a value table, the label (`text`,
None where the table has no entry).

J1939 multi-packet messages (TP.CM BAM or RTS/CTS with their TP.DT packets,
logb.can.transport) are reassembled from the bus's frames and decoded like one
frame of their PGN, at the time their last packet came, whichever source: with a
DBC, and from per-message streams (the transport frames are in the raw bus stream
of either routing). Only complete messages are decoded; `logb transport` lists the
others and why. `Decoded.reassembled` counts the rows that are such messages.

Missing is missing: a frame shorter than its message (its DLC says fewer bytes
than the DBC) never carried the signals with a bit past its data. Their cells
are masked (`raw` and `phys` columns are numpy masked arrays where any row
lacks the signal, `text` is None there), as cantools' `allow_truncated=True`
leaves those signals out; `Decoded.short` counts such frames.
"""

import functools
from dataclasses import dataclass, field

import numpy as np

from .. import _backend, convert
from ..errors import NothingToDecodeError
from ..tables import ConversionType
from .. import fields as bits
from . import layout
from .bus import (RAW_FIELDS, _collect, buses, frame_chunks, frames_columns, group_frames, is_message_stream,
                  merge_order, message_routes, rescale, window_ticks)
from .dbc import EXT_BITS, EXTENDED, MEDIA_TYPE, CompiledDbc, compile_dbc, signals_of
from .rows import gather, pad

_STD_LIMIT = 0x800  # keys below this are standard ids (no extended bit)
_LOOP_KEYS = 4  # up to this many distinct ids: one comparison pass per id (else one radix sort)


@dataclass
class Decoded:
    """The decoded signals of one per-message stream (a message or a multiplexer branch)."""

    stream: str
    message: str
    bus: str
    mux: str  # "" or the branch label, e.g. "S0=1"
    axis: np.ndarray  # int64 ticks of 10**axis_exp s
    axis_exp: int
    raw: dict = field(default_factory=dict)  # signal -> raw column (uint64, int64 or float)
    phys: dict = field(default_factory=dict)  # signal -> scaled column (raw itself when unscaled)
    text: dict = field(default_factory=dict)  # signal -> object column of labels / None
    units: dict = field(default_factory=dict)
    rows: object = None  # decoding with a DBC: indices of these frames in the bus's frames (bus_frames)
    short: int = 0  # frames shorter than the message: their signals past the data are masked
    reassembled: int = 0  # rows that are J1939 multi-packet messages (rows: each one's last TP.DT)

    def __len__(self):
        return len(self.axis)

    def seconds(self):
        """The axis in seconds (float64; a quotient of exact integers when axis_exp < 0)."""
        if self.axis_exp < 0:
            return self.axis.astype(np.float64) / 10.0 ** -self.axis_exp
        return self.axis.astype(np.float64) * 10.0 ** self.axis_exp


# ---------------------------------------------------------------- routing

def frame_keys(ids, flags=None):
    """uint32 keys: the 29-bit id, bit 31 set for extended frames. Ids given with
    bit 31 already set (SocketCAN / trace.bin style) count as extended too."""
    ids = np.asarray(ids)
    if ids.dtype != np.uint32:  # bits 0..31 are all a key uses: uint32 arithmetic throughout
        ids = ids.astype(np.uint32) if ids.dtype.kind == "u" else ids.astype(np.int64).astype(np.uint32)
    if flags is None:
        return ids & np.uint32(EXTENDED | EXT_BITS)  # an id's own bit 31 is kept: it says extended
    keys = np.left_shift((np.asarray(flags) & layout.FLAG_EXTENDED) != 0, np.uint32(31), dtype=np.uint32)
    keys |= ids  # in place: one array for the whole bus
    keys &= np.uint32(EXTENDED | EXT_BITS)
    return keys


def data_frames(flags):
    """Rows that are data frames (not remote, not error frames)."""
    return (np.asarray(flags) & (layout.FLAG_REMOTE | layout.FLAG_ERROR)) == 0


def _groups(keys):
    """[(key, row indices)] for every distinct key, without sorting all rows."""
    std = keys < _STD_LIMIT
    std_keys = keys[std]
    present = np.flatnonzero(np.bincount(std_keys, minlength=_STD_LIMIT)) if len(std_keys) else np.zeros(0, int)
    ext_keys = np.unique(keys[~std]) if len(std_keys) != len(keys) else np.zeros(0, np.uint32)
    distinct = np.concatenate([present.astype(np.uint32), ext_keys.astype(np.uint32)])
    if len(distinct) <= _LOOP_KEYS:
        return [(int(k), np.flatnonzero(keys == k)) for k in distinct]
    # many ids: a radix sort of a small group number per row
    lut = np.full(_STD_LIMIT, -1, np.int32)
    lut[present] = np.arange(len(present))
    group = np.empty(len(keys), np.int32)
    group[std] = lut[std_keys]
    if len(ext_keys):
        group[~std] = len(present) + np.searchsorted(ext_keys, keys[~std])
    group16 = group.astype(np.int16) if len(distinct) < 0x7FFF else group
    order = np.argsort(group16, kind="stable")
    counts = np.bincount(group, minlength=len(distinct))
    return list(zip((int(k) for k in distinct), np.split(order, np.cumsum(counts)[:-1])))


def route_rows(entries, keys, payloads, usable=None):
    """Group frames by the per-message stream they belong to.

    entries: CompiledDbc.entries (first match wins, as on a device);
    keys: frame_keys(); payloads: (N, W) uint8; usable: optional boolean mask
    (data frames only). Returns {entry index: sorted row indices}."""
    keys = np.asarray(keys, np.uint32)
    base = np.flatnonzero(usable) if usable is not None and not np.all(usable) else None
    k = keys[base] if base is not None else keys
    found = {}
    cache = {}
    for key, rows in _groups(k):
        cands = cache.get(key)
        if cands is None:
            cands = cache[key] = [i for i, e in enumerate(entries) if (key & e.match_mask) == e.match_id]
        if not cands:
            continue
        if base is not None:
            rows = base[rows]
        for i in cands:
            mux = entries[i].mux
            if mux is None:
                found.setdefault(i, []).append(rows)
                break
            sel = mux.select_rows(pad(payloads[rows], entries[i].payload_len))
            if sel.any():
                found.setdefault(i, []).append(rows[sel])
                rows = rows[~sel]
            if not len(rows):
                break
    out = {}
    for i, parts in found.items():
        rows = parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))
        out[i] = rows
    return out


_NO_KEY = np.uint32(0xFFFFFFFF)  # above every key (29-bit id | bit 31): rows that are not data frames


def _route_grouped(entries, keys, usable, data, axis, lengths):
    """route_rows with each stream's columns moved along: {entry index: (rows, payloads,
    axis, lengths or None)}, rows in order. The rows of every id with a candidate stream
    are grouped in one counting sort (Kernels.group_rows), so an id's columns are
    slices; multiplexer branches and streams taking several ids select from those."""
    data = np.ascontiguousarray(data)
    k = np.ascontiguousarray(keys if usable is None or usable.all() else np.where(usable, keys, _NO_KEY), np.uint32)
    found = _backend.active.key_groups(k)
    if found is None:  # more distinct ids than the kernel's table takes: sort them
        distinct, row_group = np.unique(k, return_inverse=True)
        row_group = row_group.reshape(-1)
    else:
        distinct, row_group = found
    cands, remap = [], np.empty(len(distinct), np.uint32)
    for g, key in enumerate(distinct.tolist()):
        hits = [] if key == _NO_KEY else [i for i, e in enumerate(entries) if (key & e.match_mask) == e.match_id]
        remap[g] = len(cands) if hits else _NO_KEY
        if hits:
            cands.append(hits)
    if len(cands) == len(distinct) and row_group.dtype == np.uint32:
        group = row_group  # every id has a stream: the remap is the identity
    else:
        group = remap[row_group]  # rows of ids no stream takes: _NO_KEY, past every group
    columns = [data, axis] + ([] if lengths is None else [lengths])
    starts, rows, moved = _backend.active.group_rows(group, len(cands), columns)
    found = {}
    for g, entry_ids in enumerate(cands):
        lo, hi = int(starts[g]), int(starts[g + 1])
        part = (rows[lo:hi], *(m[lo:hi] for m in moved))
        for i in entry_ids:
            mux = entries[i].mux
            if mux is None:
                found.setdefault(i, []).append(part)
                break
            sel = mux.select_rows(pad(part[1], entries[i].payload_len))
            if sel.any():
                found.setdefault(i, []).append(tuple(c[sel] for c in part))
                part = tuple(c[~sel] for c in part)
            if not len(part[0]):
                break
    out = {}
    for i, parts in found.items():
        if len(parts) == 1:
            got = parts[0]
        else:  # several ids (or branches) of one stream: back in row order
            got = tuple(np.concatenate(c) for c in zip(*parts))
            order = np.argsort(got[0], kind="stable")
            got = tuple(c[order] for c in got)
        out[i] = got if lengths is not None else (*got, None)
    return out


# ---------------------------------------------------------------- signal columns

def _wanted(sig_name, message, signals):
    return signals is None or sig_name in signals or f"{message}.{sig_name}" in signals


def _text(conv, raw):
    if conv.type == ConversionType.value_to_text and raw.dtype.kind in "iu" and raw.dtype.isnative \
            and (raw.dtype.itemsize == 1 or raw.dtype.itemsize == 2 and len(raw) >= 1 << 16):
        return _table_text(conv.entries, raw)
    keys = np.array([k for k, _ in conv.entries], np.float64)
    labels = convert.physical(conv, raw)
    hit = np.isin(raw.astype(np.float64), keys)
    labels[~hit] = None
    return labels


def _table_text(entries, raw):
    """_text of a narrow integer column: one label per bit pattern (None where no key is
    the value), looked up by the column's unsigned view; the first entry of a key wins."""
    size = 8 * raw.dtype.itemsize
    labels = np.full(1 << size, None, object)
    lo, hi = (-(1 << (size - 1)), (1 << (size - 1)) - 1) if raw.dtype.kind == "i" else (0, (1 << size) - 1)
    for key, label in reversed(entries):
        if lo <= key <= hi and float(key).is_integer():
            labels[int(key) % (1 << size)] = label
    return labels.take(raw.view(f"u{raw.dtype.itemsize}"))


def signal_columns(sig, raw):
    """(phys, text or None) of one SignalField's raw column."""
    conv = sig.numeric
    if conv.is_identity:
        phys = raw
    elif conv.type == ConversionType.linear and raw.dtype.kind in "iu" and raw.flags.c_contiguous:
        phys = _backend.active.linear(raw, *conv.coeffs)  # SPEC §7.3 in one pass
    elif conv.type == ConversionType.linear:
        # SPEC §7.3: a + (b*x), x the nearest double; computed in place (same IEEE result)
        a, b = conv.coeffs
        phys = raw.astype(np.float64)
        with np.errstate(all="ignore"):
            phys *= b
            phys += a
    else:
        phys = convert.physical(conv, raw)
    text = _text(sig.text, raw) if sig.text is not None else None
    return phys, text


_PAYLOAD_SIGNALS = {}  # id(schema) -> (schema, signals, ManyPlan); the schema keeps its id its own
_PAYLOAD_CACHE = 1024


def _payload_signals(schema):
    """The signals of a per-message schema, each (SignalField, the last payload byte it
    needs), and the plan that extracts them all from payloads; built once per schema."""
    hit = _PAYLOAD_SIGNALS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1], hit[2]
    sigs, pfs = [], []
    for sig in signals_of(schema):
        pf = sig.payload_field
        sigs.append((sig, (pf.bit_offset + pf.bit_width - 1) // 8))
        pfs.append(pf)
    if len(_PAYLOAD_SIGNALS) >= _PAYLOAD_CACHE:
        _PAYLOAD_SIGNALS.clear()
    _PAYLOAD_SIGNALS[id(schema)] = hit = (schema, sigs, bits.plan_many(pfs))
    return hit[1], hit[2]


def decode_payloads(schema, payloads, signals=None, message=None, missing=None):
    """Decode every signal of a per-message schema from an (N, W) payload array.
    `missing`: per row, how many payload bytes the frame lacked (the stream's
    `missing` field, or missing_bytes() of raw frames); None: whole messages.
    Returns (raw, phys, text, units) dicts keyed by signal name; a signal some
    row lacks has masked raw and phys columns and None labels there."""
    return _convert_payloads(*_extract_payloads(schema, payloads, signals, message, missing))


def _extract_payloads(schema, payloads, signals, message, missing):
    """decode_payloads' first half: (signals, their raw columns, bytes present per row or None)."""
    message = message or schema.meta_dict().get("logb.can.message", schema.name)
    n_payload = layout.payload_len_of(schema)
    payloads = pad(payloads, n_payload)
    present = None  # bytes each frame carried, only when some frame is short
    if missing is not None and len(missing) and np.any(missing):
        present = n_payload - np.asarray(missing, np.int64)
    sigs, plan = _payload_signals(schema)
    if signals is not None:
        keep = [i for i, (sig, _) in enumerate(sigs) if _wanted(sig.name, message, signals)]
        sigs, plan = [sigs[i] for i in keep], bits.plan_many([plan.fields[i] for i in keep])
    return sigs, bits.extract_many(payloads, plan), present


def _convert_payloads(sigs, cols, present):
    """decode_payloads' second half: the raw columns converted and masked."""
    raw, phys, text, units = {}, {}, {}, {}
    for (sig, last), col in zip(sigs, cols):
        p, t = signal_columns(sig, col)
        if present is not None:
            gone = present <= last  # its last byte was not on the bus
            if gone.any():
                col, p = np.ma.masked_array(col, gone), np.ma.masked_array(p, gone)
                if t is not None:
                    t[gone] = None
        raw[sig.name], phys[sig.name] = col, p
        if t is not None:
            text[sig.name] = t
        units[sig.name] = sig.unit
    return raw, phys, text, units


def missing_bytes(payload_len, dlc, flags):
    """Per raw frame, the bytes of a `payload_len`-byte message its data lacks."""
    return np.maximum(payload_len - layout.frame_lengths(dlc, flags), 0)


# layout.frame_lengths of every (DLC code, FD, remote): one table lookup per frame
_LEN_FLAGS = np.array([0, layout.FLAG_FD, layout.FLAG_REMOTE, layout.FLAG_FD | layout.FLAG_REMOTE], np.uint8)
_LENGTHS = layout.frame_lengths(np.tile(np.arange(16), 4), np.repeat(_LEN_FLAGS, 16)).astype(np.int16)


def frame_lengths(dlc, flags):
    """layout.frame_lengths (int16) through a 64-entry table."""
    flags = np.asarray(flags)
    code = np.asarray(dlc, np.uint8) & np.uint8(15)
    if np.any(flags & (layout.FLAG_FD | layout.FLAG_REMOTE)):
        code |= ((flags & layout.FLAG_FD) != 0).view(np.uint8) << np.uint8(4)
        code |= ((flags & layout.FLAG_REMOTE) != 0).view(np.uint8) << np.uint8(5)
    return _LENGTHS.take(code)


def _shortest(dlc, flags):
    """The least of frame_lengths(dlc, flags) (frames there are), without building them
    when no frame is CAN FD or remote: classic lengths never fall as the code grows."""
    flags = np.asarray(flags)
    if np.any(flags & (layout.FLAG_FD | layout.FLAG_REMOTE)):
        return int(frame_lengths(dlc, flags).min())
    return int(_LENGTHS[int((np.asarray(dlc, np.uint8) & np.uint8(15)).min())])


def _missing(payload_len, lengths):
    """missing_bytes from frame_lengths, None when no frame is short."""
    if not len(lengths) or lengths.min() >= payload_len:
        return None
    return np.maximum(payload_len - lengths, 0)


def _selected(entry_name, message, messages):
    return messages is None or entry_name in messages or message in messages


def decode_frames(compiled, axis, ids, flags, data, messages=None, signals=None, axis_exp=-6, bus=None,
                  dlc=None, session=None, transport=True):
    """Decode raw frames (arrays of one bus) with a CompiledDbc: one Decoded per
    per-message stream that received frames, in the DBC's entry order. `dlc`: the
    frames' DLC codes, so that signals past a short frame's data are masked
    (None: every frame carries its whole message). `transport`: when the DBC has
    J1939 messages, reassemble J1939 TP transfers and decode the complete ones too
    (`session`: the frames' session indices; a session boundary ends a transfer)."""
    data = np.asarray(data, np.uint8)
    if flags is None:
        flags = np.zeros(len(data), np.uint8)
    flags = np.asarray(flags)
    keys = frame_keys(ids, flags)
    entries = compiled.entries
    lengths = None  # no frame is short of any message: nothing to mask, nothing to move per stream
    if dlc is not None and len(dlc) and _shortest(dlc, flags) < max((e.payload_len for e in entries), default=0):
        lengths = frame_lengths(dlc, flags)  # once for the bus, moved along with each message's rows
    usable = data_frames(flags)
    wanted = [i for i, e in enumerate(entries) if _selected(e.name, e.message, messages)]
    axis = np.asarray(axis)
    routed = _route_grouped(entries, keys, usable, data, axis, lengths)
    tp = None
    if transport and any(e.j1939 for e in entries):
        tp = _j1939_messages(entries, axis, ids, flags, dlc, data, axis_exp, session)
    pending = []  # every stream's raw columns first: the grouped payloads are freed before the conversions
    for i in wanted:
        got = routed.get(i)
        more = tp.get(i) if tp else None
        if got is None and more is None:
            continue
        e = entries[i]
        if signals is not None and not any(_wanted(g.name, e.message, signals) for g in signals_of(e.schema)):
            continue
        if got is None:
            got = (np.zeros(0, np.int64), data[:0], axis[:0], None if lengths is None else lengths[:0])
        rows, payloads, t, lens = got
        missing = None if lengths is None else _missing(e.payload_len, lens)
        payloads = pad(payloads, e.payload_len)
        if more is not None:  # multi-packet messages in time order among the frames (frames first on a tie)
            m_rows, m_t, m_payloads, m_missing = more
            order = np.argsort(np.concatenate([t, m_t]), kind="stable")
            width = max(payloads.shape[1], m_payloads.shape[1])
            payloads = np.concatenate([pad(payloads, width), pad(m_payloads, width)])[order]
            rows, t = np.concatenate([rows, m_rows])[order], np.concatenate([t, m_t])[order]
            if missing is None:
                missing = np.zeros(len(order) - len(m_rows), np.int64)
            missing = np.concatenate([missing, m_missing])[order]
        pending.append((e, t, rows, missing, 0 if more is None else len(more[0]),
                        _extract_payloads(e.schema, payloads, signals, e.message, missing)))
    routed = got = payloads = None
    out = []
    for e, t, rows, missing, reassembled, extracted in pending:
        raw, phys, text, units = _convert_payloads(*extracted)
        out.append(Decoded(e.name, e.message, bus or compiled.bus, e.mux.label if e.mux else "",
                           t, axis_exp, raw, phys, text, units, rows, _short(missing), reassembled))
    return out


def _j1939_messages(routes, axis, ids, flags, dlc, data, axis_exp, session=None):
    """{route index: (rows, ticks, payloads, missing bytes)} of the complete J1939 multi-packet
    messages of a bus's frames, routed by the id their PGN would have in one frame (first
    match, as frames are): rows are each message's last TP.DT, ticks its time. `routes`:
    CompiledDbc entries or bus.Route objects."""
    from .transport import reassemble

    if dlc is None:
        dlc = np.full(len(axis), layout.CLASSIC_PAYLOAD, np.uint8)
    done = [m for m in reassemble(axis, ids, flags, dlc, data, True, None, axis_exp, session).messages
            if m.complete]
    if not done:
        return {}
    width = max(len(m.payload) for m in done)
    payloads = np.zeros((len(done), width), np.uint8)
    for k, m in enumerate(done):
        payloads[k, :len(m.payload)] = np.frombuffer(m.payload, np.uint8)
    sizes = np.array([len(m.payload) for m in done], np.int64)
    rows = np.array([m.done_row for m in done], np.int64)
    ticks = np.array([m.end for m in done], np.int64)
    keys = np.array([m.can_id for m in done], np.uint32)
    out = {}
    for i, sel in route_rows(routes, keys, payloads).items():
        n = routes[i].payload_len
        out[i] = (rows[sel], ticks[sel], pad(payloads[sel], n)[:, :n], np.maximum(n - sizes[sel], 0))
    return out


def _short(missing):
    return 0 if missing is None else int(np.count_nonzero(missing))


# ---------------------------------------------------------------- files

def embedded_dbc(f, stream=None):
    """The DBC attached to a LogbFile (bytes), preferring the one a raw bus
    stream's META names (`logb.can.dbc`); None if there is none."""
    dbcs = [a for a in f.attachments if a.media_type == MEDIA_TYPE and not a.problem]
    if not dbcs:
        return None
    named = stream.meta.get("logb.can.dbc") if stream is not None else None
    for a in dbcs:
        if named and a.name == named:
            return a.data()
    return dbcs[-1].data()


def attached_dbc(data, bus):
    """compile_dbc of an attached DBC's bytes for a bus, the last few kept by their bytes:
    files of one fleet carry the same DBC, and parsing one costs milliseconds (the lake's
    units keep theirs alike). The CompiledDbc is shared: never change it."""
    return _compile_attached(bytes(data), bus)


@functools.lru_cache(maxsize=4)
def _compile_attached(data, bus):
    return compile_dbc(data, bus=bus)


def decode_file(f, dbc=None, messages=None, signals=None, window=None, source="auto"):
    """Decode a LogbFile's CAN signals.

    Without `dbc`, the per-message streams are decoded when the file has any (with,
    for `exclusive` buses, the raw bus stream's frames their exact streams could not
    hold); otherwise (or with `dbc`: a path, DBC text or CompiledDbc, or with
    source="raw") every bus's frames (bus_frames) are decoded with that DBC or the
    file's embedded one; source="messages" insists on per-message streams. A damaged
    or cut file whose buses are `mirror` with a DBC attached is decoded from its raw
    bus streams (per-message DATA, written later than the raw frames it repeats, may
    be lost for whole time ranges; the raw bus stream loses only what was hit). `window`
    is (T0, T1) in seconds of the axis (inclusive). Returns a list of Decoded;
    NothingToDecodeError when the file has no CAN stream, or no DBC for its raw ones."""
    return [d for part in _decode(f, dbc, messages, signals, window, source, None) for d in part]


def decode_batches(f, dbc=None, messages=None, signals=None, window=None, source="auto", records=1 << 16):
    """decode_file as a stream: yields lists of Decoded, each of about `records` frames
    of one per-message stream or one bus (whole DATA frames), so memory is bounded by
    the batch, not the file. Concatenated stream by stream (message by message for a
    bus), they are decode_file's Decoded: the same rows in the same order, `rows`
    indexing the bus's frames as there. Streams and buses come one after another, each
    in its own time order, as in decode_file.

    What needs a whole bus at once is decoded whole, as one batch: a bus with J1939
    transport messages in its DBC (a transfer may span batches), a bus of several raw
    bus streams or with `exclusive` sessions (their frames are merged by time), and a
    per-message stream that takes frames from the raw bus stream (exclusive routing or
    J1939 transfers)."""
    if records < 1:
        raise ValueError("records must be at least 1")
    yield from _decode(f, dbc, messages, signals, window, source, records)


def _decode(f, dbc, messages, signals, window, source, records):
    """decode_file's work as lists of Decoded: one list per stream or bus when `records`
    is None, else per batch of about that many frames (decode_batches)."""
    messages = set(messages) if messages else None
    signals = set(signals) if signals else None
    per_message = [s for s in f.streams.values() if is_message_stream(s)]
    if source == "auto" and dbc is None and per_message and damaged_mirror(f):
        source = "raw"  # the whole bus is intact where per-message DATA may be lost (a cut file)
    if source == "messages" and not per_message:
        raise NothingToDecodeError("no per-message CAN streams in this file")
    if source == "messages" or (source == "auto" and dbc is None and per_message):
        yield from _decode_messages(f, per_message, messages, signals, window, records)
        return
    groups = buses(f)
    if not groups:
        raise NothingToDecodeError("no CAN streams (raw bus or per-message) in this file")
    compiled_given = dbc if isinstance(dbc, CompiledDbc) else None
    for g in groups:
        s = g.streams[0]
        compiled = compiled_given
        if compiled is None:
            text = dbc if dbc is not None else embedded_dbc(f, s)
            if text is None:
                raise NothingToDecodeError(f"raw bus stream {s.name!r}: no DBC given and none attached to the file; "
                                           f"give one with --dbc FILE.dbc")
            compiled = compile_dbc(text, bus=s.name) if dbc is not None else attached_dbc(text, s.name)
        yield from bus_batches(f, g, compiled, messages, signals, window, records)


def bus_batches(f, group, compiled, messages=None, signals=None, window=None, records=None, bus=None):
    """One bus's frames (a BusGroup of `buses`) decoded with one CompiledDbc: yields lists
    of Decoded, of about `records` frames each, or the whole bus at once when `records` is
    None. What needs the whole bus at once is decoded whole, as one batch, whatever
    `records` (decode_batches). `bus` names the bus in each Decoded (default: its first
    raw bus stream's name); `rows` index the whole bus's frames, as in decode_file."""
    s = group.streams[0]
    bus = s.name if bus is None else bus
    whole = (records is None or len(group.streams) > 1 or group.exclusive_segments()
             or any(e.j1939 for e in compiled.entries))
    if whole:
        b = group_frames(f, group, window)
        yield decode_frames(compiled, b.t, b.id, b.flags, b.data, messages, signals, b.axis_exp, bus=bus,
                            dlc=b.dlc, session=b.session)
        return
    ticks = _ticks(window, s)
    width = s.schema.field_named("data").bit_width // 8
    base = 0  # frames of the bus before this batch: Decoded.rows index the whole bus
    for chunk in frame_chunks(s, ticks, records):
        axis, session, cols = frames_columns(s, chunk, RAW_FIELDS, ticks)
        part = decode_frames(compiled, axis, cols["id"], cols["flags"], pad(cols["data"], width), messages, signals,
                             s.schema.axis_exp, bus=bus, dlc=cols["dlc"], session=session, transport=False)
        for d in part:
            d.rows = d.rows + base
        base += len(axis)
        if part:
            yield part


def _decode_messages(f, per_message, messages, signals, window, records):
    extra = None
    for s in per_message:
        meta = s.schema.meta_dict()
        message = meta.get("logb.can.message", s.name)
        if not _selected(s.name, message, messages):
            continue
        if signals is not None and not any(_wanted(g.name, message, signals) for g in signals_of(s.schema)):
            continue
        if extra is None:
            extra = _exclusive_leftovers(f, window)
            tp = _transport_leftovers(f, window)
            for uuid, parts in tp.items():
                extra.setdefault(uuid, []).extend(parts)
        # the payload bytes hold every signal: read them once, then extract
        # the signals over the whole stream (or batch) at a time
        more = extra.get(s.uuid)
        names = _payload_fields(s.schema)
        if more is not None:
            pieces = [_merge_leftovers(s, window, more, names)]
        elif records is None:
            axis, _session, cols = _collect(s, names, window)
            pieces = [(axis, cols["data"], cols.get(layout.MISSING))]
        else:
            ticks = _ticks(window, s)
            pieces = ((axis, cols["data"], cols.get(layout.MISSING)) for axis, _session, cols in
                      (frames_columns(s, chunk, names, ticks) for chunk in frame_chunks(s, ticks, records)))
        for axis, data, missing in pieces:
            if not len(axis):
                continue
            raw, phys, text, units = decode_payloads(s.schema, data, signals, message, missing)
            yield [Decoded(s.name, message, meta.get("logb.can.bus", ""), meta.get("logb.can.mux", ""),
                           axis, s.schema.axis_exp, raw, phys, text, units, short=_short(missing),
                           reassembled=sum(len(p[1]) for p in tp.get(s.uuid, ())))]


def damaged_mirror(f):
    """Does a damaged or cut file hold its whole bus in `mirror` raw bus streams with a DBC
    attached? Then decoding them loses only what the damage hit, while per-message DATA
    (written as it fills, later than the raw frames) may be missing for whole time ranges."""
    groups = buses(f)
    return (not f.report.clean and bool(groups) and not any(g.exclusive_segments() for g in groups)
            and all(embedded_dbc(f, g.streams[0]) is not None for g in groups))


def _exclusive_leftovers(f, window):
    """{per-message stream uuid: (session, axis, payloads)}: the data frames that the raw
    bus streams of `exclusive` sessions hold and that route (by the per-message streams'
    schema meta, first match as on the device) to an exact per-message stream — the
    frames it could not reconstruct (SPEC §13.4). Frames routed to other streams are in
    those streams already. Empty for files without exclusive routing."""
    out = {}
    for g in buses(f):
        excl = g.exclusive_segments()
        if not excl:
            continue
        routes = message_routes(f, g.streams[0].name)
        if not any(r.exact for r in routes):
            continue
        for s in g.streams:
            frames = {fl.offset for fl in s.frames if fl.segment in excl}
            if not frames:
                continue
            axis, session, cols = _collect(s, ("id", "flags", "dlc", "data"), window, frames)
            data = np.asarray(cols["data"], np.uint8)
            routed = route_rows(routes, frame_keys(cols["id"], cols["flags"]), data, data_frames(cols["flags"]))
            for i, rows in routed.items():
                r = routes[i]
                if not r.exact:
                    continue
                ax = axis[rows]
                if s.schema.axis_exp != r.stream.schema.axis_exp:
                    ax = rescale(ax, s.schema.axis_exp, r.stream.schema.axis_exp)
                payload = pad(gather(data, rows), r.payload_len)[:, :r.payload_len]
                missing = missing_bytes(r.payload_len, cols["dlc"][rows], cols["flags"][rows]).astype(np.uint8)
                out.setdefault(r.stream.uuid, []).append((session[rows], ax, payload, missing))
    return out


def _transport_leftovers(f, window):
    """{per-message stream uuid: [(session, axis, payloads, missing)]}: the complete J1939
    multi-packet messages of the buses that have J1939 per-message streams, routed by those
    streams' schema meta (the raw bus stream holds the TP frames whatever the routing)."""
    out = {}
    for g in buses(f):
        routes = message_routes(f, g.streams[0].name)
        if not any(r.stream.schema.meta_dict().get("logb.can.j1939") == "1" for r in routes):
            continue
        b = group_frames(f, g, window)
        for i, (rows, ticks, payloads, missing) in _j1939_messages(routes, b.t, b.id, b.flags, b.dlc, b.data,
                                                                   b.axis_exp, b.session).items():
            s = routes[i].stream
            ax = rescale(ticks, b.axis_exp, s.schema.axis_exp) if s.schema.axis_exp != b.axis_exp else ticks
            out.setdefault(s.uuid, []).append((b.session[rows], ax, payloads, missing.astype(np.uint8)))
    return out


def _merge_leftovers(stream, window, more, names):
    """A per-message stream's (axis, payloads, missing bytes) with its leftovers merged in,
    in time order within each session."""
    axis, session, cols = _collect(stream, names, window)
    add_s = np.concatenate([m[0] for m in more])
    add_t = np.concatenate([m[1] for m in more])
    order = merge_order(session, axis, add_s, add_t)  # the stream's own records first on equal ticks
    ax = np.concatenate([axis, add_t])
    data = np.concatenate([np.asarray(cols["data"], np.uint8)] + [m[2] for m in more])
    own = cols.get(layout.MISSING, np.zeros(len(axis), np.uint8))
    missing = np.concatenate([np.asarray(own, np.uint8)] + [m[3] for m in more])
    return ax[order], data[order], missing[order]


def _payload_fields(schema):
    """The fields a per-message stream decodes from: `data`, and `missing` when the schema
    has it (streams written before it existed hold whole messages only)."""
    return ["data", layout.MISSING] if any(f.name == layout.MISSING for f in schema.fields) else ["data"]


def _ticks(window, stream):
    return None if window is None else window_ticks(window, stream.schema.axis_exp)



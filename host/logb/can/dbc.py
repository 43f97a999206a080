"""DBC → Logb schemas (docs/SPEC.md §13, "CAN conventions").

`compile_dbc(source)` parses a DBC with cantools (never by hand) and turns every
message into a per-message stream (layout.message_schema): the payload bytes
and one field per signal, at bit 32 + the signal's position in the payload.

- Intel signals keep their start bit; Motorola start bits convert with
  `8*(start//8) + (7 - start%8)` into big-endian Logb numbering (SPEC §6.2).
- Signedness and IEEE floats (32/64) become the field's data type; factor and
  offset become `linear` (Logb's a + b*x is offset + factor*raw); value tables
  become `value_to_text` (on the signal's own field when its scaling is
  identity, else on a companion field `<signal>.text` over the same bits).
- A multiplexed message becomes one stream per multiplexer branch (one value
  for every multiplexer active in it, nested ones included), each holding the
  non-multiplexed signals, the multiplexers and that branch's signals.
- J1939 messages match by PGN: priority, source address and, for PDU1, the
  destination address are masked out.
- Anything that cannot be expressed is listed in `CompiledDbc.problems` by
  name with the reason; nothing is dropped silently.
"""

import hashlib
import importlib
import importlib.util
import os
import re
import sys
import threading
from dataclasses import dataclass, field, replace

import numpy as np

from .. import fields as bits
from ..errors import InvalidSchemaError, NotFoundError
from ..schema import Conversion, Field
from ..tables import ByteOrder, ConversionType, DataType
from ..writer import stream_uuid
from . import layout

MEDIA_TYPE = "application/x-dbc"
EXTENDED = 1 << 31  # in match ids and config keys: the frame has a 29-bit id
STD_BITS, EXT_BITS = 0x7FF, 0x1FFFFFFF
EXACT_MASK = EXTENDED | EXT_BITS  # the id and its format, nothing masked out
J1939_PRIORITY = 0x1C000000  # bits 26..28
KIND_RAW, KIND_MESSAGE, KIND_MUX = 0, 1, 2  # config entry kinds (SPEC §13.4)
RESERVED = ("t", "data", layout.MISSING)  # field names every per-message stream already has
TEXT_SUFFIX = ".text"  # companion value_to_text field of a scaled signal
RENAME_SUFFIX = ".signal"  # a signal named like a reserved field


def motorola_offset(start):
    """DBC Motorola (sawtooth) start bit → Logb big-endian bit offset in the payload."""
    return 8 * (start // 8) + (7 - start % 8)


def is_exact_mask(mask):
    """Does a match mask keep the whole id and its format (SPEC §13.4)?"""
    return (int(mask) & EXACT_MASK) == EXACT_MASK


def can_key(can_id, extended):
    """The 32-bit key a config entry matches: the id, bit 31 set for extended ids."""
    return (int(can_id) & EXT_BITS) | (EXTENDED if extended else 0)


@dataclass(frozen=True)
class MuxCondition:
    """The multiplexer signal `signal` holds `value` (the raw value as the
    signal's type reads it); `bits` is its bit pattern, what a device compares."""

    signal: str
    value: int
    byte_order: int
    bit_offset: int  # in the payload, Logb numbering (record bit offset - 32)
    bit_width: int

    @property
    def bits(self):
        return self.value & ((1 << self.bit_width) - 1)

    def spec(self):
        order = "big" if self.byte_order == ByteOrder.big else "little"
        return f"{order} {self.bit_offset} {self.bit_width} {self.bits}"


@dataclass(frozen=True)
class Mux:
    """A multiplexer branch: every condition must hold."""

    conditions: tuple

    @property
    def label(self):
        return ",".join(f"{c.signal}={c.value}" for c in self.conditions)

    def select_spec(self):
        """The device-side selector (schema meta `logb.can.select`)."""
        return ";".join(c.spec() for c in self.conditions)

    def selects(self, payload):
        payload = bytes(payload)
        for c in self.conditions:
            if (c.bit_offset + c.bit_width + 7) // 8 > len(payload):
                return False
            if bits.get_bits(payload, c.bit_offset, c.bit_width, c.byte_order == ByteOrder.big) != c.bits:
                return False
        return True

    def select_rows(self, payloads):
        """Boolean mask over an (N, L) uint8 payload array."""
        keep = np.ones(len(payloads), bool)
        for c in self.conditions:
            v = bits.extract_uint(payloads, c.bit_offset, c.bit_width, c.byte_order == ByteOrder.big)
            keep &= v == np.uint64(c.bits)
        return keep


def parse_select(spec):
    """`logb.can.select` → [(big, bit_offset, bit_width, bits), ...]."""
    out = []
    for part in filter(None, spec.split(";")):
        order, off, width, value = part.split()
        out.append((order == "big", int(off), int(width), int(value)))
    return out


@dataclass
class MessageStream:
    """One per-message stream: a DBC message, or one multiplexer branch of it."""

    name: str  # stream name: the message name, `Msg[Mux=3]` for a branch
    message: str  # the DBC message name
    frame_id: int
    extended: bool
    match_id: int  # bit 31 set for extended ids
    match_mask: int
    payload_len: int
    schema: object
    mux: object = None  # Mux or None
    j1939: bool = False
    signals: tuple = ()  # DBC signal names in this stream

    @property
    def kind(self):
        return KIND_MUX if self.mux is not None else KIND_MESSAGE

    @property
    def record_size(self):
        return self.schema.record_size

    @property
    def exact(self):
        """Can a writer route frames here exclusively (SPEC §13.4)? A plain message
        matching one whole id and format, of at most 8 bytes."""
        return self.mux is None and is_exact_mask(self.match_mask) and self.payload_len <= layout.CLASSIC_PAYLOAD

    def matches(self, can_id, extended):
        """Does a frame's id select this stream (multiplexer aside)?"""
        return (can_key(can_id, extended) & self.match_mask) == self.match_id


@dataclass
class CompiledDbc:
    entries: list
    problems: list  # (message or message.signal, reason)
    dbc_text: str
    raw_schema: object  # the raw bus stream's schema, `mirror` routing (raw_bus_schema() for others)
    bus: str = "can0"
    fd: bool = False
    name: str = "bus.dbc"  # the ATTACH name
    dbc_bytes: bytes = b""  # the file as given (what the ATTACH carries)
    notes: list = field(default_factory=list)  # (name, note): accepted with a change
    database: object = None  # the cantools Database

    def route(self, can_id, extended, data=None):
        """The stream a frame goes to, or None. Entries are tried in order, the
        first match wins; a multiplexer branch matches only when `data` (the
        payload) selects it, so without data a multiplexed message routes to None."""
        for e in self.entries:
            if e.matches(can_id, extended):
                if e.mux is None:
                    return e
                if data is not None and e.mux.selects(_padded(data, e.payload_len)):
                    return e
        return None

    def raw_bus_schema(self, routing=layout.MIRROR):
        """The raw bus stream's schema for a routing (SPEC §13.4): `raw_schema` is the
        `mirror` one (host writers); the device config carries the `exclusive` one."""
        if routing == layout.routing_of(self.raw_schema):
            return self.raw_schema
        s = self.raw_schema
        uuid = layout.routing_uuid(layout.routing_uuid(s.uuid, layout.routing_of(s)), routing)
        meta = tuple((k, routing) if k == layout.ROUTING_KEY else (k, v) for k, v in s.meta)
        return replace(s, uuid=uuid, meta=meta)

    def by_name(self, name):
        for e in self.entries:
            if e.name == name:
                return e
        raise NotFoundError(f"no DBC entry {name!r}")

    def attachment_bytes(self):
        return self.dbc_bytes or self.dbc_text.encode("utf-8")


def _padded(data, n):
    data = bytes(data)[:n]
    return data + bytes(n - len(data))


# ---------------------------------------------------------------- loading

_BO = re.compile(r"^[ \t]*BO_[ \t]+(\d+)[ \t]+(\w+)[ \t]*:", re.M)
_ID_REF = r"(\b(?:BO_|SG_|VAL_|SG_MUL_VAL_|SIG_VALTYPE_|BO_TX_BU_|SIG_GROUP_)[ \t]+){}\b"


def _read_source(source):
    """(text, bytes or b"", name) of a DBC given as a path, bytes or text."""
    if isinstance(source, (bytes, bytearray)):
        raw, name = bytes(source), "bus.dbc"
    elif isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source):
        with open(source, "rb") as fh:
            raw = fh.read()
        name = os.path.basename(os.fspath(source))
    else:
        return str(source), b"", "bus.dbc"
    for enc in ("utf-8", "cp1252", "latin-1"):
        try:
            return raw.decode(enc), raw, name
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes anything")


def _fix_ids(text, problems, notes):
    """cantools rejects a whole DBC when one message id has more than 11 bits
    without DBC's extended flag (bit 31). Such an id that fits 29 bits is
    compiled as an extended id (noted). An id of more than 29 bits, with or
    without the flag, is no CAN id at all (a tool's pseudo message, such as
    Vector's VECTOR__INDEPENDENT_SIG_MSG, which cantools drops silently): it is
    loaded under a placeholder id, reported and left out. Returns (text, {placeholder id: (name, original id)})."""
    used = {int(m.group(1)) for m in _BO.finditer(text)}
    placeholders = {}
    spare = EXT_BITS
    for m in list(_BO.finditer(text)):
        dbc_id, name = int(m.group(1)), m.group(2)
        if dbc_id <= STD_BITS or (dbc_id & EXTENDED and dbc_id & ~EXTENDED <= EXT_BITS):
            continue  # a standard id, or an extended one (DBC's bit 31)
        if dbc_id <= EXT_BITS:
            new = dbc_id | EXTENDED
            notes.append((name, f"DBC id {dbc_id} (0x{dbc_id:X}) has more than 11 bits but no extended "
                                f"flag; compiled as the extended (29-bit) id 0x{dbc_id:08X}"))
        else:
            while (spare | EXTENDED) in used or spare in used:
                spare -= 1
            new = spare | EXTENDED
            spare -= 1
            placeholders[new & EXT_BITS] = (name, dbc_id)
            problems.append((name, f"DBC id {dbc_id} (0x{dbc_id:X}) is not a CAN id (more than 29 bits, "
                                   f"e.g. a tool's pseudo message); message not compiled"))
        used.add(new)
        text = re.sub(_ID_REF.format(dbc_id), lambda mm: f"{mm.group(1)}{new}", text)
    return text, placeholders


_CANTOOLS_LOCK = threading.Lock()


def cantools_database():
    """The `cantools.database` module, without running cantools/__init__.py until something
    asks for more of the package: that __init__ imports cantools.tester, hence python-can,
    whose can.io imports asammdf, pandas and pyarrow (92 of the 128 MB peak RSS of a raw bus
    decode here, none of it used to parse a DBC). The package stands in sys.modules
    unexecuted; its first missing attribute (tester, __version__, ...) runs its real
    __init__ into it (PEP 562), so `import cantools` elsewhere sees the whole package."""
    with _CANTOOLS_LOCK:
        pkg = sys.modules.get("cantools")
        spec = importlib.util.find_spec("cantools") if pkg is None else None
        if pkg is None and spec is not None:
            pkg = importlib.util.module_from_spec(spec)

            def complete(name):
                del pkg.__getattr__  # the real __init__ may set any name; a missing one then raises
                spec.loader.exec_module(pkg)
                return getattr(pkg, name)

            pkg.__getattr__ = complete
            sys.modules["cantools"] = pkg
        import cantools.database  # not installed: the usual ModuleNotFoundError

        return cantools.database


def load_dbc(source):
    """(cantools Database, text, bytes, name, problems, notes, placeholder ids)."""
    database = cantools_database()
    text, raw, name = _read_source(source)
    problems, notes = [], []
    fixed, placeholders = _fix_ids(text, problems, notes)
    db = database.load_string(fixed, database_format="dbc", strict=False)
    return db, text, raw, name, problems, notes, placeholders


# ---------------------------------------------------------------- compiling

def _signal_fields(msg, sig, payload_len, problems, notes):
    """The field(s) of one signal, or [] with a problem recorded."""
    where = f"{msg.name}.{sig.name}"
    width = int(sig.length)
    big = sig.byte_order == "big_endian"
    off = motorola_offset(sig.start) if big else int(sig.start)
    if width < 1 or width > 64:
        problems.append((where, f"width {width} bits is outside 1..64"))
        return []
    if off + width > 8 * payload_len:
        problems.append((where, f"{'Motorola' if big else 'Intel'} start bit {sig.start}, {width} bits: "
                                f"payload bits {off}..{off + width - 1} lie outside the {payload_len}-byte message"))
        return []
    if sig.is_float:
        if width not in (32, 64):
            problems.append((where, f"IEEE float signal of {width} bits (only 32 and 64 exist)"))
            return []
        dtype = DataType.float
    else:
        dtype = DataType.sint if sig.is_signed else DataType.uint
    scale, offset = sig.scale, sig.offset
    numeric = Conversion() if (scale == 1 and offset == 0) else Conversion.linear(offset, scale)
    text = None
    if sig.choices:
        text = Conversion.value_to_text(sorted((int(k), str(v)) for k, v in sig.choices.items()))
    name = sig.name
    if name in RESERVED:
        notes.append((where, f"signal named like the reserved field {name!r}: its field is {name + RENAME_SUFFIX!r}"))
        name += RENAME_SUFFIX
    common = dict(bit_offset=layout.PAYLOAD_BIT + off, bit_width=width, data_type=dtype,
                  byte_order=ByteOrder.big if big else ByteOrder.little, unit=sig.unit or "",
                  description=(sig.comment or "").strip())
    if text is not None and numeric.is_identity:
        return [Field(name, conversion=text, **common)]
    out = [Field(name, conversion=numeric, **common)]
    if text is not None:
        common["description"] = f"value table of {sig.name}"
        out.append(Field(name + TEXT_SUFFIX, conversion=text, **common))
    return out


def _branches(msg):
    """[(Mux or None, active signals)] of a message: one per multiplexer branch."""
    sigs = list(msg.signals)
    if not any(s.is_multiplexer for s in sigs):
        return [(None, sigs)]
    children = {}
    for s in sigs:
        if s.multiplexer_signal is not None:
            children.setdefault(s.multiplexer_signal, set()).update(s.multiplexer_ids or ())

    def active(assign):
        return [s for s in sigs if s.multiplexer_signal is None
                or (s.multiplexer_signal in assign and assign[s.multiplexer_signal] in (s.multiplexer_ids or ()))]

    out = []

    def expand(assign, order):
        act = active(assign)
        pending = [s for s in act if s.is_multiplexer and s.name not in assign]
        if not pending:
            out.append((order, act))
            return
        m = pending[0]
        values = sorted(children.get(m.name, ()))
        if not values:  # a multiplexer nothing depends on is an ordinary signal
            expand({**assign, m.name: None}, order)
            return
        for v in values:
            expand({**assign, m.name: v}, order + [(m, v)])

    expand({}, [])
    result = []
    for order, act in out:
        conds = []
        for m, v in order:
            big = m.byte_order == "big_endian"
            conds.append(MuxCondition(m.name, int(v), ByteOrder.big if big else ByteOrder.little,
                                      motorola_offset(m.start) if big else int(m.start), int(m.length)))
        result.append((Mux(tuple(conds)), act))
    return result


def _match(msg, frame_id, extended):
    """(match_id, match_mask, j1939)."""
    if extended and (msg.protocol or "").lower() == "j1939":
        mask = EXTENDED | (EXT_BITS & ~J1939_PRIORITY & ~0xFF)  # drop priority and source address
        pf = (frame_id >> 16) & 0xFF
        if pf < 240:  # PDU1: the PS byte is a destination address, not part of the PGN
            mask &= ~0xFF00
        return can_key(frame_id, True) & mask, mask, True
    return can_key(frame_id, extended), EXACT_MASK, False


def compile_dbc(source, bus="can0", device="logb", fd=None, axis_exp=-6):
    """Compile a DBC (path, bytes or text) into Logb stream schemas.

    bus: the bus name (the raw stream's name, and part of every uuid);
    device: the logger's identity (uuids are UUIDv5 over device/bus/DBC digest
    and stream name, so equal for every file of one device, bus and DBC);
    fd: force the raw bus stream's CAN FD layout (default: when a message is
    longer than 8 bytes)."""
    db, text, raw, name, problems, notes, placeholders = load_dbc(source)
    digest = hashlib.sha256(raw or text.encode("utf-8")).hexdigest()[:16]
    identity = f"{device}/{bus}/dbc-{digest}"
    entries = []
    for msg in db.messages:
        frame_id, extended = int(msg.frame_id), bool(msg.is_extended_frame)
        if extended and frame_id in placeholders:
            continue  # reported by _fix_ids
        payload_len = int(msg.length)
        if payload_len > layout.FD_PAYLOAD:
            problems.append((msg.name, f"{payload_len}-byte message is longer than a CAN FD frame (64)"))
            continue
        match_id, mask, j1939 = _match(msg, frame_id, extended)
        fieldsets = {s.name: _signal_fields(msg, s, payload_len, problems, notes) for s in msg.signals}
        for mux, active in _branches(msg):
            sname = msg.name if mux is None else f"{msg.name}[{mux.label}]"
            if mux is not None and any(fieldsets.get(c.signal) == [] for c in mux.conditions):
                problems.append((sname, "its multiplexer signal cannot be expressed; branch not compiled"))
                continue
            sig_fields = [f for s in active for f in fieldsets[s.name]]
            meta = [("logb.can.bus", bus), ("logb.can.message", msg.name),
                    ("logb.can.id", f"0x{frame_id:X}"), ("logb.can.extended", "1" if extended else "0"),
                    ("logb.can.match", f"0x{match_id:08X}/0x{mask:08X}"), ("logb.can.dbc", digest)]
            if j1939:
                meta.append(("logb.can.j1939", "1"))
            if mux is not None:
                meta += [("logb.can.mux", mux.label), (layout.SELECT_KEY, mux.select_spec())]
            schema = layout.message_schema(stream_uuid(identity, sname), sname, payload_len, sig_fields,
                                           axis_exp=axis_exp, meta=meta)
            try:
                schema.validate()
            except InvalidSchemaError as exc:
                problems.append((sname, f"schema is invalid: {exc}"))
                continue
            entries.append(MessageStream(sname, msg.name, frame_id, extended, match_id, mask, payload_len,
                                         schema, mux, j1939, tuple(s.name for s in active if fieldsets[s.name])))
    # Routing is first match in entry order: exact ids before PGN matches; a
    # PGN shared by two J1939 messages falls back to matching the full id
    # (priority aside), so neither is unreachable.
    pgn_users = {}
    for e in entries:
        if e.j1939:
            pgn_users.setdefault(e.match_id, set()).add(e.message)
    for e in entries:
        if e.j1939 and len(pgn_users[e.match_id]) > 1:
            mask = EXACT_MASK & ~J1939_PRIORITY
            notes.append((e.name, f"PGN shared with {sorted(pgn_users[e.match_id] - {e.message})}: "
                                  f"matches its full id (priority aside) instead"))
            e.match_id, e.match_mask = can_key(e.frame_id, True) & mask, mask
            meta = tuple(("logb.can.match", f"0x{e.match_id:08X}/0x{mask:08X}") if k == "logb.can.match"
                         else (k, v) for k, v in e.schema.meta)
            e.schema = replace(e.schema, meta=meta)
    entries.sort(key=lambda e: -bin(e.match_mask).count("1"))  # stable: DBC order within a class
    if fd is None:
        fd = any(e.payload_len > layout.CLASSIC_PAYLOAD for e in entries)
    raw_schema = layout.raw_bus_schema(raw_stream_uuid(bus, device, fd), bus, fd=fd, axis_exp=axis_exp)
    return CompiledDbc(entries, problems, text, raw_schema, bus, bool(fd), name, raw, notes, db)


def raw_stream_uuid(bus="can0", device="logb", fd=False, routing=layout.MIRROR):
    """The raw bus stream's uuid: one per device and bus (and layout and routing), whatever
    the DBC. `exclusive` routing: the `mirror` uuid with its last bit inverted (SPEC §13.1)."""
    return layout.routing_uuid(stream_uuid(f"{device}/{bus}", "raw-fd" if fd else "raw"), routing)


# ---------------------------------------------------------------- signals of a schema

@dataclass(frozen=True)
class SignalField:
    """How one DBC signal sits in a per-message stream's schema."""

    name: str  # the DBC signal name
    field: object  # its Field (record bit offsets)
    numeric: object  # Conversion giving the number cantools returns (identity or linear)
    text: object  # value_to_text Conversion, or None
    unit: str

    @property
    def payload_field(self):
        """The same field with payload-relative bit offsets."""
        return replace(self.field, bit_offset=self.field.bit_offset - layout.PAYLOAD_BIT)


_TEXTUAL = (ConversionType.value_to_text, ConversionType.range_to_text)


def signals_of(schema):
    """The DBC signals of a per-message stream, read from its schema alone."""
    by_name = {f.name: f for f in schema.fields}
    out = []
    for f in schema.fields:
        if f.name in RESERVED or f.name.endswith(TEXT_SUFFIX) or f.variable:
            continue
        name = f.name[: -len(RENAME_SUFFIX)] if f.name.endswith(RENAME_SUFFIX) else f.name
        companion = by_name.get(f.name + TEXT_SUFFIX)
        if f.conversion.type in _TEXTUAL:
            out.append(SignalField(name, f, Conversion(), f.conversion, f.unit))
        else:
            out.append(SignalField(name, f, f.conversion, companion.conversion if companion else None, f.unit))
    return out


def merge_compiled(named):
    """One CompiledDbc from several [(file name, CompiledDbc)] of one bus, and the
    conflicts [(what, reason)]: the first file given wins a message name or an id
    match (mask included) that a later file defines again, which is left out (as a
    device routing first match would never reach it)."""
    (first_name, first), rest = named[0], named[1:]
    entries = list(first.entries)
    owner = {e.name: first_name for e in entries}
    matches = {(e.match_id, e.match_mask, e.mux.label if e.mux else ""): (first_name, e.name) for e in entries}
    conflicts, problems, notes = [], list(first.problems), list(first.notes)
    for name, c in rest:
        problems += c.problems
        notes += c.notes
        for e in c.entries:
            key = (e.match_id, e.match_mask, e.mux.label if e.mux else "")
            if e.name in owner:
                conflicts.append((e.name, f"in {owner[e.name]} and {name}: {owner[e.name]}'s is used"))
            elif key in matches:
                kept_file, kept = matches[key]
                conflicts.append((e.name, f"{name}: id 0x{e.frame_id:X} is {kept} of {kept_file}, which is used"))
            else:
                entries.append(e)
                owner[e.name] = name
                matches[key] = (name, e.name)
    entries.sort(key=lambda e: -bin(e.match_mask).count("1"))  # stable: first file first within a class
    fd = any(c.fd for _, c in named)
    return replace(first, entries=entries, problems=problems, notes=notes, fd=fd), conflicts

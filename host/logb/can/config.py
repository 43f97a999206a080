"""The compact device config ("LBCF", docs/SPEC.md §13.7): what a logger loads
to declare its CAN streams without building anything. All little-endian:

    b"LBCF", u16 version = 1, u16 entry_count, then per entry:
    u32 match_id (bit 31 set = extended id), u32 match_mask,
    u8 kind (0 raw bus, 1 per-message, 2 multiplexer branch), u8 payload_len,
    u16 record_size, u32 schema_len, schema_len bytes = the SCHEMA frame payload.

Entry 0 is the raw bus stream (mask 0), with the schema of `exclusive` routing
(meta `logb.can.routing`, SPEC §13.4): the device default. The device binds
entry i to stream_id i + 1. A data frame matches the first further entry with
(key & match_mask) == match_id, key = id | (extended << 31) (a kind-2 entry also
needs its `logb.can.select` conditions to hold); it goes there alone when that
entry reconstructs it exactly, else to entry 0 (and to the matched entry unless
that one is exact), SPEC §13.4.
"""

import os
import struct
from dataclasses import dataclass

from ..errors import EncodeError, UnreadableInputError
from ..schema import Schema
from . import layout
from .dbc import KIND_MUX, KIND_RAW, parse_select

MAGIC = b"LBCF"
VERSION = 1
HEADER = struct.Struct("<4sHH")
ENTRY = struct.Struct("<IIBBHI")  # match_id, match_mask, kind, payload_len, record_size, schema_len


@dataclass(frozen=True)
class ConfigEntry:
    match_id: int
    match_mask: int
    kind: int
    payload_len: int
    record_size: int
    schema_bytes: bytes

    @property
    def schema(self):
        return Schema.decode(self.schema_bytes)

    @property
    def select(self):
        """Multiplexer conditions of a kind-2 entry: [(big, bit_offset, bit_width, bits)]."""
        if self.kind != KIND_MUX:
            return []
        return parse_select(self.schema.meta_dict().get(layout.SELECT_KEY, ""))

    def matches(self, key):
        return (key & self.match_mask) == self.match_id


def config_entries(compiled, routing=layout.EXCLUSIVE):
    """The entries of a compiled DBC, raw bus stream first: its schema is the one of
    `routing` (the device default, `exclusive`; a device set to mirror switches it)."""
    raw = compiled.raw_bus_schema(routing)
    payload = 64 if compiled.fd else 8
    out = [ConfigEntry(0, 0, KIND_RAW, payload, raw.record_size, raw.encode())]
    for e in compiled.entries:
        out.append(ConfigEntry(e.match_id, e.match_mask, e.kind, e.payload_len, e.record_size, e.schema.encode()))
    return out


def encode_config(entries):
    if len(entries) > 0xFFFF:
        raise EncodeError(f"{len(entries)} entries do not fit a u16 count")
    parts = [HEADER.pack(MAGIC, VERSION, len(entries))]
    for e in entries:
        if e.record_size > 0xFFFF or e.payload_len > 0xFF:
            raise EncodeError(f"entry too large for the config: {e.record_size}-byte records")
        parts.append(ENTRY.pack(e.match_id, e.match_mask, e.kind, e.payload_len, e.record_size,
                                len(e.schema_bytes)))
        parts.append(e.schema_bytes)
    return b"".join(parts)


def write_config(compiled, path_or_file, routing=layout.EXCLUSIVE):
    """Write the LBCF config of a CompiledDbc to a path or a binary file object."""
    data = encode_config(config_entries(compiled, routing))
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, "wb") as fh:
            fh.write(data)
    else:
        path_or_file.write(data)
    return len(data)


def read_config(data):
    """Parse LBCF bytes (or a path) into a list of ConfigEntry; UnreadableInputError if malformed."""
    if isinstance(data, (str, os.PathLike)):
        with open(data, "rb") as fh:
            data = fh.read()
    data = bytes(data)
    if len(data) < HEADER.size:
        raise UnreadableInputError("config shorter than its 8-byte header")
    magic, version, count = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise UnreadableInputError(f"not an LBCF config (magic {magic!r})")
    if version != VERSION:
        raise UnreadableInputError(f"LBCF version {version} is not supported (only {VERSION})")
    pos, out = HEADER.size, []
    for i in range(count):
        if pos + ENTRY.size > len(data):
            raise UnreadableInputError(f"entry {i} runs past the end")
        match_id, mask, kind, payload_len, record_size, n = ENTRY.unpack_from(data, pos)
        pos += ENTRY.size
        if pos + n > len(data):
            raise UnreadableInputError(f"entry {i}'s schema runs past the end")
        out.append(ConfigEntry(match_id, mask, kind, payload_len, record_size, data[pos:pos + n]))
        pos += n
    if pos != len(data):
        raise UnreadableInputError(f"{len(data) - pos} bytes after the last entry")
    return out

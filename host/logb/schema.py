"""Streams' schemas: fields, conversions and axis declarations, with the rules
that make a schema valid (SPEC §5–§7). Encoding and decoding live here because
a schema is also what a SCHEMA frame carries.
"""

import math
from functools import cached_property
from dataclasses import dataclass, field as dc_field

from .binary import Builder, Cursor
from .errors import InvalidSchemaError, MalformedPayloadError
from .tables import (
    FIELD_FLAG_VARIABLE,
    AxisKind,
    AxisMode,
    ByteOrder,
    ConversionType,
    DataType,
)

_NUMERIC = frozenset({DataType.uint, DataType.sint, DataType.float, DataType.bool, DataType.complex})
_TEXTUAL = frozenset({ConversionType.table, ConversionType.table_interp,
                      ConversionType.value_to_text, ConversionType.range_to_text})


@dataclass(frozen=True)
class Conversion:
    """Raw → physical. `coeffs` for linear (a, b) and rational (p1..p6);
    `entries` for the tables: (key, value) pairs, (key, text) pairs or
    (lo, hi, text) triples; `default` for the text conversions."""

    type: int = ConversionType.identity
    coeffs: tuple = ()
    entries: tuple = ()
    default: str = ""

    @property
    def is_identity(self):
        return self.type == ConversionType.identity

    @classmethod
    def linear(cls, offset, factor):
        return cls(ConversionType.linear, (float(offset), float(factor)))

    @classmethod
    def rational(cls, *p):
        return cls(ConversionType.rational, tuple(float(x) for x in p))

    @classmethod
    def table(cls, pairs, interpolate=False):
        kind = ConversionType.table_interp if interpolate else ConversionType.table
        return cls(kind, entries=tuple((float(k), float(v)) for k, v in pairs))

    @classmethod
    def value_to_text(cls, pairs, default=""):
        return cls(ConversionType.value_to_text,
                   entries=tuple((float(k), str(s)) for k, s in pairs), default=default)

    @classmethod
    def range_to_text(cls, triples, default=""):
        return cls(ConversionType.range_to_text,
                   entries=tuple((float(lo), float(hi), str(s)) for lo, hi, s in triples),
                   default=default)

    def encode(self, b):
        b.u8(self.type)
        t = self.type
        if t == ConversionType.linear or t == ConversionType.rational:
            for c in self.coeffs:
                b.f64(c)
        elif t in (ConversionType.table, ConversionType.table_interp):
            b.u32(len(self.entries))
            for k, v in self.entries:
                b.f64(k).f64(v)
        elif t == ConversionType.value_to_text:
            b.u32(len(self.entries))
            for k, s in self.entries:
                b.f64(k).string(s)
            b.string(self.default)
        elif t == ConversionType.range_to_text:
            b.u32(len(self.entries))
            for lo, hi, s in self.entries:
                b.f64(lo).f64(hi).string(s)
            b.string(self.default)

    @classmethod
    def decode(cls, cur):
        t = cur.u8("conversion type")
        if t == ConversionType.identity:
            return cls()
        if t == ConversionType.linear:
            return cls(t, (cur.f64(), cur.f64()))
        if t == ConversionType.rational:
            return cls(t, tuple(cur.f64() for _ in range(6)))
        if t in (ConversionType.table, ConversionType.table_interp):
            n = cur.u32("table size")
            cur.need(16 * n, "table entries")
            return cls(t, entries=tuple((cur.f64(), cur.f64()) for _ in range(n)))
        if t == ConversionType.value_to_text:
            n = cur.u32("table size")
            cur.need(12 * n, "table entries")
            entries = tuple((cur.f64(), cur.string("table text")) for _ in range(n))
            return cls(t, entries=entries, default=cur.string("default text"))
        if t == ConversionType.range_to_text:
            n = cur.u32("table size")
            cur.need(20 * n, "table entries")
            entries = tuple((cur.f64(), cur.f64(), cur.string("table text")) for _ in range(n))
            return cls(t, entries=entries, default=cur.string("default text"))
        raise InvalidSchemaError(f"unknown conversion type {t}")


@dataclass(frozen=True)
class Field:
    name: str
    bit_offset: int
    bit_width: int
    data_type: int
    byte_order: int = ByteOrder.little
    flags: int = 0
    unit: str = ""
    description: str = ""
    conversion: Conversion = dc_field(default_factory=Conversion)

    @property
    def variable(self):
        return bool(self.flags & FIELD_FLAG_VARIABLE)

    def encode(self, b):
        b.string(self.name).u32(self.bit_offset).u32(self.bit_width)
        b.u8(self.data_type).u8(self.byte_order).u8(self.flags)
        b.string(self.unit).string(self.description)
        self.conversion.encode(b)

    @classmethod
    def decode(cls, cur):
        name = cur.string("field name")
        bit_offset = cur.u32("bit_offset")
        bit_width = cur.u32("bit_width")
        data_type = cur.u8("data_type")
        byte_order = cur.u8("byte_order")
        flags = cur.u8("field flags")
        unit = cur.string("field unit")
        desc = cur.string("field description")
        return cls(name, bit_offset, bit_width, data_type, byte_order, flags, unit, desc,
                   Conversion.decode(cur))

    def validate(self, record_bits):
        where = f"field {self.name!r}"
        if self.data_type not in DataType._value2member_map_:
            raise InvalidSchemaError(f"{where}: unknown data_type {self.data_type}")
        if self.byte_order not in ByteOrder._value2member_map_:
            raise InvalidSchemaError(f"{where}: unknown byte_order {self.byte_order}")
        dt, w, off = DataType(self.data_type), self.bit_width, self.bit_offset
        if self.variable:
            if dt not in (DataType.bytes, DataType.string):
                raise InvalidSchemaError(f"{where}: only bytes/string may be variable-length")
            if w != 0:
                raise InvalidSchemaError(f"{where}: a variable-length field has bit_width 0")
        else:
            if dt in (DataType.uint, DataType.sint) and not 1 <= w <= 64:
                raise InvalidSchemaError(f"{where}: integer width {w} outside 1..64")
            if dt == DataType.bool and w != 1:
                raise InvalidSchemaError(f"{where}: bool is exactly 1 bit, not {w}")
            if dt == DataType.float and w not in (16, 32, 64):
                raise InvalidSchemaError(f"{where}: float width {w} is not 16, 32 or 64")
            if dt == DataType.complex and w not in (64, 128):
                raise InvalidSchemaError(f"{where}: complex width {w} is not 64 or 128")
            if dt in (DataType.bytes, DataType.string) and (off % 8 or w % 8):
                raise InvalidSchemaError(f"{where}: fixed bytes/string must be byte-aligned")
            if off + w > record_bits:
                raise InvalidSchemaError(
                    f"{where}: bits {off}..{off + w - 1} lie outside record_bits {record_bits}")
        conv = self.conversion
        if not conv.is_identity:
            if dt not in _NUMERIC:
                raise InvalidSchemaError(f"{where}: a non-identity conversion needs a numeric type")
            if dt == DataType.complex and conv.type in _TEXTUAL:
                raise InvalidSchemaError(f"{where}: table/text conversions are undefined on complex")
        if conv.type == ConversionType.table_interp:
            keys = [k for k, _ in conv.entries]
            if not keys:
                raise InvalidSchemaError(f"{where}: empty table_interp")
            if any(math.isnan(k) for k in keys) or any(b <= a for a, b in zip(keys, keys[1:])):
                raise InvalidSchemaError(f"{where}: table_interp keys must strictly increase")


@dataclass(frozen=True)
class Schema:
    uuid: bytes
    name: str
    record_bits: int
    axis_kind: int
    axis_mode: int
    axis_exp: int = 0
    axis_unit: str = ""
    axis_step: object = 0  # i64 ticks for time axes, f64 otherwise (log: the ratio)
    axis_scale: object = 0  # explicit only
    axis_field: int = 0
    fields: tuple = ()
    meta: tuple = ()  # (key, value) pairs in stored order

    @property
    def is_time(self):
        return self.axis_kind == AxisKind.time

    @property
    def record_size(self):
        return (self.record_bits + 7) // 8

    @cached_property
    def variable_fields(self):
        """The tail's fields, in declaration order (computed once: hot in decoding)."""
        return tuple(f for f in self.fields if f.variable)

    @cached_property
    def _by_name(self):
        # the first field of a name wins; a valid schema has no duplicates (computed once:
        # a lookup per field must not make a wide schema quadratic)
        by_name = {}
        for f in self.fields:
            by_name.setdefault(f.name, f)
        return by_name

    def field_named(self, name):
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(name) from None

    def encode(self):
        b = Builder()
        b.raw(self.uuid).string(self.name).u32(self.record_bits)
        b.u8(self.axis_kind).u8(self.axis_mode).i8(self.axis_exp if self.is_time else 0).u8(0)
        b.string(self.axis_unit)
        if self.is_time:
            b.i64(int(self.axis_step)).i64(int(self.axis_scale))
        else:
            b.f64(float(self.axis_step)).f64(float(self.axis_scale))
        b.u16(self.axis_field).u16(len(self.fields))
        for f in self.fields:
            f.encode(b)
        b.u32(len(self.meta))
        for k, v in self.meta:
            b.string(k).string(v)
        return b.bytes()

    @classmethod
    def decode(cls, payload):
        """Parse a SCHEMA payload. Bytes after the inline meta are a later
        minor version's and are ignored. Raises MalformedPayloadError or
        InvalidSchemaError; call validate() for the format's rules."""
        cur = Cursor(payload)
        uuid = cur.raw(16, "stream_uuid")
        name = cur.string("stream name")
        record_bits = cur.u32("record_bits")
        axis_kind = cur.u8("axis_kind")
        axis_mode = cur.u8("axis_mode")
        axis_exp = cur.i8("axis_exp")
        cur.u8("reserved")
        axis_unit = cur.string("axis unit")
        if axis_kind == AxisKind.time:
            axis_step, axis_scale = cur.i64("axis_step"), cur.i64("axis_scale")
        else:
            axis_step, axis_scale = cur.f64("axis_step"), cur.f64("axis_scale")
        axis_field = cur.u16("axis_field")
        count = cur.u16("field_count")
        fields = tuple(Field.decode(cur) for _ in range(count))
        n_meta = cur.u32("meta_count")
        cur.need(8 * n_meta, "inline meta")
        meta = tuple((cur.string("meta key"), cur.string("meta value")) for _ in range(n_meta))
        return cls(uuid, name, record_bits, axis_kind, axis_mode, axis_exp, axis_unit,
                   axis_step, axis_scale, axis_field, fields, meta)

    def validate(self):
        """Raise InvalidSchemaError for anything §5–§7 forbids."""
        if not isinstance(self.uuid, bytes) or len(self.uuid) != 16:
            raise InvalidSchemaError(f"stream_uuid must be 16 bytes, not {self.uuid!r}")
        if self.axis_kind not in AxisKind._value2member_map_:
            raise InvalidSchemaError(f"unknown axis_kind {self.axis_kind}")
        if self.axis_mode not in AxisMode._value2member_map_:
            raise InvalidSchemaError(f"unknown axis_mode {self.axis_mode}")
        if self.axis_mode == AxisMode.implicit_log:
            if self.is_time:
                raise InvalidSchemaError("implicit_log is undefined for time axes")
            r = self.axis_step
            if not (math.isfinite(r) and r > 0 and r != 1):
                raise InvalidSchemaError(f"log axis ratio {r!r} must be finite, positive, not 1")
        names = set()
        for f in self.fields:
            if f.name in names:
                raise InvalidSchemaError(f"duplicate field name {f.name!r}")
            names.add(f.name)
            f.validate(self.record_bits)
        if self.axis_mode == AxisMode.explicit:
            if self.axis_field >= len(self.fields):
                raise InvalidSchemaError(f"axis_field {self.axis_field} is not a field")
            af = self.fields[self.axis_field]
            allowed = (DataType.uint, DataType.sint) if self.is_time else (
                DataType.uint, DataType.sint, DataType.float)
            if af.variable or af.data_type not in allowed:
                raise InvalidSchemaError(
                    f"axis field {af.name!r} must be a fixed "
                    + ("integer" if self.is_time else "integer or float"))
        return self

    def meta_dict(self):
        return dict(self.meta)


def partial_identity(payload):
    """Best-effort (uuid, name) of a SCHEMA payload that failed to decode."""
    uuid = bytes(payload[:16]) if len(payload) >= 16 else None
    name = None
    try:
        cur = Cursor(payload, 16)
        name = cur.string("stream name")
    except MalformedPayloadError:
        pass
    return uuid, name

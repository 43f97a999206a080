"""Schemas (§5–§7): SCHEMA payload encode/decode, and every validity rule."""

import dataclasses
import math
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import schemas
from logb import (AxisKind, AxisMode, ByteOrder, Conversion, DataType, Field,
                  InvalidSchemaError, MalformedPayloadError, Schema)
from logb.binary import Builder

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
UUID = bytes(range(16))


# ------------------------------------------------------------- round trip
@SETTINGS
@given(schemas())
def test_random_valid_schema_round_trips(schema):
    assert schema.validate() is schema
    payload = schema.encode()
    back = Schema.decode(payload)
    assert back == schema
    assert back.encode() == payload
    back.validate()


@SETTINGS
@given(schemas(max_fields=3), st.binary(min_size=1, max_size=40))
def test_trailing_bytes_after_inline_meta_are_ignored(schema, extra):
    payload = schema.encode()
    assert Schema.decode(payload + extra) == schema


@settings(max_examples=40, deadline=None)
@given(schemas(max_fields=3))
def test_every_short_prefix_is_malformed_not_a_crash(schema):
    payload = schema.encode()
    for cut in range(len(payload)):
        with pytest.raises(MalformedPayloadError):
            Schema.decode(payload[:cut])


def test_round_trip_preserves_non_finite_coefficients_bit_exactly():
    nan = struct.unpack("<d", bytes.fromhex("0100000000f8ff7f"))[0]  # NaN with a payload
    conv = Conversion.rational(nan, math.inf, -math.inf, -0.0, 1.0, 5e-324)
    s = Schema(UUID, "s", 8, AxisKind.index, AxisMode.implicit, fields=(
        Field("x", 0, 8, DataType.uint, conversion=conv),))
    payload = s.encode()
    back = Schema.decode(payload)
    assert back.encode() == payload
    assert struct.pack("<d", back.fields[0].conversion.coeffs[0]) == bytes.fromhex("0100000000f8ff7f")


def test_encoding_layout_is_little_endian_and_as_specified():
    s = Schema(UUID, "ab", 12, AxisKind.time, AxisMode.implicit, axis_exp=-6, axis_unit="s",
               axis_step=250, fields=(Field("v", 0, 12, DataType.sint, ByteOrder.big, 0, "V", "d",
                                            Conversion.linear(1.5, -2.0)),), meta=(("k", "v"),))
    b = Builder()
    b.raw(UUID).string("ab").u32(12).u8(0).u8(0).i8(-6).u8(0).string("s").i64(250).i64(0).u16(0).u16(1)
    b.string("v").u32(0).u32(12).u8(1).u8(1).u8(0).string("V").string("d").u8(1).f64(1.5).f64(-2.0)
    b.u32(1).string("k").string("v")
    assert s.encode() == b.bytes()


def test_non_time_axis_is_f64_and_exp_written_as_zero():
    s = Schema(UUID, "", 0, AxisKind.frequency, AxisMode.implicit_log, axis_exp=-3, axis_step=1.25)
    payload = s.encode()
    # uuid 16 + name 4 + record_bits 4 + kind, mode, exp, reserved
    assert payload[26] == 0  # axis_exp
    assert struct.unpack_from("<d", payload, 32)[0] == 1.25
    assert Schema.decode(payload).axis_exp == 0


# ------------------------------------------------------------- validity rules
def base(**kw):
    fields = (
        Field("t", 0, 32, DataType.uint),
        Field("x", 32, 16, DataType.sint, ByteOrder.big),
        Field("f", 48, 32, DataType.float),
        Field("s", 0, 0, DataType.string, flags=1),
    )
    s = Schema(UUID, "base", 80, AxisKind.time, AxisMode.explicit, axis_exp=-6, axis_scale=1,
               axis_field=0, fields=fields)
    return dataclasses.replace(s, **kw)


def with_field(field, **kw):
    """A non-time implicit schema with one extra field (record_bits 128)."""
    return Schema(UUID, "one", 128, kw.pop("axis_kind", AxisKind.index), AxisMode.implicit,
                  axis_step=1.0, fields=(field,), **kw)


def test_base_is_valid():
    base().validate()


INVALID = {
    "axis_kind 6": lambda: base(axis_kind=6),
    "axis_kind 255": lambda: base(axis_kind=255),
    "axis_mode 3": lambda: base(axis_mode=3),
    "axis_mode 7": lambda: base(axis_mode=7),
    "data_type 7": lambda: with_field(Field("a", 0, 8, 7)),
    "data_type 255": lambda: with_field(Field("a", 0, 8, 255)),
    "byte_order 2": lambda: with_field(Field("a", 0, 8, DataType.uint, 2)),
    "log on time": lambda: base(axis_mode=AxisMode.implicit_log, axis_step=2),
    "explicit field out of range": lambda: base(axis_field=4),
    "explicit field far out of range": lambda: base(axis_field=65535),
    "explicit field variable": lambda: base(axis_field=3),
    "explicit float field on time": lambda: base(axis_field=2),
    "explicit bool field": lambda: dataclasses.replace(
        with_field(Field("b", 0, 1, DataType.bool)), axis_mode=AxisMode.explicit),
    "explicit complex field": lambda: dataclasses.replace(
        with_field(Field("c", 0, 64, DataType.complex)), axis_mode=AxisMode.explicit),
    "explicit bytes field": lambda: dataclasses.replace(
        with_field(Field("c", 0, 64, DataType.bytes)), axis_mode=AxisMode.explicit),
    "explicit with no fields": lambda: Schema(UUID, "", 0, AxisKind.index, AxisMode.explicit),
    "field past record_bits": lambda: base(record_bits=79),
    "field one bit past": lambda: with_field(Field("a", 121, 8, DataType.uint)),
    "fixed bytes past record_bits": lambda: with_field(Field("a", 64, 72, DataType.bytes)),
    "uint width 0": lambda: with_field(Field("a", 0, 0, DataType.uint)),
    "uint width 65": lambda: with_field(Field("a", 0, 65, DataType.uint)),
    "sint width 0": lambda: with_field(Field("a", 0, 0, DataType.sint)),
    "sint width 65": lambda: with_field(Field("a", 0, 65, DataType.sint)),
    "bool width 0": lambda: with_field(Field("a", 0, 0, DataType.bool)),
    "bool width 2": lambda: with_field(Field("a", 0, 2, DataType.bool)),
    "bool width 8": lambda: with_field(Field("a", 0, 8, DataType.bool)),
    "float width 0": lambda: with_field(Field("a", 0, 0, DataType.float)),
    "float width 8": lambda: with_field(Field("a", 0, 8, DataType.float)),
    "float width 24": lambda: with_field(Field("a", 0, 24, DataType.float)),
    "float width 80": lambda: with_field(Field("a", 0, 80, DataType.float)),
    "float width 128": lambda: with_field(Field("a", 0, 128, DataType.float)),
    "complex width 32": lambda: with_field(Field("a", 0, 32, DataType.complex)),
    "complex width 96": lambda: with_field(Field("a", 0, 96, DataType.complex)),
    "complex width 0": lambda: with_field(Field("a", 0, 0, DataType.complex)),
    "bytes at bit 3": lambda: with_field(Field("a", 3, 16, DataType.bytes)),
    "bytes width 12": lambda: with_field(Field("a", 8, 12, DataType.bytes)),
    "string at bit 4": lambda: with_field(Field("a", 4, 8, DataType.string)),
    "string width 7": lambda: with_field(Field("a", 0, 7, DataType.string)),
    "variable uint": lambda: with_field(Field("a", 0, 0, DataType.uint, flags=1)),
    "variable uint with width": lambda: with_field(Field("a", 0, 8, DataType.uint, flags=1)),
    "variable float": lambda: with_field(Field("a", 0, 32, DataType.float, flags=1)),
    "variable bool": lambda: with_field(Field("a", 0, 1, DataType.bool, flags=1)),
    "variable complex": lambda: with_field(Field("a", 0, 64, DataType.complex, flags=1)),
    "variable bytes width 8": lambda: with_field(Field("a", 0, 8, DataType.bytes, flags=1)),
    "variable string width 16": lambda: with_field(Field("a", 0, 16, DataType.string, flags=1)),
    "linear on bytes": lambda: with_field(Field("a", 0, 8, DataType.bytes, conversion=Conversion.linear(0, 1))),
    "rational on string": lambda: with_field(Field("a", 0, 8, DataType.string,
                                                   conversion=Conversion.rational(0, 1, 0, 0, 0, 1))),
    "table on bytes": lambda: with_field(Field("a", 0, 8, DataType.bytes, conversion=Conversion.table([(1, 2)]))),
    "value_to_text on string": lambda: with_field(Field("a", 0, 8, DataType.string,
                                                        conversion=Conversion.value_to_text([(1, "x")]))),
    "linear on variable bytes": lambda: with_field(Field("a", 0, 0, DataType.bytes, flags=1,
                                                         conversion=Conversion.linear(0, 1))),
    "table on complex": lambda: with_field(Field("a", 0, 64, DataType.complex, conversion=Conversion.table([(1, 2)]))),
    "table_interp on complex": lambda: with_field(Field("a", 0, 64, DataType.complex,
                                                        conversion=Conversion.table([(1, 2)], True))),
    "value_to_text on complex": lambda: with_field(Field("a", 0, 128, DataType.complex,
                                                         conversion=Conversion.value_to_text([(1, "x")]))),
    "range_to_text on complex": lambda: with_field(Field("a", 0, 128, DataType.complex,
                                                         conversion=Conversion.range_to_text([(0, 1, "x")]))),
    "duplicate field names": lambda: Schema(UUID, "d", 16, AxisKind.index, AxisMode.implicit, fields=(
        Field("a", 0, 8, DataType.uint), Field("a", 8, 8, DataType.uint))),
    "duplicate variable names": lambda: Schema(UUID, "d", 0, AxisKind.index, AxisMode.implicit, fields=(
        Field("a", 0, 0, DataType.bytes, flags=1), Field("a", 0, 0, DataType.string, flags=1))),
    "table_interp empty": lambda: with_field(Field("a", 0, 8, DataType.uint, conversion=Conversion.table([], True))),
    "table_interp equal keys": lambda: with_field(Field("a", 0, 8, DataType.uint,
                                                        conversion=Conversion.table([(1, 0), (1, 5)], True))),
    "table_interp decreasing": lambda: with_field(Field("a", 0, 8, DataType.uint,
                                                        conversion=Conversion.table([(2, 0), (1, 5)], True))),
    "table_interp NaN key": lambda: with_field(Field("a", 0, 8, DataType.uint,
                                                     conversion=Conversion.table([(0, 0), (math.nan, 5)], True))),
}
for _r in (0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, -0.0):
    INVALID[f"log ratio {_r}"] = (lambda r: lambda: Schema(UUID, "l", 0, AxisKind.frequency,
                                                             AxisMode.implicit_log, axis_step=r))(_r)


@pytest.mark.parametrize("make", INVALID.values(), ids=INVALID.keys())
def test_invalid_schema_rejected_by_validate(make):
    schema = make()
    with pytest.raises(InvalidSchemaError):
        schema.validate()


@pytest.mark.parametrize("make", INVALID.values(), ids=INVALID.keys())
def test_invalid_schema_survives_encoding_and_is_still_rejected(make):
    # The rules are enforced on what a reader decodes, not only on objects.
    schema = make()
    try:
        payload = schema.encode()
    except struct.error:
        pytest.skip("not representable in a SCHEMA payload")
    with pytest.raises(InvalidSchemaError):
        Schema.decode(payload).validate()


def test_unknown_conversion_type_raises_during_decode():
    s = with_field(Field("a", 0, 8, DataType.uint, conversion=Conversion(7)))
    payload = s.encode()
    with pytest.raises(InvalidSchemaError):
        Schema.decode(payload)
    s = with_field(Field("a", 0, 8, DataType.uint, conversion=Conversion(255)))
    with pytest.raises(InvalidSchemaError):
        Schema.decode(s.encode())


VALID = {
    "fixed bytes width 0": lambda: with_field(Field("a", 16, 0, DataType.bytes)),
    "fixed string at record end": lambda: with_field(Field("a", 64, 64, DataType.string)),
    "float16": lambda: with_field(Field("a", 3, 16, DataType.float, ByteOrder.big)),
    "complex128": lambda: with_field(Field("a", 0, 128, DataType.complex)),
    "uint 64 unaligned": lambda: with_field(Field("a", 7, 64, DataType.uint, ByteOrder.big)),
    "unknown field flag bits ignored": lambda: with_field(Field("a", 0, 8, DataType.uint, flags=0xFE)),
    "variable bit_offset ignored": lambda: with_field(Field("a", 9999, 0, DataType.bytes, flags=1)),
    "linear on bool": lambda: with_field(Field("a", 0, 1, DataType.bool, conversion=Conversion.linear(1, 2))),
    "rational on complex": lambda: with_field(Field("a", 0, 64, DataType.complex,
                                                    conversion=Conversion.rational(0, 1, 0, 0, 0, 1))),
    "linear on complex": lambda: with_field(Field("a", 0, 64, DataType.complex, conversion=Conversion.linear(1, 2))),
    "identity on string": lambda: with_field(Field("a", 0, 8, DataType.string)),
    "table_interp single key": lambda: with_field(Field("a", 0, 8, DataType.uint,
                                                        conversion=Conversion.table([(3, 4)], True))),
    "table with duplicate keys": lambda: with_field(Field("a", 0, 8, DataType.uint,
                                                          conversion=Conversion.table([(3, 4), (3, 5)]))),
    "log ratio 0.5": lambda: Schema(UUID, "l", 0, AxisKind.frequency, AxisMode.implicit_log, axis_step=0.5),
    "explicit float on frequency": lambda: dataclasses.replace(
        with_field(Field("f", 0, 64, DataType.float), axis_kind=AxisKind.frequency), axis_mode=AxisMode.explicit),
    "explicit sint on time": lambda: base(axis_field=1),
    "no fields": lambda: Schema(UUID, "", 0, AxisKind.time, AxisMode.implicit, axis_step=1),
    "overlapping fields": lambda: Schema(UUID, "o", 16, AxisKind.index, AxisMode.implicit, fields=(
        Field("a", 0, 16, DataType.uint), Field("b", 4, 4, DataType.uint))),
}


@pytest.mark.parametrize("make", VALID.values(), ids=VALID.keys())
def test_valid_edge_cases_accepted(make):
    schema = make()
    schema.validate()
    Schema.decode(schema.encode()).validate()

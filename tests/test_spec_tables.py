"""docs/SPEC.md and the code cannot drift: every machine-checked table in the
spec is compared with the code's own table, and the spec's conformance vectors
are run against the bit model."""

import pathlib
import re

import numpy as np
import pytest

import handmade as hm
import logb
from logb import codecs, fields, tables
from logb.reader import FRAME_RULES
from logb.frames import FRAME_CLASSES

SPEC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "SPEC.md"


def spec_table(name):
    """Rows (lists of cell strings) of the table after <!-- table:name -->."""
    lines = SPEC.read_text(encoding="utf-8").splitlines()
    marker = f"<!-- table:{name} -->"
    assert lines.count(marker) == 1, f"SPEC.md must mark exactly one table {name!r}"
    i = lines.index(marker) + 1
    while not lines[i].strip():
        i += 1
    rows = []
    for line in lines[i + 2 :]:  # skip the header and the |---| rule
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    assert rows, f"table {name!r} is empty"
    return rows


def _id(cell):
    return int(cell, 0)


def _name(cell):
    m = re.fullmatch(r"`([^`]+)`", cell)
    assert m, f"name cell {cell!r} must be one backticked name"
    return m.group(1)


ENUMS = {
    "frame_types": tables.FrameType,
    "codecs": tables.Codec,
    "filters": tables.Filter,
    "data_types": tables.DataType,
    "conversions": tables.ConversionType,
    "axis_kinds": tables.AxisKind,
    "axis_modes": tables.AxisMode,
    "byte_orders": tables.ByteOrder,
}


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_enum_table_matches_code(name):
    spec = {_id(r[0]): _name(r[1]) for r in spec_table(name)}
    code = {int(m): m.name for m in ENUMS[name]}
    assert spec == code


def test_frame_scopes_match_code():
    spec = {_id(r[0]): r[2] for r in spec_table("frame_types")}
    assert spec == {int(t): scope for t, scope in tables.FRAME_SCOPE.items()}


def test_reader_dispatches_every_frame_type():
    """One table says how the reader takes each frame type; a type it lacks
    would be skipped as unknown. SIGN is the one reserved type: no payload
    class, not read."""
    assert set(FRAME_RULES) == set(tables.FrameType)
    assert set(FRAME_CLASSES) == set(tables.FrameType) - {tables.FrameType.SIGN}
    assert all(cls.TYPE == t for t, cls in FRAME_CLASSES.items())
    assert [t for t, rule in FRAME_RULES.items() if rule.decode is None] == [tables.FrameType.SIGN]


def test_sign_is_reported_by_name_and_skipped():
    uuid = b"\x05" * 16
    body = hm.schema(uuid, "v", 8, [hm.field("v", 0, 8, 0)], mode=0)
    sign = hm.frame(tables.FrameType.SIGN, bytes(range(32)), sid=3)
    data = hm.header() + sign + hm.sync(0) + hm.frame(0x10, body, sid=1) + sign + hm.data(1, b"\x07", 1)
    f = logb.LogbFile(data)
    signs = [n for n in f.report.notes if n.offset in (16, data.index(sign, 17))]
    assert [(n.kind, n.message) for n in signs] == [
        ("skipped-frame", "SIGN frame (reserved, undefined in v0.1) skipped")] * 2
    assert f.report.clean and len(f.report.notes) == 2 and not f.unknown_frames
    assert f.stream("v").columns().raw["v"].tolist() == [7]


def test_meta_keys_match_code():
    assert tuple(_name(r[0]) for r in spec_table("meta_keys")) == tables.META_KEYS


def _vectors():
    for row in spec_table("conformance_vectors"):
        data = bytes.fromhex(row[0].strip("`"))
        big = row[1].strip("`") == "big"
        sint = row[5].strip("`")
        yield data, big, int(row[2]), int(row[3]), int(row[4].strip("`"), 16), int(sint) if sint else None


VECTORS = list(_vectors())


def test_spec_has_all_fifteen_vectors():
    assert len(VECTORS) == 15


@pytest.mark.parametrize("data,big,offset,width,raw,sint", VECTORS)
def test_spec_conformance_vector(data, big, offset, width, raw, sint):
    assert fields.get_bits(data, offset, width, big) == raw
    records = np.frombuffer(data, np.uint8).reshape(1, -1)
    assert int(fields.extract_uint(records, offset, width, big)[0]) == raw
    if sint is not None:
        assert fields.sign_extend(raw, width) == sint


def test_every_codec_in_the_table_has_an_implementation():
    assert set(codecs.CODECS) == set(tables.Codec)
    for codec in tables.Codec:  # and each one round-trips through its own pair
        data = bytes(range(256)) * 4
        assert codecs.decompress(codecs.compress(data, codec), codec, len(data)) == data

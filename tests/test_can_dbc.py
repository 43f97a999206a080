"""DBC → Logb schemas, proven against cantools (docs/SPEC.md §13).

TestDBCMotorola is the issue's exhaustive case: every Motorola signal of 1..32
bits that fits an 8-byte frame (1,552 of them) × 300 payloads = 465,600
decodes, signed and unsigned, plus every width up to 64 and the Intel
equivalents, each compared with cantools' own decode of the same DBC text.
Logb's side is vectorised: one fields.extract over all 300 payloads per signal.
"""

import io
import math
import pathlib
import struct

import numpy as np
import pytest

cantools = pytest.importorskip("cantools")

import logb  # noqa: E402
from logb import ByteOrder, ConversionType, DataType  # noqa: E402
from logb.can import layout  # noqa: E402
from logb.errors import UnreadableInputError  # noqa: E402
from logb.can.config import (  # noqa: E402
    ENTRY, HEADER, MAGIC, config_entries, encode_config, read_config, write_config)
from logb.can.dbc import (  # noqa: E402
    EXACT_MASK, KIND_MESSAGE, KIND_MUX, KIND_RAW, compile_dbc, motorola_offset, raw_stream_uuid, signals_of)
from logb.can.decode import decode_payloads, frame_keys, route_rows  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "dbc"
N_PAYLOADS = 300


def payloads(n=N_PAYLOADS, width=8, seed=4):
    """Random bytes plus the patterns that catch bit-order mistakes."""
    rng = np.random.default_rng(seed)
    fixed = [bytes(width), b"\xff" * width, b"\xaa" * width, b"\x55" * width,
             bytes(range(1, width + 1)), bytes(range(0xF0, 0xF0 + width))]
    fixed += [bytes(1 << (b % 8) if i == b // 8 else 0 for i in range(width)) for b in range(8 * width)]
    fixed = fixed[:n // 2]
    rest = rng.integers(0, 256, (n - len(fixed), width), np.uint8)
    return np.vstack([np.frombuffer(b"".join(fixed), np.uint8).reshape(-1, width), rest])


def dbc_text(messages):
    """messages: [(frame_id, name, length, [signal line, ...])] → DBC text."""
    out = ['VERSION ""', "", "NS_ :", "", "BS_:", "", "BU_: ECU", ""]
    for frame_id, name, length, sigs in messages:
        out.append(f"BO_ {frame_id} {name}: {length} ECU")
        out += [" " + s for s in sigs]
        out.append("")
    return "\n".join(out) + "\n"


def sg(name, start, width, motorola, signed, scale=1, offset=0, unit=""):
    return (f'SG_ {name} : {start}|{width}@{0 if motorola else 1}{"-" if signed else "+"} '
            f'({scale:g},{offset:g}) [0|0] "{unit}" ECU')


def every_signal(max_width=64):
    """Every (order, signedness, width, position) that fits 8 bytes, packed
    without overlap: one message per (order, sign, width, position mod width).
    Returns [((motorola, signed, width), message tuple)]."""
    out = []
    k = 0
    for motorola in (True, False):
        for signed in (False, True):
            for w in range(1, max_width + 1):
                for r in range(min(w, 65 - w)):
                    sigs = []
                    for off in range(r, 65 - w, w):  # Logb bit offset in the payload
                        start = motorola_offset(off) if motorola else off
                        sigs.append(sg(f"S{off}", start, w, motorola, signed))
                    k += 1
                    name = f"{'M' if motorola else 'I'}{'s' if signed else 'u'}{w}_{r}"
                    out.append(((motorola, signed, w), (0x80000000 | k, name, 8, sigs)))
    return out


def compare(text, data, signals_checked):
    """Decode `data` with Logb (vectorised) and cantools (per payload) for
    every message of `text`; return the number of decodes compared."""
    compiled = compile_dbc(text)
    assert not compiled.problems
    db = compiled.database
    n = 0
    for e in compiled.entries:
        msg = db.get_message_by_name(e.message)
        raw, phys, _text, _units = decode_payloads(e.schema, data)
        ref = [msg.decode(bytes(p), decode_choices=False, scaling=False) for p in data]
        for name, col in raw.items():
            want = [r[name] for r in ref]
            got = col.tolist()
            if got != want:
                bad = next(i for i in range(len(want)) if got[i] != want[i])
                pytest.fail(f"{e.message}.{name}: payload {bytes(data[bad]).hex()}: "
                            f"Logb {got[bad]} != cantools {want[bad]}")
            n += len(want)
            signals_checked.add((e.message, name))
    return n


class TestDBCMotorola:
    def test_motorola_up_to_32_bits_465600(self):
        """The issue's count: 1,552 Motorola signals × 300 payloads, each signedness."""
        chosen = [m for (mot, signed, w), m in every_signal() if mot and w <= 32]
        assert sum(len(m[3]) for m in chosen) == 2 * 1552
        n = compare(dbc_text(chosen), payloads(), set())
        assert n == 2 * 1552 * N_PAYLOADS  # 465,600 unsigned + 465,600 signed

    def test_every_width_to_64_both_orders(self):
        everything = every_signal()
        assert sum(len(m[3]) for _, m in everything) == 2 * 2 * 2080
        chosen = [m for (mot, signed, w), m in everything if not mot or w > 32]
        n = compare(dbc_text(chosen), payloads(seed=9), set())
        assert n == (2 * 2080 + 2 * 528) * N_PAYLOADS

    def test_draft_formula(self):
        # the draft's formula, and that it is its own inverse
        assert [motorola_offset(s) for s in (7, 0, 15, 8, 63, 56)] == [0, 7, 8, 15, 56, 63]
        assert all(motorola_offset(motorola_offset(s)) == s for s in range(64))
        c = compile_dbc(dbc_text([(0x100, "M", 8, [sg("A", 3, 12, True, False), sg("B", 3, 12, False, True)])]))
        a, b = (c.entries[0].schema.field_named(x) for x in "AB")
        assert (a.bit_offset, a.bit_width, a.byte_order, a.data_type) == (32 + 4, 12, ByteOrder.big, DataType.uint)
        assert (b.bit_offset, b.bit_width, b.byte_order, b.data_type) == (32 + 3, 12, ByteOrder.little, DataType.sint)


# ---------------------------------------------------------------- conversions


def test_scaling_floats_and_value_tables_match_cantools():
    sigs = [
        sg("Speed", 7, 16, True, False, 0.01, 0, "km/h"),
        sg("Temp", 16, 8, False, True, 0.5, -40, "degC"),
        sg("Gear", 24, 4, False, False),
        sg("Mode", 31, 3, True, False, 2, 1),
        sg("F32", 32, 32, False, True),
    ]
    text = dbc_text([(0x123, "Msg", 8, sigs), (0x124, "Dbl", 8, [sg("F64", 7, 64, True, True, 0.5, 3)])])
    text += ('VAL_ 291 Gear 0 "P" 1 "R" 2 "N" 3 "D" ;\nVAL_ 291 Mode 0 "off" 3 "on" ;\n'
             'CM_ SG_ 291 Speed "vehicle speed";\nSIG_VALTYPE_ 291 F32 : 1;\nSIG_VALTYPE_ 292 F64 : 2;\n')
    c = compile_dbc(text)
    assert not c.problems
    s = c.by_name("Msg").schema
    speed, temp, gear, mode, f32 = (s.field_named(n) for n in ("Speed", "Temp", "Gear", "Mode", "F32"))
    assert speed.unit == "km/h" and speed.description == "vehicle speed"
    assert speed.conversion.type == ConversionType.linear and speed.conversion.coeffs == (0.0, 0.01)
    assert temp.conversion.coeffs == (-40.0, 0.5) and temp.data_type == DataType.sint
    assert gear.conversion.type == ConversionType.value_to_text
    assert mode.conversion.type == ConversionType.linear  # scaled: the table goes to a companion
    assert s.field_named("Mode.text").conversion.type == ConversionType.value_to_text
    assert f32.data_type == DataType.float and f32.bit_width == 32
    assert c.by_name("Dbl").schema.field_named("F64").data_type == DataType.float
    rng = np.random.default_rng(1)
    data = rng.integers(0, 256, (2000, 8), np.uint8)
    data[::7, 4:8] = np.frombuffer(struct.pack("<f", float("nan")), np.uint8)
    for e in c.entries:
        msg = c.database.get_message_by_name(e.message)
        raw, phys, text_cols, _ = decode_payloads(e.schema, data)
        for i, p in enumerate(data):
            want = msg.decode(bytes(p), decode_choices=False)
            labels = msg.decode(bytes(p))
            for name, v in want.items():
                got = phys[name][i]
                if isinstance(v, float) and math.isnan(v):
                    assert math.isnan(got)
                else:
                    assert got == v, (name, bytes(p).hex(), got, v)
                if name in text_cols:
                    lab = text_cols[name][i]
                    ref = labels[name]
                    assert (lab is not None) == (not isinstance(ref, (int, float)))
                    if lab is not None:
                        assert lab == str(ref)


def test_not_expressible_is_reported_by_name():
    text = dbc_text([
        (0x10, "Short", 2, [sg("Fits", 0, 16, False, False), sg("Beyond", 8, 16, False, False),
                            sg("MotBeyond", 15, 16, True, False)]),
        (0x11, "Named", 8, [sg("t", 0, 8, False, False), sg("data", 8, 8, False, False)]),
        (0x12, "Big", 70, [sg("X", 0, 8, False, False)]),
    ])
    c = compile_dbc(text)
    names = dict(c.problems)
    assert "Short.Beyond" in names and "Short.MotBeyond" in names and "Big" in names
    assert c.by_name("Short").signals == ("Fits",)
    s = c.by_name("Named").schema
    assert [f.name for f in s.fields][:5] == ["t", "data", "missing", "t.signal", "data.signal"]
    assert [g.name for g in signals_of(s)] == ["t", "data"]
    assert any(n == "Named.t" for n, _ in c.notes)


def test_ids_cantools_refuses_are_not_silently_lost():
    c = compile_dbc(DATA / "fca_giorgio.dbc")
    e = c.by_name("CAM_UNKNOWN_6")
    assert e.extended and e.frame_id == 0x1E36001E and dict(c.notes)["CAM_UNKNOWN_6"]
    t = compile_dbc(DATA / "opendbc-toyota_2017_ref_pt.dbc")
    assert len(t.problems) == 32 and all("not a CAN id" in r for _, r in t.problems)
    assert {n for n, _ in t.problems}.isdisjoint(e.message for e in t.entries)


# ---------------------------------------------------------------- multiplexing and J1939


def test_multiplexed_branches_match_cantools():
    c = compile_dbc(DATA / "cantools-multiplex_2.dbc")
    names = [e.name for e in c.entries]
    assert "Extended[S0=0,S1=2,S6=1]" in names and "ExtendedTypes[S11=3,S0=0]" in names
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, (4000, 8), np.uint8)
    data[:, 0] &= rng.choice([0x00, 0x01, 0x03, 0x05, 0x0F, 0x31], 4000).astype(np.uint8)
    data[:, 4] = rng.integers(0, 3, 4000)
    compared = 0
    for msg in c.database.messages:
        keys = frame_keys(np.full(len(data), msg.frame_id), np.full(len(data), layout.FLAG_EXTENDED))
        routed = route_rows(c.entries, keys, data)
        owner = np.full(len(data), -1)
        for i, rows in routed.items():
            owner[rows] = i
        for i, p in enumerate(data):
            try:
                want = msg.decode(bytes(p), decode_choices=False, scaling=False)
            except cantools.database.DecodeError:
                assert owner[i] == -1
                continue
            e = c.entries[owner[i]]
            assert e.message == msg.name
            raw, *_ = decode_payloads(e.schema, data[i:i + 1])
            got = {k: v[0].item() for k, v in raw.items()}
            for k in set(want) | set(got):  # floats: bit patterns agree, compare as such
                a, b = want.get(k), got.get(k)
                assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), (e.name, k, a, b)
            compared += 1
    assert compared > 1000


def test_j1939_matches_by_pgn():
    c = compile_dbc(DATA / "cantools-j1939.dbc")
    m1 = next(e for e in c.entries if e.message == "Message1")  # PDU1 (PF 0x34): DA masked too
    m2 = next(e for e in c.entries if e.message == "Message2")  # PDU2 (PF 0xF0)
    assert m1.j1939 and m1.match_mask == 0x83FF0000 and m2.match_mask == 0x83FFFF00
    assert m1.matches(0x15340201, True) and m1.matches(0x09347F55, True)  # other priority, DA, SA
    assert not m1.matches(0x15340201, False) and not m1.matches(0x15350201, True)
    assert m2.matches(0x0DF010FE, True) and not m2.matches(0x15F01102, True)
    assert c.route(0x19F01033, True) is m2 and c.route(0x123, False) is None


def test_shared_pgn_falls_back_to_full_id():
    text = dbc_text([(0x98FEF100, "A", 8, [sg("X", 0, 8, False, False)]),
                     (0x98FEF117, "B", 8, [sg("Y", 0, 8, False, False)])])
    text += ('BA_DEF_ BO_ "VFrameFormat" ENUM "StandardCAN","ExtendedCAN","reserved","J1939PG";\n'
             'BA_DEF_DEF_ "VFrameFormat" "J1939PG";\n')
    c = compile_dbc(text)
    a, b = c.by_name("A"), c.by_name("B")
    assert a.j1939 and a.match_mask == EXACT_MASK & ~0x1C000000
    assert c.route(0x0CFEF100, True) is a and c.route(0x18FEF117, True) is b and c.route(0x18FEF118, True) is None


# ---------------------------------------------------------------- the device config


def test_lbcf_layout_is_exactly_as_specified(tmp_path):
    c = compile_dbc(DATA / "cantools-multiplex_2.dbc")
    path = tmp_path / "m.lbcf"
    size = write_config(c, path)
    data = path.read_bytes()
    assert size == len(data) and data[:4] == MAGIC == b"LBCF"
    assert struct.unpack_from("<HH", data, 4) == (1, 1 + len(c.entries))
    # walk it with nothing but struct, as the firmware does
    pos, seen = 8, []
    for _ in range(1 + len(c.entries)):
        match_id, mask, kind, plen, rsize, slen = struct.unpack_from("<IIBBHI", data, pos)
        pos += 16
        seen.append((match_id, mask, kind, plen, rsize, data[pos:pos + slen]))
        pos += slen
    assert pos == len(data)
    # the device config's raw bus stream declares exclusive routing (SPEC §13.4, §13.7):
    # the host's (mirror) schema with the routing meta and the exclusive uuid
    raw = c.raw_bus_schema("exclusive")
    assert seen[0][:5] == (0, 0, KIND_RAW, 8, 18) and seen[0][5] == raw.encode()
    assert raw.meta_dict()["logb.can.routing"] == "exclusive"
    assert c.raw_schema.meta_dict()["logb.can.routing"] == "mirror"
    assert raw.uuid == raw_stream_uuid("can0", "logb", routing="exclusive") != c.raw_schema.uuid
    assert raw.uuid[:15] == c.raw_schema.uuid[:15] and raw.uuid[15] ^ c.raw_schema.uuid[15] == 1
    for (match_id, mask, kind, plen, rsize, sb), e in zip(seen[1:], c.entries):
        assert (match_id, mask, plen, rsize, sb) == (e.match_id, e.match_mask, 8, 13, e.schema.encode())
        assert kind == (KIND_MUX if e.mux else KIND_MESSAGE)
    assert HEADER.size == 8 and ENTRY.size == 16
    entries = read_config(data)
    assert [x.schema_bytes for x in entries] == [s[5] for s in seen]
    assert entries[1].select == [(False, 0, 4, 1)]
    buf = io.BytesIO()
    write_config(c, buf)
    assert buf.getvalue() == data
    with pytest.raises(UnreadableInputError, match="runs past the end"):
        read_config(data[:-1])
    with pytest.raises(UnreadableInputError, match="not an LBCF config"):
        read_config(b"LBCG" + data[4:])


def test_lbcf_fd_raw_entry_and_schemas_are_valid():
    text = dbc_text([(0x80000123, "Fd", 64, [sg("A", 500, 8, False, False)]), (0x10, "C", 8, [])])
    c = compile_dbc(text)
    assert c.fd and c.raw_schema.record_size == 10 + 64
    entries = config_entries(c)
    assert entries[0].payload_len == 64 and entries[0].record_size == 74
    assert entries[1].match_id == 0x80000123 and entries[1].match_mask == EXACT_MASK
    for x in read_config(encode_config(entries)):
        x.schema.validate()
    assert layout.raw_bus_schema(c.raw_schema.uuid, "can0", fd=True) == c.raw_schema


def test_uuids_are_stable_and_distinct():
    a = compile_dbc(DATA / "cantools-abs.dbc", bus="can1", device="logger-7")
    b = compile_dbc(DATA / "cantools-abs.dbc", bus="can1", device="logger-7")
    other = compile_dbc(DATA / "cantools-abs.dbc", bus="can2", device="logger-7")
    assert [e.schema.encode() for e in a.entries] == [e.schema.encode() for e in b.entries]
    assert len({e.schema.uuid for e in a.entries}) == len(a.entries)
    assert not {e.schema.uuid for e in a.entries} & {e.schema.uuid for e in other.entries}
    assert a.raw_schema.uuid == logb.stream_uuid("logger-7/can1", "raw")


# ---------------------------------------------------------------- SPEC §13 tables


def _spec_table(name):
    lines = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "SPEC.md").read_text("utf-8").splitlines()
    i = lines.index(f"<!-- table:{name} -->") + 1
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return {int(r[0]): r[1].strip("`") for r in rows}


def test_spec_can_tables_match_the_code():
    flags = {i: n for i, n in enumerate(layout.FLAG_NAMES)}
    assert _spec_table("can_flags") == flags
    assert all(getattr(layout, f"FLAG_{n.upper()}" if n != "tx" else "FLAG_TX") == 1 << i for i, n in flags.items())
    assert _spec_table("can_config_kinds") == {KIND_RAW: "raw", KIND_MESSAGE: "message", KIND_MUX: "branch"}


def test_pseudo_messages_are_reported_not_dropped():
    text = dbc_text([(0xC0000000, "VECTOR__INDEPENDENT_SIG_MSG", 0, [sg("Orphan", 0, 8, False, False)]),
                     (0x100, "Real", 8, [sg("A", 0, 8, False, False)])])
    c = compile_dbc(text)
    assert [e.name for e in c.entries] == ["Real"]
    assert [n for n, _ in c.problems] == ["VECTOR__INDEPENDENT_SIG_MSG"]

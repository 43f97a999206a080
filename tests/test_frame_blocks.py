"""Like DATA frames taken as blocks at open (reader.DataBlock): a stream, its
frames, the INDEX check and `logb verify` must read exactly as they do frame
by frame, while no object is made per frame of a block until one is asked for."""

import dataclasses
import io
import struct

import numpy as np
import pytest
import zstandard

import handmade as hm
import logb
from logb import AxisKind, AxisMode, DataType, Field, Schema, reader
from logb.crc import crc32c
from logb.frames import Index, Meta
from logb.seal import entry_offset, entry_problem
from logb.tables import Codec
from logb.verify import Checker, verify

T_SCHEMA = Schema(uuid=b"\x01" * 16, name="x", record_bits=32, axis_kind=AxisKind.time,
                  axis_mode=AxisMode.explicit, axis_exp=-6, axis_scale=1, axis_field=0,
                  fields=(Field("t", 0, 16, DataType.uint), Field("v", 16, 16, DataType.sint)))
I_SCHEMA = dataclasses.replace(T_SCHEMA, uuid=b"\x02" * 16, name="y", axis_mode=AxisMode.implicit, axis_step=10)


def _file(codecs=("none",), frames=40, seg=1 << 20, second=True):
    """A sealed file: stream x (explicit axis) of like frames but a shorter one and a run change
    now and then, `codecs` in turn; and, when `second`, a stream y (implicit axis) in between."""
    bio = io.BytesIO()
    w = logb.Writer(bio, segment_bytes=seg)
    xs = [w.add_stream(dataclasses.replace(T_SCHEMA, uuid=bytes([1, k]) * 8, name=f"x{k}"), codec=Codec[c],
                       transpose=False) for k, c in enumerate(codecs)]
    y = w.add_stream(I_SCHEMA, codec=Codec.none, transpose=False) if second else None
    for k in range(frames):
        n = 7 if k % 13 == 5 else 10
        for sw in xs:
            sw.write_batch({"t": np.arange(n) * 3, "v": np.arange(n) - k}, axis_base=k * 100,
                           run_id=1 if 20 <= k < 24 else 0)
        if y is not None and k % 9 == 4:
            y.write_batch({"t": np.zeros(5), "v": np.arange(5)}, axis_base=k * 1000)
    w.close()
    return bio.getvalue()


def _frame_by_frame(monkeypatch):
    """No row of a run is like the one before it: every frame through the per-frame path."""
    monkeypatch.setattr(reader, "_like_after", lambda table, heads: (np.arange(len(table)), [0] * len(table)))


def _read(data):
    with logb.LogbFile(data) as f:
        blocks = sum(len(s._blocks) for s in f.streams.values())
        streams = sorted((s.name, s.records, s.rejected, [(fl.offset, fl.payload_len, fl.header, fl.segment)
                                                          for fl in s.frames]) for s in f.streams.values())
        return blocks, streams, [n.as_json() for n in f.report.notes], dict(f.index_valid), dict(f._index_axes)


@pytest.mark.parametrize("codecs", [("none",), ("zstd",), ("none", "zstd")], ids="+".join)
@pytest.mark.parametrize("seg", [1 << 20, 700], ids=["one-segment", "many-segments"])
def test_blocks_read_as_frame_by_frame(monkeypatch, codecs, seg):
    data = _file(codecs, seg=seg)
    blocks, *as_blocks = _read(data)
    _frame_by_frame(monkeypatch)
    none, *alone = _read(data)
    assert as_blocks == alone
    # compressed like frames form blocks too (their lengths may differ); two streams frame by frame do not
    assert none == 0 and (blocks > 0) == (len(codecs) == 1)


def test_a_stream_counts_and_lists_its_blocks_without_making_them_frames():
    with logb.LogbFile(_file(second=False)) as f:
        s = f.stream("x0")
        assert s._blocks and len(s._list) < 10  # nearly every frame is in a block
        records = s.records
        assert s._blocks  # counted without making FrameLocs
        ends = s._last_end()
        frames = s.frames
        assert not s._blocks and records == sum(fl.header.record_count for fl in frames) == 40 * 10 - 3 * 3
        assert ends == frames[-1].stored_slice[1]
        assert [fl.offset for fl in frames] == sorted(fl.offset for fl in frames)


def test_a_frame_dropped_while_blocks_wait_keeps_the_order():
    with logb.LogbFile(_file(second=False)) as f:
        s = f.stream("x0")
        pending = sum(len(b) for _p, b in s._blocks)
        victim = s._list[len(s._list) // 2]
        s._drop(victim, "test")
        assert s.records == 40 * 10 - 3 * 3 - victim.header.record_count
        assert sum(len(b) for _p, b in s._blocks) == pending  # compacted, the blocks still waiting
        offsets = [fl.offset for fl in s.frames]
        assert victim.offset not in offsets and offsets == sorted(offsets) and len(offsets) == 39


# ---------------------------------------------------------------- the INDEX check
def _reference_problem(index_offset, index, session_start, streams, data_frames):
    """The INDEX check entry by entry (SPEC §9.1), as the scan made it before it was vectorised."""
    covered = {}
    for uuid, entries in index.streams:
        stream = streams.get(uuid)
        if stream is None or stream.schema is None:
            continue
        last = -1
        for e in entries:
            target = entry_offset(index_offset, e)
            if not session_start <= target < index_offset or target <= last:
                return "an entry points outside its session or out of file order"
            last = target
            found = data_frames.get(target)
            problem = "no matching DATA frame" if found is None or found[0] is not stream else \
                entry_problem(e, found[1], stream.schema)
            if problem:
                return f"{problem} at offset {target}"
            covered[target] = e.first_axis_raw
    for target, (stream, _header) in sorted(data_frames.items(), key=lambda item: item[0]):
        if stream is not None and stream.schema is not None and target not in covered:
            return f"the DATA frame at offset {target} is missing"
    return None


def _check(data):
    """The scan's verdict on the file's one INDEX, and the reference's."""
    with logb.LogbFile(data) as f:
        (off, idx, _seg), = f.indexes
        got = [n.message for n in f.report.notes if n.kind == "corrupt-index"]
        frames = {fl.offset: (s, fl.header) for s, fl in f.data_frames()}
        want = _reference_problem(off, idx, f.sessions[0].first_offset, f.streams, frames)
    return got, want


def _with_index(data, change):
    """`data` with its INDEX rebuilt from change(list of (uuid, [IndexEntry])), END re-pointed."""
    with logb.LogbFile(data) as f:
        (off, idx, _seg), = f.indexes
        start = f.sessions[0].first_offset
    (plen,) = struct.unpack_from("<I", data, off)
    streams = [(uuid, list(entries)) for uuid, entries in idx.streams]
    change(streams)
    new = Index(tuple((uuid, tuple(entries)) for uuid, entries in streams)).frame()
    tail = data[off + 12 + plen :]  # the END frame: 8 header bytes, index_back_offset, session_bytes, CRC
    end_payload = struct.pack("<QQ", len(new), off + len(new) - start)
    end = tail[:8] + end_payload
    end += struct.pack("<I", crc32c(end))
    return data[:off] + new + end


def _edit(stream, entry, **fields):
    def change(streams):
        entries = streams[stream][1]
        entries[entry] = dataclasses.replace(entries[entry], **fields)
    return change


CASES = {
    "as written": lambda streams: None,
    "record_count": _edit(0, 3, record_count=99),
    "run_id": _edit(0, 30, run_id=7),
    "first_axis, explicit": _edit(0, 4, first_axis_raw=struct.pack("<q", 5)),  # compared when decoded
    "first_axis, implicit": _edit(1, 1, first_axis_raw=struct.pack("<q", 5)),
    "points before the session": _edit(0, 0, back_offset=1 << 40),
    "points at the INDEX": _edit(0, 2, back_offset=0),
    "points between frames": None,
    "out of order": lambda streams: streams[0][1].insert(5, streams[0][1][2]),
    "one frame twice in a row": lambda streams: streams[0][1].insert(4, streams[0][1][3]),
    "a frame left out": lambda streams: streams[0][1].pop(17),
    "the last frame left out": lambda streams: streams[1][1].pop(),
    "another stream's frame": lambda streams: streams[1][1].__setitem__(0, streams[0][1][4]),
    "an unknown stream": lambda streams: streams.append((b"\x09" * 16, (streams[0][1][0],))),
    "a stream left out": lambda streams: streams.pop(1),
}


def _between(streams):
    e = streams[0][1][6]
    streams[0][1][6] = dataclasses.replace(e, back_offset=e.back_offset - 3)


CASES["points between frames"] = _between


@pytest.mark.parametrize("case", CASES)
def test_the_index_check_says_what_the_check_entry_by_entry_says(case):
    data = _with_index(_file(), CASES[case])
    got, want = _check(data)
    assert got == ([] if want is None else [f"INDEX disagrees with the frames: {want}; the frames stand"])
    assert (want is None) == (case in ("as written", "first_axis, explicit", "an unknown stream"))


# ---------------------------------------------------------------- logb verify
def _settled(data, how):
    checker = None if how == "validate" else Checker(how)
    with logb.LogbFile(data, on_data=checker) as f:
        if checker is None:
            f.validate()
        else:
            verify(f, how, checker)
        return ([n.as_json() for n in f.report.notes],
                sorted((s.name, s.records, s.rejected, s.rejections, [fl.offset for fl in s.frames])
                       for s in f.streams.values()))


def test_verify_of_blocks_with_a_rejected_frame_among_them_is_validate():
    # a stream of like frames stored as is (plain blocks) with one zstd frame among them that only
    # decompressing rejects: verify drops it while the blocks are still blocks
    body = hm.sync(0) + hm.frame(0x10, hm.schema(b"\xaa" * 16, "v", 8, [hm.field("v", 0, 8, 0)]), 1)
    for k in range(60):
        records = bytes(range(k, k + 100))
        if k == 30:
            stored = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(records))
            stored[-1] ^= 0xFF  # its checksum
            body += hm.data(1, bytes(stored), 100, base=k * 100, codec=1, raw_size=100)
        else:
            body += hm.data(1, records, 100, base=k * 100)
    data = hm.header() + body
    with logb.LogbFile(data) as f:
        assert len(f.stream("v")._blocks) == 2  # before and after the zstd frame
    want = _settled(data, "validate")
    assert want[1][0][2] == 100  # the zstd frame's records rejected
    assert _settled(data, 1) == _settled(data, 2) == want


def test_a_meta_frame_restated_every_segment_is_decoded_once(monkeypatch):
    calls = []
    decode = Meta.decode.__func__
    monkeypatch.setattr(Meta, "decode", classmethod(lambda cls, payload: calls.append(1) or decode(cls, payload)))
    reader._meta_of.cache_clear()
    big = hm.meta([("note", "x" * 5000)])  # over the cached size: decoded each time
    body = b"".join(hm.sync(k) + hm.meta([("logb.lost.buffer", "0")]) + big + hm.meta([("k", str(k % 2))])
                    for k in range(20))
    with logb.LogbFile(hm.header() + body) as f:
        assert len(f.segments) == 20 and [s.meta.get("k") for s in f.segments][:3] == ["0", "1", "0"]
    assert len(calls) == 1 + 20 + 2

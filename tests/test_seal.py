"""A sealed file opened from its END (END → INDEX) and the INDEX's authority."""

import dataclasses
import io
import struct

import numpy as np
import pytest

import logb
from logb import AxisKind, AxisMode, DataType, Field, Schema
from logb.crc import crc32c
from logb.frames import Index, IndexEntry
from logb.errors import IndexUnavailableError
from logb.seal import IndexedFile

SCHEMA = Schema(uuid=b"\x01" * 16, name="x", record_bits=32, axis_kind=AxisKind.time,
                axis_mode=AxisMode.explicit, axis_exp=-6, axis_scale=1, axis_field=0,
                fields=(Field("t", 0, 16, DataType.uint), Field("v", 16, 16, DataType.sint)))


def sealed(frames=50, close=True, schema=SCHEMA):
    bio = io.BytesIO()
    w = logb.Writer(bio, segment_bytes=500)
    sw = w.add_stream(schema)
    for k in range(frames):
        sw.write_batch({"t": np.arange(10) * 10, "v": np.arange(10) + k * 10}, axis_base=k * 100)
    if close:
        w.close()
    return bio.getvalue()


def test_window_from_the_tail_matches_a_full_scan_and_reads_few_frames():
    data = sealed()
    with IndexedFile(data) as f:
        st = f.stream("x")
        assert st.records == 500
        candidates = st._candidates(1000, 1500)
        assert len(candidates) <= 7 < len(st.entries)
        got = [b for _, b in st.window(1000, 1500)]
    axis = np.concatenate([b.axis for b in got])
    v = np.concatenate([b.raw["v"] for b in got])
    scan = logb.LogbFile(data).stream("x").columns(window=(1000, 1500))
    assert np.array_equal(axis, scan.axis) and np.array_equal(v, scan.raw["v"])
    assert axis[0] == 1000 and axis[-1] == 1500


def test_unclosed_file_has_no_tail_index():
    with pytest.raises(IndexUnavailableError):
        IndexedFile(sealed(close=False))


def _index_offset(data):
    f = logb.LogbFile(data)
    (off,) = f.index_valid
    return off


def _tamper_first_entry(data, fmt, at, value):
    """`data` with the INDEX's first entry changed at byte `at` of the entry, CRC restored."""
    off = _index_offset(data)
    buf = bytearray(data)
    (plen,) = struct.unpack_from("<I", buf, off)
    # stream_count(4) + uuid(16) + entry_count(4), then back_offset(8) first_axis(8) record_count(4) run_id(4)
    struct.pack_into(fmt, buf, off + 8 + 4 + 16 + 4 + at, value)
    struct.pack_into("<I", buf, off + 8 + plen, crc32c(bytes(buf[off : off + 8 + plen])))
    return bytes(buf)


def test_a_lying_index_is_corrupt_and_the_frames_stand():
    bad = _tamper_first_entry(sealed(), "<I", 16, 9999)  # its record_count
    f = logb.LogbFile(bad)
    assert list(f.index_valid.values()) == [False]
    assert any(n.kind == "corrupt-index" for n in f.report.notes)
    assert f.stream("x").records == 500 and f.report.clean
    with pytest.raises(IndexUnavailableError, match="no matching DATA frame"):  # checked at open
        IndexedFile(bad)


@pytest.mark.parametrize("mode", [AxisMode.explicit, AxisMode.implicit], ids=lambda m: m.name)
def test_an_index_first_axis_that_disagrees_with_its_frame_is_unavailable(mode):
    """Implicit axes: checked at open against the frame's axis_base; explicit:
    against its first decoded record, when the frame is read."""
    schema = SCHEMA if mode == AxisMode.explicit else dataclasses.replace(
        SCHEMA, axis_mode=AxisMode.implicit, axis_step=10)
    bad = _tamper_first_entry(sealed(frames=3, schema=schema), "<q", 8, 7)  # its first_axis
    if mode == AxisMode.implicit:
        with pytest.raises(IndexUnavailableError, match="first_axis"):
            IndexedFile(bad)
        return
    with IndexedFile(bad) as f:
        with pytest.raises(IndexUnavailableError, match="first_axis"):
            list(f.stream("x").window(0, 10**9))


def test_index_that_omits_a_frame_is_corrupt():
    data = sealed(frames=3)
    off = _index_offset(data)
    f = logb.LogbFile(data)
    assert f.index_valid[off] is True
    # Rebuild the INDEX with the last entry dropped.
    idx = logb.frames.Index.decode(data[off + 8 : off + 8 + struct.unpack_from("<I", data, off)[0]])
    (uuid, entries), = idx.streams
    fewer = logb.frames.Index(((uuid, entries[:-1]),)).frame()
    end = data[off + 8 + len(idx.encode()) + 4 :]
    g = logb.LogbFile(data[:off] + fewer + end)
    assert list(g.index_valid.values()) == [False]


def test_decoded_index_entries_are_the_frozen_dataclass_a_writer_builds():
    # Index.decode builds entries past the frozen __init__ (frames.new_index_entry): they must be
    # IndexEntry values in every way a caller can see
    entries = (IndexEntry(100, struct.pack("<q", -5), 7, 1), IndexEntry(40, struct.pack("<q", 9), 0, 2))
    back = Index(((b"\x11" * 16, entries),))
    decoded = Index.decode(back.encode())
    assert decoded == back and hash(decoded.streams[0][1]) == hash(entries)
    e = decoded.streams[0][1][0]
    assert type(e) is IndexEntry and not hasattr(e, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.run_id = 3
    assert dataclasses.replace(e, run_id=3) == IndexEntry(100, struct.pack("<q", -5), 7, 3)

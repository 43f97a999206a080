"""The CPython writer: never seeks, rotates segments by size and time and
restates what a cut-in reader needs, seals with INDEX + END."""

import dataclasses
import io
import os
import threading

import numpy as np
import pytest

import logb
from logb import AxisKind, AxisMode, Codec, DataType, Field, LogbError, Schema
from logb.errors import EncodeError
from logb.tables import FrameType

SCHEMA = Schema(uuid=b"\x07" * 16, name="v", record_bits=16, axis_kind=AxisKind.time,
                axis_mode=AxisMode.implicit, axis_exp=-3, axis_step=10,
                fields=(Field("x", 0, 16, DataType.uint),))


class WriteOnly:
    """A sink with write() and nothing else: any seek or tell would fail."""

    def __init__(self):
        self.chunks = []

    def write(self, data):
        self.chunks.append(bytes(data))
        return len(data)


def test_writer_needs_only_write():
    sink = WriteOnly()
    w = logb.Writer(sink)
    w.add_stream(SCHEMA).write_batch({"x": [1, 2, 3]})
    w.close()
    f = logb.LogbFile(b"".join(sink.chunks))
    assert f.stream("v").columns().raw["x"].tolist() == [1, 2, 3] and f.report.clean


def test_writer_into_a_real_pipe():
    r, wfd = os.pipe()
    received = []
    reader = threading.Thread(target=lambda: received.append(os.fdopen(r, "rb").read()))
    reader.start()
    with os.fdopen(wfd, "wb") as pipe:
        w = logb.Writer(pipe)
        w.add_stream(SCHEMA, codec=Codec.lz4).write_batch({"x": np.arange(100)})
        w.close()
    reader.join(10)
    cols = logb.LogbFile(received[0]).stream("v").columns()
    assert cols.raw["x"].tolist() == list(range(100))


def _frame_types(data):
    f = logb.LogbFile(data)
    from logb.scan import Report, check_header, iter_frames

    rep = Report()
    return f, [fr.type for fr in iter_frames(data, rep, check_header(data, rep))]


def test_rotation_by_time_restates_schemas_runs_and_time_base():
    now = [0.0]
    bio = io.BytesIO()
    w = logb.Writer(bio, time_base="monotonic", segment_bytes=1 << 30, segment_seconds=5,
                    monotonic=lambda: now[0])
    sw = w.add_stream(SCHEMA)
    w.add_run(3, 0, {"R1": "1k"})
    for k in range(4):
        sw.write_batch({"x": [k]}, axis_base=k * 10, run_id=3)
        now[0] += 6  # every batch lands in a new segment
    w.close()
    f, types = _frame_types(bio.getvalue())
    assert len(f.segments) == 4 and [s.seq for s in f.segments] == [0, 1, 2, 3]
    assert len(f.sessions) == 1 and f.sessions[0].time_base == "monotonic"
    assert types.count(FrameType.SCHEMA) == 4 and types.count(FrameType.RUN) == 4
    assert types.count(FrameType.META) == 4 and types[-2:] == [FrameType.INDEX, FrameType.END]
    assert f.sessions[0].runs[3].params == (("R1", "1k"),)
    # a reader handed only the last segment still decodes it fully (rule 3)
    cut = f.segments[-1].offset
    tail = logb.LogbFile(bio.getvalue()[cut:], recover=True)
    assert tail.stream("v").columns().raw["x"].tolist() == [3]
    assert tail.sessions[0].time_base == "monotonic"


def test_rotation_by_size():
    bio = io.BytesIO()
    w = logb.Writer(bio, segment_bytes=300)
    sw = w.add_stream(SCHEMA, codec=Codec.none, transpose=False)
    for k in range(20):
        sw.write_batch({"x": np.arange(50) + k})
    w.close()
    f = logb.LogbFile(bio.getvalue())
    assert len(f.segments) >= 5 and f.report.clean
    assert f.stream("v").records == 1000 and all(f.index_valid.values())


def test_attach_anchor_and_stream_meta_round_trip():
    bio = io.BytesIO()
    w = logb.Writer(bio, time_base="monotonic")
    sw = w.add_stream(SCHEMA)
    sw.write_batch({"x": [1]}, axis_base=0)
    w.attach("bus.dbc", "application/x-dbc", b"VERSION \"\"\n" * 50, codec=Codec.deflate)
    w.meta({"logb.lost.controller": 2, "logb.lost.buffer": 0}, stream=sw)
    w.anchor(axis_ns=0, wall_ns=1_700_000_000_000_000_000, source="ntp", uncertainty_ns=2_000_000)
    w.close()
    f = logb.LogbFile(bio.getvalue())
    (att,) = f.attachments
    assert att.name == "bus.dbc" and att.data() == b"VERSION \"\"\n" * 50
    assert f.stream("v").meta == {"logb.lost.controller": "2", "logb.lost.buffer": "0"}
    wall = f.stream("v").columns().wall(0)
    assert (wall.ns, wall.basis, wall.uncertainty_ns) == (1_700_000_000_000_000_000, "anchored", 2_000_000)


def test_stream_without_fields_records_only_its_axis():
    empty = Schema(uuid=b"\x08" * 16, name="ticks", record_bits=0, axis_kind=AxisKind.time,
                   axis_mode=AxisMode.implicit, axis_exp=0, axis_step=2)
    bio = io.BytesIO()
    with logb.Writer(bio) as w:
        w.add_stream(empty).write_batch({}, axis_base=10, count=3)
    cols = logb.LogbFile(bio.getvalue()).stream("ticks").columns()
    assert cols.axis.tolist() == [10, 12, 14] and cols.raw == {}


def test_write_records_takes_prebuilt_records():
    from logb import fields

    rows = np.zeros((3, 2), np.uint8)
    fields.pack(rows, SCHEMA.fields[0], [7, 8, 9])
    bio = io.BytesIO()
    with logb.Writer(bio) as w:
        sw = w.add_stream(SCHEMA, codec=Codec.zstd)
        sw.write_records(rows, axis_base=0)
        sw.write_records(rows.tobytes()[:4], axis_base=30)
    cols = logb.LogbFile(bio.getvalue()).stream("v").columns()
    assert cols.raw["x"].tolist() == [7, 8, 9, 7, 8] and cols.axis.tolist() == [0, 10, 20, 30, 40]


def test_compression_level_is_the_writers_choice():
    sizes = []
    for level in (1, 19):
        bio = io.BytesIO()
        with logb.Writer(bio) as w:
            w.add_stream(SCHEMA, codec=Codec.zstd, level=level).write_batch(
                {"x": (np.arange(20000) * 7919) % 1000})
        sizes.append(len(bio.getvalue()))
        assert logb.LogbFile(bio.getvalue()).stream("v").records == 20000
    assert sizes[1] < sizes[0]


BYTES4 = Schema(uuid=b"\x09" * 16, name="b", record_bits=32, axis_kind=AxisKind.time,
                axis_mode=AxisMode.implicit, axis_exp=-3, axis_step=1,
                fields=(Field("blob", 0, 32, DataType.bytes),))
REFUSALS = {
    "a column of the wrong length": lambda w: w.add_stream(SCHEMA).write_batch({"x": [1, 2]}, count=3),
    "values a field cannot hold": lambda w: w.add_stream(BYTES4).write_batch({"blob": [b"abc"]}),
    "records that are not whole": lambda w: w.add_stream(SCHEMA).write_records(b"\x00" * 3),
    "an axis_base beyond i64": lambda w: w.add_stream(SCHEMA).write_batch({"x": [1]}, axis_base=2**63),
    "a time axis that overflows i64": lambda w: w.add_stream(SCHEMA).write_batch({"x": [1, 2]}, axis_base=2**63 - 5),
    "a run_id beyond u32": lambda w: w.add_stream(SCHEMA).write_batch({"x": [1]}, run_id=2**32),
    "a RUN beyond u32": lambda w: w.add_run(-1),
    "an unknown codec": lambda w: w.add_stream(SCHEMA, codec=99),
    "not a Schema": lambda w: w.add_stream("v"),
    "a stream declared twice": lambda w: (w.add_stream(SCHEMA), w.add_stream(SCHEMA)),
    "a schema that cannot encode": lambda w: w.add_stream(Schema(
        uuid=b"\x0a" * 16, name="t", record_bits=8, axis_kind=AxisKind.time, axis_mode=AxisMode.implicit,
        axis_exp=-300, fields=(Field("x", 0, 8, DataType.uint),))),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_writer_refuses_input_with_encode_error(case):
    """Every input the writer refuses is an EncodeError: a LogbError, and a
    ValueError for callers that catch that; the file stays readable."""
    bio = io.BytesIO()
    w = logb.Writer(bio)
    with pytest.raises(EncodeError) as caught:
        REFUSALS[case](w)
    assert isinstance(caught.value, LogbError) and isinstance(caught.value, ValueError)
    w.close()
    f = logb.LogbFile(bio.getvalue())
    assert f.report.clean and not f.report.notes, f.report


def test_closed_writer_refuses_data():
    w = logb.Writer(io.BytesIO())
    sw = w.add_stream(SCHEMA)
    w.close()
    with pytest.raises(EncodeError):
        sw.write_batch({"x": [1]})


def segments(data):
    """Each segment's frames, SYNC first, as _frames.walk tuples (offset, type, stream_id, payload_len);
    INDEX and END are not segment content."""
    from _frames import walk

    out = []
    for fr in walk(data):
        if fr[1] == FrameType.SYNC:
            out.append([])
        if fr[1] not in (FrameType.INDEX, FrameType.END):
            out[-1].append(fr)
    return out


def bound_and_used(segment):
    """The stream_ids a segment's SCHEMAs bind, and those its DATA and stream META frames use."""
    bound = [sid for _, t, sid, _ in segment if t == FrameType.SCHEMA]
    used = {sid for _, t, sid, _ in segment if t in (FrameType.DATA, FrameType.META) and sid}
    return bound, used


def test_bind_used_writes_whole_segments_binding_only_their_streams():
    sink = WriteOnly()
    limit = 600
    w = logb.Writer(sink, segment_bytes=limit, bind_used=True)
    a, b, c = (w.add_stream(dataclasses.replace(SCHEMA, uuid=bytes([k]) * 16, name=f"s{k}"),
                            codec=Codec.none, transpose=False) for k in (1, 2, 3))
    w.add_run(3, 0, {"R1": "1k"})
    for k in range(30):
        a.write_batch({"x": np.arange(20) + k}, axis_base=k * 200, run_id=3)
        if k % 10 == 9:
            c.write_batch({"x": [k]}, axis_base=k * 200)
        if k == 15:
            w.meta({"note": "k15"}, stream=b)
    w.close()
    data = b"".join(sink.chunks)
    segs = segments(data)
    assert len(segs) >= 5
    assert len(sink.chunks) == 1 + len(segs) + 2  # header, each segment whole, INDEX, END
    for seg in segs:
        bound, used = bound_and_used(seg)
        assert sorted(used) == bound, seg  # each SCHEMA bound where it is used, and only there
        assert [t for _, t, _, _ in seg[1:len(bound) + 3]] == [FrameType.SCHEMA] * len(bound) + [
            FrameType.RUN, FrameType.META]  # SYNC, SCHEMAs, RUNs, session META, then the segment's frames
        size = seg[-1][0] + 12 + seg[-1][3] - seg[0][0]
        assert size <= limit + 12 + max(plen for _, _, _, plen in seg)  # the limit, plus one frame
    assert sum(3 in bound_and_used(seg)[1] for seg in segs) == 3  # c has DATA in three segments only
    f = logb.LogbFile(data)
    assert f.report.clean and all(f.index_valid.values())
    assert f.stream("s1").records == 600 and f.stream("s3").columns().raw["x"].tolist() == [9, 19, 29]
    assert f.stream("s2").meta == {"note": "k15"}
    assert f.sessions[0].runs[3].params == (("R1", "1k"),)
    cut = [seg[0][0] for seg in segs if 1 in bound_and_used(seg)[1]][-1]
    tail = logb.LogbFile(data[cut:], recover=True)  # rule 3: the file from a later segment on decodes
    assert tail.stream("s1").columns().raw["x"].tolist()[-1] == 29 + 19


def test_bind_used_file_of_no_records_names_its_streams():
    bio = io.BytesIO()
    with logb.Writer(bio, bind_used=True) as w:
        w.add_stream(SCHEMA)
    f = logb.LogbFile(bio.getvalue())
    assert f.report.clean and f.stream("v").records == 0


def test_writer_refuses_a_frame_every_reader_may_refuse(tmp_path):
    """A DATA frame past the reader limits (SPEC §8.3) is refused before anything is written."""
    from logb import limits

    schema = Schema(logb.stream_uuid("t", "wide"), "wide", 8, AxisKind.index, AxisMode.implicit, axis_step=1.0,
                    fields=(Field("b", 0, 8, DataType.uint),))
    n = limits.FRAME_COLUMNS_MIN // limits.column_bytes(schema) + 1
    with logb.Writer(tmp_path / "w.logb") as w:
        s = w.add_stream(schema, codec=Codec.none)
        before = (tmp_path / "w.logb").stat().st_size
        with pytest.raises(logb.EncodeError, match="reader limits"):
            s.write_batch({"b": np.zeros(n, np.uint8)})
        assert (tmp_path / "w.logb").stat().st_size == before
        s.write_batch({"b": np.zeros(n - 1, np.uint8)})  # just inside: written
    with logb.LogbFile(tmp_path / "w.logb") as f:
        assert f.stream("wide").records == n - 1 and f.report.clean

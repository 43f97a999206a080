"""Hostile input within the stated limits (SPEC §8.3 "Reader limits"): files
of at most 1 MB whose every CRC is valid, built by hand. Whatever their
headers claim, only a LogbError escapes (or the frame is rejected and
reported), the read path stays under 256 MB of RSS and 5 s of CPU, and every
open path costs time linear in the number of frames."""

import dataclasses
import functools
import gc
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np
import pytest
import zstandard

import _frames
import handmade as hm
import logb
from logb import limits
from logb.errors import IndexUnavailableError, LogbError
from logb.seal import IndexedFile

UA, UB = b"\xaa" * 16, b"\xbb" * 16
U8 = hm.field("v", 0, 8, 0)  # uint8 at bit 0


def stream(schema_body, sid=1):
    return hm.sync(0) + hm.frame(0x10, schema_body, sid)


def u8_schema(uuid=UA, name="v", fields=(U8,), record_bits=8, **kw):
    return hm.schema(uuid, name, record_bits, list(fields), **kw)


def zstd_bomb(size, content_size=True):
    """A zstd frame (RFC 8878) of `size` zero bytes, built from RLE blocks of
    128 KiB (4 bytes each): 32 KB per GiB, and made without compressing."""
    window = bytes([(17 - 10) << 3])  # Window_Descriptor: 128 KiB
    head = struct.pack("<IB", 0xFD2FB528, 0xC0 if content_size else 0) + window
    if content_size:
        head += struct.pack("<Q", size)
    full, rest = divmod(size, 1 << 17)
    sizes = [1 << 17] * full + ([rest] if rest or not full else [])
    blocks = [struct.pack("<I", (n << 3) | (1 << 1) | (i == len(sizes) - 1))[:3] + b"\0"
              for i, n in enumerate(sizes)]
    return head + b"".join(blocks)


def attach(name, codec, raw_size, stored):
    return hm.frame(0x12, hm.s(name) + hm.s("application/octet-stream")
                    + struct.pack("<B3xQ", codec, raw_size) + stored)


# Run in a fresh interpreter: the whole read path of every stream, the END path
# too, then the process's own peak RSS and CPU.
_READ_ALL = r"""
import json, resource, sys
import logb
from logb.errors import LogbError
from logb.seal import IndexedFile
escaped = None
def guarded(work):
    global escaped
    try:
        work()
    except LogbError:
        pass
    except BaseException as exc:
        escaped = escaped or repr(exc)[:300]
def scan():
    with logb.LogbFile(sys.argv[1]) as f:
        f.validate()
        for s in f.streams.values():
            if s.schema is None:
                continue
            cols = s.columns()
            for fd in s.schema.fields:
                cols.phys(fd.name)
            if len(cols):
                cols.wall(0)
        for a in f.attachments:
            guarded(a.data)
def indexed():
    with IndexedFile(sys.argv[1]) as g:
        for s in g.streams.values():
            list(s.window(-2**62, 2**62))
guarded(scan)
guarded(indexed)
ru = resource.getrusage(resource.RUSAGE_SELF)
# VmHWM, this process image's own peak: ru_maxrss keeps the forking parent's RSS across exec
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"escaped": escaped, "rss_mb": hwm / 1024, "cpu_s": ru.ru_utime + ru.ru_stime}))
"""


def read_all(tmp_path, data, backend):
    assert len(data) <= 1 << 20, "the limits are stated for inputs of at most 1 MB"
    path = tmp_path / "hostile.logb"
    path.write_bytes(data)
    env = dict(os.environ, LOGB_BACKEND=backend)
    done = subprocess.run([sys.executable, "-c", _READ_ALL, str(path)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)
    assert got["escaped"] is None, got
    assert got["rss_mb"] <= 256, got
    assert got["cpu_s"] <= 5, got
    return got


@functools.cache
def bomb_files():
    region = u8_schema()
    v_stream = stream(region)
    good = hm.data(1, bytes(range(10)), 10)
    big = 1 << 30
    return {
        # 1 GiB of zeros where raw_size says 1000 (content size stated, or not)
        "data-bomb": hm.header() + v_stream + good + hm.data(1, zstd_bomb(big), 1000, codec=1, raw_size=1000),
        "data-bomb-no-size": hm.header() + v_stream + good
        + hm.data(1, zstd_bomb(big, False), 1000, codec=1, raw_size=1000),
        # raw_size tells the truth: 2^30 one-byte records
        "data-bomb-true-size": hm.header() + v_stream + good + hm.data(1, zstd_bomb(big), big, codec=1),
        "attach-bomb": hm.header() + attach("a", 1, 1000, zstd_bomb(big)),
        "attach-bomb-true-size": hm.header() + attach("a", 1, big, zstd_bomb(big)),
        # record_bits = 2^32 - 1: one record is 512 MiB
        "record-bits": hm.header() + stream(u8_schema(record_bits=2**32 - 1))
        + hm.data(1, zstd_bomb(2**29), 1, codec=1, raw_size=2**29),
        # record counts that imply 32 GiB of columns
        "record-count": hm.header() + stream(u8_schema(fields=(hm.field("v", 0, 64, 0),), record_bits=64))
        + hm.data(1, zstd_bomb(2**32, False), 2**29, codec=1, raw_size=2**32),
    }


@pytest.mark.parametrize("name", list(bomb_files()))
def test_decompression_bombs_stay_within_the_limits(tmp_path, logb_backend, name):
    data = bomb_files()[name]
    read_all(tmp_path, data, logb_backend)
    f = logb.LogbFile(data)
    f.validate()
    if f.streams:
        s = f.stream("v")
        assert s.rejected and s.columns().raw["v"].tolist() == (list(range(10)) if "bomb" in name else [])
    else:
        for a in f.attachments:  # listed with its data unavailable, or not listed (malformed)
            with pytest.raises(LogbError):
                a.data()
        assert any("ATTACH" in n.message or "attachment" in n.message for n in f.report.notes)


def test_a_zstd_bomb_stops_at_raw_size_plus_one():
    from logb import codecs

    bomb = zstd_bomb(1 << 30, content_size=False)
    with pytest.raises(LogbError, match="past raw_size 1000"):
        codecs.decompress(bomb, logb.Codec.zstd, 1000)
    assert codecs.decompress(zstd_bomb(1000, False), logb.Codec.zstd, 1000) == bytes(1000)
    with pytest.raises(LogbError, match="at most"):  # the block headers cannot make 2^30 bytes
        codecs.decompress(zstd_bomb(1000, False), logb.Codec.zstd, 1 << 30)


def test_zero_size_records_have_one_budget_per_file(tmp_path, logb_backend):
    empty = hm.schema(UA, "z", 0, [], step=1)
    n = limits.ZERO_SIZE_RECORDS_MIN
    frames = b"".join(hm.data(1, b"", n, base=k * n) for k in range(100))
    data = hm.header() + stream(empty) + frames
    assert len(data) < 5000
    read_all(tmp_path, data, logb_backend)
    s = logb.LogbFile(data).stream("z")
    assert s.records == limits.ZERO_SIZE_RECORDS_MIN  # the first frame; the other 99 rejected
    assert s.rejected == 99 * n and "zero-size records" in s.rejections[0][2]


def _cpu(build, n):
    """The least CPU of three opens (and full reads) of build(n)."""
    data = build(n)
    gc.collect()
    gc.disable()  # a collection's cost depends on the whole heap, not on this open
    try:
        return min(_cpu_once(data) for _ in range(3))
    finally:
        gc.enable()


def _cpu_once(data):
    t = time.process_time()
    with logb.LogbFile(data) as f:
        f.validate()
        for s in f.streams.values():
            if s.schema is not None and s.frames:
                s.columns().wall(0)
    return time.process_time() - t


def _anchors(n):
    body = hm.sync(0) + hm.meta([("logb.time_base", "monotonic")]) + hm.frame(0x10, u8_schema(), 1)
    body += hm.data(1, b"\x01", 1)
    for k in range(n):
        body += hm.meta([("logb.anchor.axis_ns", str(k * 1000)), ("logb.anchor.wall_ns", str(10**18 + k * 999))])
    return hm.header() + body


def _index_per_data(n):
    body = stream(u8_schema())
    for k in range(n):  # an INDEX after every DATA frame, each naming every frame so far
        body += hm.data(1, b"\x01", 1, base=k)
        body += hm.frame(0x30, struct.pack("<I", 0))
    return hm.header() + body


def _schemas_per_segment(n):
    body = hm.sync(0)
    for k in range(n):
        body += hm.frame(0x10, u8_schema(uuid=k.to_bytes(16, "little"), name=f"s{k}"), k + 1)
    return hm.header() + body + hm.data(1, b"\x01", 1)


def _sessions(n):
    body = b""
    for k in range(n):
        body += hm.sync(0) + hm.frame(0x10, u8_schema(), 1) + hm.data(1, b"\x01", 1, base=k) + hm.end()
    return hm.header() + body


@pytest.mark.parametrize("build,n", [(_anchors, 2000), (_index_per_data, 2000), (_schemas_per_segment, 1500),
                                     (_sessions, 1500)],
                         ids=["anchors", "index-x-data", "schemas-per-segment", "sessions"])
def test_open_is_linear_in_the_number_of_frames(build, n):
    """Four times the frames may cost about four times the CPU, never sixteen (quadratic)."""
    small, large = _cpu(build, n), _cpu(build, 4 * n)
    assert large < 8 * small + 0.05, (small, large)


def test_range_to_text_costs_entries_plus_records(tmp_path, logb_backend):
    entries = 40_000
    conv = b"\x06" + struct.pack("<I", entries) + b"".join(
        struct.pack("<dd", k, k + 0.5) + hm.s("t") for k in range(entries)) + hm.s("none")
    schema = hm.schema(UA, "v", 16, [hm.field("v", 0, 16, 0, conv=conv)], step=1)
    records = np.tile(np.arange(1 << 16, dtype="<u2"), 4).tobytes()
    data = hm.header() + stream(schema) + hm.data(1, zstandard.ZstdCompressor().compress(records), 1 << 18,
                                                   codec=1, raw_size=len(records))
    read_all(tmp_path, data, logb_backend)
    phys = logb.LogbFile(data).stream("v").columns().phys("v")
    assert phys[:3].tolist() == ["t", "t", "t"] and phys[entries] == "none"


def test_zero_width_fields_cost_nothing_per_record(tmp_path, logb_backend):
    fields = [U8] + [hm.field(f"s{k}", 8, 0, 4 + k % 2) for k in range(2000)]  # string and bytes, 0 bits
    schema = hm.schema(UA, "v", 8, fields, step=1)
    records = bytes(1 << 18)
    data = hm.header() + stream(schema) + hm.data(1, zstandard.ZstdCompressor().compress(records), 1 << 18,
                                                   codec=1, raw_size=len(records))
    read_all(tmp_path, data, logb_backend)


# ---------------------------------------------------------------- the END -> INDEX path
def sealed_two_streams(frames=6):
    import io

    bio = io.BytesIO()
    w = logb.Writer(bio)
    a = w.add_stream(logb.Schema(UA, "a", 16, logb.AxisKind.time, logb.AxisMode.explicit, axis_exp=-6,
                                 axis_scale=1, fields=(logb.Field("t", 0, 16, logb.DataType.uint),)))
    b = w.add_stream(logb.Schema(UB, "b", 16, logb.AxisKind.time, logb.AxisMode.explicit, axis_exp=-6,
                                 axis_scale=1, fields=(logb.Field("t", 0, 16, logb.DataType.uint),)))
    for k in range(frames):
        a.write_batch({"t": np.arange(10) + 100 * k}, axis_base=0)
        b.write_batch({"t": np.arange(10) + 100 * k + 50}, axis_base=0)
    w.close()
    return bio.getvalue()


def _reindex(data, change):
    """`data` with its INDEX rewritten by change(list of [uuid, [entries]]) and the END kept pointing at it."""
    f = logb.LogbFile(data)
    (off,) = f.index_valid
    (end_off, end), = f.ends
    idx = f.indexes[0][1]
    streams = [[u, list(e)] for u, e in idx.streams]
    change(streams)
    new = logb.frames.Index(tuple((u, tuple(e)) for u, e in streams)).frame()
    end = logb.frames.End(len(new), end.session_bytes - (end_off - off) + len(new)).frame()
    return data[:off] + new + end


def _lie(field):
    def change(streams):
        e = streams[0][1][2]
        streams[0][1][2] = dataclasses.replace(e, **field(e))
    return change


INDEX_LIES = {
    "wrong-stream": lambda st: st[0][1].__setitem__(0, st[1][1][0]),  # a's first entry names b's frame
    "duplicate": lambda st: st[0][1].extend(st[0][1][-1:] * 1),
    "duplicate-across": lambda st: st[1][1].__setitem__(-1, st[0][1][-1]),
    "inside-a-frame": _lie(lambda e: {"back_offset": e.back_offset - 8}),
    "count": _lie(lambda e: {"record_count": 4_000_000_000}),
    "stream-twice": lambda st: st.append(st[0]),
}


@pytest.mark.parametrize("lie", list(INDEX_LIES))
def test_an_index_that_lies_is_refused_at_open(lie):
    data = _reindex(sealed_two_streams(), INDEX_LIES[lie])
    with pytest.raises(IndexUnavailableError):
        IndexedFile(data)
    assert logb.LogbFile(data).stream("a").records == 60  # the scan does not trust it


def test_an_axis_lie_cannot_hide_records():
    """The last frame claims to start past the window: the claim is read and found false."""
    data = _reindex(sealed_two_streams(), lambda st: st[0][1].__setitem__(
        -1, dataclasses.replace(st[0][1][-1], first_axis_raw=struct.pack("<q", 10**9))))
    with IndexedFile(data) as f, pytest.raises(IndexUnavailableError, match="first_axis"):
        list(f.stream("a").window(0, 10**6))


def test_an_index_over_an_invalid_schema_is_unavailable_not_invalid_schema():
    data = sealed_two_streams()
    schema_off = next(off for off, ftype, _sid, _len in _frames.walk(data) if ftype == 0x10)
    rel = 8 + 16 + 4 + 1  # frame header, uuid, name length and "a": record_bits
    bad = _frames.patch(data, schema_off, rel, struct.pack("<I", 1))  # 16 bits of field in a 1-bit record
    with pytest.raises(IndexUnavailableError):
        IndexedFile(bad)


# ---------------------------------------------------------------- the file under the reader
_SHRINK = r"""
import os, sys
import logb
from logb.seal import IndexedFile
from logb.errors import LogbError
path = sys.argv[1]
f = logb.LogbFile(path)
g = IndexedFile(path)
full = f.stream("a").columns().raw["t"].tolist()
os.truncate(path, 100)
assert f.stream("a").columns().raw["t"].tolist() == full  # what was read stays read
try:
    list(g.stream("a").window(0, 10**9))
except LogbError as exc:
    print(type(exc).__name__)
f.close(); g.close()
"""


def test_a_file_that_shrinks_under_the_reader_gives_a_typed_error(tmp_path):
    path = tmp_path / "shrinks.logb"
    path.write_bytes(sealed_two_streams(frames=2000))
    done = subprocess.run([sys.executable, "-c", _SHRINK, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7 would be SIGBUS
    assert done.stdout.strip() == "IndexUnavailableError"


def test_an_error_while_decoding_is_not_masked_by_closing_the_file(tmp_path):
    path = tmp_path / "x.logb"
    path.write_bytes(sealed_two_streams())
    with pytest.raises(IndexUnavailableError, match="raised inside"):
        with logb.LogbFile(path) as f:
            cols = f.stream("a").columns()
            views = [memoryview(f.buf), np.frombuffer(f.buf, np.uint8)]  # exported buffers stay alive
            assert len(cols) and views
            raise IndexUnavailableError("raised inside")


def _accepted(data):
    with logb.LogbFile(data) as f:
        return ([n.as_json() for n in f.report.notes],
                sorted((s.name, s.records, s.rejected, s.rejections, [(fl.offset, fl.segment) for fl in s.frames])
                       for s in f.streams.values()))


@pytest.mark.parametrize("codec", [0, 1], ids=["none", "zstd"])
def test_a_run_of_like_frames_is_accepted_as_each_would_be_alone(monkeypatch, codec):
    # A DATA frame shaped like the last one accepted for its stream_id is accepted at once
    # (reader._frames_run): the budget running out among such frames, a run that changes and
    # comes back, a shorter frame, a second stream in between and a new segment must each end
    # as they do frame by frame; compressed frames of one raw_size differ in stored length.
    monkeypatch.setattr(limits, "FILE_DECODE_MIN", 0)
    monkeypatch.setattr(limits, "FILE_DECODE_RATIO", 9)  # ~70 % of the frames fit
    body = stream(u8_schema()) + hm.frame(0x10, u8_schema(uuid=UB, name="w"), 2)
    for k in range(300):
        n = 50 if k == 120 else 100
        records = bytes(i * k % 256 for i in range(n))
        stored = zstandard.compress(records) if codec else records
        body += hm.data(1, stored, n, base=k * 100, run_id=1 if 60 <= k < 70 or k == 80 else 0, codec=codec,
                        raw_size=n)
        if k % 40 == 7:
            body += hm.data(2, b"\x05", 1, base=k)
        if k == 150:
            body += stream(u8_schema())
    data = hm.header() + body
    calls = []
    frame_by_frame = limits.Budget.repeat_charge
    monkeypatch.setattr(limits.Budget, "repeat_charge", lambda self, schema, header: calls.append(1))
    alone = _accepted(data)
    assert len(calls) > 200  # every accepted frame went through LogbFile._data
    monkeypatch.setattr(limits.Budget, "repeat_charge", lambda self, schema, header: calls.append(1) or
                        frame_by_frame(self, schema, header))
    calls.clear()
    assert _accepted(data) == alone
    assert len(calls) < 50  # most frames were accepted at once
    v = next(s for s in alone[1] if s[0] == "v")
    assert 150 < v[1] // 100 < 250 and "budget" in v[3][0][2]  # the budget ran out among like frames
    assert any(n["kind"] == "run-order" for n in alone[0])

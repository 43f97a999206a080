"""tests/_fleet.py, the fleet of recordings the data lake tests read: every file is what
its FleetFile says it is, as the project's own readers see it."""

import datetime as dt
import math
from collections import Counter

import numpy as np
import pytest

import logb
from logb.can.dbc import MEDIA_TYPE, compile_dbc
from logb.can.decode import decode_file
from logb.can.formats import import_trace, read_logb, read_trace, wall_ns_of
from logb.errors import UsageError
from logb.framing import FILE_HEADER_SIZE, MAGIC

import _fleet
from _fleet import grow, make_fleet

N = 60


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return make_fleet(tmp_path_factory.mktemp("fleet"), n=N, seed=3)


def recordings(fleet):
    return fleet.of_kind("clean", "cut", "damaged", "concatenated")


def message_names(dbc_text):
    return {e.message for e in compile_dbc(dbc_text).entries}


def test_layout_and_kinds(fleet):
    assert len(fleet.files) == N and set(fleet.files) == set(fleet.records)
    folders = set()
    for ff in fleet.records.values():
        device, day = ff.path.relative_to(fleet.root).parts[:2]
        assert device == ff.device and day in fleet.days
        assert ff.path.suffix == (".log" if ff.kind == "trace" else ".logb")
        folders.add((device, day))
    assert folders == {(d, day) for d in fleet.devices for day in fleet.days}
    kinds = Counter(ff.kind for ff in fleet.records.values())
    assert {k: kinds[k] for k, _ in _fleet.SHARES} == {k: math.ceil(share * N) for k, share in _fleet.SHARES}
    assert len(fleet.dbcs) == 3 and {ff.dbc_name for ff in fleet.records.values()} == set(fleet.dbcs)
    for device in fleet.devices:  # one DBC and one way of carrying it per device
        mine = [ff for ff in fleet.records.values() if ff.device == device and ff.kind != "trace"]
        assert len({(ff.dbc_name, ff.way) for ff in mine}) == 1
    assert {ff.way for ff in fleet.records.values()} == {*_fleet.WAYS, "trace"}


def test_recordings_are_dated_on_their_folder_day(fleet):
    bases = Counter()
    for ff in fleet.of_kind("clean", "trace"):
        bases[ff.time_base] += 1
        if ff.kind == "trace":
            trace = read_trace(ff.path)
        else:
            with logb.open(str(ff.path)) as f:
                trace = read_logb(f)
        assert trace.dated == (ff.start_ns is not None) == (ff.time_base != "relative")
        if ff.start_ns is None:
            continue
        first_ns = int(trace.buses["can0"].t.min()) * 10 ** (9 + trace.axis_exp)
        assert first_ns == ff.start_ns
        last = dt.datetime.fromtimestamp(int(trace.buses["can0"].t.max()) * 10.0 ** trace.axis_exp, dt.timezone.utc)
        assert last.date().isoformat() == ff.path.parent.name
    assert bases["unix"] and bases["monotonic"] and bases["relative"]


def test_recordings_open_and_decode(fleet):
    for ff in recordings(fleet):
        with logb.open(str(ff.path)) as f:
            assert f.report.clean == (ff.kind in ("clean", "concatenated")), ff
            if ff.kind == "cut":
                assert f.report.truncated and {s.cause for s in f.report.skipped} == {"truncated"}
            if ff.kind == "damaged":
                assert f.report.skipped and not f.report.truncated
            raw = f.stream("can0")
            parts = 2 if ff.kind == "concatenated" else 1
            if ff.kind in ("clean", "concatenated"):
                assert raw.records == ff.frames
                assert len(f.sessions) == parts
            else:
                assert 0 < raw.records <= ff.frames  # the damage may have hit other frames only
            per_message = [s for s in f.streams.values() if s.schema.meta_dict().get("logb.can.message")]
            attached = [a for a in f.attachments if a.media_type == MEDIA_TYPE]
            assert bool(per_message) == (ff.way != "attached")
            assert [a.name for a in attached] == ([ff.dbc_name] * parts if ff.way != "messages" else [])
            names = message_names(fleet.dbcs[ff.dbc_name])
            assert {d.message for d in decode_file(f, dbc=fleet.dbcs[ff.dbc_name]) if len(d)} == names
            # what the file carries decodes by itself, but a cut may lose the per-message
            # DATA of a file without its DBC (written after the raw frames they repeat)
            if ff.way != "messages" or ff.kind in ("clean", "concatenated"):
                assert {d.message for d in decode_file(f) if len(d)} == names


def test_both_ways_decode_alike(fleet):
    """Where a file has per-message streams and the DBC, they give the same signals."""
    both = [ff for ff in fleet.of_kind("clean") if ff.way == "both"]
    assert both
    for ff in both:
        with logb.open(str(ff.path)) as f:
            streams = {d.message: d for d in decode_file(f, source="messages")}
            whole = {d.message: d for d in decode_file(f, source="raw")}
        assert streams.keys() == whole.keys()
        for name, d in streams.items():
            assert d.axis.tolist() == whole[name].axis.tolist()
            for sig, col in d.phys.items():
                assert np.ma.allequal(col, whole[name].phys[sig]), (ff.path, name, sig)


def test_short_message_is_missing_its_last_signal(fleet):
    """body.dbc's Climate goes on the bus 6 bytes long: Humidity (byte 7) is never there."""
    ff = next(ff for ff in fleet.of_kind("clean") if ff.dbc_name == "body.dbc")
    with logb.open(str(ff.path)) as f:
        climate = next(d for d in decode_file(f) if d.message == "Climate")
    assert climate.short == len(climate) > 0
    assert climate.phys["Humidity"].mask.all() and not np.ma.getmaskarray(climate.phys["Cabin"]).any()


def test_sensor_stream(fleet):
    with_env = [ff for ff in fleet.of_kind("clean") if ff.sensor]
    assert with_env and len(with_env) < len(fleet.of_kind("clean"))
    for ff in with_env:
        with logb.open(str(ff.path)) as f:
            env = f.stream("env")
            cols = env.columns()
            assert env.records == ff.sensor
            assert [(fd.name, fd.unit) for fd in env.schema.fields] == [("temperature", "degC"), ("voltage", "V")]
            volts = cols.phys("voltage")
            assert volts.min() >= 11.8 and volts.max() < 14.4
            assert np.array_equal(volts, cols.raw["voltage"] * 0.001)
            can = f.stream("can0").columns(fields=["t"])
            assert cols.axis[0] == can.axis[0] // 1000  # the session's clock, in ms against µs


def test_damaged_files_read_without_strict_only(fleet):
    for ff in fleet.of_kind("damaged"):
        with pytest.raises(logb.LogbError):
            logb.open(str(ff.path), strict=True)


def test_concatenated_is_one_header_and_two_sessions(fleet):
    ordered = 0
    for ff in fleet.of_kind("concatenated"):
        data = ff.path.read_bytes()
        assert data.count(MAGIC) == 1 and data.startswith(MAGIC)
        with logb.open(str(ff.path)) as f:
            assert [s.meta.get("logb.device") for s in f.sessions] == [ff.device, ff.device]
            assert len({s.meta["logb.session"] for s in f.sessions}) == 2
            raw = f.stream("can0").columns(fields=["t"])
            wall, dated = wall_ns_of(f, raw.axis, raw.axis_exp, raw.session)
        if dated:  # the second recording is the later one
            assert wall[raw.session == 0].max() < wall[raw.session == 1].min()
            ordered += 1
    assert ordered


def test_traces_read_and_import(fleet, tmp_path):
    traces = fleet.of_kind("trace")
    assert traces
    for ff in traces:
        trace = read_trace(ff.path)
        assert trace.source_format == "candump" and trace.dated and trace.frames == ff.frames
        out = tmp_path / (ff.path.stem + ".logb")
        import_trace(ff.path, out, dbc=fleet.dbcs[ff.dbc_name], device=ff.device)
        with logb.open(str(out)) as f:
            assert f.report.clean and f.stream("can0").records == ff.frames
            assert {d.message for d in decode_file(f)} == message_names(fleet.dbcs[ff.dbc_name])


def test_grow_to_full_bytes(tmp_path):
    fleet = make_fleet(tmp_path, n=100, seed=4)
    growing = fleet.of_kind("growing")
    assert growing
    mid_frame = 0
    for ff in growing:
        assert 3 <= len(ff.steps) <= 4 and ff.steps[-1] == len(ff.full_bytes)
        sizes, records = [ff.path.stat().st_size], []
        while not ff.complete:
            with logb.open(str(ff.path)) as f:
                mid_frame += f.report.truncated
                records.append(sum(s.records for s in f.streams.values()))
            grow(ff.path, fleet)
            sizes.append(ff.path.stat().st_size)
        assert tuple(sizes) == ff.steps
        assert records == sorted(records)  # a prefix never holds records a longer one lacks
        assert ff.path.read_bytes() == ff.full_bytes
        with logb.open(str(ff.path)) as f:
            assert f.report.clean and f.stream("can0").records == ff.frames
        with pytest.raises(UsageError):
            grow(ff.path, fleet)
    assert 0 < mid_frame < sum(len(ff.steps) - 1 for ff in growing)  # some pieces end inside a frame, not all
    with pytest.raises(UsageError):
        grow(fleet.of_kind("clean")[0].path, fleet)


def test_deterministic(tmp_path):
    a, b, c = (make_fleet(tmp_path / name, n=20, seed=seed) for name, seed in (("a", 7), ("b", 7), ("c", 8)))

    def contents(fleet):
        return {p.relative_to(fleet.root): p.read_bytes() for p in fleet.files}

    assert contents(a) == contents(b)
    assert contents(a) != contents(c)
    assert [ff.full_bytes for ff in a.records.values()] == [ff.full_bytes for ff in b.records.values()]


@pytest.mark.single_backend  # the generator's work: the backends are compared by the tests above
def test_thousand(tmp_path):
    fleet = make_fleet(tmp_path, n=1000, seed=0)
    kinds = Counter(ff.kind for ff in fleet.records.values())
    assert kinds == {"clean": 850, "cut": 50, "damaged": 30, "growing": 30, "concatenated": 20, "trace": 20}
    frames = [ff.frames for ff in fleet.records.values() if ff.kind in ("clean", "trace")]
    assert 300 <= min(frames) and max(frames) < 3000
    assert FILE_HEADER_SIZE < min(ff.path.stat().st_size for ff in fleet.records.values())

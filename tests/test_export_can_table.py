"""`logb export --stream BUS --format csv|parquet`: a raw CAN bus stream as a table a CAN
engineer reads (CSV: dump's view, hex id, DLC, the DLC's data bytes, flag letters) and a
program filters without loss (Parquet: integer id and flag mask, binary data)."""

import csv

import numpy as np
import pytest

import logb
from logb.can import formats, layout
from logb.cli.main import main

from test_can_formats import synthetic_trace


@pytest.fixture
def recording(tmp_path):
    path = tmp_path / "s.logb"
    formats.write_logb(synthetic_trace(-6, True), path)
    return path


def test_csv_reads_as_dump_shows_it(tmp_path, recording, capsys):
    out = tmp_path / "can1.csv"
    assert main(["export", str(recording), "--stream", "can1", "-o", str(out)]) == 0
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["run_id", "time_utc", "id", "dlc", "data", "flags"]
    capsys.readouterr()
    assert main(["dump", str(recording), "--stream", "can1"]) == 0
    shown = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert len(shown) == len(rows) - 1 == len(synthetic_trace().buses["can1"])
    for row, line in zip(rows[1:], shown):  # dump: time bus id [dlc] data... flags
        time, _bus, ident, dlc, *rest = line
        assert (row[1], row[2], f"[{row[3]}]") == (time, ident, dlc)
        assert row[4].split() + ([row[5]] if row[5] else []) == rest, line  # data bytes, then the letters
    fd64 = next(r for r in rows[1:] if r[3] == "15" and r[5] == "FB")
    assert len(fd64[4].split()) == 64 and fd64[2] == "201"
    assert next(r for r in rows[1:] if r[2] == "1C4D80A7")[5] == "XFBST"
    classic = tmp_path / "can0.csv"
    assert main(["export", str(recording), "--stream", "can0", "-o", str(classic)]) == 0
    with open(classic, newline="") as fh:
        rows = {r["id"] + r["flags"]: r for r in csv.DictReader(fh)}
    assert rows["321R"]["data"] == "" and rows["321R"]["dlc"] == "3"  # remote: a length asked for, no data
    assert rows["00000000XE"]["data"] == "" and rows["1FFFFFFFXT"]["dlc"] == "5"


def test_parquet_keeps_every_frame_as_numbers(tmp_path, recording):
    pq = pytest.importorskip("pyarrow.parquet")
    want = synthetic_trace(-6, True)
    for bus in ("can0", "can1"):
        out = tmp_path / f"{bus}.parquet"
        assert main(["export", str(recording), "--stream", bus, "-o", str(out)]) == 0
        t = pq.read_table(out)
        assert t.column_names == ["run_id", "time_utc", "id", "dlc", "data", "flags"]
        assert str(t.schema.field("id").type) == "uint32" and str(t.schema.field("flags").type) == "uint8"
        b = want.buses[bus]
        assert t.column("id").to_pylist() == b.id.tolist()
        assert t.column("flags").to_pylist() == b.flags.tolist()
        assert t.column("dlc").to_pylist() == b.dlc.tolist()
        lengths = layout.frame_lengths(b.dlc, b.flags)
        assert t.column("data").to_pylist() == [bytes(r[:n]) for r, n in zip(b.data, lengths.tolist())]
        # the stored zero padding is all the table leaves out: padded back, the records are the same
        back = np.zeros_like(b.data)
        for k, p in enumerate(t.column("data").to_pylist()):
            back[k, :len(p)] = np.frombuffer(p, np.uint8)
        assert (back == b.data).all()
        ns = t.column("time_utc").cast("int64").to_numpy()
        assert (ns == b.t * 1000).all()


def test_bytes_past_the_dlc_are_an_error_not_dropped(tmp_path, capsys):
    """A writer that broke SPEC §13.1 (data past the DLC not zero): the table would drop those
    bytes, so export refuses, saying what keeps them."""
    path, out = tmp_path / "pad.logb", tmp_path / "pad.csv"
    schema = layout.raw_bus_schema(logb.stream_uuid("t", "can0"), "can0")
    data = np.zeros((2, 8), np.uint8)
    data[:, :2] = 0x11
    data[1, 5] = 0x99  # past its DLC of 2
    with logb.Writer(str(path)) as w:
        cols = {"t": np.array([0, 10]), "id": np.array([0x100, 0x100]), "flags": np.zeros(2, np.uint8),
                "dlc": np.array([2, 2]), "data": data, **{n: np.zeros(2, bool) for n in layout.FLAG_NAMES}}
        w.add_stream(schema).write_batch(cols, axis_base=0)
    assert main(["export", str(path), "--stream", "can0", "-o", str(out)]) == 1
    assert not out.exists() and "1 frames hold non-zero bytes past their DLC" in capsys.readouterr().err

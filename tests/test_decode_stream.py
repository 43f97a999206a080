"""`logb decode` writes its table batch by batch (a merge of every stream's batches by
time): the same CSV bytes and the same Parquet table as sorting the whole decode, for
per-message streams, raw bus + DBC, selections, windows, both layouts, ties in time,
cut and damaged files, and files whose time goes back (decoded whole, still the same)."""

import numpy as np
import pytest

pytest.importorskip("cantools")

from _can_fixtures import dbc, random_frames  # noqa: E402
import logb  # noqa: E402
from logb.can.dbc import compile_dbc  # noqa: E402
from logb.can.record import CanRecorder  # noqa: E402
from logb.cli import decode as cli_decode  # noqa: E402
from logb.cli.main import main  # noqa: E402

DBC = dbc()


def frames(n=4000, seed=3, start=1_700_000_000_000_000):
    rng = np.random.default_rng(seed)
    ids, flags, data = random_frames(rng, n)
    dlc = np.full(n, 8, np.uint8)
    dlc[::13] = 3  # short frames: their signals past the data are missing
    t = np.cumsum(rng.integers(0, 3, n)).astype(np.int64) * 500 + start  # many equal times across messages
    return t, ids, flags, dlc, data


def record(path, fr, attach=True, relative=False):
    compiled = compile_dbc(DBC)
    with logb.Writer(str(path), time_base="relative" if relative else "unix") as w:
        with CanRecorder(w, compiled, batch=256) as rec:
            for lo in range(0, len(fr[0]), 700):
                rec.add(*(x[lo:lo + 700] for x in fr))
        if attach:
            w.attach(compiled.name, "application/x-dbc", compiled.attachment_bytes())
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("stream")
    rec = record(d / "rec.logb", frames())
    data = rec.read_bytes()
    cut = d / "cut.logb"
    cut.write_bytes(data[:len(data) * 2 // 3 + 7])
    hit = bytearray(data)
    hit[len(data) // 3] ^= 0xFF  # one frame's bytes broken: it is lost, the rest decodes
    damaged = d / "damaged.logb"
    damaged.write_bytes(bytes(hit))
    # two recordings one after the other whose device times restart: time goes back
    back = d / "back.logb"
    first = record(d / "a.logb", frames(1500, 1), relative=True).read_bytes()
    second = record(d / "b.logb", frames(1500, 2), relative=True).read_bytes()
    back.write_bytes(first + second[16:])  # `logb cat` semantics
    dbc = d / "given.dbc"
    dbc.write_text(DBC)
    return {"rec": rec, "cut": cut, "damaged": damaged, "back": back, "dbc": dbc}


def both(tmp_path, monkeypatch, capsys, argv, suffix, streamed=True):
    """(exit codes, bytes or tables) of `logb decode argv` batch by batch and whole."""
    monkeypatch.setattr(cli_decode, "BATCH_ROWS", 150)  # many batches of every stream
    monkeypatch.setattr(cli_decode, "WRITE_CELLS", 1500)  # and many writes of a few rows
    monkeypatch.setattr(cli_decode, "GROUP_BYTES_PER_CELL", 0)
    calls = []
    whole = cli_decode._whole
    monkeypatch.setattr(cli_decode, "_whole", lambda *a: calls.append(1) or whole(*a))
    a, b = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    code_a = main(["decode", *map(str, argv), "-o", str(a)])
    assert bool(calls) == (not streamed)
    monkeypatch.setattr(cli_decode, "_stream", lambda path, fmt, f, plan, sv, chosen, sigs, window, args, basis:
                        whole(path, fmt, f, cli_decode.dbc_specs(args.dbc), chosen, sigs, window, args, basis))
    code_b = main(["decode", *map(str, argv), "-o", str(b)])
    out = capsys.readouterr().out.splitlines()
    half = len(out) // 2
    assert [line.replace(str(a), "X") for line in out[:half]] == [line.replace(str(b), "X") for line in out[half:]]
    return (code_a, code_b), a, b


CASES = [
    ("rec", []),
    ("rec", ["--layout", "long"]),
    ("rec", ["--raw", "--time", "relative"]),
    ("rec", ["--dbc", "DBC"]),
    ("rec", ["--dbc", "can0=DBC", "--layout", "long", "--time", "device"]),
    ("rec", ["--messages", "Engine", "Muxed", "--window", "0.2", "0.9"]),
    ("rec", ["--dbc", "DBC", "--signals", "Gear", "Lamp", "--window", "0.1", "0.5"]),
    ("cut", []),  # a cut mirror recording with its DBC: decoded from the raw bus stream
    ("cut", ["--layout", "long"]),
    ("damaged", ["--dbc", "DBC"]),
]


@pytest.mark.parametrize("name,extra", CASES)
def test_csv_streamed_is_the_whole_decode(files, tmp_path, monkeypatch, capsys, name, extra):
    extra = [str(files["dbc"]) if x == "DBC" else x.replace("=DBC", f"={files['dbc']}") for x in extra]
    codes, a, b = both(tmp_path, monkeypatch, capsys, [files[name], *extra], ".csv")
    assert codes[0] == codes[1] == (0 if name == "rec" else 1)
    text = a.read_bytes()
    assert text == b.read_bytes() and text.count(b"\n") > 200


@pytest.mark.parametrize("name,extra", CASES[:7] + CASES[8:])
def test_parquet_streamed_is_the_whole_decode_in_row_groups(files, tmp_path, monkeypatch, capsys, name, extra):
    pq = pytest.importorskip("pyarrow.parquet")
    extra = [str(files["dbc"]) if x == "DBC" else x.replace("=DBC", f"={files['dbc']}") for x in extra]
    codes, a, b = both(tmp_path, monkeypatch, capsys, [files[name], *extra], ".parquet")
    assert codes[0] == codes[1]
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.schema.equals(tb.schema, check_metadata=True)
    assert ta.equals(tb) and ta.num_rows > 200
    assert pq.ParquetFile(a).num_row_groups > 1  # written as it went


def test_time_going_back_is_sorted_whole(files, tmp_path, monkeypatch, capsys):
    codes, a, b = both(tmp_path, monkeypatch, capsys, [files["back"], "--time", "device"], ".csv", streamed=False)
    assert codes == (0, 0) and a.read_bytes() == b.read_bytes()


def test_ties_in_time_between_messages_are_in_the_checked_output(files, tmp_path, monkeypatch, capsys):
    # the merge's tie order (the whole decode's stream order) is exercised, not vacuous
    _, a, _ = both(tmp_path, monkeypatch, capsys, [files["rec"]], ".csv")
    rows = [line.split(",")[:3] for line in a.read_text().splitlines()[1:]]
    ties = {(r[0], r[2]) for r, q in zip(rows, rows[1:]) if r[0] == q[0] and r[2] != q[2]}
    assert len(ties) > 100

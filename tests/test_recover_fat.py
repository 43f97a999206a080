"""logb.fat (a read-only FAT12/16 reader) against volumes MicroPython's own
VfsFat formats and writes on the unix port (tests/firmware/mp_powercut_mkfat.py),
and `logb recover-fat` on a card cut while the firmware writer recorded onto it
(tools/powercut_fs.py)."""

import json
import pathlib
import sys

import pytest

import logb
from logb.cli.main import main as logb_main
from logb.errors import UnreadableInputError
from logb.fat import FatImage, recover

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE / "firmware"))
sys.path.insert(0, str(HERE.parent / "tools"))
import mpreal  # noqa: E402

pytestmark = pytest.mark.single_backend


def lcg(n, seed):
    out = bytearray(n)
    x = seed
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out[i] = x >> 16 & 0xFF
    return bytes(out)


SEEDS = {"/a.logb": 1, "/empty.logb": 2, "/2026-12-02/recording with a long name.logb": 3, "/2026-12-02/B.LOG": 4}


@pytest.mark.parametrize("blocks, kind", [(2048, 12), (40000, 16)])
def test_reader_on_micropython_vfsfat(tmp_path, blocks, kind):
    img = tmp_path / "card.img"
    img.write_bytes(bytes(512 * blocks))
    r = mpreal.run_unix(HERE / "firmware" / "mp_powercut_mkfat.py", HERE / "firmware", img, blocks, heap="1M")
    listed = dict(line[2:].rsplit(" ", 1) for line in r.stdout.splitlines() if line.startswith("F "))
    assert set(listed) == set(SEEDS), r.stdout
    fat = FatImage(img.read_bytes())
    assert fat.kind == kind
    files = {e.path: e for e in fat.entries() if not e.is_dir}
    assert set(files) == set(SEEDS)  # the deleted file is gone, the long name and the folder read
    for path, e in files.items():
        assert e.size == int(listed[path])
        assert fat.read(e) == lcg(e.size, SEEDS[path])


def test_not_fat():
    with pytest.raises(UnreadableInputError):
        FatImage(bytes(4096))


def test_recover_fat_on_cut_cards(tmp_path, capsys):
    import powercut_fs

    st = powercut_fs.Study(tmp_path / "study")
    ref = st.reference("frame", 1000)
    run = st.record("fat", "frame", 1000, tag="rec")
    writes = run.writes()
    gained = 0
    for n in range(run.ready + 1, len(writes), 37):  # odd: FAT's writes per flush come in a fixed cycle
        img = powercut_fs.image_at(writes, st.blocks, n, 0)
        found = [r for r in recover(img) if r.path == "/rec.logb"]
        if not found:
            continue
        plain_bytes = FatImage(img).read(next(e for e in FatImage(img).entries() if e.path == "/rec.logb"))
        plain = powercut_fs.records_of(ref, plain_bytes)
        more = powercut_fs.records_of(ref, found[0].data)  # raises unless a prefix of every stream
        assert found[0].data == ref.bytes[:len(found[0].data)]
        assert more >= plain
        if more > plain:
            gained += 1
            card = tmp_path / "cut.img"
            card.write_bytes(img)
            out = tmp_path / "recovered.logb"
            assert logb_main(["recover-fat", str(card), "-o", str(out), "--json"]) == 0
            rep = json.loads(capsys.readouterr().out)
            assert rep["files"][0]["frames_beyond"] == found[0].frames > 0
            assert out.read_bytes() == found[0].data
            f = logb.LogbFile(out.read_bytes())
            assert sum(s.records for s in f.streams.values()) == more
    # the writer flushes after every frame; a cut between the data sector and the directory entry leaves
    # whole frames past the recorded size: some of the ~50 cuts land there
    assert gained >= 3, gained


def test_recover_fat_never_synced_file(tmp_path):
    """Under the close policy the file is never synced before close: its directory entry
    says 0 bytes and no cluster, while its full pages are on the card in a chain no entry
    reaches. recover-fat follows that orphan chain."""
    import powercut_fs

    st = powercut_fs.Study(tmp_path / "study")
    ref = st.reference("close", 1000)
    run = st.record("fat", "close", 1000, tag="rec")
    writes = run.writes()
    n = run.ready + 2 * (len(writes) - run.ready) // 3
    img = powercut_fs.image_at(writes, st.blocks, n, 0)
    fat = FatImage(img)
    e = next(e for e in fat.entries() if e.path == "/rec.logb")
    assert e.size == 0 and e.cluster == 0 and fat.orphans()
    (r,) = [r for r in recover(fat) if r.path == "/rec.logb"]
    assert r.data == ref.bytes[:len(r.data)]
    # the chain the FAT lists so far (its sector goes out as FatFs moves its window) and the free clusters after
    assert powercut_fs.records_of(ref, r.data) > writes[n - 1][3] // 2  # records appended before the cut

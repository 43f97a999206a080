"""Power cuts through the real filesystem (issue 16): the firmware writer on
the MicroPython 1.28 unix port records a real trace onto VfsFat and VfsLfs2
on a block device that cuts at its N-th block write, whole or torn
(tests/firmware/mp_powercut_bdev.py); each cut card is mounted by MicroPython
and read by the host. tools/powercut_fs.py holds the checks (its docstring);
here a sample of cuts per filesystem and policy, and the device stopping a
real process. The study over every cut: `python tools/powercut_fs.py --full`."""

import sys

import pytest

import fwload

pytestmark = pytest.mark.single_backend

sys.path.insert(0, str(fwload.ROOT / "tools"))
import powercut_fs  # noqa: E402

SAMPLE, TORN = 14, 4


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return powercut_fs.Study(tmp_path_factory.mktemp("powercut_fs"))


@pytest.mark.parametrize("fs", powercut_fs.FILESYSTEMS)
@pytest.mark.parametrize("durability, flush_ms", [("frame", 200), ("segment", 1000), ("close", 1000)])
def test_cuts(study, fs, durability, flush_ms):
    # study() raises on a broken promise: a copy that is not a byte prefix of CPython's run, records not a
    # prefix of a stream's, fewer records or bytes than declared durable, a recover-fat result that is not
    # a prefix or holds fewer records than the file, an uncut run that is not whole
    summary, results, run = powercut_fs.study(study, fs, durability, flush_ms, sample=SAMPLE, torn_sample=TORN,
                                              log=lambda s: None)
    ref = study.reference(durability, flush_ms)
    assert ref.bytes.count(b"LOGBSYNC") >= 4  # a recording of several segments
    assert summary["cuts"] == SAMPLE + TORN and summary["torn"] == TORN
    assert summary["mount_failures"] == 0, [r for r in results if not r["mounted"]]
    before = [r for r in results if r["n"] <= len(run.writes())]  # cut before the last write: never closed
    assert len(before) == SAMPLE - 1 + TORN
    if durability == "close":
        # nothing is declared durable before close, and neither filesystem shows the file's bytes before it
        assert all(r["durable"] == 0 and r["records"] == 0 for r in before), before
    else:
        assert max(r["durable"] for r in before) > 0
    assert summary["flushes"] == len(run.durable) > 0


@pytest.mark.parametrize("fs", powercut_fs.FILESYSTEMS)
def test_device_stops_the_process_at_write_n(study, fs):
    """A process the device really stops at write N (torn or not) made the same writes as the
    uncut run up to there, knows what it had declared durable, and leaves the card the journal
    rebuilds: byte for byte on FAT but for FatFs's clock readings; on littlefs, whose commits pad
    with bytes it never initialised, the same recording once mounted. That card passes the checks."""
    full = study.record(fs, "frame", 1000, tag=f"full-{fs}")
    writes = full.writes()
    ref = study.reference("frame", 1000)
    span = len(writes) - full.ready
    cuts = [(full.ready + span // 3, 0), (full.ready + 2 * span // 3, 77)]
    images = []
    for i, (n, torn) in enumerate(cuts):
        cut = study.record(fs, "frame", 1000, cut=n, torn=torn, tag=f"cut-{fs}-{i}")
        assert cut.cut == (n, writes[n - 1][3])  # the records appended when it stopped, as in the uncut run
        assert cut.durable == [d for d in full.durable if d[0] <= n - 1]
        assert [w[:2] + (len(w[2]),) for w in cut.writes()] == [w[:2] + (len(w[2]),) for w in writes[:n - 1]]
        if fs == "fat":
            assert (powercut_fs.clockless(fs, cut.image.read_bytes())
                    == powercut_fs.clockless(fs, powercut_fs.image_at(writes, study.blocks, n, torn)))
        images.append(cut.image)
    real = study.mount_images(fs, images, tag=f"img-{fs}")
    assert real == study.mount(fs, full, cuts, tag=f"chk-{fs}")
    for (n, torn), m, image in zip(cuts, real, images):
        r = powercut_fs.check_cut(ref, fs, full, writes, n, torn, m, image.read_bytes() if fs == "fat" else None)
        assert r["mounted"] and r["records"] >= r["durable"] > 0

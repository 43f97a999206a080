"""Fuzzing in CI (issue 10, build item 7; tools/fuzz/).

1. The structure-aware mutator keeps CRCs valid and reaches the END→INDEX path.
2. The guard turns an escaping non-Logb error, a CPU hog and an RSS hog into findings.
3. Every finding in corpus/fuzz/ replays through the watchdog (a child under
   RLIMIT_AS / RLIMIT_CPU, both backends): only LogbError, within limits, C and
   Python agreeing. A finding not fixed yet is listed in OPEN and its replay is
   xfail(strict=True), so the fix turns it into a pass that must be acknowledged.
4. A bounded campaign from a fixed seed (deterministic: the same mutants on every
   machine) finds nothing new.
"""

import pathlib
import random
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.fuzz import mutator, seeds, target  # noqa: E402
from tools.fuzz.__main__ import run_mutations  # noqa: E402
from tools.fuzz.watchdog import Watchdog  # noqa: E402

from logb.errors import IndexUnavailableError  # noqa: E402
from logb.scan import FrameRef, FrameScanner  # noqa: E402
from logb.seal import IndexedFile  # noqa: E402

pytestmark = pytest.mark.single_backend  # target.check runs both backends itself

FINDINGS = ROOT / "corpus" / "fuzz"
# corpus/fuzz/<name>.logb -> what it does, while the reader still does it
OPEN = {}
CAMPAIGN_SEED, CAMPAIGN_ITERATIONS = 0, 200  # about a minute of CPU on an idle machine
# The campaign's known open finding (its name in corpus/fuzz), while there is one.
CAMPAIGN_OPEN = None


@pytest.fixture(scope="module")
def dog():
    with Watchdog() as d:
        yield d


def test_parse_encode_round_trips_every_seed():
    for name, data in seeds.seeds():
        assert mutator.encode(mutator.parse(data)) == data, name


CRC_KEEPING = (mutator.op_field, mutator.op_int, mutator.op_bytes, mutator.op_resize, mutator.op_envelope,
               mutator.op_order, mutator.op_schema, mutator.op_bomb, mutator.op_reseal)


@pytest.mark.parametrize("op", CRC_KEEPING, ids=lambda op: op.__name__)
def test_structure_aware_mutants_keep_every_crc_valid(op):
    rng = random.Random(1)
    sealed = dict(seeds.recordings())["sealed"]
    changed = 0
    for _ in range(30):
        pieces = mutator.parse(sealed)
        op(pieces, rng, mutator.Context())
        out = mutator.encode(pieces)
        changed += out != sealed
        events = list(FrameScanner().scan(out))
        frames = [e for e in events if type(e) is FrameRef]
        assert sum(f.end - f.offset for f in frames) == len(out) - 16, "a mutant frame lost its CRC"
    assert changed, f"{op.__name__} never changed the input"


class _Honest(random.Random):
    def random(self):
        return 0.99  # op_reseal lies in an entry below 0.5


def test_reseal_reaches_the_index_path():
    data = dict(seeds.recordings())["unclosed"]
    with pytest.raises(IndexUnavailableError):  # unsealed: no END
        IndexedFile(data)
    pieces = mutator.parse(data)
    mutator.op_reseal(pieces, _Honest(3), mutator.Context())
    out = mutator.encode(pieces)
    with IndexedFile(out) as f:
        assert sorted(s.records for s in f.streams.values()) == [19, 19, 19]


def test_guard_findings(monkeypatch):
    guard = target.Guard()
    assert guard("fine", lambda: 1) == ("ok", 1)
    with pytest.raises(target.Finding, match="exception .*KeyError"):
        guard("boom", lambda: {}["missing"])
    monkeypatch.setattr(target, "STEP_CPU_S", 0.05)
    with pytest.raises(target.Finding, match="cpu"):
        guard("spin", lambda: sum(range(10**7)))
    monkeypatch.setattr(target, "STEP_CPU_S", 5.0)
    if guard.rss_reset:
        monkeypatch.setattr(target, "RSS_LIMIT_MB", target.FRESH_PROCESS_MB + 32)
        with pytest.raises(target.Finding, match="rss"):
            guard("hog", lambda: len(b"x" * (96 << 20)))


@pytest.mark.parametrize("name", sorted(p.stem for p in FINDINGS.glob("*.logb")) or ["(none)"])
def test_fuzz_finding_replays_clean(name, dog, request):
    if name == "(none)":
        pytest.skip("corpus/fuzz/ holds no findings")
    if name in OPEN:
        request.applymarker(pytest.mark.xfail(strict=True, reason=OPEN[name]))
    finding = dog.run((FINDINGS / f"{name}.logb").read_bytes())
    assert finding is None, f"{finding}\n{finding.trace}"


def test_bounded_campaign_finds_nothing_new(tmp_path, request):
    if CAMPAIGN_OPEN:
        request.applymarker(pytest.mark.xfail(strict=True, reason=CAMPAIGN_OPEN))
    for known in FINDINGS.glob("*.txt"):  # known findings are the replay's, not news
        (tmp_path / known.name).write_text(known.read_text(encoding="utf-8"), encoding="utf-8")
    found = run_mutations(CAMPAIGN_SEED, CAMPAIGN_ITERATIONS, None, tmp_path, Watchdog, seeds.seeds,
                          mutator.Context, mutator.mutate, log=lambda *a: None, tries=0)
    assert not found, "\n".join(f"{f}\n    {f.trace}" for f in found)

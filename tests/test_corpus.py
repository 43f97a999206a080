"""The conformance corpus (corpus/, written by tools/make_corpus.py).

1. Regenerating the corpus gives byte-identical fixtures and identical
   expectations, so the committed files cannot drift from their generator.
2. For every fixture, `logb info --json`, `logb dump --records --json` and
   their exit statuses match the expectation written by hand from SPEC.md;
   where an expectation names `strict`, a strict reader raises that error
   (or, for null, reads the fixture without one).

Where the reader disagrees with the spec the expectation is kept and the test
is marked xfail(strict=True) with the disagreement (XFAIL below), so a fix
turns it into an unexpected pass that must be acknowledged here.
"""

import filecmp
import importlib.util
import io
import json
import math
import pathlib

import pytest

import logb
from logb.cli.main import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
GENERATOR = ROOT / "tools" / "make_corpus.py"

NAMES = sorted(p.name[: -len(".expect.json")] for p in CORPUS.glob("*.expect.json"))

# (aspect, fixture) -> a known disagreement between the reader and SPEC.md (a strict
# xfail turns a fix into a failure to remove it here).
XFAIL = {}


def _params(aspect, names=NAMES):
    out = []
    for name in names:
        reason = XFAIL.get((aspect, name))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def _expect(name):
    return json.loads((CORPUS / f"{name}.expect.json").read_text(encoding="utf-8"))


def _cli(*argv):
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_corpus", GENERATOR)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- 1. no drift

def test_corpus_is_populated():
    assert len(NAMES) >= 25
    exits = {_expect(n)["exit"] for n in NAMES}
    assert exits == {0, 1, 2, 3}  # both polarities, and both unreadable kinds
    for name in NAMES:
        data = (CORPUS / f"{name}.logb").read_bytes()
        assert len(data) < 4096 and len(data) == _expect(name)["size"], name


def test_regenerating_gives_identical_corpus(tmp_path):
    _load_generator().build(tmp_path)
    committed = sorted(p.name for p in CORPUS.iterdir() if p.is_file())  # corpus/fuzz/ is the fuzzer's
    regenerated = sorted(p.name for p in tmp_path.iterdir())
    assert regenerated == committed
    match, mismatch, errors = filecmp.cmpfiles(CORPUS, tmp_path, committed, shallow=False)
    assert not mismatch and not errors, f"drifted from tools/make_corpus.py: {mismatch + errors}"


# ---------------------------------------------------------------- 2. the reader against the expectations

def _same(got, want, ulps=0):
    """Strict equality of JSON values: same types (bool is not int, int is not
    float), floats equal (or within `ulps` ulp), NaN equal to NaN."""
    if type(got) is not type(want):
        return False
    if isinstance(want, float):
        if math.isnan(want):
            return math.isnan(got)
        return got == want or (ulps and abs(got - want) <= ulps * math.ulp(want))
    if isinstance(want, list):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    return got == want


def _same_record(got, want, axis_ulps):
    ulps = axis_ulps.get(want["stream"], 0)
    return (got.keys() == want.keys() and _same(got["axis"], want["axis"], ulps)
            and all(_same(got[k], want[k]) for k in want if k != "axis"))


@pytest.mark.parametrize("name", _params("info"))
def test_info(name):
    expect = _expect(name)
    path = str(CORPUS / f"{name}.logb")
    code, out = _cli("info", "--json", path)
    if expect["exit"] in (2, 3):
        assert code == expect["exit"] and out == ""
        with pytest.raises(getattr(logb, expect["error"])):
            logb.LogbFile(path)
        return
    info = json.loads(out)
    got_streams = {s["uuid"]: {"name": s["name"], "records": s["records"], "rejected": s["rejected"]}
                   for s in info["streams"]}
    assert got_streams == expect["streams"]
    assert [[s["start"], s["end"], s["cause"]] for s in info["skipped"]] == expect["skipped"]
    assert info["truncated"] is expect["truncated"]
    assert len(info["sessions"]) == expect["sessions"]
    if "runs" in expect:
        assert [se["runs"] for se in info["sessions"]] == expect["runs"]
    if "rejections" in expect:
        got = {s["uuid"]: [[r["offset"], r["records"]] for r in s["rejections"]] for s in info["streams"]}
        assert got == expect["rejections"]
    if "index" in expect:
        assert [[i["offset"], i["valid"]] for i in info["index"]] == expect["index"]
    if "attachments" in expect:
        got = [{"name": a["name"], "media_type": a["media_type"], "raw_size": a["raw_size"],
                "available": a["problem"] is None} for a in info["attachments"]]
        assert got == expect["attachments"]
    if "lost" in expect:
        assert {s["uuid"]: s["lost"] for s in info["streams"]} == expect["lost"]
    if "lost_sink" in expect:
        assert [se["lost_sink"] for se in info["sessions"]] == expect["lost_sink"]
    noted = {n["offset"] for n in info["notes"]}
    assert set(expect.get("reported", ())) <= noted


def test_sink_loss_expectations_have_both_polarities():
    verdicts = {_expect(n)["verify"] for n in NAMES if "verify" in _expect(n)}
    assert verdicts == {0, 4}


@pytest.mark.parametrize("name", [n for n in NAMES if "verify" in _expect(n)])
def test_verify_reports_sink_losses(name):
    """verify's exit status and its JSON verdict state what the writer could not write (SPEC §4.5)."""
    expect = _expect(name)
    code, out = _cli("verify", "--json", str(CORPUS / f"{name}.logb"))
    assert code == expect["verify"]
    lost = {str(i): n for i, n in enumerate(expect["lost_sink"]) if n}
    assert json.loads(out)["lost_sink"] == lost


@pytest.mark.parametrize("name", _params("info_exit"))
def test_info_exit_status(name):
    code, _out = _cli("info", "--json", str(CORPUS / f"{name}.logb"))
    assert code == _expect(name)["exit"]


# A fixture of 2^16 records (a reader limit's edge) is counted by test_info, not listed record by record.
DUMPED = [n for n in NAMES if _expect(n).get("dump", True)]


@pytest.mark.parametrize("name", _params("dump", DUMPED))
def test_dump_records(name):
    expect = _expect(name)
    code, out = _cli("dump", "--records", "--json", str(CORPUS / f"{name}.logb"))
    if expect["exit"] in (2, 3):
        assert code == expect["exit"] and out == ""
        return
    lines = [json.loads(line) for line in out.splitlines()]
    per_stream = {}
    for line in lines:
        per_stream[line["stream"]] = per_stream.get(line["stream"], 0) + 1
    assert per_stream == {u: s["records"] for u, s in expect["streams"].items() if s["records"]}
    if "records" in expect:
        want = expect["records"]
        assert len(lines) == len(want)
        ulps = expect.get("axis_ulps", {})
        for i, (g, w) in enumerate(zip(lines, want)):
            assert _same_record(g, w, ulps), f"record {i}:\n got  {g}\n want {w}"


@pytest.mark.parametrize("name", _params("dump_exit", DUMPED))
def test_dump_exit_status(name):
    code, _out = _cli("dump", "--records", "--json", str(CORPUS / f"{name}.logb"))
    assert code == _expect(name)["exit"]


ATTACHED = [n for n in NAMES if "attachments" in _expect(n)]


@pytest.mark.parametrize("name", ATTACHED)
def test_attachment_data(name):
    """An available attachment's data is its raw_size bytes; an unavailable one's raises a LogbError."""
    with logb.LogbFile(str(CORPUS / f"{name}.logb")) as f:
        for a, want in zip(f.attachments, _expect(name)["attachments"], strict=True):
            if want["available"]:
                assert len(a.data()) == want["raw_size"]
            else:
                with pytest.raises(logb.LogbError):
                    a.data()


STRICT = [n for n in NAMES if "strict" in _expect(n)]


def test_strict_expectations_have_both_polarities():
    assert {_expect(n)["strict"] is None for n in STRICT} == {True, False}


def _open_and_decode_strictly(path):
    # the reader decodes DATA on demand: a frame rejected while decoding (§8.3 steps 5-9) is met in validate()
    with logb.LogbFile(path, strict=True) as f:
        f.validate()


@pytest.mark.parametrize("name", _params("strict", STRICT))
def test_strict(name):
    """SPEC §10.5: a strict reader stops at the first damage; truncation is never an error."""
    error = _expect(name)["strict"]
    path = str(CORPUS / f"{name}.logb")
    if error is None:
        _open_and_decode_strictly(path)
    else:
        with pytest.raises(getattr(logb, error)):
            _open_and_decode_strictly(path)

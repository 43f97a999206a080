"""BENCHMARKS.md is assembled from marked blocks, one per benchmark script
(tools/benchmd.py): regenerating one block never changes another, nor the
text around them. Checked on the real file; the benchmarks themselves are not
run here (`./run bench` runs them; `tools/bench.py --frames 20000` is a smoke run)."""

import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import benchmd  # noqa: E402

pytestmark = pytest.mark.single_backend

BENCH = ROOT / "BENCHMARKS.md"
OWNERS = {"core": "tools/bench.py", "formats": "tools/bench.py", "can": "tools/bench.py",
          "cbridge": "tools/bench_cbridge.py", "firmware": "firmware/bench/run_bench.py",
          "pull": "tools/bench_pull.py", "verify": "tools/bench_verify.py", "rss": "tools/bench_rss.py",
          "boards": "tools/bench_boards.py", "powercut": "tools/powercut_fs.py", "lake": "tools/bench_lake.py"}


def outside(text):
    """The file with every block's body replaced by its name."""
    return re.sub(r"<!-- ([\w.-]+):begin -->.*?<!-- \1:end -->", r"<\1>", text, flags=re.S)


def test_every_section_has_its_block():
    text = BENCH.read_text(encoding="utf-8")
    got = benchmd.blocks(text)
    assert list(got) == list(benchmd.BLOCKS)
    assert outside(text) == "# Benchmarks\n\n" + "\n\n".join(f"<{n}>" for n in benchmd.BLOCKS) + "\n"
    heads = {n: body.splitlines()[0] for n, body in got.items()}
    assert heads["formats"].startswith("## Bytes per frame") and heads["can"] == "## CAN signals to physical columns"
    assert heads["cbridge"].startswith("## C backend") and heads["firmware"] == "## Firmware writer (MicroPython)"
    assert "## Method" in got["core"] and "## What this shows" in got["core"]


@pytest.mark.parametrize("name", benchmd.BLOCKS)
def test_regenerating_one_block_keeps_everything_else(name, tmp_path):
    text = BENCH.read_text(encoding="utf-8")
    body = benchmd.blocks(text)[name]
    # a no-op regeneration is byte-identical
    assert benchmd.replace(text, name, body) == text
    assert benchmd.replace(text, name, "\n" + body + "\n\n") == text  # edge newlines do not matter
    assert benchmd.replace(text, name, benchmd.block(name, body)) == text  # nor markers the text has
    copy = tmp_path / "B.md"
    copy.write_text(text, encoding="utf-8")
    benchmd.splice(copy, name, body)
    assert copy.read_text(encoding="utf-8") == text
    # new content lands in its block only
    benchmd.splice(copy, name, "## New\n\nfigures")
    new = copy.read_text(encoding="utf-8")
    assert benchmd.blocks(new)[name] == "## New\n\nfigures"
    assert {k: v for k, v in benchmd.blocks(new).items() if k != name} == \
        {k: v for k, v in benchmd.blocks(text).items() if k != name}
    assert outside(new) == outside(text)


def test_missing_blocks_go_where_they_belong_and_legacy_markers_are_read():
    text = "# Benchmarks\n\n" + benchmd.block("core", "c") + "\n\n" + benchmd.block("firmware", "f") + "\n"
    t = benchmd.replace(text, "can", "k")
    assert list(benchmd.blocks(t)) == ["core", "can", "firmware"]
    t = benchmd.replace(t, "pull", "p")  # a block of a name this module does not know: at the end
    assert list(benchmd.blocks(t)) == ["core", "can", "firmware", "pull"]
    assert benchmd.replace(t, "pull", "p") == t
    old = "# Benchmarks\n\nhand-written\n\n<!-- cbridge:start -->\n## C\n\nx\n\n<!-- cbridge:end -->\n\ntail\n"
    assert benchmd.blocks(old) == {"cbridge": "## C\n\nx"}
    assert benchmd.replace(old, "cbridge", "## C\n\ny") == \
        "# Benchmarks\n\nhand-written\n\n<!-- cbridge:begin -->\n## C\n\ny\n<!-- cbridge:end -->\n\ntail\n"
    for bad in ("<!-- can:begin -->\nx\n", "<!-- can:end -->\n<!-- can:begin -->\n",
                "<!-- can:begin -->\n<!-- can:begin -->\n<!-- can:end -->\n"):
        with pytest.raises(ValueError):
            benchmd.replace(bad, "can", "y")


def test_a_new_file_gets_the_title(tmp_path):
    p = tmp_path / "B.md"
    benchmd.splice(p, "firmware", "## F\n")
    benchmd.splice(p, "core", "intro")
    assert p.read_text() == "# Benchmarks\n\n<!-- core:begin -->\nintro\n<!-- core:end -->\n\n" \
        "<!-- firmware:begin -->\n## F\n<!-- firmware:end -->\n"


@pytest.mark.parametrize("name", benchmd.BLOCKS)
def test_each_block_has_an_owner_that_splices_it(name):
    src = (ROOT / OWNERS[name]).read_text(encoding="utf-8")
    assert "benchmd" in src and f'"{name}"' in src
    bench = (ROOT / "tools" / "bench.py").read_text(encoding="utf-8")
    assert "write_text" not in bench  # tools/bench.py never rewrites the whole file
    for script in ("bench_cbridge", "run_bench.py", "bench_formats", "bench_can", "bench_verify", "bench_rss",
                   "bench_pull", "bench_boards", "powercut_fs", "bench_lake"):
        assert script in bench


def test_bench_chooses_blocks():
    import bench

    assert bench.chosen_blocks(None, None) == set(benchmd.BLOCKS)
    assert bench.chosen_blocks("core,can", None) == {"core", "can"}
    assert bench.chosen_blocks(None, "firmware") == set(benchmd.BLOCKS) - {"firmware"}
    with pytest.raises(SystemExit):
        bench.chosen_blocks("nope", None)


def test_firmware_section_writer_keeps_the_rest(tmp_path):
    sys.path.insert(0, str(ROOT / "firmware" / "bench"))
    import run_bench

    text = BENCH.read_text(encoding="utf-8")
    copy = tmp_path / "B.md"
    copy.write_text(text, encoding="utf-8")
    run_bench.write_section(benchmd.blocks(text)["firmware"], copy)
    assert copy.read_text(encoding="utf-8") == text

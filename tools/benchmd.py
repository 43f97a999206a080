"""BENCHMARKS.md is built from marked blocks, one per benchmark script:

    <!-- NAME:begin -->
    ## A section
    ...
    <!-- NAME:end -->

Each script owns its block and replaces it in place with `splice(path, NAME,
text)`; every byte outside it (the title, the other blocks, anything written
by hand between blocks) stays as it is, so rerunning one script never drops
another's section. A block missing from the file is inserted where BLOCKS
puts it. The owners (tools/bench.py runs them all):

    core      tools/bench.py             pure-Python backend vs its peers
    formats   tools/bench_formats.py     bytes per frame of CAN traces
    can       tools/bench_can.py         CAN signals to physical columns
    cbridge   tools/bench_cbridge.py     the C backend (issue 3)
    verify    tools/bench_verify.py      verify against its floors (issue 13)
    rss       tools/bench_rss.py         peak RSS decoding a file 10x a worker's budget (issue 13)
    firmware  firmware/bench/run_bench.py  the MicroPython writer (issue 5)
    pull      tools/bench_pull.py        pull over the serial link vs raw pyserial (issue 6)
    boards    tools/bench_boards.py      lossless bus load per board profile (issue 11)
    powercut  tools/powercut_fs.py       power cuts through FAT and littlefs (issue 16)

Further scripts add their name here (a block of an unknown name is kept and
can be spliced too; it is inserted at the end when new).
"""

import pathlib
import re

BLOCKS = ("core", "formats", "can", "cbridge", "verify", "rss", "firmware", "pull", "boards", "powercut", "lake")
TITLE = "# Benchmarks\n"
_LEGACY_BEGIN = {"cbridge": "start"}  # markers older scripts wrote: <!-- cbridge:start -->


def markers(name):
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def _span(text, name):
    """(start, end) of block `name` in text, markers included, or None. ValueError when
    its markers are not exactly one begin followed by one end."""
    end = markers(name)[1]
    begins = [markers(name)[0]]
    if name in _LEGACY_BEGIN:
        begins.append(f"<!-- {name}:{_LEGACY_BEGIN[name]} -->")
    hits = [(text.index(b), b) for b in begins if b in text]
    if not hits and end not in text:
        return None
    if len(hits) != 1 or text.count(hits[0][1]) != 1 or text.count(end) != 1 or hits[0][0] > text.index(end):
        raise ValueError(f"BENCHMARKS.md: block {name!r} needs one {begins[0]} before one {end}")
    return hits[0][0], text.index(end) + len(end)


def block(name, body):
    """The marked block of a section's text (markers it already has are not repeated)."""
    begin, end = markers(name)
    body = body.strip("\n")
    legacy = _LEGACY_BEGIN.get(name)
    for b in (begin,) + ((f"<!-- {name}:{legacy} -->",) if legacy else ()):
        if body.startswith(b):
            body = body[len(b):].strip("\n")
    if body.endswith(end):
        body = body[:-len(end)].strip("\n")
    return f"{begin}\n{body}\n{end}"


def blocks(text):
    """{name: body} of every block in text (body without its markers and edge newlines)."""
    out = {}
    for m in re.finditer(r"<!-- ([\w.-]+):(?:begin|start) -->", text):
        name = m.group(1)
        span = _span(text, name)
        if span is None or name in out:
            continue
        inner = text[span[0]:span[1]]
        out[name] = inner[inner.index("-->") + 3:inner.rindex("<!--")].strip("\n")
    return out


def replace(text, name, body):
    """text with block `name` set to body: in place, else inserted before the first
    block that BLOCKS puts after it, else appended."""
    new = block(name, body)
    span = _span(text, name)
    if span is not None:
        return text[:span[0]] + new + text[span[1]:]
    later = BLOCKS[BLOCKS.index(name) + 1:] if name in BLOCKS else ()
    for other in later:
        s = _span(text, other)
        if s is not None:
            return text[:s[0]] + new + "\n\n" + text[s[0]:]
    return text.rstrip("\n") + "\n\n" + new + "\n"


def splice(path, name, body):
    """Replace block `name` of the file at `path` (created with the title if missing)."""
    path = pathlib.Path(path)
    text = path.read_text(encoding="utf-8") if path.exists() else TITLE
    path.write_text(replace(text, name, body), encoding="utf-8")

"""Compiling a DBC loads cantools.database alone, not cantools/__init__ (logb.can.dbc.cantools_database).

cantools' __init__ imports cantools.tester, hence python-can and, through can.io,
asammdf, pandas and pyarrow: most of a raw bus decode's peak RSS (BENCHMARKS.md
`rss`). Each case runs in a fresh interpreter, where nothing has imported them yet.
"""

import json
import subprocess
import sys

import pytest

pytest.importorskip("cantools")

from _can_fixtures import dbc  # noqa: E402

HEAVY = ("cantools.tester", "can", "asammdf", "pandas", "pyarrow")
COMPILE = f"""
import json, sys
from logb.can.dbc import compile_dbc
compiled = compile_dbc({dbc()!r})
loaded = [m for m in {HEAVY!r} if m in sys.modules]
"""


def fresh(code):
    """The JSON that `code` prints last, run in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_compile_dbc_leaves_python_can_pandas_pyarrow_unloaded():
    got = fresh(COMPILE + """
print(json.dumps({"loaded": loaded, "entries": len(compiled.entries),
                  "database": type(compiled.database).__module__}))
""")
    assert got["loaded"] == [] and got["entries"] > 0
    assert got["database"] == "cantools.database.can.database"


def test_cantools_is_whole_when_asked_for_after_compile_dbc():
    got = fresh(COMPILE + f"""
import cantools
from cantools import tester
from importlib.metadata import version
db = cantools.database.load_string({dbc()!r}, database_format="dbc")
print(json.dumps({{"loaded": loaded, "version": cantools.__version__ == version("cantools"),
                  "tester": tester.Tester.__name__, "same": cantools.database is sys.modules["cantools.database"],
                  "messages": sorted(m.name for m in db.messages),
                  "compiled": sorted({{e.message for e in compiled.entries}})}}))
""")
    assert got["loaded"] == []
    assert got["version"] and got["tester"] == "Tester" and got["same"]
    assert got["messages"] == got["compiled"]


def test_parse_errors_are_cantools_errors_the_cli_recognises():
    # logb.cli.common.dbc_errors tells them by sys.modules["cantools"].database's error classes
    got = fresh("""
import json, sys
from logb.can.dbc import compile_dbc
try:
    compile_dbc('VERSION ""\\nBO_ 1 M: 8 X\\n SG_ S : 0|8@1+ (1,0) [0|0] "" X\\nBO_ oops\\n')
except Exception as exc:
    cantools = sys.modules["cantools"]
    print(json.dumps(isinstance(exc, (cantools.database.errors.Error,
                                      cantools.database.UnsupportedDatabaseFormatError))))
""")
    assert got is True

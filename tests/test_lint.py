"""The lint gate: ruff, configured in host/pyproject.toml, finds nothing in the
tree's Python (no unused imports, no undefined names, the 120-column style).
The test set-up installs ruff (the `test` extra), so a missing ruff fails."""

import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINTED = ("host", "firmware", "tools", "tests", "boards")

pytestmark = pytest.mark.single_backend


def test_ruff_finds_nothing():
    if importlib.util.find_spec("ruff") is None:
        pytest.fail("ruff is not installed: `./run test` installs it (host/pyproject.toml, the test extra)")
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                        "--config", "host/pyproject.toml", *LINTED], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(r.stdout + r.stderr, pytrace=False)

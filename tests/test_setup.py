"""`./run` sets up, per command, what that command needs: it sources a
tools/setup.d step only for the commands its "# for:" line names, so a step
without that line would silently never run."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMANDS = {"demo", "test", "bench"}  # ./run's

pytestmark = pytest.mark.single_backend


def serves(step):
    (line,) = [x for x in step.read_text().splitlines() if x.startswith("# for: ")]
    return set(line.removeprefix("# for: ").split())


@pytest.mark.parametrize("step", sorted((ROOT / "tools" / "setup.d").glob("*.sh")), ids=lambda p: p.name)
def test_every_setup_step_names_the_commands_it_serves(step):
    assert serves(step) and serves(step) <= COMMANDS


def test_the_demo_sets_up_no_cross_compilers():
    assert "demo" not in serves(ROOT / "tools" / "setup.d" / "20-cbridge.sh")

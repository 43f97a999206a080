"""Every test runs under both backends of logb (logb._backend): the C kernels
(cbridge/, via cffi) and pure Python, in one pytest run — test ids end in
[c] or [python].

A module marked `pytestmark = pytest.mark.single_backend` runs once (its tests
pick backends themselves, or do not touch logb's hot paths). The [c] half
fails — it is not skipped — when the C backend cannot be loaded, unless
LOGB_BACKEND=python asked for the pure-Python backend only.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

from logb import _backend

# A @given method of a test class is called from one instance per backend;
# Hypothesis flags that as "differing executors". Each call is independent of
# its instance here, so the check is silenced for the run.
settings.register_profile("logb-backends", suppress_health_check=[HealthCheck.differing_executors])
settings.load_profile("logb-backends")

BACKENDS = ("c", "python")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "single_backend: run once, not once per logb backend (the test picks backends itself)")


def pytest_generate_tests(metafunc):
    if "logb_backend" in metafunc.fixturenames and not metafunc.definition.get_closest_marker("single_backend"):
        metafunc.parametrize("logb_backend", BACKENDS, indirect=True, scope="module")


@pytest.fixture(autouse=True, scope="module")
def logb_backend(request):
    name = getattr(request, "param", None)
    if name is None:  # single_backend module
        yield _backend.current
        return
    if name == "c" and _backend.load_c() is None:
        if os.environ.get(_backend.ENV, "").strip().lower() == "python":
            pytest.skip("LOGB_BACKEND=python: the C backend is not tested")
        pytest.fail(f"the C backend should load but does not: {_backend.load_error}", pytrace=False)
    with _backend.using(name):
        yield name

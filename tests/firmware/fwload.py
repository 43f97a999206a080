"""Import the firmware package (firmware/logb, a MicroPython package named
`logb`) under CPython as `fwlogb`, next to the host package `logb`."""

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIRMWARE = ROOT / "firmware"
PACKAGE = FIRMWARE / "logb"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def load(name="fwlogb"):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, PACKAGE / "__init__.py",
                                                  submodule_search_locations=[str(PACKAGE)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def submodule(mod):
    load()
    return importlib.import_module("fwlogb." + mod)

"""Build glue for the C kernels (cbridge/, reached through cffi).

Everything else about the package is in pyproject.toml. `pip install host`
and `pip install -e host` compile `logb._cbridge` from ../cbridge with the
system C compiler; the pure-Python backend stays in the package (LOGB_BACKEND).
"""

from setuptools import setup

setup(cffi_modules=["../cbridge/cffi_build.py:ffibuilder"])

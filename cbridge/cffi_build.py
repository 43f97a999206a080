"""cffi builder for `logb._cbridge` (out-of-line API mode, hand-written cdef).

Used by host/setup.py (`cffi_modules`), so a plain `pip install host` (or
`pip install -e host`) compiles the kernels into the package; there is no
separate build step. Run directly (`python cbridge/cffi_build.py`) it builds
the module into the current directory, for poking at it.

The cdef below is written by hand and must match logb_cbridge.h; the C
compiler checks every declaration against the real header when the module is
built, and tests/test_cbridge.py checks that every function the header
declares is in the cdef.
"""

import os
import pathlib
import sysconfig

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = ["crc32c.c", "crc32c_hw.c", "bits.c", "transpose.c", "tails.c"]

CDEF = """
uint32_t logb_crc32c_sw(uint32_t crc, const uint8_t *p, size_t n);
uint32_t logb_crc32c_hw(uint32_t crc, const uint8_t *p, size_t n);
int logb_crc32c_hw_available(void);
const char *logb_crc32c_hw_name(void);

#define LOGB_KIND_SIZE_MASK 15
#define LOGB_KIND_SIGNED 16
#define LOGB_KIND_BOOL 32
#define LOGB_OK 0
#define LOGB_EINVAL -1

int logb_extract(const uint8_t *base, size_t n, size_t rs, size_t bs,
                 uint32_t bit_offset, uint32_t width, int big, int kind,
                 void *out, size_t ostride);
int logb_pack(uint8_t *base, size_t n, size_t rs, size_t bs,
              uint32_t bit_offset, uint32_t width, int big, int kind,
              const void *in, size_t istride);
void logb_gather(const uint8_t *base, size_t n, size_t rs, size_t bs,
                 size_t byte0, size_t nbytes, uint8_t *out);
void logb_scatter(uint8_t *base, size_t n, size_t rs, size_t bs,
                  size_t byte0, size_t nbytes, const uint8_t *in);

void logb_transpose(const uint8_t *src, uint8_t *dst, size_t n, size_t s);
void logb_untranspose(const uint8_t *src, uint8_t *dst, size_t n, size_t s);

#define LOGB_TAIL_PREFIX 1
#define LOGB_TAIL_PAST_END 2
#define LOGB_TAIL_LEFTOVER 3
int logb_walk_tails(const uint8_t *data, size_t len, size_t pos, size_t n, size_t v,
                    uint64_t *offs, uint32_t *lens, size_t *end);
"""


def _compile_args():
    if sysconfig.get_platform().startswith("win"):
        return ["/O2"]
    # -O3: the specialised field loops rely on it (load merging, vectorisation); C99 like firmware.
    return ["-O3", "-std=c99", "-Wall", "-Wextra"] + (
        ["-Werror"] if os.environ.get("LOGB_CBRIDGE_WERROR") else [])


def _rel(name):
    # setuptools wants paths relative to setup.py's directory (the cwd of a build).
    return os.path.relpath(HERE / name).replace(os.sep, "/")


ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "logb._cbridge",
    '#include "logb_cbridge.h"',
    sources=[_rel(s) for s in SOURCES],
    include_dirs=[_rel(".")],
    extra_compile_args=_compile_args(),
    depends=[_rel("logb_cbridge.h"), _rel("crc32c_tables.h")],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)

"""The MicroPython glue of the C kernels (cbridge/micropython/: the user C module
modlogbc.c, the dynamic native module natmod/logbc_natmod.c, both on
logbc_glue.h) cannot be built here: that needs a MicroPython source tree. What
is checked instead: the three files compile — C99, -pedantic -Wall -Wextra
-Werror — against a small stand-in for the parts of MicroPython's API they use
(py/runtime.h, py/dynruntime.h, below), both register the same names, and
`crc32c_update` keeps the contract of firmware/logb/crc.py: the register
[low 24 bits, high 8 bits] in an array('I') continued in place over
buf[start:end], bounds checked, nothing allocated. The stand-in follows
MicroPython's signatures (mp_get_buffer_raise, mp_obj_get_int,
MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN, ...) but is not MicroPython."""

import pathlib
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.single_backend

ROOT = pathlib.Path(__file__).resolve().parent.parent
CB = ROOT / "cbridge"
MP = CB / "micropython"
CC = shutil.which("cc") or shutil.which("gcc")
STRICT = ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"]

RUNTIME_H = r"""
/* Stand-in for the parts of MicroPython's py/runtime.h the glue uses (tests only). */
#ifndef MOCK_PY_RUNTIME_H
#define MOCK_PY_RUNTIME_H
#include <stddef.h>
#include <stdint.h>
typedef intptr_t mp_int_t;
typedef uintptr_t mp_uint_t;
typedef void *mp_obj_t;
typedef struct { void *buf; size_t len; int typecode; } mp_buffer_info_t;
#define MP_BUFFER_READ (1)
#define MP_BUFFER_WRITE (2)
#define MP_BUFFER_RW (MP_BUFFER_READ | MP_BUFFER_WRITE)
/* objects of the harness: an int, or a buffer with a typecode */
typedef struct { int is_buffer; mp_int_t value; mp_buffer_info_t buffer; } mock_obj_t;
__attribute__((noreturn)) void mock_raise(const char *msg);
mp_obj_t mock_new_int(mp_uint_t v);
#define mp_const_none ((mp_obj_t)0)
#define MP_ERROR_TEXT(s) (s)
#define mp_raise_ValueError(msg) mock_raise(msg)
static inline mp_int_t mp_obj_get_int(mp_obj_t o) {
    if (((mock_obj_t *)o)->is_buffer) mock_raise("TypeError: int expected");
    return ((mock_obj_t *)o)->value;
}
#define mp_obj_get_int_truncated(o) ((mp_uint_t)mp_obj_get_int(o))
#define mp_obj_new_int_from_uint(v) mock_new_int(v)
static inline void mp_get_buffer_raise(mp_obj_t o, mp_buffer_info_t *b, int flags) {
    (void)flags;
    if (!((mock_obj_t *)o)->is_buffer) mock_raise("TypeError: buffer expected");
    *b = ((mock_obj_t *)o)->buffer;
}
typedef struct { int n_args_min, n_args_max; mp_obj_t (*fun)(size_t, const mp_obj_t *); } mock_fun_t;
#define MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(obj, lo, hi, f) const mock_fun_t obj = {(lo), (hi), (f)}
/* module definition (modlogbc.c) */
typedef struct { const char *qstr; const void *ptr; mp_int_t small_int; } mock_rom_t;
typedef struct { mock_rom_t key, value; } mp_rom_map_elem_t;
#define MP_ROM_QSTR(q) {#q, 0, 0}
#define MP_ROM_PTR(p) {0, (p), 0}
#define MP_ROM_INT(i) {0, 0, (i)}
typedef struct { const mp_rom_map_elem_t *table; size_t len; } mp_obj_dict_t;
#define MP_DEFINE_CONST_DICT(name, tab) const mp_obj_dict_t name = {(tab), sizeof(tab) / sizeof((tab)[0])}
typedef struct { const void *type; } mp_obj_base_t;
typedef struct { mp_obj_base_t base; mp_obj_dict_t *globals; } mp_obj_module_t;
extern const int mp_type_module;
#define MP_REGISTER_MODULE(q, m) const char *mock_module_name = #q; const mp_obj_module_t *mock_module = &(m)
#endif
"""

DYNRUNTIME_H = r"""
/* Stand-in for py/dynruntime.h (the natmod's runtime), tests only. */
#include "py/runtime.h"
typedef struct { int unused; } mp_obj_fun_bc_t;
void mock_store_global(const char *qstr, const void *obj);
#define MP_DYNRUNTIME_INIT_ENTRY (void)self; (void)n_args; (void)n_kw; (void)args;
#define MP_DYNRUNTIME_INIT_EXIT return mp_const_none;
#define mp_store_global(q, o) mock_store_global(#q, (o))
#define MP_OBJ_FROM_PTR(p) ((const void *)(p))
#define MP_OBJ_NEW_SMALL_INT(i) ((const void *)(intptr_t)(i))
"""

HARNESS_C = r"""
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include "py/dynruntime.h"
#include "logb_cbridge.h"

extern const char *mock_module_name;
extern const mp_obj_module_t *mock_module;
mp_obj_t mpy_init(mp_obj_fun_bc_t *self, size_t n_args, size_t n_kw, mp_obj_t *args);
const int mp_type_module = 0;

static jmp_buf env;
static const char *raised;
static int ints_made;
static mock_obj_t int_pool[64];
__attribute__((noreturn)) void mock_raise(const char *msg) { raised = msg; longjmp(env, 1); }
mp_obj_t mock_new_int(mp_uint_t v) {
    mock_obj_t *o = &int_pool[ints_made++ % 64]; o->is_buffer = 0; o->value = (mp_int_t)v; return o;
}

static const char *stored[16];
static const void *stored_obj[16];
static int n_stored;
void mock_store_global(const char *q, const void *o) { stored[n_stored] = q; stored_obj[n_stored++] = o; }

static const mock_fun_t *module_fun(const char *qstr) {
    for (size_t i = 0; i < mock_module->globals->len; i++) {
        const mp_rom_map_elem_t *e = &mock_module->globals->table[i];
        if (e->key.qstr && strcmp(e->key.qstr, qstr) == 0) return (const mock_fun_t *)e->value.ptr;
    }
    return NULL;
}
static const mock_fun_t *natmod_fun(const char *qstr) {
    for (int i = 0; i < n_stored; i++) if (strcmp(stored[i], qstr) == 0) return (const mock_fun_t *)stored_obj[i];
    return NULL;
}
static mock_obj_t num(mp_int_t v) { mock_obj_t o; memset(&o, 0, sizeof o); o.value = v; return o; }
static mock_obj_t buf(void *p, size_t n, int typecode) {
    mock_obj_t o; memset(&o, 0, sizeof o);
    o.is_buffer = 1; o.buffer.buf = p; o.buffer.len = n; o.buffer.typecode = typecode; return o;
}
/* crc32c_update(data, start, end, st) through a function object; 0, or 1 if it raised */
static int update(const mock_fun_t *f, const uint8_t *data, size_t len, mp_int_t start, mp_int_t end,
                  unsigned int *st, size_t st_bytes, int typecode) {
    mock_obj_t a0 = buf((void *)data, len, 'B'), a1 = num(start), a2 = num(end), a3 = buf(st, st_bytes, typecode);
    const mp_obj_t args[4] = {&a0, &a1, &a2, &a3};
    raised = NULL;
    if (setjmp(env)) return 1;
    if (f->n_args_min != 4 || f->n_args_max != 4 || f->fun(4, args) != mp_const_none) return 2;
    return 0;
}
static uint32_t finish(const unsigned int *st) { return ((uint32_t)(st[1] ^ 0xFFu) << 24) | (st[0] ^ 0xFFFFFFu); }

int main(void) {
    static const char *names[] = {"MP_QSTR_crc32c", "MP_QSTR_crc32c_update", "MP_QSTR_extract", "MP_QSTR_pack",
                                  "MP_QSTR_transpose", "MP_QSTR_untranspose", "MP_QSTR_SIGNED", "MP_QSTR_BOOL"};
    mpy_init(NULL, 0, 0, NULL);
    if (strcmp(mock_module_name, "MP_QSTR_logbc") != 0) { printf("module name %s\n", mock_module_name); return 1; }
    if ((size_t)n_stored != sizeof names / sizeof names[0]
        || mock_module->globals->len != 1 + sizeof names / sizeof names[0]) {
        printf("names: natmod %d, module %d\n", n_stored, (int)mock_module->globals->len); return 1;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(stored[i], names[i]) != 0 || strcmp(mock_module->globals->table[i + 1].key.qstr, names[i]) != 0) {
            printf("name %d: %s / %s, want %s\n", (int)i, stored[i], mock_module->globals->table[i + 1].key.qstr,
                   names[i]);
            return 1;
        }
    }
    const mock_fun_t *funs[2] = {module_fun("MP_QSTR_crc32c_update"), natmod_fun("MP_QSTR_crc32c_update")};
    uint8_t data[300];
    for (int i = 0; i < 300; i++) data[i] = (uint8_t)(i * 73 + 11);
    for (int k = 0; k < 2; k++) {
        const mock_fun_t *f = funs[k];
        if (!f) { printf("no crc32c_update (%d)\n", k); return 1; }
        unsigned int st[2] = {0xFFFFFFu, 0xFFu};
        if (update(f, (const uint8_t *)"123456789", 9, 0, 9, st, sizeof st, 'I') || finish(st) != 0xE3069283u) {
            printf("check value %08x\n", (unsigned)finish(st)); return 1;
        }
        int before = ints_made;
        for (int off = 0; off < 9; off++) {
            for (int n = 0; n + off <= 300; n += 7) {
                /* in pieces, chained, equals one pass of the kernel */
                unsigned int s2[3] = {0xFFFFFFu, 0xFFu, 0xABCDu};
                int mid = off + n / 3;
                if (update(f, data, 300, off, mid, s2, sizeof s2, 'I')
                    || update(f, data, 300, mid, off + n, s2, sizeof s2, 'I')) {
                    printf("raised %s\n", raised); return 1;
                }
                if (finish(s2) != logb_crc32c_sw(0, data + off, (size_t)n)
                    || s2[0] > 0xFFFFFFu || s2[1] > 0xFFu || s2[2] != 0xABCDu) {
                    printf("off %d n %d: %08x\n", off, n, (unsigned)finish(s2)); return 1;
                }
            }
        }
        if (ints_made != before) { printf("allocated\n"); return 1; }
        /* bounds and the state's type */
        unsigned int s3[2] = {0xFFFFFFu, 0xFFu};
        unsigned char bytes8[8];
        if (update(f, data, 300, 5, 4, s3, sizeof s3, 'I') != 1 || update(f, data, 300, -1, 4, s3, sizeof s3, 'I') != 1
            || update(f, data, 300, 0, 301, s3, sizeof s3, 'I') != 1 || update(f, data, 300, 0, 1, s3, 4, 'I') != 1
            || update(f, data, 300, 0, 1, (unsigned int *)bytes8, 8, 1) != 1
            || update(f, data, 300, 0, 1, s3, sizeof s3, 'H') != 1
            || s3[0] != 0xFFFFFFu || s3[1] != 0xFFu || update(f, data, 300, 300, 300, s3, sizeof s3, 'I') != 0) {
            printf("bounds not checked (%d)\n", k); return 1;
        }
    }
    printf("OK\n");
    return 0;
}
"""


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_glue_compiles_registers_and_keeps_the_crc_contract(tmp_path):
    (tmp_path / "py").mkdir()
    (tmp_path / "py" / "runtime.h").write_text(RUNTIME_H)
    (tmp_path / "py" / "dynruntime.h").write_text(DYNRUNTIME_H)
    (tmp_path / "harness.c").write_text(HARNESS_C)
    exe = tmp_path / "glue"
    srcs = [MP / "logbc" / "modlogbc.c", MP / "natmod" / "logbc_natmod.c", tmp_path / "harness.c"] + \
        [CB / n for n in ("crc32c.c", "bits.c", "transpose.c", "tails.c")]
    cmd = [CC, *STRICT, "-O1", f"-I{tmp_path}", f"-I{MP}", f"-I{CB}", "-o", str(exe), *map(str, srcs)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr


def test_firmware_hook_asks_for_what_the_glue_provides():
    crc_py = (ROOT / "firmware" / "logb" / "crc.py").read_text()
    glue = (MP / "logbc_glue.c").read_text()
    assert "import logbc" in crc_py and "logbc.crc32c_update" in crc_py
    assert "MP_QSTR_logbc" in (MP / "logbc" / "modlogbc.c").read_text()
    assert "MOD = logbc" in (MP / "natmod" / "Makefile").read_text()
    assert "logbc_crc32c_update_obj, 4, 4" in glue
    readme = (MP / "README.md").read_text()
    assert "crc32c_update" in readme

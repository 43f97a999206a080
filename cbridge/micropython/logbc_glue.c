// MicroPython bindings of the cbridge kernels, shared by the user C module
// (logbc/modlogbc.c, built into a firmware) and the dynamic native module
// (natmod/logbc_natmod.c, a .mpy loaded at run time): each #includes this file
// after its runtime header ("py/runtime.h" or "py/dynruntime.h"), so it is
// not compiled on its own. It is a .c, not a .h, for the firmware build:
// makeqstrdefs.py attributes the MP_ERROR_TEXT strings it collects to a .c
// source, and fails on them in a header. Every buffer is bounds-checked
// before the kernel runs; nothing here allocates.
//
// Python API (module `logbc`):
//   crc32c(data, crc=0) -> int                  CRC-32C (portable slice-by-8 / bytewise)
//   crc32c_update(buf, start, end, st) -> None  the firmware's hook (firmware/logb/crc.py):
//                                               continue the register st = array('I',
//                                               [low 24 bits, high 8 bits]) over
//                                               buf[start:end], in place; allocates nothing
//   extract(records, n, rs, bs, bit_offset, width, big, kind, out, ostride)
//   pack(records, n, rs, bs, bit_offset, width, big, kind, values, istride)
//   transpose(src, dst, n, s) / untranspose(src, dst, n, s)
//   SIGNED, BOOL                                 kind flags (or-ed with element size 1/2/4/8)
// Byte j of record i is records[i*rs + j*bs]: rs=S, bs=1 for row-major records.
#include "logb_cbridge.h"

static size_t logbc_size(mp_obj_t o) {
    mp_int_t v = mp_obj_get_int(o);
    if (v < 0) {
        mp_raise_ValueError(MP_ERROR_TEXT("negative size"));
    }
    return (size_t)v;
}

// Bytes [0, need) must lie inside the buffer.
static void logbc_need(const mp_buffer_info_t *b, size_t need) {
    if (need > b->len) {
        mp_raise_ValueError(MP_ERROR_TEXT("buffer too small"));
    }
}

// Byte span one field of n records touches: 1 + the last byte's index.
static size_t logbc_span(size_t n, size_t rs, size_t bs, uint32_t off, uint32_t width) {
    if (width == 0 || width > 64) {
        mp_raise_ValueError(MP_ERROR_TEXT("width must be 1..64"));
    }
    size_t last_byte = (off + width - 1) / 8;
    return n ? (n - 1) * rs + last_byte * bs + 1 : 0;
}

static mp_obj_t logbc_crc32c(size_t n_args, const mp_obj_t *args) {
    mp_buffer_info_t b;
    mp_get_buffer_raise(args[0], &b, MP_BUFFER_READ);
    uint32_t crc = n_args > 1 ? (uint32_t)mp_obj_get_int_truncated(args[1]) : 0;
    return mp_obj_new_int_from_uint(logb_crc32c_sw(crc, (const uint8_t *)b.buf, b.len));
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(logbc_crc32c_obj, 1, 2, logbc_crc32c);

// crc32c_update(buf, start, end, st): the contract of firmware/logb/crc.py's `update`.
// st is an array('I') whose first two items are the running CRC register (not
// final-xored; crc.begin() sets [0xFFFFFF, 0xFF]) as its low 24 and high 8 bits, so
// that Python only ever sees small ints: on a 32-bit port an int of 2**30 or more is
// a heap object, which crc32c() above returns. The register continues over
// buf[start:end] and goes back into st; the result is None. No allocation: the
// arguments are small ints and buffers, the array is written through its buffer.
static mp_obj_t logbc_crc32c_update(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    mp_buffer_info_t b, s;
    mp_get_buffer_raise(args[0], &b, MP_BUFFER_READ);
    mp_int_t start = mp_obj_get_int(args[1]), end = mp_obj_get_int(args[2]);
    if (start < 0 || end < start || (size_t)end > b.len) {
        mp_raise_ValueError(MP_ERROR_TEXT("start/end outside the buffer"));
    }
    mp_get_buffer_raise(args[3], &s, MP_BUFFER_RW);
    // 'I' items are C unsigned ints: 32 bits on every MicroPython port
    if (s.typecode != 'I' || sizeof(unsigned int) != sizeof(uint32_t) || s.len < 2 * sizeof(unsigned int)) {
        mp_raise_ValueError(MP_ERROR_TEXT("st must be array('I') of 2"));
    }
    unsigned int *st = (unsigned int *)s.buf;
    uint32_t reg = ((uint32_t)st[0] & 0xFFFFFFu) | (((uint32_t)st[1] & 0xFFu) << 24);
    // logb_crc32c_sw takes and returns finished (final-xored) values
    reg = ~logb_crc32c_sw(~reg, (const uint8_t *)b.buf + start, (size_t)(end - start));
    st[0] = reg & 0xFFFFFFu;
    st[1] = reg >> 24;
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(logbc_crc32c_update_obj, 4, 4, logbc_crc32c_update);

// (records, n, rs, bs, bit_offset, width, big, kind, out/values, stride)
static mp_obj_t logbc_field(const mp_obj_t *args, int packing) {
    mp_buffer_info_t rec, io;
    mp_get_buffer_raise(args[0], &rec, packing ? MP_BUFFER_RW : MP_BUFFER_READ);
    mp_get_buffer_raise(args[8], &io, packing ? MP_BUFFER_READ : MP_BUFFER_RW);
    size_t n = logbc_size(args[1]), rs = logbc_size(args[2]), bs = logbc_size(args[3]);
    uint32_t off = (uint32_t)logbc_size(args[4]), width = (uint32_t)logbc_size(args[5]);
    int big = mp_obj_get_int(args[6]) != 0, kind = (int)mp_obj_get_int(args[7]);
    size_t stride = logbc_size(args[9]), es = (size_t)kind & LOGB_KIND_SIZE_MASK;
    logbc_need(&rec, logbc_span(n, rs, bs, off, width));
    logbc_need(&io, n ? (n - 1) * stride + es : 0);
    int rc = packing
        ? logb_pack((uint8_t *)rec.buf, n, rs, bs, off, width, big, kind, io.buf, stride)
        : logb_extract((const uint8_t *)rec.buf, n, rs, bs, off, width, big, kind, io.buf, stride);
    if (rc != LOGB_OK) {
        mp_raise_ValueError(MP_ERROR_TEXT("invalid field or kind"));
    }
    return mp_const_none;
}

static mp_obj_t logbc_extract(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    return logbc_field(args, 0);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(logbc_extract_obj, 10, 10, logbc_extract);

static mp_obj_t logbc_pack(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    return logbc_field(args, 1);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(logbc_pack_obj, 10, 10, logbc_pack);

static mp_obj_t logbc_transpose_common(const mp_obj_t *args, int back) {
    mp_buffer_info_t src, dst;
    mp_get_buffer_raise(args[0], &src, MP_BUFFER_READ);
    mp_get_buffer_raise(args[1], &dst, MP_BUFFER_WRITE);
    size_t n = logbc_size(args[2]), s = logbc_size(args[3]);
    if (s && n > SIZE_MAX / s) {
        mp_raise_ValueError(MP_ERROR_TEXT("too large"));
    }
    logbc_need(&src, n * s);
    logbc_need(&dst, n * s);
    if (back) {
        logb_untranspose((const uint8_t *)src.buf, (uint8_t *)dst.buf, n, s);
    } else {
        logb_transpose((const uint8_t *)src.buf, (uint8_t *)dst.buf, n, s);
    }
    return mp_const_none;
}

static mp_obj_t logbc_transpose(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    return logbc_transpose_common(args, 0);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(logbc_transpose_obj, 4, 4, logbc_transpose);

static mp_obj_t logbc_untranspose(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    return logbc_transpose_common(args, 1);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(logbc_untranspose_obj, 4, 4, logbc_untranspose);

/* Bit-field extraction and packing over N fixed records (SPEC §6.2).
 *
 * A field is a window of k whole bytes (k <= 9) read as one integer in the
 * field's byte order, shifted once and masked: little-endian windows start at
 * the field's first byte and shift right by bit_offset % 8; big-endian
 * windows end at its last byte and shift right by 7 - (last bit) % 8.
 * Records are addressed as base[i*rs + j*bs] (logb_cbridge.h), so the same
 * code reads row-major and transposed (planar) frames.
 *
 * Portable C99: only <stdint.h>/<stddef.h>, no allocation, no writable static
 * data. Speed comes from specialising the inner loop on the window size for
 * the two common layouts; -Os builds (firmware) keep only the generic loop. */
#include "logb_cbridge.h"

#if defined(LOGB_SMALL) || defined(__OPTIMIZE_SIZE__)
#define LOGB_SPECIALISE 0
#else
#define LOGB_SPECIALISE 1
#endif

#ifndef LOGB_BLOCK
#define LOGB_BLOCK 64 /* values per pass; uint64_t scratch on the stack */
#endif

static inline uint64_t win_le(const uint8_t *p, size_t bs, unsigned k)
{
    uint64_t v = 0;
    unsigned j;
    for (j = 0; j < k; j++)
        v |= (uint64_t)p[j * bs] << (8 * j);
    return v;
}

static inline uint64_t win_be(const uint8_t *p, size_t bs, unsigned k)
{
    uint64_t v = 0;
    unsigned j;
    for (j = 0; j < k; j++)
        v = (v << 8) | p[j * bs];
    return v;
}

#if LOGB_SPECIALISE && defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Row-major windows of a constant size as one or two unaligned loads
 * (__builtin_memcpy needs no header); other compilers use the byte loops. */
static inline uint64_t ld_le(const uint8_t *p, unsigned k)
{
    uint64_t v8;
    uint32_t v4;
    uint16_t v2;
    switch (k) {
    case 1: return p[0];
    case 2: __builtin_memcpy(&v2, p, 2); return v2;
    case 3: __builtin_memcpy(&v2, p, 2); return v2 | (uint64_t)p[2] << 16;
    case 4: __builtin_memcpy(&v4, p, 4); return v4;
    case 5: __builtin_memcpy(&v4, p, 4); return v4 | (uint64_t)p[4] << 32;
    case 6: __builtin_memcpy(&v4, p, 4); __builtin_memcpy(&v2, p + 4, 2); return v4 | (uint64_t)v2 << 32;
    case 7:
        __builtin_memcpy(&v4, p, 4);
        __builtin_memcpy(&v2, p + 4, 2);
        return v4 | (uint64_t)v2 << 32 | (uint64_t)p[6] << 48;
    default: __builtin_memcpy(&v8, p, 8); return v8;
    }
}
#define ROW_LE(p, k) ld_le((p), (k))
#define ROW_BE(p, k) (__builtin_bswap64(ld_le((p), (k))) >> (64 - 8 * (k)))
#else
#define ROW_LE(p, k) win_le((p), 1, (k))
#define ROW_BE(p, k) win_be((p), 1, (k))
#endif

static inline void put_le(uint8_t *p, size_t bs, unsigned k, uint64_t v)
{
    unsigned j;
    for (j = 0; j < k; j++)
        p[j * bs] = (uint8_t)(v >> (8 * j));
}

static inline void put_be(uint8_t *p, size_t bs, unsigned k, uint64_t v)
{
    unsigned j;
    for (j = 0; j < k; j++)
        p[(k - 1 - j) * bs] = (uint8_t)(v >> (8 * j));
}

typedef struct {
    unsigned first; /* first byte of the window */
    unsigned k;     /* window bytes, 1..9 */
    unsigned shift; /* right shift of the window value */
    uint64_t mask;  /* width ones */
} window_t;

static int field_window(uint32_t off, uint32_t width, int big, window_t *w)
{
    uint32_t last;
    if (width == 0 || width > 64 || off > UINT32_MAX - width)
        return LOGB_EINVAL;
    last = off + width - 1;
    w->first = off / 8;
    w->k = last / 8 - off / 8 + 1;
    w->shift = big ? 7 - last % 8 : off % 8;
    w->mask = width == 64 ? ~(uint64_t)0 : (((uint64_t)1 << width) - 1);
    return LOGB_OK;
}

static int check_kind(int kind, uint32_t width, int extracting)
{
    unsigned es = (unsigned)kind & LOGB_KIND_SIZE_MASK;
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return LOGB_EINVAL;
    if (kind & ~(LOGB_KIND_SIZE_MASK | LOGB_KIND_SIGNED | LOGB_KIND_BOOL))
        return LOGB_EINVAL;
    if (kind & LOGB_KIND_BOOL)
        return (extracting && es == 1 && !(kind & LOGB_KIND_SIGNED)) ? LOGB_OK : LOGB_EINVAL;
    if (extracting && width > 8 * es)
        return LOGB_EINVAL; /* the element could not hold every value */
    return LOGB_OK;
}

/* ---------------------------------------------------------------- extract */

/* Window values of cnt records starting at p (already at the window's first byte). */
static void read_block(const uint8_t *p, size_t cnt, size_t rs, size_t bs, const window_t *w, int big,
                       uint64_t *t)
{
    size_t i;
    const unsigned k = w->k, shift = w->shift;
    const uint64_t mask = w->mask;
    if (k == 9) { /* a 58..64-bit field over 9 bytes: shift is 1..7 */
        for (i = 0; i < cnt; i++) {
            const uint8_t *r = p + i * rs;
            uint64_t lo, hi;
            if (big) {
                hi = r[0];
                lo = win_be(r + bs, bs, 8);
            } else {
                lo = win_le(r, bs, 8);
                hi = r[8 * bs];
            }
            t[i] = ((lo >> shift) | (hi << (64 - shift))) & mask;
        }
        return;
    }
#if LOGB_SPECIALISE
#define ROW_LE2(p, bs, k) ROW_LE(p, k)
#define ROW_BE2(p, bs, k) ROW_BE(p, k)
#define LOGB_LOOP(WIN, K, RS, BS)                                    \
    for (i = 0; i < cnt; i++)                                        \
        t[i] = (WIN(p + i * (RS), (BS), (K)) >> shift) & mask;       \
    return
#define LOGB_CASES(WIN, RS, BS)                                      \
    switch (k) {                                                     \
    case 1: LOGB_LOOP(WIN, 1, RS, BS);                               \
    case 2: LOGB_LOOP(WIN, 2, RS, BS);                               \
    case 3: LOGB_LOOP(WIN, 3, RS, BS);                               \
    case 4: LOGB_LOOP(WIN, 4, RS, BS);                               \
    case 5: LOGB_LOOP(WIN, 5, RS, BS);                               \
    case 6: LOGB_LOOP(WIN, 6, RS, BS);                               \
    case 7: LOGB_LOOP(WIN, 7, RS, BS);                               \
    case 8: LOGB_LOOP(WIN, 8, RS, BS);                               \
    default: break;                                                  \
    }
    if (bs == 1) { /* row-major */
        if (big) {
            LOGB_CASES(ROW_BE2, rs, 1)
        } else {
            LOGB_CASES(ROW_LE2, rs, 1)
        }
    } else if (rs == 1) { /* transposed: one plane per byte */
        if (big) {
            LOGB_CASES(win_be, 1, bs)
        } else {
            LOGB_CASES(win_le, 1, bs)
        }
    }
#undef LOGB_CASES
#undef LOGB_LOOP
#undef ROW_LE2
#undef ROW_BE2
#endif
    for (i = 0; i < cnt; i++) {
        const uint8_t *r = p + i * rs;
        t[i] = ((big ? win_be(r, bs, k) : win_le(r, bs, k)) >> shift) & mask;
    }
}

static void store_block(const uint64_t *t, size_t cnt, uint32_t width, int kind, uint8_t *o, size_t os)
{
    size_t i;
    const unsigned es = (unsigned)kind & LOGB_KIND_SIZE_MASK;
    if (kind & LOGB_KIND_BOOL) {
        for (i = 0; i < cnt; i++)
            o[i * os] = t[i] != 0;
        return;
    }
    if ((kind & LOGB_KIND_SIGNED) && width < 64) {
        const uint64_t sign = (uint64_t)1 << (width - 1);
        uint64_t s[LOGB_BLOCK];
        for (i = 0; i < cnt; i++)
            s[i] = (t[i] ^ sign) - sign; /* two's complement bits of the sign-extended value */
        t = s;
        switch (es) {
        case 1: for (i = 0; i < cnt; i++) *(uint8_t *)(o + i * os) = (uint8_t)t[i]; return;
        case 2: for (i = 0; i < cnt; i++) *(uint16_t *)(void *)(o + i * os) = (uint16_t)t[i]; return;
        case 4: for (i = 0; i < cnt; i++) *(uint32_t *)(void *)(o + i * os) = (uint32_t)t[i]; return;
        default: for (i = 0; i < cnt; i++) *(uint64_t *)(void *)(o + i * os) = t[i]; return;
        }
    }
    switch (es) {
    case 1: for (i = 0; i < cnt; i++) *(uint8_t *)(o + i * os) = (uint8_t)t[i]; return;
    case 2: for (i = 0; i < cnt; i++) *(uint16_t *)(void *)(o + i * os) = (uint16_t)t[i]; return;
    case 4: for (i = 0; i < cnt; i++) *(uint32_t *)(void *)(o + i * os) = (uint32_t)t[i]; return;
    default: for (i = 0; i < cnt; i++) *(uint64_t *)(void *)(o + i * os) = t[i]; return;
    }
}

#if LOGB_SPECIALISE
/* The common case in one pass: 64-bit elements, contiguous output (what the
 * CPython reader asks for). Returns 0 when the layout is not specialised. */
static int extract_direct(const uint8_t *p, size_t n, size_t rs, size_t bs, const window_t *w, int big,
                          uint64_t sign, uint64_t *o)
{
    size_t i;
    const unsigned shift = w->shift;
    const uint64_t mask = w->mask;
#define LOGB_LOOP(EXPR)                                              \
    for (i = 0; i < n; i++)                                          \
        o[i] = ((((EXPR) >> shift) & mask) ^ sign) - sign;           \
    return 1
#define LOGB_CASES(EXPR_K)                                           \
    switch (w->k) {                                                  \
    case 1: LOGB_LOOP(EXPR_K(1));                                    \
    case 2: LOGB_LOOP(EXPR_K(2));                                    \
    case 3: LOGB_LOOP(EXPR_K(3));                                    \
    case 4: LOGB_LOOP(EXPR_K(4));                                    \
    case 5: LOGB_LOOP(EXPR_K(5));                                    \
    case 6: LOGB_LOOP(EXPR_K(6));                                    \
    case 7: LOGB_LOOP(EXPR_K(7));                                    \
    case 8: LOGB_LOOP(EXPR_K(8));                                    \
    default: return 0;                                               \
    }
#define ROWS_LE(K) ROW_LE(p + i * rs, K)
#define ROWS_BE(K) ROW_BE(p + i * rs, K)
#define PLANES_LE(K) win_le(p + i, bs, K)
#define PLANES_BE(K) win_be(p + i, bs, K)
    if (bs == 1) {
        if (big) {
            LOGB_CASES(ROWS_BE)
        } else {
            LOGB_CASES(ROWS_LE)
        }
    } else if (rs == 1) {
        if (big) {
            LOGB_CASES(PLANES_BE)
        } else {
            LOGB_CASES(PLANES_LE)
        }
    }
    return 0;
#undef ROWS_LE
#undef ROWS_BE
#undef PLANES_LE
#undef PLANES_BE
#undef LOGB_CASES
#undef LOGB_LOOP
}
#endif

#if LOGB_SPECIALISE
/* A field of whole bytes the size of its element (no shift, mask or sign
 * extension to do), row-major or planar (a transposed frame read in place):
 * one window per record, byte-swapped when big. Most fields at their native
 * width are this (a CAN frame's id, dlc, flags, data). Returns 0 when the
 * field or the layout is not one. */
static int extract_copy(const uint8_t *p, size_t n, size_t rs, size_t bs, const window_t *w, uint32_t width,
                        int big, int kind, uint8_t *o, size_t os)
{
    size_t i;
    const unsigned es = (unsigned)kind & LOGB_KIND_SIZE_MASK;
    if ((bs != 1 && rs != 1) || (kind & LOGB_KIND_BOOL) || w->shift != 0 || w->k != es || width != 8 * es)
        return 0;
#define LOGB_STORE(T, K, LE, BE)                                                        \
    if (big)                                                                            \
        for (i = 0; i < n; i++)                                                         \
            *(T *)(void *)(o + i * os) = (T)BE;                                         \
    else if (os == (K))                                                                 \
        for (i = 0; i < n; i++)                                                         \
            ((T *)(void *)o)[i] = (T)LE;                                                \
    else                                                                                \
        for (i = 0; i < n; i++)                                                         \
            *(T *)(void *)(o + i * os) = (T)LE;                                         \
    return 1
#define LOGB_COPY(T, K)                                                                 \
    if (bs == 1) {                                                                      \
        LOGB_STORE(T, K, ROW_LE(p + i * rs, K), ROW_BE(p + i * rs, K));                 \
    } else {                                                                            \
        LOGB_STORE(T, K, win_le(p + i, bs, K), win_be(p + i, bs, K));                   \
    }
    switch (es) {
    case 1: LOGB_COPY(uint8_t, 1);
    case 2: LOGB_COPY(uint16_t, 2);
    case 4: LOGB_COPY(uint32_t, 4);
    default: LOGB_COPY(uint64_t, 8);
    }
#undef LOGB_COPY
#undef LOGB_STORE
}
#endif

int logb_extract(const uint8_t *base, size_t n, size_t rs, size_t bs, uint32_t bit_offset, uint32_t width,
                 int big, int kind, void *out, size_t ostride)
{
    window_t w;
    uint64_t t[LOGB_BLOCK];
    size_t i0;
    if (field_window(bit_offset, width, big, &w) != LOGB_OK || check_kind(kind, width, 1) != LOGB_OK)
        return LOGB_EINVAL;
    base += (size_t)w.first * bs;
#if LOGB_SPECIALISE
    if (extract_copy(base, n, rs, bs, &w, width, big, kind, (uint8_t *)out, ostride))
        return LOGB_OK;
    if ((kind & (LOGB_KIND_SIZE_MASK | LOGB_KIND_BOOL)) == 8 && ostride == 8) {
        uint64_t sign = (kind & LOGB_KIND_SIGNED) && width < 64 ? (uint64_t)1 << (width - 1) : 0;
        if (extract_direct(base, n, rs, bs, &w, big, sign, (uint64_t *)out))
            return LOGB_OK;
    }
#endif
    for (i0 = 0; i0 < n; i0 += LOGB_BLOCK) {
        size_t cnt = n - i0 < LOGB_BLOCK ? n - i0 : LOGB_BLOCK;
        read_block(base + i0 * rs, cnt, rs, bs, &w, big, t);
        store_block(t, cnt, width, kind, (uint8_t *)out + i0 * ostride, ostride);
    }
    return LOGB_OK;
}

/* Many fields of the same records in one call (a frame's columns, a CAN
 * message's signals): field i goes to the element at outs[2i] (an address),
 * elements outs[2i+1] bytes apart. Returns LOGB_OK, or the first invalid
 * field's LOGB_EINVAL before anything is written. */
int logb_extract_many(const uint8_t *base, size_t n, size_t rs, size_t bs, const logb_field_spec *specs,
                      size_t count, const uintptr_t *outs)
{
    size_t i;
    window_t w;
    for (i = 0; i < count; i++)
        if (field_window(specs[i].bit_offset, specs[i].width, specs[i].big, &w) != LOGB_OK
            || check_kind(specs[i].kind, specs[i].width, 1) != LOGB_OK)
            return LOGB_EINVAL;
    for (i = 0; i < count; i++)
        (void)logb_extract(base, n, rs, bs, specs[i].bit_offset, specs[i].width, specs[i].big, specs[i].kind,
                           (void *)outs[2 * i], (size_t)outs[2 * i + 1]);
    return LOGB_OK;
}

/* The same fields of several runs of records into one set of columns
 * (logb_cbridge.h): one call for many DATA frames. */
int logb_extract_frames(const uintptr_t *runs, const uint64_t *counts, const uint8_t *planar, size_t nruns,
                        size_t size, const logb_field_spec *specs, size_t count, const uintptr_t *outs,
                        uint64_t scale, const uint64_t *bases)
{
    size_t r, i, j, done = 0;
    window_t w;
    for (i = 0; i < count; i++)
        if (field_window(specs[i].bit_offset, specs[i].width, specs[i].big, &w) != LOGB_OK
            || check_kind(specs[i].kind, specs[i].width, 1) != LOGB_OK)
            return LOGB_EINVAL;
    if (bases && (!count || (specs[count - 1].kind & (LOGB_KIND_SIZE_MASK | LOGB_KIND_BOOL)) != 8))
        return LOGB_EINVAL;
    for (r = 0; r < nruns; r++) {
        const uint8_t *records = (const uint8_t *)runs[r];
        const size_t n = (size_t)counts[r];
        const int rows = !planar || !planar[r];
        for (i = 0; i < count; i++)
            (void)logb_extract(records, n, rows ? size : 1, rows ? 1 : n, specs[i].bit_offset, specs[i].width,
                               specs[i].big, specs[i].kind, (uint8_t *)outs[2 * i] + done * outs[2 * i + 1],
                               (size_t)outs[2 * i + 1]);
        if (bases) { /* the axis, while this run's values are in cache */
            uint8_t *a = (uint8_t *)outs[2 * count - 2] + done * outs[2 * count - 1];
            const size_t as = (size_t)outs[2 * count - 1];
            const uint64_t base = bases[r];
            for (j = 0; j < n; j++) {
                uint64_t *v = (uint64_t *)(void *)(a + j * as);
                *v = *v * scale + base;
            }
        }
        done += n;
    }
    return LOGB_OK;
}

/* ---------------------------------------------------------------- pack */

static inline uint64_t load_elem(const uint8_t *q, unsigned es, int sgn)
{
    switch (es) {
    case 1: return sgn ? (uint64_t)(int64_t) * (const int8_t *)q : *q;
    case 2: return sgn ? (uint64_t)(int64_t) * (const int16_t *)(const void *)q : *(const uint16_t *)(const void *)q;
    case 4: return sgn ? (uint64_t)(int64_t) * (const int32_t *)(const void *)q : *(const uint32_t *)(const void *)q;
    default: return *(const uint64_t *)(const void *)q;
    }
}

int logb_pack(uint8_t *base, size_t n, size_t rs, size_t bs, uint32_t bit_offset, uint32_t width, int big,
              int kind, const void *in, size_t istride)
{
    window_t w;
    size_t i;
    const uint8_t *src = (const uint8_t *)in;
    unsigned es, k;
    int sgn;
    if (field_window(bit_offset, width, big, &w) != LOGB_OK || check_kind(kind, width, 0) != LOGB_OK)
        return LOGB_EINVAL;
    es = (unsigned)kind & LOGB_KIND_SIZE_MASK;
    sgn = (kind & LOGB_KIND_SIGNED) != 0;
    k = w.k;
    base += (size_t)w.first * bs;
    if (w.shift == 0 && width == 8 * k) { /* whole bytes: store, no read-modify-write */
#if LOGB_SPECIALISE
#define LOGB_STORE(PUT, K)                                                          \
    for (i = 0; i < n; i++)                                                         \
        PUT(base + i * rs, 1, (K), load_elem(src + i * istride, es, sgn));          \
    return LOGB_OK
        if (bs == 1) {
            if (big) {
                switch (k) { case 1: LOGB_STORE(put_be, 1); case 2: LOGB_STORE(put_be, 2);
                             case 4: LOGB_STORE(put_be, 4); case 8: LOGB_STORE(put_be, 8); default: break; }
            } else {
                switch (k) { case 1: LOGB_STORE(put_le, 1); case 2: LOGB_STORE(put_le, 2);
                             case 4: LOGB_STORE(put_le, 4); case 8: LOGB_STORE(put_le, 8); default: break; }
            }
        }
#undef LOGB_STORE
#endif
        for (i = 0; i < n; i++) {
            uint64_t v = load_elem(src + i * istride, es, sgn);
            if (big)
                put_be(base + i * rs, bs, k, v);
            else
                put_le(base + i * rs, bs, k, v);
        }
        return LOGB_OK;
    }
    for (i = 0; i < n; i++) {
        uint8_t *r = base + i * rs;
        uint64_t v = load_elem(src + i * istride, es, sgn) & w.mask;
        if (k <= 8) {
            const uint64_t fm = w.mask << w.shift;
            uint64_t x = big ? win_be(r, bs, k) : win_le(r, bs, k);
            x = (x & ~fm) | (v << w.shift);
            if (big)
                put_be(r, bs, k, x);
            else
                put_le(r, bs, k, x);
        } else { /* 9 bytes, shift 1..7 */
            const uint64_t fm_lo = w.mask << w.shift, fm_hi = w.mask >> (64 - w.shift);
            uint8_t *hp = big ? r : r + 8 * bs;
            uint8_t *lp = big ? r + bs : r;
            uint64_t lo = big ? win_be(lp, bs, 8) : win_le(lp, bs, 8);
            lo = (lo & ~fm_lo) | (v << w.shift);
            *hp = (uint8_t)((*hp & ~fm_hi) | (v >> (64 - w.shift)));
            if (big)
                put_be(lp, bs, 8, lo);
            else
                put_le(lp, bs, 8, lo);
        }
    }
    return LOGB_OK;
}

/* ---------------------------------------------------------------- bytes */

void logb_gather(const uint8_t *base, size_t n, size_t rs, size_t bs, size_t byte0, size_t nbytes, uint8_t *out)
{
    size_t i, j;
    base += byte0 * bs;
#if LOGB_SPECIALISE
    if (nbytes == 8 && bs == 1) { /* CAN payloads, row-major: 8-byte copies */
        for (i = 0; i < n; i++)
            for (j = 0; j < 8; j++)
                out[i * 8 + j] = base[i * rs + j];
        return;
    }
    if (nbytes == 8) { /* CAN payloads: constant inner loop, unrolled */
        for (i = 0; i < n; i++)
            for (j = 0; j < 8; j++)
                out[i * 8 + j] = base[i * rs + j * bs];
        return;
    }
#endif
    for (i = 0; i < n; i++)
        for (j = 0; j < nbytes; j++)
            out[i * nbytes + j] = base[i * rs + j * bs];
}

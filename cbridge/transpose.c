/* The transpose filter (SPEC §8.2): N records of S bytes <-> S rows of N bytes.
 * Blocks of 8 records x 8 bytes are transposed in eight 64-bit registers
 * (three rounds of masked swaps), so each byte costs well under one
 * instruction; the ragged edges (S % 8 bytes, N % 8 records) take the byte
 * loop, which is all that -Os builds (firmware) keep. Portable C99, no
 * allocation, no static data. */
#include "logb_cbridge.h"

#if defined(LOGB_SMALL) || defined(__OPTIMIZE_SIZE__)
#define LOGB_SPECIALISE 0
#else
#define LOGB_SPECIALISE 1
#endif

#if LOGB_SPECIALISE
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return v;
}
static inline void st64(uint8_t *p, uint64_t v) { __builtin_memcpy(p, &v, 8); }
#else
static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v = 0;
    int k;
    for (k = 7; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}
static inline void st64(uint8_t *p, uint64_t v)
{
    int k;
    for (k = 0; k < 8; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}
#endif

/* x[r] byte c  ->  x[c] byte r */
static inline void transpose8x8(uint64_t x[8])
{
    uint64_t t;
    int r;
    for (r = 0; r < 4; r++) {
        t = ((x[r] >> 32) ^ x[r + 4]) & 0x00000000FFFFFFFFull;
        x[r] ^= t << 32;
        x[r + 4] ^= t;
    }
    for (r = 0; r < 8; r += (r & 1) ? 3 : 1) { /* 0, 1, 4, 5 */
        t = ((x[r] >> 16) ^ x[r + 2]) & 0x0000FFFF0000FFFFull;
        x[r] ^= t << 16;
        x[r + 2] ^= t;
    }
    for (r = 0; r < 8; r += 2) {
        t = ((x[r] >> 8) ^ x[r + 1]) & 0x00FF00FF00FF00FFull;
        x[r] ^= t << 8;
        x[r + 1] ^= t;
    }
}
#endif

void logb_transpose(const uint8_t *src, uint8_t *dst, size_t n, size_t s)
{
    size_t i = 0, j;
#if LOGB_SPECIALISE
    const size_t s8 = s & ~(size_t)7;
    for (; i + 8 <= n; i += 8) {
        const uint8_t *b = src + i * s;
        for (j = 0; j < s8; j += 8) {
            uint64_t x[8];
            int r;
            for (r = 0; r < 8; r++)
                x[r] = ld64(b + (size_t)r * s + j);
            transpose8x8(x);
            for (r = 0; r < 8; r++)
                st64(dst + (j + (size_t)r) * n + i, x[r]);
        }
        for (; j < s; j++) {
            int r;
            for (r = 0; r < 8; r++)
                dst[j * n + i + (size_t)r] = b[(size_t)r * s + j];
        }
    }
#endif
    for (; i < n; i++)
        for (j = 0; j < s; j++)
            dst[j * n + i] = src[i * s + j];
}

void logb_untranspose(const uint8_t *src, uint8_t *dst, size_t n, size_t s)
{
    size_t i = 0, j;
#if LOGB_SPECIALISE
    const size_t s8 = s & ~(size_t)7;
    for (; i + 8 <= n; i += 8) {
        uint8_t *b = dst + i * s;
        for (j = 0; j < s8; j += 8) {
            uint64_t x[8];
            int r;
            for (r = 0; r < 8; r++)
                x[r] = ld64(src + (j + (size_t)r) * n + i);
            transpose8x8(x);
            for (r = 0; r < 8; r++)
                st64(b + (size_t)r * s + j, x[r]);
        }
        for (; j < s; j++) {
            int r;
            for (r = 0; r < 8; r++)
                b[(size_t)r * s + j] = src[j * n + i + (size_t)r];
        }
    }
#endif
    for (; i < n; i++)
        for (j = 0; j < s; j++)
            dst[i * s + j] = src[j * n + i];
}

/* CRC-32C with the CPU's CRC instruction: SSE4.2 `crc32` on x86-64, the ARMv8
 * CRC32C instructions on aarch64. Host builds only (the portable kernels are
 * in crc32c.c); selected at run time by the caller through
 * logb_crc32c_hw_available(), so nothing here keeps state.
 *
 * One crc32 instruction has a latency of ~3 cycles but a throughput of one
 * per cycle, so three independent streams run interleaved over three
 * adjacent blocks and are combined with const shift tables (feeding a block
 * of zeros through the register is linear: a table lookup per byte). */
#include "logb_cbridge.h"

#if defined(__GNUC__) && defined(__x86_64__)
#define LOGB_HW 1
#define LOGB_HW_NAME "sse4.2"
#define LOGB_TARGET __attribute__((target("sse4.2")))
#include <cpuid.h>
static LOGB_TARGET inline uint64_t hw_step64(uint64_t c, uint64_t v) { return __builtin_ia32_crc32di(c, v); }
static LOGB_TARGET inline uint32_t hw_step8(uint32_t c, uint8_t v) { return __builtin_ia32_crc32qi(c, v); }
int logb_crc32c_hw_available(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    return (c & bit_SSE4_2) != 0;
}
#elif defined(__GNUC__) && defined(__aarch64__) && defined(__ARM_FEATURE_UNALIGNED) && \
    (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#define LOGB_HW 1
#define LOGB_HW_NAME "armv8-crc"
#ifdef __clang__
#define LOGB_TARGET __attribute__((target("crc")))
#else
#define LOGB_TARGET __attribute__((target("+crc")))
#endif
#include <arm_acle.h>
static LOGB_TARGET inline uint64_t hw_step64(uint64_t c, uint64_t v) { return __crc32cd((uint32_t)c, v); }
static LOGB_TARGET inline uint32_t hw_step8(uint32_t c, uint8_t v) { return __crc32cb(c, v); }
#if defined(__APPLE__)
int logb_crc32c_hw_available(void) { return 1; } /* every Apple aarch64 core has CRC32 */
#elif defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
int logb_crc32c_hw_available(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#else
int logb_crc32c_hw_available(void) { return 0; }
#endif
#endif

#ifdef LOGB_HW
#define LOGB_CRC32C_SHIFT_TABLES
#include "crc32c_tables.h"

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8); /* little-endian host: the bytes in order */
    return v;
}

static inline uint64_t shift(const uint32_t (*t)[256], uint64_t crc)
{
    return (uint64_t)(t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff]
                      ^ t[3][(crc >> 24) & 0xff]);
}

#define LOGB_BLOCKS(SIZE, TABLE)                                         \
    while (n >= 3 * (SIZE)) {                                            \
        uint64_t c1 = 0, c2 = 0;                                         \
        const uint8_t *end = p + (SIZE);                                 \
        do {                                                             \
            c0 = hw_step64(c0, ld64(p));                                 \
            c1 = hw_step64(c1, ld64(p + (SIZE)));                        \
            c2 = hw_step64(c2, ld64(p + 2 * (SIZE)));                    \
            p += 8;                                                      \
        } while (p < end);                                               \
        c0 = shift(TABLE, c0) ^ c1;                                      \
        c0 = shift(TABLE, c0) ^ c2;                                      \
        p += 2 * (SIZE);                                                 \
        n -= 3 * (SIZE);                                                 \
    }

LOGB_TARGET uint32_t logb_crc32c_hw(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c0 = (uint32_t)~crc;
    while (n && ((uintptr_t)p & 7)) {
        c0 = hw_step8((uint32_t)c0, *p++);
        n--;
    }
    LOGB_BLOCKS(LOGB_CRC32C_LONG, logb_crc32c_long)
    LOGB_BLOCKS(LOGB_CRC32C_SHORT, logb_crc32c_short)
    while (n >= 8) {
        c0 = hw_step64(c0, ld64(p));
        p += 8;
        n -= 8;
    }
    while (n) {
        c0 = hw_step8((uint32_t)c0, *p++);
        n--;
    }
    return ~(uint32_t)c0;
}

const char *logb_crc32c_hw_name(void) { return LOGB_HW_NAME; }

#else /* no CRC instruction this compiler can target */

int logb_crc32c_hw_available(void) { return 0; }
uint32_t logb_crc32c_hw(uint32_t crc, const uint8_t *p, size_t n) { return logb_crc32c_sw(crc, p, n); }
const char *logb_crc32c_hw_name(void) { return ""; }

#endif

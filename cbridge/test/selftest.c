/* Self-test of the cbridge kernels as plain C, without Python: built and run
 * by tests/test_cbridge.py natively (in the host and the firmware
 * configuration) and, when a cross compiler and qemu-user are installed, for
 * aarch64 under qemu (which exercises the ARMv8 CRC32C path).
 *
 *     cc -std=c99 -I cbridge cbridge/test/selftest.c cbridge/crc32c.c cbridge/crc32c_hw.c \
 *        cbridge/bits.c cbridge/transpose.c cbridge/tails.c -o selftest && ./selftest
 *
 * Add -DLOGB_NO_HW (and leave out crc32c_hw.c) for a portable-only build.
 * Prints one line and exits 0 when every check passes. */
#include <stdio.h>
#include <string.h>

#include "logb_cbridge.h"

static unsigned long checks, failures;

#define CHECK(cond, ...)                      \
    do {                                      \
        checks++;                             \
        if (!(cond)) {                        \
            failures++;                       \
            if (failures < 20) {              \
                printf("FAIL %s:%d: ", __FILE__, __LINE__); \
                printf(__VA_ARGS__);          \
                printf("\n");                 \
            }                                 \
        }                                     \
    } while (0)

static uint32_t rng_state = 12345;
static uint8_t rnd(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (uint8_t)(rng_state >> 16);
}

typedef uint32_t (*crc_fn)(uint32_t, const uint8_t *, size_t);

/* Bit at a time, straight from the polynomial: shares nothing with the kernels. */
static uint32_t ref_crc(uint32_t crc, const uint8_t *p, size_t n)
{
    int k;
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void crc_vectors(crc_fn f, const char *name)
{
    static const uint8_t iscsi[48] = {
        0x01, 0xC0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x14, 0, 0, 0, 0, 0, 0x04, 0,
        0, 0, 0, 0x14, 0, 0, 0, 0x18, 0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0};
    uint8_t buf[32];
    int i;
    CHECK(f(0, (const uint8_t *)"123456789", 9) == 0xE3069283u, "%s check value", name);
    memset(buf, 0, 32);
    CHECK(f(0, buf, 32) == 0x8A9136AAu, "%s zeros", name);
    memset(buf, 0xff, 32);
    CHECK(f(0, buf, 32) == 0x62A8AB43u, "%s ones", name);
    for (i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    CHECK(f(0, buf, 32) == 0x46DD794Eu, "%s ascending", name);
    for (i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    CHECK(f(0, buf, 32) == 0x113FDB5Cu, "%s descending", name);
    CHECK(f(0, iscsi, 48) == 0xD9963A56u, "%s iscsi read pdu", name);
    CHECK(f(0, buf, 0) == 0, "%s empty", name);
}

static uint8_t big[3 * 8192 * 2 + 1000];

static void crc_sweeps(crc_fn a, crc_fn b, const char *name)
{
    size_t off, n, i;
    static const size_t sizes[] = {767, 768, 775, 24575, 24576, 24576 + 777, sizeof big - 16};
    for (i = 0; i < sizeof big; i++)
        big[i] = rnd();
    for (off = 0; off < 16; off++)
        for (n = 0; n <= 64; n++)
            CHECK(a(0, big + off, n) == b(0, big + off, n), "%s offset %u size %u", name, (unsigned)off, (unsigned)n);
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (off = 0; off < 9; off += 4)
            CHECK(a(0, big + off, sizes[i]) == b(0, big + off, sizes[i]), "%s large %u", name, (unsigned)sizes[i]);
    CHECK(a(a(0, big, 1000), big + 1000, 30000) == b(0, big, 31000), "%s chained", name);
}

struct vec { const char *hex; int big; uint32_t off, width; uint64_t raw; };

static const struct vec vectors[] = {
    {"1234", 0, 0, 16, 0x3412}, {"1234", 1, 0, 16, 0x1234}, {"1234", 0, 4, 12, 0x341},
    {"1234", 1, 3, 12, 0x91A}, {"0020", 0, 13, 1, 1}, {"0020", 1, 10, 1, 1},
    {"78563412", 0, 0, 32, 0x12345678}, {"12345678", 1, 0, 32, 0x12345678}, {"FF0F", 0, 0, 12, 0xFFF},
    {"FFF0", 1, 0, 12, 0xFFF}, {"A5", 0, 1, 6, 0x12}, {"A5", 1, 1, 6, 0x12},
    {"001234", 1, 11, 12, 0x91A}, {"07F0", 1, 5, 8, 0xFE}, {"003412", 0, 12, 8, 0x23},
};

static int hexval(char c) { return c <= '9' ? c - '0' : c - 'A' + 10; }

static void field_vectors(void)
{
    size_t v;
    for (v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        const struct vec *t = &vectors[v];
        uint8_t rec[8], rows[3 * 8], planar[3 * 8], packed[3 * 8];
        uint64_t u[3];
        int64_t s[3];
        size_t S = strlen(t->hex) / 2, i, j;
        int64_t want_s = (int64_t)(t->raw ^ ((uint64_t)1 << (t->width - 1))) - (int64_t)((uint64_t)1 << (t->width - 1));
        for (j = 0; j < S; j++)
            rec[j] = (uint8_t)(hexval(t->hex[2 * j]) * 16 + hexval(t->hex[2 * j + 1]));
        for (i = 0; i < 3; i++)
            for (j = 0; j < S; j++) {
                rows[i * S + j] = rec[j];
                planar[j * 3 + i] = rec[j];
            }
        CHECK(logb_extract(rows, 3, S, 1, t->off, t->width, t->big, 8, u, 8) == 0, "extract rc");
        CHECK(u[0] == t->raw && u[2] == t->raw, "vector %u rows: %llx", (unsigned)v, (unsigned long long)u[0]);
        CHECK(logb_extract(planar, 3, 1, 3, t->off, t->width, t->big, 8 | LOGB_KIND_SIGNED, s, 8) == 0, "rc");
        CHECK(s[1] == want_s, "vector %u planar signed: %lld", (unsigned)v, (long long)s[1]);
        memset(packed, 0, sizeof packed);
        CHECK(logb_pack(packed, 3, S, 1, t->off, t->width, t->big, 8, u, 8) == 0, "pack rc");
        CHECK(logb_extract(packed, 3, S, 1, t->off, t->width, t->big, 8, u, 8) == 0 && u[1] == t->raw,
              "vector %u pack round trip", (unsigned)v);
        memcpy(packed, rows, sizeof rows);
        CHECK(logb_pack(packed, 3, S, 1, t->off, t->width, t->big, 8, u, 8) == 0 &&
              memcmp(packed, rows, 3 * S) == 0, "vector %u pack keeps the record", (unsigned)v);
    }
}

static void transpose_round_trip(void)
{
    static uint8_t a[1000 * 18], b[1000 * 18], c[1000 * 18];
    size_t i;
    for (i = 0; i < sizeof a; i++)
        a[i] = rnd();
    logb_transpose(a, b, 1000, 18);
    CHECK(b[5 * 1000 + 7] == a[7 * 18 + 5], "transpose layout");
    logb_untranspose(b, c, 1000, 18);
    CHECK(memcmp(a, c, sizeof a) == 0, "untranspose");
}

int main(void)
{
    const char *hw = "none";
    crc_vectors(logb_crc32c_sw, "sw");
#ifndef LOGB_NO_HW
    if (logb_crc32c_hw_available()) {
        hw = logb_crc32c_hw_name();
        crc_vectors(logb_crc32c_hw, "hw");
        crc_sweeps(logb_crc32c_hw, ref_crc, "hw vs bitwise");
    }
#endif
    crc_sweeps(logb_crc32c_sw, ref_crc, "sw vs bitwise");
    field_vectors();
    transpose_round_trip();
    printf("selftest: %lu checks, %lu failed, hw=%s\n", checks, failures, hw);
    return failures != 0;
}

/* CRC-32C in portable C99: slice-by-8 (or bytewise with LOGB_CRC32C_SLICES=1).
 * Only <stdint.h>/<stddef.h>, no writable static data: the tables are const. */
#include "logb_cbridge.h"

#define LOGB_CRC32C_SW_TABLES
#include "crc32c_tables.h"

#if LOGB_CRC32C_SLICES != 1 && LOGB_CRC32C_SLICES != 8
#error "LOGB_CRC32C_SLICES must be 1 or 8"
#endif

#if LOGB_CRC32C_SLICES == 8
/* Little-endian 32-bit load from bytes: no alignment or aliasing assumption;
 * compilers turn it into one load where the target allows unaligned loads. */
static uint32_t ld32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
#endif

uint32_t logb_crc32c_sw(uint32_t crc, const uint8_t *p, size_t n)
{
    const uint32_t(*t)[256] = logb_crc32c_table;
    crc = ~crc;
#if LOGB_CRC32C_SLICES == 8
    while (n >= 8) {
        uint32_t lo = crc ^ ld32le(p);
        uint32_t hi = ld32le(p + 4);
        crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24]
            ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
        p += 8;
        n -= 8;
    }
#endif
    while (n) {
        crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    return ~crc;
}

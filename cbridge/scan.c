/* logb cbridge: the frame walk's hot loop (SPEC §2.2, §10.3): one run of
 * well-formed frames, parsed, bounds-checked and CRC-checked in one call.
 *
 * Everything that is not a well-formed frame (damage, a cut, an embedded
 * file header) ends the run; the caller's resync logic decides what it is.
 * Portable C99: no allocation, no writable static data. */
#include "logb_cbridge.h"

#define HEADER 8u
#define OVERHEAD 12u

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t logb_scan_frames(const uint8_t *buf, size_t len, size_t pos, uint64_t base,
                        logb_crc_fn crc, logb_frame *table, size_t cap,
                        size_t *stop, int *status)
{
    size_t n = 0;
    int why = LOGB_SCAN_END;
    while (len - pos >= HEADER) { /* pos <= len always holds */
        const uint8_t *h = buf + pos;
        uint32_t plen = le32(h);
        /* compared without forming pos + OVERHEAD + plen, which can wrap a 32-bit size_t */
        if ((size_t)plen > len - pos - HEADER || len - pos - HEADER - plen < OVERHEAD - HEADER) {
            why = LOGB_SCAN_PAST_END;
            break;
        }
        if (n == cap) {
            why = LOGB_SCAN_FULL;
            break;
        }
        if (crc(0, h, HEADER + (size_t)plen) != le32(h + HEADER + plen)) {
            why = LOGB_SCAN_CRC;
            break;
        }
        table[n].offset = base + pos;
        table[n].payload_len = plen;
        table[n].stream_id = (uint16_t)(h[6] | h[7] << 8);
        table[n].type = h[4];
        table[n].flags = h[5];
        n++;
        pos += OVERHEAD + (size_t)plen;
    }
    *stop = pos;
    *status = why;
    return n;
}

/* logb cbridge: the frame walk's hot loop (SPEC §2.2, §10.3): one run of
 * well-formed frames, parsed, bounds-checked and CRC-checked in one call,
 * and the 28-byte header of each DATA frame among them (SPEC §8.1).
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

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void data_head(const uint8_t *payload, uint32_t plen, int is_data, logb_data_head *head)
{
    /* field by field (no struct assignment: a firmware build has no memset) */
    int ok = is_data && plen >= LOGB_DATA_HEAD_SIZE;
    size_t j;
    head->raw_size = ok ? le64(payload + 20) : 0;
    for (j = 0; j < 8; j++)
        head->axis_base[j] = ok ? payload[j] : 0;
    head->record_count = ok ? le32(payload + 8) : 0;
    head->run_id = ok ? le32(payload + 12) : 0;
    head->codec = ok ? payload[16] : 0;
    head->filter = ok ? payload[17] : 0;
    head->reserved = ok ? (uint16_t)(payload[18] | payload[19] << 8) : 0;
    head->present = (uint32_t)ok;
}

size_t logb_scan_frames(const uint8_t *buf, size_t len, size_t pos, uint64_t base,
                        logb_crc_fn crc, logb_frame *table, size_t cap,
                        size_t *stop, int *status)
{
    return logb_scan_data_frames(buf, len, pos, base, crc, table, NULL, cap, stop, status);
}

size_t logb_scan_data_frames(const uint8_t *buf, size_t len, size_t pos, uint64_t base,
                             logb_crc_fn crc, logb_frame *table, logb_data_head *heads, size_t cap,
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
        if (heads)
            data_head(h + HEADER, plen, h[4] == LOGB_FRAME_DATA, &heads[n]);
        n++;
        pos += OVERHEAD + (size_t)plen;
    }
    *stop = pos;
    *status = why;
    return n;
}

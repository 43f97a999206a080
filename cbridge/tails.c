/* Walking the tail region (SPEC §6.4): per record, one u32 little-endian
 * length and that many bytes for each variable-length field, in order.
 * Returns where every value starts and how long it is, or the first error at
 * the position the pure-Python reader would report. Portable C99. */
#include "logb_cbridge.h"

int logb_walk_tails(const uint8_t *data, size_t len, size_t pos, size_t n, size_t v, uint64_t *offs,
                    uint32_t *lens, size_t *end)
{
    size_t r, f, e = 0;
    for (r = 0; r < n; r++) {
        for (f = 0; f < v; f++, e++) {
            uint32_t l;
            if (pos > len || len - pos < 4) {
                *end = pos;
                return LOGB_TAIL_PREFIX;
            }
            l = (uint32_t)data[pos] | (uint32_t)data[pos + 1] << 8 | (uint32_t)data[pos + 2] << 16
              | (uint32_t)data[pos + 3] << 24;
            pos += 4;
            if (l > len - pos) {
                *end = pos;
                return LOGB_TAIL_PAST_END;
            }
            offs[e] = pos;
            lens[e] = l;
            pos += l;
        }
    }
    *end = pos;
    return pos != len ? LOGB_TAIL_LEFTOVER : LOGB_OK;
}

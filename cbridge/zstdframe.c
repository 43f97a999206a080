/* logb cbridge: what one zstd frame (RFC 8878 §3.1.1) can decode to, from
 * its frame header and block headers alone (SPEC §8.2: a decoder never
 * allocates past raw_size). Nothing is decompressed, so there is no libzstd
 * here: the decompressor is called afterwards, with the answer as its bound.
 * Portable C99: no allocation, no writable static data. */
#include "logb_cbridge.h"

#define MAGIC 0xFD2FB528u
#define BLOCK_MAX (1u << 17)   /* Block_Maximum_Size */
#define WINDOW_LOG_MIN 10u
#define WINDOW_LOG_MAX 31u     /* libzstd's on 64-bit hosts, where the host reads files */

static uint64_t le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    while (n--)
        v = v << 8 | p[n];
    return v;
}

int logb_zstd_frame_bound(const uint8_t *buf, size_t len, uint64_t *info)
{
    unsigned fhd, single, did_bytes, fcs_flag, fcs_bytes;
    size_t pos, head;
    uint64_t window = 0, content = 0, bound = 0, block_max;
    int has_content, last = 0;

    if (len < 4 || le(buf, 4) != MAGIC)
        return LOGB_ZSTD_NOT_ZSTD;
    if (len < 5)
        return LOGB_ZSTD_HEADER_SHORT;
    fhd = buf[4];
    single = fhd >> 5 & 1;
    did_bytes = (1u << (fhd & 3)) >> 1; /* flag 0..3: 0, 1, 2, 4 bytes (no table: no .rodata) */
    fcs_flag = fhd >> 6;
    fcs_bytes = fcs_flag ? 1u << fcs_flag : single; /* flag 1..3: 2, 4, 8 bytes */
    head = 5 + !single + did_bytes + fcs_bytes;
    if (len < head)
        return LOGB_ZSTD_HEADER_SHORT;
    if (fhd & 0x08)
        return LOGB_ZSTD_RESERVED_BIT;
    pos = 5;
    if (!single) {
        unsigned wd = buf[pos++];
        unsigned log = (wd >> 3) + WINDOW_LOG_MIN;
        if (log > WINDOW_LOG_MAX)
            return LOGB_ZSTD_WINDOW;
        window = (uint64_t)1 << log;
        window += (window >> 3) * (wd & 7);
    }
    if (le(buf + pos, did_bytes))
        return LOGB_ZSTD_DICTIONARY;
    pos += did_bytes;
    has_content = fcs_bytes != 0;
    if (has_content) {
        content = le(buf + pos, fcs_bytes);
        if (fcs_bytes == 2)
            content += 256;
        pos += fcs_bytes;
    }
    if (single)
        window = content;
    block_max = window && window < BLOCK_MAX ? window : BLOCK_MAX;
    while (!last) {
        uint32_t bh, kind, size;
        if (len - pos < 3)
            return LOGB_ZSTD_INCOMPLETE;
        bh = (uint32_t)le(buf + pos, 3);
        last = bh & 1;
        kind = bh >> 1 & 3;
        size = bh >> 3;
        pos += 3;
        if (kind == 3)
            return LOGB_ZSTD_RESERVED_BLOCK;
        /* raw: size bytes stored; RLE: one byte stored, size decoded; compressed: at most block_max */
        if ((kind == 1 ? 1u : size) > len - pos)
            return LOGB_ZSTD_INCOMPLETE;
        pos += kind == 1 ? 1u : size;
        bound += kind == 2 ? block_max : size;
    }
    if (fhd >> 2 & 1) {
        if (len - pos < 4)
            return LOGB_ZSTD_INCOMPLETE;
        pos += 4;
    }
    if (pos < len)
        return LOGB_ZSTD_TRAILING;
    info[0] = pos;
    info[1] = bound;
    info[2] = content;
    info[3] = (uint64_t)has_content;
    return LOGB_ZSTD_OK;
}

size_t logb_zstd_frames_ok(const uint8_t *buf, size_t len, const uint64_t *frames, size_t n)
{
    size_t i;
    uint64_t info[4];
    for (i = 0; i < n; i++) {
        uint64_t start = frames[3 * i], end = frames[3 * i + 1], raw = frames[3 * i + 2];
        if (start > end || end > len)
            break;
        if (logb_zstd_frame_bound(buf + start, (size_t)(end - start), info) != LOGB_ZSTD_OK)
            break;
        if (!info[3] || info[2] != raw || info[1] < raw || !raw)
            break;
    }
    return i;
}

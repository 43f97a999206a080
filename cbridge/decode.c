/* Grouping the rows of a bus by message (CAN decode, docs/CAN.md).
 *
 * A stable counting sort: rows go to their group in row order, and every
 * column of the row moves with it, so each group's columns come out
 * contiguous (slices, no per-group gather). Two passes over the group
 * numbers, then one moving every column of each row at once, reading the
 * sources in order and writing at most `ngroups` sequential streams per
 * column.
 *
 * Portable C99: only <stdint.h>/<stddef.h>, no allocation, no writable static
 * data. */
#include "logb_cbridge.h"

static inline void move_item(const uint8_t *src, uint8_t *dst, size_t size, size_t from, uint64_t to)
{
    size_t j;
    switch (size) {
    case 1: dst[to] = src[from]; return;
    case 2: ((uint16_t *)(void *)dst)[to] = ((const uint16_t *)(const void *)src)[from]; return;
    case 4: ((uint32_t *)(void *)dst)[to] = ((const uint32_t *)(const void *)src)[from]; return;
    case 8: ((uint64_t *)(void *)dst)[to] = ((const uint64_t *)(const void *)src)[from]; return;
    default:
        for (j = 0; j < size; j++)
            dst[to * size + j] = src[from * size + j];
    }
}

size_t logb_group_rows(const uint32_t *group, size_t n, size_t ngroups, uint64_t *starts, int64_t *rows,
                       size_t ncols, const uintptr_t *cols)
{
    size_t i, g, c;
    uint64_t total = 0;
    for (g = 0; g <= ngroups; g++)
        starts[g] = 0;
    for (i = 0; i < n; i++)
        if (group[i] < ngroups)
            starts[group[i] + 1]++;
    for (g = 0; g < ngroups; g++) {
        total += starts[g + 1];
        starts[g + 1] = total;
    }
    /* One pass: starts[g] is group g's write cursor (it ends at starts[g + 1]),
     * every column of a row moves at the row's one cursor step. */
    for (i = 0; i < n; i++) {
        uint64_t to;
        g = group[i];
        if (g >= ngroups)
            continue;
        to = starts[g]++;
        if (rows)
            rows[to] = (int64_t)i;
        for (c = 0; c < ncols; c++)
            move_item((const uint8_t *)cols[3 * c], (uint8_t *)cols[3 * c + 1], (size_t)cols[3 * c + 2], i, to);
    }
    for (g = ngroups; g > 0; g--)
        starts[g] = starts[g - 1];
    starts[0] = 0;
    return (size_t)total;
}

/* ---------------------------------------------------------------- linear */

int logb_linear(const void *raw, size_t n, int kind, double a, double b, double *out)
{
    size_t i;
    /* a + (b * x), x the raw value as the nearest double (SPEC §7.3): two roundings, never fused */
#define LOGB_LINEAR(T)                                                   \
    for (i = 0; i < n; i++) {                                           \
        double x = (double)((const T *)raw)[i];                         \
        double y = b * x;                                               \
        out[i] = a + y;                                                 \
    }                                                                   \
    return LOGB_OK
    switch (kind) {
    case 1: LOGB_LINEAR(uint8_t);
    case 2: LOGB_LINEAR(uint16_t);
    case 4: LOGB_LINEAR(uint32_t);
    case 8: LOGB_LINEAR(uint64_t);
    case 1 | LOGB_KIND_SIGNED: LOGB_LINEAR(int8_t);
    case 2 | LOGB_KIND_SIGNED: LOGB_LINEAR(int16_t);
    case 4 | LOGB_KIND_SIGNED: LOGB_LINEAR(int32_t);
    case 8 | LOGB_KIND_SIGNED: LOGB_LINEAR(int64_t);
    default: return LOGB_EINVAL;
    }
#undef LOGB_LINEAR
}

/* ---------------------------------------------------------------- keys */

size_t logb_key_groups(const uint32_t *keys, size_t n, uint32_t *slots, unsigned log2_slots, uint32_t *distinct,
                       size_t max_distinct, uint32_t *group)
{
    const size_t cap = (size_t)1 << log2_slots, mask = cap - 1;
    size_t i, s, count = 0;
    uint32_t last_key = 0, last_group = UINT32_MAX;
    for (s = 0; s < cap; s++)
        slots[2 * s + 1] = UINT32_MAX; /* empty */
    for (i = 0; i < n; i++) {
        uint32_t key = keys[i];
        if (key != last_key || last_group == UINT32_MAX) {
            /* Fibonacci hashing, then linear probing; the table is at least twice max_distinct */
            s = (size_t)((key * UINT32_C(2654435761)) >> (32 - log2_slots)) & mask;
            while (slots[2 * s + 1] != UINT32_MAX && slots[2 * s] != key)
                s = (s + 1) & mask;
            if (slots[2 * s + 1] == UINT32_MAX) {
                if (count == max_distinct)
                    return (size_t)-1;
                slots[2 * s] = key;
                slots[2 * s + 1] = (uint32_t)count;
                distinct[count++] = key;
            }
            last_key = key;
            last_group = slots[2 * s + 1];
        }
        group[i] = last_group;
    }
    return count;
}

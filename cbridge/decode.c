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

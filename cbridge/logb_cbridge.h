/* logb cbridge: the hot paths of the Logb reader and writer in portable C99.
 *
 * One header for every build: the CPython extension (through cffi, see
 * cffi_build.py), a MicroPython user C module or dynamic native module (see
 * micropython/), or any bare-metal firmware. The portable kernels
 * (crc32c.c, bits.c, transpose.c, tails.c) include only <stdint.h> and
 * <stddef.h>, allocate nothing, and hold no writable static data: every table
 * is const. crc32c_hw.c (host only) adds the SSE4.2 / ARMv8 CRC instructions.
 *
 * Records model (SPEC §6.2, §8.2): N fixed records of S bytes. Byte j of
 * record i is at base[i*rs + j*bs]:
 *     row-major (filter none):       rs = S, bs = 1
 *     transposed (filter transpose): rs = 1, bs = N   (stored byte j*N + i)
 * so every field kernel reads and writes either layout directly.
 */
#ifndef LOGB_CBRIDGE_H
#define LOGB_CBRIDGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ CRC-32C
 * Castagnoli, reflected 0x82F63B78, init and final xor 0xFFFFFFFF.
 * `crc` is a previous result (0 to start), so calls chain over pieces:
 * logb_crc32c_sw(logb_crc32c_sw(0, a, na), b, nb) == CRC of a||b. */

/* Portable table-driven CRC: slice-by-8, or bytewise when compiled with
 * -DLOGB_CRC32C_SLICES=1 (1 KiB of tables instead of 8 KiB). */
uint32_t logb_crc32c_sw(uint32_t crc, const uint8_t *p, size_t n);

/* Host builds only (crc32c_hw.c). The hardware CRC instruction: SSE4.2
 * `crc32` on x86-64, the ARMv8 CRC32C instructions on aarch64, three
 * streams interleaved. Call it only when logb_crc32c_hw_available() said 1;
 * without compiler support it is logb_crc32c_sw. */
uint32_t logb_crc32c_hw(uint32_t crc, const uint8_t *p, size_t n);
/* 1 when this CPU (asked now: cpuid / getauxval) has the instruction.
 * Not free (cpuid can trap in a VM): ask once and keep the answer. */
int logb_crc32c_hw_available(void);
/* "sse4.2", "armv8-crc", or "" when not compiled in. */
const char *logb_crc32c_hw_name(void);

/* ------------------------------------------------------------------ fields
 * `kind` says what one output (extract) or input (pack) element is:
 * its size in bytes (1, 2, 4 or 8) or-ed with flags. */
#define LOGB_KIND_SIZE_MASK 0x0f
#define LOGB_KIND_SIGNED 0x10 /* sign-extend from the field width (extract) / the element (pack) */
#define LOGB_KIND_BOOL 0x20   /* extract: store (value != 0) in a 1-byte element */

/* Return codes */
#define LOGB_OK 0
#define LOGB_EINVAL (-1) /* width 0 or > 64, element too narrow, bad kind */

/* Extract one field of n records into out[i * ostride bytes] (element of
 * `kind`; out aligned to the element size). Unsigned: the raw bits. Signed:
 * the raw bits as width-bit two's complement, sign-extended. Floats: ask for
 * an unsigned element of the float's size and reinterpret the bits.
 * big != 0: big-endian bit numbering (SPEC §6.2). */
int logb_extract(const uint8_t *base, size_t n, size_t rs, size_t bs,
                 uint32_t bit_offset, uint32_t width, int big, int kind,
                 void *out, size_t ostride);

/* Several fields of the same n records in one call: field i (a spec) into
 * the elements at address outs[2*i], outs[2*i + 1] bytes apart, as
 * logb_extract would. LOGB_EINVAL (nothing written) if any spec is invalid. */
typedef struct {
    uint32_t bit_offset;
    uint32_t width;
    int32_t big;
    int32_t kind;
} logb_field_spec;
int logb_extract_many(const uint8_t *base, size_t n, size_t rs, size_t bs,
                      const logb_field_spec *specs, size_t count, const uintptr_t *outs);

/* logb_extract_many of several runs of `size`-byte records (DATA frames:
 * read in place, or decompressed) into one set of columns: run r is the
 * counts[r] records at address runs[r], row-major, or planar when planar[r]
 * is non-zero (a transposed frame: byte j of record i at j * counts[r] + i;
 * planar NULL: every run row-major), and its values follow run r-1's in
 * every output (field i's first element at outs[2*i], elements outs[2*i + 1]
 * bytes apart). `bases` (NULL: none) makes the last field a time axis: its
 * 8-byte elements of run r become value * scale + bases[r], mod 2^64.
 * LOGB_EINVAL (nothing written) if any spec is invalid, or the last is not
 * of 8-byte elements when `bases` is given. */
int logb_extract_frames(const uintptr_t *runs, const uint64_t *counts, const uint8_t *planar, size_t nruns,
                        size_t size, const logb_field_spec *specs, size_t count, const uintptr_t *outs,
                        uint64_t scale, const uint64_t *bases);

/* The inverse: store in[i * istride bytes] (element of `kind`, sign-extended
 * when LOGB_KIND_SIGNED) into the field of each record, masked to the field
 * width; bits outside the field are left as they are. */
int logb_pack(uint8_t *base, size_t n, size_t rs, size_t bs,
              uint32_t bit_offset, uint32_t width, int big, int kind,
              const void *in, size_t istride);

/* Fixed bytes/string fields (never byte-swapped): out[i*nbytes + j] =
 * byte (byte0 + j) of record i. */
void logb_gather(const uint8_t *base, size_t n, size_t rs, size_t bs,
                 size_t byte0, size_t nbytes, uint8_t *out);

/* ------------------------------------------------------------------ transpose
 * dst[j*n + i] = src[i*s + j] (N x S records -> S rows of N bytes) and back.
 * src and dst must not overlap. */
void logb_transpose(const uint8_t *src, uint8_t *dst, size_t n, size_t s);
void logb_untranspose(const uint8_t *src, uint8_t *dst, size_t n, size_t s);

/* ------------------------------------------------------------------ tails
 * Walk the tail region (SPEC §6.4): from data[pos], n records of v
 * length-prefixed (u32 little-endian) values each. Entry r*v + f of
 * offs/lens is record r's value of variable field f (start in data, length).
 * *end receives the position reached (where an error was found, or the end). */
#define LOGB_TAIL_PREFIX 1   /* the region ends inside a length prefix */
#define LOGB_TAIL_PAST_END 2 /* a value runs past the end */
#define LOGB_TAIL_LEFTOVER 3 /* bytes left over after the last tail */
int logb_walk_tails(const uint8_t *data, size_t len, size_t pos, size_t n, size_t v,
                    uint64_t *offs, uint32_t *lens, size_t *end);

/* ------------------------------------------------------------------ scan
 * The frame walk's hot loop (scan.c). From buf[pos] (pos <= len), every
 * well-formed frame in a row: a 12 + payload_len byte envelope that ends
 * inside buf and whose CRC-32C (computed by `crc`: logb_crc32c_sw, or
 * logb_crc32c_hw where available) matches. Each goes into table[] (at most
 * `cap`), its offset as base + its position in buf; its payload starts 8
 * bytes after it. *stop receives where the run ended (the first byte not
 * in a listed frame), *status why: */
#define LOGB_SCAN_END 0      /* fewer than 8 bytes (a frame header) left */
#define LOGB_SCAN_PAST_END 1 /* the frame at *stop runs past the end of buf */
#define LOGB_SCAN_CRC 2      /* the frame at *stop fails its CRC */
#define LOGB_SCAN_FULL 3     /* table full: call again from *stop */
typedef uint32_t (*logb_crc_fn)(uint32_t crc, const uint8_t *p, size_t n);
typedef struct {
    uint64_t offset;
    uint32_t payload_len;
    uint16_t stream_id;
    uint8_t type;
    uint8_t flags;
} logb_frame; /* 16 bytes, no padding */
/* Returns the number of frames listed. */
size_t logb_scan_frames(const uint8_t *buf, size_t len, size_t pos, uint64_t base,
                        logb_crc_fn crc, logb_frame *table, size_t cap,
                        size_t *stop, int *status);

/* The same walk, and heads[i] (heads: cap entries) the DATA header (the
 * first 28 bytes of the payload, SPEC §8.1) of listed frame i when it is a
 * DATA frame (type LOGB_FRAME_DATA) of at least 28 payload bytes, with
 * present = 1; all zero for any other frame. */
#define LOGB_FRAME_DATA 0x20
#define LOGB_DATA_HEAD_SIZE 28
typedef struct {
    uint64_t raw_size;
    uint8_t axis_base[8]; /* as stored: i64 ticks or f64, little-endian */
    uint32_t record_count;
    uint32_t run_id;
    uint8_t codec;
    uint8_t filter;
    uint16_t reserved;
    uint32_t present;
} logb_data_head; /* 32 bytes, no padding */
size_t logb_scan_data_frames(const uint8_t *buf, size_t len, size_t pos, uint64_t base,
                             logb_crc_fn crc, logb_frame *table, logb_data_head *heads, size_t cap,
                             size_t *stop, int *status);

/* ------------------------------------------------------------------ zstd
 * The one zstd frame (RFC 8878 §3.1.1) that buf[0..len) must be, from its
 * header and block headers alone (zstdframe.c; nothing is decompressed): a
 * raw or RLE block states what it decodes to, a compressed one decodes to at
 * most Block_Maximum_Size (128 KiB, or the window when smaller). On
 * LOGB_ZSTD_OK, info[0] is the frame's size (len), info[1] the most it can
 * decode to, info[2] its Frame_Content_Size and info[3] 1 when it states one
 * (else info[2] is 0). Otherwise the first problem, and info is untouched: */
#define LOGB_ZSTD_OK 0
#define LOGB_ZSTD_NOT_ZSTD 1       /* no zstd magic number (a skippable frame is not data) */
#define LOGB_ZSTD_HEADER_SHORT 2   /* the frame header runs past len */
#define LOGB_ZSTD_RESERVED_BIT 3   /* the header descriptor's reserved bit is set */
#define LOGB_ZSTD_WINDOW 4         /* a window over 2**31 bytes (libzstd refuses it) */
#define LOGB_ZSTD_DICTIONARY 5     /* the frame needs a dictionary */
#define LOGB_ZSTD_RESERVED_BLOCK 6 /* a block of the reserved type */
#define LOGB_ZSTD_INCOMPLETE 7     /* a block or the checksum runs past len */
#define LOGB_ZSTD_TRAILING 8       /* bytes after the frame */
int logb_zstd_frame_bound(const uint8_t *buf, size_t len, uint64_t *info);

/* Many frames of one buffer at once: frames[3i..3i+2] are frame i's start
 * and end in buf and the raw_size it is to decode to. Returns how many
 * frames, from the first, are each one zstd frame that fills its range,
 * states its content size, and can decode to it: content size == raw_size
 * > 0 and the bound at least that (a decompressor given raw_size bytes of
 * room then decides the rest). */
size_t logb_zstd_frames_ok(const uint8_t *buf, size_t len, const uint64_t *frames, size_t n);

/* ------------------------------------------------------------------ group
 * Rows by group (decode.c): a stable counting sort of the n rows by
 * group[i] (0..ngroups-1; ngroups or more leaves the row out). starts
 * (ngroups + 1 entries) receives where each group begins and, last, how many
 * rows were kept; rows (NULL: not wanted) their indices, group by group in row
 * order. Each of the ncols columns is three entries of cols: a source of n
 * items, a destination for the kept ones, the item size in bytes; it is moved
 * in the same order. Returns the number of rows kept. */
size_t logb_group_rows(const uint32_t *group, size_t n, size_t ngroups, uint64_t *starts, int64_t *rows,
                       size_t ncols, const uintptr_t *cols);

/* Keys to group numbers (decode.c): group[i] = the number of keys[i] among the
 * distinct keys in order of first appearance, which go to distinct[]. slots is
 * scratch of 2 << log2_slots entries (1 <= log2_slots <= 31, at least twice
 * max_distinct slots). Returns the number of distinct keys, or (size_t)-1 when
 * there are more than max_distinct (group is then incomplete). */
size_t logb_key_groups(const uint32_t *keys, size_t n, uint32_t *slots, unsigned log2_slots,
                       uint32_t *distinct, size_t max_distinct, uint32_t *group);

/* A linear conversion (SPEC §7.3) in one pass (decode.c): out[i] = a + (b * x),
 * x raw element i (of `kind`: size 1, 2, 4 or 8, LOGB_KIND_SIGNED for signed) as
 * the nearest double. LOGB_EINVAL for another kind. */
int logb_linear(const void *raw, size_t n, int kind, double a, double b, double *out);

#ifdef __cplusplus
}
#endif

#endif /* LOGB_CBRIDGE_H */

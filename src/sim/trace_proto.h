/*
 * The binary form of traces, version 1 (docs/trace-format.md): fixed-width
 * little-endian headers, events as LEB128 varints in per-task blocks chained
 * by file offset, so each task's cursor reads only its own blocks.
 *
 *   file header      SIM_BIN_HEADER_SIZE bytes at offset 0
 *   task table       ntasks x SIM_BIN_TASK_SIZE bytes at task_table_off
 *   names            ntasks task names then nkernels kernel names, each a
 *                    u16 length and its bytes, at names_off
 *   blocks           from data_off: SIM_BIN_BLOCK_SIZE header + payload
 *
 * Everything the reader needs to check a file is here; helpers are inline so
 * that the reader and the writer share one definition of every field.
 */
#ifndef SIM_TRACE_PROTO_H
#define SIM_TRACE_PROTO_H

#include <stdint.h>
#include <string.h>

#define SIM_BIN_MAGIC        "GMUXTRC\x01" /* 8 bytes; the last byte is not text */
#define SIM_BIN_MAGIC_LEN    8
#define SIM_BIN_BLOCK_MAGIC  0x314b4c42u /* "BLK1" little-endian */
#define SIM_BIN_COMPLETE     1u          /* flags: the writer closed the file */
#define SIM_BIN_BLOCK_TARGET (64u << 10) /* writer's payload size per block */
#define SIM_BIN_BLOCK_MAX    (64u << 20) /* largest payload a reader accepts */

/* File header field offsets. */
enum {
    SIM_BIN_H_MAGIC = 0,       /* 8 bytes */
    SIM_BIN_H_VERSION = 8,     /* u32 */
    SIM_BIN_H_FLAGS = 12,      /* u32 */
    SIM_BIN_H_NTASKS = 16,     /* u32 */
    SIM_BIN_H_NKERNELS = 20,   /* u32 */
    SIM_BIN_H_TASK_TABLE = 24, /* u64 offset */
    SIM_BIN_H_NAMES = 32,      /* u64 offset */
    SIM_BIN_H_DATA = 40,       /* u64 offset of the first block */
    SIM_BIN_H_FILE_SIZE = 48,  /* u64 size of the complete file */
    SIM_BIN_HEADER_SIZE = 64,  /* 56..63 reserved, zero */
};

/* Task table entry: where the task's first block is and how many events it has. */
enum {
    SIM_BIN_T_FIRST_BLOCK = 0, /* u64 offset, 0 when the task has no event */
    SIM_BIN_T_NEVENTS = 8,     /* u64 */
    SIM_BIN_TASK_SIZE = 16,
};

/* Block header. */
enum {
    SIM_BIN_B_MAGIC = 0,    /* u32 SIM_BIN_BLOCK_MAGIC */
    SIM_BIN_B_TASK = 4,     /* u32 */
    SIM_BIN_B_LEN = 8,      /* u32 payload bytes */
    SIM_BIN_B_NEVENTS = 12, /* u32 events in the payload */
    SIM_BIN_B_NEXT = 16,    /* u64 offset of the task's next block, 0 if last */
    SIM_BIN_BLOCK_SIZE = 24,
};

static inline void sim_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void sim_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t sim_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t sim_get_u64(const uint8_t *p)
{
    return (uint64_t)sim_get_u32(p) | (uint64_t)sim_get_u32(p + 4) << 32;
}

/* LEB128: 7 bits per byte, low first, high bit set on every byte but the last. */
#define SIM_VARINT_MAX 10

static inline uint8_t *sim_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Reads a varint from [*pp, end); 0 on success, -1 if truncated or overlong. */
static inline int sim_get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) { /* the common one-byte case */
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t v = 0;
    if (end - p >= SIM_VARINT_MAX) { /* no bound check per byte */
        for (unsigned shift = 0; shift < 63; shift += 7) {
            uint8_t b = *p++;
            v |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80)) {
                *out = v;
                *pp = p;
                return 0;
            }
        }
        if (*p > 1)
            return -1;
        *out = v | (uint64_t)*p << 63;
        *pp = p + 1;
        return 0;
    }
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* Addresses (pointer arguments and range starts) are stored as the zigzag
 * varint of their difference from the previous address in the same block
 * (0 at the start of each block), so a range that starts at a pointer
 * argument costs one byte, and blocks decode independently. */
static inline uint64_t sim_zigzag(uint64_t addr, uint64_t prev)
{
    uint64_t d = addr - prev;
    return (d << 1) ^ (uint64_t)(-(int64_t)(d >> 63));
}

static inline uint64_t sim_unzigzag(uint64_t z, uint64_t prev)
{
    return prev + ((z >> 1) ^ (uint64_t)(-(int64_t)(z & 1)));
}

/* Event kinds in the payload are the sim_event_kind_t values, one byte. */

#endif /* SIM_TRACE_PROTO_H */

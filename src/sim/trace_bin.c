/*
 * Reader of the binary form of traces (trace_proto.h, docs/trace-format.md).
 * One cursor per task holds one block of that task at a time and follows the
 * block chain, so memory is bounded by tasks x block size. Decoding an event
 * allocates nothing once the cursor's arrays have grown to the largest launch.
 * Errors name the absolute byte offset of the bad record.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/trace_check.h"
#include "sim/trace_impl.h"
#include "sim/trace_proto.h"

typedef struct bin_cursor {
    uint8_t *buf; /* current block's payload */
    size_t cap;
    const uint8_t *p, *end;
    uint64_t block_off; /* offset of the current block header */
    uint64_t next;      /* offset of the next block, 0 if none */
    uint32_t left;      /* events left in the current block */
    uint64_t prev;      /* last address decoded in the block (delta base) */
    uint64_t expected;  /* events the task table promises */
    uint64_t delivered;
    int state;          /* 0 reading, 1 at end, 2 failed */
    gmux_status_t fail; /* what a failed cursor says again: the status it failed with */
    sim_arg_t *args;
    uint32_t cap_args;
    sim_range_t *ranges;
    uint32_t cap_ranges;
    sim_check_t check;
    char error[256];
} bin_cursor_t;

typedef struct bin_source {
    sim_source_t base;
    char *path;
    int fd;
    uint64_t size;
    uint64_t data_off;
    char **names; /* ntasks + nkernels */
    bin_cursor_t *cur;
} bin_source_t;

static gmux_status_t cfail(bin_source_t *s, bin_cursor_t *c, gmux_status_t st, uint64_t off,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static gmux_status_t cfail(bin_source_t *s, bin_cursor_t *c, gmux_status_t st, uint64_t off,
                           const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    c->state = 2;
    c->fail = st;
    snprintf(c->error, sizeof(c->error), "%s: offset %" PRIu64 ": %s", s->path, off, why);
    memcpy(s->base.error, c->error, sizeof(s->base.error));
    return st;
}

static int read_at(int fd, void *p, size_t n, uint64_t off)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t k = pread(fd, b, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        b += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

static gmux_status_t load_block(bin_source_t *s, bin_cursor_t *c, uint32_t task, uint64_t off)
{
    uint8_t h[SIM_BIN_BLOCK_SIZE];
    if (off < s->data_off || off > s->size - SIM_BIN_BLOCK_SIZE || off <= c->block_off)
        return cfail(s, c, GMUX_ERR_PARSE, c->block_off + SIM_BIN_B_NEXT,
                     "block offset %" PRIu64 " outside the data or not increasing", off);
    if (read_at(s->fd, h, sizeof(h), off))
        return cfail(s, c, GMUX_ERR_IO, off, "read error");
    uint32_t len = sim_get_u32(h + SIM_BIN_B_LEN), nev = sim_get_u32(h + SIM_BIN_B_NEVENTS);
    uint64_t next = sim_get_u64(h + SIM_BIN_B_NEXT);
    if (sim_get_u32(h + SIM_BIN_B_MAGIC) != SIM_BIN_BLOCK_MAGIC)
        return cfail(s, c, GMUX_ERR_PARSE, off, "bad block magic");
    if (sim_get_u32(h + SIM_BIN_B_TASK) != task)
        return cfail(s, c, GMUX_ERR_PARSE, off + SIM_BIN_B_TASK,
                     "block belongs to task %" PRIu32 ", not %" PRIu32,
                     sim_get_u32(h + SIM_BIN_B_TASK), task);
    if (len > SIM_BIN_BLOCK_MAX || len > s->size - off - SIM_BIN_BLOCK_SIZE || nev == 0 ||
        nev > len)
        return cfail(s, c, GMUX_ERR_PARSE, off + SIM_BIN_B_LEN,
                     "block length %" PRIu32 " or event count %" PRIu32 " impossible", len, nev);
    if (len > c->cap) {
        uint8_t *b = realloc(c->buf, len);
        if (!b)
            return cfail(s, c, GMUX_ERR_NOMEM, off, "out of memory");
        c->buf = b;
        c->cap = len;
    }
    if (read_at(s->fd, c->buf, len, off + SIM_BIN_BLOCK_SIZE))
        return cfail(s, c, GMUX_ERR_IO, off, "read error");
    c->block_off = off;
    c->next = next;
    c->left = nev;
    c->prev = 0;
    c->p = c->buf;
    c->end = c->buf + len;
    return GMUX_OK;
}

/* Decodes one event at c->p; returns NULL on success or a reason, which is
 * the input's (GMUX_ERR_PARSE) unless decode_oom: out of memory. */
static const char decode_oom[] = "out of memory";
static const char *decode(bin_cursor_t *c, sim_event_t *ev)
{
    const uint8_t *p = c->p, *end = c->end;
    uint64_t v[10];
#define GET(x)                                                                                     \
    do {                                                                                           \
        if (sim_get_varint(&p, end, &(x)))                                                         \
            return "truncated or overlong number";                                                 \
    } while (0)
    if (p >= end)
        return "block ends inside an event";
    uint8_t kind = *p++;
    ev->kind = (sim_event_kind_t)kind;
    if (kind == SIM_EV_ALLOC) {
        GET(ev->u.alloc.id);
        GET(ev->u.alloc.base);
        GET(ev->u.alloc.size);
    } else if (kind == SIM_EV_FREE) {
        GET(ev->u.free.id);
    } else if (kind == SIM_EV_LAUNCH) {
        sim_launch_ev_t *l = &ev->u.launch;
        for (int i = 0; i < 9; i++)
            GET(v[i]);
        for (int i = 0; i < 7; i++)
            if (v[i] > UINT32_MAX)
                return "kernel id or grid/block dimension above 2^32-1";
        l->kernel = (uint32_t)v[0];
        for (int i = 0; i < 3; i++) {
            l->grid[i] = (uint32_t)v[1 + i];
            l->block[i] = (uint32_t)v[4 + i];
        }
        l->time_ns = v[7];
        if (v[8] > SIM_TRACE_MAX_ARGS)
            return "too many arguments";
        l->nargs = (uint32_t)v[8];
        if (sim_trace_grow((void **)&c->args, &c->cap_args, l->nargs, sizeof(*c->args)))
            return decode_oom;
        for (uint32_t i = 0; i < l->nargs; i++) {
            if (p >= end)
                return "block ends inside an argument";
            c->args[i].kind = *p++;
            GET(c->args[i].value);
            if (c->args[i].kind == ENG_ARG_PTR)
                c->prev = c->args[i].value = sim_unzigzag(c->args[i].value, c->prev);
        }
        GET(v[9]);
        if (v[9] > SIM_TRACE_MAX_RANGES || v[9] > (uint64_t)(end - p) / 3)
            return "too many ranges";
        l->nranges = (uint32_t)v[9];
        if (sim_trace_grow((void **)&c->ranges, &c->cap_ranges, l->nranges, sizeof(*c->ranges)))
            return decode_oom;
        for (uint32_t i = 0; i < l->nranges; i++) {
            if (p >= end)
                return "block ends inside a range";
            c->ranges[i].mode = *p++;
            GET(c->ranges[i].addr);
            c->prev = c->ranges[i].addr = sim_unzigzag(c->ranges[i].addr, c->prev);
            GET(c->ranges[i].len);
        }
        l->args = c->args;
        l->ranges = c->ranges;
    } else {
        return "unknown event kind";
    }
#undef GET
    c->p = p;
    return NULL;
}

static gmux_status_t bin_next(sim_source_t *src, uint32_t task, sim_event_t *ev)
{
    bin_source_t *s = (bin_source_t *)src;
    if (task >= src->ntasks) {
        snprintf(src->error, sizeof(src->error), "task %" PRIu32 " out of range", task);
        return GMUX_ERR_INVALID;
    }
    bin_cursor_t *c = &s->cur[task];
    if (c->state == 1)
        return GMUX_ERR_NOT_FOUND;
    if (c->state == 2) {
        memcpy(src->error, c->error, sizeof(src->error));
        return c->fail;
    }
    if (c->left == 0) {
        if (c->p != c->end)
            return cfail(s, c, GMUX_ERR_PARSE,
                         c->block_off + SIM_BIN_BLOCK_SIZE + (uint64_t)(c->p - c->buf),
                         "bytes left over after the block's last event");
        if (c->next == 0) {
            if (c->delivered != c->expected)
                return cfail(s, c, GMUX_ERR_PARSE, c->block_off,
                             "task has %" PRIu64 " events, the task table says %" PRIu64,
                             c->delivered, c->expected);
            c->state = 1;
            return GMUX_ERR_NOT_FOUND;
        }
        gmux_status_t st = load_block(s, c, task, c->next);
        if (st != GMUX_OK)
            return st;
    }
    uint64_t at = c->block_off + SIM_BIN_BLOCK_SIZE + (uint64_t)(c->p - c->buf);
    const char *why = decode(c, ev);
    if (why)
        return cfail(s, c, why == decode_oom ? GMUX_ERR_NOMEM : GMUX_ERR_PARSE, at, "%s", why);
    char reason[200];
    gmux_status_t st = sim_check_event(&c->check, ev, reason, sizeof(reason));
    if (st != GMUX_OK)
        return cfail(s, c, st, at, "%s", reason);
    c->left--;
    c->delivered++;
    return GMUX_OK;
}

static void bin_close(sim_source_t *src)
{
    bin_source_t *s = (bin_source_t *)src;
    for (uint32_t i = 0; s->cur && i < src->ntasks; i++) {
        free(s->cur[i].buf);
        free(s->cur[i].args);
        free(s->cur[i].ranges);
        sim_check_fini(&s->cur[i].check);
    }
    free(s->cur);
    for (uint32_t i = 0; s->names && i < src->ntasks + src->nkernels; i++)
        free(s->names[i]);
    free(s->names);
    if (s->fd >= 0)
        close(s->fd);
    free(s->path);
    free(s);
}

static const sim_source_ops_t bin_ops = {.next = bin_next, .close = bin_close};

#define OPEN_FAIL(status, off, ...)                                                                \
    do {                                                                                           \
        int n_ = snprintf(err, errlen, "%s: offset %" PRIu64 ": ", path, (uint64_t)(off));         \
        if (n_ > 0 && (size_t)n_ < errlen)                                                         \
            snprintf(err + n_, errlen - (size_t)n_, __VA_ARGS__);                                  \
        st = (status);                                                                             \
        goto out_close;                                                                            \
    } while (0)

/* Reads header, task table and names; sets up one cursor per task. */
static gmux_status_t read_header(bin_source_t *s, const char *path, char *err, size_t errlen)
{
    gmux_status_t st = GMUX_OK;
    uint8_t h[SIM_BIN_HEADER_SIZE];
    uint8_t *table = NULL;
    if (s->size < SIM_BIN_HEADER_SIZE || read_at(s->fd, h, sizeof(h), 0))
        OPEN_FAIL(GMUX_ERR_PARSE, s->size, "file too short for the %d-byte header",
                  SIM_BIN_HEADER_SIZE);
    uint32_t version = sim_get_u32(h + SIM_BIN_H_VERSION);
    if (version != SIM_TRACE_VERSION)
        OPEN_FAIL(GMUX_ERR_VERSION, SIM_BIN_H_VERSION,
                  "trace version %" PRIu32 " not supported (reads %d)", version, SIM_TRACE_VERSION);
    if (!(sim_get_u32(h + SIM_BIN_H_FLAGS) & SIM_BIN_COMPLETE))
        OPEN_FAIL(GMUX_ERR_PARSE, SIM_BIN_H_FLAGS, "incomplete file (its writer did not finish)");
    uint64_t fsize = sim_get_u64(h + SIM_BIN_H_FILE_SIZE);
    if (fsize != s->size)
        OPEN_FAIL(GMUX_ERR_PARSE, s->size < fsize ? s->size : SIM_BIN_H_FILE_SIZE,
                  "file is %" PRIu64 " bytes, its header says %" PRIu64 " (truncated?)", s->size,
                  fsize);
    uint32_t ntasks = sim_get_u32(h + SIM_BIN_H_NTASKS);
    uint32_t nkernels = sim_get_u32(h + SIM_BIN_H_NKERNELS);
    uint64_t toff = sim_get_u64(h + SIM_BIN_H_TASK_TABLE), noff = sim_get_u64(h + SIM_BIN_H_NAMES);
    s->data_off = sim_get_u64(h + SIM_BIN_H_DATA);
    if (ntasks == 0 || ntasks > SIM_TRACE_MAX_TASKS || nkernels > SIM_TRACE_MAX_KERNELS)
        OPEN_FAIL(GMUX_ERR_PARSE, SIM_BIN_H_NTASKS, "task or kernel count out of range");
    if (toff != SIM_BIN_HEADER_SIZE || noff != toff + (uint64_t)ntasks * SIM_BIN_TASK_SIZE ||
        s->data_off < noff || s->data_off > s->size)
        OPEN_FAIL(GMUX_ERR_PARSE, SIM_BIN_H_TASK_TABLE, "section offsets inconsistent");
    size_t nnames = (size_t)ntasks + nkernels;
    uint64_t names_len = s->data_off - toff;
    if (names_len > (64u << 20) || !(table = malloc(names_len)) ||
        !(s->names = calloc(nnames, sizeof(char *))) || !(s->cur = calloc(ntasks, sizeof(*s->cur))))
        OPEN_FAIL(GMUX_ERR_NOMEM, toff, "tables too large (out of memory)");
    s->base.ntasks = ntasks;
    s->base.nkernels = nkernels;
    if (read_at(s->fd, table, names_len, toff))
        OPEN_FAIL(GMUX_ERR_IO, toff, "read error");
    const uint8_t *p = table + (noff - toff), *end = table + names_len;
    for (size_t i = 0; i < nnames; i++) {
        uint64_t at = toff + (uint64_t)(p - table);
        if (end - p < 2)
            OPEN_FAIL(GMUX_ERR_PARSE, at, "names run past the data offset");
        size_t len = (size_t)p[0] | (size_t)p[1] << 8;
        if ((size_t)(end - p - 2) < len)
            OPEN_FAIL(GMUX_ERR_PARSE, at, "names run past the data offset");
        if (!(s->names[i] = strndup((const char *)p + 2, len)))
            OPEN_FAIL(GMUX_ERR_NOMEM, at, "out of memory");
        if (strlen(s->names[i]) != len || !sim_trace_name_ok(s->names[i]))
            OPEN_FAIL(GMUX_ERR_PARSE, at, "invalid %s name", i < ntasks ? "task" : "kernel");
        p += 2 + len;
    }
    if (p != end)
        OPEN_FAIL(GMUX_ERR_PARSE, toff + (uint64_t)(p - table), "gap between names and data");
    for (uint32_t i = 0; i < ntasks; i++) {
        bin_cursor_t *c = &s->cur[i];
        const uint8_t *e = table + (uint64_t)i * SIM_BIN_TASK_SIZE;
        sim_check_init(&c->check, nkernels);
        c->next = sim_get_u64(e + SIM_BIN_T_FIRST_BLOCK);
        c->expected = sim_get_u64(e + SIM_BIN_T_NEVENTS);
        if ((c->next == 0) != (c->expected == 0))
            OPEN_FAIL(GMUX_ERR_PARSE, toff + (uint64_t)i * SIM_BIN_TASK_SIZE,
                      "task %" PRIu32 ": first block and event count disagree", i);
    }
    s->base.task_names = (const char *const *)s->names;
    s->base.kernel_names = (const char *const *)s->names + ntasks;
out_close:
    free(table);
    return st;
}

gmux_status_t sim_bin_open(const char *path, sim_source_t **src_p, char *err, size_t errlen)
{
    gmux_status_t st = GMUX_ERR_NOMEM;
    bin_source_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->path = strdup(path))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return st;
    }
    s->base.ops = &bin_ops;
    struct stat sb;
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0 || fstat(s->fd, &sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        st = GMUX_ERR_IO;
        goto out_source;
    }
    s->size = (uint64_t)sb.st_size;
    if ((st = read_header(s, path, err, errlen)) != GMUX_OK)
        goto out_source;
    *src_p = &s->base;
    return GMUX_OK;
out_source:
    bin_close(&s->base);
    return st;
}

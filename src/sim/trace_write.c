/*
 * Writers of both trace forms (docs/trace-format.md). Every event is checked
 * with sim_check before it is written, so a file this writer completes is one
 * the readers accept.
 *
 * The binary writer keeps one block buffer per task (SIM_BIN_BLOCK_TARGET
 * bytes) and chains each task's blocks by patching the previous block's
 * "next" field when the following one is written; the task table and the
 * header's COMPLETE flag are written at close, so a file cut short is
 * recognised as incomplete.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/trace_check.h"
#include "common/array.h"
#include "sim/trace_impl.h"
#include "sim/trace_proto.h"

typedef struct wtask {
    uint8_t *buf;
    size_t len, cap;
    uint32_t nev;     /* events in buf */
    uint64_t prev;    /* last address encoded in buf (delta base) */
    uint64_t first;   /* offset of the first block, 0 if none yet */
    uint64_t last;    /* offset of the last block written */
    uint64_t nevents; /* events of this task so far */
    sim_check_t check;
} wtask_t;

struct sim_trace_writer {
    sim_trace_format_t format;
    char *path;
    FILE *f; /* text */
    int fd;  /* binary */
    uint32_t ntasks, nkernels;
    char **tasks, **kernels;
    int started; /* the first event (or close) fixed the declarations */
    wtask_t *wt;
    uint64_t off; /* binary: where the next block goes */
    gmux_status_t failed;
    char error[256];
};

static gmux_status_t wfail(sim_trace_writer_t *w, gmux_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static gmux_status_t wfail(sim_trace_writer_t *w, gmux_status_t st, const char *fmt, ...)
{
    if (w->failed == GMUX_OK) {
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(w->error, sizeof(w->error), "%s: ", w->path);
        vsnprintf(w->error + n, sizeof(w->error) - (size_t)n, fmt, ap);
        va_end(ap);
        w->failed = st;
    }
    return st;
}

int sim_trace_name_ok(const char *name)
{
    size_t n = strnlen(name, SIM_TRACE_MAX_NAME + 1);
    if (n == 0 || n > SIM_TRACE_MAX_NAME || name[0] == ' ' || name[n - 1] == ' ')
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return 0;
    return 1;
}

gmux_status_t sim_trace_writer_open(const char *path, sim_trace_format_t format,
                                    sim_trace_writer_t **w_p, char *err, size_t errlen)
{
    if (format != SIM_TRACE_TEXT && format != SIM_TRACE_BINARY) {
        snprintf(err, errlen, "unknown trace format %d", (int)format);
        return GMUX_ERR_INVALID;
    }
    sim_trace_writer_t *w = calloc(1, sizeof(*w));
    if (!w || !(w->path = strdup(path))) {
        free(w);
        snprintf(err, errlen, "out of memory");
        return GMUX_ERR_NOMEM;
    }
    w->format = format;
    w->fd = -1;
    if (format == SIM_TRACE_TEXT) {
        w->f = fopen(path, "w");
        if (w->f) {
            setvbuf(w->f, NULL, _IOFBF, 1 << 20);
            fprintf(w->f, "%s %d\n", SIM_TEXT_MAGIC, SIM_TRACE_VERSION);
        }
    } else {
        w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (!w->f && w->fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(w->path);
        free(w);
        return GMUX_ERR_IO;
    }
    *w_p = w;
    return GMUX_OK;
}

static gmux_status_t declare(sim_trace_writer_t *w, char ***names, uint32_t *n, uint32_t id,
                             uint32_t max, const char *what, const char *name)
{
    if (w->failed)
        return w->failed;
    if (w->started)
        return wfail(w, GMUX_ERR_STATE, "%s %" PRIu32 " declared after the first event", what, id);
    if (id != *n || id >= max)
        return wfail(w, GMUX_ERR_INVALID, "%s id %" PRIu32 " out of order (expected %" PRIu32 ")",
                     what, id, *n);
    if (!name || !sim_trace_name_ok(name))
        return wfail(w, GMUX_ERR_INVALID, "%s %" PRIu32 ": invalid name", what, id);
    char **v = realloc(*names, (*n + 1) * sizeof(*v));
    if (!v)
        return wfail(w, GMUX_ERR_NOMEM, "out of memory");
    *names = v;
    if (!(v[*n] = strdup(name)))
        return wfail(w, GMUX_ERR_NOMEM, "out of memory");
    (*n)++;
    if (w->f)
        fprintf(w->f, "%s %" PRIu32 " %s\n", what, id, name);
    return GMUX_OK;
}

gmux_status_t sim_trace_writer_task(sim_trace_writer_t *w, uint32_t task, const char *name)
{
    return declare(w, &w->tasks, &w->ntasks, task, SIM_TRACE_MAX_TASKS, "task", name);
}

gmux_status_t sim_trace_writer_kernel(sim_trace_writer_t *w, uint32_t kernel, const char *name)
{
    return declare(w, &w->kernels, &w->nkernels, kernel, SIM_TRACE_MAX_KERNELS, "kernel", name);
}

static gmux_status_t write_at(sim_trace_writer_t *w, const void *p, size_t n, uint64_t off)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t k = pwrite(w->fd, b, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return wfail(w, GMUX_ERR_IO, "write: %s", k < 0 ? strerror(errno) : "no progress");
        b += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return GMUX_OK;
}

/* Fixes the declarations: the binary form writes its names now. */
static gmux_status_t start(sim_trace_writer_t *w)
{
    if (w->started)
        return GMUX_OK;
    w->started = 1;
    if (w->ntasks == 0)
        return wfail(w, GMUX_ERR_STATE, "no task declared");
    if (!(w->wt = calloc(w->ntasks, sizeof(*w->wt))))
        return wfail(w, GMUX_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < w->ntasks; i++)
        sim_check_init(&w->wt[i].check, w->nkernels);
    if (w->format != SIM_TRACE_BINARY)
        return GMUX_OK;
    uint64_t names = SIM_BIN_HEADER_SIZE + (uint64_t)w->ntasks * SIM_BIN_TASK_SIZE;
    uint64_t off = names;
    for (uint32_t i = 0; i < w->ntasks + w->nkernels; i++) {
        const char *n = i < w->ntasks ? w->tasks[i] : w->kernels[i - w->ntasks];
        uint8_t len[2] = {(uint8_t)strlen(n), (uint8_t)(strlen(n) >> 8)};
        if (write_at(w, len, 2, off) || write_at(w, n, strlen(n), off + 2))
            return w->failed;
        off += 2 + strlen(n);
    }
    w->off = off; /* header and task table are written at close */
    return GMUX_OK;
}

static gmux_status_t flush_block(sim_trace_writer_t *w, wtask_t *t, uint32_t task)
{
    if (t->nev == 0)
        return GMUX_OK;
    uint8_t h[SIM_BIN_BLOCK_SIZE] = {0};
    sim_put_u32(h + SIM_BIN_B_MAGIC, SIM_BIN_BLOCK_MAGIC);
    sim_put_u32(h + SIM_BIN_B_TASK, task);
    sim_put_u32(h + SIM_BIN_B_LEN, (uint32_t)t->len);
    sim_put_u32(h + SIM_BIN_B_NEVENTS, t->nev);
    if (write_at(w, h, sizeof(h), w->off) ||
        write_at(w, t->buf, t->len, w->off + SIM_BIN_BLOCK_SIZE))
        return w->failed;
    if (t->first == 0) {
        t->first = w->off;
    } else {
        uint8_t next[8];
        sim_put_u64(next, w->off);
        if (write_at(w, next, 8, t->last + SIM_BIN_B_NEXT))
            return w->failed;
    }
    t->last = w->off;
    w->off += SIM_BIN_BLOCK_SIZE + t->len;
    t->len = 0;
    t->nev = 0;
    t->prev = 0;
    return GMUX_OK;
}

static size_t encode_event(uint8_t *p0, const sim_event_t *ev, uint64_t *prev)
{
    uint8_t *p = p0;
    *p++ = (uint8_t)ev->kind;
    if (ev->kind == SIM_EV_ALLOC) {
        p = sim_put_varint(p, ev->u.alloc.id);
        p = sim_put_varint(p, ev->u.alloc.base);
        p = sim_put_varint(p, ev->u.alloc.size);
    } else if (ev->kind == SIM_EV_FREE) {
        p = sim_put_varint(p, ev->u.free.id);
    } else {
        const sim_launch_ev_t *l = &ev->u.launch;
        p = sim_put_varint(p, l->kernel);
        for (int i = 0; i < 3; i++)
            p = sim_put_varint(p, l->grid[i]);
        for (int i = 0; i < 3; i++)
            p = sim_put_varint(p, l->block[i]);
        p = sim_put_varint(p, l->time_ns);
        p = sim_put_varint(p, l->nargs);
        for (uint32_t i = 0; i < l->nargs; i++) {
            *p++ = l->args[i].kind;
            if (l->args[i].kind == ENG_ARG_PTR) {
                p = sim_put_varint(p, sim_zigzag(l->args[i].value, *prev));
                *prev = l->args[i].value;
            } else {
                p = sim_put_varint(p, l->args[i].value);
            }
        }
        p = sim_put_varint(p, l->nranges);
        for (uint32_t i = 0; i < l->nranges; i++) {
            *p++ = l->ranges[i].mode;
            p = sim_put_varint(p, sim_zigzag(l->ranges[i].addr, *prev));
            *prev = l->ranges[i].addr;
            p = sim_put_varint(p, l->ranges[i].len);
        }
    }
    return (size_t)(p - p0);
}

/* Number formatting for the text form: printf is the bottleneck otherwise. */
static char *put_dec(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_hex(char *p, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = digits[v & 15];
        v >>= 4;
    } while (v);
    *p++ = '0';
    *p++ = 'x';
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_str(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static char *put_dim3(char *p, const char *key, const uint32_t d[3])
{
    p = put_str(p, key);
    for (int i = 0; i < 3; i++) {
        p = put_dec(p, d[i]);
        *p++ = i < 2 ? ',' : ' ';
    }
    return p;
}

/* Writes one event line; line must hold the longest possible line. */
static size_t text_line(char *line, uint32_t task, const sim_event_t *ev)
{
    char *p = line;
    if (ev->kind == SIM_EV_ALLOC) {
        p = put_str(p, "alloc ");
        p = put_dec(p, task);
        *p++ = ' ';
        p = put_dec(p, ev->u.alloc.id);
        *p++ = ' ';
        p = put_hex(p, ev->u.alloc.base);
        *p++ = ' ';
        p = put_dec(p, ev->u.alloc.size);
    } else if (ev->kind == SIM_EV_FREE) {
        p = put_str(p, "free ");
        p = put_dec(p, task);
        *p++ = ' ';
        p = put_dec(p, ev->u.free.id);
    } else {
        const sim_launch_ev_t *l = &ev->u.launch;
        p = put_str(p, "launch ");
        p = put_dec(p, task);
        *p++ = ' ';
        p = put_dec(p, l->kernel);
        *p++ = ' ';
        p = put_dim3(p, "grid=", l->grid);
        p = put_dim3(p, "block=", l->block);
        p = put_str(p, "ns=");
        p = put_dec(p, l->time_ns);
        p = put_str(p, " args=");
        if (l->nargs == 0)
            *p++ = '-';
        for (uint32_t i = 0; i < l->nargs; i++) {
            if (i)
                *p++ = ',';
            if (l->args[i].kind == ENG_ARG_PTR) {
                p = put_str(p, "p:");
                p = put_hex(p, l->args[i].value);
            } else {
                p = put_str(p, "v:");
                p = put_dec(p, l->args[i].value);
            }
        }
        p = put_str(p, " touch=");
        if (l->nranges == 0)
            *p++ = '-';
        for (uint32_t i = 0; i < l->nranges; i++) {
            const sim_range_t *r = &l->ranges[i];
            if (i)
                *p++ = ',';
            p = put_str(p, r->mode == ENG_ACCESS_RW      ? "rw:"
                           : r->mode == ENG_ACCESS_WRITE ? "w:"
                                                         : "r:");
            p = put_hex(p, r->addr);
            *p++ = '+';
            p = put_dec(p, r->len);
        }
    }
    *p++ = '\n';
    return (size_t)(p - line);
}

static gmux_status_t text_event(sim_trace_writer_t *w, uint32_t task, const sim_event_t *ev)
{
    size_t max = 128;
    if (ev->kind == SIM_EV_LAUNCH)
        max += (size_t)ev->u.launch.nargs * 24 + (size_t)ev->u.launch.nranges * 48;
    if (max > w->wt[0].cap) { /* task 0's block buffer is unused in the text form */
        uint8_t *b = realloc(w->wt[0].buf, max);
        if (!b)
            return wfail(w, GMUX_ERR_NOMEM, "out of memory");
        w->wt[0].buf = b;
        w->wt[0].cap = max;
    }
    size_t n = text_line((char *)w->wt[0].buf, task, ev);
    if (fwrite(w->wt[0].buf, 1, n, w->f) != n)
        return wfail(w, GMUX_ERR_IO, "write: %s", strerror(errno));
    return GMUX_OK;
}

static gmux_status_t bin_event(sim_trace_writer_t *w, uint32_t task, const sim_event_t *ev)
{
    wtask_t *t = &w->wt[task];
    size_t max = 1 + 4 * SIM_VARINT_MAX;
    if (ev->kind == SIM_EV_LAUNCH)
        max = 1 + 10 * SIM_VARINT_MAX + (size_t)ev->u.launch.nargs * (1 + SIM_VARINT_MAX) +
              (size_t)ev->u.launch.nranges * (1 + 2 * SIM_VARINT_MAX);
    if (t->nev > 0 && t->len + max > SIM_BIN_BLOCK_TARGET && flush_block(w, t, task))
        return w->failed;
    if (t->len + max > t->cap && com_array_grow((void **)&t->buf, &t->cap, t->len + max, 1,
                                                SIM_BIN_BLOCK_TARGET, SIZE_MAX) != GMUX_OK)
        return wfail(w, GMUX_ERR_NOMEM, "out of memory");
    t->len += encode_event(t->buf + t->len, ev, &t->prev);
    t->nev++;
    if (t->len > SIM_BIN_BLOCK_MAX)
        return wfail(w, GMUX_ERR_RANGE, "one event is larger than a block may be");
    return GMUX_OK;
}

gmux_status_t sim_trace_writer_event(sim_trace_writer_t *w, uint32_t task, const sim_event_t *ev)
{
    if (w->failed)
        return w->failed;
    if (!w->started && start(w))
        return w->failed;
    if (task >= w->ntasks)
        return wfail(w, GMUX_ERR_INVALID, "event for undeclared task %" PRIu32, task);
    if (ev->kind == SIM_EV_LAUNCH &&
        (ev->u.launch.nargs > SIM_TRACE_MAX_ARGS || ev->u.launch.nranges > SIM_TRACE_MAX_RANGES))
        return wfail(w, GMUX_ERR_RANGE, "task %" PRIu32 ": launch with too many args or ranges",
                     task);
    char why[200];
    gmux_status_t st = sim_check_event(&w->wt[task].check, ev, why, sizeof(why));
    if (st != GMUX_OK)
        return wfail(w, st, "task %" PRIu32 " event %" PRIu64 ": %s", task, w->wt[task].nevents,
                     why);
    w->wt[task].nevents++;
    if (w->format == SIM_TRACE_BINARY)
        return bin_event(w, task, ev);
    return text_event(w, task, ev);
}

static gmux_status_t bin_finish(sim_trace_writer_t *w)
{
    for (uint32_t i = 0; i < w->ntasks; i++)
        if (flush_block(w, &w->wt[i], i))
            return w->failed;
    for (uint32_t i = 0; i < w->ntasks; i++) {
        uint8_t e[SIM_BIN_TASK_SIZE];
        sim_put_u64(e + SIM_BIN_T_FIRST_BLOCK, w->wt[i].first);
        sim_put_u64(e + SIM_BIN_T_NEVENTS, w->wt[i].nevents);
        if (write_at(w, e, sizeof(e), SIM_BIN_HEADER_SIZE + (uint64_t)i * SIM_BIN_TASK_SIZE))
            return w->failed;
    }
    uint8_t h[SIM_BIN_HEADER_SIZE] = {0};
    memcpy(h + SIM_BIN_H_MAGIC, SIM_BIN_MAGIC, SIM_BIN_MAGIC_LEN);
    sim_put_u32(h + SIM_BIN_H_VERSION, SIM_TRACE_VERSION);
    sim_put_u32(h + SIM_BIN_H_FLAGS, SIM_BIN_COMPLETE);
    sim_put_u32(h + SIM_BIN_H_NTASKS, w->ntasks);
    sim_put_u32(h + SIM_BIN_H_NKERNELS, w->nkernels);
    sim_put_u64(h + SIM_BIN_H_TASK_TABLE, SIM_BIN_HEADER_SIZE);
    sim_put_u64(h + SIM_BIN_H_NAMES, SIM_BIN_HEADER_SIZE + (uint64_t)w->ntasks * SIM_BIN_TASK_SIZE);
    uint64_t data = SIM_BIN_HEADER_SIZE + (uint64_t)w->ntasks * SIM_BIN_TASK_SIZE;
    for (uint32_t i = 0; i < w->ntasks + w->nkernels; i++)
        data += 2 + strlen(i < w->ntasks ? w->tasks[i] : w->kernels[i - w->ntasks]);
    sim_put_u64(h + SIM_BIN_H_DATA, data);
    sim_put_u64(h + SIM_BIN_H_FILE_SIZE, w->off);
    return write_at(w, h, sizeof(h), 0);
}

void sim_trace_writer_sync(sim_trace_writer_t *w)
{
    if (w && w->f)
        fflush(w->f);
}

gmux_status_t sim_trace_writer_close(sim_trace_writer_t *w, char *err, size_t errlen)
{
    if (!w)
        return GMUX_ERR_INVALID;
    if (!w->failed && !w->started)
        start(w);
    if (!w->failed && w->format == SIM_TRACE_BINARY)
        bin_finish(w);
    if (w->f) {
        if (!w->failed)
            fprintf(w->f, "end\n");
        int bad = ferror(w->f);
        if (fclose(w->f) != 0 || bad)
            wfail(w, GMUX_ERR_IO, "write: %s", strerror(errno));
    }
    if (w->fd >= 0 && close(w->fd) != 0)
        wfail(w, GMUX_ERR_IO, "close: %s", strerror(errno));
    gmux_status_t st = w->failed;
    if (st != GMUX_OK)
        snprintf(err, errlen, "%s", w->error);
    for (uint32_t i = 0; w->wt && i < w->ntasks; i++) {
        free(w->wt[i].buf);
        sim_check_fini(&w->wt[i].check);
    }
    for (uint32_t i = 0; i < w->ntasks; i++)
        free(w->tasks[i]);
    for (uint32_t i = 0; i < w->nkernels; i++)
        free(w->kernels[i]);
    free(w->tasks);
    free(w->kernels);
    free(w->wt);
    free(w->path);
    free(w);
    return st;
}

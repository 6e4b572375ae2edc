/*
 * Reader of the text form of traces (docs/trace-format.md): one event per
 * line, tagged with its task. Each task has its own cursor (its own FILE on
 * the same path) that walks the event lines in order and skips the lines of
 * other tasks, so tasks are read independently and in any interleaving with
 * memory bounded by the number of tasks, not by the length of the trace.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "sim/trace_check.h"
#include "sim/trace_impl.h"

typedef struct text_cursor {
    FILE *f;
    char *line;
    size_t cap;
    uint64_t lineno;
    int state;          /* 0 reading, 1 at end, 2 failed (sticky) */
    gmux_status_t fail; /* what a failed cursor says again: the status it failed with */
    sim_arg_t *args;
    uint32_t cap_args;
    sim_range_t *ranges;
    uint32_t cap_ranges;
    sim_check_t check;
    char error[256]; /* the sticky error of this task */
} text_cursor_t;

typedef struct text_source {
    sim_source_t base;
    char *path;
    char **tasks;
    char **kernels;
    off_t data_off;     /* file offset of the first line after the declarations */
    uint64_t data_line; /* its line number, 1-based */
    text_cursor_t *cur; /* ntasks entries */
} text_source_t;

/* ---- tokens and numbers ---- */

static char *skip_blank(char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* Cuts the next blank-separated token; NULL at the end of the line. */
static char *next_token(char **pp)
{
    char *p = skip_blank(*pp);
    if (!*p)
        return NULL;
    char *t = p;
    while (*p && *p != ' ' && *p != '\t')
        p++;
    if (*p)
        *p++ = '\0';
    *pp = p;
    return t;
}

/* Parses a decimal or 0x-hex u64 at *pp, advancing it; 0 on success. */
static int take_u64(const char **pp, uint64_t *out)
{
    const char *p = *pp;
    uint64_t v = 0;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        p += 2;
        const char *start = p;
        for (;; p++) {
            unsigned d;
            if (*p >= '0' && *p <= '9')
                d = (unsigned)(*p - '0');
            else if (*p >= 'a' && *p <= 'f')
                d = (unsigned)(*p - 'a' + 10);
            else if (*p >= 'A' && *p <= 'F')
                d = (unsigned)(*p - 'A' + 10);
            else
                break;
            if (v >> 60)
                return -1;
            v = v << 4 | d;
        }
        if (p == start || p - start > 16)
            return -1;
    } else {
        const char *start = p;
        for (; *p >= '0' && *p <= '9'; p++) {
            unsigned d = (unsigned)(*p - '0');
            if (v > (UINT64_MAX - d) / 10)
                return -1;
            v = v * 10 + d;
        }
        if (p == start)
            return -1;
    }
    *pp = p;
    *out = v;
    return 0;
}

/* A whole token that is one number. */
static int token_u64(const char *t, uint64_t *out)
{
    return t && take_u64(&t, out) == 0 && *t == '\0' ? 0 : -1;
}

static int token_u32(const char *t, uint32_t *out)
{
    uint64_t v;
    if (token_u64(t, &v) || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* "key=a,b,c" with three u32 values. */
static int token_dim3(const char *t, const char *key, uint32_t d[3])
{
    size_t klen = strlen(key);
    if (!t || strncmp(t, key, klen) != 0)
        return -1;
    t += klen;
    for (int i = 0; i < 3; i++) {
        uint64_t v;
        if (take_u64(&t, &v) || v > UINT32_MAX)
            return -1;
        d[i] = (uint32_t)v;
        if (*t != (i < 2 ? ',' : '\0'))
            return -1;
        t++;
    }
    return 0;
}

/* Splits "name rest-of-line": the name is the rest of the line, trimmed. */
static char *rest_of_line(char *p)
{
    p = skip_blank(p);
    size_t n = strlen(p);
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        p[--n] = '\0';
    return p;
}

/* ---- the event lines ---- */

static int fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* A failure that is not the input's: out of memory (GMUX_ERR_NOMEM). */
#define NO_MEMORY (-2)
static int no_memory(char *why, size_t len)
{
    snprintf(why, len, "out of memory");
    return NO_MEMORY;
}

/* The status of a failed parse: -1 malformed input, NO_MEMORY out of memory. */
static gmux_status_t parse_status(int rc)
{
    return rc == NO_MEMORY ? GMUX_ERR_NOMEM : GMUX_ERR_PARSE;
}

static int parse_args(text_cursor_t *c, const char *t, uint32_t *n_p, char *why, size_t len)
{
    if (!t || strncmp(t, "args=", 5) != 0)
        return fail(why, len, "expected args=LIST");
    t += 5;
    uint32_t n = 0;
    if (strcmp(t, "-") != 0) {
        for (;;) {
            uint8_t kind;
            if (t[0] == 'p' && t[1] == ':')
                kind = ENG_ARG_PTR;
            else if (t[0] == 'v' && t[1] == ':')
                kind = ENG_ARG_VAL;
            else
                return fail(why, len, "argument %" PRIu32 ": expected p:NUM or v:NUM", n);
            t += 2;
            uint64_t v;
            if (take_u64(&t, &v))
                return fail(why, len, "argument %" PRIu32 ": bad number", n);
            if (n >= SIM_TRACE_MAX_ARGS)
                return fail(why, len, "more than %u arguments", SIM_TRACE_MAX_ARGS);
            if (sim_trace_grow((void **)&c->args, &c->cap_args, n + 1, sizeof(*c->args)))
                return no_memory(why, len);
            c->args[n++] = (sim_arg_t){.kind = kind, .value = v};
            if (*t == '\0')
                break;
            if (*t++ != ',')
                return fail(why, len, "argument %" PRIu32 ": expected ',' after it", n - 1);
        }
    }
    *n_p = n;
    return 0;
}

static int parse_ranges(text_cursor_t *c, const char *t, uint32_t *n_p, char *why, size_t len)
{
    if (!t || strncmp(t, "touch=", 6) != 0)
        return fail(why, len, "expected touch=LIST");
    t += 6;
    uint32_t n = 0;
    if (strcmp(t, "-") != 0) {
        for (;;) {
            uint8_t mode;
            if (t[0] == 'r' && t[1] == 'w' && t[2] == ':') {
                mode = ENG_ACCESS_RW;
                t += 3;
            } else if (t[0] == 'r' && t[1] == ':') {
                mode = ENG_ACCESS_READ;
                t += 2;
            } else if (t[0] == 'w' && t[1] == ':') {
                mode = ENG_ACCESS_WRITE;
                t += 2;
            } else {
                return fail(why, len, "range %" PRIu32 ": expected r:, w: or rw:", n);
            }
            uint64_t addr, rlen;
            if (take_u64(&t, &addr) || *t++ != '+' || take_u64(&t, &rlen))
                return fail(why, len, "range %" PRIu32 ": expected ADDR+LEN", n);
            if (n >= SIM_TRACE_MAX_RANGES)
                return fail(why, len, "more than %u ranges", SIM_TRACE_MAX_RANGES);
            if (sim_trace_grow((void **)&c->ranges, &c->cap_ranges, n + 1, sizeof(*c->ranges)))
                return no_memory(why, len);
            c->ranges[n++] = (sim_range_t){.addr = addr, .len = rlen, .mode = mode};
            if (*t == '\0')
                break;
            if (*t++ != ',')
                return fail(why, len, "range %" PRIu32 ": expected ',' after it", n - 1);
        }
    }
    *n_p = n;
    return 0;
}

/* Parses the fields after "KEYWORD TASK" of an event line into ev. */
static int parse_event(text_cursor_t *c, const char *kw, char *p, sim_event_t *ev, char *why,
                       size_t len)
{
    memset(ev, 0, sizeof(*ev));
    if (strcmp(kw, "alloc") == 0) {
        ev->kind = SIM_EV_ALLOC;
        if (token_u64(next_token(&p), &ev->u.alloc.id) ||
            token_u64(next_token(&p), &ev->u.alloc.base) ||
            token_u64(next_token(&p), &ev->u.alloc.size))
            return fail(why, len, "expected 'alloc TASK ID BASE SIZE' with numbers");
    } else if (strcmp(kw, "free") == 0) {
        ev->kind = SIM_EV_FREE;
        if (token_u64(next_token(&p), &ev->u.free.id))
            return fail(why, len, "expected 'free TASK ID' with numbers");
    } else {
        sim_launch_ev_t *l = &ev->u.launch;
        ev->kind = SIM_EV_LAUNCH;
        const char *t;
        if (token_u32(next_token(&p), &l->kernel))
            return fail(why, len, "bad kernel id");
        if (token_dim3(next_token(&p), "grid=", l->grid))
            return fail(why, len, "expected grid=X,Y,Z");
        if (token_dim3(next_token(&p), "block=", l->block))
            return fail(why, len, "expected block=X,Y,Z");
        t = next_token(&p);
        if (!t || strncmp(t, "ns=", 3) != 0 || token_u64(t + 3, &l->time_ns))
            return fail(why, len, "expected ns=NUMBER");
        int rc = parse_args(c, next_token(&p), &l->nargs, why, len);
        if (rc || (rc = parse_ranges(c, next_token(&p), &l->nranges, why, len)))
            return rc;
        l->args = c->args;
        l->ranges = c->ranges;
    }
    if (next_token(&p))
        return fail(why, len, "unexpected text at the end of the line");
    return 0;
}

/* ---- the source ---- */

static gmux_status_t cursor_fail(text_source_t *s, text_cursor_t *c, gmux_status_t st,
                                 const char *why)
{
    c->state = 2;
    c->fail = st;
    snprintf(c->error, sizeof(c->error), "%s:%" PRIu64 ": %s", s->path, c->lineno, why);
    memcpy(s->base.error, c->error, sizeof(s->base.error));
    return st;
}

/* Reads the next line into c->line without its newline; 1 at end of file,
 * -1 when it cannot be read (errno says why: ENOMEM for a line that does not
 * fit in memory). */
static int read_line(text_cursor_t *c, int *no_newline)
{
    errno = 0;
    ssize_t n = getline(&c->line, &c->cap, c->f);
    if (n < 0)
        return errno ? -1 : 1;
    c->lineno++;
    *no_newline = !(n > 0 && c->line[n - 1] == '\n');
    if (!*no_newline)
        c->line[--n] = '\0';
    if (n > 0 && c->line[n - 1] == '\r')
        c->line[--n] = '\0';
    return 0;
}

/* What a failed read_line is: out of memory (getline could not grow its
 * buffer), else an I/O error; why said into why. */
static gmux_status_t read_failure(int err, char *why, size_t len)
{
    if (err == ENOMEM) {
        snprintf(why, len, "out of memory");
        return GMUX_ERR_NOMEM;
    }
    snprintf(why, len, "read error: %s", strerror(err));
    return GMUX_ERR_IO;
}

static gmux_status_t text_next(sim_source_t *src, uint32_t task, sim_event_t *ev)
{
    text_source_t *s = (text_source_t *)src;
    if (task >= src->ntasks) {
        snprintf(src->error, sizeof(src->error), "task %" PRIu32 " out of range", task);
        return GMUX_ERR_INVALID;
    }
    text_cursor_t *c = &s->cur[task];
    if (c->state == 1)
        return GMUX_ERR_NOT_FOUND;
    if (c->state == 2) {
        memcpy(src->error, c->error, sizeof(src->error));
        return c->fail;
    }
    char why[200];
    for (;;) {
        int no_newline;
        int rc = read_line(c, &no_newline);
        if (rc < 0) {
            gmux_status_t st = read_failure(errno, why, sizeof(why));
            return cursor_fail(s, c, st, why);
        }
        /* the writer ends every line and the file with 'end': either is a
         * cut, said with the last whole line (whatever follows is not read) */
        if (rc > 0) {
            snprintf(why, sizeof(why),
                     "file ends without its 'end' line: truncated after line %" PRIu64, c->lineno);
            return cursor_fail(s, c, GMUX_ERR_PARSE, why);
        }
        if (no_newline) {
            snprintf(why, sizeof(why), "last line has no newline: truncated after line %" PRIu64,
                     c->lineno - 1);
            return cursor_fail(s, c, GMUX_ERR_PARSE, why);
        }
        char *p = c->line;
        const char *kw = next_token(&p);
        if (!kw || kw[0] == '#')
            continue;
        if (strcmp(kw, "end") == 0) {
            if (next_token(&p))
                return cursor_fail(s, c, GMUX_ERR_PARSE, "unexpected text after 'end'");
            /* only blank lines and comments may follow */
            while ((rc = read_line(c, &no_newline)) == 0) {
                p = c->line;
                kw = next_token(&p);
                if (kw && kw[0] != '#')
                    return cursor_fail(s, c, GMUX_ERR_PARSE, "record after the 'end' line");
            }
            if (rc < 0) {
                gmux_status_t st = read_failure(errno, why, sizeof(why));
                return cursor_fail(s, c, st, why);
            }
            c->state = 1;
            return GMUX_ERR_NOT_FOUND;
        }
        if (strcmp(kw, "alloc") != 0 && strcmp(kw, "free") != 0 && strcmp(kw, "launch") != 0) {
            if (strcmp(kw, "task") == 0 || strcmp(kw, "kernel") == 0)
                snprintf(why, sizeof(why), "'%s' declared after the first event", kw);
            else
                snprintf(why, sizeof(why), "unknown record '%.40s'", kw);
            return cursor_fail(s, c, GMUX_ERR_PARSE, why);
        }
        uint32_t t;
        if (token_u32(next_token(&p), &t) || t >= src->ntasks) {
            snprintf(why, sizeof(why), "bad or undeclared task id in '%s' record", kw);
            return cursor_fail(s, c, GMUX_ERR_PARSE, why);
        }
        if (t != task)
            continue;
        char reason[160];
        if ((rc = parse_event(c, kw, p, ev, reason, sizeof(reason))) != 0) {
            snprintf(why, sizeof(why), "%s: %s", kw, reason);
            return cursor_fail(s, c, parse_status(rc), why);
        }
        gmux_status_t st = sim_check_event(&c->check, ev, reason, sizeof(reason));
        if (st != GMUX_OK) {
            snprintf(why, sizeof(why), "%s: %s", kw, reason);
            return cursor_fail(s, c, st, why);
        }
        return GMUX_OK;
    }
}

static void text_close(sim_source_t *src)
{
    text_source_t *s = (text_source_t *)src;
    for (uint32_t i = 0; s->cur && i < src->ntasks; i++) {
        text_cursor_t *c = &s->cur[i];
        if (c->f)
            fclose(c->f);
        free(c->line);
        free(c->args);
        free(c->ranges);
        sim_check_fini(&c->check);
    }
    free(s->cur);
    for (uint32_t i = 0; s->tasks && i < src->ntasks; i++)
        free(s->tasks[i]);
    for (uint32_t i = 0; s->kernels && i < src->nkernels; i++)
        free(s->kernels[i]);
    free(s->tasks);
    free(s->kernels);
    free(s->path);
    free(s);
}

static const sim_source_ops_t text_ops = {.next = text_next, .close = text_close};

/* Adds a declared name (task or kernel) with its id, which must come in order. */
static int declare(char ***names, uint32_t *n, uint32_t max, char *p, char *why, size_t len)
{
    uint32_t id;
    if (token_u32(next_token(&p), &id))
        return fail(why, len, "expected an id number");
    if (id != *n)
        return fail(why, len, "id %" PRIu32 " out of order (expected %" PRIu32 ")", id, *n);
    if (*n >= max)
        return fail(why, len, "more than %" PRIu32 " declared", max);
    const char *name = rest_of_line(p);
    if (!sim_trace_name_ok(name))
        return fail(why, len, "missing or invalid name");
    char **v = realloc(*names, (*n + 1) * sizeof(*v));
    if (!v)
        return no_memory(why, len);
    *names = v;
    if (!(v[*n] = strdup(name)))
        return no_memory(why, len);
    (*n)++;
    return 0;
}

/* Reads the header and declarations with a scratch cursor. */
static gmux_status_t read_declarations(text_source_t *s, char *err, size_t errlen)
{
    text_cursor_t c = {0};
    gmux_status_t st = GMUX_ERR_PARSE;
    char why[200];
    if (!(c.f = fopen(s->path, "r"))) {
        snprintf(err, errlen, "%s: %s", s->path, strerror(errno));
        return GMUX_ERR_IO;
    }
    off_t off = 0;
    int no_newline, rc;
    for (;;) {
        off = ftello(c.f);
        if ((rc = read_line(&c, &no_newline)) < 0) {
            st = read_failure(errno, why, sizeof(why));
            goto out_error;
        }
        if (rc > 0) {
            snprintf(why, sizeof(why), "no event and no 'end' line");
            goto out_error;
        }
        char *p = c.line;
        const char *kw = next_token(&p);
        if (c.lineno == 1) {
            uint64_t v;
            if (!kw || strcmp(kw, SIM_TEXT_MAGIC) != 0 || token_u64(next_token(&p), &v) ||
                next_token(&p)) {
                snprintf(why, sizeof(why), "not a gmux trace: expected '%s %d'", SIM_TEXT_MAGIC,
                         SIM_TRACE_VERSION);
                goto out_error;
            }
            if (v != SIM_TRACE_VERSION) {
                snprintf(why, sizeof(why), "trace version %" PRIu64 " not supported (reads %d)", v,
                         SIM_TRACE_VERSION);
                st = GMUX_ERR_VERSION;
                goto out_error;
            }
            continue;
        }
        if (!kw || kw[0] == '#')
            continue;
        if (strcmp(kw, "task") == 0) {
            rc = declare(&s->tasks, &s->base.ntasks, SIM_TRACE_MAX_TASKS, p, why, sizeof(why));
        } else if (strcmp(kw, "kernel") == 0) {
            rc =
                declare(&s->kernels, &s->base.nkernels, SIM_TRACE_MAX_KERNELS, p, why, sizeof(why));
        } else {
            break; /* the first event (or end): cursors start here */
        }
        if (rc) {
            st = parse_status(rc);
            goto out_error;
        }
    }
    if (s->base.ntasks == 0) {
        snprintf(why, sizeof(why), "no task declared before the first event");
        goto out_error;
    }
    s->data_off = off;
    s->data_line = c.lineno;
    st = GMUX_OK;
    goto out_close;
out_error:
    snprintf(err, errlen, "%s:%" PRIu64 ": %s", s->path, c.lineno, why);
out_close:
    fclose(c.f);
    free(c.line);
    return st;
}

gmux_status_t sim_text_open(const char *path, sim_source_t **src_p, char *err, size_t errlen)
{
    gmux_status_t st = GMUX_ERR_NOMEM;
    text_source_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->path = strdup(path))) {
        snprintf(err, errlen, "out of memory");
        goto out_free;
    }
    s->base.ops = &text_ops;
    if ((st = read_declarations(s, err, errlen)) != GMUX_OK)
        goto out_free;
    st = GMUX_ERR_NOMEM;
    if (!(s->cur = calloc(s->base.ntasks, sizeof(*s->cur)))) {
        snprintf(err, errlen, "out of memory");
        goto out_free;
    }
    for (uint32_t i = 0; i < s->base.ntasks; i++) {
        text_cursor_t *c = &s->cur[i];
        sim_check_init(&c->check, s->base.nkernels);
        c->f = fopen(path, "r");
        if (!c->f || fseeko(c->f, s->data_off, SEEK_SET) != 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            st = GMUX_ERR_IO;
            goto out_free;
        }
        c->lineno = s->data_line - 1;
    }
    s->base.task_names = (const char *const *)s->tasks;
    s->base.kernel_names = (const char *const *)s->kernels;
    *src_p = &s->base;
    return GMUX_OK;
out_free:
    if (s)
        text_close(&s->base);
    return st;
}

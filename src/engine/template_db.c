/*
 * Template database files: writing and all-or-nothing parsing.
 * Format: docs/templates.md.
 */
#include "engine/template_db.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/errors.h"

#define DB_MAGIC    "gmux-templates"
#define DB_LINE_MAX 512

/* Kernel names are written with bytes outside '!'..'~' and '%' as %XX. */
static void write_name(FILE *f, const char *name)
{
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        if (*c <= ' ' || *c >= 0x7f || *c == '%')
            fprintf(f, "%%%02X", *c);
        else
            fputc(*c, f);
    }
}

/* Kernels are written in (name, layout) order, so the file does not depend on kernel ids. */
struct kref {
    const char *name, *layout;
    uint32_t id;
};

static int cmp_kref(const void *a, const void *b)
{
    const struct kref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->layout, y->layout);
}

static void write_kernel(const eng_predictor_t *p, FILE *f, const struct kref *k)
{
    eng_pred_kernel_info_t ki;
    eng_predictor_kernel_info(p, k->id, &ki);
    fputs("kernel ", f);
    write_name(f, k->name);
    fprintf(f, " %s\n", k->layout);
    for (uint32_t i = 0; i < ki.nargs; i++) {
        eng_pred_arg_info_t ai;
        char t[200];
        if (eng_predictor_arg_info(p, k->id, i, &ai) != GMUX_OK || ai.kind != ENG_ARG_PTR)
            continue;
        if (ai.state == ENG_PRED_TRUSTED)
            fprintf(f, "arg %u %s\n", i, eng_tpl_format(&ai.tpl, t, sizeof(t)));
        else if (ai.state == ENG_PRED_FALLBACK)
            fprintf(f, "arg %u whole %s\n", i, eng_pred_reason_name(ai.reason));
        else
            fprintf(f, "arg %u learning\n", i);
    }
    fputs("end\n", f);
}

gmux_status_t eng_tpl_db_write(const eng_predictor_t *p, FILE *f)
{
    uint32_t nk = eng_predictor_nkernels(p);
    struct kref *refs = calloc(nk ? nk : 1, sizeof(*refs));
    size_t n = 0;
    if (!refs)
        return GMUX_ERR_NOMEM;
    for (uint32_t kid = 0; kid < nk; kid++) {
        eng_pred_kernel_info_t ki;
        if (eng_predictor_kernel_info(p, kid, &ki) != GMUX_OK || !ki.name || ki.nargs == 0)
            continue;
        refs[n++] = (struct kref){ki.name, ki.layout, kid};
    }
    qsort(refs, n, sizeof(*refs), cmp_kref);
    fprintf(f, "%s %d\n", DB_MAGIC, ENG_TPL_DB_VERSION);
    for (size_t i = 0; i < n; i++)
        write_kernel(p, f, &refs[i]);
    fprintf(f, "total %zu\n", n);
    free(refs);
    return ferror(f) ? GMUX_ERR_IO : GMUX_OK;
}

gmux_status_t eng_tpl_db_save(const eng_predictor_t *p, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        int e = errno;
        char text[128]; /* strerror_r: the shim loads templates beside the program's threads */
        snprintf(err, errlen, "%s: %s", path, strerror_r(e, text, sizeof(text)));
        return com_status_from_errno(e);
    }
    gmux_status_t st = eng_tpl_db_write(p, f);
    if (fclose(f) != 0 && st == GMUX_OK)
        st = GMUX_ERR_IO;
    if (st != GMUX_OK)
        snprintf(err, errlen, "%s: write failed", path);
    return st;
}

/* ---- parsing ---- */

struct db_entry {
    char name[DB_LINE_MAX];
    char layout[ENG_PRED_MAX_ARGS + 1];
    eng_pred_arg_info_t args[ENG_PRED_MAX_ARGS];
    bool given[ENG_PRED_MAX_ARGS];
};

struct db_parser {
    const char *what;
    char *err;
    size_t errlen;
    unsigned line;
    size_t offset; /* of the current line */
};

__attribute__((format(printf, 2, 3))) static gmux_status_t fail(struct db_parser *ps,
                                                                const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(ps->err, ps->errlen, "%s:%u (byte %zu): %s", ps->what, ps->line, ps->offset, msg);
    return GMUX_ERR_PARSE;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static bool read_name(const char *text, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *c = text; *c; c++) {
        int ch = (unsigned char)*c;
        if (ch == '%') {
            int hi = hexval(c[1]), lo = hi >= 0 ? hexval(c[2]) : -1;
            if (lo < 0)
                return false;
            ch = hi * 16 + lo;
            c += 2;
        }
        if (ch == 0 || n + 1 >= cap)
            return false;
        out[n++] = (char)ch;
    }
    out[n] = '\0';
    return n > 0;
}

static bool parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] != '\0'))
        return false;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return false;
    *out = v;
    return true;
}

/* One "arg ..." line (after "arg ") into entry e. */
static gmux_status_t parse_arg(struct db_parser *ps, char *rest, struct db_entry *e)
{
    char *sp = strchr(rest, ' ');
    unsigned long idx;
    if (!sp)
        return fail(ps, "expected 'arg INDEX TEMPLATE'");
    *sp = '\0';
    size_t nargs = strlen(e->layout);
    if (!parse_uint(rest, ENG_PRED_MAX_ARGS, &idx) || idx >= nargs)
        return fail(ps, "argument index '%s' is not below %zu", rest, nargs);
    if (e->layout[idx] != 'p')
        return fail(ps, "argument %lu is a value in layout '%s', not a pointer", idx, e->layout);
    if (e->given[idx])
        return fail(ps, "argument %lu given twice", idx);
    e->given[idx] = true;
    char *what = sp + 1;
    eng_pred_arg_info_t *a = &e->args[idx];
    a->kind = ENG_ARG_PTR;
    if (strcmp(what, "learning") == 0) {
        a->state = ENG_PRED_LEARNING;
        return GMUX_OK;
    }
    if (strncmp(what, "whole ", 6) == 0) {
        eng_pred_reason_t r;
        if (!eng_pred_reason_parse(what + 6, &r))
            return fail(ps, "unknown fallback reason '%s'", what + 6);
        a->state = ENG_PRED_FALLBACK;
        a->reason = (uint8_t)r;
        return GMUX_OK;
    }
    if (!eng_tpl_parse(what, &a->tpl))
        return fail(ps, "malformed template '%s'", what);
    a->state = ENG_PRED_TRUSTED;
    return GMUX_OK;
}

gmux_status_t eng_tpl_db_parse(eng_predictor_t *p, const char *text, size_t len, const char *what,
                               char *err, size_t errlen)
{
    struct db_parser ps = {what, err, errlen, 0, 0};
    struct db_entry *entries = NULL, *cur = NULL;
    size_t nentries = 0;
    bool have_header = false, have_total = false;
    gmux_status_t st = GMUX_OK;
    size_t pos = 0;
    while (pos < len && st == GMUX_OK) {
        char line[DB_LINE_MAX];
        ps.line++;
        ps.offset = pos;
        const char *nl = memchr(text + pos, '\n', len - pos);
        if (!nl) {
            st = fail(&ps, "truncated: last line has no newline");
            break;
        }
        size_t n = (size_t)(nl - (text + pos));
        pos += n + 1;
        if (n >= sizeof(line) || memchr(text + ps.offset, '\0', n)) {
            st = fail(&ps, "line too long or not text");
            break;
        }
        memcpy(line, text + ps.offset, n);
        line[n] = '\0';
        if (have_total) {
            st = fail(&ps, "text after the 'total' line");
        } else if (!have_header) {
            unsigned long v;
            if (strncmp(line, DB_MAGIC " ", sizeof(DB_MAGIC)) != 0 ||
                !parse_uint(line + sizeof(DB_MAGIC), 1000000, &v))
                st = fail(&ps, "not a gmux template database (expected '%s %d')", DB_MAGIC,
                          ENG_TPL_DB_VERSION);
            else if (v != ENG_TPL_DB_VERSION)
                st = GMUX_ERR_VERSION,
                snprintf(err, errlen, "%s:1: database version %lu, this gmux reads %d", what, v,
                         ENG_TPL_DB_VERSION);
            have_header = true;
        } else if (line[0] == '#' || line[0] == '\0') {
            continue;
        } else if (cur) {
            if (strcmp(line, "end") == 0) {
                for (size_t i = 0; cur->layout[i]; i++)
                    if (cur->layout[i] == 'p' && !cur->given[i])
                        st = fail(&ps, "kernel ends without pointer argument %zu", i);
                cur = NULL;
            } else if (strncmp(line, "arg ", 4) == 0) {
                st = parse_arg(&ps, line + 4, cur);
            } else {
                st = fail(&ps, "expected 'arg' or 'end' inside a kernel");
            }
        } else if (strncmp(line, "kernel ", 7) == 0) {
            char *name = line + 7, *sp = strchr(name, ' ');
            struct db_entry *grown = realloc(entries, (nentries + 1) * sizeof(*entries));
            if (!grown) {
                st = GMUX_ERR_NOMEM;
                snprintf(err, errlen, "%s: out of memory", what);
                break;
            }
            entries = grown;
            cur = memset(&entries[nentries++], 0, sizeof(*entries));
            if (!sp || strchr(sp + 1, ' '))
                st = fail(&ps, "expected 'kernel NAME LAYOUT'");
            else if (*sp = '\0', !read_name(name, cur->name, sizeof(cur->name)))
                st = fail(&ps, "malformed kernel name");
            else if (strlen(sp + 1) > ENG_PRED_MAX_ARGS || strspn(sp + 1, "pv") != strlen(sp + 1) ||
                     sp[1] == '\0')
                st = fail(&ps, "layout '%s' is not 1..%d letters p/v", sp + 1, ENG_PRED_MAX_ARGS);
            else
                strcpy(cur->layout, sp + 1);
        } else if (strncmp(line, "total ", 6) == 0) {
            unsigned long v;
            if (!parse_uint(line + 6, (unsigned long)-1, &v) || v != nentries)
                st = fail(&ps, "'total' says %s kernels, the file holds %zu", line + 6, nentries);
            have_total = true;
        } else {
            st = fail(&ps, "expected 'kernel' or 'total'");
        }
    }
    if (st == GMUX_OK && !have_total) {
        ps.line++;
        ps.offset = len;
        st = fail(&ps, "truncated: %s",
                  !have_header ? "empty file"
                  : cur        ? "inside a kernel (no 'end')"
                               : "no 'total' line");
    }
    for (size_t i = 0; i < nentries && st == GMUX_OK; i++) {
        st = eng_predictor_library_add(p, entries[i].name, entries[i].layout, entries[i].args);
        if (st != GMUX_OK)
            snprintf(err, errlen, "%s: %s", what, gmux_status_str(st));
    }
    free(entries);
    return st;
}

gmux_status_t eng_tpl_db_load(eng_predictor_t *p, const char *path, char *err, size_t errlen)
{
    gmux_status_t st;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        char text[128]; /* strerror_r: the shim loads templates beside the program's threads */
        snprintf(err, errlen, "%s: %s", path, strerror_r(e, text, sizeof(text)));
        return com_status_from_errno(e);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len > ENG_TPL_DB_MAX_BYTES) {
            st = GMUX_ERR_RANGE;
            snprintf(err, errlen, "%s: larger than a template database can be (%u MiB)", path,
                     ENG_TPL_DB_MAX_BYTES >> 20);
            goto close_file;
        }
        if (len == cap) {
            st = com_array_grow((void **)&buf, &cap, len + 1, 1, 65536,
                                (size_t)ENG_TPL_DB_MAX_BYTES + 1);
            if (st != GMUX_OK) {
                snprintf(err, errlen, "%s: out of memory", path);
                goto close_file;
            }
        }
        errno = 0;
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) { /* why, as for a file that cannot be opened: a folder is EISDIR */
        int e = errno ? errno : EIO;
        char text[128];
        st = GMUX_ERR_IO;
        snprintf(err, errlen, "%s: %s", path, strerror_r(e, text, sizeof(text)));
        goto close_file;
    }
    st = eng_tpl_db_parse(p, buf, len, path, err, errlen);

close_file:
    free(buf);
    fclose(f);
    return st;
}

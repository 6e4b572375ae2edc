/*
 * Templates: shapes of samples, fitting, evaluation and text forms.
 * See template.h for the classes and the contract.
 */
#include "engine/template.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void eng_launch_values(const eng_launch_t *l, uint64_t *v)
{
    for (unsigned id = 0; id < ENG_VAL_COUNT; id++)
        v[id] = eng_launch_value(l, id);
}

uint64_t eng_span_bytes(const eng_span_t *s)
{
    uint64_t n;
    if (s->count <= 1)
        return s->count ? s->len : 0;
    if (s->stride >= s->len)
        return __builtin_mul_overflow(s->count, s->len, &n) ? UINT64_MAX : n;
    /* pieces overlap: the reach from the first byte to the end of the last */
    if (__builtin_mul_overflow(s->count - 1, s->stride, &n) ||
        __builtin_add_overflow(n, s->len, &n))
        return UINT64_MAX;
    return n;
}

void eng_span_cover(eng_span_t *s)
{
    if (s->count <= 1)
        return;
    uint64_t reach, room = UINT64_MAX - s->addr;
    if (__builtin_mul_overflow(s->count - 1, s->stride, &reach) || reach > room)
        reach = room;
    s->len = s->len > room - reach ? room : reach + s->len;
    s->count = 1;
    s->stride = 0;
}

void eng_shape_of(uint64_t ptr, const eng_range_t *ranges, size_t n, eng_shape_t *shape)
{
    memset(shape, 0, sizeof(*shape));
    if (n == 0)
        return;
    shape->kind = ENG_SHAPE_RUN;
    shape->off = (int64_t)(ranges[0].addr - ptr);
    shape->len = ranges[0].len;
    shape->count = n;
    shape->stride = n > 1 ? ranges[1].addr - ranges[0].addr : 0;
    for (size_t i = 0; i < n; i++) {
        shape->mode |= ranges[i].mode;
        if (ranges[i].len != shape->len ||
            (i > 0 && ranges[i].addr - ranges[i - 1].addr != shape->stride))
            shape->kind = ENG_SHAPE_IRREGULAR;
    }
}

/* ---- expressions ---- */

/* Value of the term (without a, b) in sample values v; false on overflow. */
static bool term_value(uint8_t kind, uint8_t v0, uint8_t v1, const uint64_t *v, uint64_t *t)
{
    switch (kind) {
    case ENG_TERM_CONST:
        *t = 1;
        return true;
    case ENG_TERM_VAL:
        *t = v[v0];
        return true;
    default:
        return !__builtin_mul_overflow(v[v0], v[v1], t);
    }
}

/* a*t + b as a non-negative 64-bit value; false on overflow or a negative result. */
static bool affine(int64_t a, int64_t b, uint64_t t, uint64_t *out)
{
    int64_t at, r;
    if (t > (uint64_t)INT64_MAX || __builtin_mul_overflow(a, (int64_t)t, &at) ||
        __builtin_add_overflow(at, b, &r) || r < 0)
        return false;
    *out = (uint64_t)r;
    return true;
}

bool eng_expr_eval(const eng_expr_t *e, const eng_launch_t *l, uint64_t *out)
{
    if (e->kind == ENG_TERM_CONST) {
        if (e->b < 0)
            return false;
        *out = (uint64_t)e->b;
        return true;
    }
    uint64_t t = eng_launch_value(l, e->v0);
    if (e->kind == ENG_TERM_PROD && __builtin_mul_overflow(t, eng_launch_value(l, e->v1), &t))
        return false;
    return affine(e->a, e->b, t, out);
}

/* Whether e reproduces y[i] for every sample with care[i]. */
static bool expr_fits(const eng_expr_t *e, const uint64_t *y, const bool *care,
                      const uint64_t *vals, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!care[i])
            continue;
        uint64_t t, r;
        if (!term_value(e->kind, e->v0, e->v1, vals + i * ENG_VAL_COUNT, &t))
            return false;
        if (e->kind == ENG_TERM_CONST)
            t = 0;
        if (!affine(e->a, e->b, t, &r) || r != y[i])
            return false;
    }
    return true;
}

/* Solves a (and b when with_b) for one term from the samples; false if it cannot fit. */
static bool solve_term(eng_expr_t *e, bool with_b, const uint64_t *y, const bool *care,
                       const uint64_t *vals, size_t n)
{
    size_t first = n;
    uint64_t t0 = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t t;
        if (!care[i])
            continue;
        if (!term_value(e->kind, e->v0, e->v1, vals + i * ENG_VAL_COUNT, &t) ||
            t > (uint64_t)INT64_MAX || y[i] > (uint64_t)INT64_MAX)
            return false;
        if (!with_b) {
            if (t == 0)
                continue;
            if (y[i] % t != 0 || y[i] == 0)
                return false;
            e->a = (int64_t)(y[i] / t);
            e->b = 0;
            return expr_fits(e, y, care, vals, n);
        }
        if (first == n) {
            first = i;
            t0 = t;
            continue;
        }
        if (t == t0)
            continue;
        int64_t dy = (int64_t)y[i] - (int64_t)y[first];
        int64_t dt = (int64_t)t - (int64_t)t0;
        if (dy % dt != 0 || dy / dt < 1)
            return false;
        e->a = dy / dt;
        if (__builtin_mul_overflow(e->a, (int64_t)t0, &e->b))
            return false;
        e->b = (int64_t)y[first] - e->b;
        return e->b != 0 && expr_fits(e, y, care, vals, n);
    }
    return false;
}

/*
 * The simplest expression reproducing y over the samples with care:
 * a constant, then a*v (b = 0), a*v + b, a*v*w, a*v*w + b.
 */
static bool fit_expr(const uint64_t *y, const bool *care, const uint64_t *vals, size_t n,
                     const bool *val_ok, eng_expr_t *out)
{
    eng_expr_t e = {.kind = ENG_TERM_CONST};
    size_t first = n;
    for (size_t i = 0; i < n && first == n; i++)
        if (care[i])
            first = i;
    e.b = first < n ? (int64_t)y[first] : 0;
    if (e.b >= 0 && expr_fits(&e, y, care, vals, n)) {
        *out = e;
        return true;
    }
    for (uint8_t kind = ENG_TERM_VAL; kind <= ENG_TERM_PROD; kind++)
        for (int with_b = 0; with_b <= 1; with_b++)
            for (unsigned i = 0; i < ENG_VAL_COUNT; i++) {
                if (!val_ok[i])
                    continue;
                unsigned jmax = kind == ENG_TERM_VAL ? i : ENG_VAL_COUNT - 1;
                for (unsigned j = i; j <= jmax; j++) {
                    if (!val_ok[j])
                        continue;
                    e = (eng_expr_t){.kind = kind, .v0 = (uint8_t)i, .v1 = (uint8_t)j};
                    if (kind == ENG_TERM_VAL)
                        e.v1 = 0;
                    if (solve_term(&e, with_b, y, care, vals, n)) {
                        *out = e;
                        return true;
                    }
                }
            }
    return false;
}

/* ---- fitting templates ---- */

#define FIT_MAX_SAMPLES 64

bool eng_tpl_fit(const eng_shape_t *shapes, const uint64_t *vals, size_t n, const bool *val_ok,
                 eng_tpl_t *tpl)
{
    eng_tpl_t t = {.kind = ENG_TPL_NONE};
    uint64_t y[FIT_MAX_SAMPLES];
    bool care[FIT_MAX_SAMPLES];
    bool any = false, all = true, multi = false, len_const = true;
    if (n == 0 || n > FIT_MAX_SAMPLES)
        return false;
    for (size_t i = 0; i < n; i++) {
        const eng_shape_t *s = &shapes[i];
        if (s->kind == ENG_SHAPE_IRREGULAR)
            return false;
        if (s->kind == ENG_SHAPE_EMPTY) {
            all = false;
            continue;
        }
        if (!any) {
            t.off = s->off;
            t.len.b = (int64_t)s->len;
        } else if (s->off != t.off) {
            return false;
        }
        len_const = len_const && s->len == (uint64_t)t.len.b;
        any = true;
        t.mode |= s->mode;
        multi = multi || s->count > 1;
    }
    if (!any) {
        *tpl = t;
        return true;
    }
    if (!multi && all && len_const) {
        t.kind = ENG_TPL_T1;
        *tpl = t;
        return true;
    }
    /* Lengths (and for T3 counts and strides) over the samples; empty ones count as zero. */
    for (size_t i = 0; i < n; i++) {
        y[i] = shapes[i].kind == ENG_SHAPE_EMPTY ? 0 : shapes[i].len;
        care[i] = !multi || shapes[i].kind != ENG_SHAPE_EMPTY;
    }
    if (!fit_expr(y, care, vals, n, val_ok, &t.len))
        return false;
    if (!multi) {
        t.kind = ENG_TPL_T2;
        *tpl = t;
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        y[i] = shapes[i].kind == ENG_SHAPE_EMPTY ? 0 : shapes[i].count;
        care[i] = true;
    }
    if (!fit_expr(y, care, vals, n, val_ok, &t.count))
        return false;
    for (size_t i = 0; i < n; i++) {
        y[i] = shapes[i].stride;
        care[i] = shapes[i].kind == ENG_SHAPE_RUN && shapes[i].count > 1;
    }
    if (!fit_expr(y, care, vals, n, val_ok, &t.stride))
        return false;
    t.kind = ENG_TPL_T3;
    *tpl = t;
    return true;
}

/* ---- evaluation ---- */

int eng_tpl_eval(const eng_tpl_t *tpl, const eng_launch_t *l, uint64_t ptr, eng_span_t *span)
{
    uint64_t len, count = 1, stride = 0;
    if (tpl->kind == ENG_TPL_NONE)
        return 0;
    if (!eng_expr_eval(&tpl->len, l, &len))
        return -1;
    if (tpl->kind == ENG_TPL_T3 &&
        (!eng_expr_eval(&tpl->count, l, &count) || !eng_expr_eval(&tpl->stride, l, &stride)))
        return -1;
    if (len == 0 || count == 0)
        return 0;
    uint64_t addr = ptr + (uint64_t)tpl->off;
    if ((tpl->off < 0 && addr > ptr) || (tpl->off > 0 && addr < ptr))
        return -1;
    if (count > 1 && stride <= len) {
        /* Touching or overlapping pieces are one range, as recorded ranges are coalesced. */
        uint64_t span_len;
        if (__builtin_mul_overflow(count - 1, stride, &span_len) ||
            __builtin_add_overflow(span_len, len, &len))
            return -1;
        count = 1;
    }
    if (count == 1)
        stride = 0;
    *span =
        (eng_span_t){.addr = addr, .len = len, .stride = stride, .count = count, .mode = tpl->mode};
    return 1;
}

bool eng_tpl_matches(const eng_tpl_t *tpl, const eng_launch_t *l, uint64_t ptr,
                     const eng_shape_t *shape)
{
    eng_span_t s;
    int n = eng_tpl_eval(tpl, l, ptr, &s);
    if (n < 0)
        return false;
    if (n == 0)
        return shape->kind == ENG_SHAPE_EMPTY;
    return shape->kind == ENG_SHAPE_RUN && s.addr == ptr + (uint64_t)shape->off &&
           s.len == shape->len && s.count == shape->count &&
           (s.count == 1 || s.stride == shape->stride);
}

/* ---- text forms ---- */

static const char *const val_names[ENG_VAL_COUNT - ENG_VAL_MAX_ARGS] = {
    "grid.x", "grid.y", "grid.z", "block.x", "block.y", "block.z"};

static int format_val(unsigned id, char *buf, size_t len)
{
    if (id < ENG_VAL_MAX_ARGS)
        return snprintf(buf, len, "a%u", id);
    return snprintf(buf, len, "%s", val_names[id - ENG_VAL_MAX_ARGS]);
}

const char *eng_expr_format(const eng_expr_t *e, char *buf, size_t len)
{
    char v0[16], v1[16];
    if (e->kind == ENG_TERM_CONST) {
        snprintf(buf, len, "%" PRId64, e->b);
        return buf;
    }
    format_val(e->v0, v0, sizeof(v0));
    format_val(e->v1, v1, sizeof(v1));
    int n = snprintf(buf, len, "%" PRId64 "*%s%s%s", e->a, v0, e->kind == ENG_TERM_PROD ? "*" : "",
                     e->kind == ENG_TERM_PROD ? v1 : "");
    if (e->b != 0 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%+" PRId64, e->b);
    return buf;
}

/* Parses a signed decimal at *p (no spaces), advancing *p. */
static bool parse_int(const char **p, int64_t *out)
{
    const char *s = *p;
    if (*s == '+' || *s == '-')
        s++;
    if (*s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(*p, &end, 10);
    if (errno != 0)
        return false;
    *out = v;
    *p = end;
    return true;
}

static bool parse_val(const char **p, uint8_t *id)
{
    const char *s = *p;
    if (s[0] == 'a' && s[1] >= '0' && s[1] <= '9') {
        char *end;
        unsigned long v = strtoul(s + 1, &end, 10);
        if (v >= ENG_VAL_MAX_ARGS || (s[1] == '0' && end != s + 2))
            return false;
        *id = (uint8_t)v;
        *p = end;
        return true;
    }
    for (unsigned i = 0; i < ENG_VAL_COUNT - ENG_VAL_MAX_ARGS; i++) {
        size_t n = strlen(val_names[i]);
        if (strncmp(s, val_names[i], n) == 0) {
            *id = (uint8_t)(ENG_VAL_MAX_ARGS + i);
            *p = s + n;
            return true;
        }
    }
    return false;
}

bool eng_expr_parse(const char *text, eng_expr_t *e)
{
    eng_expr_t r = {.kind = ENG_TERM_CONST};
    const char *p = text;
    int64_t first;
    if (!parse_int(&p, &first))
        return false;
    if (*p == '\0') {
        if (first < 0)
            return false;
        r.b = first;
        *e = r;
        return true;
    }
    if (*p++ != '*' || first < 1 || !parse_val(&p, &r.v0))
        return false;
    r.kind = ENG_TERM_VAL;
    r.a = first;
    if (*p == '*') {
        p++;
        if (!parse_val(&p, &r.v1))
            return false;
        r.kind = ENG_TERM_PROD;
    }
    if (*p == '+' || *p == '-') {
        if (!parse_int(&p, &r.b) || r.b == 0)
            return false;
    }
    if (*p != '\0')
        return false;
    *e = r;
    return true;
}

static const char *mode_name(uint8_t mode)
{
    switch (mode) {
    case ENG_ACCESS_READ:
        return "r";
    case ENG_ACCESS_WRITE:
        return "w";
    default:
        return "rw";
    }
}

const char *eng_tpl_kind_name(eng_tpl_kind_t kind)
{
    switch (kind) {
    case ENG_TPL_T1:
        return "T1";
    case ENG_TPL_T2:
        return "T2";
    case ENG_TPL_T3:
        return "T3";
    default:
        return "none";
    }
}

const char *eng_tpl_format(const eng_tpl_t *tpl, char *buf, size_t len)
{
    char l[64], s[64], c[64];
    eng_expr_format(&tpl->len, l, sizeof(l));
    switch (tpl->kind) {
    case ENG_TPL_T1:
    case ENG_TPL_T2:
        snprintf(buf, len, "%s off=%" PRId64 " len=%s mode=%s", eng_tpl_kind_name(tpl->kind),
                 tpl->off, l, mode_name(tpl->mode));
        break;
    case ENG_TPL_T3:
        snprintf(buf, len, "T3 off=%" PRId64 " stride=%s count=%s len=%s mode=%s", tpl->off,
                 eng_expr_format(&tpl->stride, s, sizeof(s)),
                 eng_expr_format(&tpl->count, c, sizeof(c)), l, mode_name(tpl->mode));
        break;
    default:
        snprintf(buf, len, "none");
        break;
    }
    return buf;
}

/* One "key=value" token of a template line; false if malformed or repeated. */
static bool parse_field(eng_tpl_t *t, const char *tok, unsigned *seen)
{
    static const char *const keys[] = {"off=", "len=", "stride=", "count=", "mode="};
    for (unsigned k = 0; k < 5; k++) {
        size_t n = strlen(keys[k]);
        if (strncmp(tok, keys[k], n) != 0)
            continue;
        const char *v = tok + n;
        if (*seen & (1u << k))
            return false;
        *seen |= 1u << k;
        switch (k) {
        case 0: {
            const char *p = v;
            return parse_int(&p, &t->off) && *p == '\0';
        }
        case 1:
            return eng_expr_parse(v, &t->len);
        case 2:
            return eng_expr_parse(v, &t->stride);
        case 3:
            return eng_expr_parse(v, &t->count);
        default:
            if (strcmp(v, "r") == 0)
                t->mode = ENG_ACCESS_READ;
            else if (strcmp(v, "w") == 0)
                t->mode = ENG_ACCESS_WRITE;
            else if (strcmp(v, "rw") == 0)
                t->mode = ENG_ACCESS_RW;
            else
                return false;
            return true;
        }
    }
    return false;
}

bool eng_tpl_parse(const char *text, eng_tpl_t *tpl)
{
    eng_tpl_t t = {.kind = ENG_TPL_NONE, .mode = ENG_ACCESS_RW};
    char buf[256];
    unsigned seen = 0;
    if (strlen(text) >= sizeof(buf))
        return false;
    strcpy(buf, text);
    char *save = NULL;
    char *tok = strtok_r(buf, " ", &save);
    if (!tok)
        return false;
    if (strcmp(tok, "none") == 0) {
        if (strtok_r(NULL, " ", &save))
            return false;
        t.mode = 0;
        *tpl = t;
        return true;
    }
    if (strcmp(tok, "T1") == 0)
        t.kind = ENG_TPL_T1;
    else if (strcmp(tok, "T2") == 0)
        t.kind = ENG_TPL_T2;
    else if (strcmp(tok, "T3") == 0)
        t.kind = ENG_TPL_T3;
    else
        return false;
    while ((tok = strtok_r(NULL, " ", &save)) != NULL)
        if (!parse_field(&t, tok, &seen))
            return false;
    /* off and len always; stride and count exactly for T3; T1 constant, T2 not. */
    unsigned need = t.kind == ENG_TPL_T3 ? 0xfu : 0x3u;
    if ((seen & 0xfu) != need)
        return false;
    if (t.kind != ENG_TPL_T3 && (t.kind == ENG_TPL_T1) != (t.len.kind == ENG_TERM_CONST))
        return false;
    *tpl = t;
    return true;
}

/* Calibration file reader: a flat JSON object from gmux-calibrate. */
#include "sim/calib.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEYS 64
#define MAX_KEY  48

typedef struct calib_kv {
    char key[MAX_KEY];
    double num; /* NAN when the value is not a number */
} calib_kv_t;

typedef struct calib_doc {
    calib_kv_t kv[MAX_KEYS];
    size_t n;
} calib_doc_t;

typedef struct cursor {
    const char *s;
    size_t len, pos;
} cursor_t;

static void skip_ws(cursor_t *c)
{
    while (c->pos < c->len && isspace((unsigned char)c->s[c->pos]))
        c->pos++;
}

static int fail(const cursor_t *c, char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "calibration: %s at byte %zu", what, c->pos);
    return -1;
}

/* Reads a JSON string into out (truncated to outlen-1); escapes are kept as-is. */
static int read_string(cursor_t *c, char *out, size_t outlen, char *err, size_t errlen)
{
    if (c->pos >= c->len || c->s[c->pos] != '"')
        return fail(c, err, errlen, "expected a string");
    c->pos++;
    size_t n = 0;
    while (c->pos < c->len && c->s[c->pos] != '"') {
        unsigned char ch = (unsigned char)c->s[c->pos];
        if (ch < 0x20)
            return fail(c, err, errlen, "control character in a string");
        if (ch == '\\') {
            if (c->pos + 1 >= c->len)
                break;
            c->pos++;
        }
        if (out && n + 1 < outlen)
            out[n++] = (char)c->s[c->pos];
        c->pos++;
    }
    if (c->pos >= c->len)
        return fail(c, err, errlen, "unterminated string");
    c->pos++;
    if (out)
        out[n] = '\0';
    return 0;
}

static int read_value(cursor_t *c, double *num, char *err, size_t errlen)
{
    *num = NAN;
    if (c->pos >= c->len)
        return fail(c, err, errlen, "expected a value");
    char ch = c->s[c->pos];
    if (ch == '"')
        return read_string(c, NULL, 0, err, errlen);
    static const char *const words[] = {"true", "false", "null"};
    for (size_t i = 0; i < 3; i++) {
        size_t wl = strlen(words[i]);
        if (c->len - c->pos >= wl && strncmp(c->s + c->pos, words[i], wl) == 0) {
            c->pos += wl;
            return 0;
        }
    }
    if (ch == '-' || isdigit((unsigned char)ch)) {
        char buf[64];
        size_t n = 0;
        while (c->pos < c->len && n + 1 < sizeof(buf) &&
               (isdigit((unsigned char)c->s[c->pos]) ||
                (c->s[c->pos] != '\0' && strchr("+-.eE", c->s[c->pos]))))
            buf[n++] = c->s[c->pos++];
        buf[n] = '\0';
        char *end;
        errno = 0;
        double v = strtod(buf, &end);
        if (*end != '\0' || errno == ERANGE || !isfinite(v))
            return fail(c, err, errlen, "malformed number");
        *num = v;
        return 0;
    }
    return fail(c, err, errlen, "expected a number, string, true, false or null");
}

static int parse_doc(const char *text, size_t len, calib_doc_t *doc, char *err, size_t errlen)
{
    cursor_t c = {text, len, 0};
    doc->n = 0;
    skip_ws(&c);
    if (c.pos >= c.len || c.s[c.pos] != '{')
        return fail(&c, err, errlen, "expected '{'");
    c.pos++;
    skip_ws(&c);
    if (c.pos < c.len && c.s[c.pos] == '}') {
        c.pos++;
    } else {
        for (;;) {
            skip_ws(&c);
            calib_kv_t kv;
            if (read_string(&c, kv.key, sizeof(kv.key), err, errlen) != 0)
                return -1;
            skip_ws(&c);
            if (c.pos >= c.len || c.s[c.pos] != ':')
                return fail(&c, err, errlen, "expected ':'");
            c.pos++;
            skip_ws(&c);
            if (read_value(&c, &kv.num, err, errlen) != 0)
                return -1;
            if (doc->n == MAX_KEYS)
                return fail(&c, err, errlen, "too many keys");
            doc->kv[doc->n++] = kv;
            skip_ws(&c);
            if (c.pos < c.len && c.s[c.pos] == ',') {
                c.pos++;
                continue;
            }
            if (c.pos < c.len && c.s[c.pos] == '}') {
                c.pos++;
                break;
            }
            return fail(&c, err, errlen, "expected ',' or '}'");
        }
    }
    skip_ws(&c);
    if (c.pos != c.len)
        return fail(&c, err, errlen, "trailing data after the object");
    return 0;
}

static double get(const calib_doc_t *doc, const char *key)
{
    for (size_t i = 0; i < doc->n; i++)
        if (strcmp(doc->kv[i].key, key) == 0)
            return doc->kv[i].num;
    return NAN;
}

static void note(char *applied, size_t len, const char *key, int decimals, double v)
{
    if (!applied || len == 0)
        return;
    size_t used = strlen(applied);
    if (used + 1 >= len)
        return;
    snprintf(applied + used, len - used, "%s%s=%.*f", used ? " " : "", key, decimals, v);
}

gmux_status_t sim_calib_apply_text(sim_params_t *p, const char *text, size_t len, char *applied,
                                   size_t applied_len, char *err, size_t errlen)
{
    calib_doc_t *doc = malloc(sizeof(*doc));
    if (!doc)
        return GMUX_ERR_NOMEM;
    if (applied && applied_len)
        applied[0] = '\0';
    gmux_status_t st = GMUX_OK;
    if (parse_doc(text, len, doc, err, errlen) != 0) {
        st = GMUX_ERR_PARSE;
        goto out_free;
    }
    if (!(get(doc, "gmux_calibration") == 1.0)) {
        snprintf(err, errlen,
                 "calibration: not a gmux-calibrate output (no \"gmux_calibration\": 1)");
        st = GMUX_ERR_VERSION;
        goto out_free;
    }
    sim_params_t q = *p;
    double hbm = get(doc, "hbm_bytes");
    double h2d = get(doc, "prefetch_h2d_GBps");
    double d2h = get(doc, "prefetch_d2h_GBps");
    double demand_ms = get(doc, "demand_ms");
    double buffer_bytes = get(doc, "buffer_bytes");
    if (hbm > 0) {
        q.hbm_bytes = hbm;
        note(applied, applied_len, "hbm", 0, hbm);
    }
    /* The engine migrates with prefetches, so their bandwidth is the one to model. */
    if (h2d > 0) {
        q.h2d_bps = h2d * 1e9;
        note(applied, applied_len, "h2d_gbps", 3, h2d);
    }
    if (d2h > 0) {
        q.d2h_bps = d2h * 1e9;
        note(applied, applied_len, "d2h_gbps", 3, d2h);
    }
    /* Demand paging: the cold stream's bytes over its time. Fault batches
     * (CUPTI's records) are not the simulator's batches of chunks, so the
     * rate is taken whole rather than split into latency and bandwidth. */
    if (demand_ms > 0 && buffer_bytes > 0) {
        q.fault_bps = buffer_bytes / (demand_ms * 1e-3);
        note(applied, applied_len, "fault_gbps", 3, q.fault_bps / 1e9);
    }
    char perr[256];
    if (sim_params_check(&q, perr, sizeof(perr)) != GMUX_OK) {
        snprintf(err, errlen, "calibration: %s", perr);
        st = GMUX_ERR_RANGE;
        goto out_free;
    }
    *p = q;
out_free:
    free(doc);
    return st;
}

gmux_status_t sim_calib_apply_file(sim_params_t *p, const char *path, char *applied,
                                   size_t applied_len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return GMUX_ERR_IO;
    }
    char buf[16384];
    errno = 0;
    size_t n = fread(buf, 1, sizeof(buf), f);
    /* a full buffer is the whole file only if nothing follows it */
    int too_big = n == sizeof(buf) && fgetc(f) != EOF;
    int failed = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    if (failed) { /* why: a folder is EISDIR */
        snprintf(err, errlen, "%s: %s", path, strerror(failed));
        return GMUX_ERR_IO;
    }
    if (too_big) {
        snprintf(err, errlen, "%s: larger than a calibration file can be (16 KiB)", path);
        return GMUX_ERR_RANGE;
    }
    char msg[256];
    gmux_status_t st = sim_calib_apply_text(p, buf, n, applied, applied_len, msg, sizeof(msg));
    if (st != GMUX_OK)
        snprintf(err, errlen, "%s: %s", path, msg);
    return st;
}
